"""plan_key asked for very many proofs in flight (`info --proofs N`, a service's slots): each candidate was listed
at every count from the most that fit down to 1, so a small key beside a big budget took seconds and a
working set of 0 bytes (1 << 62 proofs fit) never ended.  Each candidate is now taken at its most that fit."""
from __future__ import annotations

import subprocess
import sys

from engine.algebra.curves import BN254
from engine.backends.gpu import footprint
from engine.backends.gpu.footprint import KeyShape, key_candidates, plan_key

GiB = 1 << 30
TINY = KeyShape(BN254, 1 << 4, 1 << 5, 2 << 4, 2 << 4, 1)


def test_a_small_key_asked_for_a_billion_proofs_tries_each_candidate_once(monkeypatch):
    """A 16-constraint key beside 139 GiB: 6915 working sets fit, and every count from there down was tried for
    every candidate (4.1 s on the development machine; plan_key runs per key load and per `info`)."""
    tried = []
    real = footprint._fits
    monkeypatch.setattr(footprint, "_fits", lambda fp, budget, n: tried.append(n) or real(fp, budget, n))
    fp = plan_key(TINY, 139 * GiB, proofs=10 ** 9)
    assert len(tried) <= len(key_candidates(TINY).every)
    room = 139 * GiB - fp.device_bytes
    assert 1 < fp.proofs_in_flight == room // fp.working_set_bytes < 10 ** 9
    assert plan_key(TINY, 139 * GiB, proofs=3).proofs_in_flight == 3  # what fits is what was asked


ZERO = """
import dataclasses
from engine.algebra.curves import BN254
from engine.backends.gpu.footprint import KeyShape, _plan_key, key_candidates
shape = KeyShape(BN254, 1 << 10, 1 << 11, 2 << 10, 2 << 10, 1)
c = key_candidates(shape)
c = dataclasses.replace(c, residents=tuple(dataclasses.replace(fp, working_set_bytes=0) for fp in c.residents))
fp = _plan_key(c, 1 << 40, proofs=10 ** 20, label="k.zkey", proofs_per_load=None)
print(fp.proofs_in_flight)
"""


def test_a_working_set_of_no_bytes_is_planned_at_the_count_asked():
    got = subprocess.run([sys.executable, "-c", ZERO], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.split() == [str(10 ** 20)]

