"""Witnesses from circom's circuit.wasm, computed in-process with wasmtime.

The public API of the witness calculator: `WasmCircuit.load(path)` compiles
a circom 2 circuit.wasm once per process (and keeps the machine code on disk,
engine.witness.modcache, so the next process does not compile it either);
`calculate(inputs)` returns the witness as the engine's (n, n8/8) uint64
buffer of plain values.  `compute_witness` and `parse_inputs` are the
one-call forms.  The wasm protocol lives in engine.witness.runtime, input.json
rules in engine.witness.inputs.

Typical use (the prove command, the synthesis pool):

    circuit = WasmCircuit.load("circuit_js/circuit.wasm")
    circuit.check_prime(zkey.curve.r, zkey.path)   # a clear error for a wasm of another curve
    witness = circuit.calculate(parse_inputs("input.json"))
"""
from __future__ import annotations

import atexit
import gc
import os
import stat
import threading
import weakref
from typing import Any, ClassVar

import numpy as np
import wasmtime

from engine.algebra.curves import Curve, curve_by_scalar_prime
from engine.errors import file_error
from engine.witness import modcache
from engine.witness.errors import (
    CircuitAssertionError,
    CircuitFileError,
    CircuitMismatchError,
    CircuitPrimeError,
    WitnessInputError,
)
from engine.witness.inputs import normalise_inputs, parse_inputs
from engine.witness.runtime import (
    REQUIRED_EXPORTS,
    RUNTIME_IMPORTS,
    CircuitInstance,
    fnv1a64,
    settings,
    wasm_engine,
)

__all__ = [
    "WasmCircuit",
    "compute_witness",
    "parse_inputs",
    "fnv1a64",
    "CircuitFileError",
    "CircuitAssertionError",
    "CircuitMismatchError",
    "CircuitPrimeError",
    "WitnessInputError",
]


class WasmCircuit:
    """One compiled circuit.wasm: prime, sizes, and `calculate(inputs) -> witness`.

    Get instances with `WasmCircuit.load(path)`: it returns the same object for
    an unchanged file (same path, mtime and size) within a process.
    `calculate` is thread-safe, one witness at a time per circuit; use
    processes for parallelism.  A pickle carries the path only: the receiving
    process loads the circuit from its own caches.
    """

    _cache: ClassVar[dict[str, tuple[tuple[int, int], "WasmCircuit"]]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()
    _live: ClassVar["weakref.WeakSet[WasmCircuit]"] = weakref.WeakSet()  # for _release_at_exit

    path: str
    prime: int
    n32: int  # 32-bit words per field element
    n8: int  # bytes per field element
    n_witness: int
    n_inputs: int | None  # input values the circuit takes (None when the module does not say)
    curve: Curve | None
    version: tuple[int, int, int]  # circom's version, as the module reports it
    compiler: str  # "cranelift" (optimised) or "winch" (baseline, from load(quick=True))
    from_disk_cache: bool  # the compiled module came from engine.witness.modcache

    @classmethod
    def load(cls, path: str | os.PathLike, *, quick: bool = False) -> "WasmCircuit":
        """The circuit at `path`, compiled once per process (and cached on disk).

        quick=True is for one-shot use (the witness command): when no optimised
        build is cached, compile with the baseline compiler, which is about 4x
        quicker to compile and about 2x slower to run.
        """
        label = os.fsdecode(path)  # bytes paths too, named as text
        try:
            st = os.stat(label)
        except (OSError, ValueError) as exc:
            raise file_error(label, exc, "circuit.wasm", CircuitFileError) from None
        key, stamp = os.path.realpath(label), (st.st_mtime_ns, st.st_size)
        with cls._cache_lock:
            hit = cls._cache.get(key)
            if hit is not None and hit[0] == stamp and (quick or hit[1].compiler == "cranelift"):
                return hit[1]
            circuit = cls(label, _read_wasm(label), quick=quick)
            cls._cache[key] = (stamp, circuit)
            return circuit

    def __init__(self, path: str, wasm: bytes, *, quick: bool = False):
        """Compile (or map from the disk cache) and read the circuit's constants; use `load`."""
        self.path = path
        self._abspath = os.path.abspath(path)  # what a pickle carries to a process with another cwd
        try:
            self.module, self.compiler, self.from_disk_cache = _compiled(wasm, quick)
        except wasmtime.WasmtimeError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "rejected by wasmtime"
            raise CircuitFileError(path, f"not a valid WebAssembly module ({first})") from None
        self._check_interface()
        self._lock = threading.Lock()
        self._rt: CircuitInstance | None = None
        WasmCircuit._live.add(self)
        self._input_names: list[str] | None | bool = False  # False: not looked up yet
        rt = self._runtime()
        self.version = rt.version()
        if self.version[0] != 2:
            raise CircuitFileError(path, f"built by circom {self.version[0]}; only circom 2 modules are supported")
        self.n32 = rt.call("getFieldNumLen32")
        if not 0 < self.n32 <= 64 or self.n32 % 2:
            raise CircuitFileError(path, f"reports {self.n32} 32-bit words per field element")
        self.n8 = 4 * self.n32
        self.prime = rt.raw_prime(self.n32)
        self.n_witness = rt.call("getWitnessSize")
        self.n_inputs = rt.call("getInputSize") if rt.has("getInputSize") else None
        self.curve = curve_by_scalar_prime(self.prime)

    def _check_interface(self) -> None:
        exports = {e.name for e in self.module.exports}
        missing = [name for name in REQUIRED_EXPORTS if name not in exports]
        if missing:
            raise CircuitFileError(self.path, f"not a circom witness module (no export {missing[0]!r})")
        for imp in self.module.imports:
            if imp.module != "runtime" or imp.name not in RUNTIME_IMPORTS:
                raise CircuitFileError(
                    self.path, f"imports {imp.module}.{imp.name}, which circom 2 witness modules do not use"
                )

    def _runtime(self) -> CircuitInstance:
        if self._rt is None:
            if self.module is None:  # closed at exit (_release_at_exit): compiled again (or mapped from the cache)
                self.module, self.compiler, self.from_disk_cache = _compiled(_read_wasm(self._abspath),
                                                                             self.compiler == "winch")
            self._rt = CircuitInstance(self)
        return self._rt

    def __reduce__(self):
        return (WasmCircuit.load, (self._abspath,))

    def __repr__(self) -> str:
        field = self.curve.name if self.curve else f"prime {self.prime:#x}"
        return f"WasmCircuit({self.path!r}, {field}, n_witness={self.n_witness})"

    def calculate(self, inputs: Any, *, source: str | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """The witness for `inputs` (a dict as in input.json, or a path to one): (n_witness, n8/8) uint64.

        `source` names the inputs in error messages (default: the file name, or "inputs").
        `out`, a writeable C-contiguous (n_witness, n8/8) uint64 array (say, over shared
        memory), receives the witness instead of a new array and is returned.
        """
        shape = (self.n_witness, self.n8 // 8)
        if out is not None and (
            out.shape != shape or out.dtype != np.dtype("<u8") or not out.flags.c_contiguous or not out.flags.writeable
        ):
            raise ValueError(f"out must be a writeable C-contiguous {shape} uint64 array, got {out.shape} {out.dtype}")
        if isinstance(inputs, (str, os.PathLike)):
            source = source or os.fspath(inputs)
            parsed = parse_inputs(inputs)
        else:
            source = source or "inputs"
            parsed = normalise_inputs(inputs, source)
        with self._lock:
            try:
                return self._runtime().calculate(parsed, source, out)
            except BaseException:
                self._drop_runtime()  # never reuse an instance that stopped half-way
                raise

    def _drop_runtime(self) -> None:
        rt, self._rt = self._rt, None
        if rt is not None:
            rt.close()

    def check_prime(self, prime: int, against: str = "the proving key") -> None:
        """Raise CircuitPrimeError when this circuit's field is not `prime` (the key's r)."""
        if prime == self.prime:
            return
        mine = self.curve.name if self.curve else f"prime {self.prime:#x}"
        other = curve_by_scalar_prime(prime)
        theirs = other.name if other else f"prime {prime:#x}"
        hint = f" (compile it with circom --prime {other.name})" if other else ""
        raise CircuitPrimeError(f"{self.path}: compiled for {mine}, but {against} is for {theirs}{hint}")

    def check_key(self, zkey, against: str | None = None) -> None:
        """check_prime, then the witness's size against the key's wires: the wasm of another circuit of the same
        field was refused only after its calculation, as input.json's fault ("input.json: has 4 values"), and an
        Engine loaded it with the key, to fail every proof.  `against` names the key (default: its path)."""
        name = against or zkey.path or "the proving key"
        self.check_prime(int(zkey.curve.r), name)
        if self.n_witness != zkey.n_vars:
            raise CircuitMismatchError(f"{self.path}: computes {self.n_witness} witness values, but {name} is a key "
                                       f"of {zkey.n_vars} wires (the circuit.wasm of another circuit, or of another "
                                       "circom --O level?)")

    def input_names(self) -> list[str] | None:
        """The circuit's input signal names when circom's .sym file sits next to the wasm, else None."""
        with self._lock:
            return self._runtime().input_names()


@atexit.register
def _release_at_exit() -> None:
    """Free every circuit's wasmtime store while the interpreter is whole.  A store, its instances and the
    Python callbacks they call form cycles that only the collector frees; left to the interpreter's teardown
    they were freed after the modules their finalizers call were gone ("Exception ignored ... 'NoneType' object
    is not callable" at the end of a run), with the circuits' compiled modules and the process's engines (the
    same lines from their finalizers).  A circuit used after this is compiled and given a store again."""
    with WasmCircuit._cache_lock:
        WasmCircuit._cache.clear()
    for circuit in list(WasmCircuit._live):
        with circuit._lock:  # (a calculation on another thread ends first)
            circuit._drop_runtime()
            module, circuit.module = circuit.module, None
            if module is not None:
                module.close()  # the compiled code, before its engine
    gc.collect()
    from engine.witness.runtime import release_engines  # noqa: PLC0415

    release_engines()


def compute_witness(wasm_path: str | os.PathLike, inputs: Any) -> np.ndarray:
    """The witness of circuit.wasm for `inputs` (a dict, or the path of an input.json)."""
    return WasmCircuit.load(wasm_path).calculate(inputs)


def _compiled(wasm: bytes, quick: bool) -> tuple[wasmtime.Module, str, bool]:
    """(module, compiler, from disk): a cached optimised build, else (quick) a baseline one, else compile."""
    engine, _ = wasm_engine("cranelift")
    module = modcache.lookup(engine, wasm, settings("cranelift"))
    if module is not None:
        return module, "cranelift", True
    if quick:
        try:
            fast_engine, _ = wasm_engine("winch")
            module = modcache.lookup(fast_engine, wasm, settings("winch"))
            if module is not None:
                return module, "winch", True
            return modcache.compile_and_store(fast_engine, wasm, settings("winch")), "winch", False
        except (wasmtime.WasmtimeError, AttributeError):
            pass  # no baseline compiler in this wasmtime (or it refused the module): optimise
    return modcache.compile_and_store(engine, wasm, settings("cranelift")), "cranelift", False


def _read_wasm(path: str) -> bytes:
    """The file's bytes; a device is refused and a pipe read past its first 4 bytes only where they are wasm's
    magic: /dev/zero or `<(yes)`, read whole first, took all the memory there was."""
    try:
        with open(path, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            data = f.read(4) if stat.S_ISREG(mode) or stat.S_ISFIFO(mode) else None
            if data == b"\0asm":
                data += f.read()
    except (OSError, ValueError) as exc:
        raise file_error(path, exc, "circuit.wasm", CircuitFileError) from None
    if data is None:
        raise CircuitFileError(path, "is not a file or a pipe (a device or a socket)")
    if data[:4] != b"\0asm":
        raise CircuitFileError(
            path, "not a WebAssembly file (no \\0asm magic); give circom's <circuit>_js/<circuit>.wasm"
        )
    return data
