"""Budgets: all-or-nothing, first come first served, cancellation-safe (design.md §5 rules 2, 4, 6)."""
import anyio
import pytest

from engine.errors import BudgetError
from cuda_kernels import device_global as guard
from scheduler.budget import Budget


async def _settle():
    for _ in range(5):
        await anyio.sleep(0)


async def test_budget_grants_in_arrival_order():
    budget = Budget([10], name="test budget")
    first = await budget.reserve(10)
    order = []

    async def want(tag, n):
        res = await budget.reserve(n)
        order.append(tag)
        await anyio.sleep(0.01)
        res.release()

    async with anyio.create_task_group() as tg:
        for tag in "abcd":
            tg.start_soon(want, tag, 6)
            await _settle()
        first.release()
    assert order == list("abcd")
    assert budget.at_rest()


async def test_large_request_is_not_starved_by_small_ones():
    budget = Budget([10], name="test budget")
    held = await budget.reserve(4)
    order = []

    async def want(tag, n, hold=0.0):
        res = await budget.reserve(n)
        order.append(tag)
        await anyio.sleep(hold)
        res.release()

    async with anyio.create_task_group() as tg:
        tg.start_soon(want, "big", 10)
        await _settle()
        for i in range(5):  # each would fit beside `held`, but the big one came first
            tg.start_soon(want, f"small{i}", 2)
        await _settle()
        assert order == []
        held.release()
    assert order[0] == "big"
    assert budget.at_rest()


async def test_request_larger_than_whole_budget_fails_at_once():
    budget = Budget([8 << 30, 4 << 30], name="VRAM budget")
    with anyio.fail_after(1):
        with pytest.raises(BudgetError, match=r"job 3: needs 9\.0 GiB of VRAM budget .* 8\.0 GiB"):
            await budget.reserve(9 << 30, label="job 3")
    assert budget.waiting() == 0
    with pytest.raises(BudgetError):
        await budget.reserve(5 << 30, pools=[1])  # only pool 1 allowed, and it is too small


async def test_cancelled_waiter_leaves_budget_as_it_was_and_unblocks_those_behind():
    budget = Budget([10], name="test budget")
    held = await budget.reserve(5)
    got = []

    async def want(n):
        got.append(await budget.reserve(n))

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancellable_want, budget, 8, scope)
        await _settle()
        tg.start_soon(want, 5)  # would fit now, but is queued behind the 8
        await _settle()
        assert got == [] and budget.waiting() == 2
        scope.cancel()
        await _settle()
    assert len(got) == 1 and budget.available() == 0
    got[0].release()
    held.release()
    assert budget.at_rest()


async def _cancellable_want(budget, n, scope):
    with scope:
        await budget.reserve(n)
        raise AssertionError("should have been cancelled while waiting")


async def test_grant_racing_a_cancel_returns_the_bytes():
    budget = Budget([10], name="test budget")
    held = await budget.reserve(10)

    outcome = []

    async def want(scope):
        with scope:
            try:
                outcome.append(await budget.reserve(10))
            except anyio.get_cancelled_exc_class():
                outcome.append("cancelled")
                raise

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(want, scope)
        await _settle()
        held.release()  # grants the waiter ...
        scope.cancel()  # ... which is cancelled before it runs again
    assert outcome == ["cancelled"]
    assert budget.at_rest()


async def test_head_of_queue_goes_to_the_pool_that_frees_first():
    budget = Budget([10, 10], name="VRAM budget")
    a = await budget.reserve(10)
    b = await budget.reserve(10)
    assert {a.pool, b.pool} == {0, 1}
    result = []

    async def want():
        result.append(await budget.reserve(6))

    async with anyio.create_task_group() as tg:
        tg.start_soon(want)
        await _settle()
        b.release()
    assert result[0].pool == b.pool
    result[0].release()
    a.release()
    assert budget.at_rest()


async def test_shrinking_capacity_fails_waiters_that_no_longer_fit():
    budget = Budget([10], name="VRAM budget")
    held = await budget.reserve(10)
    errors = []

    async def want():
        try:
            await budget.reserve(9, label="job 1")
        except BudgetError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(want)
        await _settle()
        budget.adjust_capacity(0, -4)  # a resident key took 4
    assert errors and "job 1" in str(errors[0])
    held.release()
    assert budget.available() == 6
    budget.adjust_capacity(0, 4)
    assert budget.at_rest()


async def test_proof_reservations_are_visible_to_the_guard():
    budget = Budget([10, 10], name="VRAM budget", guard_devices=[7, 8])
    try:
        res = await budget.reserve(3, pools=[1])
        assert guard.reservations_outstanding(8) == 1
        assert guard.reservations_outstanding(7) == 0
        maint = await budget.reserve_pool(0)  # maintenance (trim) is not a proof reservation
        assert guard.reservations_outstanding(7) == 0
        maint.release()
        res.release()
        assert guard.reservations_outstanding(8) == 0
    finally:
        budget.close()
    assert guard.reservations_outstanding(8) == 0
