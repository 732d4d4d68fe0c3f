"""`.wtns` witness files (spec §3): version 2, a header section and the plain values."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.algebra.curves import Curve, curve_by_scalar_prime
from engine.formats.binfile import open_binfile, write_binfile

SECTION_NAMES = {1: "header", 2: "values"}
N8 = 32  # bytes per value; both supported curves have a 32-byte scalar field
MAX_N8 = 64  # the widest field element whose prime an error names


@dataclass
class Witness:
    path: str | None
    prime: int  # the scalar field r written in the file
    curve: Curve | None  # the curve with that r, or None when no supported curve has it
    values: np.ndarray  # (nWitness, 4) uint64 plain values, w[0] = 1 (a view over the mapped file)
    values_offset: int = -1  # where the values start in the file (-1: not read from a file)


def read_wtns(path) -> Witness:
    """Map a .wtns and return its values as an (n, 4) uint64 view; header errors are FormatErrors.

    The prime is reported, not judged: the prover and the r1cs check compare it
    with their key.  A value section whose u64 size is wrong because circom's JS
    writer garbles sizes >= 2^32 (spec §3) is accepted when it is the last
    record and the file holds exactly nWitness*n8 bytes after its header.
    """
    bf = open_binfile(path, "wtns", min_version=2, max_version=2, names=SECTION_NAMES, lenient_last=2)
    cur = bf.cursor(bf.section(1))
    n8 = cur.u32("n8")
    if n8 == 0 or n8 % 8:
        raise bf.error(f"header: n8 = {n8} is not a whole number of 64-bit words")
    if n8 > MAX_N8:  # no field circom compiles for is this wide; its "prime" would fill the message
        raise bf.error(f"header: n8 = {n8} bytes per field element is not supported; "
                       f"only bn128 and bls12381 witnesses ({N8} bytes) are")
    prime = cur.bigint(n8, "the prime")
    n_witness = cur.u32("nWitness")
    cur.finish()
    curve = curve_by_scalar_prime(prime)
    if n8 != N8:
        raise bf.error(f"header: {n8}-byte field elements (prime {prime:#x}) are not supported; "
                       "only bn128 and bls12381 witnesses (32 bytes) are")
    sec = bf.section(2)
    need = n_witness * n8
    if sec.offset + min(sec.size, need) > bf.size:
        have = bf.size - sec.offset
        raise bf.error(f"truncated: {bf.label(2)} needs {min(sec.size, need)} bytes but the file ends after {have}")
    if sec.size != need:
        lenient = sec.index == len(bf.records) - 1 and sec.offset + need == bf.size
        if not lenient:
            raise bf.error(f"{bf.label(2)} has {sec.size} bytes but nWitness = {n_witness} needs {need}")
    if n_witness == 0:
        raise bf.error("nWitness = 0: a witness holds at least the constant-one wire")
    values = bf.array(sec, "<u8", n_witness * (n8 // 8), shape=(n_witness, n8 // 8))
    return Witness(bf.path, prime, curve, values, sec.offset)


def write_wtns(path, prime: int, values: np.ndarray) -> None:
    """Write version 2, two sections, byte-identical to snarkjs `wtns calculate`."""
    vals = np.ascontiguousarray(values, dtype="<u8")
    if vals.ndim != 2 or vals.shape[1] != N8 // 8:
        raise ValueError(f"witness values must be (n, {N8 // 8}) uint64, got {vals.shape}")
    header = N8.to_bytes(4, "little") + prime.to_bytes(N8, "little") + vals.shape[0].to_bytes(4, "little")
    write_binfile(path, "wtns", 2, [(1, [header]), (2, [vals])])
