"""The host's part of a key load, on a machine without a GPU: parsing, the CSR build (new and
old), the cache write, and the read pipeline of a cached load with the device copies left out.

    python perf/keyload_host.py [--log-constraints 22] [--workdir DIR]

Uses perf/keyload.py's synthetic zkey (its docstring says what it holds).  The
"cached host pipeline" runs engine/backends/gpu/staging.py with a stand-in for the
driver's copy, so it shows how fast the reader threads fill pinned-size buffers
from the page cache; the device's copies and window tables are not in it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))

import numpy as np  # noqa: E402

from engine.backends.gpu import staging  # noqa: E402
from engine.backends.gpu.key import CSR_PARTS, cache_layout, csr_from_coeffs  # noqa: E402
from engine.formats import key_cache as kc  # noqa: E402
from engine.formats.zkey import read_zkey  # noqa: E402
from keyload import legacy_csr, read_file_s, synthetic_zkey  # noqa: E402
from script_args import Parser, output_dir, positive, run_main  # noqa: E402


class _NoDevice:
    @staticmethod
    def upload(*args, **kwargs):
        pass


class _NoEvent:
    def __init__(self, *a, **k):
        pass

    def record(self, stream):
        return self

    def synchronize(self):
        pass

    def destroy(self):
        pass


class _NoPinned:
    def take(self, nbytes, tag=None, *, count_miss=True):
        return None  # staging falls back to its pageable buffers

    def give_back(self, b):
        pass


class _HostCtx:
    pinned = _NoPinned()


def median_s(fn, n=3):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-constraints", type=positive, default=22)
    ap.add_argument("--workdir", type=output_dir)
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="keyload-host-"))
    work.mkdir(parents=True, exist_ok=True)  # a --workdir not there yet (script_args.output_dir checked its path)
    path = work / f"synthetic_bn128_{args.log_constraints}.zkey"
    if not path.exists():
        synthetic_zkey(path, "bn128", args.log_constraints)
    staging.Device, staging.Event = _NoDevice, _NoEvent
    print(f"zkey {path.stat().st_size / 1e9:.3f} GB; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    print(f"read the file (4 MiB reads):   {min(read_file_s(path) for _ in range(3)):.3f} s")
    print(f"read_zkey:                     {median_s(lambda: read_zkey(path)):.3f} s")
    z = read_zkey(path)
    print(f"CSR build, before (argsort):   {median_s(lambda: [legacy_csr(z.coeffs, m, z.domain_size) for m in (0, 1)], 1):.3f} s")
    csr = [csr_from_coeffs(z.coeffs, m, z.domain_size) for m in (0, 1)]
    print(f"CSR build, now:                {median_s(lambda: [csr_from_coeffs(z.coeffs, m, z.domain_size) for m in (0, 1)]):.3f} s")
    arrays = {f"{tag}.{part}": a for tag, c in zip("ab", csr) for part, a in zip(CSR_PARTS, c)}
    cache = kc.KeyCache(work / "cache")
    cache.clear()
    ident = kc.identity_of(z, cache_layout())
    mb = sum(a.nbytes for a in arrays.values()) / 1e6
    print(f"cache write ({mb:.0f} MB):         {median_s(lambda: cache.store(ident, arrays), 1):.3f} s")

    def pipeline():
        entry = cache.load(ident)
        fd = os.open(path, os.O_RDONLY)
        jobs = [staging.Job(0, staging.FileRange(entry.fd, off, n)) for off, n in entry.ranges.values()]
        jobs += [staging.Job(0, staging.FileRange(fd, *z.sections[s])) for s in (5, 6, 8, 7, 9)]
        st = staging.upload(_HostCtx(), None, jobs)
        os.close(fd)
        entry.close()
        return st

    nbytes = pipeline().nbytes
    t = median_s(pipeline)
    print(f"cached host pipeline:          {t:.3f} s for {nbytes / 1e9:.2f} GB ({nbytes / t / 1e9:.1f} GB/s)")
    print(f"read_zkey + that pipeline:     {median_s(lambda: (read_zkey(path), pipeline())):.3f} s")


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
