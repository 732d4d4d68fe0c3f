"""The iden3 binfile container shared by `.r1cs`, `.wtns` and `.zkey` (spec §1).

A file is magic, u32 version, u32 nSections, then records `u32 id, u64 size,
payload`.  `open_binfile` memory-maps the file, scans the records once and
keeps (id, offset, size); readers then look sections up by id (any order is
valid) and take numpy views straight over the mapping, so opening a
multi-gigabyte key touches only its few header pages.

Every problem becomes a one-line `FormatError(path, problem)`; a missing or
unreadable path an `InputFileError`.
"""
from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass

import numpy as np

from engine.errors import FormatError, file_error
from engine.file_writes import write_file
from engine.formats.rows import over_rows

# magic -> the extension a user knows the file by
KNOWN_MAGICS = {b"r1cs": ".r1cs", b"wtns": ".wtns", b"zkey": ".zkey", b"ptau": ".ptau"}

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_RECORD = struct.Struct("<IQ")
# Sections a file may declare: circom and snarkjs write at most 16 (a ptau's); a count far above this is
# no writer's, and scanning it (or 12-byte empty records by the million) would cost time and memory
# without bound in the file's size.
MAX_SECTIONS = 1024


@dataclass(frozen=True)
class Section:
    id: int
    offset: int  # first payload byte in the file
    size: int  # payload bytes, as declared by the record
    index: int  # position of the record in the file, 0-based


@dataclass(frozen=True)
class InMemoryFile:
    """A file's bytes already in memory (the prover service's uploads), read like a mapped file.

    Every reader that takes a path takes one of these; `name` is what its errors call it.
    """

    name: str
    data: bytes | bytearray | memoryview


@dataclass(frozen=True)
class _MemoryStat:
    st_size: int
    st_mtime_ns: int = 0
    regular: bool = False  # bytes from a file on disk that a later read of the path finds again


def open_input(path) -> tuple[str, object, int]:
    """Map `path` read-only -> (name, buffer, size).  Missing/unreadable/directory: InputFileError."""
    name, buf, st = _map(path)
    return name, buf, st.st_size


def _map(path, magic: str | None = None, lenient_last: int | None = None) -> tuple[str, object, os.stat_result]:
    if isinstance(path, InMemoryFile):
        return path.name, path.data, _MemoryStat(len(path.data))
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISFIFO(st.st_mode):  # a pipe (`prove <(curl ...) ...`): read, it cannot be mapped
                data = _read_pipe(f, magic, lenient_last)
                return name, data, _MemoryStat(len(data))
            if not stat.S_ISREG(st.st_mode):  # a device (/dev/zero would never end), a socket
                raise FormatError(name, "is not a file or a pipe (a device or a socket)")
            try:
                buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if st.st_size else b""
            except ValueError:  # emptied since the fstat (a writer truncating it): read as the empty file it is
                buf = b""
            return name, buf, _MemoryStat(len(buf), st.st_mtime_ns, True)
    except (OSError, ValueError) as exc:  # missing, a directory, EIO, ENXIO (a socket), unmappable ...
        raise file_error(name, exc) from None


def _read_pipe(f, magic: str | None, lenient_last: int | None) -> bytes:
    """A pipe's bytes up to the end of its last declared record, not to the pipe's end: an endless pipe of
    other bytes (`<(yes)`) stops at its header, one of a file then more at the file's end (snarkjs ignores
    what follows the last record).  open_binfile judges what was read.  `lenient_last` as the last record
    may declare a garbled size (spec §3): a .wtns's values are then read as its header counts them, else to
    the pipe's end."""
    out = bytearray()

    def take(n: int) -> bool:
        while n > 0:
            chunk = f.read(min(n, 1 << 24))
            if not chunk:
                return False
            out.extend(chunk)
            n -= len(chunk)
        return True

    if not take(12) or (magic is not None and bytes(out[:4]) != magic.encode()):
        return bytes(out)
    n_sections = _U32.unpack_from(out, 8)[0]
    if n_sections > MAX_SECTIONS:
        return bytes(out)
    for i in range(n_sections):
        if not take(12):
            break
        sid, size = _RECORD.unpack_from(out, len(out) - 12)
        if i == n_sections - 1 and sid == lenient_last:
            want = _wtns_values_size(out) if magic == "wtns" else None
            if want is None:
                out.extend(f.read())
                break
            if want != size:  # one byte past the counted values shows a longer file, which is refused as on disk
                take(want)
                out.extend(f.read(1))
                break
        if not take(size):
            break
    return bytes(out)


def _wtns_values_size(head: bytearray) -> int | None:
    """n8 * nWitness from the first .wtns header section (id 1) among the records read so far, or None."""
    off = 12
    while off + 12 <= len(head):
        sid, size = _RECORD.unpack_from(head, off)
        off += 12
        if sid == 1 and size >= 4 and off + size <= len(head):
            n8 = _U32.unpack_from(head, off)[0]
            if 8 + n8 <= size:
                return n8 * _U32.unpack_from(head, off + 4 + n8)[0]
            return None
        off += size
    return None


class BinFile:
    """A scanned binfile: its records, and helpers that read them with clear errors."""

    def __init__(self, path: str, buf, size: int, magic: str, version: int,
                 records: list[Section], names: dict[int, str], mtime_ns: int = 0, regular: bool = False):
        self.path, self.buf, self.size, self.mtime_ns = path, buf, size, mtime_ns
        self.regular = regular  # a file on disk (not a pipe, not bytes in memory): what a cache may key by
        self.magic, self.version, self.records = magic, version, records
        self.names = names

    # ---- errors
    def error(self, problem: str) -> FormatError:
        return FormatError(self.path, problem)

    def label(self, sid: int) -> str:
        name = self.names.get(sid)
        return f"section {sid} ({name})" if name else f"section {sid}"

    # ---- lookup
    def find(self, sid: int) -> list[Section]:
        return [s for s in self.records if s.id == sid]

    def optional(self, sid: int) -> Section | None:
        found = self.find(sid)
        if len(found) > 1:
            raise self.error(f"{self.label(sid)} appears {len(found)} times (it must be unique)")
        return found[0] if found else None

    def section(self, sid: int) -> Section:
        found = self.optional(sid)
        if found is None:
            raise self.error(f"missing {self.label(sid)}")
        return found

    # ---- reading
    def expect_size(self, sec: Section, size: int, why: str) -> None:
        if sec.size != size:
            raise self.error(f"{self.label(sec.id)} has {sec.size} bytes but {why} needs {size}")

    def bytes(self, sec: Section, start: int = 0, length: int | None = None) -> bytes:
        length = sec.size - start if length is None else length
        return bytes(self.buf[sec.offset + start : sec.offset + start + length])

    def array(self, sec: Section, dtype, count: int, start: int = 0, shape: tuple | None = None) -> np.ndarray:
        """A read-only numpy view of `count` items at `start` bytes into the section."""
        dt = np.dtype(dtype)
        if count == 0:
            arr = np.zeros(0, dtype=dt)
        else:
            arr = np.frombuffer(self.buf, dtype=dt, count=count, offset=sec.offset + start)
        return arr.reshape(shape) if shape is not None else arr

    def cursor(self, sec: Section) -> "Cursor":
        return Cursor(self, sec)


class Cursor:
    """Reads a header section field by field and checks it is consumed exactly (as snarkjs does)."""

    def __init__(self, bf: BinFile, sec: Section):
        self.bf, self.sec = bf, sec
        self.pos, self.end = sec.offset, sec.offset + sec.size

    def _take(self, n: int, what: str) -> int:
        if self.pos + n > self.end:
            raise self.bf.error(
                f"{self.bf.label(self.sec.id)} is too short: it has {self.sec.size} bytes and ends inside {what}"
            )
        p, self.pos = self.pos, self.pos + n
        return p

    def u32(self, what: str) -> int:
        return _U32.unpack_from(self.bf.buf, self._take(4, what))[0]

    def u64(self, what: str) -> int:
        return _U64.unpack_from(self.bf.buf, self._take(8, what))[0]

    def bigint(self, n8: int, what: str) -> int:
        p = self._take(n8, what)
        return int.from_bytes(self.bf.buf[p : p + n8], "little")

    def raw(self, n: int, what: str) -> bytes:
        p = self._take(n, what)
        return bytes(self.bf.buf[p : p + n])

    def finish(self) -> None:
        if self.pos != self.end:
            used = self.pos - self.sec.offset
            raise self.bf.error(f"{self.bf.label(self.sec.id)} has {self.sec.size} bytes but its fields take {used}")


def _wrong_magic(head: bytes, ext: str) -> str:
    if head in KNOWN_MAGICS:
        return f"is a {KNOWN_MAGICS[head]} file, not a {ext} file"
    if head.lstrip()[:1] in (b"{", b"["):
        return f"is a JSON file, not a {ext} file"
    return f"is not a {ext} file (it starts with {head!r}, expected {ext[1:].encode()!r})"


def open_binfile(
    path,
    magic: str,
    *,
    max_version: int,
    min_version: int = 1,
    names: dict[int, str] | None = None,
    lenient_last: int | None = None,
) -> BinFile:
    """Open and scan a binfile with `magic`; versions outside [min, max] are errors.

    `lenient_last`: a section id that may run past the end of the file when it
    is the last record (the .wtns reader corrects circom's broken u64 sizes
    itself, spec §3); any other overrun is a "truncated" error.
    """
    name, buf, st = _map(path, magic, lenient_last)
    size = st.st_size
    ext = "." + magic
    if size >= 4 and bytes(buf[:4]) != magic.encode():
        raise FormatError(name, _wrong_magic(bytes(buf[:4]), ext))
    if size < 12:
        if size == 0:
            raise FormatError(name, f"is empty, not a {ext} file")
        raise FormatError(name, f"truncated: the file has {size} bytes, less than the 12-byte {ext} header")
    version, n_sections = struct.unpack_from("<II", buf, 4)
    if version > max_version:
        raise FormatError(name, f"{ext} version {version} is not supported "
                                f"(the highest snarkjs reads is {max_version})")
    if version < min_version:
        if magic == "wtns" and version == 1:
            raise FormatError(name, "wtns version 1 (the pre-2020 layout without sections) is not supported; "
                                    "recompute the witness with a current circom/snarkjs")
        raise FormatError(name, f"{ext} version {version} is not valid (expected {min_version}..{max_version})")
    if n_sections > MAX_SECTIONS:
        raise FormatError(name, f"the header declares {n_sections} sections; a {ext} file has far fewer "
                                f"(at most {MAX_SECTIONS} are read)")
    bf = BinFile(name, buf, size, magic, version, [], names or {}, mtime_ns=st.st_mtime_ns, regular=st.regular)
    off = 12
    for i in range(n_sections):
        if off + 12 > size:
            raise FormatError(
                name,
                f"truncated: the header of section record {i + 1} of {n_sections} needs 12 bytes at offset {off} "
                f"but the file ends after {size - off}",
            )
        sid, ssize = _RECORD.unpack_from(buf, off)
        off += 12
        if off + ssize > size and not (lenient_last == sid and i == n_sections - 1):
            have = size - off
            raise FormatError(name, f"truncated: {bf.label(sid)} needs {ssize} bytes but the file ends after {have}")
        bf.records.append(Section(sid, off, ssize, i))
        off += ssize
    return bf


def first_row_ge(values: np.ndarray, modulus: int) -> int:
    """Index of the first row of little-endian uint64 limbs whose value is >= modulus, or -1
    (a large array is checked in parts on threads: engine/formats/rows.py).  A part whose top limbs all lie
    below the modulus's (every part of sound data) costs one max over them, no masks (a third less time)."""
    if values.shape[0] == 0 or modulus >> (64 * values.shape[1]):
        return -1
    top = np.uint64(modulus >> (64 * (values.shape[1] - 1)))

    def part(lo: int, hi: int) -> int:
        if values[lo:hi, -1].max() < top:
            return -1
        bad = np.flatnonzero(rows_ge_mask(values[lo:hi], modulus))
        return lo + int(bad[0]) if bad.size else -1

    found = [i for i in over_rows(values.shape[0], values.itemsize * max(1, values.shape[1]), part) if i >= 0]
    return found[0] if found else -1


def rows_ge_mask(values: np.ndarray, modulus: int) -> np.ndarray:
    """Boolean mask of the rows (little-endian uint64 limbs) whose value is >= modulus.

    Vectorised limb comparison from the top limb down, run in full only on the
    rows whose top limb reaches the modulus's; works on strided views.
    """
    n_limbs = values.shape[1]
    mask = np.zeros(values.shape[0], dtype=bool)
    if values.shape[0] == 0 or modulus >> (64 * n_limbs):
        return mask
    m = [np.uint64((modulus >> (64 * i)) & 0xFFFFFFFFFFFFFFFF) for i in range(n_limbs)]
    cand = np.flatnonzero(values[:, n_limbs - 1] >= m[-1])
    sub = values[cand]
    eq = np.ones(cand.shape[0], dtype=bool)
    gt = np.zeros(cand.shape[0], dtype=bool)
    for i in reversed(range(n_limbs)):
        col = sub[:, i]
        gt |= eq & (col > m[i])
        eq &= col == m[i]
    mask[cand[gt | eq]] = True
    return mask


def subtract_where(values: np.ndarray, mask: np.ndarray, modulus: int) -> None:
    """values[mask] -= modulus in place (multi-limb, with borrow); callers ensure no underflow."""
    rows = values[mask]
    borrow = np.zeros(rows.shape[0], dtype=np.uint64)
    for i in range(rows.shape[1]):
        m = np.uint64((modulus >> (64 * i)) & 0xFFFFFFFFFFFFFFFF)
        col = rows[:, i]
        new = col - m - borrow
        borrow = ((col < m) | ((col == m) & (borrow == 1))).astype(np.uint64)
        rows[:, i] = new
    values[mask] = rows


def write_binfile(path, magic: str, version: int, sections: list[tuple[int, list]]) -> None:
    """Write a binfile; each section is (id, [chunks]) where a chunk is bytes or a numpy array.

    Arrays are written through the buffer protocol (no extra copy for contiguous ones); the file
    appears whole or not at all (engine/file_writes.py).
    """
    def emit(f) -> None:
        f.write(magic.encode() + struct.pack("<II", version, len(sections)))
        for sid, chunks in sections:
            bufs = [_as_buffer(c) for c in chunks]
            f.write(_RECORD.pack(sid, sum(b.nbytes for b in bufs)))
            for b in bufs:
                f.write(b)

    write_file(path, emit)


def _as_buffer(chunk) -> memoryview:
    if isinstance(chunk, np.ndarray):
        a = chunk if chunk.flags.c_contiguous else np.ascontiguousarray(chunk)
        return memoryview(a.reshape(-1).view(np.uint8)) if a.size else memoryview(b"")
    return memoryview(chunk).cast("B")
