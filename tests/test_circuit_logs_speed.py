"""A circuit that logs much: its messages were read from Python one character a call (getMessageChar) and each
logged value one 32-bit word a call (readSharedRWMemory), ~11-18 us a call: 100,000 `log("line", j)` took 22 s
where snarkjs takes 0.5 s.  The helper module now reads a message, or a value, in one call."""
from __future__ import annotations

import logging

import pytest
import wasmtime

from conftest import circom_compile

pytestmark = pytest.mark.snarkjs

CHATTY = """pragma circom 2.0.0;

template Chatty() {
    signal input x;
    signal output y;
    for (var j = 0; j < 200; j++) { log("a rather long line of text for the log, number", j, x); }
    y <== x * x;
}

component main = Chatty();
"""


def test_a_logged_line_costs_a_few_calls_into_wasm_not_one_a_character(tmp_path, monkeypatch, caplog):
    from engine.witness.calculator import WasmCircuit

    (tmp_path / "chatty.circom").write_text(CHATTY)
    _, wasm = circom_compile(tmp_path / "chatty.circom", "bn128", tmp_path)
    circuit = WasmCircuit.load(wasm)
    calls = [0]
    real_call = wasmtime.Func.__call__

    def counted(self, store, *args):
        calls[0] += 1
        return real_call(self, store, *args)

    monkeypatch.setattr(wasmtime.Func, "__call__", counted)
    with caplog.at_level(logging.INFO, logger="engine.witness.calculator"):
        circuit.calculate({"x": 3})
    lines = [r.getMessage() for r in caplog.records if r.name == "engine.witness.calculator"]
    assert len(lines) == 200
    assert lines[7] == f"{wasm}: log: a rather long line of text for the log, number 7 3"
    assert calls[0] < 5 * 200, calls[0]  # was ~80 a line (its 47 characters, 16 words of two values...)
