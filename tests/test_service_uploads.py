"""How the service takes a witness upload: small ones into reused buffers, parsed in place; large ones
spooled to a file; and the job count it hands the engine.

The real server (CPU backend) on a loopback port, as in tests/test_service.py."""
from __future__ import annotations

import platform
from types import SimpleNamespace

import pytest

from engine.client import ServerError
from engine.service.core import Service
from engine.service.server import keep_heap
from engine.service.uploads import UploadBuffers
from test_service import SLOW, SUDOKU, ServerProcess, check_files_verify, wait_at_rest


def test_upload_buffers_reuse_fit_and_cap():
    pool = UploadBuffers(keep_bytes=1 << 20)
    a = pool.take(300_000)
    assert len(a) >= 300_000 and len(a) % (1 << 16) == 0 and pool.in_use == len(a)
    pool.give(a)
    assert pool.in_use == 0 and pool.idle_bytes == len(a)
    assert pool.take(290_000) is a  # fits: reused, no new pages to fault in
    b = pool.take(100)  # a buffer more than twice the size is not handed out for a small upload
    assert b is not a and len(b) == 1 << 16
    pool.give(a)
    pool.give(b)
    big = pool.take(2 << 20)
    pool.give(big)  # larger than keep_bytes: dropped, not kept
    assert big not in pool._free and pool.idle_bytes <= 1 << 20 and pool.in_use == 0
    many = [pool.take(400_000) for _ in range(4)]  # four in use at once: 4 x 448 KiB
    assert pool.in_use == sum(len(m) for m in many)
    for buf in many:
        pool.give(buf)
    assert pool.idle_bytes <= 1 << 20 and pool.in_use == 0  # the oldest went: never more than keep_bytes idle
    assert pool._free[-1] is many[-1]


def test_small_uploads_parse_in_memory_large_ones_spool(tmp_path):
    """With memory_upload_max 5 KiB: power_table's .wtns (4236 bytes) stays in memory, sudoku's (7276)
    goes to the spool; both prove and verify, and each is counted while its job lives, then freed."""
    srv = ServerProcess(tmp_path, "--memory-upload-max", "5KiB", "--running-jobs", "1")
    try:
        with srv.client() as c:
            slow = c.load_key(f"{SLOW}.zkey")["id"]
            sudoku = c.load_key(f"{SUDOKU}.zkey")["id"]
            slow_body = (SLOW.parent / "power_table.wtns").read_bytes()
            running = c.submit(slow, slow_body)  # about 2.5 s on the CPU backend: the one job slot
            queued = c.submit(sudoku, f"{SUDOKU}.wtns")  # waits behind it, spooled
            stats = c.stats()
            assert stats["uploads_in_memory_bytes"] >= len(slow_body) and stats["spooled_uploads"] == 1, stats
            for job, base in ((running, SLOW), (queued, SUDOKU)):
                result = c.wait(job["id"])
                out = tmp_path / job["id"]
                out.mkdir()
                result.write(out / "proof.json", out / "public.json")
                check_files_verify(base.parent / "verification_key.json", out / "proof.json", out / "public.json")
            # a malformed upload kept in memory: one 422 naming it, and its buffer goes back
            with pytest.raises(ServerError) as info:
                c.prove(slow, slow_body[:-100], name="cut.wtns")
            assert (info.value.status, info.value.code) == (422, "bad_input")
            assert "cut.wtns" in info.value.message and "truncated" in info.value.message
            with pytest.raises(ServerError) as info:
                c.submit(slow, b"zkey" + slow_body[4:], name="other.wtns")
            assert info.value.status == 422 and ".wtns" in info.value.message
            stats = wait_at_rest(c)
            assert stats["uploads_in_memory_bytes"] == 0 and stats["spooled_uploads"] == 0
        srv.stop()
    finally:
        srv.kill()


def _engine(backends: list[str], epilogue_threads: int = 16, slots: int = 1):
    config = SimpleNamespace(compute_slots="auto", synthesis_workers=2, epilogue_threads=epilogue_threads)
    locks = SimpleNamespace(compute_slots=SimpleNamespace(size=slots))  # the device's resolved slot count
    return SimpleNamespace(config=config, devices=[SimpleNamespace(backend=SimpleNamespace(name=b), locks=locks)
                                                   for b in backends])


def test_default_job_count_follows_where_proofs_end():
    resident = SimpleNamespace(handle=SimpleNamespace(key_host_bytes=0))
    host_tier = SimpleNamespace(handle=SimpleNamespace(key_host_bytes=1 << 30))
    # the CPU ends every proof (epilogue and verification in the CPU pool): a job per epilogue thread too
    assert Service.default_slots(_engine(["cpu"])) == 1 + 2 + 16
    assert Service.default_slots(_engine([])) == 2 + 16
    # GPUs with resident keys end proofs on the device: each place that works gets one job waiting
    assert Service.default_slots(_engine(["gpu"])) == 2 * (1 + 2)
    assert Service.default_slots(_engine(["gpu", "gpu"]), [resident]) == 2 * (2 + 2)
    # the devices' own slot counts ("auto" gives a GPU two), not the configuration's word
    assert Service.default_slots(_engine(["gpu"], slots=2), [resident]) == 2 * (2 + 2)
    # a host-tier key's proofs end on the CPU again
    assert Service.default_slots(_engine(["gpu"]), [resident, host_tier]) == 1 + 2 + 16


def test_keep_heap_tunes_glibc_unless_the_operator_did(monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", str(1 << 20))
    assert keep_heap() is False
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert keep_heap() is (platform.libc_ver()[0] == "glibc")
