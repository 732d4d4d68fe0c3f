"""`prove --ray --wasm C --input in.json` reads in.json in the driver (the engine's node may not see it) and sent a
plain dict: every error about the inputs said "inputs" where the same proof without Ray names in.json.  The
inputs now travel with their file's name (kit.NamedInputs)."""
from __future__ import annotations

import asyncio
import json
import pickle

import pytest

from conftest import EXAMPLES

from engine.errors import EngineError
from engine.groth16.kit import NamedInputs


def test_named_inputs_keep_their_name_through_pickling():
    got = pickle.loads(pickle.dumps(NamedInputs({"a": [1, 2]}, "dir/in.json")))
    assert got == {"a": [1, 2]} and got.source == "dir/in.json"


@pytest.mark.parametrize("inputs,problem", [({"y": 1}, "unknown input signal 'y'"),
                                             ({"puzzle": [1] * 16, "solution": [1] * 16}, "")])
def test_an_error_about_named_inputs_names_their_file(tmp_path, inputs, problem):
    from engine import Engine, EngineConfig

    async def main():
        async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
            key = await eng.load_key(str(EXAMPLES / "bn128" / "sudoku.zkey"), wasm=str(EXAMPLES / "bn128" /
                                                                                   "sudoku.wasm"))
            await eng.prove(key, NamedInputs(inputs, str(tmp_path / "in.json")))

    with pytest.raises(EngineError) as caught:
        asyncio.run(main())
    message = str(caught.value)
    assert str(tmp_path / "in.json") in message and problem in message, message
    assert "for inputs" not in message and not message.startswith("inputs"), message


def test_prove_on_ray_names_the_input_file(tmp_path, monkeypatch):
    """The command's hand-off wraps what it read (no Ray needed to see it: RayCluster is replaced)."""
    from engine.distributed import cluster

    sent = []

    class Cluster:
        def __init__(self, *args, **kwargs):
            pass

        async def __aenter__(self):
            return self

        async def __aexit__(self, *exc):
            return None

        async def load_key(self, *args, **kwargs):
            return "k"

        async def prove(self, key, witness):
            sent.append(witness)
            raise EngineError("stop here")

    monkeypatch.setattr(cluster, "RayCluster", Cluster)
    (tmp_path / "in.json").write_text(json.dumps({"x": 1}))
    from cli import main

    code = main(["prove", "--ray", "local", "--wasm", str(EXAMPLES / "bn128" / "sudoku.wasm"), "--input",
                 str(tmp_path / "in.json"), str(EXAMPLES / "bn128" / "sudoku.zkey"), str(tmp_path / "p.json"),
                 str(tmp_path / "pub.json"), "--quiet"])
    assert code != 0 and len(sent) == 1
    assert isinstance(sent[0], NamedInputs) and sent[0].source == str(tmp_path / "in.json") and sent[0] == {"x": [1]}
