"""The text snarkjs writes for proof.json and public.json, written all or nothing.

No types of ours are imported here, so the Proof itself (engine/groth16/proof.py)
can turn into its files without an import circle; engine/formats/json.py adds
the verification key and every reader.
"""
from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

from engine.file_writes import write_file, write_files

DECIMAL = re.compile(r"[0-9]+")  # a field element as snarkjs writes it in proof.json and public.json
NUMBER = re.compile(r"[0-9]+|0x[0-9a-fA-F]+")  # and as it reads one (ffjavascript's unstringifyBigInts)


def number_digits(text: str) -> tuple[str, int]:
    """(significant digits, base) of a string NUMBER matches: its length can be bounded before int() runs."""
    if text[:2] == "0x":
        return text[2:].lstrip("0") or "0", 16
    return text.lstrip("0") or "0", 10


def number_value(text, max_digits: int = 200) -> int | None:
    """The integer a decimal or 0x-hex string stands for as snarkjs reads it, or None (not one, or over
    `max_digits` significant digits: no field element has that many, and int() refuses 4300 decimal digits)."""
    if not isinstance(text, str) or not NUMBER.fullmatch(text):
        return None
    digits, base = number_digits(text)
    return int(digits, base) if len(digits) <= max_digits else None


BOM_PROBLEM = ("starts with a UTF-8 byte-order mark, which JSON does not allow (snarkjs refuses it too): "
               "save the file without one")  # Python's own words ask to "decode using utf-8-sig"
STREAM_CAP = 1 << 30  # what a JSON input that is not a regular file (a pipe, a device) may give


class NotJsonInput(ValueError):
    """A JSON input refused before it was read whole: a binary file by its first bytes (a .zkey given for a JSON
    file: reading every byte of a large key to say "not UTF-8" took its size in memory), or one that is not a
    regular file that gave NUL bytes (no JSON text has one) or more than STREAM_CAP."""


# the binary files a user may put where a JSON file goes, by their magic (engine/formats/binfile.py's and wasm's)
BINARY_KINDS = {b"zkey": ".zkey", b"r1cs": ".r1cs", b"wtns": ".wtns", b"ptau": ".ptau", b"\0asm": "circuit.wasm"}


def read_json_bytes(path) -> bytes:
    """The bytes of a JSON input: a regular file whole; a pipe or a device (/dev/zero) only while it can be JSON,
    which reading all of it would not stop at (memory ran out).  OSError and open()'s ValueError pass through."""
    with open(path, "rb") as f:
        if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            head = f.read(4)
            if head in BINARY_KINDS:
                raise NotJsonInput(f"is a {BINARY_KINDS[head]} file, not a JSON text")
            f.seek(0)  # the whole file in one read: not a second copy of it made by joining
            return f.read()
        chunks, total = [], 0
        while chunk := f.read(1 << 20):
            total += len(chunk)
            if b"\0" in chunk and not chunks and chunk[:2] in (b"\xff\xfe", b"\xfe\xff"):
                return chunk  # UTF-16 or UTF-32 with a BOM: its reader names the encoding
            if b"\0" in chunk:
                raise NotJsonInput("is not a JSON text (it holds NUL bytes)")
            if total > STREAM_CAP:
                raise NotJsonInput(f"gave more than {STREAM_CAP >> 30} GiB without ending (not a regular file)")
            chunks.append(chunk)
        return b"".join(chunks)


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
