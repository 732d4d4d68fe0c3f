"""A circuit's log() lines through the prover service (`serve`, `prove --server`, engine.client).

The local path shows them (tests/test_circuit_logs_engine.py); the service dropped them: its engine's records
went to a logger below the server's level, and no job body carried them.  Now a job's lines come back with it
(its answer, a polled job's body: "log", and "log_left_out" where the job logged more than the service keeps),
and `prove --server` prints them as the local path does: on stderr before the result or the error, JSON lines
with --json, none with --quiet."""
from __future__ import annotations

import json
import logging

import pytest

from conftest import REPO, circom_compile, run_engine

from engine.client import ServerError
from engine.service import jobs
from test_service import ServerProcess

GUARDED = REPO / "tests" / "circuits" / "witness" / "guarded.circom"
CHATTY_LINES = 250  # more than the service keeps of a job (jobs.SERVICE_LOG_LINES)
CHATTY = f"""pragma circom 2.0.0;
template Chatty(n) {{
    signal input x;
    signal output y;
    for (var i = 0; i < n; i++) {{
        log("line", i, x);
    }}
    y <== x * x;
}}
component main = Chatty({CHATTY_LINES});
"""


def _circuit(src, out):
    r1cs, wasm = circom_compile(src, "bn128", out)
    zkey = out / f"{src.stem}.zkey"
    done = run_engine("setup", r1cs, zkey, "--quiet")
    assert done.returncode == 0, done.stderr
    return zkey, wasm


@pytest.fixture(scope="module")
def circuits(tmp_path_factory):
    out = tmp_path_factory.mktemp("logs")
    chatty = out / "chatty.circom"
    chatty.write_text(CHATTY)
    for name, x in (("in", 3), ("bad", 5)):
        (out / f"{name}.json").write_text(json.dumps({"x": x}))
    return {"guarded": _circuit(GUARDED, out / "g"), "chatty": _circuit(chatty, out / "c"), "dir": out}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    srv = ServerProcess(tmp_path_factory.mktemp("srv"), token=False)
    yield srv
    srv.stop()


def _prove(srv, zkey, wasm, inputs, out, *flags):
    return run_engine("prove", "--server", srv.url, zkey, "--wasm", wasm, "--input", inputs, out / "p.json",
                      out / "pub.json", *flags)


@pytest.mark.snarkjs
def test_prove_server_prints_the_circuits_log_lines(circuits, served, tmp_path):
    zkey, wasm = circuits["guarded"]
    done = _prove(served, zkey, wasm, circuits["dir"] / "in.json", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"{wasm}: log: x is 3"], done.stderr
    quiet = _prove(served, zkey, wasm, circuits["dir"] / "in.json", tmp_path, "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert "log: x is" not in served.log.read_text()  # the server's own log (at WARNING) is not flooded


@pytest.mark.snarkjs
def test_with_json_each_line_is_a_log_event(circuits, served, tmp_path):
    zkey, wasm = circuits["guarded"]
    done = _prove(served, zkey, wasm, circuits["dir"] / "in.json", tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(e["event"], e["text"]) for e in events] == [("log", f"{wasm}: log: x is 3")], done.stderr
    assert json.loads(done.stdout)["event"] == "result"


@pytest.mark.snarkjs
def test_a_failed_job_shows_its_lines_then_its_error(circuits, served, tmp_path):
    zkey, wasm = circuits["guarded"]
    done = _prove(served, zkey, wasm, circuits["dir"] / "bad.json", tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and lines[0] == f"{wasm}: log: x is 5", done.stderr
    assert lines[1].startswith("error: ") and "circuit assertion failed" in lines[1], done.stderr
    assert not (tmp_path / "p.json").exists()


@pytest.mark.snarkjs
def test_the_client_api_and_a_polled_job_carry_the_lines(circuits, served):
    zkey, wasm = circuits["guarded"]
    with served.client() as c:
        key = c.load_key(str(zkey), str(wasm))
        result = c.prove(key["id"], {"x": 4})
        assert result.log == [f"{wasm}: log: x is 4"] and result.log_left_out == 0
        job = c.submit(key["id"], {"x": 6})
        assert c.wait(job["id"]).log == [f"{wasm}: log: x is 6"]
        assert c.job(job["id"])["log"] == [f"{wasm}: log: x is 6"]
        with pytest.raises(ServerError) as caught:
            c.prove(key["id"], {"x": 5})
        assert caught.value.log == [f"{wasm}: log: x is 5"], caught.value.message
        bad = c.submit(key["id"], {"x": 5})
        with pytest.raises(ServerError) as caught:
            c.wait(bad["id"])
        assert caught.value.log == [f"{wasm}: log: x is 5"]


@pytest.mark.snarkjs
def test_a_circuit_that_logs_more_than_the_service_keeps_is_bounded_and_says_so(circuits, served, tmp_path):
    zkey, wasm = circuits["chatty"]
    with served.client() as c:
        key = c.load_key(str(zkey), str(wasm))
        result = c.prove(key["id"], {"x": 2})
    assert len(result.log) == jobs.SERVICE_LOG_LINES and result.log_left_out == CHATTY_LINES - jobs.SERVICE_LOG_LINES
    assert result.log[0] == f"{wasm}: log: line 0 2"
    done = _prove(served, zkey, wasm, circuits["dir"] / "in.json", tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == jobs.SERVICE_LOG_LINES + 1, done.stderr[-500:]
    assert f"{CHATTY_LINES - jobs.SERVICE_LOG_LINES} more log lines left out" in lines[-1], lines[-1]


def _record(text: str) -> logging.LogRecord:
    return logging.LogRecord(jobs.CIRCUIT_LOGGER, logging.INFO, "x", 0, text, None, None)


def test_a_jobs_log_keeps_its_first_lines_within_its_characters():
    log = jobs.JobLog(max_lines=3, max_chars=100)
    for i in range(10):
        log.add(_record(f"line {i}"))
    assert [line[2] for line in log.lines] == ["line 0", "line 1", "line 2"] and log.left_out == 7
    wide = jobs.JobLog(max_lines=100, max_chars=100)
    for i in range(5):
        wide.add(_record(f"{i}" * 40))
    assert len(wide.lines) == 2 and wide.left_out == 3  # 40 + 40 fit, the third would pass 100
    huge = jobs.JobLog(max_lines=100, max_chars=1 << 20)
    huge.add(_record("z" * (10 << 20)))  # one line of 10 MiB: cut, as a synthesis worker cuts it
    assert len(huge.lines[0][2]) < (8 << 10)


def test_lines_logged_outside_a_job_are_not_kept(caplog):
    logger = logging.getLogger(jobs.CIRCUIT_LOGGER)
    before = logger.level
    log = jobs.JobLog()
    try:
        with jobs.collecting(log):
            logger.info("in the job")
        with caplog.at_level(logging.INFO, logger=jobs.CIRCUIT_LOGGER):  # another's handler: sees its own lines
            logger.info("after it")
    finally:
        jobs.stop_collecting()
    assert [line[2] for line in log.lines] == ["in the job"]
    assert [r.getMessage() for r in caplog.records] == ["after it"]
    assert logger.level == before and not logger.filters


@pytest.mark.snarkjs
def test_an_input_files_error_names_the_file_as_the_local_path_does(circuits, served, tmp_path):
    """The server computed the witness from a dict and called it "inputs" ("error: inputs: unknown input signal
    'y'"); the client names its input.json (the request's `name`), as a local proof's errors do."""
    zkey, wasm = circuits["guarded"]
    missing, bad = tmp_path / "missing.json", circuits["dir"] / "bad.json"
    missing.write_text('{"y": 3}')
    done = _prove(served, zkey, wasm, missing, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {missing}: unknown input signal 'y' "), done.stderr
    done = _prove(served, zkey, wasm, bad, tmp_path)
    assert f"circuit assertion failed for {bad}: " in done.stderr, done.stderr
    with served.client() as c:  # no name given: "inputs", as the engine calls them
        key = c.load_key(str(zkey), str(wasm))
        with pytest.raises(ServerError) as caught:
            c.prove(key["id"], {"y": 1})
    assert caught.value.message.startswith("inputs: unknown input signal 'y'"), caught.value.message


def test_a_witness_whose_name_is_not_utf8_is_proved_and_named(served, tmp_path):
    """Its name goes in the query (`name`, what messages call it): a name that is not UTF-8 (a Latin-1 file
    system's ü) was a UnicodeEncodeError traceback in the client, and exit 1."""
    import os
    import shutil

    from conftest import EXAMPLES

    wtns = os.fsdecode(bytes(tmp_path) + b"/w\xfc.wtns")
    shutil.copy(EXAMPLES / "bn128" / "sudoku.wtns", wtns)
    done = run_engine("prove", "--server", served.url, EXAMPLES / "bn128" / "sudoku.zkey", wtns,
                      tmp_path / "p.json", tmp_path / "pub.json")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    bad = os.fsdecode(bytes(tmp_path) + b"/t\xfc.wtns")
    shutil.copy(REPO / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.wtns", bad)  # another circuit's witness
    done = run_engine("prove", "--server", served.url, EXAMPLES / "bn128" / "sudoku.zkey", bad,
                      tmp_path / "p.json", tmp_path / "pub.json")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"error: {tmp_path}/t"), done.stderr


@pytest.mark.snarkjs
def test_a_circuit_whose_path_is_not_utf8_still_gets_its_proof_and_lines(circuits, served, tmp_path):
    """Its log lines (and its errors) name circuit.wasm by its path: one that is not UTF-8 made the answer a 500
    (msgspec refuses a lone surrogate), the proof lost."""
    import os
    import shutil

    zkey, wasm = circuits["guarded"]
    odd = os.fsdecode(bytes(tmp_path) + b"/g\xfc.wasm")
    shutil.copy(wasm, odd)
    done = _prove(served, zkey, odd, circuits["dir"] / "in.json", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.endswith(".wasm: log: x is 3\n") and len(done.stderr.splitlines()) == 1, done.stderr
    done = _prove(served, zkey, odd, circuits["dir"] / "bad.json", tmp_path)
    assert done.returncode == 2 and "circuit assertion failed" in done.stderr, done.stderr


@pytest.mark.snarkjs
def test_jobs_at_once_each_get_their_own_lines(circuits, served):
    import asyncio

    from engine.client import AsyncClient

    zkey, wasm = circuits["guarded"]

    async def main():
        async with AsyncClient(served.url) as c:
            key = await c.load_key(str(zkey), str(wasm))
            return await asyncio.gather(*(c.prove(key["id"], {"x": x}) for x in range(10, 18)))

    for x, result in zip(range(10, 18), asyncio.run(main())):
        assert result.log == [f"{wasm}: log: x is {x}"], (x, result.log)
