"""One pass over a zkey's coeffs section: its range checks, A's entry count, and its order.

`read_zkey` checks every entry's matrix, row, wire and value; a GPU key load
also needs how many entries are A's (the footprint's CSR sizes) and whether
each matrix's rows ascend in file order, as snarkjs and our setup write them
(then the device builds the CSR from the raw records: device_csr.py).  These used
to be separate passes (three column maxima, the values' check, and later a
count of A's entries): each walked the whole 44-byte-strided array again,
2.2 GB at 2^24.  Here the section is cut into ranges on threads
(engine/formats/rows.py; numpy releases the GIL) and each range is walked in
cache-sized pieces, every quantity taken from a piece while it is in cache.
A bad file's error names the same first bad entry as before: the fast pass
only says which check fails, then that check alone finds the first entry.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.formats.binfile import first_row_ge, rows_ge_mask
from engine.formats.rows import over_rows

PIECE = 1 << 16  # entries walked at a time (2.8 MB: in cache for the several reductions over it)
WORDS = 11  # u32 words of an entry: matrix, row, wire, value (8)


@dataclass(frozen=True)
class CoeffScan:
    """What one pass over the coeffs found (for a file that passed its checks)."""

    n_a: int  # entries of matrix A (0); the rest are B's
    n_b: int
    # each matrix's rows never decrease in file order, so the stable sort by row is the file order: seen
    # as rows never decreasing at all (snarkjs: rows ascending, A's and B's terms of a row interleaved)
    # or (matrix, row) never decreasing (our setup: A's block, then B's); other orders read as False
    rows_ascending: bool
    source: tuple[int, int] = (0, 0)  # the scanned array's (data address, entries): scan_of's staleness check


class CoeffError(ValueError):
    """entry: the first bad entry of the failing check; what: 'matrix', 'row', 'wire' or 'value'."""

    def __init__(self, entry: int, what: str, found: int | None):
        super().__init__(f"entry {entry} has a bad {what}")
        self.entry, self.what, self.found = entry, what, found


@dataclass
class _Part:
    mx: np.ndarray  # max of matrix, row, wire
    n_b: int  # sum of the matrix column (the count of B's entries when every matrix is 0 or 1)
    value_bad: bool
    rows_up: bool  # within the part, rows never decrease (snarkjs's order)
    keys_up: bool  # (matrix, row) never decreases (our setup's: A's block, then B's)
    first: tuple[int, int]  # (matrix, row) of its first and last entries
    last: tuple[int, int]


def _words(coeffs: np.ndarray) -> np.ndarray:
    """The entries as an (n, 11) u32 view (no copy for the mapped, packed section)."""
    flat = np.ascontiguousarray(coeffs).view(np.uint8)
    return flat.view("<u4").reshape(coeffs.shape[0], WORDS)


def _scan_part(words: np.ndarray, values: np.ndarray, lo: int, hi: int, r: int) -> _Part:
    mx = np.zeros(3, dtype=np.uint64)
    n_b, value_bad, rows_up, keys_up = 0, False, True, True
    prev = None  # (matrix, row) of the previous piece's last entry
    for s in range(lo, hi, PIECE):
        e = min(hi, s + PIECE)
        w = words[s:e]
        mat, row = w[:, 0], w[:, 1]
        mx = np.maximum(mx, (mat.max(), row.max(), w[:, 2].max()))
        piece_b = int(mat.sum(dtype=np.uint64))
        n_b += piece_b
        head = (int(mat[0]), int(row[0]))
        if rows_up or keys_up:
            down = bool(np.any(row[1:] < row[:-1]))
            if prev is not None:
                rows_up = rows_up and head[1] >= prev[1]
                keys_up = keys_up and head >= prev
            rows_up = rows_up and not down
            if keys_up:
                if piece_b in (0, e - s):  # one matrix in the piece: its keys rise as its rows do
                    keys_up = not down
                else:
                    key = (mat.astype(np.uint64) << np.uint64(32)) | row
                    keys_up = not bool(np.any(key[1:] < key[:-1]))
        prev = (int(mat[-1]), int(row[-1]))
        if not value_bad and bool(rows_ge_mask(values[s:e], r).any()):
            value_bad = True
    first = (int(words[lo, 0]), int(words[lo, 1]))
    return _Part(mx, n_b, value_bad, rows_up, keys_up, first, prev)


def _ascending(parts: list[_Part]) -> bool:
    """Rows never decrease over the whole section, or (matrix, row) never does (within the parts
    and across their edges): either way each matrix's rows ascend in file order."""
    edges = list(zip(parts, parts[1:]))
    rows_up = all(p.rows_up for p in parts) and all(a.last[1] <= b.first[1] for a, b in edges)
    keys_up = all(p.keys_up for p in parts) and all(a.last <= b.first for a, b in edges)
    return rows_up or keys_up


def scan_coeffs(coeffs: np.ndarray, r: int, domain: int, n_vars: int) -> CoeffScan:
    """Check every entry (matrix 0 or 1, row < domain, wire < n_vars, value < r), in that order of
    checks, raising CoeffError for the first bad entry of the first failing one; else the counts
    and the order."""
    n = int(coeffs.shape[0])
    if n == 0:
        return CoeffScan(0, 0, True, source_of(coeffs))
    words, values = _words(coeffs), coeffs["value"]
    parts = over_rows(n, coeffs.dtype.itemsize, lambda lo, hi: _scan_part(words, values, lo, hi, r))
    mx = np.max([p.mx for p in parts], axis=0)
    for col, limit, what in ((0, 2, "matrix"), (1, domain, "row"), (2, n_vars, "wire")):
        if int(mx[col]) >= limit:
            i = int(np.argmax(words[:, col] >= limit))
            raise CoeffError(i, what, int(words[i, col]))
    if any(p.value_bad for p in parts):
        raise CoeffError(first_row_ge(values, r), "value", None)
    n_b = sum(p.n_b for p in parts)
    return CoeffScan(n - n_b, n_b, _ascending(parts), source_of(coeffs))


def source_of(coeffs: np.ndarray) -> tuple[int, int]:
    return int(coeffs.__array_interface__["data"][0]), int(coeffs.shape[0])


def scan_of(zkey) -> CoeffScan:
    """The key's scan: made by read_zkey for a key read from a file; made now (and kept) for a key
    built in memory (setup, tests, benchmarks), which read_zkey never checked, or whose coeffs were
    replaced since (another array: the scan is of the array the key holds now)."""
    found = getattr(zkey, "coeff_scan", None)
    if found is None or found.source != source_of(zkey.coeffs):
        found = scan_coeffs(zkey.coeffs, zkey.curve.r, zkey.domain_size, zkey.n_vars)
        zkey.coeff_scan = found
    return found
