"""Synthetic benchmark circuits of any size: a satisfiable .r1cs and its .wtns, made with numpy.

Proving cost depends on the shape of a circuit, not only on its size: how
many terms each constraint has, how many witness values are 0 or 1 (cheap in
an MSM), how many wires never appear in A or B.  So the generator mimics what
circom emits for ordinary code instead of repeating one gate:

* Num2Bits(32): 32 boolean constraints b·(b - 1) = 0 and one linear
  constraint Σ 2^i b_i - x = 0 (A and B empty);
* bit logic on those bits: AND (a·b = c), XOR (2a·b = a + b - c), OR
  (a·b = a + b - c), in rounds that feed on earlier rounds;
* multiplications of field values with additions folded into the linear
  combinations, (c1 x1 + c2 x2 + c0)·(d1 y1 + d2 y2) = z, coefficients from
  small integers and a few large constants;
* multiplexers s·(a - b) = out - b with a bit selector;
* the public outputs, each the product of two field values; the public
  inputs feed the multiplications.

Every gadget kind is built for all its instances at once (numpy arrays of wire
ids, coefficient codes into a table of distinct values, and witness values;
Python ints only for the field products), so 2^24 constraints take minutes.
Given the same arguments and seed the files are byte-identical.
"""
from __future__ import annotations

import math
import operator
import os
from dataclasses import dataclass, field

import numpy as np

from engine.algebra.curves import Curve, curve_by_name
from engine.errors import CurveMismatchError, InputFileError
from engine.formats import R1CS, write_r1cs, write_wtns
from engine.formats.r1cs import LinearCombinations
from engine.paths import what_is
from engine.algebra.limbs import fr_from_ints, to_ints
from engine.progress import Progress

NUM2BITS_WIDTH = 32
BIT_ROUNDS = 4
MUL_ROUNDS = 4
N_BIG_CONSTANTS = 16
# share of the constraints (after the public outputs) per gadget kind; multiplications take the rest
SHARE_NUM2BITS = 0.40
SHARE_BITOPS = 0.25
SHARE_MUX = 0.10
BYTES_PER_CONSTRAINT = 400  # a build's peak memory, at least: measured 520 bytes a constraint (2^20), 590 an output


@dataclass
class _Block:
    """Constraints of one gadget batch: per matrix, (K, t) wire ids and coefficient codes (t may be 0)."""

    wires: tuple[np.ndarray, np.ndarray, np.ndarray]
    codes: tuple[np.ndarray, np.ndarray, np.ndarray]

    @property
    def count(self) -> int:
        return self.wires[0].shape[0]


@dataclass
class _Builder:
    curve: Curve
    rng: np.random.Generator
    n_wires: int = 1
    blocks: list[_Block] = field(default_factory=list)
    coeff_index: dict[int, int] = field(default_factory=dict)
    coeff_values: list[int] = field(default_factory=list)
    bit_ids: list[np.ndarray] = field(default_factory=list)  # witness parts: wires with values 0/1
    bit_vals: list[np.ndarray] = field(default_factory=list)
    fe_ids: list[np.ndarray] = field(default_factory=list)  # wires with field values (object arrays)
    fe_vals: list[np.ndarray] = field(default_factory=list)

    def alloc(self, k: int) -> np.ndarray:
        ids = np.arange(self.n_wires, self.n_wires + k, dtype=np.int64)
        self.n_wires += k
        return ids

    def code(self, value: int) -> int:
        value %= self.curve.r
        c = self.coeff_index.get(value)
        if c is None:
            c = self.coeff_index[value] = len(self.coeff_values)
            self.coeff_values.append(value)
        return c

    def codes(self, values: np.ndarray) -> np.ndarray:
        """Codes for an int64 array of small signed coefficients."""
        uniq, inv = np.unique(np.asarray(values, dtype=np.int64), return_inverse=True)
        table = np.array([self.code(int(u)) for u in uniq], dtype=np.int32)
        return table[inv.reshape(-1)].reshape(np.shape(values))

    def add(self, a: tuple, b: tuple, c: tuple) -> None:
        """One gadget batch; each of a, b, c is (wires (K, t), codes (K, t)) or None for an empty combination."""
        k = next(x[0].shape[0] for x in (a, b, c) if x is not None)
        empty = (np.zeros((k, 0), np.int64), np.zeros((k, 0), np.int32))
        parts = [x if x is not None else empty for x in (a, b, c)]
        self.blocks.append(_Block(tuple(p[0] for p in parts), tuple(p[1] for p in parts)))

    def set_bits(self, ids: np.ndarray, vals: np.ndarray) -> None:
        self.bit_ids.append(ids)
        self.bit_vals.append(vals.astype(np.uint8))

    def set_field(self, ids: np.ndarray, vals: np.ndarray) -> None:
        self.fe_ids.append(ids)
        self.fe_vals.append(vals)


def _col(*cols: np.ndarray) -> np.ndarray:
    return np.stack([np.asarray(c) for c in cols], axis=1)


def _const_codes(k: int, *codes: int) -> np.ndarray:
    return np.tile(np.array(codes, dtype=np.int32), (k, 1))


def _random_field(rng: np.random.Generator, k: int) -> np.ndarray:
    """k uniform-ish values below 2^253 (< r on both curves) as an object array."""
    limbs = rng.integers(0, 2**64, size=(k, 4), dtype=np.uint64, endpoint=False)
    limbs[:, 3] &= np.uint64((1 << 61) - 1)
    out = np.empty(k, dtype=object)
    out[:] = to_ints(limbs) if k else []
    return out


def _pick_distinct(rng: np.random.Generator, pool: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Two index arrays into range(pool), elementwise distinct (pool >= 2)."""
    i = rng.integers(0, pool, size=k)
    j = (i + 1 + rng.integers(0, pool - 1, size=k)) % pool
    return i, j


@dataclass
class BenchCircuit:
    r1cs: R1CS
    witness: np.ndarray  # (n_wires, 4) uint64 plain, w[0] = 1
    mix: dict[str, int]  # constraints per gadget kind


# A count of this or more is refused as such: no key's domain comes near (2^31 at most), and plan() takes a share
# of it as a float (an API caller's count of about 1e308 and more was an OverflowError traceback); as the
# command's own bound (engine/commands/bench_circuit.py's FAR).
MOST = 1 << 63


def shown_count(value: int) -> str:
    """A count for a message, shortened where it is long (one of thousands of digits was repeated in full, and one
    of more than 4300 cannot be printed: str() raises)."""
    if abs(value) >= 10**40:
        digits = round(abs(value).bit_length() * math.log10(2))
        return f"a {'negative ' if value < 0 else ''}number of about {digits} digits"
    return str(value)


def plan(n_constraints: int, n_public: int) -> dict[str, int]:
    """How many constraints of each kind (and outputs/inputs) for a target size; ValueError for a size that
    cannot be one (below the least, or 2^63 and more)."""
    for flag, value, least in (("--constraints", n_constraints, 1), ("--public", n_public, 0)):
        if value < least:
            raise ValueError(f"{flag} must {'be at least 1' if least else 'not be negative'} "
                             f"(got {shown_count(value)})")
        if value >= MOST:
            raise ValueError(f"{flag} {shown_count(value)} is more than any circuit holds (2^63 or more; a key's "
                             "domain is at most 2^31)")
    n_out = (n_public + 1) // 2
    n_in = n_public - n_out
    if n_constraints < n_out:
        raise ValueError(
            f"--constraints {n_constraints} is fewer than the {n_out} public outputs of --public {n_public} "
            f"(ceil(N/2) of the public signals are outputs, one constraint each): give at least --constraints {n_out}"
        )
    rest = n_constraints - n_out
    gadgets = int(rest * SHARE_NUM2BITS) // (NUM2BITS_WIDTH + 1)
    bitops = int(rest * SHARE_BITOPS) if gadgets else 0
    mux = int(rest * SHARE_MUX) if gadgets else 0
    return {
        "outputs": n_out,
        "inputs": n_in,
        "num2bits": gadgets * (NUM2BITS_WIDTH + 1),
        "bitops": bitops,
        "mux": mux,
        "mul": rest - gadgets * (NUM2BITS_WIDTH + 1) - bitops - mux,
    }


def make_bench_circuit(curve: Curve, n_constraints: int, n_public: int = 2, seed: int = 0,
                       progress: Progress | None = None) -> BenchCircuit:
    """A satisfiable circuit of exactly `n_constraints` constraints and its witness (deterministic in seed)."""
    prog = progress or Progress()
    p = plan(n_constraints, n_public)
    rng = np.random.default_rng(seed)
    bld = _Builder(curve, rng)
    r = curve.r
    one = bld.code(1)
    minus_one = bld.code(-1)
    big = [bld.code(int(v)) for v in _random_field(rng, N_BIG_CONSTANTS)]

    with prog.timed("inputs", 0.0):
        out_ids = bld.alloc(p["outputs"])
        in_ids = bld.alloc(p["inputs"])
        n_gadgets = p["num2bits"] // (NUM2BITS_WIDTH + 1)
        x_ids = bld.alloc(n_gadgets)
        n_seeds = max(2, p["mul"] // 16) if (p["mul"] or p["mux"] or p["outputs"]) else 0
        seed_ids = bld.alloc(n_seeds)
        n_prv_in = n_gadgets + n_seeds
        x_vals = rng.integers(0, 1 << NUM2BITS_WIDTH, size=n_gadgets, dtype=np.uint64)
        pool_ids = [in_ids, seed_ids, x_ids]
        pool_vals = [_random_field(rng, p["inputs"]), _random_field(rng, n_seeds), x_vals.astype(object)]
        for ids, vals in zip(pool_ids, pool_vals):
            bld.set_field(ids, vals)

    with prog.timed("num2bits", 0.1):
        bit_pool_ids, bit_pool_vals = _num2bits(bld, x_ids, x_vals, one, minus_one)

    with prog.timed("bit logic", 0.25):
        bit_pool_ids, bit_pool_vals = _bit_logic(bld, p["bitops"], bit_pool_ids, bit_pool_vals, one, minus_one)

    with prog.timed("multiplications", 0.35):
        fe_ids = np.concatenate(pool_ids)
        fe_vals = np.concatenate(pool_vals)
        fe_ids, fe_vals = _multiplications(bld, p["mul"], fe_ids, fe_vals, one, minus_one, big)

    with prog.timed("mux", 0.55):
        _mux(bld, p["mux"], bit_pool_ids, bit_pool_vals, fe_ids, fe_vals, one, minus_one)

    with prog.timed("outputs", 0.6):
        k = p["outputs"]
        if k:
            i, j = _pick_distinct(rng, len(fe_ids), k)
            bld.set_field(out_ids, fe_vals[i] * fe_vals[j] % r)
            ones = _const_codes(k, one)
            bld.add((fe_ids[i][:, None], ones), (fe_ids[j][:, None], ones), (out_ids[:, None], ones))

    with prog.timed("assemble", 0.65):
        r1cs = _assemble(bld, p, n_prv_in)
        witness = _witness(bld)
    mix = {k: v for k, v in p.items() if k not in ("inputs",)}
    return BenchCircuit(r1cs, witness, mix)


def _num2bits(bld: _Builder, x_ids, x_vals, one: int, minus_one: int):
    g, wdt = len(x_ids), NUM2BITS_WIDTH
    if g == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint8)
    bits = bld.alloc(g * wdt).reshape(g, wdt)
    vals = ((x_vals[:, None] >> np.arange(wdt, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    bld.set_bits(bits.reshape(-1), vals.reshape(-1))
    flat = bits.reshape(-1)
    k = flat.size
    # b·(b - 1) = 0
    bld.add((flat[:, None], _const_codes(k, one)),
            (_col(flat, np.zeros(k, np.int64)), _const_codes(k, one, minus_one)), None)
    # Σ 2^i b_i - x = 0: A and B empty
    pow_codes = [bld.code(1 << i) for i in range(wdt)]
    c_wires = np.concatenate([bits, x_ids[:, None]], axis=1)
    c_codes = np.tile(np.array(pow_codes + [minus_one], dtype=np.int32), (g, 1))
    bld.add(None, None, (c_wires, c_codes))
    return flat, vals.reshape(-1)


def _bit_logic(bld: _Builder, count: int, ids: np.ndarray, vals: np.ndarray, one: int, minus_one: int):
    rng = bld.rng
    two = bld.code(2)
    per_round = [count // BIT_ROUNDS + (1 if i < count % BIT_ROUNDS else 0) for i in range(BIT_ROUNDS)]
    for k in per_round:
        if k == 0 or len(ids) < 2:
            continue
        i, j = _pick_distinct(rng, len(ids), k)
        a, b, av, bv = ids[i], ids[j], vals[i], vals[j]
        kind = rng.integers(0, 3, size=k)  # 0 AND, 1 XOR, 2 OR
        out = bld.alloc(k)
        ov = np.where(kind == 0, av & bv, np.where(kind == 1, av ^ bv, av | bv)).astype(np.uint8)
        bld.set_bits(out, ov)
        for kd in range(3):
            sel = np.flatnonzero(kind == kd)
            n = sel.size
            if n == 0:
                continue
            sa, sb, so = a[sel], b[sel], out[sel]
            if kd == 0:  # a·b = c
                bld.add((sa[:, None], _const_codes(n, one)), (sb[:, None], _const_codes(n, one)),
                        (so[:, None], _const_codes(n, one)))
            else:  # XOR: 2a·b = a + b - c;  OR: a·b = a + b - c
                bld.add((sa[:, None], _const_codes(n, two if kd == 1 else one)), (sb[:, None], _const_codes(n, one)),
                        (_col(sa, sb, so), _const_codes(n, one, one, minus_one)))
        ids, vals = np.concatenate([ids, out]), np.concatenate([vals, ov])
    return ids, vals


def _multiplications(bld: _Builder, count: int, ids, vals, one: int, minus_one: int, big: list[int]):
    """(c1 x1 + c2 x2 + c0)·(d1 y1 + d2 y2) = z in three shapes, MUL_ROUNDS rounds deep."""
    rng, r = bld.rng, bld.curve.r
    small = np.array([1, -1, 2, 3, -2, 5, 7, 1], dtype=np.int64)  # 1 twice: the most common coefficient
    big_vals = np.array([bld.coeff_values[c] for c in big], dtype=object)
    per_round = [count // MUL_ROUNDS + (1 if i < count % MUL_ROUNDS else 0) for i in range(MUL_ROUNDS)]
    for k in per_round:
        if k == 0:
            continue
        shape = rng.integers(0, 10, size=k)  # 0-3: x·y, 4-6: (c1 x1 + c2 x2)·y, 7-9: both sides folded
        outs = bld.alloc(k)
        z = np.empty(k, dtype=object)
        for sh, sel in ((0, np.flatnonzero(shape < 4)), (1, np.flatnonzero((shape >= 4) & (shape < 7))),
                        (2, np.flatnonzero(shape >= 7))):
            n = sel.size
            if n == 0:
                continue
            x1, x2 = _pick_distinct(rng, len(ids), n)
            y1, y2 = _pick_distinct(rng, len(ids), n)
            if sh == 0:
                lhs, rhs = vals[x1], vals[y1]
                a = (ids[x1][:, None], _const_codes(n, one))
                b = (ids[y1][:, None], _const_codes(n, one))
            else:
                c1 = small[rng.integers(0, len(small), size=n)]
                use_big = rng.random(n) < 0.1  # a few large constants, as hash rounds have
                bi = rng.integers(0, len(big), size=n)
                c2_small = small[rng.integers(0, len(small), size=n)]
                c2 = np.where(use_big, big_vals[bi], c2_small.astype(object))
                lhs = c1.astype(object) * vals[x1] + c2 * vals[x2]
                a_w = [ids[x1], ids[x2]]
                a_c = [bld.codes(c1), np.where(use_big, np.array(big, np.int32)[bi], bld.codes(c2_small))]
                if sh == 1:
                    rhs = vals[y1]
                    b = (ids[y1][:, None], _const_codes(n, one))
                else:
                    c0 = small[rng.integers(0, len(small), size=n)]
                    d1 = small[rng.integers(0, len(small), size=n)]
                    d2 = small[rng.integers(0, len(small), size=n)]
                    lhs = lhs + c0.astype(object)
                    a_w.append(np.zeros(n, np.int64))
                    a_c.append(bld.codes(c0))
                    rhs = d1.astype(object) * vals[y1] + d2.astype(object) * vals[y2]
                    b = (_col(ids[y1], ids[y2]), _col(bld.codes(d1), bld.codes(d2)))
                a = (_col(*a_w), _col(*a_c))
            z[sel] = lhs % r * (rhs % r) % r
            bld.add(a, b, (outs[sel][:, None], _const_codes(n, one)))
        bld.set_field(outs, z)
        ids, vals = np.concatenate([ids, outs]), np.concatenate([vals, z])
    return ids, vals


def _mux(bld: _Builder, count: int, bit_ids, bit_vals, fe_ids, fe_vals, one: int, minus_one: int) -> None:
    """s·(a - b) = out - b: out = a when s = 1, else b."""
    if count == 0 or len(bit_ids) == 0 or len(fe_ids) < 2:
        return
    rng = bld.rng
    s = rng.integers(0, len(bit_ids), size=count)
    i, j = _pick_distinct(rng, len(fe_ids), count)
    out = bld.alloc(count)
    bld.set_field(out, np.where(bit_vals[s] == 1, fe_vals[i], fe_vals[j]))
    bld.add((bit_ids[s][:, None], _const_codes(count, one)),
            (_col(fe_ids[i], fe_ids[j]), _const_codes(count, one, minus_one)),
            (_col(out, fe_ids[j]), _const_codes(count, one, minus_one)))


def _assemble(bld: _Builder, p: dict, n_prv_in: int) -> R1CS:
    table = fr_from_ints(bld.coeff_values)
    mats = []
    for mtx in range(3):
        counts = np.concatenate([np.full(b.count, b.wires[mtx].shape[1], np.int64) for b in bld.blocks])
        row_ptr = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=row_ptr[1:])
        wires = np.concatenate([b.wires[mtx].reshape(-1) for b in bld.blocks]).astype(np.uint32)
        codes = np.concatenate([b.codes[mtx].reshape(-1) for b in bld.blocks])
        mats.append(LinearCombinations(row_ptr, wires, table[codes]))
    m = mats[0].row_ptr.size - 1
    curve = bld.curve
    return R1CS(
        path=None, prime=curve.r, curve=curve, n_wires=bld.n_wires, n_pub_out=p["outputs"], n_pub_in=p["inputs"],
        n_prv_in=n_prv_in, n_labels=bld.n_wires, n_constraints=m, a=mats[0], b=mats[1], c=mats[2],
        wire_to_label=np.arange(bld.n_wires, dtype=np.uint64),
    )


def _witness(bld: _Builder) -> np.ndarray:
    w = np.zeros((bld.n_wires, 4), dtype=np.uint64)
    w[0, 0] = 1
    for ids, vals in zip(bld.bit_ids, bld.bit_vals):
        w[ids, 0] = vals
    for ids, vals in zip(bld.fe_ids, bld.fe_vals):
        if len(ids):
            w[ids] = fr_from_ints(vals.tolist())
    return w


def check_request(curve, n_constraints: int, n_public: int, seed: int, name: str) -> None:
    """Everything about the request that can be wrong, before any work: a --name that is a path (it wrote outside the
    directory, or failed after the circuit was made), a negative --seed (numpy's "expected non-negative integer"), and
    a circuit whose key's domain no NTT over the curve's Fr has (2^28 on BN254: killed for memory on the way)."""
    plan(n_constraints, n_public)
    if seed < 0:
        raise ValueError(f"--seed must not be negative (got {shown_count(seed)})")
    if not name or name in (".", "..") or "/" in name or os.sep in name or "\0" in name:
        raise ValueError(f"--name {name!r} is not a file name stem: the files go into the directory as "
                         "<name>.r1cs and <name>.wtns")
    if len(os.fsencode(name)) + len(".r1cs") > 255:  # NAME_MAX: the write failed after the whole build
        raise ValueError(f"--name {name!r:.40}... is too long: <name>.r1cs would be a file name of more than "
                         "255 bytes")
    from engine.groth16.setup_scalars import check_memory, log_domain  # noqa: PLC0415 - as setup will pick it

    try:
        log_domain(curve, n_constraints, n_public, f"--constraints {n_constraints}")
    except CurveMismatchError as exc:
        raise ValueError(str(exc)) from None
    check_memory(BYTES_PER_CONSTRAINT * n_constraints, f"--constraints {n_constraints}",
                 "building the circuit and its witness")


def write_bench_circuit(directory, curve_name: str, n_constraints: int, *, n_public: int = 2, seed: int = 0,
                        name: str = "bench", progress: Progress | None = None) -> tuple[str, str, BenchCircuit]:
    """Make a bench circuit and write <directory>/<name>.r1cs and .wtns; returns both paths and the circuit."""
    prog = progress or Progress()
    try:
        curve = curve_by_name(curve_name)
    except KeyError as exc:
        raise ValueError(str(exc.args[0])) from None
    n_constraints, n_public, seed = (_count(label, v) for label, v in
                                     (("n_constraints", n_constraints), ("n_public", n_public), ("seed", seed)))
    check_request(curve, n_constraints, n_public, seed, name)
    directory = os.fspath(directory)
    if not directory:  # makedirs' error named no path
        raise ValueError("the output directory is an empty path (give a directory, . for this one)")
    if os.path.lexists(directory) and not os.path.isdir(directory):  # (a FIFO, a device, a broken link too)
        raise InputFileError(directory, f"is {what_is(directory)}, not a directory: {name}.r1cs and {name}.wtns "
                                        "are written into a directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise InputFileError(directory, f"cannot create the output directory: {exc.strerror or exc}") from None
    r1cs_path = os.path.join(directory, f"{name}.r1cs")
    wtns_path = os.path.join(directory, f"{name}.wtns")
    from engine.commands.outputs import check_outputs  # noqa: PLC0415 - a folder of that name failed after the build

    check_outputs([("circuit", r1cs_path), ("witness", wtns_path)], [])
    bench = make_bench_circuit(curve, n_constraints, n_public, seed, prog)
    _write_pair(prog, [("write r1cs", 0.75, r1cs_path, lambda p: write_r1cs(p, bench.r1cs)),
                       ("write wtns", 0.95, wtns_path, lambda p: write_wtns(p, curve.r, bench.witness))])
    bench.r1cs.path = r1cs_path
    prog.done()
    return r1cs_path, wtns_path, bench


def _count(label: str, value) -> int:
    """An API count as a Python int (numpy's too): 5.5 failed deep inside, True built a circuit of 1."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{label} must be an integer, not {type(value).__name__}")
    return operator.index(value)


def _write_pair(prog: Progress, files: list) -> None:
    """Write (stage, at, path, write) files all or none: each to a temporary name beside its target, renamed
    once all are whole.  A full disk after the .r1cs left the new circuit beside an older run's witness."""
    from engine.file_writes import release_temporary, temporary_file, written_in_place  # noqa: PLC0415
    from engine.paths import real_path  # noqa: PLC0415

    temps: list[tuple[str, str, str]] = []  # (temporary, target, the user's path)
    renamed: set[str] = set()
    try:
        for stage, at, path, write in files:
            with prog.timed(stage, at):
                if written_in_place(path):  # /dev/null, a pipe: where it is, as every output is
                    write(path)
                    continue
                target = real_path(path)  # a symlink is written through
                try:  # locked, and found by the next run if this one is killed (engine/file_writes.py)
                    tmp = temporary_file(target)
                except OSError as exc:
                    raise InputFileError(path, f"cannot write: {exc.strerror or exc}") from None
                temps.append((tmp, target, path))
                try:
                    write(tmp)
                except InputFileError as exc:  # named after the user's file, not the temporary one
                    raise InputFileError(path, exc.problem) from None
        for tmp, target, path in temps:
            try:
                try:  # a file written over keeps its permissions
                    os.chmod(tmp, os.stat(target).st_mode & 0o7777)
                except FileNotFoundError:
                    pass
                os.replace(tmp, target)
                renamed.add(tmp)
            except OSError as exc:
                raise InputFileError(path, f"cannot write: {exc.strerror or exc}") from None
    finally:
        for tmp, _, _ in temps:
            release_temporary(tmp, tmp in renamed)
