"""`Service`: admits jobs into the priority queue, runs them on the Engine, cancels and drains them.

A job holds, until it ends, its queue place, its spooled upload and (while
running) whatever the Engine reserved for it; every way it ends (done,
failed, cancelled by a client or a disconnect, expired at its deadline, shut
down) goes through `_end`, which gives all of that back and wakes its
waiters.  Jobs submitted with `detached=True` outlive their request and are
kept for `job_ttl_s` after they end, for polling.
"""
from __future__ import annotations

import asyncio
import fcntl
import itertools
import json
import logging
import os
import secrets
import shutil
import tempfile
import time
from collections import OrderedDict
from typing import Any

import anyio

from engine.errors import EngineError
from engine.service.jobs import PRIORITIES, Job, JobQueue, collecting
from engine.service.keys import KeyRegistry, ServedKey, resident_bytes
from engine.service.metrics import Metrics
from engine.service.problems import Problem, bad_request, from_engine_error, not_found
from engine.service.settings import ServiceConfig
from engine.service.uploads import UploadBuffers
from scheduler.shm import free_bytes

log = logging.getLogger("engine.service")


def _spool_root() -> str | None:
    """Uploads wait in RAM (/dev/shm) where there is one: they are read once, by a synthesis worker."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


_OWNER = ".owner"  # beside each spool directory: a file its server holds a lock on for as long as it lives


def own_spool(root: str | None) -> tuple[str, int]:
    """A fresh spool directory in `root` (None: the temp directory), and the descriptor of its owner's lock."""
    path = tempfile.mkdtemp(prefix="engine-serve-", dir=root)
    fd, unnamed = tempfile.mkstemp(prefix=".engine-serve-", dir=root)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(unnamed, path + _OWNER)  # the name only ever marks a lock already held
    return path, fd


def disown_spool(path: str, fd: int) -> None:
    """A spool directory and its owner file gone, then the lock let go (a sweep that waited finds nothing)."""
    shutil.rmtree(path, ignore_errors=True)
    remove_file(path + _OWNER)
    os.close(fd)


def sweep_spools(root: str | None) -> None:
    """Remove the spool directories of servers that are gone: a server killed (SIGKILL, the OOM killer) left its
    spooled uploads in /dev/shm, RAM taken until a reboot.  A directory whose owner lock can be taken has no
    owner; one without that file (an older server's) is left alone."""
    try:
        owners = [e.path for e in os.scandir(root or tempfile.gettempdir())
                  if e.name.startswith("engine-serve-") and e.name.endswith(_OWNER)]
    except OSError:
        return
    for owner in owners:
        try:
            fd = os.open(owner, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # held: its server lives
        else:
            disown_spool(owner[:-len(_OWNER)], fd)


class Service:
    def __init__(self, engine: Any, config: ServiceConfig, metrics: Metrics, task_group: Any):
        self.engine, self.config, self.metrics = engine, config, metrics
        self.keys = KeyRegistry(engine)
        self.queue = JobQueue(config.running_jobs or self.default_slots(engine), config.max_queued_per_key,
                              self._start)
        self.jobs: dict[str, Job] = {}
        self._kept: OrderedDict[str, float] = OrderedDict()  # detached jobs that ended -> when
        self._ids = itertools.count(1)
        # A job's id is what a client asks for after losing its server: a restarted one counted from 1 again and
        # gave the lost job's id (and a `wait` for it another witness's proof); this server's token in each id.
        self._run_token = secrets.token_hex(4)
        self._uploads = itertools.count(1)
        self._tg = task_group
        self._active = 0
        self.uploads = UploadBuffers(min(4 * config.memory_upload_max, 256 << 20))
        # Bytes of in-memory buffers whose upload is still arriving, and their cap: a buffer is taken (and
        # zero-filled) from the request's head alone, so heads claiming memory_upload_max each held that much
        # with no byte sent; past the cap an upload is spooled, which grows only with the bytes that come.
        self.receiving, self.receiving_cap = 0, 4 * config.memory_upload_max
        self._idle = asyncio.Event()
        self._idle.set()
        self.draining = False
        self.started = time.monotonic()
        for root in {_spool_root(), None}:  # what servers that were killed left there
            sweep_spools(root)
        self.spool, self._spool_lock = own_spool(_spool_root())  # held while we live: no sweep removes it
        self._spill: str | None = None  # the spool in the temp directory, made when the RAM one has no room
        metrics.watch(self.gauges)

    @staticmethod
    def default_slots(engine: Any, keys: Any = ()) -> int:
        """Jobs to hand the engine at once: enough to keep every stage busy, no more (the rest wait
        here, where a high job can still overtake them).

        Each place that works on one job at a time (a device's compute slot, a synthesis worker)
        gets its job and one waiting behind it, so it starts the next as soon as it finishes.
        Where the CPU ends proofs (the CPU backend, a GPU key on the host tier: the epilogue and
        the verification in the CPU pool), every epilogue thread gets one too: measured on the
        H200 at 2^14 with the CPU epilogue (perf/RESULTS.md), synthesis + compute slots alone (3)
        gave 44 proofs/s over HTTP where 8 in-process callers got 70.  A GPU with resident keys
        runs the epilogue and the pairing check on the device, and the CPU threads only check
        witnesses and decode results: 16 epilogue jobs there would only queue inside the engine.
        """
        cfg = engine.config
        busy = sum(w.locks.compute_slots.size for w in engine.devices) + cfg.synthesis_workers
        on_device = bool(engine.devices) and all(getattr(w.backend, "name", None) == "gpu" for w in engine.devices)
        cpu_finishes = not on_device or any(getattr(k.handle, "key_host_bytes", 0) for k in keys)
        return max(1, busy + (cfg.epilogue_threads if cpu_finishes else busy))

    def refresh_slots(self) -> None:
        """After a key loads or unloads: the default job count depends on where its proofs end."""
        if not self.config.running_jobs:
            self.queue.slots = self.default_slots(self.engine, self.keys.keys.values())
            self.queue.pump()

    # ---- admission
    def check_admission(self, key: ServedKey) -> None:
        """Before an upload is read: refuse now what would be refused after it."""
        if self.draining:
            raise Problem(503, "shutting_down", "the server is shutting down and accepts no new jobs",
                          {"Retry-After": "5"})
        if key.unloading:
            raise not_found(f"key {key.id!r} is being unloaded")
        if not self.queue.has_room(key):
            raise Problem(429, "queue_full", f"key {key.id!r} already has {key.queued} jobs queued and "
                                             f"{key.uploading} uploading (the limit is {self.queue.per_key_limit}); "
                                             "retry later", {"Retry-After": "1"})

    def hold_place(self, key: ServedKey) -> "Place":
        """Admission for a request about to read its body: its place in the queue is held while the body
        arrives, so that uploads started at once cannot each pass the check and be refused only once read."""
        self.check_admission(key)
        return Place(key)

    def spool_path(self, size: int | None) -> str:
        """Where an upload of `size` bytes (None: not said) waits: the RAM spool where it has room for it,
        else a spool in the temp directory.  (Docker gives a container 64 MiB of /dev/shm, and only uploads
        above memory_upload_max, 64 MiB by default, are spooled: none of them fitted there.)"""
        need = self.config.max_body if size is None else size
        free = free_bytes(self.spool)
        where = self.spool if free is None or free >= need else self._disk_spool()
        return os.path.join(where, f"upload-{next(self._uploads)}.wtns")

    def _disk_spool(self) -> str:
        if self._spill is None:
            self._spill, self._spill_lock = own_spool(None)
            if os.path.dirname(self._spill) != os.path.dirname(self.spool):
                log.warning("%s has too little room for large uploads: they wait in %s (a container gets more "
                            "shared memory with docker run --shm-size)", os.path.dirname(self.spool), self._spill)
        return self._spill

    def submit(self, key: ServedKey, witness: Any, *, label: str, priority: str = "normal",
               deadline_s: float | None = None, spool: str | None = None, detached: bool = False,
               upload: bytearray | None = None, received: float | None = None, place: "Place | None" = None) -> Job:
        """Queue a job; the caller's spool file becomes the job's (deleted when it ends, or here if refused).

        `upload`: the buffer of an upload kept in memory (the witness is a view over it); it goes back
        to `uploads` when the job ends, and the caller's to give back if this refuses the job.
        `place`: the one `hold_place` gave the request: the job takes it."""
        if place is not None:
            place.release()
        try:
            self.check_admission(key)
            if priority not in PRIORITIES:
                raise bad_request(f"priority: {priority!r} is not one of {', '.join(PRIORITIES)}")
        except Problem:
            remove_file(spool)
            raise
        deadline_s = deadline_s or self.config.default_deadline_s or None
        job = Job(id=f"{next(self._ids)}-{self._run_token}", key=key, priority=priority, witness=witness, label=label,
                  spool=spool, deadline_s=deadline_s, detached=detached, upload=upload, received=received)
        self._purge()
        self.jobs[job.id] = job
        key.active += 1
        key.idle.clear()
        self._active += 1
        self._idle.clear()
        if deadline_s is not None:
            loop = asyncio.get_running_loop()
            job.deadline = loop.time() + deadline_s
            job.timer = loop.call_at(job.deadline, self._expire, job)
        self.queue.admit(job)
        return job

    # ---- running
    def _start(self, job: Job) -> None:
        self._tg.start_soon(self._run, job)

    async def _run(self, job: Job) -> None:
        problem: Problem | None = None
        try:
            with anyio.CancelScope() as scope:
                job.scope = scope
                if job.cancel_as:
                    scope.cancel()  # cancelled between its start and this task's first step
                with collecting(job.log):  # the circuit's log() lines, which the job's answer carries
                    job.proof = await self.engine.prove(job.key.handle, job.witness)
                job.verified = getattr(getattr(self.engine, "config", None), "verify", None)
        except EngineError as exc:
            problem = _named_problem(exc, job)
        except Exception as exc:  # a bug of ours or the engine's: the client gets a 500, the server goes on
            log.exception("job %s failed unexpectedly", job.id)
            problem = Problem(500, "internal_error", f"{type(exc).__name__}: {exc}")
        finally:
            job.scope = None
            self.queue.release()
            if job.proof is not None:
                self._end(job, "done")
            elif problem is not None:
                self._end(job, "failed", problem)
            else:  # cancelled: by a client, a disconnect, its deadline, or the server going down
                self._end(job, job.cancel_as or "cancelled", _cancel_problem(job))

    def cancel(self, job: Job, reason: str, state: str = "cancelled") -> None:
        """End a job: at once if queued; a running one when the engine has given its resources back."""
        if job.final or job.cancel_as:
            return
        job.cancel_as, job.reason = state, reason
        if job.state == "queued":
            self.queue.withdraw(job)
            self._end(job, state, _cancel_problem(job))
        elif job.scope is not None:
            job.scope.cancel()

    def _expire(self, job: Job) -> None:
        job.timer = None
        where = "in the queue" if job.state == "queued" else "while proving"
        self.cancel(job, f"its deadline of {job.deadline_s:g} s passed {where}", state="expired")

    def _end(self, job: Job, state: str, problem: Problem | None = None) -> None:
        if job.final:
            return
        job.state, job.problem, job.finished = state, problem, time.monotonic()
        if job.timer is not None:
            job.timer.cancel()
            job.timer = None
        remove_file(job.spool)
        job.spool = None
        job.witness = None
        if job.upload is not None:
            self.uploads.give(job.upload)
            job.upload = None
        key = job.key
        key.active -= 1
        if key.active == 0:
            key.idle.set()
        self._active -= 1
        if self._active == 0:
            self._idle.set()
        if state == "done":
            key.proved(job.finished - job.created)
        queued_s = None if job.started is None else job.started - job.created
        run_s = None if job.started is None else job.finished - job.started
        self.metrics.job_ended(key.id, state, queued_s, run_s, job.finished - job.created)
        if job.detached:
            self._kept[job.id] = job.finished
        job.done.set()

    def forget(self, job: Job) -> None:
        """A waiting request answered: its job leaves the table."""
        self.jobs.pop(job.id, None)

    def _purge(self) -> None:
        now = time.monotonic()
        ttl, cap = self.config.job_ttl_s, self.config.max_jobs_kept
        while self._kept:
            job_id, ended = next(iter(self._kept.items()))
            if now - ended < ttl and len(self._kept) < cap:
                break
            del self._kept[job_id]
            self.jobs.pop(job_id, None)

    def job(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise not_found(f"no job {job_id!r} (finished jobs are kept {self.config.job_ttl_s:g} s)")
        return job

    # ---- shutting down
    async def drain(self) -> None:
        """No new jobs; wait for the queued and running ones (cancel them after drain_timeout_s)."""
        self.draining = True
        timeout = self.config.drain_timeout_s or None
        with anyio.move_on_after(timeout):
            await self._idle.wait()
        if self._active:
            self.cancel_all(f"the server shut down {{where}} it ran (drain timeout {timeout:g} s)")
            await self._idle.wait()

    def cancel_all(self, reason: str) -> None:
        """Every job, by the server (`reason`'s {where}: before or while it ran): a 503, not the client's doing."""
        self.draining = True
        self.queue.paused = True  # cancel the queued ones without starting them first
        for job in list(self.jobs.values()):
            if not (job.final or job.cancel_as):
                job.by_server = True
                self.cancel(job, reason.format(where="before" if job.state == "queued" else "while"))
        self.queue.paused = False

    def close(self) -> None:
        for spool, lock in ((self.spool, "_spool_lock"), (self._spill, "_spill_lock")):
            if spool is not None and getattr(self, lock, None) is not None:
                disown_spool(spool, getattr(self, lock))
                setattr(self, lock, None)  # closed once: the descriptor's number may be another file's next

    # ---- verification
    async def verify(self, body: Any) -> bool:
        from engine.formats.json import read_proof, read_public, read_vkey  # noqa: PLC0415
        from engine.groth16.verifier import checked_key, verify, vk_from_zkey  # noqa: PLC0415
        from scheduler import cpu_pool  # noqa: PLC0415

        if not isinstance(body, dict) or "proof" not in body or "public" not in body:
            raise bad_request('expected {"key": id or "vkey": {...}, "proof": {...}, "public": [...]}')
        if ("key" in body) == ("vkey" in body):
            raise bad_request('give either "key" (a loaded key\'s id) or "vkey" (a verification_key.json object)')
        unknown = set(body) - {"proof", "public", "key", "vkey"}
        if unknown:  # as POST /v1/keys: a misspelt field is not ignored without a word
            raise bad_request(f"unknown field(s): {', '.join(sorted(unknown))}")
        if "key" in body and not isinstance(body["key"], str):
            raise bad_request(f"key: expected a loaded key's id (a string), got {type(body['key']).__name__}")
        with tempfile.TemporaryDirectory(dir=self.spool) as tmp:
            def parse(reader, name: str, *args):
                path = os.path.join(tmp, name)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(body[name], f)
                try:
                    return reader(path, *args)
                except EngineError as exc:
                    raise from_engine_error(exc, {path: f"request.{name}"}) from None

            if "key" in body:
                key = self.keys.get(body["key"])
                if key.vk is None:
                    key.vk = await anyio.to_thread.run_sync(lambda: vk_from_zkey(_read_zkey(key.path)))
                vk, against = key.vk, f"key {key.id!r}"
            else:
                vk, against = parse(read_vkey, "vkey"), "request.vkey"
                try:  # its points off the event loop: a BLS12-381 subgroup check an IC point
                    await anyio.to_thread.run_sync(checked_key, vk, against)
                except EngineError as exc:
                    raise from_engine_error(exc) from None
            proof = parse(read_proof, "proof", vk.curve)
            public = parse(read_public, "public", vk.curve)
        if len(public) != vk.n_public:
            raise Problem(422, "mismatch", f"request.public: {len(public)} signals, but {against} has "
                                           f"{vk.n_public}")
        future = cpu_pool.get_pool().submit(verify, vk, public, proof)
        return bool(await asyncio.wrap_future(future))

    # ---- what /metrics and /v1/stats read
    def gauges(self) -> dict:
        s = self.engine.stats()
        return {
            "queue_depth": dict(self.queue.depth), "running": self.queue.running,
            "vram_capacity": s["vram_capacity"], "vram_available": s["vram_available"],
            "host_capacity": s["host_capacity"], "host_available": s["host_available"],
            "keys": {k.id: resident_bytes(k.handle) for k in self.keys.keys.values()},
            "started": self.started,
        }

    def stats(self) -> dict:
        return {
            "queue_depth": dict(self.queue.depth), "running": self.queue.running, "slots": self.queue.slots,
            "jobs_active": self._active, "jobs_kept": len(self._kept), "draining": self.draining,
            "at_rest": self._active == 0 and self.engine.at_rest(), "engine": self.engine.stats(),
            "keys": len(self.keys.keys), "uptime_s": time.monotonic() - self.started,
            "spooled_uploads": sum(len(os.listdir(d)) for d in (self.spool, self._spill) if d is not None),
            "uploads_in_memory_bytes": self.uploads.in_use,
            "uploads_in_progress": sum(k.uploading for k in self.keys.keys.values()),
        }


class Place:
    """A request's place in its key's queue while its body arrives (`ServedKey.uploading`)."""

    def __init__(self, key: ServedKey):
        self.key = key
        key.uploading += 1

    def release(self) -> None:
        if self.key is not None:
            self.key.uploading -= 1
            self.key = None


def _read_zkey(path: str) -> Any:
    from engine.formats.zkey import read_zkey  # noqa: PLC0415

    return read_zkey(path)


def _named_problem(exc: EngineError, job: Job) -> Problem:
    """The Problem of a job's engine error, naming its witness as the client did (`name`): the spooled file's
    path, and for inputs sent as JSON what the engine calls a dict ("inputs: unknown input signal 'y'", "circuit
    assertion failed for inputs", "inputs for circuit.wasm"), where the local path names the input.json."""
    names = {job.spool: job.label} if job.spool else {}
    if isinstance(job.witness, dict) and job.label != "inputs":
        wasm = getattr(job.key, "wasm", None)
        if wasm:
            names[f"inputs for {os.path.basename(wasm)}"] = job.label
        names[" for inputs"] = f" for {job.label}"
    problem = from_engine_error(exc, names)
    if names and getattr(exc, "path", None) == "inputs" and problem.message.startswith("inputs: "):
        problem.message = f"{job.label}: {problem.message[len('inputs: '):]}"
    return problem


def _cancel_problem(job: Job) -> Problem:
    if job.cancel_as == "expired":
        return Problem(504, "deadline_exceeded", f"job {job.id}: {job.reason}")
    if job.by_server or job.reason is None:  # the server going down: worth a retry, on this server or another
        return Problem(503, "shutting_down", f"job {job.id} was cancelled: {job.reason or 'the server shut down'}")
    return Problem(409, "cancelled", f"job {job.id} was cancelled: {job.reason or 'the server shut down'}")


def remove_file(path: str | None) -> None:
    """Delete a spooled upload (already gone is fine)."""
    if path:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
