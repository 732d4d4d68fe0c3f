"""Launching the NTT passes and building their tables on the device.

A transform of 2^k points runs as ceil(k/10) shared-memory passes of up to 10
levels each: wide passes (four elements a thread, two levels a round) or, for a lone
transform up to NARROW_MAX_LOG, narrow ones (two elements a thread, one level a step,
exchanges by warp shuffle where they can).  Tables live on the device: the twiddles w^j and w^-j (j < 2^(k-1)),
each entry w^j in Montgomery form or, where Shoup products pay (shoup_twiddles: per
curve and size, as measured), the pair (w^j, floor(w^j 2^256 / r)) — see
cuda_kernels/ntt.cuh;
and, for the prover, the coset factors g^j / 2^k (Montgomery) that the inverse
transform's last pass applies as it writes.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Module, Stream, U32, launch

from engine.algebra.curves import Curve
from engine.backends.gpu.params import allows_shoup
from engine.algebra.limbs import from_ints

FR_BYTES = 32
MAX_PASS_LEVELS = 10


def pass_sizes(k: int, dif: bool = False) -> list[int]:
    """Levels per pass, in the order the passes run.  Up to two passes: as even as possible.
    Beyond (k > 20): full passes and one remainder pass on the levels whose twiddles are the
    large table's many distinct entries (the last DIT stages, the first DIF levels) — measured
    faster at 2^24 than even thirds (perf/RESULTS.md)."""
    if k == 0:
        return []
    passes = -(-k // MAX_PASS_LEVELS)
    if passes <= 2:
        base, extra = divmod(k, passes)
        return [base + 1] * extra + [base] * (passes - extra)
    sizes = [MAX_PASS_LEVELS] * (passes - 1) + [k - MAX_PASS_LEVELS * (passes - 1)]
    return sizes[::-1] if dif else sizes


# The largest transform (log2) that takes Shoup twiddles, per curve; absent: every size the field
# allows.  perf/ntt_ab.py on the H200 (perf/RESULTS.md, session 33): BN254's passes run faster on
# Shoup pairs up to 2^20 (2^18: 0.071 against 0.077 ms) and on the half-size Montgomery table from
# 2^22 (2^24: 3.76 against 3.95 ms, 2^26: 16.1 against 17.1); BLS12-381's on Shoup pairs at every
# size (2^24: 3.94 against 4.21 ms).  At 2^21 BN254's Montgomery table measured 0.472 against 0.491 ms.
SHOUP_MAX_LOG = {"bn128": 20}


def shoup_twiddles(curve: Curve, k: int) -> bool:
    """Whether a 2^k transform's table holds Shoup pairs (kernels without suffix) or Montgomery
    values (the `_m` kernels)."""
    return allows_shoup(curve.r, FR_BYTES) and k <= SHOUP_MAX_LOG.get(curve.name, 64)


def twiddle_bytes(curve: Curve, shoup: bool) -> int:
    """Bytes of one twiddle entry: the Shoup pair or the Montgomery value."""
    return 2 * FR_BYTES if shoup else FR_BYTES


def kernel_suffix(shoup: bool) -> str:
    """The suffix of the kernels (passes, table builder) for a twiddle form: none for Shoup pairs,
    `_m` for Montgomery values (cuda_kernels/ntt_entry.cuh)."""
    return "" if shoup else "_m"


def mont_fr(curve: Curve, values: list[int]) -> np.ndarray:
    return from_ints([v * curve.rr % curve.r for v in values], 4)


@dataclass
class NttTables:
    k: int
    tw_fwd: DeviceBuffer
    tw_inv: DeviceBuffer
    coset: DeviceBuffer | None  # g^j / n, natural j (prover's fused coset step)
    shoup: bool = True  # Shoup pairs (the passes without suffix) or Montgomery values (`_m`)

    @property
    def suffix(self) -> str:
        return kernel_suffix(self.shoup)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in (self.tw_fwd, self.tw_inv, self.coset) if b is not None)

    def free(self, stream: Stream) -> None:
        for b in (self.tw_fwd, self.tw_inv, self.coset):
            if b is not None:
                Device.free(b, stream)


def powers_table(dev: Device, mod: Module, curve: Curve, base: int, scale: int, count: int,
                 stream: Stream) -> DeviceBuffer:
    """count elements scale * base^j (Montgomery) computed on the device."""
    out = dev.alloc(max(count, 1) * FR_BYTES, stream)
    consts = mont_fr(curve, [base % curve.r, scale % curve.r])
    cbuf = dev.alloc(consts.nbytes, stream)
    Device.upload(cbuf, consts, stream)
    launch(mod, "fr_powers", -(-count // 256), 256, stream, out, cbuf.ptr, cbuf.ptr + FR_BYTES, U32(count))
    # the constants must outlive the kernel: stream-ordered free after it
    Device.free(cbuf, stream)
    return out


def twiddle_table(dev: Device, mod: Module, curve: Curve, root: int, count: int, stream: Stream,
                  shoup: bool) -> DeviceBuffer:
    """count twiddle entries for root^j, built on the device."""
    out = dev.alloc(max(count, 1) * twiddle_bytes(curve, shoup), stream)
    consts = mont_fr(curve, [root % curve.r])
    cbuf = dev.alloc(consts.nbytes, stream)
    Device.upload(cbuf, consts, stream)
    launch(mod, "fr_twiddles" + kernel_suffix(shoup), -(-count // 256), 256, stream, out, cbuf.ptr, U32(count))
    Device.free(cbuf, stream)  # stream-ordered: after the kernel
    return out


def build_tables(dev: Device, mod: Module, curve: Curve, k: int, stream: Stream, coset: bool,
                 shoup: bool | None = None) -> NttTables:
    """shoup: the twiddles' form, shoup_twiddles(curve, k) unless given (perf/ntt_ab.py's A/B)."""
    if shoup is None:
        shoup = shoup_twiddles(curve, k)
    r = curve.r
    w = curve.root_of_unity(k)
    half = max(1 << (k - 1), 1)
    tw_fwd = twiddle_table(dev, mod, curve, w, half, stream, shoup)
    tw_inv = twiddle_table(dev, mod, curve, pow(w, -1, r), half, stream, shoup)
    cos = None
    if coset:
        g = curve.coset_generator(k)
        cos = powers_table(dev, mod, curve, g, pow(1 << k, -1, r), 1 << k, stream)
    return NttTables(k, tw_fwd, tw_inv, cos, shoup)


# A lone transform's pass takes fewer groups a block where it has few groups, so that it makes at least this many
# blocks (two an SM on the H200): at 2^16 the passes were 64 blocks of 256 threads, half the SMs idle.
MIN_PASS_BLOCKS = 264


def _groups_per_block(threads_per_group: int, groups: int, narrow_down: bool) -> int:
    """Whole groups a block: up to 256 threads (at least one group), then, for a lone transform (narrow_down),
    halved while that leaves fewer than MIN_PASS_BLOCKS blocks."""
    gpb = max(1, min(256 // threads_per_group, groups))
    while narrow_down and gpb > 1 and groups // gpb < MIN_PASS_BLOCKS:
        gpb //= 2
    return gpb


def _launch_pass(mod: Module, name: str, k: int, b: int, stream: Stream, *args, batch: int = 1) -> None:
    """A group of 2^b elements gets 2^(b-2) threads holding four elements each (one thread
    for a two-element transform); up to 256 threads a block, fewer where the transform is small
    (MIN_PASS_BLOCKS).  batch > 1: the `_batch` entry over that many transforms side by side
    (cuda_kernels/front_batch.cuh), blockIdx.y the transform."""
    threads_per_group = 1 << max(b - 2, 0)
    groups = 1 << (k - b)
    gpb = _groups_per_block(threads_per_group, groups, batch == 1)
    block = gpb * threads_per_group
    shared = gpb * (1 << b) * FR_BYTES
    if batch > 1:
        if name.endswith("_m"):  # front_batch.cuh has the Shoup passes only (batches stop at 2^16)
            raise ValueError(f"{name}: no batched pass for Montgomery twiddles (2^{k})")
        launch(mod, name + "_batch", (groups // gpb, batch, 1), block, stream, *args, shared=shared)
    else:
        launch(mod, name, groups // gpb, block, stream, *args, shared=shared)


# Lone transforms up to this size (log2) run the narrow passes (two elements a thread, one level a step): at
# these sizes the wide passes have about one warp a scheduler, each waiting out its own products and loads
# (perf/RESULTS.md, session 36).  A group's threads stay within one block of up to 512: two passes of up to 10
# levels, k <= 20.
NARROW_MAX_LOG = 17


def narrow(k: int, batch: int = 1) -> bool:
    """Whether a 2^k transform runs the narrow passes (lone transforms only: batches keep the wide ones)."""
    return batch == 1 and k <= min(NARROW_MAX_LOG, 2 * MAX_PASS_LEVELS)


def _launch_narrow(mod: Module, name: str, k: int, b: int, stream: Stream, *args) -> None:
    """A group of 2^b elements gets 2^(b-1) threads holding two each; blocks of whole groups, up to 256
    threads (one group of 512 at b = 10), fewer down to one group where that makes MIN_PASS_BLOCKS blocks;
    shared memory only where a group spans warps (its exchanges at lane distances of 32 and more,
    double-buffered)."""
    threads_per_group = 1 << (b - 1)
    if threads_per_group > 512:
        raise ValueError(f"{name}: a narrow pass of 2^{b} elements needs more than 512 threads a group")
    groups = 1 << (k - b)
    gpb = _groups_per_block(threads_per_group, groups, True)
    block = gpb * threads_per_group
    shared = 2 * block * FR_BYTES if threads_per_group > 32 else 0
    launch(mod, name, groups // gpb, block, stream, *args, shared=shared)


def _launch(mod: Module, kind: str, tables: NttTables, b: int, stream: Stream, *args, batch: int) -> None:
    k = tables.k
    if narrow(k, batch):
        _launch_narrow(mod, f"ntt_{kind}_narrow{tables.suffix}", k, b, stream, *args)
    else:
        _launch_pass(mod, f"ntt_{kind}_pass{tables.suffix}", k, b, stream, *args, batch=batch)


def dif(mod: Module, data: DeviceBuffer | int, tables: NttTables, stream: Stream, *, inverse: bool,
        scale: DeviceBuffer | None = None, mark: Callable[[int], None] | None = None, batch: int = 1) -> None:
    """Natural -> bit-reversed; `scale` (indexed by natural coefficient) applied by the last pass.
    `mark(i)` is called before pass i and, with i = the pass count, after the last (perf/).
    batch: that many transforms of 2^k side by side at `data`, in one launch a pass."""
    k = tables.k
    tw = tables.tw_inv if inverse else tables.tw_fwd
    sizes = pass_sizes(k, dif=True)
    l0 = 0
    for i, b in enumerate(sizes):
        if mark:
            mark(i)
        last = i == len(sizes) - 1
        sc = scale.ptr if (last and scale is not None) else 0
        _launch(mod, "dif", tables, b, stream, data, tw, U32(k), U32(l0), U32(b), sc, batch=batch)
        l0 += b
    if mark:
        mark(len(sizes))


def dit(mod: Module, data: DeviceBuffer | int, tables: NttTables, stream: Stream, *, inverse: bool,
        mark: Callable[[int], None] | None = None, batch: int = 1) -> None:
    """Bit-reversed -> natural; `mark` and `batch` as for dif."""
    k = tables.k
    tw = tables.tw_inv if inverse else tables.tw_fwd
    sizes = pass_sizes(k)
    s0 = 0
    for i, b in enumerate(sizes):
        if mark:
            mark(i)
        _launch(mod, "dit", tables, b, stream, data, tw, U32(k), U32(s0), U32(b), batch=batch)
        s0 += b
    if mark:
        mark(len(sizes))
