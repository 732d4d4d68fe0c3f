"""Where a warm GPU proof's time outside the device stages goes: the host steps of `prove` one by one.

    python perf/host_split.py --zkey bench.zkey --wtns bench.wtns [--repeats 7]

For a key loaded once (as perf/prove.py does: the pinned buffers maintained while idle), each of
--repeats proofs after a warm-up is taken apart into the calls `engine.groth16.prover.prove` makes:
the witness checks (`check_witness_for_key`; the values' range left to a backend that checks
it on the device, as `prove` does), the memory phase (`backend.stage`: the copy into the
pinned buffer and the upload's enqueue), the compute phase's enqueue (`backend.compute`), the wait
for the device (`Pending.wait`: decode included) and `finish` (public signals, the Proof).  Prints
the medians (ms) beside the whole proof and the device's stage sum (engine.progress.stage_seconds),
so that a proof/gpu ratio above 1 is split into host work and waiting.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.backends.select import select_backend  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from engine.formats import read_wtns, read_zkey  # noqa: E402
from engine.groth16.prover import check_witness_for_key, finish  # noqa: E402
from engine.groth16.verifier import vk_from_zkey  # noqa: E402
from engine.progress import stage_seconds  # noqa: E402
from script_args import Parser, input_file, positive, run_main  # noqa: E402


class WarmKey:
    """A key loaded once and warmed, as perf/prove.py does (its fold tables built first; the pinned buffers
    maintained between proofs, as the Engine's device worker does while the device is idle)."""

    def __init__(self, zkey_path: str, wtns_path: str, warmups: int = 3, backend: str = "gpu"):
        self.zkey, self.wit = read_zkey(zkey_path), read_wtns(wtns_path)
        if backend == "gpu":
            require_gpu()
        self.backend = select_backend(backend)
        self.key = self.backend.load_key(self.zkey)
        getattr(self.key, "synchronize", lambda: None)()
        self.vk = vk_from_zkey(self.zkey)
        self.on_device = bool(getattr(self.backend, "checks_witness_range", False))
        for _ in range(warmups):
            self.proof()

    def maintain(self) -> None:
        if getattr(self.backend, "maintenance_due", lambda: False)():
            self.backend.maintain()

    def proof(self) -> tuple[float, float]:
        """One proof as prover.prove makes it: (its seconds, those of its check and stage)."""
        backend, zkey, values = self.backend, self.zkey, self.wit.values
        self.maintain()
        t0 = time.perf_counter()
        check_witness_for_key(zkey, zkey.curve.r, values, range_check=not self.on_device)
        staged = backend.stage(self.key, values)
        t1 = time.perf_counter()
        finish(zkey, backend.compute(staged).wait(), values, vk=self.vk)
        return time.perf_counter() - t0, t1 - t0

    def close(self) -> None:
        self.key.close()
        self.backend.close()


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--zkey", type=input_file, required=True)
    ap.add_argument("--wtns", type=input_file, required=True)
    ap.add_argument("--repeats", type=positive, default=7)
    ap.add_argument("--backend", default="gpu")
    args = ap.parse_args()
    warm = WarmKey(args.zkey, args.wtns, warmups=0, backend=args.backend)
    zkey, wit, backend, key, vk, on_device = warm.zkey, warm.wit, warm.backend, warm.key, warm.vk, warm.on_device
    rows = []
    for i in range(args.repeats + 1):
        warm.maintain()
        t0 = time.perf_counter()
        check_witness_for_key(zkey, zkey.curve.r, wit.values, range_check=not on_device)
        t1 = time.perf_counter()
        staged = backend.stage(key, wit.values)
        t2 = time.perf_counter()
        pending = backend.compute(staged)
        t3 = time.perf_counter()
        core = pending.wait()
        t4 = time.perf_counter()
        proof = finish(zkey, core, wit.values, vk=vk)
        t5 = time.perf_counter()
        if i:
            gpu = sum(v for k, v in stage_seconds(proof.timings).items() if k.startswith("gpu_"))
            rows.append({"check": t1 - t0, "stage": t2 - t1, "compute enqueue": t3 - t2, "wait": t4 - t3,
                         "finish": t5 - t4, "whole": t5 - t0, "gpu sum": gpu})
    warm.close()
    med = {k: statistics.median(r[k] for r in rows) * 1e3 for k in rows[0]}
    print(f"{zkey.curve.name} domain 2^{zkey.log_domain}, {zkey.n_vars} wires, medians of {len(rows)} (ms):")
    print("| " + " | ".join(med) + " |")
    print("|" + "---|" * len(med))
    print("| " + " | ".join(f"{v:.2f}" for v in med.values()) + " |")


if __name__ == "__main__":
    run_main(main)
