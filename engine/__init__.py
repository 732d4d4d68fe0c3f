"""An asyncio-native Groth16 proving engine (BN254, BLS12-381), compatible with circom/snarkjs.

The public face::

    from engine import Engine, EngineConfig

    async with Engine(EngineConfig(backend="auto")) as eng:
        key = await eng.load_key("circuit.zkey", wasm="circuit.wasm")
        proof = await eng.prove(key, {"a": 3, "b": 11})
        proof.write("proof.json", "public.json")

Everything named in `__all__` is importable from `engine`: every EngineError an
Engine call can end with among them.  engine.errors' are loaded at once (they
are small); the rest, the errors of the pools, the witness calculator and the
GPU included, on first use, so that importing
`engine` (or one of its light modules, such as the client) stays fast and
pulls in neither numpy nor CUDA.
"""
from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's own flag without importing typing (~4 ms of the CLI client's start)

from engine.errors import (
    BackendUnavailableError,
    BudgetError,
    ConfigError,
    CurveMismatchError,
    DeviceError,
    DeviceOutOfMemoryError,
    EngineClosedError,
    EngineError,
    EngineLostError,
    EngineStartError,
    FormatError,
    InputFileError,
    KernelCompileError,
    MismatchError,
    TimelineWriteError,
    UnreducedWitnessError,
    UnsatisfiedWitnessError,
    VerificationError,
    WitnessGenerationError,
)

# name -> (module, attribute): resolved on first access (PEP 562)
_LAZY = {
    "Engine": ("engine.api", "Engine"),
    "KeyHandle": ("engine.api", "KeyHandle"),
    "StreamResult": ("engine.api", "StreamResult"),
    "prove_files": ("engine.api", "prove_files"),
    "aprove_files": ("engine.api", "aprove_files"),
    "EngineConfig": ("engine.config", "EngineConfig"),
    "load_config": ("engine.config", "load"),
    "Proof": ("engine.groth16.proof", "Proof"),
    "VerificationKey": ("engine.groth16.proof", "VerificationKey"),
    "verify": ("engine.groth16.verifier", "verify"),
    "read_proof": ("engine.formats.json", "read_proof"),
    "read_public": ("engine.formats.json", "read_public"),
    "read_vkey": ("engine.formats.json", "read_vkey"),
    "read_zkey": ("engine.formats.zkey", "read_zkey"),
    "read_wtns": ("engine.formats.wtns", "read_wtns"),
    "Witness": ("engine.formats.wtns", "Witness"),  # what read_wtns returns, and Engine.prove takes
    # the EngineError (a WitnessGenerationError) a job fails with when its synthesis worker dies; its module is the
    # pool's (numpy, anyio), so lazy like the API it comes from
    "SynthesisCrashedError": ("scheduler.synth_pool", "SynthesisCrashedError"),
    # the other EngineErrors an Engine call can end with, from the modules that raise them (lazy for the same
    # reason): a pool's worker that died or did not start, a task's output larger than its room, no shared memory
    # left for a witness, a setup worker that died, the witness calculator's kinds, a GPU context lost for good,
    # a bad $GROTH16_WAIT_SPIN_MS of the GPU backend
    "OutputTooLargeError": ("scheduler.synth_pool", "OutputTooLargeError"),
    "CpuWorkerCrashedError": ("scheduler.cpu_pool", "CpuWorkerCrashedError"),
    "CpuPoolError": ("scheduler.cpu_pool", "CpuPoolError"),
    "SetupWorkerCrashedError": ("scheduler.setup_pool", "SetupWorkerCrashedError"),
    "ShmSpaceError": ("scheduler.shm", "ShmSpaceError"),
    "WitnessInputError": ("engine.witness.errors", "WitnessInputError"),
    "CircuitFileError": ("engine.witness.errors", "CircuitFileError"),
    "CircuitAssertionError": ("engine.witness.errors", "CircuitAssertionError"),
    "CircuitPrimeError": ("engine.witness.errors", "CircuitPrimeError"),
    "CircuitMismatchError": ("engine.witness.errors", "CircuitMismatchError"),
    "DeviceContextLostError": ("cuda_kernels.driver_errors", "DeviceContextLostError"),
    "WaitSettingError": ("engine.backends.gpu.waiting", "WaitSettingError"),
    "Curve": ("engine.algebra.curves", "Curve"),
    "BN254": ("engine.algebra.curves", "BN254"),
    "BLS12_381": ("engine.algebra.curves", "BLS12_381"),
    "curve_by_name": ("engine.algebra.curves", "curve_by_name"),
}

__all__ = [
    "Engine", "EngineConfig", "KeyHandle", "StreamResult", "Proof", "VerificationKey",
    "prove_files", "aprove_files", "load_config", "verify",
    "read_proof", "read_public", "read_vkey", "read_zkey", "read_wtns", "Witness",
    "Curve", "BN254", "BLS12_381", "curve_by_name",
    "EngineError", "ConfigError", "EngineStartError", "EngineClosedError", "InputFileError", "FormatError",
    "MismatchError", "CurveMismatchError", "UnreducedWitnessError", "UnsatisfiedWitnessError", "VerificationError",
    "WitnessGenerationError", "BackendUnavailableError", "DeviceError", "DeviceOutOfMemoryError",
    "KernelCompileError", "BudgetError", "EngineLostError", "TimelineWriteError", "SynthesisCrashedError",
    "OutputTooLargeError", "CpuWorkerCrashedError", "CpuPoolError", "SetupWorkerCrashedError", "ShmSpaceError",
    "WitnessInputError", "CircuitFileError", "CircuitAssertionError", "CircuitPrimeError", "CircuitMismatchError",
    "DeviceContextLostError", "WaitSettingError",
]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'engine' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from typing import Any

    from engine.algebra.curves import BLS12_381, BN254, Curve, curve_by_name  # noqa: F401
    from engine.api import Engine, KeyHandle, StreamResult, aprove_files, prove_files  # noqa: F401
    from engine.config import EngineConfig  # noqa: F401
    from engine.config import load as load_config  # noqa: F401
    from engine.formats.json import read_proof, read_public, read_vkey  # noqa: F401
    from engine.formats.wtns import Witness, read_wtns  # noqa: F401
    from engine.formats.zkey import read_zkey  # noqa: F401
    from engine.groth16.proof import Proof, VerificationKey  # noqa: F401
    from engine.groth16.verifier import verify  # noqa: F401
    from cuda_kernels.driver_errors import DeviceContextLostError  # noqa: F401
    from engine.backends.gpu.waiting import WaitSettingError  # noqa: F401
    from engine.witness.errors import (  # noqa: F401
        CircuitAssertionError,
        CircuitFileError,
        CircuitMismatchError,
        CircuitPrimeError,
        WitnessInputError,
    )
    from scheduler.cpu_pool import CpuPoolError, CpuWorkerCrashedError  # noqa: F401
    from scheduler.setup_pool import SetupWorkerCrashedError  # noqa: F401
    from scheduler.shm import ShmSpaceError  # noqa: F401
    from scheduler.synth_pool import OutputTooLargeError, SynthesisCrashedError  # noqa: F401
