"""The engine's exception types.

Every error a user can cause has a type here and a one-line message that names
the input and the problem; the CLI prints `str(exc)` and exits non-zero, and
never shows a traceback for these.  Programming errors stay ordinary Python
exceptions (those are bugs, and the CLI reports them as such).
"""
from __future__ import annotations

import errno
import os


class EngineError(Exception):
    """Base of every error the engine reports to a user."""

    exit_code = 2


class InputFileError(EngineError):
    """A file that is missing, unreadable, truncated or malformed."""

    def __init__(self, path: str | os.PathLike | None, problem: str):
        self.path = None if path is None else os.fsdecode(path)  # a bytes path reads as text in messages
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path else problem)


class TimelineWriteError(InputFileError):
    """The timeline file could not be written (a full disk): raised as the Engine closes, after its jobs ended
    well.  `results`: what `prove_files` made by then (the proofs, which the CLI still writes), or None."""

    results: list | None = None


def file_error(path, exc: OSError | ValueError, what: str = "a file", kind: type | None = None) -> Exception:
    """The one-line error for an input file the OS would not give us (missing, a directory, ...),
    as `kind` (an InputFileError subclass; InputFileError itself by default).  A ValueError is Python's
    refusal of a path with a NUL character (no file has one); any other ValueError is returned as it is."""
    kind = kind or InputFileError
    if isinstance(exc, ValueError):
        return kind(path, "is not a path: it holds a NUL character") if "\0" in os.fsdecode(path) else exc
    if isinstance(exc, FileNotFoundError):
        return kind(path, "no such file")
    if isinstance(exc, IsADirectoryError):
        return kind(path, f"is a directory, not {what}")
    if isinstance(exc, PermissionError):
        return kind(path, "permission denied")
    return kind(path, f"cannot read: {exc.strerror or exc}")


def write_error(path, exc: OSError) -> "InputFileError":
    """The one-line error for an output file the OS would not let us write."""
    if isinstance(exc, IsADirectoryError):
        return InputFileError(path, "is a directory, cannot write a file there")
    return InputFileError(path, f"cannot write: {exc.strerror or exc}")


def start_problem(exc: Exception) -> str:
    """What stopped an engine's start, with the limit to raise where it was a process limit of this machine."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE:
        import resource  # noqa: PLC0415 - POSIX only, and only here

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        text += f" (this process may hold {soft} open files: raise the limit, ulimit -n, or use fewer workers)"
    return text


class FormatError(InputFileError):
    """The bytes of a file do not follow its format (magic, version, sections, sizes)."""


class MismatchError(EngineError):
    """Inputs that are each valid but do not belong together (witness of another circuit, ...)."""


class CurveMismatchError(MismatchError):
    """Inputs of different curves, or a curve an operation does not support."""


class UnreducedWitnessError(MismatchError):
    """A witness value not below the scalar field's modulus: the host's check, or the device's check
    of the upload (a GPU backend's; the host then skips its own pass), which knows only the row:
    `named` puts in the input's name once the caller has it."""

    def __init__(self, row: int, name: str = "witness"):
        self.row, self.name = int(row), name
        super().__init__(f"{name}: value {self.row} is not reduced modulo r")

    def named(self, name: str) -> "UnreducedWitnessError":
        return UnreducedWitnessError(self.row, name)

    def __reduce__(self):  # across processes (pools, Ray) with its fields, not its message as the row
        return UnreducedWitnessError, (self.row, self.name)


class UnsatisfiedWitnessError(EngineError):
    """The witness does not satisfy the circuit's constraints."""

    def __init__(self, message: str, constraint: int | None = None):
        self.constraint = constraint
        super().__init__(message)


class VerificationError(EngineError):
    """A proof failed the check that runs before it is returned or written."""

    exit_code = 1


class WitnessGenerationError(EngineError):
    """Computing a witness from circuit.wasm and inputs failed (bad input, failed assertion)."""


class BackendUnavailableError(EngineError):
    """The requested backend cannot run here (for example, --backend gpu with no CUDA device)."""


class DeviceError(EngineError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


class DeviceOutOfMemoryError(DeviceError):
    """The device could not hold a buffer; the message says how much was asked for."""


class KernelCompileError(DeviceError):
    """NVRTC rejected a kernel source; `log` holds the compiler's output."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(message + (f"\n{log}" if log else ""))


class ConfigError(EngineError):
    """A configuration value (TOML file, flag or environment variable) that is missing, malformed or out of range.
    Here, not in engine/config.py (which re-exports it), so that the flags' and variables' readers, which do not
    load msgspec, raise it without importing the configuration (an import circle)."""


class BudgetError(EngineError):
    """A job asks for more of a budget (VRAM, host memory) than the whole budget holds."""


class EngineClosedError(EngineError):
    """The engine was shut down (or not started) when a job was submitted."""


class EngineStartError(EngineError):
    """The engine could not start (its backend, device threads or worker processes); nothing is left running."""


class EngineLostError(EngineError):
    """An engine of a cluster (a Ray actor, its process or its node) died while it held a job, and the
    retry on another engine died too, or no engine was left to retry on."""
