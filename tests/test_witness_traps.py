"""A circuit.wasm whose code traps (an index out of range read as memory far beyond the module's) is one line
naming the circuit, the inputs, why it trapped and where; not wasmtime's first line, which is only
"error while executing at wasm backtrace:"."""
from __future__ import annotations

import pytest

from engine.errors import WitnessGenerationError
from engine.witness.calculator import WasmCircuit

TRAP = """pragma circom 2.0.0;
template Trap() {
    signal input a;
    signal output b;
    var arr[2] = [7, 8];
    b <-- arr[a];
    signal c;
    c <== b * a;
}
component main = Trap();
"""


@pytest.fixture(scope="module")
def trap_wasm(tmp_path_factory, circom_compile):
    d = tmp_path_factory.mktemp("trap")
    (d / "trap.circom").write_text(TRAP)
    return circom_compile(d / "trap.circom", "bn128", d)[1]


def test_a_trap_names_its_reason_and_where(trap_wasm):
    circuit = WasmCircuit.load(trap_wasm)
    circuit.calculate({"a": 1})  # in range: a witness
    with pytest.raises(WitnessGenerationError) as caught:
        circuit.calculate({"a": 100_000_000}, source="in.json")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{trap_wasm}: the circuit's code trapped while computing the witness for in.json: ")
    assert "out of bounds memory access" in message and "Trap_0_run" in message, message
    assert circuit.calculate({"a": 0}).shape[0] == circuit.n_witness  # a fresh instance after the trap
