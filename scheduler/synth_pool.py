"""The synthesis process pool (design.md §6): witnesses made in worker processes, returned via shared memory.

Workers are started with `forkserver` (default) or `spawn`, never `fork`: the
main process may have initialised CUDA, and a forked child of it is broken.
Each worker serves one task at a time over its own pipe, so a worker that
dies (a crash, an os._exit, a kill) fails only the task it was running; it
is restarted in the background and the pool keeps serving.  One that died
while idle is found before a task is sent to it, replaced, and the task goes
to the next free worker (nothing fails).  A worker that dies before it is ready is started again (twice, after
a pause); a slot still without a worker is started again by the next task that gets it, which fails with the
start's error only if that fails too: the pool heals once the machine lets it, and no task waits for ever.

A task is a picklable `fn(*args) -> (meta, ndarray)` (module-level function;
the engine supplies them, so this module knows nothing of circuits).  The
pool creates a shared-memory block of the capacity the caller reserved (the
host budget), the worker writes the array into it, and only (meta, shape,
dtype) come back over the pipe.  Cancelling `run` kills the worker at once
(the work cannot be interrupted any other way), frees the block, and restarts
the worker in the background.
"""
from __future__ import annotations

import errno
import multiprocessing as mp
import os
import pickle
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import anyio
import numpy as np

from engine.errors import InputFileError, MismatchError, WitnessGenerationError, file_error

from scheduler import task_log
from scheduler.budget import fmt_bytes
from scheduler.locks import FifoSlots
from scheduler.processes import describe_exit, serve_tasks, start_process
from scheduler.shm import ShmBlock
from scheduler.task_errors import describe_error, rebuild_error

START_METHODS = ("forkserver", "spawn")
_READY_TIMEOUT_S = 120.0
# A worker that dies before it is ready (killed by the OOM killer or an operator, a fork refused for a moment) is
# started again after these pauses; only then is its start a failure.
_START_RETRY_PAUSES_S = (0.05, 0.25)


class SynthesisCrashedError(WitnessGenerationError):
    """A synthesis worker process died while working on a task."""


class _ExitedWhileStarting(WitnessGenerationError):
    """A worker process that ended before it said ready (started again, a few times, before this is reported)."""


class OutputTooLargeError(MismatchError):
    """A task produced more bytes than were reserved for it (for example, a witness of a larger circuit)."""

    def __init__(self, message: str, meta: Any, shape: tuple, dtype: str):
        self.meta, self.shape, self.dtype = meta, shape, dtype
        super().__init__(message)


@dataclass
class SynthResult:
    """A task's output: `values` is a view over shared memory; `release()` gives the memory back
    (to the pool's free blocks: after it the memory may hold the next task's output)."""

    meta: Any
    values: np.ndarray
    block: ShmBlock
    worker: int
    give_back: Callable[[ShmBlock], None] | None = None

    def release(self) -> None:
        self.values = None  # type: ignore[assignment]
        block, self.block = self.block, None
        if block is None:
            return
        if self.give_back is not None:
            self.give_back(block)
        else:
            block.release()


# Released blocks up to this size are kept for the next task of the same capacity, at most
# REUSE_BLOCKS of them: creating and unlinking a file in /dev/shm for every witness was two system
# calls (and a first touch of every page in both processes) on the event loop a proof, ~0.15 ms
# at the 2^14 domain on the H200's host (perf/RESULTS.md, t13tput).  What they hold is bounded:
# REUSE_BLOCKS x REUSE_MAX_BYTES at most, beside the host budget.
REUSE_MAX_BYTES = 8 << 20
REUSE_BLOCKS = 48


# ------------------------------------------------------------------ worker side

def _worker_main(conn, index: int) -> None:
    """A synthesis worker: serve (fn, args, block name, capacity) until told to stop."""
    serve_tasks(conn, _synthesise_logged)


@dataclass(frozen=True)
class FileSegment:
    """A task's values as they lie in a file (a .wtns's value section): `shape` items of `dtype` from byte
    `offset` of `path`.  The worker copies them into the shared block with sendfile, in the kernel, instead of
    through a mapping of the file and one of the block (the pool's task for a 2^24 BLS12-381 witness, 520 MiB,
    0.52-0.68 -> 0.28 s on the H200's host, perf/wtns_pool.py: the copy was page faults on both sides)."""

    path: str
    offset: int
    shape: tuple
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


# Open files a synthesis worker holds in this process (its pipes and sentinel; 3 measured on Linux, one spare).
FILES_PER_WORKER = 4


def check_open_files(workers: int, spare: int = 64) -> None:
    """Refuse a pool this process cannot hold open before any worker starts: past the limit the start failed
    midway, the forkserver printing a traceback of its own beside the engine's error (`--synthesis-workers
    100000` under `ulimit -n 20000`).  An EMFILE OSError, which the Engine's start error explains."""
    try:
        import resource  # noqa: PLC0415 - POSIX only

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        held = len(os.listdir("/proc/self/fd"))
    except (ImportError, OSError):  # not Linux: the start itself says so, if it comes to that
        return
    need = held + FILES_PER_WORKER * workers + spare
    if soft != resource.RLIM_INFINITY and need > soft:
        raise OSError(errno.EMFILE, f"{workers} synthesis workers need about {need} open files")


def _synthesise_logged(task: tuple) -> bytes:
    """A worker's task: _synthesise's reply and what the task logged (task_log.TaskLog), pickled together."""
    handler = task_log.capture()
    try:
        reply = _reply(task)
    finally:
        log = task_log.release(handler)
    return pickle.dumps((reply, log))


def _synthesise(task: tuple) -> bytes:
    """One task's reply, pickled (as _synthesise_logged's, without the log)."""
    return pickle.dumps(_reply(task))


def _reply(task: tuple) -> tuple:
    """One task: fn(*args) -> (meta, values); the values go into the shared block, the rest back."""
    fn, args, block_name, capacity = task
    try:
        meta, values = fn(*args)
        if not isinstance(values, FileSegment):
            values = np.ascontiguousarray(values)
        shape, dtype = tuple(values.shape), np.dtype(values.dtype).str
        if values.nbytes > capacity:
            reply = ("too_big", meta, shape, dtype)
        else:
            block = ShmBlock.attach(block_name)
            try:
                if isinstance(values, FileSegment):
                    try:
                        _copy_segment(values, block)
                    except OSError as exc:
                        raise block.no_room(values.nbytes) if exc.errno == errno.ENOSPC else exc from None
                else:
                    block.reserve(values.nbytes)  # no room: an OSError saying so, not a SIGBUS in the copy
                    dst = block.ndarray(values.shape, values.dtype)
                    dst[...] = values
                    del dst
            finally:
                block.close()
            reply = ("ok", meta, shape, dtype)
    except BaseException as exc:  # reported to the caller; the worker lives on
        reply = ("error", *describe_error(exc))
    return reply


def _alive(process) -> bool:
    """Whether a worker can take a task: is_alive() and not already dead in the kernel's eyes.  A forkserver's
    child is reaped by the forkserver, which tells this process of its end only when it next runs; until then
    is_alive() said True of a worker killed while idle, and the task sent to it failed (a busy machine: CI)."""
    if not process.is_alive():
        return False
    try:
        with open(f"/proc/{process.pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:  # a pid without an entry is gone; without /proc at all (not Linux), is_alive() alone
        return not os.path.isdir("/proc/self")
    fields = stat.rsplit(b")", 1)[-1].split()  # after the command's name, which may hold spaces
    return not fields or fields[0] not in (b"Z", b"X")


def _copy_segment(seg: FileSegment, block: ShmBlock) -> None:
    """seg's bytes to the start of `block`: sendfile where the system has it for files, else a plain read."""
    # the file changed between its header's check and this copy: the user's file, named (was a ValueError)
    ended = InputFileError(seg.path, f"the file ends before its {seg.nbytes} bytes of values "
                                     "(changed on disk while it was read?)")
    try:
        src = open(seg.path, "rb")
    except OSError as exc:  # removed meanwhile: was a FileNotFoundError that named no file
        raise file_error(seg.path, exc, "a .wtns file") from None
    with src:
        if os.fstat(src.fileno()).st_size < seg.offset + seg.nbytes:
            raise ended
        if _sendfile(src.fileno(), block.path, seg, ended):
            return
        src.seek(seg.offset)
        block.reserve(seg.nbytes)
        view = block.ndarray((seg.nbytes,), np.uint8)
        try:
            if src.readinto(memoryview(view)) != seg.nbytes:
                raise ended
        finally:
            del view


def _sendfile(src: int, dst_path: str, seg: FileSegment, ended: Exception) -> bool:
    """seg's bytes from `src` into the file at dst_path by sendfile; False where there is none between files
    (macOS: to sockets only), for the caller to read instead."""
    sendfile = getattr(os, "sendfile", None)
    if sendfile is None:
        return False
    dst = os.open(dst_path, os.O_WRONLY)
    try:
        done = 0
        while done < seg.nbytes:
            try:
                sent = sendfile(dst, src, seg.offset + done, seg.nbytes - done)
            except OSError as exc:
                if exc.errno in (errno.EINVAL, errno.ENOSYS, errno.ENOTSOCK, errno.EOPNOTSUPP):
                    return False
                raise
            if sent == 0:
                raise ended
            done += sent
        return True
    finally:
        os.close(dst)


# ------------------------------------------------------------------ pool side

class _Worker:
    def __init__(self, index: int, process, conn):
        self.index, self.process, self.conn = index, process, conn


class SynthPool:
    """`workers` processes; `run` gives a task to the first idle one (in arrival order)."""

    def __init__(self, workers: int = 2, *, start_method: str = "forkserver", preload: Sequence[str] = ()):
        if start_method not in START_METHODS:
            raise ValueError(
                f"synthesis start method {start_method!r}: use one of {', '.join(START_METHODS)} "
                "(never fork: the main process may have initialised CUDA)"
            )
        if workers < 1:
            raise ValueError(f"synthesis workers: need at least 1, got {workers}")
        self.size = workers
        self.start_method = start_method
        self._ctx = mp.get_context(start_method)
        if start_method == "forkserver":
            self._ctx.set_forkserver_preload(["numpy", __name__, *preload])
        self._workers: list[_Worker | None] = [None] * workers
        self._idle = FifoSlots(workers, "synthesis workers")
        self._restarts: list[threading.Thread] = []
        self._closing = False
        self._starting: dict[int, Any] = {}  # slot -> a worker process started but not yet ready
        self._started = False
        self._dead: dict[int, BaseException] = {}  # slot -> why its worker could not be started (slot free)
        self.crashes = 0  # workers that died on a task (that task failed)
        self.idle_deaths = 0  # workers found dead when a task came (replaced; the task went elsewhere)
        self.restarts = 0
        self.max_reply_bytes = 0  # the largest message a worker sent back (witness data never travels here)
        self._free_blocks: dict[int, list[ShmBlock]] = {}  # capacity -> released blocks (REUSE_MAX_BYTES)
        self.blocks_created = 0

    # ---- lifecycle
    async def start(self) -> None:
        if self._started:
            return
        check_open_files(self.size)
        self._started = True
        # hold every slot until its worker is ready
        held = [await self._idle.acquire("starting") for _ in range(self.size)]
        loop_token = _LoopToken.current()
        for idx in held:
            self._spawn_in_thread(idx, loop_token, count_restart=False)
        await self.wait_ready()
        if self._dead:  # a pool that cannot start its workers is an engine that cannot start
            raise next(iter(self._dead.values()))

    async def wait_ready(self) -> None:
        """Wait until no worker is starting or restarting (a slot whose start failed is tried again by the
        next task that gets it: see `run`)."""
        while self._restarts:
            threads = list(self._restarts)
            await anyio.to_thread.run_sync(lambda: [t.join() for t in threads])
            await anyio.sleep(0.001)  # let the threads' call_soon_threadsafe callbacks run

    def pids(self) -> list[int]:
        """The worker processes' ids (perf/cpu_share.py reads their CPU time)."""
        return [w.process.pid for w in self._workers if w is not None and w.process.pid is not None]

    def alive(self) -> int:
        return sum(1 for w in self._workers if w is not None and w.process.is_alive())

    def at_rest(self) -> bool:
        return not self._restarts and self._idle.at_rest() and self.alive() == self.size

    async def close(self) -> None:
        self._closing = True
        for blocks in self._free_blocks.values():
            for block in blocks:
                block.release()
        self._free_blocks.clear()
        for process in list(self._starting.values()):  # a worker still starting is not waited for
            if process.is_alive():
                process.kill()
        threads = list(self._restarts)
        if threads:
            await anyio.to_thread.run_sync(lambda: [t.join() for t in threads])
        await anyio.to_thread.run_sync(self._stop_all)

    def _stop_all(self) -> None:
        for w in self._workers:
            if w is None:
                continue
            try:
                w.conn.send_bytes(pickle.dumps(None))
            except (OSError, ValueError):
                pass
        for w in self._workers:
            if w is None:
                continue
            w.process.join(5.0)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(5.0)
            w.conn.close()
        self._workers = [None] * self.size

    # ---- tasks
    async def run(
        self,
        fn: Callable[..., tuple[Any, np.ndarray]],
        args: tuple,
        capacity: int,
        *,
        label: str = "synthesis",
        on_start: Callable[[int], None] | None = None,
    ) -> SynthResult:
        """fn(*args) in a worker; its array comes back in a block of `capacity` bytes."""
        if not self._started or self._closing:
            raise RuntimeError("synthesis pool is not running")
        payload_args = (fn, args)
        block = None
        idx = None
        failed_starts = 0  # slots this task found without a worker because its start had failed
        try:
            while True:
                idx = await self._idle.acquire(label)
                worker = self._workers[idx]
                if block is None:
                    block = self._take_block(capacity)
                # A worker that died while idle is replaced before it is given work; the task, which
                # it never received, goes to the next worker that is free.
                if worker is not None and _alive(worker.process):
                    try:
                        worker.conn.send_bytes(pickle.dumps((*payload_args, block.path, int(capacity))))
                        break
                    except (OSError, ValueError):  # died between the check and the send
                        pass
                # A slot whose worker could not be started is started again for this task (a fork refused
                # for a moment must not break the pool for good); the task gives up once it has found more
                # such slots than the pool has, rather than wait for ever.
                start_error = self._dead.pop(idx, None)
                if start_error is None:
                    self.idle_deaths += 1
                else:
                    failed_starts += 1
                self._replace(idx)
                idx = None
                if failed_starts > self.size:
                    raise WitnessGenerationError(f"{label}: the synthesis pool cannot start workers: {start_error}")
            if on_start is not None:
                on_start(idx)
            reply, log = await self._receive(worker, label)
            task_log.emit(log, label)  # before the reply's error, as the lines came before it
        except BaseException as exc:
            if block is not None:
                block.release()
            if idx is None:  # cancelled (or the pool broke) while waiting for a worker: none is held
                pass
            elif isinstance(exc, SynthesisCrashedError) or not isinstance(exc, Exception):
                # crashed, or cancelled mid-task: the worker's state is unknown; replace it
                self._replace(idx)
            else:
                self._idle.release(idx)
            raise
        self._idle.release(idx)
        kind = reply[0]
        if kind == "ok":
            _, meta, shape, dtype = reply
            return SynthResult(meta, block.ndarray(tuple(shape), dtype), block, idx, self._give_back)
        block.release()
        if kind == "too_big":
            _, meta, shape, dtype = reply
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            raise OutputTooLargeError(
                f"{label}: produced {tuple(shape)} {np.dtype(dtype)} ({fmt_bytes(nbytes)}) but only "
                f"{fmt_bytes(capacity)} were reserved for it",
                meta,
                tuple(shape),
                dtype,
            )
        raise rebuild_error(*reply[1:], fallback=WitnessGenerationError, prefix="synthesis failed: ")

    def _take_block(self, capacity: int) -> ShmBlock:
        free = self._free_blocks.get(int(capacity))
        if free:
            return free.pop()
        self.blocks_created += 1
        return ShmBlock.create(capacity)

    def _give_back(self, block: ShmBlock) -> None:
        """A released result's block: kept for the next task of its capacity, or unlinked."""
        free = self._free_blocks.setdefault(block.size, [])
        if self._closing or block.size > REUSE_MAX_BYTES or sum(map(len, self._free_blocks.values())) >= REUSE_BLOCKS:
            block.release()
        else:
            free.append(block)

    def free_blocks(self) -> int:
        return sum(map(len, self._free_blocks.values()))

    async def _receive(self, worker: _Worker, label: str) -> tuple:
        fd = worker.conn.fileno()
        await anyio.wait_readable(fd)
        try:
            # uvloop leaves the descriptor non-blocking: a reply longer than the socket holds at once (a task's
            # long log) stopped half-way with EAGAIN, read as the worker's death.  Blocking again; a long reply is
            # read in a thread, so that the event loop never waits on the rest of it.
            os.set_blocking(fd, True)
            if _pending_bytes(fd) < _INLINE_REPLY_BYTES:  # one write of the worker's (all here, or soon)
                data = worker.conn.recv_bytes()
            else:
                data = await anyio.to_thread.run_sync(worker.conn.recv_bytes)
        except (EOFError, OSError):
            self.crashes += 1
            code = await anyio.to_thread.run_sync(_exit_code, worker.process)
            raise SynthesisCrashedError(
                f"{label}: synthesis worker {worker.index} (pid {worker.process.pid}) died "
                f"({describe_exit(code)}); this job failed, the worker is being restarted"
            ) from None
        self.max_reply_bytes = max(self.max_reply_bytes, len(data))
        return pickle.loads(data)

    # ---- restarts
    def _replace(self, idx: int) -> None:
        """Kill worker idx (if alive) and start a new one; its slot comes back when it is ready."""
        old = self._workers[idx]
        if old is not None and old.process.is_alive():
            old.process.kill()
        self._spawn_in_thread(idx, _LoopToken.current(), count_restart=True)

    def _spawn_in_thread(self, idx: int, token: "_LoopToken", count_restart: bool) -> None:
        thread = threading.Thread(
            target=self._spawn, args=(idx, token, count_restart), name=f"synth-restart-{idx}", daemon=True
        )
        try:
            self._restarts.append(thread)
            thread.start()
        except BaseException:  # Ctrl-C as it started: a thread never started must not be joined (close())
            if thread.ident is None and thread in self._restarts:
                self._restarts.remove(thread)
            raise

    def _spawn(self, idx: int, token: "_LoopToken", count_restart: bool) -> None:
        """Thread body: reap the old process, start a new one (again, after a pause, if it died before it was
        ready), wait for its hello, free the slot."""
        error: BaseException | None = None
        try:
            old = self._workers[idx]
            if old is not None:
                old.process.join(10.0)
                old.conn.close()
                self._workers[idx] = None
            for pause in (*_START_RETRY_PAUSES_S, None):
                if self._closing:
                    return
                try:
                    self._workers[idx] = self._start_worker(idx)
                    break
                except (_ExitedWhileStarting, OSError):
                    if pause is None or self._closing:
                        raise
                    time.sleep(pause)
            if count_restart:
                self.restarts += 1
        except BaseException as exc:
            error = None if self._closing else exc  # killed by close(): not a broken pool
        finally:
            self._starting.pop(idx, None)
            token.call(self._spawned, idx, threading.current_thread(), error)

    def _start_worker(self, idx: int) -> _Worker:
        """One worker process for slot idx, ready to serve; on failure no process or pipe is left."""
        parent, child = self._ctx.Pipe(duplex=True)
        try:
            process = self._ctx.Process(target=_worker_main, args=(child, idx), daemon=True, name=f"synth-{idx}")
            self._starting[idx] = process
            try:
                start_process(process)
            finally:
                child.close()
            if self._closing:  # close() came while it started: it may have missed this one
                process.kill()
            if not parent.poll(_READY_TIMEOUT_S):
                process.kill()
                process.join(5.0)
                raise WitnessGenerationError(f"synthesis worker {idx} did not start within {_READY_TIMEOUT_S:.0f} s")
            try:
                hello = pickle.loads(parent.recv_bytes())
            except (EOFError, OSError):
                process.join(5.0)
                raise _ExitedWhileStarting(
                    f"synthesis worker {idx} exited while starting ({describe_exit(process.exitcode)})"
                ) from None
            assert hello[0] == "ready", hello
        except BaseException:
            parent.close()
            raise
        return _Worker(idx, process, parent)

    def _spawned(self, idx: int, thread: threading.Thread, error: BaseException | None) -> None:
        if thread in self._restarts:
            self._restarts.remove(thread)
        if error is not None:
            # the slot is freed without a worker: a task waiting for it (held, it waited for ever) starts
            # one again or fails with this error (run)
            self._dead[idx] = error
            self._idle.release(idx)
        elif self._workers[idx] is not None:
            self._idle.release(idx)


_INLINE_REPLY_BYTES = 16 << 10  # multiprocessing sends a message up to this long in one write


def _pending_bytes(fd: int) -> int:
    """Bytes waiting on the worker's socket (FIONREAD); where that cannot be asked, as if a long reply."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only
        import termios  # noqa: PLC0415

        return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
    except (ImportError, OSError, AttributeError):
        return _INLINE_REPLY_BYTES


def _exit_code(process) -> int | None:
    process.join(5.0)
    return process.exitcode


class _LoopToken:
    """Runs a function on the event loop from another thread, without waiting for it."""

    def __init__(self, loop):
        self._loop = loop

    @classmethod
    def current(cls) -> "_LoopToken":
        import asyncio  # noqa: PLC0415

        return cls(asyncio.get_running_loop())

    def call(self, fn: Callable, *args) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # loop closed
            pass
