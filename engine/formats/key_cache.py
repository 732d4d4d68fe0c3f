"""The device-ready key cache: what a backend derives from a zkey, written once, memory-mapped after.

Loading a zkey onto a GPU costs host work beyond reading it: the coeffs
section's range checks and its A and B matrices sorted into CSR rows.  The
cache keeps those derived arrays in one file per key, in exactly the bytes the
device takes, so a later load reads them with large sequential reads
(engine/backends/gpu/staging.py) and does no per-key host computation.  The
points need no copy here: the zkey's point sections already are the device's
layout (Montgomery affine limbs, what the kernels read), and the loader streams
them from the zkey itself.  A backend whose layout differs stores more arrays
under a new layout string: the format is a list of named arrays.

An entry is found by the zkey's identity: its size and modification time as
mapped, `zkey_sha` (the header sections whole, every section's size and its
sampled ends), the curve, and the backend's layout string (which names the
layout version and anything else the arrays depend on).  The file name is a
digest of all of it and the entry's header repeats the fields, checked on
every load, so a changed zkey is never served stale: it maps to another name,
and storing its new entry removes the old entries of the same path.

File: magic, u32 format version, u32 header length, a JSON header (identity,
arrays: name, dtype, shape, offset, nbytes), then each array at a 4096-byte
aligned offset.  Written to a temporary file and renamed, so readers only ever
see whole entries; the writer holds an flock on that file, so `clear` removes a
dead writer's leftover but never a live writer's file (so does the next store, with a
warning, and `cache list` shows them: a killed load's partial entry is as large as its
key).  Where the cache lives: an explicit directory (EngineConfig `key_cache_dir`, `--key-cache-dir`), else
$GROTH16_KEY_CACHE, else $XDG_CACHE_HOME/groth16-engine/keys; "off" there
disables it.  `python -m engine cache` lists and clears it.  This module
imports numpy only to map an entry's arrays, so listing and clearing stay light.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import stat
import struct
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from cuda_kernels.cache_home import cache_home, scratch_home  # every cache's base, one rule

log = logging.getLogger("engine.key_cache")

MAGIC = b"G16KEYC\x00"
FORMAT_VERSION = 1
ALIGN = 4096
SUFFIX = ".gkc"
ENV = "GROTH16_KEY_CACHE"
OFF = ("off", "none", "0", "false", "no")
_PREFIX = struct.Struct("<8sII")
LEFTOVER_AGE_S = 3600  # where files cannot be locked, a temporary file older than this is a dead writer's


def default_dir() -> Path:
    """$XDG_CACHE_HOME/groth16-engine/keys, ~/.cache/... where that is unset or not absolute (cache_home's rule);
    where no absolute home is found, this process's own folder (scratch_home: not one in the working directory)."""
    return Path(cache_home() or scratch_home("device-ready keys")) / "groth16-engine" / "keys"


def resolve_dir(setting: str | os.PathLike | None = None) -> Path | None:
    """The cache directory for a setting (config/flag), else $GROTH16_KEY_CACHE, else the default;
    None when the setting or the variable says "off"."""
    value = os.fspath(setting) if setting is not None else os.environ.get(ENV)
    if value is None or not value.strip():  # blank: unset (not a directory named by spaces in the cwd)
        return default_dir()
    if value.strip().lower() in OFF:
        return None
    return Path(value).expanduser()


@dataclass(frozen=True)
class Identity:
    """What a cache entry was made from; any change in it means another entry."""

    zkey_path: str  # shown by `cache list`, and used to retire older entries of the same file
    size: int
    mtime_ns: int
    sha: str  # zkey_sha, hex
    curve: str
    layout: str  # the backend's layout string (its version and what the arrays depend on)

    def digest(self) -> str:
        """The entry's file name: every field but the path, so a copied key with the same bytes and
        times would share it (the copy's mtime usually differs, and then it does not)."""
        h = hashlib.blake2b(digest_size=16)
        for part in (self.size, self.mtime_ns, self.sha, self.curve, self.layout):
            h.update(str(part).encode() + b"\0")
        return h.hexdigest()


def identity_of(zkey, layout: str) -> Identity | None:
    """The identity of a zkey read from a file; None for a key built in memory (nothing to cache by)."""
    if not getattr(zkey, "path", None) or not getattr(zkey, "file_size", 0):
        return None
    return Identity(os.path.abspath(zkey.path), int(zkey.file_size), int(zkey.file_mtime_ns),
                    bytes(zkey.sha).hex(), zkey.curve.name, layout)


def current_identity(path: str, layout: str) -> Identity | None:
    """The identity the file at `path` has now (reads its header), or None when it is gone or unreadable."""
    from engine.errors import EngineError  # noqa: PLC0415
    from engine.formats.zkey import read_zkey  # noqa: PLC0415

    try:
        return identity_of(read_zkey(path), layout)
    except EngineError:
        return None


@dataclass
class CacheEntry:
    """A mapped entry: its arrays as read-only numpy views and their byte ranges in the file."""

    path: str
    identity: Identity
    arrays: dict[str, Any]  # name -> np.ndarray view over the mapping
    ranges: dict[str, tuple[int, int]]  # name -> (offset, nbytes) in the file
    meta: dict
    fd: int = -1  # the entry open for reading (preadv): valid even if the file is removed meanwhile

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass(frozen=True)
class EntryInfo:
    path: str
    nbytes: int
    identity: Identity | None  # None: not a readable entry (corrupt, another format version)
    created: float


def _open_regular(path) -> int:
    """A read-only descriptor of a regular file; anything else (a FIFO would block the open) is a ValueError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError("not a regular file")
    return fd


def _identity(header: dict) -> Identity:
    """The header's identity, its fields of their types (a hand-made header's list or string path or size
    reached os.stat and comparisons as they were)."""
    raw = header["identity"]
    ident = Identity(**raw)
    for name, kind in (("zkey_path", str), ("size", int), ("mtime_ns", int), ("sha", str), ("curve", str),
                       ("layout", str)):
        value = getattr(ident, name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"identity field {name} is a {type(value).__name__}")
    return ident


def _created(value) -> float:
    """The entry's creation time, or 0 (unknown) when it is no time a clock shows (NaN, 1e300, negative)."""
    try:
        t = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return t if 0 < t < 2**37 else 0.0


def _read_header(f) -> dict:
    prefix = f.read(_PREFIX.size)
    if len(prefix) != _PREFIX.size:
        raise ValueError("shorter than the cache entry prefix")
    magic, version, hlen = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise ValueError("not a key cache entry")
    if version != FORMAT_VERSION:
        raise ValueError(f"cache format version {version}, this engine writes {FORMAT_VERSION}")
    raw = f.read(hlen)
    if len(raw) != hlen:
        raise ValueError("header truncated")
    return json.loads(raw)


class KeyCache:
    """One cache directory.  Every failure to read an entry is a miss; a failure to write is logged."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.failures: list[tuple[str, str]] = []  # what the last clear() could not remove: (path, reason)

    def path_for(self, identity: Identity) -> Path:
        return self.directory / f"{identity.digest()}{SUFFIX}"

    # ---- reading
    def load(self, identity: Identity) -> CacheEntry | None:
        """The entry for this identity, mapped; None on a miss (absent, stale, corrupt)."""
        import mmap  # noqa: PLC0415

        import numpy as np  # noqa: PLC0415

        path = self.path_for(identity)
        try:
            fd = _open_regular(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the directory (a config's, or the API's)
            log.warning("key cache: ignoring %s (%s)", path, exc)
            return None
        try:
            with os.fdopen(os.dup(fd), "rb") as f:
                header = _read_header(f)
                size = os.fstat(f.fileno()).st_size
            # the path aside: the same bytes and times reached by another path (a symlink, a hard link, `cp -p`)
            # are the same key, and share the entry (the other path missed, and rewrote it, on every load)
            if replace(_identity(header), zkey_path=identity.zkey_path) != identity:
                os.close(fd)
                return None  # a digest collision or a hand-made file: never serve it
            ranges = {a["name"]: (int(a["offset"]), int(a["nbytes"])) for a in header["arrays"]}
            if any(off + n > size for off, n in ranges.values()):
                raise ValueError(f"the file has {size} bytes, less than its arrays need")
            buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if size else b""
            arrays = {}
            for a in header["arrays"]:
                dt, shape = np.dtype(a["dtype"]), tuple(a["shape"])
                count = int(np.prod(shape, dtype=np.int64))
                arr = np.frombuffer(buf, dtype=dt, count=count, offset=int(a["offset"])) if count else np.zeros(0, dt)
                if arr.nbytes != ranges[a["name"]][1]:
                    raise ValueError(f"array {a['name']} has {arr.nbytes} bytes, its header says "
                                     f"{ranges[a['name']][1]}")
                arrays[a["name"]] = arr.reshape(shape)
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:  # (a header nested too deep)
            os.close(fd)
            log.warning("key cache: ignoring %s (%s)", path, exc)
            return None
        return CacheEntry(os.fspath(path), identity, arrays, ranges, header.get("meta", {}), fd)

    # ---- writing
    def store(self, identity: Identity, arrays: dict[str, Any], meta: dict | None = None) -> str | None:
        """Write an entry (atomically) and retire the other entries of the same zkey path and layout
        family; the entry's path, or None when it could not be written (the load goes on without it)."""
        import numpy as np  # noqa: PLC0415

        specs, views = [], {}
        for name, arr in arrays.items():
            a = np.ascontiguousarray(arr)
            views[name] = a
            specs.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "nbytes": int(a.nbytes)})
        header = {"identity": asdict(identity), "meta": meta or {}, "created": time.time(), "arrays": specs}
        # offsets depend on the header's length, which depends on the offsets' digits: fix them first
        for spec in specs:
            spec["offset"] = 0
        hlen = len(json.dumps(header).encode()) + 32 * len(specs) + 64
        offset = _align(_PREFIX.size + hlen)
        for spec in specs:
            spec["offset"] = offset
            offset = _align(offset + spec["nbytes"])
        raw = json.dumps(header).encode()
        raw += b" " * (hlen - len(raw))
        tmp = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = _locked_tmp(self.directory)
            with os.fdopen(fd, "wb") as f:  # closing it releases the lock, after the rename
                f.write(_PREFIX.pack(MAGIC, FORMAT_VERSION, hlen) + raw)
                for spec in specs:
                    f.seek(spec["offset"])
                    a = views[spec["name"]]
                    if a.nbytes:
                        f.write(memoryview(a.reshape(-1).view(np.uint8)))
                f.truncate(offset)
                f.flush()
                target = self.path_for(identity)
                os.replace(tmp, target)
                tmp = None
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the directory
            log.warning("key cache: could not write an entry for %s in %s (%s); loading without it",
                        identity.zkey_path, self.directory, exc)
            return None
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        for info in self.entries():
            if (info.identity is not None and info.path != os.fspath(target)
                    and info.identity.zkey_path == identity.zkey_path
                    and _family(info.identity.layout) == _family(identity.layout)):
                _unlink(info.path)  # the same file's older contents, or an older layout: never served again
        self._remove_leftovers()
        return os.fspath(target)

    def _remove_leftovers(self) -> None:
        """Remove the partial entries of writers that were killed (SIGKILL, the OOM killer) while they wrote, said
        in a warning: each stayed in the cache, as large as its key, until an explicit `cache clear`."""
        for path, _ in self.partial():
            size = _remove_leftover(path)
            if size is not None:
                log.warning("key cache: removed %s (%.1f MiB), a partial entry left in %s by a load that was killed "
                            "(out of memory? SIGKILL?) while it wrote it", os.path.basename(path), size / 2**20,
                            self.directory)

    def partial(self) -> list[tuple[str, int]]:
        """The temporary files of writers that ended before they finished (no lock held on them; not one made a
        moment ago): (path, bytes) each, for `cache list` to show and a store to remove."""
        try:
            names = sorted(n for n in os.listdir(self.directory) if n.startswith(".tmp-") and n.endswith(SUFFIX))
        except (OSError, ValueError):
            return []
        out = []
        for name in names:
            path = os.path.join(self.directory, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except (OSError, ValueError):
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or (st.st_size == 0 and abs(time.time() - st.st_mtime) < 10):
                    continue  # not a writer's file, or one made a moment ago by a writer about to lock it
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released at the close: a look, not a hold
            except OSError:  # a live writer holds it (or no locks here: nothing can be told)
                continue
            finally:
                os.close(fd)
            out.append((path, st.st_size))
        return out

    # ---- listing and clearing (`python -m engine cache`)
    def entries(self) -> list[EntryInfo]:
        out = []
        try:
            names = sorted(os.listdir(self.directory))
        except (OSError, ValueError):  # ValueError: a NUL in the directory
            return out
        for name in names:
            if not name.endswith(SUFFIX) or name.startswith(".tmp-"):
                continue
            path = os.path.join(self.directory, name)
            if os.path.isdir(path):
                continue  # not ours: clear would not remove it either
            try:
                with os.fdopen(_open_regular(path), "rb") as f:  # a FIFO of that name: no wait for a writer
                    header = _read_header(f)
                    nbytes = os.fstat(f.fileno()).st_size
                identity, created = _identity(header), _created(header.get("created", 0))
                if any(int(a["offset"]) + int(a["nbytes"]) > nbytes for a in header["arrays"]):
                    raise ValueError("truncated")
            except (OSError, ValueError, KeyError, TypeError, RecursionError):
                try:
                    nbytes = os.path.getsize(path)
                except OSError:
                    continue
                identity, created = None, 0.0
            out.append(EntryInfo(path, nbytes, identity, created))
        return out

    def is_stale(self, info: EntryInfo) -> bool:
        """The entry cannot be served any more: unreadable, or its zkey is gone or has changed."""
        if info.identity is None:
            return True
        ident = info.identity
        try:
            st = os.stat(ident.zkey_path)
        except (OSError, ValueError):  # ValueError: a NUL in the entry's path (a hand-made header)
            return True
        if not stat.S_ISREG(st.st_mode) or st.st_size != ident.size or st.st_mtime_ns != ident.mtime_ns:
            return True
        now = current_identity(ident.zkey_path, ident.layout)
        return now is None or now.digest() != ident.digest()

    def clear(self, *, stale_only: bool = False) -> tuple[int, int]:
        """Remove entries (only the stale ones with stale_only) and leftover temporary files;
        returns (files removed, bytes freed).  Files that could not be removed are in `self.failures`
        as (path, reason), for the caller to report (`cache clear` fails on them)."""
        removed = freed = 0
        self.failures = []
        for info in self.entries():
            if stale_only and not self.is_stale(info):
                continue
            if _unlink(info.path, self.failures):
                removed, freed = removed + 1, freed + info.nbytes
        try:
            leftovers = [n for n in os.listdir(self.directory) if n.startswith(".tmp-") and n.endswith(SUFFIX)]
        except (OSError, ValueError):
            leftovers = []
        for name in leftovers:
            size = _remove_leftover(os.path.join(self.directory, name), self.failures)
            if size is not None:
                removed, freed = removed + 1, freed + size
        return removed, freed


def _locked_tmp(directory: Path) -> tuple[int, str]:
    """A new temporary file for an entry, flock'ed while it is written so that `clear` (another process's,
    too) tells it from a dead writer's leftover; a file removed before the lock was taken is made again."""
    for _ in range(8):  # (a file system whose inode numbers do not hold still must not loop for ever)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=SUFFIX)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits only while a `clear` holds it to remove it
            if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                return fd, tmp
        except FileNotFoundError:
            pass  # a `clear` removed it between mkstemp and the lock
        except OSError:  # no locks on this file system: write unlocked (`clear` then spares recent files)
            return fd, tmp
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise OSError("no temporary file for the entry stayed in place (removed by `cache clear` each time)")


def _remove_leftover(path: str, failures: list | None = None) -> int | None:
    """Remove a temporary file no live writer holds; its size, or None when it was left (or is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            return None  # not a writer's file
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # a writer is filling it now
        except OSError:  # no locks here: only a file untouched for a while is a leftover
            if time.time() - st.st_mtime < LEFTOVER_AGE_S:
                return None
        try:
            if os.stat(path).st_ino != st.st_ino:
                return None
        except OSError:
            return None  # renamed into place (or removed) meanwhile
        return st.st_size if _unlink(path, failures) else None
    finally:
        os.close(fd)


def _family(layout: str) -> str:
    """A layout string without its version ("gpu-csr-v1" -> "gpu-csr"): entries of one family and
    zkey replace each other, so an upgrade leaves no unreachable entries behind."""
    return layout.rsplit("-v", 1)[0]


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _unlink(path: str, failures: list | None = None) -> bool:
    """Remove a file; a failure goes to `failures` (path, reason) when given, else to the log."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        if failures is None:
            log.warning("key cache: could not remove %s (%s)", path, exc)
        else:
            failures.append((path, exc.strerror or str(exc)))
        return False
