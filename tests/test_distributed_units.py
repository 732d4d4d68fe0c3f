"""engine.distributed without Ray: the placement policy (on a fake clock) and errors across the actor boundary."""
import pickle

import pytest

from engine.distributed.placement import Placement
from engine.distributed.transport import Failure, failure, pack, unpack
from engine.errors import (
    EngineError,
    FormatError,
    InputFileError,
    KernelCompileError,
    MismatchError,
    UnsatisfiedWitnessError,
)
from scheduler.synth_pool import SynthesisCrashedError


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def run_batch(placement: Placement, clock: Clock, speeds: list[float], jobs: int) -> list[int]:
    """Simulate engines of the given seconds-per-proof serving `jobs` one-proof jobs; returns jobs per engine."""
    finish: list[tuple[float, int]] = []  # (time, engine)
    busy_until = [0.0] * len(speeds)
    done = [0] * len(speeds)
    sent = 0
    while sent < jobs or finish:
        slot = placement.choose(1, key=1) if sent < jobs else None
        if slot is not None:
            placement.sent(slot, 1, key=1)
            busy_until[slot.index] = max(busy_until[slot.index], clock.now) + speeds[slot.index]
            finish.append((busy_until[slot.index], slot.index))
            sent += 1
            continue
        finish.sort()
        clock.now, index = finish.pop(0)
        placement.returned(placement.slots[index], 1, completed=True)
        done[index] += 1
    return done


def test_a_job_goes_to_the_engine_that_drains_first_not_round_robin():
    clock = Clock()
    placement = Placement([2, 2], clock=clock)
    done = run_batch(placement, clock, speeds=[0.1, 0.4], jobs=100)
    # round robin would give each 50 and take 50 x 0.4 s = 20 s; draining first gives the fast one ~4x as many
    assert done[0] + done[1] == 100
    assert done[0] >= 3 * done[1], done
    assert placement.slots[0].seconds_per_proof == pytest.approx(0.1, rel=0.3)
    assert placement.slots[1].seconds_per_proof == pytest.approx(0.4, rel=0.3)
    assert clock.now < 0.75 * 20


def test_estimate_counts_queued_proofs_and_the_key_load_where_the_key_is_not_resident():
    placement = Placement([64, 64], clock=Clock())
    a, b = placement.slots
    a.seconds_per_proof = b.seconds_per_proof = 1.0
    placement.sent(a, 8, key=1)  # a big job holds engine a
    assert placement.choose(1, key=1) is b
    placement.key_loaded(2, 30.0)  # key 2 takes 30 s to load and is resident on a only
    a.keys.add(2)
    assert placement.estimate(a, 1, 2) == 9.0 and placement.estimate(b, 1, 2) == 31.0
    assert placement.choose(1, key=2) is a


def test_windows_hold_jobs_on_the_driver_and_an_idle_engine_takes_any_job():
    placement = Placement([2, 2], clock=Clock())
    for _ in range(4):
        placement.sent(placement.choose(1, key=1), 1, key=1)
    assert placement.choose(1, key=1) is None  # every window full: the job waits
    placement.returned(placement.slots[1], 1, completed=True)
    assert placement.choose(1, key=1) is placement.slots[1]
    idle = Placement([2], clock=Clock())
    assert idle.choose(10, key=1) is idle.slots[0]  # larger than the window, but the engine is idle


def test_a_lost_engine_gets_no_more_jobs_and_an_unmeasured_one_is_assumed_median():
    placement = Placement([4, 4, 4], clock=Clock())
    a, b, c = placement.slots
    a.seconds_per_proof, b.seconds_per_proof = 1.0, 3.0
    assert placement.estimate(c, 1, 1) == 2.0
    placement.lost(a)
    assert a not in placement.alive() and placement.choose(1, key=1) is not a
    placement.lost(b)
    placement.lost(c)
    assert placement.choose(1, key=1) is None and placement.alive() == []


@pytest.mark.parametrize("exc", [
    InputFileError("/keys/a.zkey", "no such file"),
    FormatError("/w/x.wtns", "truncated: section 2 ends past the file"),
    MismatchError("witness has 12 values, the key wants 14"),
    UnsatisfiedWitnessError("constraint 7 fails", constraint=7),
    KernelCompileError("nvrtc failed", log="line 3: error"),
    SynthesisCrashedError("a synthesis worker died"),
])
def test_an_engines_error_crosses_the_actor_boundary_as_itself(exc):
    # InputFileError(path, problem) does not survive plain pickling at all: the reason for transport.py
    back = unpack(failure(exc).packed)
    assert type(back) is type(exc) and str(back) == str(exc)
    assert vars(back) == vars(exc)


def test_plain_pickling_loses_an_input_file_error_which_is_why_errors_are_packed():
    with pytest.raises(TypeError):
        pickle.loads(pickle.dumps(InputFileError("/keys/a.zkey", "no such file")))


def test_an_error_that_cannot_be_pickled_comes_back_as_an_engine_error_with_its_message():
    class Local(EngineError):  # a class defined in a function cannot be pickled by reference
        pass

    err = Local("the device fell over")
    err.handle = lambda: None
    back = unpack(pack(err))
    assert type(back) is EngineError and "the device fell over" in str(back)
    assert isinstance(Failure(pack(err)), Failure)
