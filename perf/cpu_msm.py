"""Timings of the CPU reference MSM (and, with --verify, of a Groth16 verification).

    python perf/cpu_msm.py                 # 2^12 and 2^14 G1, 2^12 G2, both curves, 1 process and the pool
    python perf/cpu_msm.py --sweep         # serial vs pool over n: where splitting starts to pay
    python perf/cpu_msm.py --verify        # one verification (3 Miller loops + final exp.) per curve

Random bases are made with batched affine additions (cheap), random scalars
are full-size.  MSM times are wall-clock seconds of one run after a warm-up of
the pool (its start-up is printed separately); verification times are the
best of 5 in process CPU time (single-threaded work, steadier on a busy host).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.algebra import ec  # noqa: E402
from engine.algebra import msm  # noqa: E402
from engine.algebra import pairing as pr  # noqa: E402
from engine.algebra.curves import BLS12_381, BN254  # noqa: E402
from script_args import Parser, positive, run_main  # noqa: E402


def random_points(curve, n: int, g2: bool, seed: int = 1) -> list:
    """n pseudo-random group points: sums of random pairs of a few random multiples, in batches."""
    rng = random.Random(seed)
    ops = ec.G2_OPS(curve) if g2 else ec.G1_OPS(curve)
    gen, mul = (curve.g2_gen, ec.g2_mul) if g2 else (curve.g1_gen, ec.g1_mul)
    pts = [mul(curve, gen, rng.randrange(1, curve.r)) for _ in range(16)]
    while len(pts) < n:
        m = min(len(pts), n - len(pts))
        i = np.array([rng.randrange(len(pts)) for _ in range(m)])
        j = np.array([(k + 1 + rng.randrange(len(pts) - 1)) % len(pts) for k in i])
        arr = ops.to_arrays(pts)
        sums, inf = ops.batch_add(tuple(c[i] for c in arr), tuple(c[j] for c in arr))
        pts += [p for p, bad in zip(ops.from_arrays(sums), inf) if not bad]
    return pts[:n]


def timed(fn, clock=time.perf_counter) -> tuple[float, object]:
    t = clock()
    out = fn()
    return clock() - t, out


def run_table(workers: int) -> None:
    t, _ = timed(lambda: msm.warm_pool(workers))
    print(f"pool start-up ({workers} workers): {t:.2f} s")
    print(f"{'curve':<9} {'group':<5} {'n':>6} {'1 process':>10} {'(CPU)':>8} {f'pool x{workers}':>10}")
    for curve in (BN254, BLS12_381):
        for g2, n in ((False, 1 << 12), (False, 1 << 14), (True, 1 << 12)):
            pts = random_points(curve, n, g2)
            rng = random.Random(n)
            ks = [rng.randrange(curve.r) for _ in range(n)]
            f = msm.msm_g2 if g2 else msm.msm_g1
            c1 = time.process_time()
            t1, r1 = timed(lambda: f(curve, pts, ks, workers=1))
            c1 = time.process_time() - c1
            tp, rp = timed(lambda: f(curve, pts, ks, workers=workers))
            assert r1 == rp, "pool and serial results differ"
            print(f"{curve.name:<9} {'G2' if g2 else 'G1':<5} {n:>6} {t1:>9.2f}s {c1:>7.2f}s {tp:>9.2f}s", flush=True)


def run_sweep(workers: int) -> None:
    """Pool round-trip cost, then serial vs pool (forcing the split) for growing n: PARALLEL_MIN_POINTS."""
    msm.warm_pool(workers)
    pool = msm._get_pool(workers)
    for g2, n in ((False, 512), (False, 2048), (True, 512)):
        pts = random_points(BN254, n, g2)
        ks = [random.Random(n).randrange(BN254.r) for _ in pts]
        rt = min(timed(lambda: pool.submit(len, (pts, ks)).result())[0] for _ in range(3))
        cpu = time.process_time()
        msm.pippenger(msm.G2_OPS(BN254) if g2 else msm.G1_OPS(BN254), pts, ks)
        cpu = time.process_time() - cpu
        print(f"{'G2' if g2 else 'G1'} n={n}: round trip to a worker {rt * 1e3:.1f} ms, serial MSM {cpu * 1e3:.0f} ms CPU")
    saved = dict(msm.PARALLEL_MIN_POINTS)
    msm.PARALLEL_MIN_POINTS.update({1: 1, 2: 1})
    try:
        for curve in (BN254,):
            for g2, sizes in ((False, (128, 256, 512, 1024, 2048, 4096)), (True, (64, 128, 256, 512, 1024))):
                pts = random_points(curve, max(sizes), g2)
                rng = random.Random(7)
                ks = [rng.randrange(curve.r) for _ in pts]
                f = msm.msm_g2 if g2 else msm.msm_g1
                for n in sizes:
                    t1, _ = timed(lambda: f(curve, pts[:n], ks[:n], workers=1))
                    tp, _ = timed(lambda: f(curve, pts[:n], ks[:n], workers=workers))
                    print(f"{curve.name} {'G2' if g2 else 'G1'} n={n:>5}: 1 process {t1:.3f}s, pool {tp:.3f}s", flush=True)
    finally:
        msm.PARALLEL_MIN_POINTS.update(saved)


def run_verify() -> None:
    """What engine.groth16.verifier.verify does per proof: prepare B, 3 Miller loops, final exponentiation."""
    for curve in (BN254, BLS12_381):
        rng = random.Random(3)
        P = [ec.g1_mul(curve, curve.g1_gen, rng.randrange(curve.r)) for _ in range(4)]
        Q = [ec.g2_mul(curve, curve.g2_gen, rng.randrange(curve.r)) for _ in range(4)]
        for Qi in Q[1:3]:
            pr.prepare_g2(curve, Qi)  # γ2, δ2: cached per key
        three = list(zip(P[:3], Q[:3]))
        runs = []
        for _ in range(5):
            pr._prepared.pop((curve.name, Q[0]), None)  # the proof's B is new every time
            runs.append(timed(lambda: pr.final_exponentiation(curve, pr.miller_loop(curve, three)), time.process_time)[0])
        full = min(timed(lambda: pr.pairing_check(curve, list(zip(P, Q))), time.process_time)[0] for _ in range(5))
        print(
            f"{curve.name}: one verification (new B, cached γ2/δ2/e(α,β)) {min(runs) * 1e3:.1f} ms CPU; "
            f"4 pairings + 1 final exponentiation, all lines cached {full * 1e3:.1f} ms CPU"
        )


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=positive, default=os.cpu_count() or 2)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--verify", action="store_true")
    args = ap.parse_args()
    if args.verify:
        run_verify()
    elif args.sweep:
        run_sweep(args.workers)
    else:
        run_table(args.workers)
    msm.shutdown_pool()


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
