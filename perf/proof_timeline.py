"""One warm GPU proof on a single time line: when the host issued each step and when the device reached it.

    python perf/proof_timeline.py --zkey bench.zkey --wtns bench.wtns [--repeats 9]

perf/host_split.py says how long each host call takes; this says where the device waits for the host.
For each proof (after a warm-up) it stamps, on the host's clock from the start of the memory phase, every
kernel launch and event record the pipeline makes, and on the device's clock every timing event (the
stage marks), measured from the proof's first event (the upload's start, recorded on an idle stream, so
device 0 ~ the host's stamp of that record).  It prints the medians: for each mark, the host's time of
its record and the device's time of reaching it (their difference is how far the device runs behind the
host's enqueue; a mark whose device time is close to its host time means the device was waiting for the
host), the launches per stage and the host's end of stage, compute and wait.  The marks of a resident key's
proof, in order: the upload's start and end (stream 0, the upload stream), the compute stream's first mark,
the tail's early phase (start, end: stream 2, the side stream), the evaluation, the front's NTTs and
quotient, the H MSM, the A/B1/C MSMs, the mid phase (start, end, side), the B2 MSM, the final phase; then
the host's return from waiting on the done event and the start of the result's decode.
"""
from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import engine.backends.gpu.epilogue as gepi  # noqa: E402
import engine.backends.gpu.launch as glaunch  # noqa: E402
import engine.backends.gpu.msm as gmsm  # noqa: E402
import engine.backends.gpu.ntt as gntt  # noqa: E402
import engine.backends.gpu.pipeline as P  # noqa: E402
import engine.backends.gpu.runtime as runtime  # noqa: E402
from cuda_kernels import driver  # noqa: E402
from engine.backends.select import select_backend  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from engine.formats import read_wtns, read_zkey  # noqa: E402
from script_args import Parser, input_file, positive, run_main  # noqa: E402

LOG: list[tuple[float, str, object]] = []  # (host time, what, timing event or None)
STREAMS: dict[int, str] = {}  # the streams in the order they first record a mark: upload, compute, side
DEVICE: dict[int, float] = {}  # id(timing event) -> device ms from the proof's first timing event


class StampedEvent(driver.Event):
    def __init__(self, timing: bool = False):
        super().__init__(timing)
        self.timing = timing

    def record(self, stream):
        out = super().record(stream)
        if self.timing:
            self.stream = STREAMS.setdefault(id(stream), f"stream {len(STREAMS)}")
            LOG.append((time.perf_counter(), "mark", self))
        return out


def stamped_launch(module, name, *args, **kw):
    LOG.append((time.perf_counter(), name, None))
    return driver.launch(module, name, *args, **kw)


real_give = runtime.EventPool.give
real_await, real_core = P._await_frees, P._core


def stamped_await(*args):
    out = real_await(*args)
    LOG.append((time.perf_counter(), "done event waited", None))
    return out


def stamped_core(*args):
    LOG.append((time.perf_counter(), "decode", None))
    return real_core(*args)


def timing_give(self, *events):
    """Before the pipeline gives its events back to the pool: every recorded timing event's device time."""
    first = next((e for _, what, e in LOG if what == "mark"), None)
    for e in events:
        if e is not None and getattr(e, "timing", False) and first is not None and id(e) not in DEVICE:
            try:
                DEVICE[id(e)] = first.elapsed_ms(e)
            except Exception:  # noqa: BLE001 - an event never recorded
                pass
    return real_give(self, *events)


def timed_proof(backend, key, values) -> tuple[float, float, float, float]:
    """One proof's stage, compute and wait on the host's clock: (start, staged, enqueued, done)."""
    t0 = time.perf_counter()
    staged = backend.stage(key, values)
    t1 = time.perf_counter()
    pending = backend.compute(staged)
    t2 = time.perf_counter()
    pending.wait()
    return t0, t1, t2, time.perf_counter()


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--zkey", type=input_file, required=True)
    ap.add_argument("--wtns", type=input_file, required=True)
    ap.add_argument("--repeats", type=positive, default=9)
    args = ap.parse_args()
    require_gpu()
    runtime.Event = P.Event = StampedEvent  # the context's event pool makes them
    runtime.EventPool.give = timing_give
    P._await_frees, P._core = stamped_await, stamped_core
    for mod in (P, glaunch, gmsm, gntt, gepi):  # every module that launches a proof's kernels
        if hasattr(mod, "launch"):
            mod.launch = stamped_launch
    zkey, wit = read_zkey(args.zkey), read_wtns(args.wtns)
    backend = select_backend("gpu")
    key = backend.load_key(zkey)
    key.synchronize()
    runs = []
    for i in range(args.repeats + 1):
        if backend.maintenance_due():
            backend.maintain()
        LOG.clear()
        DEVICE.clear()
        t0, t1, t2, t3 = timed_proof(backend, key, wit.values)
        if not i:
            continue
        first_mark = next(t for t, what, _ in LOG if what == "mark")
        rows, launches, n = [], defaultdict(int), 0
        for t, what, ev in LOG:
            if what == "mark":
                rows.append((f"mark {n} ({ev.stream})", (t - t0) * 1e3, DEVICE.get(id(ev), float("nan")) + (first_mark - t0) * 1e3,
                             launches.copy()))
                n += 1
                launches.clear()
            elif what in ("done event waited", "decode"):
                rows.append((what, (t - t0) * 1e3, None, {}))
            else:
                launches[what] += 1
        rows += [("stage returned", (t1 - t0) * 1e3, None, {}), ("compute returned", (t2 - t0) * 1e3, None, {}),
                 ("wait returned", (t3 - t0) * 1e3, None, {})]
        runs.append(rows)
    key.close()
    backend.close()
    print(f"{zkey.curve.name} domain 2^{zkey.log_domain}, medians of {len(runs)} proofs; ms from the memory phase's start")
    print("| point | host issued | device reached | device - host | launches since the previous mark |")
    print("|---|---|---|---|---|")
    for j, (name, _, dev, launches) in enumerate(runs[0]):
        host = statistics.median(r[j][1] for r in runs)
        d = statistics.median(r[j][2] for r in runs) if dev is not None else None
        ls = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in launches.items())
        dd = f"{d:.3f}" if d is not None else ""
        diff = f"{d - host:+.3f}" if d is not None else ""
        print(f"| {name} | {host:.3f} | {dd} | {diff} | {ls} |")


if __name__ == "__main__":
    run_main(main)
