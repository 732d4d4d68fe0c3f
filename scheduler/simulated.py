"""A SIMULATED device: stage times and VRAM size are parameters, nothing runs on a GPU.

It lets the scheduler's tests and perf/sweep.py explore settings without a
GPU (and settings larger than any local machine).  It follows the backend
contract of engine/backends/base.py (`stage`, `compute` returning a Pending,
`working_set_bytes`, `load_key`, plus the optional `bind_thread`, `discard`,
`trim_pool`, `resident_bytes`, `memory_budget_bytes`) and models the parts that
matter to scheduling:

* the upload stream: one copy engine, uploads run one after another
  (`upload_ms` each, asynchronous: `stage` only enqueues, after `stage_host_ms`
  of host work on the device thread);
* the compute streams: a proof's kernels start when its upload is done and
  its stream is free, and run `gpu_ms` alone; proofs on different streams
  share the device (processor sharing, throughput 1 + concurrency_gain·(n−1)
  for n at once, capped at n);
* VRAM: a stream-ordered pool of `vram_bytes`; a proof's working set is taken
  at `stage` and comes back when its done event fires; a proof that does not
  fit raises `SimulatedOutOfMemory` (the budget must make that impossible);
* device-global calls (`trim_pool`, `mem_get_info`) go through the checks of
  cuda_kernels/device_global.py, as the real driver wrapper's do, with the
  scheduler's budget as owner (`set_guard_owner`);
* which thread made each call, so tests can check the threading model.

`SimulatedKit` supplies what the engine needs around the device for
simulated jobs: synthesis tasks (run in the real process pool), and the
epilogue and verification (sleeps).  The "proof" is a `SimulatedProof` record.
"""
from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.errors import DeviceOutOfMemoryError, EngineError, VerificationError

from cuda_kernels import device_global
from scheduler.pipeline import Partition

GiB = 1 << 30
FAIL_ON_DEVICE = 0x5EED_FA11  # witness[0, 1] == this: the simulated stage raises


class SimulatedOutOfMemory(DeviceOutOfMemoryError):
    """The simulated pool could not hold a working set (the budget failed to prevent it)."""


class SimulatedDeviceFault(EngineError):
    """A simulated device call failed (injected by a test through the witness)."""


@dataclass
class SimParams:
    upload_ms: float = 10.0
    stage_host_ms: float = 1.0
    gpu_ms: float = 50.0
    vram_bytes: int = 8 * GiB
    working_set_bytes: int = 2 * GiB
    key_bytes: int = 0
    concurrency_gain: float = 0.0
    jitter: float = 0.0  # relative spread of upload and kernel times
    seed: int = 0


@dataclass
class SimKey:
    """A simulated proving key (what `load_key` accepts and the kit reads)."""

    label: str
    witness_rows: int = 1024
    n_public: int = 1
    working_set_bytes: int | None = None  # None: the device's SimParams value


class SimResidentKey:
    def __init__(self, key: SimKey, device: int):
        self.zkey = key
        self.device = device
        self.closed = False

    def close(self) -> None:
        self.closed = True


@dataclass
class SimStaged:
    key: SimResidentKey
    witness: np.ndarray
    upload_done_ns: int
    nbytes: int
    timings: dict = field(default_factory=dict)


@dataclass
class SimCore:
    """The simulated CoreResult: what the kit's finish turns into a SimulatedProof."""

    key: str
    digest: int
    device: int
    slot: int
    timings: dict = field(default_factory=dict)


@dataclass
class SimulatedProof:
    """The record a simulated job returns in place of a Groth16 proof."""

    key: str
    public: list[int]
    digest: int
    device: int
    timings: dict = field(default_factory=dict)


class _Job:
    __slots__ = ("work_ns", "not_before", "stream", "done", "done_ns", "on_done", "started")

    def __init__(self, work_ns: int, not_before: int, stream: Any, on_done):
        self.work_ns, self.not_before, self.stream, self.on_done = float(work_ns), not_before, stream, on_done
        self.done = threading.Event()
        self.done_ns = 0
        self.started = False


class _SharedGpu:
    """Processor sharing over the active kernels of all streams, on one timing thread."""

    def __init__(self, gain: float, name: str):
        self.gain = gain
        self._cv = threading.Condition()
        self._waiting: list[_Job] = []  # not started (upload or stream not ready)
        self._active: list[_Job] = []
        self._stream_busy: set = set()
        self._last = time.monotonic_ns()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name=f"{name}-timing", daemon=True)
        self._thread.start()

    def submit(self, job: _Job) -> None:
        with self._cv:
            self._waiting.append(job)
            self._cv.notify()

    def active(self) -> int:
        with self._cv:
            return len(self._active)

    def stop(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify()
        self._thread.join(5.0)

    def _rate(self, n: int) -> float:
        if n == 0:
            return 0.0
        return min(float(n), 1.0 + self.gain * (n - 1)) / n

    def _run(self) -> None:
        with self._cv:
            while not self._stop:
                now = time.monotonic_ns()
                rate = self._rate(len(self._active))
                for job in self._active:
                    job.work_ns -= (now - self._last) * rate
                self._last = now
                for job in [j for j in self._active if j.work_ns <= 20_000]:  # within 20 µs: done
                    self._active.remove(job)
                    self._stream_busy.discard(job.stream)
                    job.done_ns = now
                    job.on_done(job)
                    job.done.set()
                for job in list(self._waiting):  # FIFO per stream: the first waiting job of a free stream
                    if job.not_before <= now and job.stream not in self._stream_busy:
                        self._waiting.remove(job)
                        self._stream_busy.add(job.stream)
                        job.started = True
                        self._active.append(job)
                wake = [j.not_before - now for j in self._waiting if j.stream not in self._stream_busy]
                rate = self._rate(len(self._active))
                wake += [j.work_ns / rate for j in self._active]
                timeout = max(min(wake), 0) / 1e9 if wake else None
                self._cv.wait(timeout)


class _SimPending:
    """The Pending of a simulated compute: wait() blocks until the simulated done event."""

    def __init__(self, device: "SimulatedDevice", job: _Job, result: Any):
        self._device, self._job, self._result = device, job, result

    def wait(self) -> Any:
        self._device._note_thread("wait")
        self._job.done.wait()
        return self._result


class SimulatedDevice:
    """One simulated GPU (the backend a DeviceWorker drives)."""

    name = "simulated"

    def __init__(self, index: int = 0, params: SimParams | None = None):
        self.index = index
        self.params = params or SimParams()
        self._rng = random.Random(self.params.seed * 1009 + index)
        self._lock = threading.Lock()
        self._gpu = _SharedGpu(self.params.concurrency_gain, f"sim{index}")
        self._upload_free_at = 0
        self.in_use = 0  # pool bytes held by proofs (stream-ordered: returned at done)
        self.peak_in_use = 0
        self.key_bytes = 0
        self.bound: set[str] = set()
        self.calls: list[tuple[str, str]] = []  # (call, thread name)
        self.foreign_calls: list[tuple[str, str]] = []  # calls from threads that never bound
        self.global_calls: list[tuple[str, int]] = []  # (banned call, outstanding reservations then)
        self.trims = 0
        self.owner: object = None  # whose reservations its device-global calls are checked against

    def set_guard_owner(self, owner: object) -> None:
        self.owner = owner

    # ---- threading model
    def bind_thread(self) -> None:
        self.bound.add(threading.current_thread().name)

    def _note_thread(self, call: str) -> None:
        name = threading.current_thread().name
        self.calls.append((call, name))
        if name not in self.bound:
            self.foreign_calls.append((call, name))

    def _device_global(self, call: str) -> None:
        self._note_thread(call)
        self.global_calls.append((call, device_global.reservations_outstanding(self.index, self.owner)))
        device_global.check(call, self.index, self.owner)

    def _spread(self, ms: float) -> int:
        j = self.params.jitter
        factor = 1.0 + (self._rng.uniform(-j, j) if j else 0.0)
        return int(max(ms * factor, 0.0) * 1e6)

    # ---- budget hints and keys
    def memory_budget_bytes(self) -> int:
        return self.params.vram_bytes

    def mem_get_info(self) -> tuple[int, int]:
        self._device_global("cuMemGetInfo")  # simulated; off the proof path: start-up only
        return self.params.vram_bytes - self.in_use - self.key_bytes, self.params.vram_bytes

    def load_key(self, key: SimKey) -> SimResidentKey:
        self._note_thread("load_key")
        with self._lock:
            self.key_bytes += self.params.key_bytes
        return SimResidentKey(key, self.index)

    def resident_bytes(self, key: SimResidentKey) -> int:
        return self.params.key_bytes

    def unload_key(self, key: SimResidentKey) -> None:
        self._note_thread("unload_key")
        with self._lock:
            self.key_bytes -= self.params.key_bytes
        key.close()

    def working_set_bytes(self, key: SimResidentKey) -> int:
        ws = key.zkey.working_set_bytes
        return self.params.working_set_bytes if ws is None else ws

    # ---- the two phases
    def stage(self, key: SimResidentKey, witness: np.ndarray) -> SimStaged:
        self._note_thread("stage")
        if witness.ndim == 2 and witness.shape[0] > 0 and witness.shape[1] > 1 and int(witness[0, 1]) == FAIL_ON_DEVICE:
            raise SimulatedDeviceFault(f"simulated device {self.index}: injected fault in the memory phase")
        nbytes = self.working_set_bytes(key)
        with self._lock:
            if self.in_use + nbytes + self.key_bytes > self.params.vram_bytes:
                raise SimulatedOutOfMemory(
                    f"simulated device {self.index}: out of memory: {nbytes} bytes asked, "
                    f"{self.in_use} in use by proofs, {self.key_bytes} by keys, of {self.params.vram_bytes}"
                )
            self.in_use += nbytes
            self.peak_in_use = max(self.peak_in_use, self.in_use)
        if self.params.stage_host_ms:
            time.sleep(self.params.stage_host_ms / 1e3)  # host work of the memory phase (pinning, allocation)
        now = time.monotonic_ns()
        with self._lock:
            done = max(now, self._upload_free_at) + self._spread(self.params.upload_ms)
            self._upload_free_at = done
        return SimStaged(key, witness, done, nbytes)

    def compute(self, staged: SimStaged, slot: int = 0) -> _SimPending:
        self._note_thread("compute")
        digest = int(np.bitwise_xor.reduce(staged.witness[:, 0])) if staged.witness.size else 0
        job = _Job(self._spread(self.params.gpu_ms), staged.upload_done_ns, ("compute", slot), self._freer(staged.nbytes))
        self._gpu.submit(job)
        return _SimPending(self, job, SimCore(staged.key.zkey.label, digest, self.index, slot, dict(staged.timings)))

    def discard(self, staged: SimStaged) -> _SimPending:
        """Free a staged proof that will not be computed (stream-ordered, after its upload)."""
        self._note_thread("discard")
        job = _Job(0, staged.upload_done_ns, ("discard", id(staged)), self._freer(staged.nbytes))
        self._gpu.submit(job)
        return _SimPending(self, job, None)

    def _freer(self, nbytes: int):
        def free(_job: _Job) -> None:
            with self._lock:
                self.in_use -= nbytes

        return free

    def trim_pool(self) -> None:
        self._device_global("cuMemPoolTrimTo")  # simulated; off the proof path: idle trim only
        self.trims += 1

    def close(self) -> None:
        self._gpu.stop()


# ------------------------------------------------------------------ the kit: synthesis and epilogue

def simulated_synthesis(rows: int, synth_ms: float, seed: int, options: dict) -> tuple[dict, np.ndarray]:
    """A synthesis task (runs in a worker process): sleeps, then makes a (rows, 4) uint64 witness.

    options: crash=True ends the worker process; fail="message" raises;
    device_fail=True makes the simulated memory phase raise; rows=N overrides the size.
    """
    if options.get("crash"):
        os._exit(17)
    if options.get("fail"):
        raise EngineError(str(options["fail"]))
    ms = float(options.get("synth_ms", synth_ms))
    if ms:
        time.sleep(ms / 1e3)
    rows = int(options.get("rows", rows))
    rng = np.random.default_rng(int(options.get("seed", seed)))
    values = rng.integers(0, 1 << 62, size=(rows, 4), dtype=np.uint64)
    if rows:
        values[0] = (1, 0, 0, 0)
        if options.get("device_fail"):
            values[0, 1] = FAIL_ON_DEVICE
    return {"rows": rows}, values


class SimulatedKit:
    """The engine-side pieces of a simulated job (the Groth16 kit's counterpart)."""

    name = "simulated"

    def __init__(self, witness_rows: int = 1024, synth_ms: float = 20.0, epilogue_ms: float = 5.0,
                 verify_ms: float = 5.0, seed: int = 0):
        self.witness_rows = witness_rows
        self.synth_ms = synth_ms
        self.epilogue_ms = epilogue_ms
        self.verify_ms = verify_ms
        self._seed = seed
        self._count = 0

    def read_key(self, path: Any, wasm: Any = None) -> SimKey:
        if isinstance(path, SimKey):
            return path
        return SimKey(label=os.path.basename(os.fspath(path)) or "simulated", witness_rows=self.witness_rows)

    def backend_key(self, key: SimKey) -> SimKey:
        return key

    def describe(self, key: SimKey) -> dict:
        return {"path": None, "curve": None, "n_vars": key.witness_rows, "n_public": key.n_public, "domain_size": 0}

    def key_label(self, key: SimKey) -> str:
        return key.label

    def witness_bytes(self, key: SimKey) -> int:
        return key.witness_rows * 32

    def make_partition(self, key: SimKey, index: int, item: Any) -> Partition:
        """item: a dict of options for `simulated_synthesis`, a label string, or an in-memory (rows, 4) array."""
        self._count += 1
        if isinstance(item, np.ndarray):
            return Partition(index, f"in-memory witness {self._count}", values=item)
        options = dict(item) if isinstance(item, dict) else {}
        label = str(options.get("label", item if isinstance(item, str) else f"simulated witness {self._count}"))
        args = (key.witness_rows, self.synth_ms, self._seed + self._count, options)
        return Partition(index, label, task=(simulated_synthesis, args))

    def check(self, key: SimKey, meta: Any, values: np.ndarray, label: str) -> None:
        if values.ndim != 2 or values.shape[1] != 4:
            raise EngineError(f"{label}: a simulated witness is (rows, 4) uint64, got {values.shape}")

    def public(self, key: SimKey, values: np.ndarray) -> list[int]:
        return [int(v) for v in values[1 : key.n_public + 1, 0]]

    def finish(self, key: SimKey, core: SimCore, public: list[int]) -> SimulatedProof:
        if self.epilogue_ms:
            time.sleep(self.epilogue_ms / 1e3)
        return SimulatedProof(core.key, public, core.digest, core.device, dict(core.timings))

    def verify(self, key: SimKey, proof: SimulatedProof) -> None:
        if self.verify_ms:
            time.sleep(self.verify_ms / 1e3)
        if proof.key != key.label:
            raise VerificationError(f"simulated proof for {proof.key} does not match key {key.label}")
