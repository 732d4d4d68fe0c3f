"""A circuit's log() lines through Ray (`prove --ray local`, RayCluster): the actor's Engine made them in its own
process, where they went nowhere; now the actor returns a job's lines with its proofs (or its error) and the
driver logs them under engine.witness.calculator, where the CLI shows them as the local path does.

Each test starts a local Ray (several seconds): two only."""
from __future__ import annotations

import json

import pytest

from conftest import run_engine

from test_circuit_logs_engine import guarded  # noqa: F401 - the fixture: guarded.circom, its key and inputs


@pytest.mark.snarkjs
def test_prove_on_ray_shows_the_circuits_log_lines_as_json_events(guarded, tmp_path):
    zkey, wasm, out = guarded
    done = run_engine("prove", zkey, "--wasm", wasm, "--input", out / "in.json", tmp_path / "p.json",
                      tmp_path / "pub.json", "--ray", "local", "--backend", "cpu", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines()]
    logs = [e["text"] for e in events if e["event"] == "log"]
    assert logs == [f"{wasm}: log: x is 3"], done.stderr


@pytest.mark.snarkjs
def test_a_failed_job_on_ray_shows_its_lines_before_its_error(guarded, tmp_path):
    zkey, wasm, out = guarded
    done = run_engine("prove", zkey, "--wasm", wasm, "--input", out / "bad.json", tmp_path / "p.json",
                      tmp_path / "pub.json", "--ray", "local", "--backend", "cpu")
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if not ln.startswith("warning: ")]  # Ray's own, if any
    assert lines[0] == f"{wasm}: log: x is 5", done.stderr
    assert lines[1].startswith("error: ") and "circuit assertion failed" in lines[1], done.stderr
    assert len(lines) == 2, done.stderr
    assert not (tmp_path / "p.json").exists()


def _job_log(n: int, max_lines: int):
    import logging

    from engine.service.jobs import CIRCUIT_LOGGER, JobLog

    log = JobLog(max_lines, 1 << 20)
    for i in range(n):
        record = logging.LogRecord(CIRCUIT_LOGGER, logging.INFO, "x", 0, "c.wasm: log: %d", (i,), None)
        record.witness = "in.json"
        log.add(record)
    return log


def test_the_driver_logs_an_answers_lines_and_says_how_many_were_left_out(caplog):
    import logging

    from engine.distributed.transport import Failure, Logged, received

    with caplog.at_level(logging.INFO, logger="engine.witness.calculator"):
        assert received(Logged(["proof"], _job_log(5, 3))) == ["proof"]
        failed = Failure(b"packed", False, _job_log(1, 3))
        assert received(failed) is failed  # the caller raises its error after the lines
        assert received(["plain"]) == ["plain"]  # an engine that logged nothing answers as before
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:3] == ["c.wasm: log: 0", "c.wasm: log: 1", "c.wasm: log: 2"]
    assert messages[3].startswith("2 more log lines of this job left out"), messages
    assert messages[4:] == ["c.wasm: log: 0"] and caplog.records[0].witness == "in.json"
