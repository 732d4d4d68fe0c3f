"""The text snarkjs writes for proof.json and public.json, written all or nothing.

No types of ours are imported here, so the Proof itself (engine/groth16/proof.py)
can turn into its files without an import circle; engine/formats/json.py adds
the verification key and every reader.
"""
from __future__ import annotations

import json
import re
from typing import Any

from engine.file_writes import write_file, write_files

DECIMAL = re.compile(r"[0-9]+")  # a field element as snarkjs writes it in proof.json and public.json


def dumps(obj: Any) -> str:
    """snarkjs's JSON layout: one-space indentation, no trailing newline."""
    return json.dumps(obj, indent=1)


def g1_to_json(p) -> list[str]:
    return ["0", "1", "0"] if p is None else [str(p[0]), str(p[1]), "1"]


def g2_to_json(p) -> list[list[str]]:
    if p is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    (x0, x1), (y0, y1) = p
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


def proof_to_obj(proof) -> dict:
    """Any object with curve (its .name), pi_a, pi_b, pi_c: snarkjs's proof.json dict."""
    return {
        "pi_a": g1_to_json(proof.pi_a),
        "pi_b": g2_to_json(proof.pi_b),
        "pi_c": g1_to_json(proof.pi_c),
        "protocol": "groth16",
        "curve": proof.curve.name,
    }


def proof_to_json(proof) -> str:
    return dumps(proof_to_obj(proof))


def public_to_json(values) -> str:
    # snarkjs writes through bfj, which lays an empty array out as "[\n]", not "[]"
    strings = [str(int(v)) for v in values]
    return dumps(strings) if strings else "[\n]"


def write_text(path, text: str) -> None:
    write_file(path, text)


def write_atomically(outputs: list[tuple[Any, str]]) -> None:
    """Every (path, text) or none of them (engine/file_writes.py: through symlinks, never over a device)."""
    write_files(outputs)
