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


async def test_a_wide_holder_takes_several_slots_and_keeps_fifo_order():
    """compute_slots "auto": a proof that computes alone takes every slot; the FIFO is kept, so a
    narrow caller behind a waiting wide one does not overtake it (and cannot starve it)."""
    slots = FifoSlots(2)
    a = await slots.acquire("a")  # one slot held
    order = []

    async def take(tag, count):
        async with slots.hold(tag, count) as slot:
            order.append((tag, slot, slots.in_use))
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(take, "wide", 2)
        await _settle()
        tg.start_soon(take, "narrow", 1)  # one slot is free, but the wide caller is ahead
        await _settle()
        assert order == [] and slots.waiting() == 2
        slots.release(a)
    assert [(tag, used) for tag, _, used in order] == [("wide", 2), ("narrow", 1)]
    assert slots.at_rest()


async def test_a_wide_request_is_clamped_to_the_slots_there_are():
    slots = FifoSlots(2)
    async with slots.hold("x", 5) as slot:
        assert slots.in_use == 2 and slots.holders() == {"x"}
    assert slots.at_rest()
    with pytest.raises(RuntimeError, match="released but not held"):
        slots.release(slot)


async def test_a_cancelled_wide_waiter_lets_the_narrow_ones_behind_it_through():
    slots = FifoSlots(2)
    a = await slots.acquire("a")
    scope = anyio.CancelScope()
    got = []

    async def wide():
        with scope:
            await slots.acquire("wide", 2)

    async def narrow():
        async with slots.hold("narrow") as slot:
            got.append(slot)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wide)
        await _settle()
        tg.start_soon(narrow)
        await _settle()
        assert got == [] and slots.waiting() == 2
        scope.cancel()  # the free slot now goes to the narrow caller, without waiting for "a"
        await _settle()
        assert got == [1]
        slots.release(a)
    assert slots.at_rest()


async def test_device_compute_with_every_slot_runs_alone():
    locks = DeviceLocks("split", 2)
    async with locks.compute("alone", 2):
        assert locks.compute_slots.in_use == 2
    async with locks.compute("p1") as s1, locks.compute("p2") as s2:
        assert {s1, s2} == {0, 1}
    assert locks.at_rest()
