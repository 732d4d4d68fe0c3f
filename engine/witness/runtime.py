"""One running instance of a circom 2 circuit.wasm in wasmtime, and the protocol to drive it.

circom's module keeps a "shared RW memory" of n32 32-bit words: the host
writes an input value there and calls setInputSignal(hash hi, hash lo,
index) (names hashed with 64-bit FNV-1a); setting the last input runs the
circuit; getWitness(i) then puts value i there.  When the circuit fails it
calls the imported runtime.exceptionHandler(code) (4: an assertion) after
runtime.printErrorMessage made the location readable through getMessageChar.

Every call from Python into wasmtime costs tens of microseconds, much more
than the work it does, so the per-value loops run in a tiny helper module
(`HELPER_WAT`) linked to the circuit's exports: one call sets a whole signal,
one call copies a block of witness values into the helper's memory, which we
copy out with one memmove.
"""
from __future__ import annotations

import ctypes
import logging
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
import wasmtime

from engine.errors import WitnessGenerationError
from engine.witness.errors import CircuitAssertionError, CircuitFileError, WitnessInputError
from engine.witness.inputs import Inputs, shown_name

log = logging.getLogger("engine.witness.calculator")

REQUIRED_EXPORTS = (
    "memory", "getVersion", "getFieldNumLen32", "getRawPrime", "readSharedRWMemory",
    "writeSharedRWMemory", "init", "setInputSignal", "getWitnessSize", "getWitness",
)
RUNTIME_IMPORTS = ("exceptionHandler", "printErrorMessage", "writeBufferMessage", "showSharedRWMemory")

# runtime.exceptionHandler codes, as circom's generated JS names them
CIRCOM_ERRORS = {
    1: "signal not found",
    2: "too many signals set",
    3: "signal already set",
    4: "assertion failed",
    5: "not enough memory",
    6: "input signal array access exceeds the size",
    7: "out of bounds array access",
}

MESSAGE_MAX = 10_000  # characters of one circuit message read (the helper's $msg page holds 64 KiB)
READOUT_BLOCK = 1 << 20  # witness values per copy: bounds the helper's memory to 32 MiB on our curves

HELPER_WAT = r"""
(module
  (import "c" "memory" (memory $cm 0))
  (import "c" "getWitness" (func $getWitness (param i32)))
  (import "c" "readSharedRWMemory" (func $read (param i32) (result i32)))
  (import "c" "writeSharedRWMemory" (func $write (param i32 i32)))
  (import "c" "setInputSignal" (func $set (param i32 i32 i32)))
  (import "c" "getMessageChar" (func $msgChar (result i32)))
  (memory $own (export "buffer") 1)
  (memory $msg (export "messages") 1)
  (global $done (export "done") (mut i32) (i32.const 0))

  ;; the circuit's message (log() text, an error's place): getMessageChar until 0 or $max chars, into $msg from
  ;; 0; returns its length.  One call from Python instead of one a character: a circuit that logs much took ~50x
  ;; snarkjs's time, nearly all of it in those calls.  $msg is apart from $own, which holds the input values
  ;; still to be set while the circuit runs and logs.
  (func (export "readMessage") (param $max i32) (result i32)
    (local $n i32) (local $c i32)
    (block $stop (loop $next
      (br_if $stop (i32.ge_u (local.get $n) (local.get $max)))
      (local.set $c (call $msgChar))
      (br_if $stop (i32.eqz (local.get $c)))
      (i32.store8 $msg (local.get $n) (local.get $c))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $next)))
    (local.get $n))

  ;; the shared memory's $n32 words (a logged value) into $msg from 0
  (func (export "readShared") (param $n32 i32)
    (local $j i32)
    (block $stop (loop $next
      (br_if $stop (i32.ge_u (local.get $j) (local.get $n32)))
      (i32.store $msg (i32.shl (local.get $j) (i32.const 2)) (call $read (local.get $j)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $next))))

  ;; witness values [first, first+n) into $own from offset 0: n32 words each,
  ;; copied from the circuit's shared memory at $src after every getWitness
  (func (export "copyWitness") (param $first i32) (param $n i32) (param $n32 i32) (param $src i32)
    (local $i i32) (local $end i32) (local $p i32) (local $n8 i32)
    (local.set $n8 (i32.shl (local.get $n32) (i32.const 2)))
    (local.set $i (local.get $first))
    (local.set $end (i32.add (local.get $first) (local.get $n)))
    (block $stop (loop $next
      (br_if $stop (i32.ge_u (local.get $i) (local.get $end)))
      (call $getWitness (local.get $i))
      (memory.copy $own $cm (local.get $p) (local.get $src) (local.get $n8))
      (local.set $p (i32.add (local.get $p) (local.get $n8)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next))))

  ;; the same through readSharedRWMemory, for modules without getSharedRWMemoryStart
  (func (export "readWitness") (param $first i32) (param $n i32) (param $n32 i32)
    (local $i i32) (local $end i32) (local $j i32) (local $p i32)
    (local.set $i (local.get $first))
    (local.set $end (i32.add (local.get $first) (local.get $n)))
    (block $stop (loop $next
      (br_if $stop (i32.ge_u (local.get $i) (local.get $end)))
      (call $getWitness (local.get $i))
      (local.set $j (i32.const 0))
      (block $wstop (loop $word
        (br_if $wstop (i32.ge_u (local.get $j) (local.get $n32)))
        (i32.store $own (local.get $p) (call $read (local.get $j)))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $word)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next))))

  ;; values [0, n) of one input signal, n32 words each from $own at $p;
  ;; $done counts the values set, so a failure can name the index
  (func (export "setSignal") (param $hm i32) (param $hl i32) (param $n i32) (param $n32 i32) (param $p i32)
    (local $i i32) (local $j i32)
    (global.set $done (i32.const 0))
    (block $stop (loop $next
      (br_if $stop (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $j (i32.const 0))
      (block $wstop (loop $word
        (br_if $wstop (i32.ge_u (local.get $j) (local.get $n32)))
        (call $write (local.get $j) (i32.load $own (local.get $p)))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $word)))
      (call $set (local.get $hm) (local.get $hl) (local.get $i))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (global.set $done (local.get $i))
      (br $next))))
)
"""

# The two compilers: Cranelift optimises (the default: fast witnesses), Winch is
# wasmtime's baseline compiler (about 4x quicker to compile, about 2x slower to
# run), for one-shot use when no optimised build is cached.  The settings
# string is part of the disk-cache key.
SETTINGS = {"cranelift": "cranelift_opt_level=speed", "winch": "strategy=winch"}

# By default wasmtime reserves 4 GiB of address space (and a guard region) for each linear memory, so
# that compiled code needs no bounds checks.  Under an address-space limit (`ulimit -v`, RLIMIT_AS: common
# on HPC batch systems) that reservation fails and no circuit could be instantiated ("mmap failed to
# reserve 0x104000000 bytes").  There, memories are sized to what they hold and grown by moving, with
# bounds-checked code (a separate disk-cache entry: `settings`).  BOUNDED_MEMORY_BELOW is the limit below
# which that mode is taken: room for a few default reservations beside the interpreter's own mappings.
BOUNDED_MEMORY_BELOW = 16 << 30
GROWTH_RESERVE = 64 << 20  # address space a bounded memory may grow into before it has to move


def address_space_limit() -> int | None:
    """This process's RLIMIT_AS in bytes, None where there is none (or no way to ask)."""
    try:
        import resource  # noqa: PLC0415 - POSIX only

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def bounded_memory() -> bool:
    limit = address_space_limit()
    return limit is not None and limit < BOUNDED_MEMORY_BELOW


def settings(compiler: str) -> str:
    """The compile settings of `compiler` in this process, as the module disk cache keys them."""
    return SETTINGS[compiler] + (";bounded_memory" if bounded_memory() else "")


_PROCESS_LOCK = threading.Lock()
_PROCESS: dict[str, tuple[wasmtime.Engine, wasmtime.Module]] = {}


def wasm_engine(compiler: str = "cranelift") -> tuple[wasmtime.Engine, wasmtime.Module]:
    """This process's wasmtime engine for `compiler` and the helper module compiled by it.

    Raises wasmtime.WasmtimeError (or AttributeError) when this wasmtime cannot use Winch.
    """
    with _PROCESS_LOCK:
        if compiler not in _PROCESS:
            config = wasmtime.Config()
            config.wasm_multi_memory = True
            config.wasm_bulk_memory = True
            if compiler == "winch":
                _use_winch(config)
            else:
                config.cranelift_opt_level = "speed"
            if bounded_memory():
                config.memory_reservation = 0
                config.memory_guard_size = 0
                config.memory_reservation_for_growth = GROWTH_RESERVE
            engine = wasmtime.Engine(config)
            _PROCESS[compiler] = (engine, wasmtime.Module(engine, HELPER_WAT))
        return _PROCESS[compiler]


def release_engines() -> None:
    """Close this process's engines and helper modules (at exit, after every circuit's store and module): left to
    the interpreter's teardown, their finalizers ran after wasmtime's own module was cleared ("Exception ignored
    in: Managed.__del__ ... 'NoneType' object is not callable" at the end of a pytest run)."""
    with _PROCESS_LOCK:
        for engine, helper in _PROCESS.values():
            helper.close()
            engine.close()
        _PROCESS.clear()


def _use_winch(config: wasmtime.Config) -> None:
    """wasmtime-py's Config.strategy names only auto and cranelift; the C API's WASMTIME_STRATEGY_WINCH is 2."""
    from wasmtime import _ffi  # noqa: PLC0415

    _ffi.wasmtime_config_strategy_set(config.ptr(), 2)


def _no_message(store) -> wasmtime.Func:
    """getMessageChar for a module without one: no message (as before: "")."""
    return wasmtime.Func(store, wasmtime.FuncType([], [wasmtime.ValType.i32()]), lambda: 0)


def fnv1a64(name: str) -> int:
    """64-bit FNV-1a over the UTF-16 code units of `name`, as circom hashes signal names."""
    h = 0xCBF29CE484222325
    for unit in memoryview(name.encode("utf-16-le")).cast("H"):
        h = ((h ^ unit) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _i32(u: int) -> int:
    u &= 0xFFFFFFFF
    return u - (1 << 32) if u >= 1 << 31 else u


class _CircomTrap(Exception):
    """Raised by our exceptionHandler import; wasmtime re-raises it from the call into wasm."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class CircuitInstance:
    """One wasmtime Store with an instance of the circuit and of the helper.

    `circuit` is the engine.witness.calculator.WasmCircuit it belongs to (path,
    module, sizes); an instance that failed half-way is dropped by the caller.
    """

    def __init__(self, circuit):
        self.circuit = circuit
        engine, helper = wasm_engine(circuit.compiler)
        self.store = store = wasmtime.Store(engine)
        self.errors: list[str] = []
        self.log_line = ""
        handlers = {
            "exceptionHandler": self._on_exception,
            "printErrorMessage": self._on_error_message,
            "writeBufferMessage": self._on_buffer_message,
            "showSharedRWMemory": self._on_show_memory,
        }
        imports = [
            wasmtime.Func(store, imp.type, handlers[imp.name], access_caller=True) for imp in circuit.module.imports
        ]
        try:
            instance = wasmtime.Instance(store, circuit.module, imports)
            self.ex = ex = instance.exports(store)
            link = [ex[n] for n in ("memory", "getWitness", "readSharedRWMemory", "writeSharedRWMemory", "setInputSignal")]
            link.append(ex["getMessageChar"] if "getMessageChar" in ex else _no_message(store))
            hx = wasmtime.Instance(store, helper, link).exports(store)
        except (wasmtime.WasmtimeError, wasmtime.Trap) as exc:
            if "mmap failed" in str(exc):  # the OS's refusal, not the module's fault
                limit = address_space_limit()
                where = f"the address-space limit (ulimit -v) is {limit >> 20} MiB" if limit else "no limit is set"
                raise WitnessGenerationError(f"{circuit.path}: cannot run: the OS refused wasmtime the memory for "
                                             f"the circuit ({_first_line(exc)}; {where})") from None
            raise CircuitFileError(circuit.path,
                                   f"cannot be instantiated as a circom module ({_first_line(exc)})") from None
        self.buffer: wasmtime.Memory = hx["buffer"]
        self.messages: wasmtime.Memory = hx["messages"]
        self.read_message, self.read_shared = hx["readMessage"], hx["readShared"]
        self.done: wasmtime.Global = hx["done"]
        self.copy_witness, self.read_witness, self.set_signal = hx["copyWitness"], hx["readWitness"], hx["setSignal"]
        self.shared_start = self.call("getSharedRWMemoryStart") if self.has("getSharedRWMemoryStart") else None

    def has(self, name: str) -> bool:
        return name in self.ex

    def call(self, name: str, *args: int) -> Any:
        return self.ex[name](self.store, *args)

    def version(self) -> tuple[int, int, int]:
        parts = [self.call(n) if self.has(n) else 0 for n in ("getVersion", "getMinorVersion", "getPatchVersion")]
        return (parts[0], parts[1], parts[2])

    def raw_prime(self, n32: int) -> int:
        self.call("getRawPrime")
        return self._shared_value(self.store, n32)

    def _shared_value(self, store, n32: int) -> int:
        read = self.ex["readSharedRWMemory"]
        return sum((read(store, j) & 0xFFFFFFFF) << (32 * j) for j in range(n32))

    def signal_size(self, name: str) -> int:
        h = fnv1a64(name)
        return self.call("getInputSignalSize", _i32(h >> 32), _i32(h))

    # ---- host functions (the circuit's imports)
    def _on_exception(self, caller, code: int) -> None:
        raise _CircomTrap(code)

    def _message(self, caller) -> str:
        n = self.read_message(caller, MESSAGE_MAX)
        return self.messages.read(caller, 0, n).decode("latin-1") if n else ""

    def _on_error_message(self, caller) -> None:
        self.errors.append(self._message(caller))

    def _on_buffer_message(self, caller) -> None:
        msg = self._message(caller)
        if msg == "\n":  # circom's log() ends every call with a lone newline
            log.info("%s: log: %s", self.circuit.path, self.log_line)
            self.log_line = ""
        else:
            self.log_line = f"{self.log_line} {msg}" if self.log_line else msg

    def _on_show_memory(self, caller) -> None:
        n32 = self.circuit.n32
        self.read_shared(caller, n32)
        value = str(int.from_bytes(self.messages.read(caller, 0, 4 * n32), "little"))
        _, minor, patch = self.circuit.version
        if minor < 1 and patch < 7:  # circom < 2.0.7: each log() value is a line (no writeBufferMessage ends it),
            log.info("%s: log: %s", self.circuit.path, value)  # as circom_runtime prints it; they were lost
            return
        self.log_line = f"{self.log_line} {value}" if self.log_line else value

    # ---- one witness
    def close(self) -> None:
        """Free the store now: its host functions' callbacks (bound methods of this object) sit in wasmtime's own
        table until the store goes, so a dropped instance was never collected (one a failed witness, with all its
        wasm memory, for the process's life) and was freed only in the interpreter's teardown."""
        store, self.store = self.store, None
        close = getattr(store, "close", None)  # (wasmtime-py's Managed.close; an older one frees it when collected)
        if close is not None:
            close()

    def calculate(self, inputs: Inputs, source: str, out: np.ndarray | None) -> np.ndarray:
        c = self.circuit
        n8, n32 = c.n8, c.n32
        self.errors.clear()
        self.call("init", 0)
        plan = self._plan(inputs, source)
        p = c.prime
        raw = b"".join(v.to_bytes(n8, "little") for v in (x % p for _, _, _, values in plan for x in values))
        self._reserve(len(raw), source)
        self.buffer.write(self.store, raw, 0)
        offset = 0
        for name, hi, lo, values in plan:
            self._run(source, name, self.set_signal, hi, lo, len(values), n32, offset)
            offset += len(values) * n8
        if out is None:
            out = np.empty((c.n_witness, n8 // 8), dtype="<u8")
        block = max(1, min(c.n_witness, READOUT_BLOCK))
        self._reserve(block * n8, source)
        for first in range(0, c.n_witness, block):
            n = min(block, c.n_witness - first)
            if self.shared_start is not None:
                self._run(source, None, self.copy_witness, first, n, n32, self.shared_start)
            else:
                self._run(source, None, self.read_witness, first, n, n32)
            # data_ptr is fetched after the call: memory can move when it grows
            ctypes.memmove(out[first:].ctypes.data, self.buffer.data_ptr(self.store), n * n8)
        return out

    def _run(self, source: str, signal: str | None, func, *args: int) -> None:
        """Call into wasm; circom's failure codes and traps become engine errors."""
        try:
            func(self.store, *args)
        except _CircomTrap as trap:
            raise self._circom_error(trap.code, signal, source) from None
        except (wasmtime.WasmtimeError, wasmtime.Trap) as exc:
            raise WitnessGenerationError(
                f"{self.circuit.path}: the circuit's code trapped while computing the witness for {source}: "
                f"{_trap_reason(exc)}"
            ) from None

    def _plan(self, inputs: Inputs, source: str) -> list[tuple[str, int, int, list[int]]]:
        """Check every signal's name and length before setting any; (name, hash hi, hash lo, values)."""
        c = self.circuit
        sized = self.has("getInputSignalSize")
        plan, total = [], 0
        for name, values in inputs.items():
            h = fnv1a64(name)
            hi, lo = _i32(h >> 32), _i32(h)
            if sized:
                size = self.call("getInputSignalSize", hi, lo)
                if size == 0 and not values:  # a zero-size input (`in[0]`) given as []: nothing to set, as snarkjs
                    continue
                if size <= 0:  # circom's table also holds main's other signals, with size 0
                    raise WitnessInputError(source,
                                            f"unknown input signal '{shown_name(name)}'{self._known_hint()}")
                if size != len(values):
                    raise WitnessInputError(
                        source,
                        f"signal '{shown_name(name)}' expects {size} value{'s' * (size != 1)}, got {len(values)}"
                    )
            plan.append((name, hi, lo, values))
            total += len(values)
        if c.n_inputs is not None and total < c.n_inputs:
            raise WitnessInputError(source, self._missing_message(inputs, total))
        return plan

    def input_names(self) -> list[str] | None:
        """Names from circom's .sym that the module knows as inputs (cached on the circuit), or None.

        A bus input is named by its root (`l` for `l[0].p[1].x`), which the module knows with the size of the
        whole bus; where it does not, by the qualified names it does know.
        """
        c = self.circuit
        if c._input_names is False:
            groups = sym_main_signals(Path(c.path))
            if groups is None or not self.has("getInputSignalSize"):
                c._input_names = None
            else:
                names: list[str] = []
                for root, qualified in groups.items():
                    names.extend([root] if self.signal_size(root) > 0 else
                                 [n for n in qualified if n != root and self.signal_size(n) > 0])
                c._input_names = names
        return c._input_names

    def _known_hint(self) -> str:
        names = self.input_names()
        path = self.circuit.path
        return f" (the inputs of {path} are {_quoted(names)})" if names else f" ({path} has no such input)"

    def _missing_message(self, inputs: Inputs, total: int) -> str:
        names = self.input_names()
        missing = [n for n in names if _given(n, inputs) < self.signal_size(n)] if names else []
        path = self.circuit.path
        if missing:
            s = "s" * (len(missing) > 1)
            return f"missing input signal{s} {_quoted(missing)} (the inputs of {path} are {_quoted(names)})"
        given = _quoted(list(inputs)) if inputs else "none"
        return (
            f"missing input signals: {path} takes {self.circuit.n_inputs} input values "
            f"but {total} are given (given: {given})"
        )

    def _circom_error(self, code: int, signal: str | None, source: str) -> WitnessGenerationError:
        path = self.circuit.path
        what = CIRCOM_ERRORS.get(code, f"unknown error code {code}")
        where = "; ".join(line.strip() for line in self.errors if line.strip())
        if code == 4:
            return CircuitAssertionError(
                f"{path}: circuit assertion failed for {source}: {where or 'circom reported no location'}"
            )
        if signal is not None and code in (1, 2, 3, 6):
            index = self.done.value(self.store)
            return WitnessInputError(source, f"signal '{signal}' value {index}: {what}")
        detail = f": {where}" if where else ""
        return WitnessGenerationError(f"{path}: {what} while computing the witness for {source}{detail}")

    def _reserve(self, nbytes: int, source: str) -> None:
        have = self.buffer.data_len(self.store)
        if have < nbytes:
            try:
                self.buffer.grow(self.store, (nbytes - have + 0xFFFF) >> 16)
            except wasmtime.WasmtimeError:
                raise WitnessGenerationError(
                    f"{self.circuit.path}: cannot hold {nbytes} bytes of values for {source} in WebAssembly memory"
                ) from None


_SYM_LINE = re.compile(r"^-?\d+,-?\d+,(-?\d+),main\.(.+)$")
_INDEX = re.compile(r"\[\d+\]")
_ROOT = re.compile(r"[^.\[]*")


def sym_main_signals(wasm_path: Path) -> dict[str, list[str]] | None:
    """Main's signals from circom's .sym (beside the wasm or one folder up), or None.

    A .sym line is `label,wire,component,main.name[i]`; the main component's
    signals are those of the component of the first plain `main.<signal>` (a
    subcomponent's are `main.sub.x`), or of the first line when main has only
    bus signals (`main.b.x`), which may come before any plain one.  Returns
    {root name: candidate qualified names}: `in[3]` is input `in`, a bus
    array field `b[0].x` is `b`, else `b.x` or `b[0].x`.
    """
    stem = wasm_path.stem
    places = [wasm_path.with_suffix(".sym"), wasm_path.parent.parent / f"{stem}.sym"]
    sym = next((p for p in places if p.is_file()), None)
    if sym is None:
        return None
    lines: list[tuple[str, str]] = []
    try:
        with open(sym, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                m = _SYM_LINE.match(line.strip())
                if m:
                    lines.append((m.group(1), m.group(2)))
    except OSError:
        return None
    plain = (comp for comp, name in lines if "." not in _INDEX.sub("", name))
    main_component = next(plain, lines[0][0] if lines else None)
    groups: dict[str, dict[str, None]] = {}
    for comp, name in lines:
        if comp == main_component:
            cands = groups.setdefault(_ROOT.match(name).group(0), {})
            for cand in (_INDEX.sub("", name), re.sub(r"(\[\d+\])+$", "", name)):
                cands.setdefault(cand, None)
    return {root: list(cands) for root, cands in groups.items()}


def _given(name: str, inputs: Inputs) -> int:
    """How many values `inputs` gives for signal `name`, under its own name or bus fields' qualified ones."""
    return sum(len(v) for k, v in inputs.items() if k == name or k.startswith((f"{name}.", f"{name}[")))


def _quoted(names: list[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _trap_reason(exc: BaseException) -> str:
    """Why and where the wasm trapped, on one line: wasmtime's first line is only "error while executing at wasm
    backtrace:"; the reason is the last of its "Caused by:" lines, the place the first circuit function (not one of
    the field's Fr_ helpers) on its backtrace."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if "Caused by:" not in lines:
        return _first_line(exc)
    causes = lines[lines.index("Caused by:") + 1:] or ["a trap"]
    reason = re.sub(r"^\d+:\s*", "", causes[-1]).removeprefix("wasm trap: ")
    names = [getattr(frame, "func_name", None) for frame in getattr(exc, "frames", None) or ()]
    where = next((name for name in names if name and not name.startswith("Fr_")), None)
    return f"{reason} (in {where})" if where else reason
