"""The Groth16 pieces of an Engine's job: the synthesis tasks its worker processes run, and the kit the
scheduler calls for a key's checks, epilogue and verification (engine/api.py composes them with the
scheduler; they were part of that module)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from scheduler.pipeline import Partition
from scheduler.synth_pool import FileSegment

from engine.errors import InputFileError, MismatchError, UnreducedWitnessError
from engine.paths import is_pipe

def synthesise_wtns(path: str) -> tuple[dict, FileSegment]:
    """Synthesis task: a .wtns file's header checked, its values handed back as where they lie in the file,
    which the worker copies into the witness's shared block in the kernel (synth_pool.FileSegment)."""
    from engine.formats import read_wtns  # noqa: PLC0415

    w = read_wtns(path)
    return {"prime": int(w.prime)}, FileSegment(w.path, w.values_offset, w.values.shape, w.values.dtype.str)


def synthesise_wasm(wasm_path: str, inputs: Any, key_prime: int | None = None,
                    key_name: str = "the proving key", source: str | None = None) -> tuple[dict, np.ndarray]:
    """Synthesis task: compute a witness from circuit.wasm and inputs (a dict or an input.json path;
    runs in a worker process).  A wasm compiled for another field than the key's is refused first.
    `source`: what errors call the inputs (the file a dict was read from)."""
    from engine.witness.calculator import WasmCircuit  # noqa: PLC0415

    circuit = WasmCircuit.load(wasm_path)
    if key_prime is not None:
        circuit.check_prime(key_prime, key_name)
    return {"prime": int(circuit.prime)}, np.asarray(circuit.calculate(inputs, source=source))


class InputsFile(str):
    """The path of a circuit's input.json, whatever its name ends with (a plain str path must end in .json)."""


class NamedInputs(dict):
    """Circuit inputs read here from a file another process cannot open (`prove --ray`: the engine's node), with
    that file's name for errors to name (a plain dict's are "inputs")."""

    def __init__(self, values: dict, source: str):
        super().__init__(values)
        self.source = source


@dataclass
class Groth16Key:
    """What the Groth16 kit keeps per key: the parsed zkey, the optional circuit.wasm, the cached vk."""

    zkey: Any
    wasm: str | None = None
    vk: Any = None
    header: Any = None  # prover.KeyHeader: what the epilogue workers receive


class Groth16Kit:
    """The engine-side pieces of a Groth16 job: synthesis tasks, checks, epilogue, verification."""

    name = "groth16"

    def read_key(self, path: Any, wasm: Any = None) -> Groth16Key:
        from engine.formats import read_zkey  # noqa: PLC0415

        if wasm is not None and is_pipe(wasm):  # each synthesis worker opens (and compiles) it by its path
            raise InputFileError(os.fspath(wasm), "is a pipe; the synthesis workers open circuit.wasm by its "
                                                  "path: give the file")
        key = Groth16Key(read_zkey(path), None if wasm is None else os.fspath(wasm))
        from engine.groth16.prover import check_key  # noqa: PLC0415

        check_key(key.zkey)  # refused before a device holds it, not by each proof (which finds it checked)
        if key.wasm is not None:  # a missing file, not wasm, or another curve's: refused here, not by every proof
            from engine.witness.calculator import WasmCircuit  # noqa: PLC0415

            # the optimised build the workers load, so they map it from the disk cache instead of compiling
            WasmCircuit.load(key.wasm).check_key(key.zkey, self._prime_check(key)[1])
        return key

    def _prime_check(self, key: Groth16Key) -> tuple[int, str]:
        """(the key's r, the name a wasm of another field is told it does not match)."""
        return int(key.zkey.curve.r), key.zkey.path or self.key_label(key)

    def backend_key(self, key: Groth16Key) -> Any:
        return key.zkey

    def key_label(self, key: Groth16Key) -> str:
        z = key.zkey
        return os.path.basename(z.path) if getattr(z, "path", None) else f"{z.curve.name} key"

    def describe(self, key: Groth16Key) -> dict:
        z = key.zkey
        return {"path": z.path, "curve": z.curve.name, "n_vars": z.n_vars, "n_public": z.n_public,
                "domain_size": z.domain_size}

    def witness_bytes(self, key: Groth16Key) -> int:
        return int(key.zkey.n_vars) * 32  # (m, 4) uint64

    def make_partition(self, key: Groth16Key, index: int, item: Any) -> Partition:
        """item: a .wtns path, circuit inputs (a dict, or an input .json path; need wasm=), a Witness,
        or values (witness_values)."""
        inputs_file = isinstance(item, InputsFile) or (
            isinstance(item, (str, os.PathLike)) and os.fspath(item).lower().endswith(".json"))
        if isinstance(item, (str, os.PathLike)) and not inputs_file:
            path = os.fspath(item)
            if is_pipe(path):  # `<(...)`: a pool worker cannot open this process's pipe, so it is read here
                from engine.formats import read_wtns  # noqa: PLC0415

                w = read_wtns(path)
                return Partition(index, path, values=w.values, meta={"prime": int(w.prime)})
            return Partition(index, path, task=(synthesise_wtns, (path,)))
        if isinstance(item, dict) or inputs_file:
            if key.wasm is None:
                raise MismatchError(
                    f"{self.key_label(key)}: circuit inputs were given but the key was loaded without "
                    "wasm= (the circuit.wasm that computes the witness)"
                )
            prime_check = self._prime_check(key)
            if inputs_file:  # read in the worker: its errors name the file, as the direct path's do
                path = str(os.fspath(item))
                if is_pipe(path):  # but a worker cannot open this process's pipe: read here, named as the file
                    from engine.witness.inputs import parse_inputs  # noqa: PLC0415

                    args = (key.wasm, parse_inputs(path), *prime_check, path)
                    return Partition(index, path, task=(synthesise_wasm, args))
                return Partition(index, path, task=(synthesise_wasm, (key.wasm, path, *prime_check)))
            from engine.witness.inputs import normalise_inputs  # noqa: PLC0415

            source = getattr(item, "source", None)  # NamedInputs: its file's name
            item = normalise_inputs(item, source or "inputs")  # here: nested beyond the stack, not picklable
            if source is not None:
                return Partition(index, source, task=(synthesise_wasm, (key.wasm, item, *prime_check, source)))
            return Partition(index, f"inputs for {os.path.basename(key.wasm)}",
                             task=(synthesise_wasm, (key.wasm, item, *prime_check)))
        if hasattr(item, "values") and hasattr(item, "prime"):
            name = getattr(item, "path", None) or f"witness {index}"
            return Partition(index, name, values=item.values, meta={"prime": int(item.prime)})
        if isinstance(item, (np.ndarray, list, tuple)):
            name = f"witness {index}"
            return Partition(index, name, values=witness_values(item, name), meta={"prime": None})
        raise TypeError(f"cannot prove {type(item).__name__}: give a .wtns path, an inputs dict, a Witness or values "
                        "(a list of ints, or an (m, 4) uint64 array)")

    def check(self, key: Groth16Key, meta: Any, values: np.ndarray, label: str, range_check: bool = True) -> None:
        """range_check False: the devices check the values after the upload (scheduler/pipeline.py)."""
        from engine.groth16.prover import check_witness_for_key  # noqa: PLC0415

        prime = (meta or {}).get("prime") or key.zkey.curve.r
        check_witness_for_key(key.zkey, prime, values, label, range_check=range_check)

    def public(self, key: Groth16Key, values: np.ndarray) -> np.ndarray:
        # The epilogue reads only w_0..w_nPublic (prover.public_signals); copying them lets the
        # witness's host memory go back as soon as the device is done with it.
        return np.array(values[: key.zkey.n_public + 1])

    # The epilogue and the verification are pure-Python arithmetic (tens of ms): they run in
    # the shared CPU process pool, so they neither serialise on the GIL nor starve the
    # device threads of it.  The calling thread only waits on the result.  A worker that dies
    # under one fails that job (CpuWorkerCrashedError, an EngineError) and is replaced.
    # A backend that ran the epilogue and the pairing check itself (the GPU: CoreResult.proof
    # set) leaves only decoding: that happens here, in the calling thread, and `verify` has
    # nothing left to do for such a proof (a failed device check raises in `finish`).
    def finish(self, key: Groth16Key, core: Any, public: np.ndarray, label: str | None = None) -> Any:
        from engine.groth16.prover import KeyHeader, finish  # noqa: PLC0415

        if getattr(core, "proof", None) is not None:
            return finish(key.zkey, core, public, verify=False, witness_name=label)
        if key.header is None:
            key.header = KeyHeader.from_zkey(key.zkey)
        return self._in_pool(key, "the epilogue", finish, key.header, core, public, verify=False,
                             witness_name=label)

    def inline(self, step: str, key: Groth16Key, obj: Any) -> bool:
        """A device-made proof's finish (decoding) and its verify (nothing: the device checked it)
        run on the scheduler's event loop, not on a worker thread: each hand-off cost 2-3 ms from
        start to end at 300 proofs/s (perf/RESULTS.md, h13tput) for microseconds of work."""
        from engine.groth16.prover import checked_on_device  # noqa: PLC0415

        if step == "finish":
            return getattr(obj, "proof", None) is not None
        return step == "verify" and checked_on_device(obj)

    def verify(self, key: Groth16Key, proof: Any, label: str | None = None) -> None:
        from engine.groth16.prover import checked_on_device, verify_or_raise  # noqa: PLC0415
        from engine.groth16.verifier import vk_from_zkey  # noqa: PLC0415

        if checked_on_device(proof):
            return

        if key.vk is None:
            key.vk = vk_from_zkey(key.zkey)
        self._in_pool(key, "the proof's verification", verify_or_raise, key.vk, proof, key.zkey.path, label)

    def _in_pool(self, key: Groth16Key, what: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """fn in the CPU pool; a cancelled job (this thread is abandoned) stops it there too (cpu_pool)."""
        from concurrent.futures import TimeoutError as Pending  # noqa: PLC0415

        from anyio.from_thread import check_cancelled  # noqa: PLC0415

        from scheduler import cpu_pool  # noqa: PLC0415

        future = cpu_pool.get_pool().submit(fn, *args, **kwargs)
        try:
            while True:
                try:
                    return future.result(timeout=0.02)
                except Pending:
                    try:
                        check_cancelled()
                    except RuntimeError:  # not a worker thread of anyio's: nothing to ask
                        return future.result()
        except cpu_pool.CpuWorkerCrashedError as exc:
            raise cpu_pool.CpuWorkerCrashedError(f"{self.key_label(key)}: {what}: {exc}") from None
        finally:
            future.cancel()  # done: nothing; cancelled: the worker running it is stopped


def witness_values(item: Any, name: str) -> np.ndarray:
    """Values given in memory, as the (m, 4) little-endian uint64 limbs the backends take: a 2-D integer
    array of four columns as it is; a list, tuple or 1-D array of ints converted (a 1-D array raised an
    IndexError, a list a TypeError).  Another shape or type is a TypeError naming it, a negative value or
    one of 2^256 or more an UnreducedWitnessError naming its row (values below 2^256 are checked against r
    with the rest of the witness)."""
    if isinstance(item, np.ndarray) and item.ndim != 1:
        if item.ndim != 2 or item.shape[1] != 4 or item.dtype.kind not in "iu":
            raise TypeError(f"{name}: values as an array must be one int a row or (m, 4) 64-bit limbs, got shape "
                            f"{item.shape} of {item.dtype}")
        if item.dtype.kind == "i" and item.size and item.min() < 0:  # read as 64-bit words, -1 was 2^64 - 1:
            raise UnreducedWitnessError(int(np.argmax((item < 0).any(axis=1))), name)  # another witness, not its own
        return item
    seq = item.tolist() if isinstance(item, np.ndarray) else item
    for row, v in enumerate(seq):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"{name}: value {row} is {type(v).__name__} {v!r:.40}, not an int")
        if not 0 <= v < 1 << 256:
            raise UnreducedWitnessError(row, name)
    from engine.algebra.limbs import fr_from_ints  # noqa: PLC0415

    return fr_from_ints(seq)
