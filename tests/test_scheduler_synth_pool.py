"""The synthesis pool: spawn/forkserver workers, witnesses back through shared memory, crashes contained."""
import os
import pickle

import anyio
import numpy as np
import pytest

from engine.errors import EngineError, MismatchError
from scheduler.shm import ShmBlock, shm_dir
from scheduler.simulated import simulated_synthesis
from scheduler.synth_pool import SynthesisCrashedError, SynthPool

ROWS = 1 << 15  # 1 MiB of witness


def _leftover_blocks():
    return {n for n in os.listdir(shm_dir()) if n.startswith(f"g16w-{os.getpid()}-")}


async def test_witness_comes_back_through_shared_memory_not_a_pickle():
    before = _leftover_blocks()
    pool = SynthPool(2)
    await pool.start()
    try:
        result = await pool.run(simulated_synthesis, (ROWS, 0, 7, {}), ROWS * 32)
        _, expected = simulated_synthesis(ROWS, 0, 7, {})
        assert np.array_equal(result.values, expected)
        assert not result.values.flags.owndata and result.block.size == ROWS * 32  # a view of the block
        assert pool.max_reply_bytes < 1024  # only (meta, shape, dtype) crossed the pipe
        assert pool.max_reply_bytes < len(pickle.dumps(expected)) // 1000
        result.release()
    finally:
        await pool.close()
    assert _leftover_blocks() == before


async def test_crashing_worker_fails_only_its_task_and_the_pool_recovers():
    pool = SynthPool(2)
    await pool.start()
    try:
        async def good(i):
            r = await pool.run(simulated_synthesis, (64, 30, i, {}), 64 * 32)
            r.release()
            return i

        outcomes = {}

        async def run(tag, options):
            try:
                r = await pool.run(simulated_synthesis, (64, 30, 1, options), 64 * 32, label=f"task {tag}")
                r.release()
                outcomes[tag] = "ok"
            except EngineError as exc:
                outcomes[tag] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "crash", {"crash": True})
            for i in range(4):
                tg.start_soon(run, i, {})
        assert isinstance(outcomes.pop("crash"), SynthesisCrashedError)
        assert all(v == "ok" for v in outcomes.values())
        await pool.wait_ready()
        assert pool.alive() == 2 and pool.restarts == 1 and pool.at_rest()
        assert await good(9) == 9
    finally:
        await pool.close()


async def test_worker_error_keeps_its_type_and_message():
    pool = SynthPool(1)
    await pool.start()
    try:
        with pytest.raises(EngineError, match="^witness of job 4 is bad$"):
            await pool.run(simulated_synthesis, (8, 0, 1, {"fail": "witness of job 4 is bad"}), 8 * 32)
        assert pool.alive() == 1 and pool.restarts == 0  # a raised error does not cost the worker
    finally:
        await pool.close()


async def test_cancelling_a_task_kills_its_worker_and_the_pool_recovers():
    before = _leftover_blocks()
    pool = SynthPool(1)
    await pool.start()
    try:
        with anyio.move_on_after(0.2) as scope:
            await pool.run(simulated_synthesis, (8, 0, 1, {"synth_ms": 30_000}), 8 * 32)
        assert scope.cancelled_caught
        await pool.wait_ready()
        assert pool.at_rest() and pool.restarts == 1
        r = await pool.run(simulated_synthesis, (8, 0, 1, {}), 8 * 32)
        r.release()
    finally:
        await pool.close()
    assert _leftover_blocks() == before


async def test_output_larger_than_its_reservation_is_a_clear_error():
    pool = SynthPool(1)
    await pool.start()
    try:
        with pytest.raises(MismatchError, match=r"task x: produced \(100, 4\) uint64 .* only 320 B were reserved"):
            await pool.run(simulated_synthesis, (100, 0, 1, {}), 320, label="task x")
    finally:
        await pool.close()


def test_fork_start_method_is_refused():
    with pytest.raises(ValueError, match="never fork"):
        SynthPool(1, start_method="fork")


async def test_spawn_start_method_works():
    pool = SynthPool(1, start_method="spawn")
    await pool.start()
    try:
        r = await pool.run(simulated_synthesis, (16, 0, 3, {}), 16 * 32)
        assert r.values.shape == (16, 4)
        r.release()
    finally:
        await pool.close()


def test_shared_memory_block_round_trip():
    block = ShmBlock.create(64)
    try:
        other = ShmBlock.attach(block.name)
        other.ndarray((8,), "<u8")[:] = np.arange(8, dtype=np.uint64)
        other.close()
        assert block.ndarray((8,), "<u8").tolist() == list(range(8))
    finally:
        block.release()
    assert not os.path.exists(block.path)


async def test_released_blocks_are_used_again_and_none_is_left_after_close():
    """A released witness's block serves the next task of its capacity (no file made and unlinked a
    witness: t13tput), each task's values are its own, and close() unlinks the kept ones."""
    before = _leftover_blocks()
    pool = SynthPool(2)
    await pool.start()
    try:
        names = set()
        for seed in range(6):
            result = await pool.run(simulated_synthesis, (256, 0, seed, {}), 256 * 32)
            assert np.array_equal(result.values, simulated_synthesis(256, 0, seed, {})[1])
            names.add(result.block.name)
            result.release()
            result.release()  # twice: nothing more
        assert len(names) == 1 and pool.free_blocks() == 1
        held = [await pool.run(simulated_synthesis, (256, 0, s, {}), 256 * 32) for s in range(3)]
        assert len({r.block.name for r in held}) == 3  # in use at once: each its own block
        assert [int(r.values[1, 0]) for r in held] == [int(simulated_synthesis(256, 0, s, {})[1][1, 0]) for s in range(3)]
        for r in held:
            r.release()
        assert pool.free_blocks() == 3
    finally:
        await pool.close()
    assert _leftover_blocks() == before


def _wtns_file(tmp_path, rows=ROWS):
    from engine.algebra.curves import BN254
    from engine.formats.wtns import write_wtns

    rng = np.random.default_rng(5)
    values = rng.integers(0, 1 << 62, size=(rows, 4), dtype=np.uint64)
    path = tmp_path / "w.wtns"
    write_wtns(path, BN254.r, values)
    return path, values


async def test_a_wtns_witness_is_copied_in_the_kernel_into_its_block(tmp_path):
    """A .wtns task hands back where its values lie in the file (FileSegment), not a mapped array; the
    worker sendfiles them into the witness's block and the values arrive exact."""
    from engine.groth16.kit import synthesise_wtns
    from scheduler.synth_pool import FileSegment

    path, values = _wtns_file(tmp_path)
    meta, seg = synthesise_wtns(str(path))
    assert isinstance(seg, FileSegment) and seg.shape == (ROWS, 4) and seg.nbytes == values.nbytes
    assert os.path.getsize(path) == seg.offset + seg.nbytes
    pool = SynthPool(1)
    await pool.start()
    try:
        result = await pool.run(synthesise_wtns, (str(path),), ROWS * 32)
        assert np.array_equal(result.values, values) and result.meta == meta
        assert pool.max_reply_bytes < 1024
        result.release()
        with pytest.raises(MismatchError):  # a block too small is the pool's too-big answer, as for arrays
            await pool.run(synthesise_wtns, (str(path),), ROWS * 32 - 32)
    finally:
        await pool.close()


@pytest.mark.parametrize("sendfile", ["works", "einval", "absent"])
def test_a_file_segment_lands_in_the_block_with_or_without_sendfile(tmp_path, monkeypatch, sendfile):
    import errno

    from scheduler import synth_pool
    from scheduler.synth_pool import FileSegment, _synthesise

    path, values = _wtns_file(tmp_path, rows=1000)
    seg = FileSegment(str(path), os.path.getsize(path) - values.nbytes, values.shape, "<u8")
    if sendfile == "einval":
        def refuse(*a):
            raise OSError(errno.EINVAL, "Invalid argument")
        monkeypatch.setattr(synth_pool.os, "sendfile", refuse)
    elif sendfile == "absent":
        monkeypatch.delattr(synth_pool.os, "sendfile")
    block = ShmBlock.create(values.nbytes + 64)
    try:
        reply = pickle.loads(_synthesise((lambda: ({"m": 1}, seg), (), block.name, block.size)))
        assert reply == ("ok", {"m": 1}, (1000, 4), "<u8")
        assert np.array_equal(block.ndarray((1000, 4), "<u8"), values)
    finally:
        block.release()


def test_a_witness_file_cut_short_after_its_header_is_an_error_not_garbage(tmp_path):
    from scheduler.synth_pool import FileSegment, _synthesise

    path, values = _wtns_file(tmp_path, rows=1000)
    seg = FileSegment(str(path), os.path.getsize(path) - values.nbytes, values.shape, "<u8")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 32)
    block = ShmBlock.create(values.nbytes)
    try:
        reply = pickle.loads(_synthesise((lambda: ({}, seg), (), block.name, block.size)))
        assert reply[0] == "error" and "ends before" in str(reply)
    finally:
        block.release()


@pytest.mark.parametrize("how", ["array", "file segment", "file segment by read"])
def test_no_room_for_a_witness_in_shared_memory_is_an_error_naming_it(tmp_path, monkeypatch, how):
    """A witness written through the mapping of a sparse file on a full RAM disk (Docker's 64 MiB /dev/shm) was a
    SIGBUS that killed the worker; the block's pages are now reserved first, and no room is an error saying so."""
    import errno

    from scheduler import shm, synth_pool
    from scheduler.synth_pool import FileSegment, _synthesise

    path, values = _wtns_file(tmp_path, rows=1000)
    seg = FileSegment(str(path), os.path.getsize(path) - values.nbytes, values.shape, "<u8")

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shm.os, "posix_fallocate", full, raising=False)
    if how == "file segment":
        monkeypatch.setattr(synth_pool.os, "sendfile", full)
    elif how == "file segment by read":
        monkeypatch.delattr(synth_pool.os, "sendfile")
    block = ShmBlock.create(values.nbytes)
    try:
        produce = (lambda: ({}, values)) if how == "array" else (lambda: ({}, seg))
        reply = pickle.loads(_synthesise((produce, (), block.path, block.size)))
        assert reply[0] == "error", reply
        assert f"no room for a witness of 31.2 KiB in {os.path.dirname(block.path)}" in str(reply)
        assert "docker run --shm-size" in str(reply)
    finally:
        block.release()


def test_a_block_that_shared_memory_has_no_room_for_goes_to_the_temp_directory(tmp_path, monkeypatch):
    import tempfile

    from scheduler import shm

    ram = tmp_path / "shm"
    ram.mkdir()
    monkeypatch.setattr(shm, "_DIR", str(ram))
    monkeypatch.setattr(shm, "free_bytes", lambda d: 1 << 20 if d == str(ram) else None)
    small, large = ShmBlock.create(1 << 10), ShmBlock.create(4 << 20)
    try:
        assert os.path.dirname(small.path) == str(ram)
        assert os.path.dirname(large.path) == tempfile.gettempdir()
        attached = ShmBlock.attach(large.path)  # the worker is handed the path, not a name under shm_dir()
        attached.ndarray((4,), "<u8")[:] = 7
        attached.close()
        assert list(large.ndarray((4,), "<u8")) == [7] * 4
    finally:
        small.release()
        large.release()
