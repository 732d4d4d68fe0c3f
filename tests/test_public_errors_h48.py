"""Every EngineError an Engine call can end with is importable from `engine` (lazily where its module is heavy).

The classes are found by reading the source (engine/, scheduler/, cuda_kernels/), not by importing it, so a new
subclass anywhere fails this test until it is exported or named below as internal, with the reason.
"""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> why a caller of Engine never meets it
INTERNAL = {
    # engine.client's own face (the HTTP client of `serve`), raised there and not by an Engine call
    "ServerError": "the prover server client's error (engine.client)",
    "ClientSettingError": "a bad setting of engine.client's Client, not of Engine",
    "SpinSettingError": "engine.client's wait setting",
    # the device simulator's injected faults: only tests inject them
    "SimulatedOutOfMemory": "the simulator's injected out-of-memory, a DeviceOutOfMemoryError (exported)",
    "SimulatedDeviceFault": "the simulator's injected fault, raised only where a test asks for one",
    # private: a WitnessGenerationError (exported), caught and retried inside the synthesis pool
    "_ExitedWhileStarting": "the synthesis pool's private retry signal, a WitnessGenerationError",
}


def _engine_error_classes() -> dict[str, str]:
    """name -> defining module of every class in the source that derives (at any depth) from EngineError."""
    bases: dict[str, tuple[str, list[str]]] = {}
    for folder in ("engine", "scheduler", "cuda_kernels"):
        for path in (ROOT / folder).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    names = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                    bases[node.name] = (module, names)
    found = {"EngineError"}
    while True:
        more = {name for name, (_, names) in bases.items() if name not in found and found.intersection(names)}
        if not more:
            return {name: bases[name][0] for name in found}
        found |= more


def test_every_engine_error_anywhere_is_exported_or_said_internal():
    import engine  # noqa: PLC0415

    classes = _engine_error_classes()
    assert len(classes) > 30, sorted(classes)  # the scan found them (the errors module alone has 19)
    missing = sorted(set(classes) - set(engine.__all__) - set(INTERNAL))
    assert not missing, f"EngineError subclasses neither exported by `engine` nor said internal: {missing}"
    for name, module in classes.items():
        if name in INTERNAL:
            assert name not in engine.__all__, name
            continue
        assert getattr(engine, name) is getattr(importlib.import_module(module), name), name
        assert issubclass(getattr(engine, name), engine.EngineError), name


def test_importing_engine_stays_free_of_the_exported_errors_modules():
    """The errors of the pools, the witness calculator and the GPU are lazy: `import engine` loads none of them."""
    heavy = ["numpy", "scheduler.synth_pool", "scheduler.cpu_pool", "scheduler.setup_pool", "scheduler.shm",
             "engine.witness.errors", "cuda_kernels.driver_errors", "engine.backends.gpu.waiting"]
    code = f"import sys, engine; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
