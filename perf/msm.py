"""GPU MSM benchmark: G1 on both curves and G2 (BN254's, or --g2-curves), 2^12 .. 2^26 points.

    python perf/msm.py [--sizes 16,18,20,22,24] [--curves bn128,bls12381] [--g2] [--fold full|1|..]
                       [--accumulation xyzz,affine] [--scalars random,witness:Z,O] [--batch K]
                       [--affine THREADSxM,...] [--breakdown] [--sets 3] [--window C,...]
                       [--fix SERIAL:WARPMAX:PERLANE,...] [--min-segment L,...]
                       [--product ref,value,mixed] [--sort direct,binned]
                       [--reduce-threads 128,256] [--combos ref:direct,mixed:binned]

Times the whole MSM as the prover runs it (bucket sort of the scalars, bucket
accumulation, reduction, the final point), with the points resident and
their window tables built beforehand (as a loaded key has them).  The floor
is the larger of (field products x IMADs per product) over the measured IMAD
rate and (bytes read) over the measured bandwidth; products count 6 a
batch-affine addition, 10 a mixed XYZZ one (Fq2 products as 3), 10 per reduction
addition (3 a bucket), with the affine rounds' additions taken from the plan's
bounds.  `--scalars witness:Z,O` draws Z zeros and O ones (fractions), the rest
uniform (perf/witness_share.py measures real circuits' shares); its rows carry
the ratio to random scalars of the same size.  `--batch K` also times K vectors
against the same bases in one pass, beside one.  `--affine 128x8,256x4s` sweeps
the affine rounds' block size and slots a thread (a trailing s: each round in three kernels,
msm.AFFINE_FUSED off).  `--breakdown` adds a table of each
phase's time (CUDA events between the kernels: digit count, scan, scatter, accumulation,
fix-up, segment reduction with the tree's first pass, later tree passes, combine), the
kernel launches and the planner's serial chain (`depth`, dependent point operations).
`--sets 3` also times three MSMs over one sorted vector (a proof's A, B1, C) as one launch
set against three after one another.  `--window 9,11` times those windows beside the
planner's (`base`: the plan made without the curve's planner terms, msm_costs.DEFAULT_COSTS,
what every curve took before them); `--fix 16:16:4,8:256:4` sweeps the fix-up's classes (msm.FIX_SERIAL,
FIX_WARP_MAX, FIX_PER_LANE) and `--min-segment 4,8` the reduction's shortest segment.
`--product ref,value,mixed` times the XYZZ pass's builds of the base field's product
(msm_builds.PRODUCT_ABI: operands through the stack frame, in registers, or the accumulation by
reference and the rest by value; eo, mixed_eo: the same with the even/odd product) and `--sort direct,binned` the bucket sort's placement
(msm.SORT), each combination over the same data, its result compared with the first's
(column `result`); `--combos ref:direct,mixed:binned` lists ABI:SORT pairs instead of the
cross product ("default": the module's own, per group; ABI:SORT:B also bounds the accumulation's
registers to B blocks of 128 an SM, msm_builds.ACCUMULATE_BOUNDS: BLS12-381's build only, column
`kernel`; B = 0 the unbounded kernel; `--g2-curves bls12381` times that curve's G2).  Rows carry `abi`, `sort`, `T` (entries
an accumulating thread), `resident` (accumulation blocks an SM holds, the driver's occupancy)
and `x first` (time over the first combination's).  `--reduce-threads 128,256` sweeps
msm_reduce_segments' block (both groups' msm.REDUCE_THREADS, column `RT`).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import time

import numpy as np
from gpu_common import (Device, Event, imads_per_mul, measure_rates, random_points, random_scalars, report, table,
                        time_ms)

from engine.algebra.curves import curve_by_name
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_builds
from engine.backends.gpu import msm_sort as gsort
from engine.backends.gpu import GpuBackend
from needs_gpu import require_gpu
from script_args import (  # noqa: E402
    Parser, amount, choice_list, count, count_list, curve_list, fields, list_of, optional, output_file, positive,
    run_main, word_or,
)

PRODUCTS = {"xyzz": 10, "affine": 6}  # per addition; an Fq2 product counts 3 Fq products


# The list flags' readers: each item to its grammar at the parse, not int() after the device's set-up (a typo was a
# traceback there, or on a laptop "needs a CUDA device", which hid it); each value handed on as main() splits it.
_fold = word_or("full", positive, "fold")
_counts = optional(count_list)  # "": the module's own value
_affine = optional(list_of(lambda t: fields(t.removesuffix("s"), "x", (positive, positive), "THREADSxM[s] shape"),
                           "THREADSxM[s] shapes (e.g. 128x8,256x4s)", "affine_list"))
_fix = optional(list_of(lambda t: fields(t, ":", (positive,) * 3, "SERIAL:WARPMAX:PERLANE class"),
                        "SERIAL:WARPMAX:PERLANE classes (e.g. 16:256:8)", "fix_list"))
_window = optional(list_of(word_or("base", positive, "window"), "windows (e.g. base,11)", "window_list"))
_accumulation = choice_list(("xyzz", "affine"), "accumulation", "accumulation_list")
_abis = optional(choice_list(msm_builds.PRODUCT_ABIS, "product ABI", "abi_list"))
_sorts = optional(choice_list(gsort.SORTS, "sort", "sort_list"))


def _combo(text: str) -> None:
    """ABI:SORT[:BOUND]: ABI and SORT one of theirs or "default", BOUND a count (0: the unbounded kernel)."""
    def one_of(choices):
        def check(word: str) -> str:
            if word != "default" and word not in choices:
                raise argparse.ArgumentTypeError(f"{word!r} is not default nor one of {', '.join(choices)}")
            return word
        return check

    checks = (one_of(msm_builds.PRODUCT_ABIS), one_of(gsort.SORTS), count)
    fields(text, ":", checks[:3 if text.count(":") == 2 else 2], "ABI:SORT[:BOUND] pair")


_combos = optional(list_of(_combo, "ABI:SORT[:BOUND] pairs (e.g. ref:direct,eo:direct:3)", "combo_list"))


def _fraction(text: str) -> float:
    value = amount(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text!r} is above 1 (a share)")
    return value


def scalar_list(text: str) -> str:
    """random and witness:ZERO,ONE (shares of zeros and ones, their sum at most 1; the comma is the list's too),
    handed on with random first: main() split "witness:Z,O,random" into a kind "witness:Z,O,random" (a
    ValueError after the set-up), and its "x random" column needs the random row first."""
    items, kinds, i = [item.strip() for item in text.split(",")], [], 0
    while i < len(items):
        if items[i] == "random":
            kinds.append("random")
            i += 1
            continue
        if not items[i].startswith("witness:") or i + 1 == len(items):
            raise argparse.ArgumentTypeError(f"{text!r} is no comma list of random, witness:ZERO,ONE "
                                             f"(at {items[i]!r})")
        zero, one = items[i].removeprefix("witness:"), items[i + 1]
        try:
            if _fraction(zero) + _fraction(one) > 1:
                raise argparse.ArgumentTypeError("the shares add up to more than 1")
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"witness:{zero},{one}: {e}") from None
        kinds.append(f"witness:{zero},{one}")
        i += 2
    return ",".join(sorted(dict.fromkeys(kinds), key=lambda k: k != "random"))


def witness_scalars(curve, n: int, zero: float, one: float, seed: int = 7) -> np.ndarray:
    x = random_scalars(curve, n, seed)
    u = np.random.default_rng(seed + 1).random(n)
    x[u < zero + one] = 0
    x[(u >= zero) & (u < zero + one), 0] = 1
    return x


@functools.lru_cache(maxsize=4)
def cached_points(curve, g2: bool, n: int) -> np.ndarray:
    return random_points(curve, g2, n)


def with_window(plan: gmsm.MsmPlan, c: int, fold) -> gmsm.MsmPlan:
    """`plan` with window c (and the fold it asks for, all windows for "full")."""
    w = gmsm.windows_for(c, plan.scalar_bits)
    f = w if fold == "full" else max(1, min(int(fold), w))
    return dataclasses.replace(plan, c=c, windows=w, fold=f)


class Launches:
    """Counts gmsm's kernel launches while active (the MSM's launch count)."""

    def __init__(self):
        self.count = 0
        self._real = gmsm.launch

    def __enter__(self):
        def counted(*a, **k):
            self.count += 1
            return self._real(*a, **k)

        gmsm.launch = counted
        return self

    def __exit__(self, *exc):
        gmsm.launch = self._real


def breakdown(stream, run, repeats: int) -> dict:
    """Median ms of each phase: run(mark) records an event after each phase."""
    per_phase: dict[str, list[float]] = {}
    for _ in range(repeats):
        events: list[tuple[str, Event]] = [("start", Event(timing=True))]
        events[0][1].record(stream)

        def mark(name: str) -> None:
            events.append((name, Event(timing=True)))
            events[-1][1].record(stream)

        run(mark)
        events[-1][1].synchronize()
        seen: dict[str, float] = {}
        for (_, a), (name, b) in zip(events, events[1:]):
            seen[name] = seen.get(name, 0.0) + a.elapsed_ms(b)
        for name, ms in seen.items():
            per_phase.setdefault(name, []).append(ms)
        for _, e in events:
            e.destroy()
    return {name: round(statistics.median(v), 4) for name, v in per_phase.items()}


def time_both(stream, fn, repeats: int, warmup: int = 2) -> tuple[float, float]:
    """Median milliseconds of fn() by CUDA events around it and by the wall clock from its first
    enqueue to the end event's completion (gpu_common.time_ms's loop, both clocks in one run)."""
    for _ in range(warmup):
        fn()
    stream.synchronize()
    events, walls = [], []
    for _ in range(repeats):
        e0, e1 = Event(timing=True), Event(timing=True)
        t0 = time.perf_counter()
        e0.record(stream)
        fn()
        e1.record(stream)
        e1.synchronize()
        walls.append((time.perf_counter() - t0) * 1000)
        events.append(e0.elapsed_ms(e1))
        e0.destroy()
        e1.destroy()
    return statistics.median(events), statistics.median(walls)


def _affine_label(plan) -> str:
    """THREADSxM of the plan's affine rounds, with s where each round runs in three kernels."""
    if not plan.affine_rounds:
        return ""
    return "x".join(map(str, gmsm.affine_shape())) + ("" if gmsm.AFFINE_FUSED else "s")


def bench(backend: GpuBackend, curve, log_n: int, g2: bool, fold, repeats: int, rates, accumulation: str,
          scalars: str, batch: int = 1, window: int | str | None = None, phases: list | None = None,
          sets: int = 1, kernels: list | None = None) -> list[dict]:
    """A row for each (product ABI, sort) of `kernels` (None: the module's own), all
    over the same points, tables and scalars (a 2^26 key's tables take seconds to build), each
    result compared with the first's (column `result`); with `phases`, each one's phase times
    appended there."""
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    mod = backend.ctx.module(curve)
    n = 1 << log_n
    group = "g2" if g2 else "g1"
    # window "base": the plan without the curve's planner terms (msm_costs.DEFAULT_COSTS, BN254's)
    plan = gmsm.plan_msm(n, curve.r.bit_length(), fold, accumulation=accumulation, batch=batch,
                         curve=None if window == "base" else curve.name, groups=(group,))
    if window not in (None, "base"):
        plan = with_window(plan, int(window), fold)
    layout = gmsm.AccumulateLayout.for_plan(plan, dev.sm_count)
    acc = (8 if g2 else 4) * curve.n8q
    pts_host = cached_points(curve, g2, n)
    pts = dev.alloc(plan.fold * pts_host.nbytes, stream)
    Device.upload(pts, pts_host, stream)
    gmsm.precompute(mod, group, plan, pts, stream)
    if scalars == "random":
        sc_host = np.concatenate([random_scalars(curve, n, seed=j) for j in range(batch)])
    else:
        z, o = (float(v) for v in scalars.split(":")[1].split(","))
        sc_host = np.concatenate([witness_scalars(curve, n, z, o, seed=7 + j) for j in range(batch)])
    sc = dev.alloc(sc_host.nbytes, stream)
    Device.upload(sc, sc_host, stream)
    binned = any(k[1] in ("binned", "auto") for k in kernels or []) or gsort.binned_sort(plan)
    sort = gmsm.SortScratch(dev, [plan], stream, binned=binned)
    bs = gmsm.BucketScratch(dev, [(plan, layout)], acc, stream)
    res = dev.alloc(max(sets, 1) * batch * acc, stream)

    def run(mark=None):
        gmsm.run_msm(mod, group, plan, layout, pts, sc, sort, bs, acc, res.ptr, stream, mark=mark)

    limbs = curve.n8q // 4
    bounds = plan.entry_bounds()
    products = (PRODUCTS["affine"] * (bounds[0] - bounds[-1]) + PRODUCTS["xyzz"] * (bounds[-1] + 3 * plan.keys))
    ops = products * (3 if g2 else 1) * imads_per_mul(limbs)
    nbytes = plan.max_entries * (4 + pts_host.nbytes // n) + batch * n * 32
    floor_ms = max(ops / rates["imad"], nbytes / rates["bw"]) * 1000
    own_abi, own_sort, own_bounds = msm_builds.PRODUCT_ABI, gsort.SORT, msm_builds.ACCUMULATE_BOUNDS
    rows, first = [], None
    for abi, sort_kind, *bound in kernels or [(None, None)]:
        msm_builds.PRODUCT_ABI = own_abi if not abi else {g: abi for g in ("g1", "g2")}  # else the curve's default
        gsort.SORT = sort_kind or own_sort
        # a third field: the accumulation's register bound (msm_builds.ACCUMULATE_BOUNDS), "0" for none
        msm_builds.ACCUMULATE_BOUNDS = own_bounds if not bound or bound[0] is None else (
            {} if int(bound[0]) == 0 else {g: int(bound[0]) for g in ("g1", "g2")})
        try:
            msm_builds.xyzz_kernel("accumulate", group, curve.name)
        except ValueError as exc:  # a bound this group's build lacks: skipped, the sweep goes on
            print(f"{curve.name} {group} 2^{log_n}: {exc}", flush=True)
            continue
        ms, wall = time_both(stream, run, repeats)
        with Launches() as counted:
            run()
        stream.synchronize()
        point = res_point(res, curve, g2, stream)
        if first is None:
            first = (point, ms)
        check = "same" if point == first[0] else "DIFFERS"  # a wrong result is reported, the sweep goes on
        if check != "same":
            print(f"{curve.name} {group} 2^{log_n}: product {abi}, sort {sort_kind}: the result "
                  "differs from the first combination's", flush=True)
        kernel = msm_builds.xyzz_kernel("accumulate", group, curve.name)
        extra = {}
        if phases is not None:
            split = breakdown(stream, run, repeats)
            split["launches"] = counted.count
            phases.append(split)
        if sets > 1 and gmsm.fused_sets(plan) >= sets:
            msms = [(pts, res.ptr + j * batch * acc) for j in range(sets)]

            def run_sets(fuse: bool):
                gmsm.sort_scalars(mod, plan, sc, sort, stream)
                if fuse:
                    gmsm.accumulate_sets(mod, group, plan, layout, msms, sort, bs, acc, stream)
                else:
                    for m in msms:
                        gmsm.accumulate_sets(mod, group, plan, layout, [m], sort, bs, acc, stream)

            extra[f"{sets} fused ms"] = round(time_ms(stream, lambda: run_sets(True), repeats=repeats), 3)
            extra[f"{sets} apart ms"] = round(time_ms(stream, lambda: run_sets(False), repeats=repeats), 3)
        rows.append({
            "curve": curve.name, "group": group.upper(), "log2 n": log_n, "batch": batch, "scalars": scalars,
            "acc": accumulation, "aff": _affine_label(plan),
            "c": plan.c, "fold": plan.fold, "rounds": plan.affine_rounds,
            "Mprod": round(products * (3 if g2 else 1) / 1e6, 1),
            "ms": round(ms, 3), "wall ms": round(wall, 3), "floor ms": round(floor_ms, 3),
            "ratio": round(ms / floor_ms, 2), "launches": counted.count,
            "depth": gmsm.critical_depth(plan, dev.sm_count),
            "fix": f"{gmsm.FIX_SERIAL}:{gmsm.FIX_WARP_MAX}:{gmsm.FIX_PER_LANE}", "L": layout.seg_len,
            "RT": gmsm.REDUCE_THREADS[group], "abi": msm_builds.product_abi(group, curve.name), "T": layout.chunk,
            "kernel": kernel.removeprefix("msm_accumulate_"),
            "sort": "binned" if gsort.binned_sort(plan) else "direct",
            "resident": mod.resident_blocks(kernel, gmsm.ACCUMULATE_THREADS), "x first": round(ms / first[1], 3),
            "result": check,
            **extra})
    msm_builds.PRODUCT_ABI, gsort.SORT, msm_builds.ACCUMULATE_BOUNDS = own_abi, own_sort, own_bounds
    sort.free(stream)
    bs.free(stream)
    for b in (pts, sc, res):
        Device.free(b, stream)
    stream.synchronize()
    return rows


def res_point(res, curve, g2: bool, stream) -> tuple | None:
    """The first result as an affine point (plain integers; None for infinity): each variant adds
    in its own order, so its XYZZ form differs while x = X/ZZ, y = Y/ZZZ agree (Montgomery's R
    cancels in the quotients)."""
    q, limbs = curve.q, curve.n8q // 4
    host = np.zeros((8 if g2 else 4) * limbs, dtype=np.uint32)
    Device.download(host, res, stream)
    stream.synchronize()
    words = [int.from_bytes(host[i * limbs:(i + 1) * limbs].tobytes(), "little") for i in range(len(host) // limbs)]
    if not g2:
        x, y, zz, zzz = words
        return None if zz == 0 else (x * pow(zz, -1, q) % q, y * pow(zzz, -1, q) % q)

    def div(a, b):  # in Fq2 = Fq[u]/(u^2 + 1)
        inv = pow(b[0] * b[0] + b[1] * b[1], -1, q)
        return ((a[0] * b[0] + a[1] * b[1]) * inv % q, (a[1] * b[0] - a[0] * b[1]) * inv % q)

    x, y, zz, zzz = (tuple(words[2 * i:2 * i + 2]) for i in range(4))
    return None if zz == (0, 0) else (div(x, zz), div(y, zzz))


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=count_list, default="16,18,20,22,24")
    ap.add_argument("--curves", type=curve_list, default="bn128,bls12381")
    ap.add_argument("--g2", action="store_true", help="also G2 (of --g2-curves)")
    ap.add_argument("--g2-only", action="store_true", help="only G2 (of --g2-curves)")
    ap.add_argument("--g2-curves", type=curve_list, default="bn128", help="comma list: the curves whose G2 --g2 times")
    ap.add_argument("--fold", type=_fold, default="full", help="full, or a count")
    ap.add_argument("--accumulation", type=_accumulation, default=gmsm.default_accumulation(),
                    help="comma list of xyzz, affine")
    ap.add_argument("--scalars", type=scalar_list, default="random", help="comma list: random, witness:ZERO,ONE")
    ap.add_argument("--batch", type=positive, default=1, help="also time this many vectors in one pass")
    ap.add_argument("--affine", type=_affine, default="",
                    help="comma list of THREADSxM[s] (s: a round in three kernels)")
    ap.add_argument("--breakdown", action="store_true", help="also each phase's time")
    ap.add_argument("--sets", type=positive, default=1, help="also time this many MSMs of one sorted vector")
    ap.add_argument("--window", type=_window, default="",
                    help="comma list of window bits to time beside the planner's (base: the curve-blind plan)")
    ap.add_argument("--fix", type=_fix, default="", help="comma list of SERIAL:WARPMAX:PERLANE fix-up classes")
    ap.add_argument("--min-segment", type=_counts, default="", help="comma list of shortest segments")
    ap.add_argument("--product", type=_abis, default="",
                    help=f"comma list of {', '.join(msm_builds.PRODUCT_ABIS)} (msm_builds.PRODUCT_ABI, both groups)")
    ap.add_argument("--reduce-threads", type=_counts, default="", help="comma list of msm_reduce_segments block sizes")
    ap.add_argument("--combos", type=_combos, default="",
                    help="comma list of ABI:SORT[:BOUND], e.g. ref:direct,eo:direct:3")
    ap.add_argument("--sort", type=_sorts, default="", help="comma list of direct, binned, auto (msm.SORT)")
    ap.add_argument("--min-chunk", type=_counts, default="",
                    help="comma list of msm.MIN_CHUNK (a sparse vector's least chunk)")
    ap.add_argument("--heavy-slices", type=_counts, default="",
                    help="comma list of msm.HEAVY_SLICES (blocks a block-list bucket)")
    ap.add_argument("--threads-per-sm", type=_counts, default="",
                    help="comma list of msm.ACCUMULATE_THREADS_PER_SM (the layout's accumulating threads an SM)")
    ap.add_argument("--repeats", type=positive, default=7)
    ap.add_argument("--json", type=output_file, help="write rows here too")
    args = ap.parse_args()
    require_gpu()
    fold = args.fold if args.fold == "full" else int(args.fold)
    backend = GpuBackend()
    dev = backend.device
    curves = [curve_by_name(c) for c in args.curves.split(",")]
    rates = measure_rates(backend, curves[0])
    shapes = [(*(int(v) for v in a.rstrip("s").split("x")), not a.endswith("s")) for a in args.affine.split(",")
              if a] or [(gmsm.AFFINE_THREADS, gmsm.AFFINE_PER_THREAD, gmsm.AFFINE_FUSED)]
    scalar_kinds = args.scalars.replace("random", "random;").replace(",witness", ";witness").strip(";").split(";")
    scalar_kinds = [s.strip(",") for s in scalar_kinds if s.strip(",")]
    groups = [] if args.g2_only else [(c, False) for c in curves]
    if args.g2 or args.g2_only:
        groups += [(curve_by_name(c), True) for c in args.g2_curves.split(",")]
    fixes = [tuple(int(v) for v in f.split(":")) for f in args.fix.split(",") if f] or [
        (gmsm.FIX_SERIAL, gmsm.FIX_WARP_MAX, gmsm.FIX_PER_LANE)]
    segs = [int(v) for v in args.min_segment.split(",") if v] or [gmsm.MIN_SEGMENT]
    windows = [None] + [c if c == "base" else int(c) for c in args.window.split(",") if c]
    reduce_threads = [{"g1": int(v), "g2": int(v)} for v in args.reduce_threads.split(",") if v] or [
        dict(gmsm.REDUCE_THREADS)]
    least = [int(v) for v in args.min_chunk.split(",") if v] or [gmsm.MIN_CHUNK]
    slices = [int(v) for v in args.heavy_slices.split(",") if v] or [gmsm.HEAVY_SLICES]
    per_sm = [int(v) for v in args.threads_per_sm.split(",") if v] or [gmsm.ACCUMULATE_THREADS_PER_SM]
    variants = [(w, f, m, t, q, h, a) for w in windows for f in fixes for m in segs for t in reduce_threads
                for q in least for h in slices for a in per_sm]
    abis = [a for a in args.product.split(",") if a] or [None]
    sorts = [v for v in args.sort.split(",") if v] or [None]
    kernels = [(a, v) for a in abis for v in sorts]
    if args.combos:  # ABI:SORT pairs instead of the cross product
        kernels = [tuple(None if v == "default" else v for v in c.split(":")) for c in args.combos.split(",")]
    rows, split = [], []
    for curve, g2 in groups:
        for s in args.sizes.split(","):
            for accumulation in args.accumulation.split(","):
                for threads, m, fused in shapes if accumulation == "affine" else shapes[:1]:
                    gmsm.AFFINE_THREADS, gmsm.AFFINE_PER_THREAD, gmsm.AFFINE_FUSED = threads, m, fused
                    base = None
                    for kind in scalar_kinds:
                        for batch in sorted({1, args.batch}):
                            for window, fix, seg, threads_r, min_chunk, heavy, tps in variants:
                                gmsm.FIX_SERIAL, gmsm.FIX_WARP_MAX, gmsm.FIX_PER_LANE = fix
                                gmsm.MIN_CHUNK, gmsm.HEAVY_SLICES = min_chunk, heavy
                                gmsm.ACCUMULATE_THREADS_PER_SM = tps
                                gmsm.MIN_SEGMENT = seg
                                gmsm.REDUCE_THREADS = threads_r
                                phases = [] if args.breakdown else None
                                got = bench(backend, curve, int(s), g2, fold, args.repeats, rates, accumulation,
                                            kind, batch, window, phases, args.sets, kernels)
                                for j, row in enumerate(got):
                                    row["min chunk"], row["heavy slices"], row["TPS"] = min_chunk, heavy, tps
                                    if kind == "random" and batch == 1 and window is None and j == 0:
                                        base = row["ms"]
                                    if base:
                                        row["x random"] = round(row["ms"] / base, 3)
                                    rows.append(row)
                                    print(row, flush=True)
                                    if phases is not None:
                                        keys = ("curve", "group", "log2 n", "c", "L", "RT", "abi", "T", "TPS", "sort",
                                                "min chunk", "heavy slices", "ms")
                                        split.append({k: row[k] for k in keys} | phases[j])
                                        print(split[-1], flush=True)
    cols = ["curve", "group", "log2 n", "batch", "scalars", "acc", "aff", "c", "fold", "rounds", "Mprod", "ms",
            "wall ms", "floor ms", "ratio", "x random", "x first", "launches", "depth", "fix", "L", "abi", "kernel",
            "T", "TPS", "min chunk", "heavy slices", "resident", "sort", "RT", "result"]
    if args.sets > 1:
        cols += [f"{args.sets} fused ms", f"{args.sets} apart ms"]
    for r in rows:
        for c in cols:
            r.setdefault(c, "")
    report(dev, rates, rows, cols, args.json)
    if split:
        phase_cols = list(dict.fromkeys(k for r in split for k in r))
        for r in split:
            for c in phase_cols:
                r.setdefault(c, "")
        print("\nPhases (ms, CUDA events between the kernels; median of the repeats):")
        print(table(split, phase_cols))


if __name__ == "__main__":
    run_main(main)
