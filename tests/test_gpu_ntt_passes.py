"""The NTT's two pass kernels on the device: the narrow passes (two elements a thread, one level a step,
what lone transforms up to ntt.NARROW_MAX_LOG run) against the wide ones (four elements a thread, two
levels a round), bit for bit, and both against the CPU reference.  test_gpu_kernels.py's NTT tests run
whichever the default picks; here each size runs both, so neither goes unchecked where the other is the
default."""
from __future__ import annotations

import numpy as np
import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.limbs import from_ints, to_ints
from engine.algebra.ntt import ntt as cpu_ntt
from engine.backends.select import cuda_device_count
from test_gpu_kernels import backend  # noqa: F401  (the module's GpuBackend fixture)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]


def _random_fr(curve, n: int, seed: int) -> np.ndarray:
    """n values below r as limbs (below r's top limb: uniform enough, fast at 2^20), with 0, 1 and r - 1
    among them."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    x[:, 3] %= np.uint64(curve.r >> 192)
    for i, v in enumerate([0, 1, curve.r - 1][:n]):
        x[(i * 7919) % n] = from_ints([v], 4)[0]
    return x


def _passes(backend, curve, k: int, shoup: bool, narrow: bool, monkeypatch) -> tuple[np.ndarray, np.ndarray]:
    """The forward DIT and the inverse DIF with the coset factors applied by its last pass (as the prover
    runs them), on the same random input, through the narrow or the wide passes."""
    from cuda_kernels.driver import Device
    from engine.backends.gpu import ntt as gntt

    monkeypatch.setattr(gntt, "NARROW_MAX_LOG", 20 if narrow else 0)
    mod, stream = backend._run(curve)
    dev = backend.device
    host = _random_fr(curve, 1 << k, seed=1000 * k + shoup)
    tables = gntt.build_tables(dev, mod, curve, k, stream, coset=True, shoup=shoup)
    outs = []
    for forward in (True, False):
        buf = dev.alloc(host.nbytes, stream)
        Device.upload(buf, host, stream)
        if forward:
            gntt.dit(mod, buf, tables, stream, inverse=False)
        else:
            gntt.dif(mod, buf, tables, stream, inverse=True, scale=tables.coset)
        got = np.empty_like(host)
        Device.download(got, buf, stream)
        stream.synchronize()
        Device.free(buf, stream)
        outs.append(got)
    tables.free(stream)
    stream.synchronize()
    return outs[0], outs[1]


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
@pytest.mark.parametrize("shoup", [True, False], ids=["shoup", "montgomery"])
@pytest.mark.parametrize("k", list(range(1, 21)))
def test_narrow_passes_give_the_wide_passes_results(backend, curve, shoup, k, monkeypatch):
    """Every size the narrow passes take (2^1 .. 2^20: one pass, two passes, a group of 512 threads at
    b = 10, groups within a warp and across warps), forward and inverse with the coset, both twiddle forms."""
    narrow = _passes(backend, curve, k, shoup, True, monkeypatch)
    wide = _passes(backend, curve, k, shoup, False, monkeypatch)
    assert np.array_equal(narrow[0], wide[0]), ("forward", k)
    assert np.array_equal(narrow[1], wide[1]), ("inverse with coset", k)


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
@pytest.mark.parametrize("k", [1, 2, 5, 6, 7, 9, 12, 16])
@pytest.mark.parametrize("narrow", [True, False], ids=["narrow", "wide"])
def test_each_pass_kind_matches_the_cpu_ntt(backend, curve, k, narrow, monkeypatch):
    """Both kinds against the CPU reference, through the backend's own transform (Montgomery form in and
    out, the bit reversals, the coset on either side)."""
    from engine.backends.gpu import ntt as gntt

    monkeypatch.setattr(gntt, "NARROW_MAX_LOG", 20 if narrow else 0)
    vals = to_ints(_random_fr(curve, 1 << k, seed=k))
    for inverse, coset in ((False, False), (True, True)):
        got = to_ints(backend.ntt(curve, from_ints(vals, 4), inverse=inverse, coset=coset))
        assert got == cpu_ntt(curve, vals, inverse=inverse, coset=coset), (k, inverse, coset)
