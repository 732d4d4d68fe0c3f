"""Output paths checked against the inputs before any work.

A typo in the argument order (`prove circuit.zkey w.wtns circuit.zkey public.json`) wrote the proof
over the key, and the same path for proof.json and public.json failed only after the proof, with a
message about a missing temporary file.  Both are refused here, before anything is read.
"""
from __future__ import annotations

import os
from typing import Iterable

from engine.errors import EngineError
from engine.paths import same_file


def check_outputs(outputs: Iterable[tuple[str, object]], inputs: Iterable[tuple[str, object]]) -> None:
    """Refuse an output that is one of the inputs or another output: (role, path) pairs, None paths skipped."""
    given_inputs = [(role, path) for role, path in inputs if path is not None]
    seen: list[tuple[str, object]] = []
    for role, path in outputs:
        if path is None:
            continue
        for in_role, in_path in given_inputs:
            if same_file(path, in_path):
                raise EngineError(f"{os.fspath(path)}: the {role} would overwrite the {in_role} read from the same "
                                  "file (check the order of the arguments)")
        for other_role, other in seen:
            if same_file(path, other):
                raise EngineError(f"{os.fspath(path)}: given for both the {other_role} and the {role}; "
                                  "each output needs its own path")
        seen.append((role, path))
