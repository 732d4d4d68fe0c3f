"""A small proof's final phase on the fake driver (tests/fake_cuda.py): where its parts run and in which
order (tests/stream_order.py), with pi_b made beside after B2 (proof_streams.pi_b_beside, the default) and in
the final phase; the switch's default, as measured (perf/RESULTS.md, "Session 26")."""
from __future__ import annotations

import pytest

from test_gpu_tail_fake import _one_proof_ordered


@pytest.mark.parametrize("pi_b_beside", [True, False])
def test_a_small_proofs_pi_b_goes_beside_and_the_final_phase_after_everything(pi_b_beside, monkeypatch):
    """Happens-before on the device (tests/stream_order.py).  pi_b beside (the default): pi_b alone (kernels.cu
    op 9) on B2's stream after B2's accumulation and the early phase, not after H (beside it); the final phase
    without it (op 10) after it, the join (op 5) and H.  GROTH16_PI_B_BESIDE=0: the final phase that makes pi_b
    (op 2) after the join and B2."""
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    monkeypatch.setenv("GROTH16_PI_B_BESIDE", "1" if pi_b_beside else "0")
    monkeypatch.setenv("GROTH16_FRONT_BESIDE", "0")
    monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", "0")  # the mid phase's products (test_gpu_products_fake.py: with)
    with _one_proof_ordered() as (backend, key, _st, core, order, proof):
        compute = backend.ctx.compute_stream(0).handle
        side = backend.side_streams.get(0, 0).handle
        side2 = backend.side_streams.get(0, 1).handle

        def tail(op):
            return [x for x in proof if x.name == "groth16_pairing" and x.first_arg & 0xFFFFFFFF == op]

        (early,) = tail(gepi.TAIL_EARLY)
        accs = [x for x in proof if x.name.startswith("msm_accumulate")]
        (b2_acc,) = [x for x in accs if x.stream == side2]
        h_acc = [x for x in accs if x.stream == compute][-1]  # A, B1, C's launch set first, H's last
        (join,) = tail(gepi.TAIL_JOIN)
        assert join.stream == side and proof[-1].stream == compute
        if pi_b_beside:
            (pi_b,), (final,) = tail(gepi.TAIL_PI_B), tail(gepi.TAIL_FINAL_GIVEN_B)
            assert not tail(gepi.TAIL_FINAL)
            assert pi_b.stream == side2 and final is proof[-1]
            assert order.before(b2_acc, pi_b) and order.before(early, pi_b) and not order.before(h_acc, pi_b)
            assert all(order.before(x, final) for x in (pi_b, join, h_acc))
            assert "side_pi_b" in core.timings
        else:
            (final,) = tail(gepi.TAIL_FINAL)
            assert not tail(gepi.TAIL_PI_B) and not tail(gepi.TAIL_FINAL_GIVEN_B)
            assert final is proof[-1] and all(order.before(x, final) for x in (b2_acc, join, h_acc))
            assert "side_pi_b" not in core.timings
        assert core.proof is not None


def test_pi_b_goes_beside_unless_switched_off(monkeypatch):
    from engine.backends.gpu import proof_streams  # noqa: PLC0415

    monkeypatch.delenv("GROTH16_PI_B_BESIDE", raising=False)
    assert proof_streams.pi_b_beside()
    monkeypatch.setenv("GROTH16_PI_B_BESIDE", "0")
    assert not proof_streams.pi_b_beside()
