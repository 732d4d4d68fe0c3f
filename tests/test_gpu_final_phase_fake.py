"""A small proof's final phase on the fake driver (tests/fake_cuda.py): where its parts run and in which
order (tests/stream_order.py) for each of its layouts: pi_b beside after B2 (footprint.pi_b_beside), the phase
split around the join (footprint.final_split), the one launch; on six warps or four (epilogue.final_wide);
and the switches' defaults, as measured (perf/RESULTS.md, "Session 26")."""
from __future__ import annotations

import pytest

from test_gpu_tail_fake import _one_proof_ordered


@pytest.mark.parametrize("mode,wide", [("split", True), ("pi_b", True), ("pi_b", False), ("whole", True),
                                       ("whole", False)])
def test_a_small_proofs_final_phase_splits_around_its_join(mode, wide, monkeypatch):
    """Happens-before on the device (tests/stream_order.py).  split (GROTH16_FINAL_SPLIT=1): the final phase's
    first part (pi_a, pi_b, two Miller loops: kernels.cu op 6) runs on B2's stream after B2's accumulation,
    the A, B1, C sums and the early phase, and is not ordered after H or the join (it runs beside them);
    the join makes pi_c and its Miller loop (op 7), and the compute stream ends with the final exponentiation
    (op 8) after the join and the first part.  pi_b (the default, footprint.pi_b_beside): pi_b alone (op 9) on
    B2's stream after B2 and the early phase, beside H; the final phase without it (op 10) after it and the
    join (op 5).  whole (GROTH16_PI_B_BESIDE=0): the one final launch (op 2) after the join and B2.  The final
    phase on six warps (epilogue.final_wide, the default: ops 11 with pi_b given, 12 without) or four
    (GROTH16_FINAL_WIDE=0: ops 10, 2)."""
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    monkeypatch.setenv("GROTH16_FINAL_SPLIT", "1" if mode == "split" else "0")
    monkeypatch.setenv("GROTH16_PI_B_BESIDE", "0" if mode == "whole" else "1")
    monkeypatch.setenv("GROTH16_FRONT_BESIDE", "0")
    monkeypatch.setenv("GROTH16_FINAL_WIDE", "1" if wide else "0")
    given_b = gepi.TAIL_FINAL_WIDE_GIVEN_B if wide else gepi.TAIL_FINAL_GIVEN_B
    whole = gepi.TAIL_FINAL_WIDE if wide else gepi.TAIL_FINAL
    with _one_proof_ordered() as (backend, key, _st, core, order, proof):
        compute = backend.ctx.compute_stream(0).handle
        side = backend.side_streams.get(0, 0).handle
        side2 = backend.side_streams.get(0, 1).handle

        def tail(op):
            return [x for x in proof if x.name == "groth16_pairing" and x.first_arg & 0xFFFFFFFF == op]

        (early,) = tail(gepi.TAIL_EARLY)
        accs = [x for x in proof if x.name.startswith("msm_accumulate")]
        (b2_acc,) = [x for x in accs if x.stream == side2]
        g1_acc = [x for x in accs if x.stream == compute]
        abc, h_acc = g1_acc[0], g1_acc[-1]  # A, B1, C's launch set first, H's last
        assert abc.name.startswith("msm_accumulate_sets") and len(g1_acc) == 2
        last = proof[-1]
        assert last.stream == compute
        others = {gepi.TAIL_FINAL, gepi.TAIL_JOIN, gepi.TAIL_PRE_FINAL, gepi.TAIL_JOIN_C, gepi.TAIL_POST_FINAL,
                  gepi.TAIL_PI_B, gepi.TAIL_FINAL_GIVEN_B, gepi.TAIL_FINAL_WIDE_GIVEN_B, gepi.TAIL_FINAL_WIDE}
        if mode == "split":
            (pre,), (join,), (post,) = tail(gepi.TAIL_PRE_FINAL), tail(gepi.TAIL_JOIN_C), tail(gepi.TAIL_POST_FINAL)
            used = {gepi.TAIL_PRE_FINAL, gepi.TAIL_JOIN_C, gepi.TAIL_POST_FINAL}
            assert pre.stream == side2 and join.stream == side and post is last
            assert all(order.before(x, pre) for x in (b2_acc, abc, early))
            assert not order.before(h_acc, pre) and not order.before(join, pre)
            assert order.before(h_acc, join) and order.before(join, post) and order.before(pre, post)
            assert "side_final_pre" in core.timings
        elif mode == "pi_b":
            (pi_b,), (join,), (final,) = tail(gepi.TAIL_PI_B), tail(gepi.TAIL_JOIN), tail(given_b)
            used = {gepi.TAIL_PI_B, gepi.TAIL_JOIN, given_b}
            assert pi_b.stream == side2 and join.stream == side and final is last
            assert order.before(b2_acc, pi_b) and order.before(early, pi_b) and not order.before(h_acc, pi_b)
            assert all(order.before(x, final) for x in (pi_b, join, h_acc))
            assert "side_pi_b" in core.timings and "side_final_pre" not in core.timings
        else:
            (final,), (join,) = tail(whole), tail(gepi.TAIL_JOIN)
            used = {whole, gepi.TAIL_JOIN}
            assert final is last and all(order.before(x, final) for x in (b2_acc, join, h_acc))
            assert "side_final_pre" not in core.timings and "side_pi_b" not in core.timings
        assert not any(tail(op) for op in others - used)
        assert core.proof is not None


def test_pi_b_goes_beside_unless_switched_off(monkeypatch):
    from engine.backends.gpu import footprint  # noqa: PLC0415

    monkeypatch.delenv("GROTH16_PI_B_BESIDE", raising=False)
    assert footprint.pi_b_beside()
    monkeypatch.setenv("GROTH16_PI_B_BESIDE", "0")
    assert not footprint.pi_b_beside()


def test_the_final_split_is_off_unless_asked_for(monkeypatch):
    """Measured no faster than the one final launch (perf/RESULTS.md, "Session 26"): a switch for A/B only."""
    from engine.backends.gpu import footprint  # noqa: PLC0415

    monkeypatch.delenv("GROTH16_FINAL_SPLIT", raising=False)
    assert not footprint.final_split()
    monkeypatch.setenv("GROTH16_FINAL_SPLIT", "1")
    assert footprint.final_split()
    monkeypatch.setenv("GROTH16_FINAL_SPLIT", "0")
    assert not footprint.final_split()


def test_the_final_phase_goes_wide_unless_switched_off(monkeypatch):
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    monkeypatch.delenv("GROTH16_FINAL_WIDE", raising=False)
    assert gepi.final_wide()
    monkeypatch.setenv("GROTH16_FINAL_WIDE", "0")
    assert not gepi.final_wide()
