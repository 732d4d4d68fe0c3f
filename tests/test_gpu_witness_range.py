"""The witness's range check on the device (a GPU backend's `checks_witness_range`): callers skip the
host's pass over the values, the device's answer after the upload names the first unreduced row, and
the error names the input, through prover.prove and through the Engine, for that proof only.

CPU tests over the fake driver (tests/fake_cuda.py: its device-to-host copy of the range check's
16 bytes is made to say "row k"), and GPU tests of the kernel itself on both curves."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from conftest import FIXTURES
from engine.backends.select import cuda_device_count
from engine.errors import MismatchError, UnreducedWitnessError
from engine.formats import read_wtns, read_zkey
from engine.groth16 import prover
from fake_cuda import fake_driver

TINY = FIXTURES / "tiny"
requires_cuda = pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")


def _tiny(curve):
    return read_zkey(TINY / curve / "tiny.zkey"), np.asarray(read_wtns(TINY / curve / "tiny.wtns").values)


def _backend():
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    backend = GpuBackend(0)
    backend.ctx.prepare = lambda curve: b"fake cubin"
    return backend


def _answer(fake, rows):
    """Every 16-byte download (the range check's answer) says the next row of `rows` (None: all reduced)."""
    rows = list(rows)

    def hook(dst, nbytes):
        if nbytes == 16 and rows:
            row = rows.pop(0)
            if row is not None:
                ctypes.c_uint32.from_address(dst).value = 0xFFFFFFFF - row

    fake.download_hook = hook


def test_the_error_names_the_input_and_survives_pickling():
    import pickle

    err = UnreducedWitnessError(7).named("w.wtns")
    assert isinstance(err, MismatchError) and str(err) == "w.wtns: value 7 is not reduced modulo r"
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), back.row, str(back)) == (UnreducedWitnessError, 7, str(err))


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_device_answer_fails_that_proof_naming_the_row(curve):
    zkey, witness = _tiny(curve)
    with fake_driver() as fake:
        backend = _backend()
        assert backend.checks_witness_range
        key = backend.load_key(zkey)
        backend.maintain()  # pinned buffers: the answer comes back beside the results
        _answer(fake, [3])
        with pytest.raises(UnreducedWitnessError, match="value 3 is not reduced") as info:
            prover.prove(zkey, witness, backend, key, witness_name="tiny.wtns", verify=False)
        assert info.value.row == 3 and str(info.value).startswith("tiny.wtns: ")
        assert "witness_range_check" in fake.functions
        _answer(fake, [None])  # the next proof's witness is fine: no error (its device check says none)
        core = backend.prove_core(key, witness)
        assert core.proof is not None
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device and not fake.live_pinned


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_in_a_batch_only_the_unreduced_proof_fails(curve):
    zkey, witness = _tiny(curve)
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        backend.maintain()
        staged = [backend.stage(key, witness) for _ in range(3)]
        _answer(fake, [])
        # the answers were copied at stage time: write proof 1's into its pinned buffer as the device would
        st = staged[1].state
        st.host.array[st.range_offset:st.range_offset + 4].view(np.uint32)[0] = 0xFFFFFFFF - 2
        pendings = backend.compute_batch(staged)
        outcomes = []
        for p in pendings:
            try:
                outcomes.append(p.wait().proof is not None)
            except UnreducedWitnessError as exc:
                outcomes.append(exc.row)
        assert outcomes == [True, 2, True]
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device and not fake.live_pinned


def test_without_a_pinned_buffer_the_range_is_checked_at_staging(monkeypatch):
    zkey, witness = _tiny("bn128")
    bad = witness.copy()
    bad[2] = [0xFFFFFFFFFFFFFFFF] * 4
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)  # no maintain(): no pinned buffer, pageable upload
        with pytest.raises(UnreducedWitnessError, match="value 2 is not reduced"):
            backend.stage(key, bad)
        assert backend.device.pool_used_bytes() == sum(fake.live_device.values())
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device


def test_prove_skips_the_host_pass_only_for_a_backend_that_checks(monkeypatch):
    """The CPU backend does not check on a device: prove keeps the host's range check for it."""
    from engine.backends.cpu import CpuBackend  # noqa: PLC0415

    zkey, witness = _tiny("bn128")
    bad = witness.copy()
    bad[1] = [0xFFFFFFFFFFFFFFFF] * 4
    assert not CpuBackend().checks_witness_range
    with pytest.raises(UnreducedWitnessError, match="w: value 1 is not reduced"):
        prover.prove(zkey, bad, CpuBackend(), witness_name="w", verify=False)
    calls = []
    monkeypatch.setattr(prover, "first_row_ge", lambda *a: calls.append(a) or -1)
    prover.check_witness_for_key(zkey, zkey.curve.r, witness, range_check=False)
    assert not calls


# ---- on the device

def _gpu_backend():
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    return GpuBackend(0)


@requires_cuda
@pytest.mark.gpu
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_the_device_finds_the_first_unreduced_row(curve):
    """Values r, r + 1, r + 2^64 (equal low words), 2^256 - 1 at seeded rows (several at once: the
    first is named), r - 1 everywhere valid; the engine keeps proving with the same key after."""
    from engine.algebra.limbs import from_ints  # noqa: PLC0415

    zkey, witness = _tiny(curve)
    r = zkey.curve.r
    backend = _gpu_backend()
    try:
        key = backend.load_key(zkey)
        backend.maintain()
        rng = np.random.default_rng(11)
        n = witness.shape[0]
        for value in (r, r + 1, r + (1 << 64), r + (1 << 192), (1 << 256) - 1):
            rows = sorted(rng.choice(np.arange(1, n), size=min(3, n - 1), replace=False).tolist())
            bad = witness.copy()
            for row in rows:
                bad[row] = from_ints([value], 4)[0]
            with pytest.raises(UnreducedWitnessError) as info:
                backend.prove_core(key, bad)
            assert info.value.row == rows[0], (hex(value), rows)
        edge = witness.copy()
        edge[1:] = from_ints([r - 1], 4)[0]  # the largest reduced value: no error (the proof is of garbage,
        core = backend.prove_core(key, edge)  # and its device check says so, but the range is fine)
        assert core.proof is not None
        good = backend.prove_core(key, witness)
        assert good.verified is True
        backend.unload_key(key)
    finally:
        backend.close()


@requires_cuda
@pytest.mark.gpu
def test_the_engine_names_the_input_and_keeps_serving():
    import anyio  # noqa: PLC0415

    from engine.api import Engine  # noqa: PLC0415
    from engine.config import EngineConfig  # noqa: PLC0415
    from engine.formats.wtns import Witness  # noqa: PLC0415

    zkey_path = TINY / "bn128" / "tiny.zkey"
    w = read_wtns(TINY / "bn128" / "tiny.wtns")
    bad_values = np.array(w.values)
    bad_values[4] = [0xFFFFFFFFFFFFFFFF] * 4

    async def main():
        async with Engine(EngineConfig(backend="gpu")) as eng:
            key = await eng.load_key(zkey_path)
            with pytest.raises(UnreducedWitnessError, match="value 4 is not reduced"):
                await eng.prove(key, Witness(None, w.prime, w.curve, bad_values))
            proof = await eng.prove(key, w)
            assert proof.pi_a is not None

    anyio.run(main)


def test_the_engine_leaves_the_range_to_the_device_and_names_the_input(monkeypatch):
    """Through the Engine (fake driver): no host pass over the values before the device (prover's
    check is not called on them), and the device's answer comes out as the input's own error."""
    import anyio  # noqa: PLC0415

    from engine.api import Engine  # noqa: PLC0415
    from engine.config import EngineConfig  # noqa: PLC0415
    from engine.formats.wtns import Witness  # noqa: PLC0415

    zkey_path = TINY / "bn128" / "tiny.zkey"
    w = read_wtns(TINY / "bn128" / "tiny.wtns")
    bad = np.array(w.values)
    bad[4] = [0xFFFFFFFFFFFFFFFF] * 4  # caught by the device (pinned buffer) or by the memory phase (pageable)
    host_checks = []
    real = prover.first_row_ge
    monkeypatch.setattr(prover, "first_row_ge", lambda v, m: host_checks.append(v.shape) or real(v, m))

    async def main(fake):
        async with Engine(EngineConfig(), backends=[_backend()]) as eng:
            key = await eng.load_key(zkey_path)
            _answer(fake, [4] * 64)
            with pytest.raises(UnreducedWitnessError, match=r"^my witness: value 4 is not reduced"):
                await eng.prove(key, Witness("my witness", w.prime, w.curve, bad))

    with fake_driver() as fake:
        anyio.run(main, fake)
    assert not host_checks
