"""Readers and writers for the circom/snarkjs files (spec §1-§4, §6).

Readers memory-map the file and return numpy views over its sections: no
per-element Python work at load time.  Every problem with a file raises
`engine.errors.FormatError` (or `InputFileError` for a missing/unreadable
file) naming the path and the problem.  The container itself (magic,
version, section records) is `binfile`.
"""
from engine.formats.r1cs import R1CS, LinearCombinations, read_r1cs, read_r1cs_header, write_r1cs
from engine.formats.wtns import Witness, read_wtns, write_wtns
from engine.formats.zkey import COEFF_DTYPE, ZKey, read_zkey, write_zkey

__all__ = [
    "R1CS", "LinearCombinations", "read_r1cs", "read_r1cs_header", "write_r1cs",
    "Witness", "read_wtns", "write_wtns",
    "ZKey", "COEFF_DTYPE", "read_zkey", "write_zkey",
]
