"""circom `.r1cs` (spec §2): header, constraints as three CSR matrices, wire->label map.

The constraints section is a stream of linear combinations `u32 nTerms` +
nTerms × (u32 wire, 32-byte coefficient).  Every field is 4-byte aligned, so
the only sequential work is hopping from one nTerms to the next; that walk
runs in a few lines of WebAssembly (wasmtime), and numpy does the rest: drop
the count words, and what remains is a (nnz, 9) array of u32 term rows.
"""
from __future__ import annotations

import atexit
import warnings
from dataclasses import dataclass

import numpy as np

from engine.algebra.curves import Curve, curve_by_scalar_prime
from engine.formats.binfile import (
    BinFile,
    open_binfile,
    rows_ge_mask,
    subtract_where,
    write_binfile,
)

SECTION_NAMES = {1: "header", 2: "constraints", 3: "wire-to-label map", 4: "custom gates", 5: "custom gate uses"}
N8 = 32
TERM_WORDS = 1 + N8 // 4  # u32 words per term: wire id + coefficient

# Primes circom can compile for (`circom --prime NAME`), read from circom2 0.2.23's own
# .r1cs output, so an unsupported one is named in the error instead of shown as a number.
CIRCOM_PRIMES = {
    0xFFFFFFFF00000001: "goldilocks",
    0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47: "grumpkin",
    0x40000000000000000000000000000000224698FC094CF91B992D30ED00000001: "pallas",
    0x40000000000000000000000000000000224698FC0994A8DD8C46EB2100000001: "vesta",
    0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF: "secq256r1",
    0x12AB655E9A2CA55660B44D1E5C37B00159AA76FED00000010A11800000000001: "bls12377",
}


class UnreducedCoefficientWarning(UserWarning):
    """An .r1cs coefficient was >= r and has been reduced (spec §10: older writers)."""


@dataclass
class LinearCombinations:
    """One matrix (A, B or C) of all constraints in CSR form."""

    row_ptr: np.ndarray  # (m+1,) int64: terms of constraint i are [row_ptr[i], row_ptr[i+1])
    wires: np.ndarray  # (nnz,) uint32
    coeffs: np.ndarray  # (nnz, 4) uint64, plain canonical values < r

    @property
    def nnz(self) -> int:
        return int(self.wires.shape[0])


@dataclass
class R1CSHeader:
    """Section 1 alone (what `info` shows without reading the constraints)."""

    prime: int
    curve: Curve | None
    n_wires: int
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    n_labels: int
    n_constraints: int

    @property
    def n_public(self) -> int:
        return self.n_pub_out + self.n_pub_in


@dataclass
class R1CS(R1CSHeader):
    """The header with the three constraint matrices (and the file's extras)."""

    a: LinearCombinations
    b: LinearCombinations
    c: LinearCombinations
    path: str | None = None
    wire_to_label: np.ndarray | None = None  # (n_wires,) uint64, section 3 when present
    n_unreduced: int = 0  # coefficients that were >= r in the file and were reduced mod r


def prime_name(prime: int) -> str:
    c = curve_by_scalar_prime(prime)
    if c is not None:
        return c.name
    return CIRCOM_PRIMES.get(prime, "unknown")


def _read_header(bf: BinFile) -> R1CSHeader:
    cur = bf.cursor(bf.section(1))
    n8 = cur.u32("n8")
    if n8 == 0 or n8 % 8 or n8 > 64:
        raise bf.error(f"header: n8 = {n8} is not a valid field element size")
    prime = cur.bigint(n8, "the prime")
    curve = curve_by_scalar_prime(prime)
    if curve is None:
        raise bf.error(
            f"prime {prime:#x} ({prime_name(prime)}) is not supported: only the scalar fields of "
            "bn128 and bls12381 are (compile with circom --prime bn128 or --prime bls12381)"
        )
    if n8 != N8:
        raise bf.error(f"header: n8 = {n8} but {curve.name} scalars take {N8} bytes")
    n_wires = cur.u32("nWires")
    n_pub_out = cur.u32("nPubOut")
    n_pub_in = cur.u32("nPubIn")
    n_prv_in = cur.u32("nPrvIn")
    n_labels = cur.u64("nLabels")
    n_constraints = cur.u32("mConstraints")
    cur.finish()
    if n_wires == 0:
        raise bf.error("header: nWires = 0 (wire 0, the constant one, always exists)")
    # Only the public signals must be wires (1..nPublic).  nPrvIn may exceed the wires left: circom
    # drops the wire of a private input no constraint uses but still counts it, and snarkjs accepts that.
    if 1 + n_pub_out + n_pub_in > n_wires:
        raise bf.error(
            f"header: 1 + {n_pub_out} outputs + {n_pub_in} public inputs exceed nWires = {n_wires}"
        )
    return R1CSHeader(prime, curve, n_wires, n_pub_out, n_pub_in, n_prv_in, n_labels, n_constraints)


def read_r1cs_header(path) -> tuple[R1CSHeader, BinFile]:
    """Only the header (and the scanned section table): cheap on any size of file."""
    bf = open_binfile(path, "r1cs", max_version=1, names=SECTION_NAMES)
    return _read_header(bf), bf


_GATE_NAMES_SHOWN = 5
_GATE_NAME_MAX = 100


def custom_gates(bf: BinFile) -> dict | None:
    """{"gates": names, "uses": count} of the custom gates (circom `pragma custom_templates;`) the file's sections
    4 and 5 declare and apply, or None where it has none (no such sections, or both empty: the pragma alone).
    Names are read as far as they are well formed (a few, each cut short); a count word is all the rest needs."""
    gates, uses = bf.optional(4), bf.optional(5)
    n_gates = _count_word(bf, gates)
    n_uses = _count_word(bf, uses)
    if not n_gates and not n_uses:
        return None
    names: list[str] = []
    if gates is not None:
        raw = bf.bytes(gates, 4, min(gates.size - 4, _GATE_NAMES_SHOWN * (_GATE_NAME_MAX + 4 + 64 * N8)))
        at = 0
        while len(names) < min(n_gates, _GATE_NAMES_SHOWN):
            end = raw.find(b"\0", at)
            if end < 0 or at + 4 > len(raw):
                break
            names.append(raw[at:end][:_GATE_NAME_MAX].decode("utf-8", "replace"))
            if end + 5 > len(raw):
                break
            at = end + 5 + N8 * int.from_bytes(raw[end + 1:end + 5], "little")  # skip its parameters
        names += ["..."] * (len(names) < n_gates)
    return {"gates": names, "uses": n_uses}


def _count_word(bf: BinFile, sec) -> int:
    return int.from_bytes(bf.bytes(sec, 0, 4), "little") if sec is not None and sec.size >= 4 else 0


def refuse_custom_gates(bf: BinFile) -> None:
    """A Groth16 key or check of a circuit with custom gates would not enforce them: the gates' own constraints
    are not in the R1CS (PLONK applies them), so any value of a gate's output signals satisfies it; snarkjs's
    setup made such a key all the same (unsound).  One line naming the file and the gates."""
    found = custom_gates(bf)
    if found is None:
        return
    names = ", ".join(found["gates"]) or "?"
    raise bf.error(f"uses custom gates ({names}; {found['uses']} use{'s' * (found['uses'] != 1)}: circom `pragma "
                   "custom_templates;`), which only PLONK enforces; a Groth16 key or proof of it would not check "
                   "them: compile the circuit with ordinary templates instead")


def _lc_counts_py(flat: np.ndarray, n_lcs: int) -> tuple[np.ndarray, int]:
    """Walk the nTerms words of `n_lcs` linear combinations -> (counts, words consumed).

    The hop p -> p + 1 + 9*nTerms is inherently sequential: one Python step
    (~250 ns) per linear combination.  Used for small files and as the
    reference for `_lc_counts_wasm`.  Stops early (fewer counts) at the end.
    """
    words = memoryview(flat).cast("B").cast("I") if flat.shape[0] else memoryview(b"").cast("I")
    counts = []
    append = counts.append
    p, end, step = 0, len(words), TERM_WORDS
    for _ in range(n_lcs):
        if p >= end:
            break
        n = words[p]
        append(n)
        p += 1 + step * n
    return np.array(counts, dtype=np.int64), p


# The same walk compiled by wasmtime (already a dependency, for circuit.wasm):
# a few ns per step instead of ~250 ns, so 2^24 constraints take about a second.
_WALK_WAT = r"""
(module
  (memory (export "mem") 1)
  (global $pos (export "pos") (mut i64) (i64.const 0))
  ;; Counts of the linear combinations in the u32 words at byte 0: start at word $p, stop
  ;; before a count word at or past $end or after $n counts; counts are stored at byte $out.
  ;; Returns how many were walked and leaves the next count word's index in $pos.
  (func (export "walk") (param $p i64) (param $end i64) (param $n i32) (param $out i32) (result i32)
    (local $k i32) (local $c i32)
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
        (br_if $done (i64.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load (i32.wrap_i64 (i64.shl (local.get $p) (i64.const 2)))))
        (i32.store (i32.add (local.get $out) (i32.shl (local.get $k) (i32.const 2))) (local.get $c))
        (local.set $p (i64.add (local.get $p)
                        (i64.add (i64.const 1) (i64.mul (i64.extend_i32_u (local.get $c)) (i64.const 9)))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $step)))
    (global.set $pos (local.get $p))
    (local.get $k)))
"""
_WALK_CHUNK_WORDS = 1 << 24  # 64 MiB of the section in wasm memory at a time
_WALK_OUT = 1 << 22  # counts returned per call
_WALK_MIN_LCS = 1 << 16  # below this the Python walk is quicker than starting wasmtime
_walk_module = None  # (engine, module), compiled once per process; each walk gets its own Store


def _release_walk_module() -> None:
    """The walk's module and engine closed at exit, while wasmtime is whole: left to the interpreter's teardown,
    their finalizers ran after wasmtime's own module was cleared ("Exception ignored in: Managed.__del__ ...
    'NoneType' object is not callable")."""
    global _walk_module
    walk, _walk_module = _walk_module, None
    if walk is not None:
        walk[1].close()
        walk[0].close()


def _lc_counts_wasm(flat: np.ndarray, n_lcs: int) -> tuple[np.ndarray, int]:
    """`_lc_counts_py` in WebAssembly: copy the section through a wasm buffer chunk by chunk.

    Each chunk starts at the next count word, so the walk never needs bytes
    outside the buffer; the copy is the cost (memory speed).
    """
    import wasmtime  # noqa: PLC0415

    global _walk_module
    if _walk_module is None:
        engine = wasmtime.Engine()
        _walk_module = (engine, wasmtime.Module(engine, _WALK_WAT))
        atexit.register(_release_walk_module)
    engine, module = _walk_module
    store = wasmtime.Store(engine)
    exports = wasmtime.Instance(store, module, []).exports(store)
    mem, walk, pos = exports["mem"], exports["walk"], exports["pos"]
    total = flat.shape[0]
    chunk, n_out = min(total, _WALK_CHUNK_WORDS), min(n_lcs, _WALK_OUT)
    need = 4 * (chunk + n_out)
    mem.grow(store, max(0, -(-need // 65536) - mem.size(store)))
    raw = np.ctypeslib.as_array(mem.data_ptr(store), shape=(mem.data_len(store),))
    words, out = raw[: 4 * chunk].view("<u4"), raw[4 * chunk : need].view("<u4")
    counts = np.empty(n_lcs, dtype=np.int64)
    k = p = 0
    while k < n_lcs and p < total:
        e = min(chunk, total - p)
        words[:e] = flat[p : p + e]
        got = walk(store, 0, e, min(n_out, n_lcs - k), 4 * chunk)
        counts[k : k + got] = out[:got]
        k += got
        p += pos.value(store)
    return counts[:k], p


def _lc_counts(flat: np.ndarray, n_lcs: int) -> tuple[np.ndarray, int]:
    if n_lcs >= _WALK_MIN_LCS:
        try:
            return _lc_counts_wasm(flat, n_lcs)
        except ImportError:  # wasmtime missing: the slow walk still gives the same answer
            pass
    return _lc_counts_py(flat, n_lcs)


def _split_terms(flat: np.ndarray, counts: np.ndarray, pos: np.ndarray) -> list[LinearCombinations]:
    """A, B, C in CSR form, gathered from the u32 words given every linear combination's count word.

    Term j of matrix x sits at word base[k] + 9*j (k its linear combination);
    the coefficient words are read through an overlapping (n, 8) view, so each
    matrix costs two row gathers and no further copy.
    """
    n_words = flat.shape[0]
    coeff_rows = np.lib.stride_tricks.as_strided(
        flat, shape=(max(n_words - (TERM_WORDS - 2), 0), TERM_WORDS - 1), strides=(4, 4), writeable=False
    )
    mats = []
    for x in range(3):
        c, p = counts[x::3], pos[x::3]
        row_ptr = np.zeros(c.shape[0] + 1, dtype=np.int64)
        np.cumsum(c, out=row_ptr[1:])
        nnz = int(row_ptr[-1])
        at = np.repeat(p + 1 - TERM_WORDS * row_ptr[:-1], c)
        at += np.arange(0, TERM_WORDS * nnz, TERM_WORDS, dtype=np.int64)
        wires = flat[at]
        at += 1
        coeffs = coeff_rows[at].view("<u8") if nnz else np.zeros((0, N8 // 8), dtype=np.uint64)
        mats.append(LinearCombinations(row_ptr, wires, coeffs))
    return mats


def read_r1cs(path) -> R1CS:
    """Read and validate an .r1cs: supported prime, wire ids < nWires, exact section sizes.

    Coefficients >= r (not written by circom 2.2.3, possible from older writers,
    spec §10) are reduced mod r, counted in `n_unreduced`, and reported with an
    `UnreducedCoefficientWarning`.
    """
    h, bf = read_r1cs_header(path)
    refuse_custom_gates(bf)
    sec = bf.section(2)
    if sec.size % 4:
        raise bf.error(f"{bf.label(2)} has {sec.size} bytes, not a whole number of u32 words")
    m = h.n_constraints
    if 12 * m > sec.size:
        raise bf.error(f"{bf.label(2)} has {sec.size} bytes, too few for mConstraints = {m} (12 bytes at least each)")
    n_words = sec.size // 4
    flat = bf.array(sec, "<u4", n_words)
    counts, used = _lc_counts(flat, 3 * m)
    if counts.shape[0] < 3 * m or used > n_words:
        k = min(counts.shape[0], 3 * m - 1)
        raise bf.error(f"{bf.label(2)} ends inside constraint {k // 3} (its {'ABC'[k % 3]} part) "
                       f"after {sec.size} bytes")
    if used != n_words:
        raise bf.error(f"{bf.label(2)} has {sec.size} bytes but its {m} constraints take {used * 4}")
    pos = np.zeros(3 * m, dtype=np.int64)
    if m:
        np.cumsum(1 + TERM_WORDS * counts[:-1], out=pos[1:])
    mats = _split_terms(flat, counts, pos)
    n_unreduced = 0
    for name, lc in zip("ABC", mats):
        if lc.nnz and int(lc.wires.max()) >= h.n_wires:
            j = int(np.argmax(lc.wires >= h.n_wires))
            row = int(np.searchsorted(lc.row_ptr, j, side="right")) - 1
            raise bf.error(f"constraint {row}: {name} uses wire {int(lc.wires[j])} but nWires = {h.n_wires}")
        n_unreduced += _reduce(lc.coeffs, h.prime)
    if n_unreduced:
        warnings.warn(f"{bf.path}: {n_unreduced} coefficients were >= r and were reduced mod r",
                      UnreducedCoefficientWarning, stacklevel=2)
    labels = None
    s3 = bf.optional(3)
    if s3 is not None:
        bf.expect_size(s3, 8 * h.n_wires, f"nWires = {h.n_wires}")
        labels = bf.array(s3, "<u8", h.n_wires)
    return R1CS(**vars(h), a=mats[0], b=mats[1], c=mats[2], path=bf.path, wire_to_label=labels,
                n_unreduced=n_unreduced)


def _reduce(coeffs: np.ndarray, r: int) -> int:
    """Reduce rows >= r in place (at most 2^256/r subtractions, vectorised); returns how many were."""
    mask = rows_ge_mask(coeffs, r)
    count = int(mask.sum())
    while mask.any():
        subtract_where(coeffs, mask, r)
        mask = rows_ge_mask(coeffs, r)
    return count


def _section2(r1cs: R1CS) -> list:
    """The constraints section as one u32 word array, in few numpy passes.

    Per linear combination the file holds `u32 nTerms` then nTerms x (u32 wire,
    8 u32 coefficient words).  Every term's word offset follows from the
    counts (a cumsum), so the array is filled by scatters with increasing
    indices: one for all count words, and per matrix one for the wires and one
    for the 32-byte coefficients, the latter through a view of the output whose
    32-byte items start every 4 bytes (so an item can sit at any word).
    """
    m = r1cs.n_constraints
    mats = (r1cs.a, r1cs.b, r1cs.c)
    counts = np.empty((m, 3), dtype=np.int64)  # file order: constraint-major, then A, B, C
    for i, lc in enumerate(mats):
        np.subtract(lc.row_ptr[1:], lc.row_ptr[:-1], out=counts[:, i])
    counts = counts.reshape(-1)
    total = 3 * m + TERM_WORDS * sum(lc.nnz for lc in mats)
    out = np.empty(total, dtype="<u4")
    pos = np.zeros(3 * m, dtype=np.int64)  # word index of each linear combination's count
    if m:
        np.cumsum(1 + TERM_WORDS * counts[:-1], out=pos[1:])
    out[pos] = counts
    coeff_item = np.dtype((np.void, N8))
    coeff_at = None  # item k = bytes [4k + 4, 4k + 36): the coefficient of a term whose wire id is word k
    for i, lc in enumerate(mats):
        if not lc.nnz:
            continue
        at = np.repeat(pos[i::3] + 1 - TERM_WORDS * lc.row_ptr[:-1], counts[i::3])
        at += np.arange(0, TERM_WORDS * lc.nnz, TERM_WORDS, dtype=np.int64)
        out[at] = lc.wires
        if coeff_at is None:  # a term exists, so total >= TERM_WORDS
            coeff_at = np.ndarray((total - TERM_WORDS + 1,), dtype=coeff_item, buffer=out, offset=4, strides=(4,))
        coeff_at[at] = np.ascontiguousarray(lc.coeffs, dtype="<u8").view(coeff_item).reshape(-1)
    return [out]


def write_r1cs(path, r1cs: R1CS) -> None:
    """Write sections 2, 1, 3 in circom 2.2.3's layout (constraints, header, wire->label)."""
    header = (
        N8.to_bytes(4, "little") + r1cs.prime.to_bytes(N8, "little")
        + b"".join(v.to_bytes(4, "little") for v in (r1cs.n_wires, r1cs.n_pub_out, r1cs.n_pub_in, r1cs.n_prv_in))
        + r1cs.n_labels.to_bytes(8, "little") + r1cs.n_constraints.to_bytes(4, "little")
    )
    labels = r1cs.wire_to_label
    if labels is None:
        labels = np.arange(r1cs.n_wires, dtype="<u8")
    write_binfile(path, "r1cs", 1, [(2, _section2(r1cs)), (1, [header]), (3, [np.asarray(labels, dtype="<u8")])])
