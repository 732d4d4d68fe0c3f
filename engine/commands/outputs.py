"""Output paths checked against the inputs before any work.

A typo in the argument order (`prove circuit.zkey w.wtns circuit.zkey public.json`) wrote the proof
over the key, and the same path for proof.json and public.json failed only after the proof, with a
message about a missing temporary file; an output in a folder that does not exist failed only after
the proof (minutes at 2^24 on a CPU).  All of these are refused here, before anything is read.  A
device such as /dev/null may take several outputs (engine/file_writes.py writes it in place).
"""
from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing's own flag, without typing (prove --server's plain line imports this module)
if TYPE_CHECKING:
    from typing import Iterable

from engine.errors import EngineError, InputFileError, write_error
from engine.file_writes import written_in_place
from engine.paths import closed_stream, folder_name_problem, real_path, same_file, shown


def check_outputs(outputs: Iterable[tuple[str, object]], inputs: Iterable[tuple[str, object]]) -> None:
    """Refuse an output that is one of the inputs or another output: (role, path) pairs, None paths skipped."""
    given_inputs = [(role, path) for role, path in inputs if path is not None]
    outputs = list(outputs)
    refuse_dash(given_inputs, outputs)
    seen: list[tuple[str, object]] = []
    for role, path in outputs:
        if path is None:
            continue
        for in_role, in_path in given_inputs:
            if same_file(path, in_path):
                raise EngineError(f"{shown(path)}: the {role} would overwrite the {in_role} read from the same "
                                  "file (check the order of the arguments)")
        stream = closed_stream(path)
        if stream is not None:
            raise InputFileError(os.fspath(path), f"cannot write: {stream} is closed")
        if written_in_place(path):
            continue
        _check_writable(path)
        for other_role, other in seen:
            if same_file(path, other):
                raise EngineError(f"{shown(path)}: given for both the {other_role} and the {role}; "
                                  "each output needs its own path")
        seen.append((role, path))


def refuse_dash(inputs: Iterable[tuple[str, object]], outputs: Iterable[tuple[str, object]] = ()) -> None:
    """"-" is no stream here (snarkjs has no such name either): as an input it was "no such file", with no word
    of /dev/stdin, and as an output a file named "-" made in the working directory.  An input that names a
    standard stream the process was started without is refused too.  (role, path) pairs."""
    for pairs, stream, device in ((inputs, "input", "/dev/stdin"), (outputs, "output", "/dev/stdout")):
        for role, path in pairs:
            if path is not None and os.fspath(path) == "-":
                raise InputFileError("-", f'"-" is not standard {stream} here: give {device} for the {role} '
                                     '(./- for a file named "-")')
    for _, path in inputs:  # /dev/stdin under `<&-`: read as the /dev/null put there, "not valid JSON"
        closed = closed_stream(path) if path is not None else None
        if closed is not None:
            raise InputFileError(os.fspath(path), f"cannot read: {closed} is closed")


def _check_writable(path) -> None:
    """A file can be made at `path`: not a folder, in a folder that exists and that we may write in."""
    name = os.fspath(path)
    if os.path.isdir(name):
        raise write_error(name, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
    try:
        folder, base = os.path.split(real_path(name))  # (relative in a working directory deeper than PATH_MAX)
    except OSError as exc:
        raise write_error(name, exc) from None
    folder = folder or os.curdir
    problem = folder_name_problem(name)
    if problem is not None:
        raise InputFileError(name, problem)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise InputFileError(name, f"cannot write: {shown(folder)} is a file, not a folder")
    if not os.path.isdir(folder):
        raise InputFileError(name, f"cannot write: the folder {shown(folder)} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputFileError(name, f"cannot write: permission denied in {shown(folder)}")
    try:  # a name over NAME_MAX failed only at the write, after the proof
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    if len(os.fsencode(base)) > name_max:
        raise write_error(name, OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG)))
