"""Readers and writers for the circom/snarkjs files (spec §1-§4, §6).

Readers memory-map the file and return numpy views over its sections: no
per-element Python work at load time.  Every problem with a file raises
`engine.errors.FormatError` (or `InputFileError` for a missing/unreadable
file) naming the path and the problem.  The container itself (magic,
version, section records) is `binfile`.

The names below load on first use (PEP 562), so importing one module of this
package (the key cache's, say) does not import every reader and numpy.
"""
from __future__ import annotations

import importlib

_WHERE = {
    "R1CS": "r1cs", "LinearCombinations": "r1cs", "read_r1cs": "r1cs", "read_r1cs_header": "r1cs",
    "write_r1cs": "r1cs",
    "Witness": "wtns", "read_wtns": "wtns", "write_wtns": "wtns",
    "ZKey": "zkey", "COEFF_DTYPE": "zkey", "read_zkey": "zkey", "write_zkey": "zkey",
}
__all__ = list(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"engine.formats.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
