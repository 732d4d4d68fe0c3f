"""What a key costs on one GPU, chosen from the VRAM budget the engine owns (no device needed).

A key is either *resident*: its points on the device, each witness MSM's
points with `fold` precomputed shifted copies (msm.py: fewer bucket sets, no
doubling chain); or *host*: its points in pinned host memory, streamed through
the device in chunks once per proof (host_tier.py).  `plan_key` takes the
largest fold whose key leaves room for the working sets of the proofs in
flight (two by default in split lock mode), then fewer proofs in flight, then
the host tier with the largest chunk that fits; when not even the host tier
and one proof fit, it raises one BudgetError naming the key's footprint, the
proof's working set and the budget, before any device work.

The byte counts here are the allocations key.py, host_tier.py and pipeline.py
make (tests hold them equal), so the budget reserves what is really taken:
a resident key's count includes its epilogue tables (epilogue.key_bytes) and
its proofs' working sets the device tail's bytes (epilogue.proof_device_bytes);
host-tier keys and their proofs have neither (their proofs end on the CPU).
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
from dataclasses import dataclass

from engine.algebra.curves import Curve
from engine.backends.gpu import device_csr
from engine.backends.gpu import epilogue as gepi
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_sort as gsort
from engine.backends.gpu import proof_streams
from engine.backends.gpu.footprint_limits import no_plan_error, plannable, witness_max_window
from engine.backends.gpu.ntt import shoup_twiddles, twiddle_bytes
from engine.errors import BudgetError
from engine.formats.coeffs_scan import scan_of

FR = 32
MIN_ALLOC = 16  # Device.alloc's smallest allocation
DEFAULT_SM_COUNT = 132  # an H200's, for plans made without a device (`info`)
FOLDS = ("full", 8, 4, 2, 1)
MAX_CHUNK_LOG, MIN_CHUNK_LOG = 22, 10  # host tier: points per streamed chunk, largest first
MIN_CHUNKS_LOG = 2  # and at least 2^2 chunks of the witness MSMs (copy and compute overlap)
MAX_WINDOW_BITS = 22  # msm.plan_msm's default bound
HOST_WINDOW_BITS = (22, 16, 13)  # host tier: smaller windows take fewer buckets, leaving room for larger chunks
G2_WEIGHT = 3  # a G2 point operation counted as about three G1 ones (Fq2 products)
# The time model the choice minimises, fitted to whole proofs on an H200 (perf/RESULTS.md, 2026-12-01:
# 2^20 bench keys resident with the full fold, and on the host tier at 5 to 130 chunks): seconds per
# G1-equivalent point operation of the parallel MSM work, and per doubling of the one-thread Horner
# combine that every MSM with more than one bucket set ends with (about 260 doublings: 1.7 ms on BN254).
T_POINT_OP = {"bn128": 0.30e-9, "bls12381": 0.67e-9}
T_SERIAL_DOUBLING = {"bn128": 6.3e-6, "bls12381": 13.3e-6}
PCIE_BYTES_PER_S = 55e9  # pinned host -> device, measured on the H200 (the host tier's floor)
# Building a resident key's fold tables at load (msm.precompute: c doublings a table a point, one
# inversion per 16 tables): seconds per G1-equivalent doubling on an H200, with each curve's table
# build (msm_builds.TABLE_ABI_BY_CURVE: G1 split; G2 even/odd on BN254, split on BLS12-381 since session 33).
# perf/tables.py at 2^20 (random multiples of the generator; G2 counted 3x): BN254 fold 13 of 20-bit
# windows, 2.5e8 G1 doublings in 45.4 ms (G2 138.3 ms): 0.18 ns; BLS12-381 fold 16 of 16-bit windows,
# 2.5e8 in 106.8 ms (G2 327.6, split 306.2): 0.42 ns (the plain build's: 0.30 and 0.78 ns; perf/RESULTS.md
# "Session 32").
T_TABLE_DOUBLING = {"bn128": 0.18e-9, "bls12381": 0.42e-9}
SLACK = 0.15  # more proofs in flight win among footprints within this of the fastest


def g1_bytes(curve: Curve) -> int:
    return 2 * curve.n8q


def g2_bytes(curve: Curve) -> int:
    return 4 * curve.n8q


def acc_bytes(curve: Curve, g2: bool) -> int:
    """One XYZZ accumulator (what an MSM writes as its result)."""
    return (8 if g2 else 4) * curve.n8q


def _alloc(nbytes: int) -> int:
    return max(int(nbytes), MIN_ALLOC)


@dataclass(frozen=True)
class KeyShape:
    """The sizes of a Groth16 key that its footprint depends on."""

    curve: Curve
    n_wires: int
    domain: int
    n_coef_a: int  # coefficient entries of A
    n_coef_b: int  # and of B (the CSR matrices kept on the device)
    n_public: int = 0  # public signals (the epilogue's IC points on the device)
    csr_build_bytes: int = 0  # what building the CSR on the device holds during a load (0: the host builds it)

    @classmethod
    def of(cls, zkey) -> "KeyShape":
        # A's count from read_zkey's one pass over the coeffs (no second pass on a load's path)
        scan = scan_of(zkey)
        return cls(zkey.curve, int(zkey.n_vars), int(zkey.domain_size), scan.n_a, scan.n_b, int(zkey.n_public),
                   device_csr.build_bytes(scan))

    @property
    def scalar_bits(self) -> int:
        return self.curve.r.bit_length()

    def witness_point_bytes(self) -> int:
        """A, B1, C (G1) and B2 (G2) of one wire."""
        return 3 * g1_bytes(self.curve) + g2_bytes(self.curve)

    def bases_bytes(self) -> int:
        """Every MSM base once: A, B1, C, B2 per wire and H per domain row (the host tier's pinned copy)."""
        return self.n_wires * self.witness_point_bytes() + self.domain * g1_bytes(self.curve)

    def fixed_device_bytes(self) -> int:
        """What every key keeps on the device: A and B in CSR, and the NTT tables (key.py)."""
        csr = 0
        for nnz in (self.n_coef_a, self.n_coef_b):
            csr += _alloc(4 * (self.domain + 1)) + _alloc(4 * nnz) + _alloc(32 * nnz)
        half = max(self.domain // 2, 1)
        shoup = shoup_twiddles(self.curve, self.domain.bit_length() - 1)
        tables = 2 * _alloc(half * twiddle_bytes(self.curve, shoup)) + _alloc(self.domain * FR)
        return csr + tables

    def epilogue_device_bytes(self) -> int:
        """A resident key's epilogue tables, lines and target (epilogue.KeyEpilogue)."""
        return gepi.key_bytes(self.curve, self.n_public)


@dataclass(frozen=True)
class KeyFootprint:
    """A key's place on one device: tier, MSM plans, and the bytes it and its proofs take."""

    tier: str  # "resident" | "host"
    plan_w: gmsm.MsmPlan  # the witness MSMs' plan (host tier: one chunk's)
    plan_h: gmsm.MsmPlan  # the H MSM's plan (host tier: one chunk's)
    device_bytes: int  # on the device for the key's lifetime
    host_bytes: int  # pinned host memory for the key's lifetime (host tier: every base)
    working_set_bytes: int  # what one proof reserves beside the key
    proofs_in_flight: int  # working sets the budget leaves room for beside the key
    budget_bytes: int  # the VRAM budget it was chosen against
    msm_cost: float  # estimated seconds of one proof's five MSMs on an H200 (the time model above)
    full_fold_cost: float  # the same with every window folded and resident (the fastest, memory aside)
    msm_ops: int = 0  # G1-equivalent point operations of those MSMs (parallel work)
    serial_doublings: int = 0  # doublings of their one-thread combines
    chunk_w: int = 0  # host tier: wires per streamed chunk
    chunk_h: int = 0  # host tier: H rows per streamed chunk
    chunks: int = 0  # host tier: chunks streamed per proof (H's and the witness's)
    table_seconds: float = 0.0  # estimated device time of building the fold tables at each load
    # resident keys with fold tables: the fold-1 plans of proofs that start while the tables still
    # build (key.py: a key is usable as soon as its points are on the device); None: no tables
    early_w: gmsm.MsmPlan | None = None
    early_h: gmsm.MsmPlan | None = None
    # bytes a load holds beside device_bytes until its CSR is built on the device (reserved with the
    # key's for the load, given back after); 0: the host builds the CSR (no room, or rows out of order)
    csr_build_bytes: int = 0
    # H's bucket sort through coarse bins (msm_sort.py: 8 bytes an entry more, in working_set_bytes);
    # granted by plan_key only where they fit beside the proofs in flight without changing the choice
    sort_bins: bool = False
    # a load for a known number of proofs (plan_key's proofs_per_load: the CLI's one), whose choice counted the
    # fold tables' build against those proofs' MSMs: they wait for the tables instead of taking the fold-1
    # plans while the tables build (key.py plans_now), or the build was paid for nothing
    tables_awaited: bool = False
    # a large proof's B2 MSM on a stream of its own from the start, over a second sort and bucket scratch (and
    # the front beside the G1 MSMs): the small plans' path (proof_streams.b2_beside), granted by plan_key for
    # larger plans only where the second scratch fits beside the proofs in flight without changing the choice
    b2_stream: bool = False
    # host tier: how many of a proof's two staging buffers lie over its a and b (staging_over_front), costing nothing
    staging_over_front: int = 0

    @property
    def fold(self) -> int:
        return self.plan_w.fold

    def all_plans(self) -> list[tuple[gmsm.MsmPlan, gmsm.MsmPlan]]:
        """(witness plan, H plan) pairs a proof of this key may take: the full fold's, and the
        fold-1 pair while the tables build (a proof's scratch covers both)."""
        return [(self.plan_w, self.plan_h)] + ([(self.early_w, self.early_h)] if self.early_w is not None else [])

    @property
    def streamed_bytes(self) -> int:
        """Bytes copied host -> device per proof for the bases (0 when resident)."""
        return self.host_bytes if self.tier == "host" else 0

    def as_dict(self) -> dict:
        return {
            "tier": self.tier, "fold": self.fold, "fold_h": self.plan_h.fold, "window_bits": self.plan_w.c,
            "windows": self.plan_w.windows, "device_bytes": self.device_bytes, "host_bytes": self.host_bytes,
            "working_set_bytes": self.working_set_bytes, "proofs_in_flight": self.proofs_in_flight,
            "budget_bytes": self.budget_bytes, "msm_seconds": round(self.msm_cost, 5),
            "msm_cost_vs_full_fold": round(self.msm_cost / self.full_fold_cost, 3), "msm_ops": self.msm_ops,
            "table_seconds": round(self.table_seconds, 4),
            "serial_doublings": self.serial_doublings,
            "chunk_points": self.chunk_w, "chunks": self.chunks, "streamed_bytes": self.streamed_bytes,
            "sort_bins": self.sort_bins, "b2_stream": self.b2_stream, "staging_over_front": self.staging_over_front,
        }

    def describe(self) -> str:
        """One line for `info` and the CLI's verbose output."""
        from scheduler.budget import fmt_bytes  # noqa: PLC0415

        ratio = self.msm_cost / self.full_fold_cost
        if self.tier == "resident":
            where = f"resident, fold {self.fold} of {self.plan_w.windows} windows ({self.plan_w.c}-bit)"
            if self.fold > 1 or self.plan_h.fold > 1:
                where += f", tables built at load in about {self.table_seconds:.2f} s"
            if self.sort_bins:
                where += ", binned bucket sort"
            if self.b2_stream:
                where += ", B2 on its own stream"
        else:
            where = (f"host tier, {fmt_bytes(self.host_bytes)} of bases pinned in host memory, streamed in "
                     f"{self.chunks} chunks of {self.chunk_w:,} wires per proof")
            if self.staging_over_front:
                which = "both its staging buffers" if self.staging_over_front == 2 else "one of its two staging buffers"
                where += f" ({which} over its a and b)"
        return (f"{where}; {fmt_bytes(self.device_bytes)} on the device + {fmt_bytes(self.working_set_bytes)} "
                f"per proof x {self.proofs_in_flight} in a {fmt_bytes(self.budget_bytes)} budget; MSM cost about "
                f"{1e3 * self.msm_cost:.1f} ms per proof on an H200, {ratio:.2f}x the full fold's "
                f"({self.msm_ops:,} point operations, {self.serial_doublings:,} serial doublings)")


# ------------------------------------------------------------------ costs and working sets

def plan_cost(plan: gmsm.MsmPlan) -> int:
    """Parallel point operations of one MSM under `plan`: bucket additions and the bucket reduction."""
    return plan.n * plan.windows + 3 * plan.groups * plan.buckets_per_group


def plan_serial(plan: gmsm.MsmPlan) -> int:
    """Doublings of the one-thread combine: Horner over the bucket sets, c * fold bits apart."""
    return plan.c * plan.fold * (plan.groups - 1) if plan.groups > 1 else 0


def estimate(curve: Curve, msms: list[tuple[gmsm.MsmPlan, int, int]],
             streamed_bytes: int = 0) -> tuple[float, int, int]:
    """(seconds, point operations, serial doublings) of MSMs given as (plan, G1-equivalent weight, count).

    Streamed bases overlap the compute: the time is at least their PCIe copy."""
    ops = sum(count * weight * plan_cost(plan) for plan, weight, count in msms)
    serial = sum(count * plan_serial(plan) for plan, _, count in msms)
    t_op = T_POINT_OP.get(curve.name, max(T_POINT_OP.values()))
    t_dbl = T_SERIAL_DOUBLING.get(curve.name, max(T_SERIAL_DOUBLING.values()))
    return max(ops * t_op + serial * t_dbl, streamed_bytes / PCIE_BYTES_PER_S), ops, serial


def _proof_msms(plan_w: gmsm.MsmPlan, plan_h: gmsm.MsmPlan | None, count: int = 1) -> list:
    """One proof's MSMs as (plan, weight, count): H (unless None), then A, B1, C (G1) and B2 (G2)."""
    h = [] if plan_h is None else [(plan_h, 1, count)]
    return h + [(plan_w, 3 + G2_WEIGHT, count), (plan_w, 0, 3 * count)]  # 4 MSMs: weight 3 + 3, 4 combines


_planning = threading.local()  # .plans: the MSM plans made so far in this thread's plan_key call


@contextlib.contextmanager
def _one_plan_each():
    """Inside: msm.plan_msm runs once for each distinct plan asked for.  plan_key's candidates ask for the
    same plans many times (every fold's early plans and full-fold cost, every host candidate's): 76 plans
    for 33 distinct ones at the 2^14 domain, msm.plan_msm 49 -> 20 ms of a key load from the cache here (the
    profile of perf/RESULTS.md, session 31).  Only within one call: the planner's terms are module state that
    tests and benchmarks set."""
    outer = getattr(_planning, "plans", None)
    if outer is None:
        _planning.plans = {}
    try:
        yield
    finally:
        if outer is None:
            _planning.plans = None


def _plan_msm(n: int, scalar_bits: int, fold: str | int, max_c: int, curve: str, groups: tuple[str, ...]):
    plans = getattr(_planning, "plans", None)
    if plans is None:
        return gmsm.plan_msm(n, scalar_bits, fold, max_c, curve=curve, groups=groups)
    key = (n, scalar_bits, fold, max_c, curve, groups)
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = gmsm.plan_msm(n, scalar_bits, fold, max_c, curve=curve, groups=groups)
    return plan


def witness_plan(shape: "KeyShape", n: int, fold: str | int, max_c: int = MAX_WINDOW_BITS) -> gmsm.MsmPlan:
    """The plan of a proof's witness MSMs (A, B1, C in G1 and B2 in G2 share one sorted vector), on
    n of the key's wires, with the curve's planner terms (msm_costs.py).  GROTH16_WITNESS_MAX_WINDOW=c bounds
    its window (A/B measurements)."""
    return _plan_msm(n, shape.scalar_bits, fold, witness_max_window(max_c), shape.curve.name,
                     tuple(gmsm.WITNESS_GROUPS))


def h_plan(shape: "KeyShape", n: int, fold: str | int, max_c: int = MAX_WINDOW_BITS) -> gmsm.MsmPlan:
    """The plan of the H MSM (G1) on n of the key's domain rows."""
    return _plan_msm(n, shape.scalar_bits, fold, max_c, shape.curve.name, ("g1",))


def _full_fold_seconds(shape: "KeyShape") -> float | None:
    """The MSMs' time at the largest fold that has plans (past 2^27 rows not the full one); None: none has."""
    pairs = ((plannable(witness_plan, shape, shape.n_wires, f), plannable(h_plan, shape, shape.domain, f))
             for f in FOLDS)
    return next((estimate(shape.curve, _proof_msms(*pair))[0] for pair in pairs if None not in pair), None)


def table_seconds(shape: "KeyShape", plan_w: gmsm.MsmPlan, plan_h: gmsm.MsmPlan) -> float:
    """Device time of a resident key's fold tables (tables 1..fold-1 of A, B1, C, B2 and H)."""
    g1 = (plan_w.fold - 1) * plan_w.c * 3 * shape.n_wires + (plan_h.fold - 1) * plan_h.c * shape.domain
    g2 = (plan_w.fold - 1) * plan_w.c * shape.n_wires
    t = T_TABLE_DOUBLING.get(shape.curve.name, max(T_TABLE_DOUBLING.values()))
    return (g1 + G2_WEIGHT * g2) * t


def layouts(plan_w: gmsm.MsmPlan, plan_h: gmsm.MsmPlan, sm_count: int):
    """(plan, layout) of the H MSM, then of the witness MSMs, for a device of sm_count SMs."""
    return [(plan_h, gmsm.AccumulateLayout.for_plan(plan_h, sm_count)),
            (plan_w, gmsm.AccumulateLayout.for_plan(plan_w, sm_count))]


def scratch_shapes(pairs: list[tuple[gmsm.MsmPlan, gmsm.MsmPlan]], sm_count: int):
    """The sort's plans and the buckets' (plan, layout) shapes that serve every (witness, H) pair."""
    plans = [p for pair in pairs for p in pair]
    shapes = [s for pw, ph in pairs for s in layouts(pw, ph, sm_count)]
    return plans, shapes


RANGE_CHECK_BYTES = 16  # the device's answer to a witness's range check (a u32, padded): one a proof
ALLOC_ALIGN = 256  # a proof's buffers are carved from one allocation at this alignment (pipeline._Arena)
ALLOC_SLACK = ALLOC_ALIGN * 32  # their rounding: at most 26 carved buffers (and the 16-byte minimum of the rest)
# carved buffers of one more sort and bucket scratch (up to 23) and s w, r w (proof_streams.products_beside)
COPY_BUFFERS = 24


def alloc_slack(extra_copies: int = 0) -> int:
    """What a proof's working set adds for its buffers' rounding, with `extra_copies` scratch copies beyond two."""
    return ALLOC_SLACK + extra_copies * ALLOC_ALIGN * COPY_BUFFERS


def proof_working_set(curve: Curve, n_wires: int, domain: int, plan_w: gmsm.MsmPlan, plan_h: gmsm.MsmPlan,
                      sm_count: int, tail: bool = True,
                      early: tuple[gmsm.MsmPlan, gmsm.MsmPlan] | None = None, bins: bool = False,
                      b2_stream: bool = False) -> int:
    """Device bytes one resident-key proof allocates (pipeline.stage): witness, a/b/c, sort and buckets
    (twice when B2 runs beside the rest: proof_streams.b2_beside; three more and s w, r w with
    proof_streams.products_beside), and with `tail` the device tail's r, s, rs, proof area and scratch (inside
    the witness and results allocations).  `early`: the fold-1 (witness, H) plans a proof may take instead
    while the key's tables build: the sort and bucket scratch is sized for either.  `bins`: the sort's coarse
    bins too (KeyFootprint.sort_bins); `b2_stream`: a larger plan's second scratch (KeyFootprint.b2_stream)."""
    total = n_wires * FR + 3 * domain * FR + (gepi.proof_device_bytes(curve) if tail else 0)
    plans, shapes = scratch_shapes([(plan_w, plan_h)] + ([early] if early is not None else []), sm_count)
    copies = 2 if tail and proof_streams.b2_beside(plan_w, b2_stream) else 1
    extra = proof_streams.PRODUCT_SCRATCH_COPIES if tail and proof_streams.products_beside(plan_w, domain) else 0
    copies += extra
    total += 2 * n_wires * FR if extra else 0  # s w, r w
    total += copies * gmsm.SortScratch.nbytes(plans, bins)
    total += copies * gmsm.BucketScratch.nbytes(shapes, acc_bytes(curve, True))
    total += 5 * acc_bytes(curve, True)
    total += RANGE_CHECK_BYTES  # the witness's range check's answer (pipeline.stage)
    return total + alloc_slack(extra)  # allocation rounding


def chunk_ranges(n: int, chunk: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + chunk, n)) for lo in range(0, n, chunk)] if n else []


def host_chunk_bytes(shape: KeyShape, chunk_w: int, chunk_h: int) -> int:
    """One staging buffer: a chunk of A, B1, C and B2, or a chunk of H, whichever is larger."""
    return max(chunk_w * shape.witness_point_bytes(), chunk_h * g1_bytes(shape.curve))


def host_result_slots(shape: KeyShape, chunk_w: int, chunk_h: int) -> int:
    """One XYZZ result per MSM per chunk (summed on the host)."""
    return 4 * len(chunk_ranges(shape.n_wires, chunk_w)) + len(chunk_ranges(shape.domain, chunk_h))


def aligned_bytes(nbytes: int) -> int:
    """Where the next buffer a proof's arena carves after one of `nbytes` starts (pipeline._Arena)."""
    return -(-_alloc(nbytes) // ALLOC_ALIGN) * ALLOC_ALIGN


def staging_over_front(domain: int, chunk_bytes: int) -> int:
    """How many of a host-tier proof's two staging buffers lie over its a and b instead of allocations of
    their own: the front's two vectors (carved one after the other) are dead once h is in c, before the
    MSMs that read the staging buffers, so a buffer that fits there costs no memory (host_tier.py makes
    its first upload wait for the front).  0, 1 or 2."""
    step, span = aligned_bytes(chunk_bytes), aligned_bytes(domain * FR) + _alloc(domain * FR)
    return sum(1 for k in range(2) if k * step + _alloc(chunk_bytes) <= span)


def host_working_set(shape: KeyShape, pw: gmsm.MsmPlan, ph: gmsm.MsmPlan, sm_count: int) -> int:
    """A host-tier proof under chunk plans pw (witness) and ph (H): the resident proof's buffers at chunk
    size, the staging buffers that do not fit over a and b (staging_over_front), the chunk results."""
    chunk_w, chunk_h = pw.n, ph.n
    base = proof_working_set(shape.curve, shape.n_wires, shape.domain, pw, ph, sm_count, tail=False)
    base -= 5 * acc_bytes(shape.curve, True)  # its results are the per-chunk slots below
    slots = host_result_slots(shape, chunk_w, chunk_h)
    chunk = host_chunk_bytes(shape, chunk_w, chunk_h)
    own = 2 - staging_over_front(shape.domain, chunk)
    return base + own * chunk + slots * acc_bytes(shape.curve, True)


def host_plans(shape: KeyShape, chunk_w: int, chunk_h: int,
               max_c: int | None = None) -> tuple[gmsm.MsmPlan, gmsm.MsmPlan]:
    """Fold-1 plans for one chunk (shifted copies would multiply the bytes streamed); windows of at most
    max_c bits (fewer buckets: room for larger chunks)."""
    c = max_c or MAX_WINDOW_BITS
    return witness_plan(shape, min(chunk_w, shape.n_wires), 1, c), h_plan(shape, min(chunk_h, shape.domain), 1, c)


def tail_plan(plan: gmsm.MsmPlan, n: int) -> gmsm.MsmPlan:
    """The plan of a shorter (last) chunk: same window and bucket sets, so the same scratch serves it."""
    return dataclasses.replace(plan, n=n)


# ------------------------------------------------------------------ the choice

def resident_footprint(shape: KeyShape, fold: str | int, budget: int, proofs: int, sm_count: int) -> KeyFootprint:
    curve = shape.curve
    pw, ph = witness_plan(shape, shape.n_wires, fold), h_plan(shape, shape.domain, fold)
    points = (_alloc(pw.fold * shape.n_wires * g1_bytes(curve)) * 3
              + _alloc(pw.fold * shape.n_wires * g2_bytes(curve)) + _alloc(ph.fold * shape.domain * g1_bytes(curve)))
    seconds, ops, serial = estimate(curve, _proof_msms(pw, ph))
    early = early_plans(shape, pw, ph)
    return KeyFootprint(
        tier="resident", plan_w=pw, plan_h=ph,
        device_bytes=shape.fixed_device_bytes() + points + shape.epilogue_device_bytes(), host_bytes=0,
        working_set_bytes=proof_working_set(curve, shape.n_wires, shape.domain, pw, ph, sm_count, early=early),
        proofs_in_flight=proofs, budget_bytes=budget, msm_cost=seconds,
        full_fold_cost=_full_fold_seconds(shape) or seconds, msm_ops=ops, serial_doublings=serial,
        table_seconds=table_seconds(shape, pw, ph),
        early_w=early[0] if early else None, early_h=early[1] if early else None,
    )


def early_plans(shape: KeyShape, pw: gmsm.MsmPlan, ph: gmsm.MsmPlan) -> tuple[gmsm.MsmPlan, gmsm.MsmPlan] | None:
    """The fold-1 (witness, H) plans for proofs before a resident key's tables are built (each its own
    best window over table 0, the points as the zkey holds them); None when neither plan folds."""
    if pw.fold == 1 and ph.fold == 1:
        return None
    return witness_plan(shape, shape.n_wires, 1), h_plan(shape, shape.domain, 1)


def host_footprint(shape: KeyShape, chunk_w: int, budget: int, proofs: int, sm_count: int,
                   max_c: int = MAX_WINDOW_BITS) -> KeyFootprint:
    # H has about twice the rows: as many chunks (of twice the chunk asked for, not the one cut to the wires)
    chunk_h, chunk_w = max(1, min(2 * chunk_w, shape.domain)), max(1, min(chunk_w, shape.n_wires))
    pw, ph = host_plans(shape, chunk_w, chunk_h, max_c)
    msms = []
    for n, plan, per_chunk in ((shape.domain, ph, lambda p, k: [(p, 1, k)]),
                               (shape.n_wires, pw, lambda p, k: _proof_msms(p, None, k))):
        full, tail = divmod(n, plan.n)
        msms += per_chunk(plan, full) + (per_chunk(tail_plan(plan, tail), 1) if tail else [])
    seconds, ops, serial = estimate(shape.curve, msms, shape.bases_bytes())
    chunks = len(chunk_ranges(shape.n_wires, chunk_w)) + len(chunk_ranges(shape.domain, chunk_h))
    over = staging_over_front(shape.domain, host_chunk_bytes(shape, chunk_w, chunk_h))
    return KeyFootprint(
        tier="host", plan_w=pw, plan_h=ph, device_bytes=shape.fixed_device_bytes(), host_bytes=shape.bases_bytes(),
        working_set_bytes=host_working_set(shape, pw, ph, sm_count), proofs_in_flight=proofs,
        budget_bytes=budget, msm_cost=seconds, full_fold_cost=_full_fold_seconds(shape) or seconds, msm_ops=ops,
        serial_doublings=serial, chunk_w=chunk_w, chunk_h=chunk_h, chunks=chunks, staging_over_front=over,
    )


def _fits(fp: KeyFootprint, budget: int, proofs: int) -> bool:
    return fp.device_bytes + proofs * fp.working_set_bytes <= budget


def _most_fitting(fp: KeyFootprint, budget: int, wanted: int) -> int:
    """The most proofs, up to `wanted`, that `_fits` lets beside `fp`: 0 where the key alone does not fit."""
    room = budget - fp.device_bytes
    if room < 0:
        return 0
    return min(wanted, room // fp.working_set_bytes) if fp.working_set_bytes > 0 else wanted


def _grant_sort_bins(fp: KeyFootprint, shape: KeyShape, budget: int, sm_count: int) -> KeyFootprint:
    """`fp` with the binned bucket sort (msm_sort.py: H's MSM 116.7 -> 109.6 ms in a BN254 2^24 proof on the
    H200 with msm_place, 120.3 -> 110.0 in a BLS12-381 one with the regrouping passes; its curves:
    msm_sort.BINNED_CURVES; the witness's sort too where msm_sort.WITNESS_BINS says so) where H's
    plans would take it and the bigger working sets still fit beside the key, the same tier, fold and proofs
    in flight: the bins never cost a fold (the reason they are not simply counted in every working set)."""
    if fp.tier != "resident" or shape.curve.name not in gsort.BINNED_CURVES:
        return fp
    if not gmsm.SortScratch.wants_bins([plan_h for _, plan_h in fp.all_plans()]):
        return fp
    return _grant(fp, shape, budget, sm_count, sort_bins=True)


def _grant_b2_stream(fp: KeyFootprint, shape: KeyShape, budget: int, sm_count: int) -> KeyFootprint:
    """`fp` with a larger plan's B2 MSM on a stream of its own (proof_streams.b2_beside) where the second sort
    and bucket scratch fits beside the key with the same tier, fold, bins and proofs in flight: it never costs a
    fold."""
    if fp.tier != "resident" or proof_streams.b2_beside(fp.plan_w) or not proof_streams.b2_beside(fp.plan_w, True):
        return fp  # the host tier has no tail; small plans have it already; GROTH16_B2_BESIDE=0 refuses it
    return _grant(fp, shape, budget, sm_count, b2_stream=True)


def _grant(fp: KeyFootprint, shape: KeyShape, budget: int, sm_count: int, **flags) -> KeyFootprint:
    """`fp` with `flags` (sort_bins, b2_stream) and the working set they make, where that still fits beside the
    key for fp's proofs in flight; else `fp` as it was."""
    granted = dataclasses.replace(fp, **flags)
    early = (fp.early_w, fp.early_h) if fp.early_w is not None else None
    ws = proof_working_set(shape.curve, shape.n_wires, shape.domain, fp.plan_w, fp.plan_h, sm_count, early=early,
                           bins=granted.sort_bins, b2_stream=granted.b2_stream)
    if fp.device_bytes + fp.proofs_in_flight * ws > budget:
        return fp
    return dataclasses.replace(granted, working_set_bytes=ws)


@dataclass(frozen=True)
class KeyCandidates:
    """Every footprint plan_key may choose for a key on a device with `sm_count` SMs, before any budget: the
    candidates need the key's shape and the device's SM count only (the budget picks among them), so the CLI
    makes them while the device's context starts (engine/commands/prove.py)."""

    shape: KeyShape
    sm_count: int
    fold: str | int
    tier: str
    chunk: int | None
    residents: tuple[KeyFootprint, ...]
    hosts: tuple[KeyFootprint, ...]

    def made_for(self, shape: KeyShape, sm_count: int, fold: str | int, tier: str, chunk: int | None) -> bool:
        return (self.shape, self.sm_count, self.fold, self.tier, self.chunk) == (shape, sm_count, fold, tier, chunk)

    @property
    def every(self) -> tuple[KeyFootprint, ...]:
        return self.residents + self.hosts


def key_candidates(shape: KeyShape, *, sm_count: int = DEFAULT_SM_COUNT, fold: str | int = "auto",
                   tier: str = "auto", chunk: int | None = None) -> KeyCandidates:
    """The footprints plan_key chooses among (resident at each fold, the host tier at each chunk size and
    window bound), each for one proof in flight; `fold`, `tier` and `chunk` restrict them as in plan_key."""
    with _one_plan_each():
        return _candidates(shape, sm_count=sm_count, fold=fold, tier=tier, chunk=chunk)


def _candidates(shape: KeyShape, *, sm_count: int, fold: str | int, tier: str, chunk: int | None) -> KeyCandidates:
    if tier not in ("auto", "resident", "host"):
        raise ValueError(f"tier: {tier!r} is not auto, resident or host")
    folds = FOLDS if fold == "auto" else (fold,)
    if chunk is not None:
        chunks = [int(chunk)]
    else:
        # at least MIN_CHUNKS witness chunks where the key is large enough: one chunk copies while another computes
        top = max(MIN_CHUNK_LOG, min(MAX_CHUNK_LOG, (max(shape.n_wires, 1) - 1).bit_length() - MIN_CHUNKS_LOG))
        chunks = [1 << b for b in range(top, MIN_CHUNK_LOG - 1, -1)]
    # folds and chunks without MSM plans (past the sort's 32-bit ranges: msm.NoPlanError) are no candidates
    residents = [plannable(resident_footprint, shape, f, 0, 1, sm_count) for f in folds] if tier != "host" else []
    hosts = ([plannable(host_footprint, shape, c, 0, 1, sm_count, w) for c in chunks for w in HOST_WINDOW_BITS]
             if tier != "resident" else [])
    return KeyCandidates(shape, sm_count, fold, tier, chunk, tuple(r for r in residents if r is not None),
                         tuple(h for h in hosts if h is not None))


def plan_key(shape: KeyShape, budget_bytes: int, *, proofs: int = 2, sm_count: int = DEFAULT_SM_COUNT,
             fold: str | int = "auto", tier: str = "auto", chunk: int | None = None,
             label: str = "the key", proofs_per_load: float | None = None,
             candidates: KeyCandidates | None = None) -> KeyFootprint:
    """The fastest footprint that fits `budget_bytes` with `proofs` working sets beside it, or fewer.

    Candidates: resident at each fold, and the host tier at each chunk size and window bound,
    each with `proofs`, `proofs` - 1, ... or one working set; among those within SLACK of the fastest (the time
    model above) the one with the most proofs in flight, then the fastest.  "Fastest" is per
    proof: with `proofs_per_load` (how many proofs this load serves, when the caller knows: the
    CLI's one) the fold tables' build time is shared among them, so a key loaded for one proof
    skips tables that cost seconds to save milliseconds; None counts the proofs' time alone (a
    resident key of a service).  `fold`, `tier` and `chunk` force a choice (tests, benchmarks);
    a forced choice that does not fit is a BudgetError.  `candidates`: key_candidates' answer made
    ahead, used when it was made for the same shape, SM count, fold, tier and chunk (else made here).
    """
    with _one_plan_each():
        if candidates is None or not candidates.made_for(shape, sm_count, fold, tier, chunk):
            candidates = _candidates(shape, sm_count=sm_count, fold=fold, tier=tier, chunk=chunk)
        return _plan_key(candidates, budget_bytes, proofs=proofs, label=label, proofs_per_load=proofs_per_load)


def _plan_key(candidates: KeyCandidates, budget_bytes: int, *, proofs: int, label: str,
              proofs_per_load: float | None) -> KeyFootprint:
    shape, sm_count = candidates.shape, candidates.sm_count
    budget = int(budget_bytes)
    # each candidate at the most of `proofs` that fit beside it: where 2 of 3 fit, 2 (only `proofs` or 1 were
    # tried, so compute_slots 2 in split mode, asking 3, got one working set where compute_slots 1, asking 2, got
    # two).  Fewer never wins: a candidate's cost does not depend on its count and more proofs are preferred.
    # (Every count from there down to 1 was listed: `info --proofs 10**9` beside a small key took minutes, and
    # a working set of 0 bytes never ended.)
    wanted = max(1, int(proofs))
    fitting = [dataclasses.replace(fp, proofs_in_flight=n, budget_bytes=budget) for fp in candidates.every
               for n in [_most_fitting(fp, budget, wanted)] if n > 0 and _fits(fp, budget, n)]
    if fitting:
        def cost(fp: KeyFootprint) -> float:
            return fp.msm_cost + (fp.table_seconds / proofs_per_load if proofs_per_load else 0.0)

        fastest = min(cost(fp) for fp in fitting)
        near = [fp for fp in fitting if cost(fp) <= fastest * (1 + SLACK)]
        chosen = _grant_sort_bins(min(near, key=lambda fp: (-fp.proofs_in_flight, cost(fp), fp.device_bytes)),
                                  shape, budget, sm_count)
        chosen = _grant_b2_stream(chosen, shape, budget, sm_count)
        # the CSR built on the device only where the budget also holds its transient bytes beside the key
        build = shape.csr_build_bytes if chosen.device_bytes + shape.csr_build_bytes <= budget else 0
        return dataclasses.replace(chosen, csr_build_bytes=build,
                                   tables_awaited=bool(proofs_per_load) and chosen.early_w is not None)
    from scheduler.budget import fmt_bytes  # noqa: PLC0415 - with anyio: only for the message

    if not candidates.every:
        raise no_plan_error(label, shape, candidates.fold, candidates.tier)
    smallest = min(candidates.every, key=lambda fp: fp.device_bytes + fp.working_set_bytes)
    need = smallest.device_bytes + smallest.working_set_bytes
    how = ("resident" if smallest.tier == "resident" else
           f"with its {fmt_bytes(smallest.host_bytes)} of bases streamed from host memory")
    budget_text = fmt_bytes(budget) if budget >= 0 else "less than nothing (other keys took it all)"
    raise BudgetError(
        f"{label}: the VRAM budget ({budget_text}) is too small for this key plus one proof: the key needs "
        f"{fmt_bytes(smallest.device_bytes)} on the device ({how}) and one proof's working set is "
        f"{fmt_bytes(smallest.working_set_bytes)}, {fmt_bytes(need)} together; raise vram_budget to at least "
        f"{fmt_bytes(need, up=True)} ({need:,} bytes) or use a larger device"
    )
