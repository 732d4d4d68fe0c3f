"""Where the host's share of a warm GPU proof goes, function by function: cProfile over the calls that
`engine.groth16.prover.prove` makes (perf/host_split.py times them as a whole).

    python perf/host_profile.py --zkey bench.zkey --wtns bench.wtns [--repeats 30] [--top 35]

A key loaded once and warmed (as perf/prove.py does); then --repeats proofs of check, stage, compute,
wait and finish under the profiler, printed by own time, then by cumulative time.  The profiler adds
its own cost to every Python call: read the ranks and the shares, not the absolute milliseconds.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.backends.select import select_backend  # noqa: E402
from engine.formats import read_wtns, read_zkey  # noqa: E402
from engine.groth16.prover import check_witness_for_key, finish  # noqa: E402
from engine.groth16.verifier import vk_from_zkey  # noqa: E402


class WarmKey:
    """A key loaded once and warmed, as perf/prove.py does (its fold tables built first; the pinned buffers
    maintained between proofs, as the Engine's device worker does while the device is idle)."""

    def __init__(self, zkey_path: str, wtns_path: str, warmups: int = 3):
        self.zkey, self.wit = read_zkey(zkey_path), read_wtns(wtns_path)
        self.backend = select_backend("gpu")
        self.key = self.backend.load_key(self.zkey)
        getattr(self.key, "synchronize", lambda: None)()
        self.vk = vk_from_zkey(self.zkey)
        self.on_device = bool(getattr(self.backend, "checks_witness_range", False))
        for _ in range(warmups):
            self.proof()

    def proof(self) -> tuple[float, float]:
        """One proof as prover.prove makes it: (its seconds, those of its check and stage)."""
        backend, zkey, values = self.backend, self.zkey, self.wit.values
        if getattr(backend, "maintenance_due", lambda: False)():
            backend.maintain()
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zkey", required=True)
    ap.add_argument("--wtns", required=True)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--top", type=int, default=35)
    args = ap.parse_args()
    warm = WarmKey(args.zkey, args.wtns)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.repeats):
        warm.proof()
    prof.disable()
    warm.close()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats(order).print_stats(args.top)
        text = out.getvalue()
        print(f"== {args.repeats} proofs, by {order}")
        print(text[text.find("   ncalls"):].rstrip())


if __name__ == "__main__":
    main()
