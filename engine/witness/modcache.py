"""Compiled circuit.wasm on disk, so a new process does not run Cranelift again.

Compiling a 2 MB circom module takes seconds, far longer than one witness.
Each process keeps its compiled modules in memory (engine.witness.calculator); this
cache lets the next process (a CLI run, a fresh synthesis worker) map the
machine code wasmtime produced instead.  Entries are keyed by the wasm bytes,
the wasmtime version and the compiler settings; wasmtime itself refuses an
entry built for another version or CPU, and we then compile again.  The cache
is best effort: a directory we cannot write just means no cache.

Location: $GROTH16_ENGINE_CACHE/wasm, else $XDG_CACHE_HOME (or ~/.cache)
/groth16-engine/wasm (also where it is set but blank); GROTH16_ENGINE_CACHE=off disables it.
"""
from __future__ import annotations

import hashlib
import os
import re
from importlib import metadata
from pathlib import Path

import wasmtime

from cuda_kernels.build import remove_dead_temporaries, write_cache_file
from cuda_kernels.cache_home import cache_home, scratch_home  # every cache's base, one rule
from engine.bytecode_cache import OFF  # the words that turn a cache off

ENV_VAR = "GROTH16_ENGINE_CACHE"
_OLD_TEMPORARY = re.compile(r"[0-9a-f]{64}\.cwasm\.[0-9]+\.tmp")  # `<key>.cwasm.<pid>.tmp`, before the lock


def _sweep(directory: Path) -> None:
    """A killed writer's temporary files removed (once a process): cuda_kernels/build.py."""
    remove_dead_temporaries(directory, (".cwasm",), _OLD_TEMPORARY)


def cache_dir() -> Path | None:
    """Where compiled modules live, or None when the cache is switched off.  A blank value is the default, as a
    blank GROTH16_KEY_CACHE or GROTH16_PYCACHE is (`GROTH16_ENGINE_CACHE="$UNSET"` turned the cache off, and
    every process compiled circuit.wasm again)."""
    env = os.environ.get(ENV_VAR, "")
    if env.strip():
        if env.strip().lower() in OFF:
            return None
        return Path(env).expanduser() / "wasm"
    # (a blank or relative XDG_CACHE_HOME is unset, as for every cache; no absolute home: this process's own folder)
    return Path(cache_home() or scratch_home("compiled circuit.wasm")) / "groth16-engine" / "wasm"


def cache_key(wasm: bytes, settings: str) -> str:
    h = hashlib.sha256()
    h.update(f"wasmtime {metadata.version('wasmtime')}; {settings}\n".encode())
    h.update(wasm)
    return h.hexdigest()


def lookup(engine: wasmtime.Engine, wasm: bytes, settings: str) -> wasmtime.Module | None:
    """The cached machine code for `wasm` under these settings, or None."""
    entry = _entry(wasm, settings)
    if entry is not None:
        _sweep(entry.parent)
    if entry is None or not entry.is_file():
        return None
    try:
        return wasmtime.Module.deserialize_file(engine, str(entry))
    except wasmtime.WasmtimeError:
        return None  # stale or foreign entry: the caller compiles and replaces it


def compile_and_store(engine: wasmtime.Engine, wasm: bytes, settings: str) -> wasmtime.Module:
    """Compile `wasm` and keep the result on disk; compile errors (wasmtime.WasmtimeError) reach the caller."""
    module = wasmtime.Module(engine, wasm)
    entry = _entry(wasm, settings)
    if entry is not None:
        _store(entry, module)
    return module


def _entry(wasm: bytes, settings: str) -> Path | None:
    directory = cache_dir()
    return directory / f"{cache_key(wasm, settings)}.cwasm" if directory else None


def _store(entry: Path, module: wasmtime.Module) -> None:
    """Atomic (concurrent workers never read half an entry); its temporary file, `<key>.<pid>.tmp` before, stayed
    for good where the writer was killed: now locked while written, and a dead writer's removed by the next run
    (cuda_kernels/build.py, whose kernel cache does the same)."""
    _sweep(entry.parent)
    write_cache_file(entry, module.serialize())
