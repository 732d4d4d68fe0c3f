"""The memory lock and compute slots: FIFO, numbered, never two held (design.md §5 rule 3)."""
import anyio
import pytest

from scheduler.locks import DeviceLocks, FifoSlots, LockOrderError


async def _settle():
    for _ in range(5):
        await anyio.sleep(0)


async def test_slots_are_granted_in_arrival_order_with_distinct_numbers():
    slots = FifoSlots(2)
    order, in_use = [], set()

    async def worker(tag):
        async with slots.hold(tag) as slot:
            assert slot not in in_use
            in_use.add(slot)
            order.append(tag)
            await anyio.sleep(0.005)
            in_use.discard(slot)

    async with anyio.create_task_group() as tg:
        for tag in range(8):
            tg.start_soon(worker, tag)
            await _settle()
    assert order == list(range(8))
    assert slots.at_rest()


async def test_cancelled_slot_waiter_takes_nothing():
    slots = FifoSlots(1)
    first = await slots.acquire("a")
    scope = anyio.CancelScope()

    async def waiter():
        with scope:
            await slots.acquire("b")

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await _settle()
        assert slots.waiting() == 1
        slots.release(first)  # hands the slot to b ...
        scope.cancel()  # ... which is cancelled before it resumes: b must give it back
    assert slots.at_rest()


async def test_compute_slot_is_refused_while_holding_the_memory_lock():
    locks = DeviceLocks("split", 2)
    async with locks.memory("job1"):
        with pytest.raises(LockOrderError):
            async with locks.compute("job1"):
                pass
    async with locks.compute("job1"):
        with pytest.raises(LockOrderError):
            async with locks.memory("job1"):
                pass
    assert locks.at_rest()


async def test_split_mode_lets_memory_phase_overlap_compute():
    locks = DeviceLocks("split", 1)
    async with locks.compute("job1"):
        with anyio.fail_after(1):
            async with locks.memory("job2"):  # another job uploads while job1 computes
                pass


async def test_single_mode_is_one_lock_over_both_phases():
    locks = DeviceLocks("single", 4)
    async with locks.single("job1") as slot:
        assert slot == 0
        with anyio.move_on_after(0.05) as scope:
            async with locks.single("job2"):
                pass
        assert scope.cancelled_caught
    assert locks.at_rest()


def test_unknown_lock_mode_is_refused():
    with pytest.raises(ValueError, match="lock mode"):
        DeviceLocks("triple", 1)
