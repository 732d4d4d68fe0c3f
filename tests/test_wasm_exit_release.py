"""A process that computed witnesses ends with its wasmtime stores freed before the interpreter's teardown."""
from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

WASM = EXAMPLES / "bn128" / "sudoku.wasm"
INPUT = EXAMPLES / "bn128" / "input.json"


def _live_instances() -> int:
    from engine.witness.runtime import CircuitInstance

    gc.collect()
    return sum(isinstance(o, CircuitInstance) for o in gc.get_objects())


def test_the_exit_handler_frees_every_store_and_a_circuit_still_works_after_it():
    """A store, its instances and their Python callbacks are cycles only the collector frees: left to the
    interpreter's teardown, their finalizers ran after the modules they call were gone (CI's pytest printed
    "Exception ignored ... 'NoneType' object is not callable" at its end, and once exited 139)."""
    from engine.witness import calculator

    circuit = calculator.WasmCircuit.load(WASM)
    inputs = json.loads(INPUT.read_text())
    first = circuit.calculate(inputs)
    assert _live_instances() >= 1
    calculator._release_at_exit()
    assert _live_instances() == 0
    assert (circuit.calculate(inputs) == first).all()  # its store made again


def test_a_script_that_ends_holding_a_circuit_exits_quietly():
    script = ("import json; from engine.witness.calculator import WasmCircuit; "
              f"c = WasmCircuit.load({str(WASM)!r}); c.calculate(json.load(open({str(INPUT)!r}))); KEEP = [c]")
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stderr) == (0, "")


def test_failed_witnesses_leave_no_instance_behind():
    """Each witness that failed (an assertion, a trap) dropped its wasm instance for a new one, but the store's
    host callbacks kept the old one, and all its wasm memory, alive for the process's life: 200 failures, 200
    instances in a synthesis worker."""
    from engine.witness import calculator
    from engine.witness.errors import CircuitAssertionError

    circuit = calculator.WasmCircuit.load(WASM)
    bad = json.loads(INPUT.read_text())
    bad["solution"][0] = "7"
    for _ in range(20):
        try:
            circuit.calculate(bad)
        except CircuitAssertionError:
            pass
    assert _live_instances() <= 1
    circuit.calculate(json.loads(INPUT.read_text()))  # and the next good one still works


def test_the_exit_handler_closes_the_compiled_modules_and_engines_too():
    """The stores freed, pytest's run still ended in "Exception ignored in: Managed.__del__ ... _module.py ...
    _delete ... 'NoneType' object is not callable" and the same from _engine.py: the circuits' modules and the
    process's engines were left to the teardown too.  They are closed at exit; a circuit used after it is compiled
    again."""
    from engine.witness import calculator, runtime

    circuit = calculator.WasmCircuit.load(WASM)
    inputs = json.loads(INPUT.read_text())
    first = circuit.calculate(inputs)
    module = circuit.module
    engines = [obj for pair in runtime._PROCESS.values() for obj in pair]
    assert engines
    calculator._release_at_exit()
    for obj in [module, *engines]:
        with pytest.raises(ValueError, match="closed"):
            obj.ptr()
    assert runtime._PROCESS == {}
    assert (circuit.calculate(inputs) == first).all()
