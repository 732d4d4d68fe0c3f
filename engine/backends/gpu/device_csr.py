"""The CSR of A and B built on the device from the zkey's raw coeffs records (cuda_kernels/csr.cuh).

On a first load (no key-cache entry) the host used to build the CSR itself
(key.csr_from_coeffs: a stable sort by row, gathers of the 44-byte records'
columns into fresh arrays; 0.66 s at 2^22 and 2.8 s at 2^24 on the H200's host)
before the upload could start.  Instead the section's records stream to a
scratch buffer through the same staging as the points (a range of the file,
read with preadv, when the file is the one that was mapped), and four kernels
build both matrices' CSR from it: a count of B's records per tile of 256, a
scan of those counts, the split of every record to its matrix's wires, values
and rows at its place, and each matrix's row_ptr by binary search over its rows.

That needs each matrix's rows to ascend in file order, as snarkjs (rows
ascending, A's and B's terms of a row interleaved) and our setup (A's block,
then B's) write them; read_zkey's one pass over the coeffs says so
(`CoeffScan.rows_ascending`).  A key in any other order keeps the host build, so
the device never sees an order it cannot handle.  Both give the same bytes
(tests/test_gpu_csr.py).  The scratch (44 bytes a record, plus 4 for its row and
4 per 256 for the tile counts) lives only until the kernels have run: it is
freed on the upload stream behind them.
"""
from __future__ import annotations

import numpy as np

from cuda_kernels.driver import U32, launch
from engine.backends.gpu import staging
from engine.formats.coeffs_scan import CoeffScan
from engine.formats.zkey import COEFF_DTYPE

RECORD_BYTES = COEFF_DTYPE.itemsize  # 44: matrix, row, wire (u32 each), value (4 x u64)
KERNELS = ("csr_count", "csr_scan_tiles", "csr_split", "csr_row_ptr")
TILE = 256  # csr.cuh's CSR_TILE
SCAN_THREADS = 1024  # and CSR_SCAN_THREADS


def usable(scan: CoeffScan) -> bool:
    """Whether the device can build this key's CSR (each matrix's rows ascending in file order)."""
    return scan.rows_ascending


def part_sizes(scan: CoeffScan, domain: int) -> list[tuple[int, int, int]]:
    """Bytes of (row_ptr, wires, values) for A, then B: the same arrays the host build makes."""
    return [(4 * (domain + 1), 4 * nnz, 32 * nnz) for nnz in (scan.n_a, scan.n_b)]


def records_source(zkey, fd: int | None):
    """The records (without the section's leading nCoef word): a range of the zkey's file when it
    is open and unchanged (key._open_unchanged), else the mapped array's bytes."""
    coeffs = zkey.coeffs
    nbytes = int(coeffs.shape[0]) * RECORD_BYTES
    sections = getattr(zkey, "sections", None)
    if fd is not None and sections and 4 in sections:
        offset, size = sections[4]
        if size == 4 + nbytes:
            return staging.FileRange(fd, offset + 4, nbytes, zkey.path)
    return np.ascontiguousarray(coeffs).view(np.uint8)


def scratch_bytes(scan: CoeffScan) -> int:
    """The scratch beside the records: every record's row (4 bytes) and the tiles' counts."""
    n = scan.n_a + scan.n_b
    return 4 * n + 4 * (-(-n // TILE) + 1)


def build_bytes(scan: CoeffScan) -> int:
    """Device bytes a build holds beside the key until its kernels ran (the raw records and the
    scratch; key.py `_device_csr`), for the footprint's count of a first load; 0: not usable."""
    if not usable(scan):
        return 0
    return (scan.n_a + scan.n_b) * RECORD_BYTES + scratch_bytes(scan)


def enqueue(module, stream, records: int, scratch: int, scan: CoeffScan, domain: int, bufs) -> None:
    """Launch the kernels filling `bufs` ([[row_ptr, wires, values] of A, of B]) from the records at
    device address `records` on `stream` (behind the records' copies); `scratch`: scratch_bytes."""
    n = scan.n_a + scan.n_b
    tiles = -(-n // TILE)
    rows_a, rows_b, tile_b = scratch, scratch + 4 * scan.n_a, scratch + 4 * n
    (ptr_a, wires_a, values_a), (ptr_b, wires_b, values_b) = bufs
    launch(module, "csr_count", tiles, TILE, stream, records, U32(n), tile_b)
    launch(module, "csr_scan_tiles", 1, SCAN_THREADS, stream, tile_b, U32(tiles))
    launch(module, "csr_split", tiles, TILE, stream, records, U32(n), tile_b,
           wires_a, values_a, rows_a, wires_b, values_b, rows_b)
    for rows, nnz, row_ptr in ((rows_a, scan.n_a, ptr_a), (rows_b, scan.n_b, ptr_b)):
        launch(module, "csr_row_ptr", -(-(domain + 1) // 256), 256, stream, rows, U32(nnz), U32(domain), row_ptr)
