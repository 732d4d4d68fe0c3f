"""circuit.wasm from circom before 2.0.7 (circom2 npm 0.2.2 is circom 2.0.3): `log(x)` there is one
runtime.showSharedRWMemory call per value, which snarkjs prints at once (circom_runtime's witness_calculator:
it buffers values only from 2.0.7 on, where writeBufferMessage("\\n") ends a line).  Such modules have no
getMinorVersion/getPatchVersion, no writeBufferMessage import and no getInputSignalSize.

No old circom is needed: OLD_CIRCOM_WAT is a module with circom 2.0.3's interface, imports and protocol (one input
x; witness [1, x]; its "circuit" runs log(x) and log(7) when x is set).
"""
from __future__ import annotations

import logging

import numpy as np
import pytest
import wasmtime

import cli
from engine.witness.calculator import WasmCircuit

BN254_R_WORDS = (0xF0000001, 0x43E1F593, 0x79B97091, 0x2833E848, 0x8181585D, 0xB85045B6, 0xE131A029, 0x30644E72)

OLD_CIRCOM_WAT = """
(module
  (import "runtime" "exceptionHandler" (func $exc (param i32)))
  (import "runtime" "showSharedRWMemory" (func $show))
  (memory (export "memory") 1)
  (global $set (mut i32) (i32.const 0))
  (func (export "getVersion") (result i32) (i32.const 2))
  (func (export "getFieldNumLen32") (result i32) (i32.const 8))
  (func (export "getInputSize") (result i32) (i32.const 1))
  (func (export "getWitnessSize") (result i32) (i32.const 2))
  (func (export "init") (param i32)
    (global.set $set (i32.const 0))
    (memory.fill (i32.const 64) (i32.const 0) (i32.const 64))
    (i32.store (i32.const 64) (i32.const 1)))
  (func (export "readSharedRWMemory") (param $i i32) (result i32)
    (i32.load (i32.shl (local.get $i) (i32.const 2))))
  (func (export "writeSharedRWMemory") (param $i i32) (param $v i32)
    (i32.store (i32.shl (local.get $i) (i32.const 2)) (local.get $v)))
  (func (export "getRawPrime")
    %s)
  (func (export "setInputSignal") (param i32 i32 i32)
    (if (global.get $set) (then (call $exc (i32.const 2))))
    (global.set $set (i32.const 1))
    (memory.copy (i32.const 96) (i32.const 0) (i32.const 32))
    (call $show)
    (memory.fill (i32.const 0) (i32.const 0) (i32.const 32))
    (i32.store (i32.const 0) (i32.const 7))
    (call $show))
  (func (export "getWitness") (param $i i32)
    (memory.copy (i32.const 0) (i32.add (i32.const 64) (i32.shl (local.get $i) (i32.const 5))) (i32.const 32)))
)
""" % "\n    ".join(f"(i32.store (i32.const {4 * i}) (i32.const {w:#x}))" for i, w in enumerate(BN254_R_WORDS))


@pytest.fixture
def old_wasm(tmp_path):
    path = tmp_path / "old.wasm"
    path.write_bytes(wasmtime.wat2wasm(OLD_CIRCOM_WAT))
    return path


def test_old_circom_module_computes_its_witness(old_wasm):
    circuit = WasmCircuit.load(old_wasm)
    assert circuit.version == (2, 0, 0) and circuit.n_witness == 2
    assert np.array_equal(circuit.calculate({"x": 5})[:, 0], [1, 5])


def test_old_circom_log_values_are_each_a_line_as_snarkjs_prints_them(old_wasm, caplog):
    with caplog.at_level(logging.INFO, logger="engine.witness.calculator"):
        WasmCircuit.load(old_wasm).calculate({"x": 5})
        WasmCircuit.load(old_wasm).calculate({"x": -1})  # a field element, as snarkjs shows it: p - 1
    p_minus_1 = sum(w << (32 * i) for i, w in enumerate(BN254_R_WORDS)) - 1
    assert caplog.messages == [f"{old_wasm}: log: {v}" for v in (5, 7, p_minus_1, 7)]


def test_old_circom_log_lines_reach_the_witness_command(old_wasm, tmp_path, capsys):
    inputs = tmp_path / "input.json"
    inputs.write_text('{"x": "0x10"}')
    assert cli.main(["witness", str(old_wasm), str(inputs), str(tmp_path / "w.wtns")]) == 0
    assert capsys.readouterr().err == f"{old_wasm}: log: 16\n{old_wasm}: log: 7\n"
