"""Groth16 `.zkey` (spec §4): header fields, and numpy views over the point and coeffs sections.

Reading a key maps the file and checks every section's size against the
header's counts; the points are not touched (a multi-GB key opens in
milliseconds), the coeffs section is scanned once, on threads, for matrices,
rows, wires and values out of range, A's entry count and the entries' order
(engine/formats/coeffs_scan.py).
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

import numpy as np

from engine.algebra.curves import Curve, curve_by_base_prime, curve_by_scalar_prime
from engine.errors import FormatError
from engine.formats.binfile import BinFile, Section, first_row_ge, open_binfile, write_binfile
from engine.formats.coeffs_scan import CoeffError, CoeffScan, scan_coeffs

SECTION_NAMES = {
    1: "protocol", 2: "Groth16 header", 3: "IC", 4: "coeffs", 5: "A", 6: "B1", 7: "B2", 8: "C", 9: "H",
    10: "MPC parameters",
}
PROTOCOLS = {1: "Groth16", 2: "PLONK", 10: "FFLONK"}
GROTH16 = 1
N8R = 32

# numpy dtype of one coeffs entry as stored (spec §4.4): 12 + 32 bytes, packed
COEFF_DTYPE = np.dtype([("matrix", "<u4"), ("row", "<u4"), ("wire", "<u4"), ("value", "<u8", (4,))])

# the point sections (spec §4.3) and the ZKey fields that view them; the header's points are section 2's
POINT_SECTIONS = {3: "ic", 5: "a", 6: "b1", 7: "b2", 8: "c", 9: "h"}
HEADER_POINTS = ("alpha1", "beta1", "beta2", "gamma2", "delta1", "delta2")
_COORDS = {2: ("x", "y"), 4: ("x.c0", "x.c1", "y.c0", "y.c1")}  # a point's coordinates: G1, G2

SHA_SAMPLE = 64 * 1024  # bytes hashed at each end of a large section by `zkey_sha`


@dataclass
class ZKey:
    path: str | None
    curve: Curve
    n_vars: int  # wires, including wire 0
    n_public: int  # public signals, not counting wire 0
    domain_size: int  # n = 2^log_domain
    log_domain: int
    # header points, raw Montgomery limbs as in the file (uint64):
    alpha1: np.ndarray  # (2, Lq)
    beta1: np.ndarray  # (2, Lq)
    beta2: np.ndarray  # (2, 2, Lq)
    gamma2: np.ndarray  # (2, 2, Lq)
    delta1: np.ndarray  # (2, Lq)
    delta2: np.ndarray  # (2, 2, Lq)
    # sections, numpy views (read-only) over the mapped file:
    ic: np.ndarray  # (n_public+1, 2, Lq)
    coeffs: np.ndarray  # (nCoef,) COEFF_DTYPE; value = c*R^2 mod r, plain bytes (spec §4.4)
    a: np.ndarray  # (n_vars, 2, Lq)
    b1: np.ndarray  # (n_vars, 2, Lq)
    b2: np.ndarray  # (n_vars, 2, 2, Lq)
    c: np.ndarray  # (n_vars - n_public - 1, 2, Lq)
    h: np.ndarray  # (domain_size, 2, Lq)
    sha: bytes = b""  # identity of the key's bytes for caches (see `zkey_sha`)
    mpc: np.ndarray | None = None  # section 10 as uint8 (circuit hash, contributions); None: not read/none
    section_order: tuple[int, ...] | None = None  # ids in file order, so a rewrite is byte-identical
    version: int = 1  # binfile version (snarkjs writes 1)
    # where each section's payload lies in the file: id -> (offset, size); lets a loader read
    # the point sections straight from the file (engine/backends/gpu/staging.py) in big chunks
    sections: dict[int, tuple[int, int]] | None = None
    file_size: int = 0  # bytes of the file as it was mapped
    file_mtime_ns: int = 0  # its modification time then (with size and sha: the key cache's identity)
    # what read_zkey's pass over the coeffs found (A's count, the order); None: not scanned (a key made
    # in memory): coeffs_scan.scan_of makes it on first use
    coeff_scan: CoeffScan | None = None

    @property
    def n_coef(self) -> int:
        return int(self.coeffs.shape[0])


def _point_view(bf: BinFile, sid: int, count: int, per_point: int, shape: tuple, what: str) -> np.ndarray:
    sec = bf.section(sid)
    bf.expect_size(sec, count * per_point, f"{what} = {count} points of {per_point} bytes")
    return bf.array(sec, "<u8", count * per_point // 8, shape=(count, *shape))


def read_zkey(path) -> ZKey:
    """Read a Groth16 zkey: header values, point sections as views, coeffs validated (spec §4)."""
    bf = open_binfile(path, "zkey", max_version=2, names=SECTION_NAMES)
    cur = bf.cursor(bf.section(1))
    protocol = cur.u32("the protocol id")
    if protocol != GROTH16:
        what = PROTOCOLS.get(protocol)
        if what:
            raise bf.error(f"is a {what} zkey, only Groth16 is supported")
        raise bf.error(f"unknown protocol id {protocol} (1 is Groth16)")
    cur.finish()

    cur = bf.cursor(bf.section(2))
    n8q = cur.u32("n8q")
    if n8q not in (32, 48):
        raise bf.error(f"Groth16 header: n8q = {n8q} is not a supported base-field size (32 or 48)")
    q = cur.bigint(n8q, "q")
    curve = curve_by_base_prime(q)
    if curve is None or curve.n8q != n8q:
        raise bf.error(f"Groth16 header: base field prime q = {q:#x} is not that of bn128 or bls12381")
    n8r = cur.u32("n8r")
    if n8r != N8R:
        raise bf.error(f"Groth16 header: n8r = {n8r} but {curve.name} scalars take {N8R} bytes")
    r = cur.bigint(n8r, "r")
    if r != curve.r:
        other = curve_by_scalar_prime(r)
        raise bf.error(f"Groth16 header: r = {r:#x} is not the scalar field of {curve.name}"
                       + (f" (it is {other.name}'s)" if other else ""))
    n_vars, n_public, domain_size = cur.u32("nVars"), cur.u32("nPublic"), cur.u32("domainSize")
    lq, g1, g2 = curve.q_limbs64, curve.g1_bytes, curve.g2_bytes

    def pt(nbytes: int, shape: tuple, what: str) -> np.ndarray:
        return np.frombuffer(cur.raw(nbytes, what), dtype="<u8").reshape(shape).copy()

    alpha1 = pt(g1, (2, lq), "alpha1")
    beta1 = pt(g1, (2, lq), "beta1")
    beta2 = pt(g2, (2, 2, lq), "beta2")
    gamma2 = pt(g2, (2, 2, lq), "gamma2")
    delta1 = pt(g1, (2, lq), "delta1")
    delta2 = pt(g2, (2, 2, lq), "delta2")
    cur.finish()

    if domain_size == 0 or domain_size & (domain_size - 1):
        raise bf.error(f"Groth16 header: domainSize = {domain_size} is not a power of two")
    log_domain = domain_size.bit_length() - 1
    if log_domain > curve.two_adicity:
        raise bf.error(f"Groth16 header: domainSize 2^{log_domain} exceeds {curve.name}'s 2^{curve.two_adicity}")
    if n_public + 1 > n_vars:
        raise bf.error(f"Groth16 header: nPublic = {n_public} needs at least {n_public + 1} wires, nVars = {n_vars}")

    ic = _point_view(bf, 3, n_public + 1, g1, (2, lq), "nPublic+1")
    coeffs, scan = _read_coeffs(bf, curve, n_vars, domain_size)
    a = _point_view(bf, 5, n_vars, g1, (2, lq), "nVars")
    b1 = _point_view(bf, 6, n_vars, g1, (2, lq), "nVars")
    b2 = _point_view(bf, 7, n_vars, g2, (2, 2, lq), "nVars")
    c = _point_view(bf, 8, n_vars - n_public - 1, g1, (2, lq), "nVars-nPublic-1")
    h = _point_view(bf, 9, domain_size, g1, (2, lq), "domainSize")
    s10 = bf.optional(10)
    mpc = bf.array(s10, np.uint8, s10.size) if s10 is not None else None
    return ZKey(
        bf.path, curve, n_vars, n_public, domain_size, log_domain,
        alpha1, beta1, beta2, gamma2, delta1, delta2,
        ic, coeffs, a, b1, b2, c, h,
        sha=zkey_sha(bf), mpc=mpc, section_order=tuple(s.id for s in bf.records), version=bf.version,
        sections={s.id: (s.offset, s.size) for s in bf.records}, file_size=bf.size if bf.regular else 0,
        file_mtime_ns=bf.mtime_ns,
        coeff_scan=scan,
    )


def check_coordinates(key) -> None:
    """Refuse a key with a point coordinate not below the base field prime q: a FormatError naming the file,
    the section, the point and the coordinate.

    Each coordinate is a Montgomery value stored in a slot wider than q, so x + q fits and reads as x modulo q:
    the CPU backend and snarkjs reduce what they decode, but the GPU's kernels take the raw limbs: a wrong
    proof, which the device's check refused after all the work without a word of the key, or which was
    returned where none runs (--no-verify on the host tier).  Kept out of `read_zkey`, which opens a key
    without touching its points (`info`, `cache list`, export-vkey): the prover calls it once per key object
    (engine/groth16/prover.check_key).  One vectorised pass over the limbs, on threads: 11 ms for the 389 MiB
    of points of a 2^20 BN254 key on the H200 machine, beside 100-125 ms for `prove`'s load of that key onto
    the device (session 45, helper 21).
    """
    curve = key.curve
    lq, q = curve.q_limbs64, curve.q
    where = [("section 2 (Groth16 header)", np.asarray(getattr(key, f)), f) for f in HEADER_POINTS]
    where += [(f"section {sid} ({SECTION_NAMES[sid]})", np.asarray(getattr(key, f)), None)
              for sid, f in POINT_SECTIONS.items()]
    for label, arr, field in where:
        if arr.size == 0:
            continue
        coords = 4 if arr.ndim == (3 if field else 4) else 2  # G2 (a point of two Fq2 coordinates) or G1
        bad = first_row_ge(arr.reshape(-1, lq), q)
        if bad >= 0:
            point, coord = divmod(bad, coords)
            what = field if field is not None else f"point {point}"
            raise FormatError(key.path or "proving key",
                              f"{label}: {what}'s {_COORDS[coords][coord]} coordinate is not below the "
                              f"{curve.name} base field prime q (not a reduced Montgomery value: a corrupt or "
                              "forged key)")


def _read_coeffs(bf: BinFile, curve: Curve, n_vars: int, domain_size: int) -> tuple[np.ndarray, CoeffScan]:
    sec = bf.section(4)
    entry = COEFF_DTYPE.itemsize
    if sec.size < 4 or (sec.size - 4) % entry:
        raise bf.error(f"{bf.label(4)} has {sec.size} bytes, not 4 + a multiple of {entry}")
    stored = struct.unpack_from("<I", bf.buf, sec.offset)[0]
    n_coef = (sec.size - 4) // entry
    if stored != n_coef:
        raise bf.error(f"{bf.label(4)} says nCoef = {stored} but its {sec.size} bytes hold {n_coef} entries")
    coeffs = bf.array(sec, COEFF_DTYPE, n_coef, start=4)
    try:  # one threaded pass: the checks, A's count, the order (engine/formats/coeffs_scan.py)
        scan = scan_coeffs(coeffs, curve.r, domain_size, n_vars)
    except CoeffError as e:
        bounds = {"matrix": "is not 0 (A) or 1 (B)", "row": f"is not below domainSize = {domain_size}",
                  "wire": f"is not below nVars = {n_vars}"}
        if e.what == "value":
            raise bf.error(f"{bf.label(4)}: entry {e.entry} has a value that is not reduced modulo r") from None
        raise bf.error(f"{bf.label(4)}: entry {e.entry} has {e.what} {e.found}, which {bounds[e.what]}") from None
    return coeffs, scan


def zkey_sha(bf: BinFile) -> bytes:
    """A cheap identity of a zkey for caches (32 bytes of blake2b), not an integrity hash.

    Hashes the magic and version, then for each section in id order: its id,
    its size and its bytes when they are at most 2*SHA_SAMPLE, else its first and
    last SHA_SAMPLE bytes.  Sections 1 and 2 (protocol, the header with delta,
    which every contribution changes) are always hashed whole, so two keys of
    one circuit differ; two keys equal everywhere except deep inside a large
    section would collide, which a cache of keys read from files never meets.
    """
    h = hashlib.blake2b(digest_size=32)
    h.update(bf.magic.encode() + struct.pack("<I", bf.version))
    for sec in sorted(bf.records, key=lambda s: (s.id, s.index)):
        h.update(struct.pack("<IQ", sec.id, sec.size))
        h.update(_sample(bf, sec))
    return h.digest()


def _sample(bf: BinFile, sec: Section) -> bytes:
    if sec.size <= 2 * SHA_SAMPLE:
        return bf.bytes(sec)
    return bf.bytes(sec, 0, SHA_SAMPLE) + bf.bytes(sec, sec.size - SHA_SAMPLE, SHA_SAMPLE)


def mpc_summary(key: ZKey) -> tuple[bytes, int] | None:
    """(circuit hash, number of contributions) from section 10, or None when it is absent or short."""
    if key.mpc is None or key.mpc.shape[0] < 68:
        return None
    raw = key.mpc[:68].tobytes()
    return raw[:64], struct.unpack_from("<I", raw, 64)[0]


def fresh_mpc_section() -> bytes:
    """Section 10 for a key with no ceremony record: a zero circuit hash and 0 contributions.

    snarkjs's circuit hash needs the ptau's tau powers, which a zkey does not
    hold, so it is left zero.  `snarkjs zkey export verificationkey` and
    `snarkjs groth16 prove` never read section 10 (checked with snarkjs 0.7.6 in
    tests/test_formats.py); only `zkey verify` compares the hash.
    """
    return bytes(64) + struct.pack("<I", 0)


def _header_bytes(key: ZKey) -> bytes:
    c = key.curve
    pts = [key.alpha1, key.beta1, key.beta2, key.gamma2, key.delta1, key.delta2]
    shapes = [(2,), (2,), (2, 2), (2, 2), (2,), (2, 2)]
    for p, s in zip(pts, shapes):
        if np.shape(p) != (*s, c.q_limbs64):
            raise ValueError(f"zkey header point has shape {np.shape(p)}, expected {(*s, c.q_limbs64)}")
    return (
        struct.pack("<I", c.n8q) + c.q.to_bytes(c.n8q, "little")
        + struct.pack("<I", N8R) + c.r.to_bytes(N8R, "little")
        + struct.pack("<III", key.n_vars, key.n_public, key.domain_size)
        + b"".join(np.ascontiguousarray(p, dtype="<u8").tobytes() for p in pts)
    )


def write_zkey(path, key: ZKey, mpc_section: bytes | None = None) -> None:
    """Write a Groth16 zkey in snarkjs's layout: sections 1..10 ascending, as `zkey contribute` does.

    A key read from a file remembers its section order (`section_order`) and
    its section 10 (`mpc`), so read -> write reproduces the file byte for byte.
    Section 10 is `mpc_section` when given, else the key's, else `fresh_mpc_section()`.
    """
    lq = key.curve.q_limbs64
    expect = {
        3: (key.ic, (key.n_public + 1, 2, lq)),
        5: (key.a, (key.n_vars, 2, lq)),
        6: (key.b1, (key.n_vars, 2, lq)),
        7: (key.b2, (key.n_vars, 2, 2, lq)),
        8: (key.c, (key.n_vars - key.n_public - 1, 2, lq)),
        9: (key.h, (key.domain_size, 2, lq)),
    }
    for sid, (arr, shape) in expect.items():
        if np.shape(arr) != shape:
            raise ValueError(f"zkey section {sid} ({SECTION_NAMES[sid]}) has shape {np.shape(arr)}, expected {shape}")
    coeffs = np.asarray(key.coeffs)
    if coeffs.dtype != COEFF_DTYPE or coeffs.ndim != 1:
        raise ValueError(f"zkey coeffs must be a 1-d array of COEFF_DTYPE, got {coeffs.dtype} {coeffs.shape}")
    if mpc_section is None:
        mpc_section = key.mpc.tobytes() if key.mpc is not None else fresh_mpc_section()
    sections = {
        1: [struct.pack("<I", GROTH16)],
        2: [_header_bytes(key)],
        4: [struct.pack("<I", coeffs.shape[0]), coeffs],
        10: [bytes(mpc_section)],
        **{sid: [arr] for sid, (arr, _) in expect.items()},
    }
    order = list(range(1, 11))
    if key.section_order is not None and sorted(key.section_order) == order:
        order = list(key.section_order)
    write_binfile(path, "zkey", key.version if key.version in (1, 2) else 1, [(sid, sections[sid]) for sid in order])
