"""The witness calculator's error types, all `engine.errors.WitnessGenerationError`s.

Each also derives from the engine type a caller may already catch for that
kind of problem (a bad input file, a curve mismatch).
"""
from __future__ import annotations

from engine.errors import CurveMismatchError, InputFileError, MismatchError, WitnessGenerationError


class WitnessInputError(WitnessGenerationError, InputFileError):
    """An input file or dict that does not fit the circuit (missing, unknown, malformed signals)."""


class CircuitFileError(WitnessGenerationError, InputFileError):
    """circuit.wasm is missing, not WebAssembly, or not a circom 2 witness module."""


class CircuitAssertionError(WitnessGenerationError):
    """The circuit's own checks (assert, ===) failed for these inputs."""


class CircuitPrimeError(WitnessGenerationError, CurveMismatchError):
    """circuit.wasm was compiled for another prime than the key it is used with."""


class CircuitMismatchError(WitnessGenerationError, MismatchError):
    """circuit.wasm computes a witness of another size than the key's wires: the wasm of another circuit."""
