"""Host-side pieces of the GPU NTT that need no GPU: the pass plan, the twiddle entry size
per curve, and the arithmetic of the Shoup twiddle product the kernels run."""
from __future__ import annotations

import random

import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.backends.gpu import ntt as gntt
from engine.backends.gpu.params import allows_shoup, params_header


@pytest.mark.parametrize("k", range(0, 31))
def test_pass_plan_covers_every_level_once(k):
    for dif in (False, True):
        sizes = gntt.pass_sizes(k, dif=dif)
        assert sum(sizes) == k
        assert all(1 <= b <= gntt.MAX_PASS_LEVELS for b in sizes)
        assert len(sizes) == -(-k // gntt.MAX_PASS_LEVELS)
    if k > 2 * gntt.MAX_PASS_LEVELS:  # three passes or more: DIF runs the mirror order
        assert gntt.pass_sizes(k, dif=True) == gntt.pass_sizes(k)[::-1]


@pytest.mark.parametrize("min_blocks", [None, 0, 7])
def test_a_small_transforms_passes_spread_over_the_sms(monkeypatch, min_blocks):
    """Every pass launches one thread per four elements (b >= 2) in blocks of at most 256 threads made of whole
    groups, with the shared memory of its groups; a lone transform takes at least MIN_PASS_BLOCKS blocks where it
    has that many groups (2^16: 256 blocks of 64 threads, not 64 of 256); a batch keeps 256-thread blocks."""
    launches = []
    monkeypatch.setattr(gntt, "launch", lambda mod, name, grid, block, stream, *args, shared: launches.append(
        (grid, block, shared)))
    if min_blocks is not None:
        monkeypatch.setattr(gntt, "MIN_PASS_BLOCKS", min_blocks)
    for k in range(1, 27):
        for b in set(gntt.pass_sizes(k)):
            launches.clear()
            gntt._launch_pass(None, "ntt_dit_pass", k, b, None)
            ((grid, block, shared),) = launches
            tpg, groups = 1 << max(b - 2, 0), 1 << (k - b)
            gpb = block // tpg
            assert block % tpg == 0 and block <= 256 and grid * gpb == groups, (k, b)
            assert shared == gpb * (1 << b) * gntt.FR_BYTES
            widest = min(256 // tpg, groups)
            assert gpb == 1 or grid >= gntt.MIN_PASS_BLOCKS, (k, b)  # narrowed only down to MIN_PASS_BLOCKS
            assert gpb == widest or groups // (2 * gpb) < gntt.MIN_PASS_BLOCKS, (k, b)  # and no further
    launches.clear()
    gntt._launch_pass(None, "ntt_dit_pass", 16, 8, None, batch=4)
    assert launches == [((64, 4, 1), 256, 4 * 256 * gntt.FR_BYTES)]
    if min_blocks is None:
        launches.clear()
        gntt._launch_pass(None, "ntt_dit_pass", 16, 8, None)
        assert launches == [(256, 64, 256 * gntt.FR_BYTES)]


def test_pass_plan_puts_the_remainder_on_the_large_twiddle_levels():
    assert gntt.pass_sizes(24) == [10, 10, 4]  # DIT: the last stages read the large table
    assert gntt.pass_sizes(24, dif=True) == [4, 10, 10]  # DIF: the first levels do
    assert gntt.pass_sizes(18) == [9, 9]  # two passes: even


def test_twiddle_entries_are_shoup_pairs_where_2r_fits():
    """Both scalar fields: Shoup's r = x w - q p < 2p (q at most one low) must fit 256 bits;
    BLS12-381's r does (0.45 * 2^256) although 3r does not."""
    assert 2 * BN254.r < 1 << 256 and 2 * BLS12_381.r < 1 << 256 < 3 * BLS12_381.r
    assert gntt.twiddle_bytes(BN254, True) == 64 and gntt.twiddle_bytes(BLS12_381, False) == 32
    for curve in (BN254, BLS12_381):
        assert "SHOUP = true" in params_header(curve).split("struct FQ_P")[0]
    assert not allows_shoup((1 << 255) + 1, 32)


def test_batched_passes_refuse_montgomery_tables():
    """front_batch.cuh has the Shoup passes only: a batch over a Montgomery table is an error, not a
    launch of the wrong kernel (batches stop at the 2^16 domain, where every table is Shoup)."""
    with pytest.raises(ValueError, match="no batched pass"):
        gntt._launch_pass(None, "ntt_dif_pass_m", 21, 10, None, batch=2)
    from engine.backends.gpu.backend import BATCH_MAX_DOMAIN  # noqa: PLC0415

    assert all(gntt.shoup_twiddles(c, k) for c in (BN254, BLS12_381) for k in range(1, BATCH_MAX_DOMAIN.bit_length()))


def test_twiddle_form_follows_the_measured_sizes():
    """BN254: Shoup pairs up to 2^20, the half-size Montgomery table beyond; BLS12-381: Shoup at
    every size.  Each form's passes are built for their own blocks an SM."""
    assert all(gntt.shoup_twiddles(BN254, k) for k in range(1, 21))
    assert not any(gntt.shoup_twiddles(BN254, k) for k in range(21, 29))
    assert all(gntt.shoup_twiddles(BLS12_381, k) for k in range(1, 29))
    for curve in (BN254, BLS12_381):
        header = params_header(curve)
        assert "#define NTT_MIN_BLOCKS 3\n" in header and "#define NTT_MIN_BLOCKS_M 4\n" in header


def _shoup_model(x: int, w: int, r: int, n: int = 8) -> int:
    """The generated mul_shoup step by step: q from the columns >= n-1 of x * ws (column
    n-2 contributes its high words), r = x w - q r from the low halves, one subtraction."""
    mask, word = (1 << 32) - 1, 32
    ws = (w << (word * n)) // r
    xl = [(x >> (word * i)) & mask for i in range(n)]
    wl = [(ws >> (word * i)) & mask for i in range(n)]
    s = 0
    for i in range(n):
        for j in range(n):
            prod = xl[i] * wl[j]
            if i + j >= n - 1:
                s += prod << (word * (i + j))
            elif i + j == n - 2:
                s += (prod >> word) << (word * (n - 1))
    q = s >> (word * n)
    assert (x * ws >> (word * n)) - 1 <= q <= x * ws >> (word * n)  # at most one below
    assert x * w // r - 1 <= q  # ... and at most one below floor(x w / r) too
    t = (x * w - q * r) % (1 << (word * n))  # low halves only
    assert t == x * w - q * r < 2 * r  # exact: the true value is below 2r < 2^256
    return t - r if t >= r else t


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
def test_shoup_product_model(curve):
    """x below 2^255 (the NTT's are canonical, < r): the bound needs 1 - x / 2^256 above the
    truncated columns' share, 2^-28."""
    r, rng = curve.r, random.Random(7)
    edge = [0, 1, 2, r - 1, r - 2, (r + 1) // 2]
    pairs = [(a, b) for a in edge + [(1 << 255) - 1, 2 * r - 1] for b in edge]  # w < r (a twiddle)
    pairs += [(rng.randrange(r), rng.randrange(r)) for _ in range(3000)]
    pairs += [(rng.randrange(1 << 255), rng.randrange(r)) for _ in range(500)]
    for x, w in pairs:
        assert _shoup_model(x, w, r) == x * w % r


def test_shoup_pair_from_montgomery_form():
    """ws = floor(w 2^256 / r) is -wm r^-1 mod 2^256 for wm = w 2^256 mod r (the kernels'
    exact division, a low-half product by the constant NEGPINV)."""
    r, R, rng = BN254.r, 1 << 256, random.Random(8)
    negpinv = (-pow(r, -1, R)) % R
    for w in [0, 1, r - 1] + [rng.randrange(r) for _ in range(1000)]:
        wm = w * R % r
        assert wm * negpinv % R == (w * R) // r


def _quad(dif: bool, radix4: bool, u: int, b: int, r: int) -> list[int]:
    """ntt.cuh quad(): the four slots of thread u in the round starting at local level r."""
    if not radix4:
        lh, threads = (b - 1 - r if dif else r), 1 << (b - 2)
        h, out = 1 << lh, []
        for q in range(2):
            bu = u + q * threads
            i0 = ((bu >> lh) << (lh + 1)) | (bu & (h - 1))
            out += [i0, i0 + h]
        return out
    if dif:
        lh = b - 1 - r
        h2 = 1 << (lh - 1)
        m = ((u >> (lh - 1)) << (lh + 1)) | (u & (h2 - 1))
        return [m + j * h2 for j in range(4)]
    h = 1 << r
    m = ((u >> r) << (r + 2)) | (u & (h - 1))
    return [m + j * h for j in range(4)]


def _warp_exchange(dif: bool, radix4: bool, b: int, r: int) -> bool:
    """ntt.cuh pass(): the exchange before the round at local level r syncs a warp, not the block."""
    return b <= 7 or (radix4 and (b - r <= 5 if dif else r <= 5))


@pytest.mark.parametrize("b", range(2, gntt.MAX_PASS_LEVELS + 1))
@pytest.mark.parametrize("dif", [False, True])
def test_warp_exchanges_only_read_slots_the_same_warp_wrote(b, dif):
    """A pass's shared-memory exchange waits for the warp alone only where every slot a thread
    reads next was written by a thread of its own warp (a block of 256 threads, groups of
    2^(b-2) threads at offsets of 2^b slots, as engine/backends/gpu/ntt.py launches them)."""
    tpg = 1 << (b - 2)
    block = 256  # a 10-level group fills one block; smaller groups share it
    warp_exchanges = 0
    r = 0
    rounds = (b + 1) // 2
    prev_writer: dict[int, int] | None = None
    prev_radix4 = True
    for i in range(rounds):
        radix4 = not (i == 0 and b & 1)
        slots = {}
        for t in range(block):
            g, u = divmod(t, tpg)
            for s in _quad(dif, radix4, u, b, r):
                assert 0 <= s < 1 << b
                assert (g << b) + s not in slots  # each slot held by one thread
                slots[(g << b) + s] = t
        assert len(slots) == (block // tpg) << b
        if prev_writer is not None and _warp_exchange(dif, prev_radix4, b, r):
            warp_exchanges += 1
            assert all(prev_writer[s] // 32 == t // 32 for s, t in slots.items())
        prev_writer, prev_radix4 = slots, radix4
        r += 2 if radix4 else 1
    if b == 10:  # a full pass: two of its four exchanges stay in the warp
        assert warp_exchanges == 2
    if b <= 7:
        assert warp_exchanges == rounds - 1


def test_base_field_product_is_out_of_line_and_scalar_field_inline(monkeypatch):
    """The base field's product is one called function (point formulas inline ten of them);
    the scalar field's stays inline; GROTH16_FQ_MUL_INLINE=1 inlines both (experiments)."""
    for curve in (BN254, BLS12_381):
        fr, fq = params_header(curve).split("struct FQ_P")
        assert "MUL_OUT_OF_LINE = false" in fr and "MUL_OUT_OF_LINE = true" in fq
    monkeypatch.setenv("GROTH16_FQ_MUL_INLINE", "1")
    assert "MUL_OUT_OF_LINE = true" not in params_header(BN254)


def test_narrow_passes_take_two_elements_a_thread_in_whole_groups(monkeypatch):
    """A narrow pass gives a group of 2^b elements 2^(b-1) threads, blocks of whole groups up to 256 threads
    (one group of 512 at b = 10), narrowed down to MIN_PASS_BLOCKS blocks and no further, and shared memory
    (two buffers of one element a thread) only where a group spans warps."""
    launches = []
    monkeypatch.setattr(gntt, "launch", lambda mod, name, grid, block, stream, *args, shared: launches.append(
        (name, grid, block, shared)))
    for k in range(1, 21):
        for b in set(gntt.pass_sizes(k)):
            launches.clear()
            gntt._launch_narrow(None, "ntt_dit_narrow", k, b, None)
            ((_, grid, block, shared),) = launches
            tpg, groups = 1 << (b - 1), 1 << (k - b)
            gpb = block // tpg
            assert block % tpg == 0 and block <= max(256, tpg) and grid * gpb == groups, (k, b)
            assert shared == (2 * block * gntt.FR_BYTES if tpg > 32 else 0), (k, b)
            assert gpb == 1 or grid >= gntt.MIN_PASS_BLOCKS, (k, b)
            assert gpb == max(1, min(256 // tpg, groups)) or groups // (2 * gpb) < gntt.MIN_PASS_BLOCKS, (k, b)
    with pytest.raises(ValueError, match="512 threads"):
        gntt._launch_narrow(None, "ntt_dit_narrow", 22, 11, None)


@pytest.mark.parametrize("narrow_max", [0, 16, 18, 20, 30])
def test_lone_small_transforms_take_the_narrow_passes(monkeypatch, narrow_max):
    """dit and dif launch the narrow kernels for a lone transform up to NARROW_MAX_LOG (never beyond two
    passes of 10 levels, 2^20), the wide ones beyond and for every batch, in the table's twiddle form."""
    names = []
    monkeypatch.setattr(gntt, "NARROW_MAX_LOG", narrow_max)
    monkeypatch.setattr(gntt, "launch", lambda mod, name, *args, **kw: names.append(name))
    for k in (1, 10, 16, 18, 20, 21, 24):
        for shoup in (True, False):
            tables = gntt.NttTables(k, 1, 2, 3, shoup)
            for batch in (1, 4):
                if batch > 1 and not shoup:
                    continue
                names.clear()
                gntt.dit(None, 0, tables, None, inverse=False, batch=batch)
                gntt.dif(None, 0, tables, None, inverse=True, scale=None, batch=batch)
                kind = "narrow" if batch == 1 and k <= min(narrow_max, 20) else "pass"
                tail = tables.suffix + ("_batch" if batch > 1 else "")
                passes = len(gntt.pass_sizes(k))
                assert names == [f"ntt_dit_{kind}{tail}"] * passes + [f"ntt_dif_{kind}{tail}"] * passes, (k, shoup)
