"""Timings of development setups and synthetic benchmark circuits.

    python perf/setup.py                         # default table (a few minutes on 2 cores)
    python perf/setup.py --bench 16,20,24        # bench-circuit generation + file writing at 2^k
    python perf/setup.py --field 16,18,20        # field side of a setup (Lagrange, QAP sums, H) at 2^k
    python perf/setup.py --points 4096           # fixed-base G1/G2 rate, extrapolated to a full key
    python perf/setup.py --full 12 --backend gpu # one whole setup, end to end, written to a temp dir

Sizes are domain powers: a bench circuit of 2^k - 3 constraints with 2
public signals, whose key has a domain of exactly 2^k.  Times are wall-clock
seconds of one run; --workers sets the CPU processes (default: all cores).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.groth16.bench_circuit import make_bench_circuit, write_bench_circuit  # noqa: E402
from engine.algebra.curves import curve_by_name  # noqa: E402
from engine.formats import read_r1cs  # noqa: E402
from engine.algebra.limbs import fr_from_ints  # noqa: E402
from engine.progress import Progress  # noqa: E402
from engine.groth16.setup import draw_toxic_waste, select_setup_ops, setup_file  # noqa: E402
from engine.groth16.setup_scalars import log_domain  # noqa: E402
from script_args import Parser, count_list, curve_name, positive, run_main  # noqa: E402

PUBLIC = 2


def constraints_for(k: int) -> int:
    return (1 << k) - PUBLIC - 1


def fmt(timings: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in timings.items())


def bench(curve_name: str, powers: list[int]) -> None:
    print(f"\n== bench-circuit ({curve_name}): generate + write .r1cs/.wtns")
    for k in powers:
        with tempfile.TemporaryDirectory() as d:
            prog = Progress()
            t = time.perf_counter()
            r1cs_path, wtns_path, b = write_bench_circuit(d, curve_name, constraints_for(k), n_public=PUBLIC,
                                                          seed=1, progress=prog)
            total = time.perf_counter() - t
            r = b.r1cs
            terms = int(r.a.row_ptr[-1] + r.b.row_ptr[-1] + r.c.row_ptr[-1])
            size = (os.path.getsize(r1cs_path) + os.path.getsize(wtns_path)) / 2**20
        print(f"2^{k}: {total:7.2f} s  ({r.n_constraints} constraints, {r.n_wires} wires, {terms} terms, "
              f"{size:.0f} MiB)  [{fmt(prog.timings)}]")


def field(curve_name: str, powers: list[int], workers: int | None) -> None:
    curve = curve_by_name(curve_name)
    ops = select_setup_ops("cpu", workers=workers)
    print(f"\n== field side of a setup ({curve_name}, {ops.workers} processes): CpuSetupOps.key_scalars")
    for k in powers:
        r1cs = make_bench_circuit(curve, constraints_for(k), PUBLIC, seed=1).r1cs
        kk = log_domain(curve, r1cs.n_constraints, r1cs.n_public)
        prog = Progress()
        t = time.perf_counter()
        ops.key_scalars(curve, r1cs, kk, draw_toxic_waste(curve, kk), prog)
        total = time.perf_counter() - t
        print(f"2^{k}: {total:7.2f} s  [{fmt(prog.timings)}]")


def points(curve_name: str, n: int, workers: int | None, backend: str) -> None:
    curve = curve_by_name(curve_name)
    ops = select_setup_ops(backend, workers=workers)
    rng = random.Random(1)
    s = fr_from_ints([rng.randrange(curve.r) for _ in range(n)])
    print(f"\n== fixed-base multiplications ({curve_name}, {ops.name}, {getattr(ops, 'workers', '-')} processes)")
    rates = {}
    for group, fn in (("G1", ops.g1_fixed_base), ("G2", ops.g2_fixed_base)):
        t = time.perf_counter()
        fn(curve, s)
        dt = time.perf_counter() - t
        rates[group] = n / dt
        print(f"{group}: {n} points in {dt:.2f} s = {n / dt:,.0f} points/s")
    # a key of domain 2^k from a bench circuit has about 2^k wires: A, B1, C, H in G1 (+IC), B2 in G2
    for k in (16, 18, 20):
        est = 4 * (1 << k) / rates["G1"] + (1 << k) / rates["G2"]
        print(f"estimated group work for a 2^{k} key: {est:,.0f} s")


def full(curve_name: str, k: int, workers: int | None, backend: str) -> None:
    ops = select_setup_ops(backend, workers=workers)
    with tempfile.TemporaryDirectory() as d:
        r1cs_path, _, _ = write_bench_circuit(d, curve_name, constraints_for(k), n_public=PUBLIC, seed=1)
        prog = Progress()
        t = time.perf_counter()
        key = setup_file(r1cs_path, os.path.join(d, "k.zkey"), ops, progress=prog)
        total = time.perf_counter() - t
        size = os.path.getsize(os.path.join(d, "k.zkey")) / 2**20
        assert key.domain_size == 1 << k and read_r1cs(r1cs_path).n_constraints == constraints_for(k)
    print(f"\n== whole setup ({curve_name}, {ops.name}), 2^{k}: {total:.2f} s, {size:.0f} MiB zkey  "
          f"[{fmt(prog.timings)}]")


def main() -> None:
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--curve", type=curve_name, default="bn128")
    p.add_argument("--bench", type=count_list, default=None, help="comma-separated powers for bench-circuit")
    p.add_argument("--field", type=count_list, default=None, help="comma-separated powers for the field side")
    p.add_argument("--points", type=positive, default=None, help="scalars per fixed-base run")
    p.add_argument("--full", type=positive, default=None, help="power of one whole setup")
    p.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "auto"))
    p.add_argument("--workers", type=positive, default=None)
    a = p.parse_args()
    if a.bench is a.field is a.points is a.full is None:  # the default table
        a.bench, a.field, a.points, a.full = "16,20", "16,18,20", 4096, 12
    powers = lambda s: [int(x) for x in s.split(",")] if s else []  # noqa: E731
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if a.bench:
        bench(a.curve, powers(a.bench))
    if a.field:
        field(a.curve, powers(a.field), a.workers)
    if a.points:
        points(a.curve, a.points, a.workers, a.backend)
    if a.full is not None:
        full(a.curve, a.full, a.workers, a.backend)


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
