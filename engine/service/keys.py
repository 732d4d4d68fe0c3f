"""The keys the service holds resident, loaded by a path on the server (on first use).

A key is known by its id (the name given at load, else the zkey's file stem,
made unique) and by its file: loading the same .zkey again returns the key
already resident, so clients may "load" before every proof.  A key loaded
with a circuit.wasm also serves proofs of input JSON; a .wtns proof may use
any resident copy of its zkey.  A file that changed on disk since it was
loaded is not served silently from the old copy.
"""
from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from typing import Any

from engine.service.problems import Problem, bad_request, not_found

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _stamp(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


@dataclass(eq=False)
class ServedKey:
    id: str
    path: str  # the real path of the .zkey on the server
    wasm: str | None
    stamp: tuple[int, int, int]
    handle: Any = None  # engine.api.KeyHandle
    queued: int = 0  # jobs waiting in the service's queue
    uploading: int = 0  # requests whose body is still arriving: each holds its place in the queue
    active: int = 0  # jobs queued or running (unload waits for zero)
    unloading: bool = False
    vk: Any = None  # the verification key, made on the first /verify
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    # the server's time (queued to ended) of its last RECENT proofs: a waiting client is told when an
    # answer is due (`prove_s_p50`), so that it is awake when it comes (engine/client_wait.py)
    recent_s: list = field(default_factory=list)

    RECENT = 16

    def proved(self, seconds: float) -> None:
        self.recent_s.append(seconds)
        del self.recent_s[:-self.RECENT]

    def prove_s_p50(self) -> float | None:
        s = sorted(self.recent_s)
        return round(s[len(s) // 2], 6) if s else None

    def describe(self) -> dict:
        h = self.handle
        return {
            "id": self.id, "path": self.path, "wasm": self.wasm, "curve": h.curve, "n_vars": h.n_vars,
            "n_public": h.n_public, "domain_size": h.domain_size, "vram_bytes": resident_bytes(h),
            "working_set_bytes": h.working_set_bytes, "witness_bytes": h.witness_bytes,
            "devices": list(h.devices), "queued": self.queued, "uploading": self.uploading, "active": self.active,
            "prove_s_p50": self.prove_s_p50(),
        }


def resident_bytes(handle: Any) -> int:
    """Device memory the key itself holds on all its devices (the engine measured it at load)."""
    return int(sum(getattr(handle, "_resident_bytes", {}).values()))


class KeyRegistry:
    def __init__(self, engine: Any):
        self.engine = engine
        self.keys: dict[str, ServedKey] = {}
        self._loading: dict[tuple[str, str | None], asyncio.Future] = {}
        self._naming: set[str] = set()  # names asked for by loads under way: no other load may take them

    def get(self, key_id: str) -> ServedKey:
        key = self.keys.get(key_id)
        if key is None or key.unloading:
            raise not_found(f"no key {key_id!r} is loaded (POST /v1/keys with its path first)")
        return key

    def find(self, path: str, wasm: str | None) -> ServedKey | None:
        for key in self.keys.values():
            if key.path == path and not key.unloading and (wasm is None or key.wasm == wasm):
                return key
        return None

    async def load(self, path: Any, wasm: Any = None, name: Any = None) -> tuple[ServedKey, bool]:
        """(the key, whether it was loaded now); concurrent loads of one file share one load."""
        path, wasm = _server_path(path, "path"), (None if wasm is None else _server_path(wasm, "wasm"))
        if name is not None and (not isinstance(name, str) or not _NAME.fullmatch(name)):
            raise bad_request(f"name: {name!r} is not a key name (letters, digits, '.', '_', '-'; at most 64)")
        while True:
            existing = self.find(path, wasm)
            if existing is not None:
                self._check_current(existing)
                if name is not None and name != existing.id:
                    raise Problem(409, "conflict", f"{path} is already loaded as key {existing.id!r}")
                return existing, False
            pending = self._loading.get((path, wasm))
            if pending is None:
                break
            await asyncio.shield(pending)  # another request is loading it: use its result
        if name is not None and name in self.keys:
            raise Problem(409, "conflict", f"key name {name!r} is taken by {self.keys[name].path}")
        if name is not None and name in self._naming:  # another file's load asked for it first
            raise Problem(409, "conflict", f"key name {name!r} is taken by a key being loaded now")
        done = asyncio.get_running_loop().create_future()
        self._loading[(path, wasm)] = done
        if name is not None:
            self._naming.add(name)
        try:
            stamp = _stamp(path)
            handle = await self.engine.load_key(path, wasm=wasm)
            key = ServedKey(name or self._free_id(_stem(path)), path, wasm, stamp, handle)
            key.idle.set()
            self.keys[key.id] = key
            return key, True
        finally:
            del self._loading[(path, wasm)]
            self._naming.discard(name)
            done.set_result(None)

    async def unload(self, key: ServedKey) -> None:
        """No new jobs; wait for its queued and running ones; release it on every device."""
        key.unloading = True
        await key.idle.wait()
        self.keys.pop(key.id, None)
        await self.engine.unload_key(key.handle)

    def _check_current(self, key: ServedKey) -> None:
        try:
            now = _stamp(key.path)
        except OSError:
            now = None
        if now != key.stamp:
            raise Problem(409, "key_changed", f"{key.path} changed on disk since it was loaded as key {key.id!r}; "
                                              f"DELETE /v1/keys/{key.id} and load it again")

    def _free_id(self, base: str) -> str:
        """`base`, else `base-2`, ...: neither a resident key's id nor a name a load under way asked for."""
        taken = self.keys.keys() | self._naming
        if base not in taken:
            return base
        n = 2
        while f"{base}-{n}" in taken:
            n += 1
        return f"{base}-{n}"


def _stem(path: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.splitext(os.path.basename(path))[0]).lstrip("._-")
    return stem[:64] or "key"


def _server_path(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise bad_request(f"{what}: expected a path on the server (a string), got {type(value).__name__}")
    if not value:
        raise bad_request(f"{what}: the path is empty; give an absolute path on the server")
    if "\0" in value:
        raise bad_request(f"{what}: {value!r} has a NUL character, which no path on the server has")
    if not os.path.isabs(value):
        raise bad_request(f"{what}: {value!r} is relative; give an absolute path on the server")
    real = os.path.realpath(value)
    if not os.path.isfile(real):
        if os.path.isdir(real):
            what_is = "a directory"
        elif os.path.exists(real):  # a device, FIFO or socket: nothing a key or a circuit is read from
            what_is = "not a regular file"
        else:
            what_is = "no such file"
        raise Problem(422, "bad_input", f"{value}: {what_is} on the server")
    return real
