"""The process pool for CPU-heavy Python work: large CPU MSMs and the proof epilogue.

Pure-Python arithmetic holds the GIL, so threads would neither run it in
parallel nor leave the device threads free to launch kernels; worker
processes do both.  Started with forkserver (else spawn), never fork: a
process may already have CUDA initialised.  Workers start on a module of
ours (scheduler/processes.py), so scripts need no `__main__` guard.

Why not `concurrent.futures.ProcessPoolExecutor`: one dead worker breaks it
for good (every pending and later future fails with `BrokenProcessPool`).
Here each worker has its own pipe and a lane thread that feeds it one task at
a time, so a worker that dies (killed, out of memory, `os._exit`) fails only
the task it was running, with `CpuWorkerCrashedError` (an EngineError), and
its lane starts a replacement; a worker found dead while idle is replaced
before it is given work.  Tasks are picklable module-level functions; their
exceptions come back as the same type (scheduler/task_errors.py).

Cancelling a task's future stops it wherever it is: one still queued is
dropped, and one a worker is running ends with that worker, which its lane
kills and replaces (as synth_pool does for synthesis): a cancelled proof's
MSM ranges no longer ran to their end, taking the CPU from the next proofs.
Tasks on other workers are untouched; `result()` then raises CancelledError.

There is one shared pool; `get_pool(n)` grows it to at least n workers and
never shuts down or cancels what another caller queued.
"""
from __future__ import annotations

import atexit
import importlib
import multiprocessing
import os
import pickle
import queue
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import Any, Callable, Iterable

from engine.errors import EngineError

from scheduler.processes import describe_exit, serve_tasks, start_process
from scheduler.task_errors import describe_error, rebuild_error

_READY_TIMEOUT_S = 120.0
_STOP = None  # a lane's end-of-work marker in the task queue


class CpuWorkerCrashedError(EngineError):
    """A CPU pool worker process died while running a task: that task failed, the worker was replaced."""


class CpuPoolError(EngineError):
    """A CPU pool worker could not be started, or a task's error could not be rebuilt here."""


_pool: "CpuPool | None" = None
_lock = threading.Lock()
_atexit_registered = False


def resolve_workers(workers: int | None) -> int:
    """None: one worker per CPU this process may run on."""
    if workers is None:
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            return os.cpu_count() or 1
    return max(1, int(workers))


def get_pool(nproc: int | None = None) -> "CpuPool":
    """The shared pool, with at least nproc workers (default: one per CPU), started on first use."""
    global _pool, _atexit_registered
    nproc = resolve_workers(nproc)
    with _lock:
        if _pool is None:
            _pool = CpuPool(nproc)
            if not _atexit_registered:
                atexit.register(_shutdown_at_exit)
                _atexit_registered = True
        elif _pool.size < nproc:
            _pool.grow(nproc)  # more lanes; nothing queued or running is touched
        return _pool


def running() -> bool:
    return _pool is not None


def shutdown(*, kill: bool = False) -> None:
    """Stop the workers (to release them early; the next use restarts them).  kill: at once, failing
    the tasks they run (at exit, as after Ctrl-C, nobody waits for those)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True, kill=kill)


def _shutdown_at_exit() -> None:
    shutdown(kill=True)


def _no_files_note() -> str:
    """Why a worker could not start where this process may write no file at all (`ulimit -f 0`): Python's
    temporary directory probe fails, and the error named only "No usable temporary directory" of a /tmp that is
    fine."""
    try:
        import resource  # noqa: PLC0415 - POSIX only, and only here

        if resource.getrlimit(resource.RLIMIT_FSIZE)[0] == 0:
            return " (the file size limit of this process is 0: it may write no file; raise it, ulimit -f)"
    except (ImportError, OSError, ValueError):
        pass
    return ""


# ------------------------------------------------------------------ worker side

# Imported by a worker before it says ready: a worker started to replace one that was stopped (a cancelled
# proof) loads the MSM's modules while the next proof's first stages run, not when its first MSM range comes.
_PRELOAD = ("engine.algebra.msm",)


def _serve(conn) -> None:
    """A worker: run (fn, args, kwargs) tasks from the pipe until it closes or says stop."""
    for name in _PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a task that needs it says why
            pass
    serve_tasks(conn, _run_task)


def _run_task(task: tuple) -> bytes:
    fn, args, kwargs = task
    try:  # a result that cannot be pickled is the task's error too, not the worker's death
        return pickle.dumps(("ok", fn(*args, **kwargs)))
    except BaseException as exc:  # reported to the caller; the worker lives on
        return pickle.dumps(("error", *describe_error(exc)))


# ------------------------------------------------------------------ pool side

def _context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, ctx, index: int):
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_serve, args=(child,), daemon=True, name=f"cpu-pool-{index}")
        try:
            start_process(self.process)
        finally:
            child.close()
        if not self.conn.poll(_READY_TIMEOUT_S):
            self.kill()
            raise CpuPoolError(f"CPU pool worker {index} did not start within {_READY_TIMEOUT_S:.0f} s")
        try:
            pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            self.process.join(5.0)
            raise CpuPoolError(f"CPU pool worker {index} exited while starting "
                               f"({describe_exit(self.process.exitcode)})") from None

    def alive(self) -> bool:
        return self.process.is_alive()

    def exit_code(self) -> int | None:
        self.process.join(5.0)
        return self.process.exitcode

    def stop(self) -> None:
        try:
            self.conn.send_bytes(pickle.dumps(None))
        except (OSError, ValueError):
            pass
        self.process.join(5.0)
        self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5.0)
        self.conn.close()


class _TaskFuture(Future):
    """A pool task's future: cancel() also stops a task that a worker is running (the worker is replaced)."""

    def __init__(self, pool: "CpuPool"):
        super().__init__()
        self._pool = pool

    def cancel(self) -> bool:
        if super().cancel():  # still queued: never computed
            return True
        return self._pool._stop_running(self)


class CpuPool:
    """Worker processes fed one task at a time from one FIFO (see the module docstring)."""

    def __init__(self, size: int):
        self._ctx = _context()
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._lanes: list[threading.Thread] = []
        self._workers: dict[int, _Worker] = {}  # lane index -> its current worker (for tests, stats)
        self._state_lock = threading.Lock()
        self._closed = False
        self._running: dict[int, tuple[Future, _Worker | None]] = {}  # lane index -> the task it took
        self._stopping: set[int] = set()  # lanes whose worker was killed to stop a cancelled task
        self.restarts = 0  # workers replaced after dying (or after being killed to stop a task)
        self.stopped = 0  # running tasks stopped by a cancel
        self.grow(size)

    @property
    def size(self) -> int:
        return len(self._lanes)

    def pids(self) -> list[int]:
        """The live workers' process ids."""
        with self._state_lock:
            return [w.process.pid for w in self._workers.values() if w.alive()]

    def grow(self, size: int) -> None:
        with self._state_lock:
            while len(self._lanes) < size:
                lane = threading.Thread(target=self._lane, args=(len(self._lanes),), daemon=True,
                                        name=f"cpu-pool-lane-{len(self._lanes)}")
                self._lanes.append(lane)
                lane.start()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        """fn(*args, **kwargs) in a worker; cancelling the future drops the task, or stops the worker running it."""
        if self._closed:
            raise RuntimeError("the CPU pool has been shut down")
        fut: Future = _TaskFuture(self)
        self._tasks.put((fn, args, kwargs, fut))
        return fut

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        futures = [self.submit(fn, item) for item in items]
        return [f.result() for f in futures]

    def shutdown(self, wait: bool = True, cancel_futures: bool = False, kill: bool = False) -> None:
        """No new tasks; queued ones run (or, with cancel_futures, are cancelled); workers stop
        (with kill, at once: the tasks they were running fail)."""
        self._closed = True
        if cancel_futures:
            while True:
                try:
                    item = self._tasks.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    item[3].cancel()
        for _ in self._lanes:
            self._tasks.put(_STOP)
        if kill:
            with self._state_lock:
                workers = list(self._workers.values())
            for worker in workers:
                if worker.alive():
                    worker.process.kill()
        if wait:
            # After a kill, a lane may still wait for a worker that is starting (not yet ready, so
            # not killed above): it ends with the process's pipe, so do not wait long for it.
            deadline = time.monotonic() + 0.5
            for lane in self._lanes:
                if lane is not threading.current_thread():
                    lane.join(max(0.0, deadline - time.monotonic()) if kill else None)

    # ---- a lane: one worker, one task at a time
    def _start_worker(self, index: int) -> _Worker:
        worker = _Worker(self._ctx, index)
        with self._state_lock:
            self._workers[index] = worker
        return worker

    def _replace(self, index: int, old: _Worker | None) -> _Worker:
        """Reap a dead (or never started) worker and start its successor."""
        if old is not None:
            old.kill()
            self.restarts += 1
        return self._start_worker(index)

    def _lane(self, index: int) -> None:
        worker: _Worker | None = None
        try:
            worker = self._start_worker(index)  # at once, so the first task does not wait for the import
        except Exception:  # noqa: BLE001 - tried again, and reported, when a task comes
            worker = None
        try:
            while True:
                item = self._tasks.get()
                if item is _STOP:
                    return
                fn, args, kwargs, fut = item
                with self._state_lock:  # as one step for cancel(): from here it finds the task on this lane
                    if not fut.set_running_or_notify_cancel():
                        continue  # cancelled while queued: never computed
                    self._running[index] = (fut, None)
                if worker is None or not worker.alive():  # never started, or died while idle
                    try:
                        worker = self._replace(index, worker)
                    except Exception as exc:  # noqa: BLE001
                        worker = None
                        if not self._ended(index, fut, fn):
                            fut.set_exception(exc if isinstance(exc, EngineError) else CpuPoolError(
                                f"a CPU pool worker could not be started: {exc}{_no_files_note()}"))
                        continue
                self._run(worker, index, fn, args, kwargs, fut)
                if not worker.alive() and self._closed:  # killed by shutdown(kill=True): no successor
                    worker.kill()
                    worker = None
                elif not worker.alive():  # it died on this task: replace it now, not when the next one comes
                    try:
                        worker = self._replace(index, worker)
                    except Exception:  # noqa: BLE001 - tried again, and reported, when a task comes
                        worker = None
        finally:
            if worker is not None:
                worker.stop()
            with self._state_lock:
                self._workers.pop(index, None)

    def _stop_running(self, fut: Future) -> bool:
        """Stop `fut` on the lane that took it: kill the worker running it (its lane replaces that worker and ends
        `fut` with CancelledError), or, not yet sent, never send it.  False where no lane holds it (done)."""
        with self._state_lock:
            for index, (running, worker) in self._running.items():
                if running is fut:
                    break
            else:
                return False
            if index not in self._stopping:
                self._stopping.add(index)
                self.stopped += 1
                if worker is not None:
                    try:
                        worker.process.kill()  # not yet reaped (its lane joins it): the pid is still this worker's
                    except (OSError, ValueError):
                        pass
            return True

    def _ended(self, index: int, fut: Future, fn) -> bool:
        """The lane is done with `fut`: forget it; if it was cancelled meanwhile, end it so and say True."""
        with self._state_lock:
            self._running.pop(index, None)
            stopped = index in self._stopping
            self._stopping.discard(index)
        if stopped:
            name = getattr(fn, "__qualname__", repr(fn))
            fut.set_exception(CancelledError(f"{name} was cancelled: CPU pool worker {index} was stopped"))
        return stopped

    def _run(self, worker: _Worker, index: int, fn, args, kwargs, fut: Future) -> None:
        try:
            payload = pickle.dumps((fn, args, kwargs))
        except Exception as exc:  # noqa: BLE001 - the caller's bug, reported to the caller
            if not self._ended(index, fut, fn):
                fut.set_exception(exc)
            return
        name = getattr(fn, "__qualname__", repr(fn))
        with self._state_lock:
            cancelled = index in self._stopping  # while its worker was being started: never sent
            self._running[index] = (fut, worker)
        data = None
        try:
            if not cancelled:
                worker.conn.send_bytes(payload)
                data = worker.conn.recv_bytes()
        except (EOFError, OSError):
            pass
        if self._ended(index, fut, fn):  # even if its answer came as the kill did: the lane replaces it
            if not cancelled:
                worker.kill()
            return
        if data is None:
            code = worker.exit_code()
            fut.set_exception(CpuWorkerCrashedError(
                f"CPU pool worker {index} (pid {worker.process.pid}) died ({describe_exit(code)}) while running "
                f"{name}; this job failed, the worker is being replaced and the engine serves the next jobs"
            ))
            return
        try:
            reply = pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - an answer this process cannot read fails its task, not the lane
            fut.set_exception(CpuPoolError(f"{name}: its result could not be read here: {type(exc).__name__}: {exc}"))
            return
        if reply[0] == "ok":
            fut.set_result(reply[1])
        else:
            fut.set_exception(rebuild_error(*reply[1:], fallback=CpuPoolError, prefix=f"{name} failed: "))
