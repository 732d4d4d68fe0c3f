"""A circuit's wasm trap after Ray came and went in the same process: Ray's ray.init put its own handlers over
SIGSEGV, SIGBUS, SIGILL and SIGFPE and ray.shutdown put SIG_DFL back, so the out-of-bounds access that wasmtime
turns into a trap (through SIGSEGV on its guard pages) killed the process with a core dump and no word, where it
raises WitnessGenerationError.  (CI's pytest died so, in tests/test_witness_traps.py, once a test before the Ray
tests had computed a witness in the test process.)"""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from engine.distributed import fault_signals
from test_distributed import marked, wait_for_no_marked_processes
from test_witness_traps import TRAP

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fault_signals acts on Linux only")

SCRIPT = """
import sys
from engine.distributed import connection
from engine.errors import WitnessGenerationError
from engine.witness.calculator import WasmCircuit

circuit = WasmCircuit.load(sys.argv[1])
circuit.calculate({"a": 1})  # wasmtime's handlers installed before Ray's

def trap(when):
    try:
        circuit.calculate({"a": 100_000_000}, source="in.json")
    except WitnessGenerationError as exc:
        assert "out of bounds memory access" in str(exc), exc
        print("trap " + when, flush=True)

assert connection.join("local", {"num_cpus": 1, "object_store_memory": 80 << 20})
trap("while joined")
connection.leave()
trap("after leaving")
assert circuit.calculate({"a": 0}).shape[0] == circuit.n_witness
print("done", flush=True)
"""


@linux_only
def test_a_wasm_trap_after_ray_came_and_went_is_an_error_not_a_crash(tmp_path, circom_compile):
    (tmp_path / "trap.circom").write_text(TRAP)
    wasm = circom_compile(tmp_path / "trap.circom", "bn128", tmp_path)[1]
    with marked() as mark:
        got = subprocess.run([sys.executable, "-c", SCRIPT, str(wasm)], capture_output=True, text=True, timeout=180)
    assert got.returncode == 0, (got.returncode, got.stdout, got.stderr[-3000:])
    assert got.stdout.split() == ["trap", "while", "joined", "trap", "after", "leaving", "done"], got.stdout
    assert wait_for_no_marked_processes(mark) == []


@linux_only
def test_handlers_set_before_are_put_back_and_none_is_made_up():
    signals = fault_signals.FAULT_SIGNALS
    original = fault_signals.installed()  # pytest's faulthandler's, wasmtime's: put back at the end

    def handlers() -> dict[int, int]:
        return {s: fault_signals.handler_address(s) for s in signals}

    try:
        for s in signals:
            signal.signal(s, signal.SIG_DFL)
        with fault_signals.fault_handlers_kept():  # none before: what the block sets stays (Ray's own)
            for s in signals:
                signal.signal(s, lambda *_: None)
        python_handler = handlers()
        assert all(a > 1 for a in python_handler.values())
        with fault_signals.fault_handlers_kept():
            for s in signals:  # what ray.shutdown does
                signal.signal(s, signal.SIG_DFL)
        assert handlers() == python_handler
    finally:
        for s in signals:
            signal.signal(s, signal.SIG_DFL)
        sigaction = fault_signals._sigaction()
        for s, record in original.items():
            sigaction(s, record, None)
