"""README.md's and docs/*.md's examples and tables, read from the documents and held against the code (CPU only).

A user copies a command, a default or a call from the documents: a table that drifts from the code (a default
changed, a key or a flag added or renamed, a metric renamed) or an example that no longer runs is a fault
that no other test sees, since those test the code against their own copies of the numbers."""
from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SERVICE = (ROOT / "docs" / "service.md").read_text()
DISTRIBUTED = (ROOT / "docs" / "distributed.md").read_text()


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def table_rows(text: str, header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line starts with `header`, as lists of cell texts."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def command_options(name: str) -> set[str]:
    """Every option string the CLI's parser takes for the subcommand `name`."""
    import argparse  # noqa: PLC0415

    from cli import build_parser  # noqa: PLC0415

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {s for action in sub.choices[name]._actions for s in action.option_strings}


def flags_in(cell: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z-]*", cell))


def literal(cell: str):
    """A default written as one TOML value in backticks (`"auto"`, `2`, `true`), else the cell's text."""
    m = re.fullmatch(r"`([^`]+)`", cell)
    if m is None:
        return cell
    try:
        return tomllib.loads(f"v = {m.group(1)}")["v"]
    except tomllib.TOMLDecodeError:
        return m.group(1)


# ---------------------------------------------------------------- README: the first commands, as written


def test_readme_first_commands_prove_and_verify_the_bundled_example(tmp_path):
    """The README's first block after its venv and `pip install .`, run by a shell from a directory holding
    examples/: the proof is written and `verify` says OK! with exit 0."""
    line = blocks(README, "sh")[0].strip()
    steps = [s for s in line.split(" && ") if not s.startswith(("python3 -m venv", ". .venv", "pip install"))]
    assert [s.split()[:3] for s in steps] == [["python", "-m", "engine"]] * 2, steps
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT)}
    out = subprocess.run(["bash", "-c", " && ".join(steps)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "OK!"
    assert (tmp_path / "proof.json").stat().st_size > 0 and (tmp_path / "public.json").stat().st_size > 0


def test_readme_command_table_names_the_cli_s_commands():
    """Each command of the README's table is one `python -m engine` takes, and each one it takes is in the
    README (serve has its own section)."""
    import argparse  # noqa: PLC0415

    from cli import build_parser  # noqa: PLC0415

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    in_table = {row[0].strip("`").split()[0] for row in table_rows(README, "| command | does |")}
    assert in_table <= set(sub.choices), in_table - set(sub.choices)
    assert set(sub.choices) - in_table <= {"serve"}, set(sub.choices) - in_table
    cache = next(row[0] for row in table_rows(README, "| command | does |") if row[0].startswith("`cache"))
    assert flags_in(cache) <= command_options("cache")


def test_every_flag_the_documents_write_is_the_cli_s():
    """A `--flag` in the documents' code (inline or a block) is one that some `python -m engine` command takes,
    but those of other programs the README names: perf/c2.py's and `ray start`'s."""
    import argparse  # noqa: PLC0415

    from cli import build_parser  # noqa: PLC0415

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    taken = {s for p in (parser, *sub.choices.values()) for action in p._actions for s in action.option_strings}
    c2 = (ROOT / "perf" / "c2.py").read_text()
    others = {"--concurrency": '"--concurrency"' in c2, "--modes": '"--modes"' in c2,
              "--head": "ray start --head" in DISTRIBUTED, "--address": "ray start --address" in DISTRIBUTED}
    assert all(others.values()), others
    for name, text in (("README.md", README), ("service.md", SERVICE), ("distributed.md", DISTRIBUTED)):
        code = " ".join(re.findall(r"```.*?```", text, re.S) + re.findall(r"`([^`\n]+)`", text))
        written = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", code))
        assert written - taken <= set(others), f"{name}: {written - taken - set(others)} are no command's flags"


def test_readme_serve_line_says_where_it_listens(tmp_path):
    """The README's `serve` line, run with its token file: the address it listens on is the one its comment
    names (a token file alone binds no other address: the comment said "loopback unless a token file is
    given", as if one opened the service to the network)."""
    import signal  # noqa: PLC0415
    import time  # noqa: PLC0415

    line = next(line for block in blocks(README, "sh") for line in block.splitlines()
                if line.startswith("python -m engine serve"))
    command, comment = (part.strip() for part in line.split("#", 1))
    (tmp_path / "token").write_text("0123456789abcdef-h45\n")
    argv = command.replace("--port 8080", "--port 0").replace("[--token-file FILE]", "--token-file token").split()
    log = tmp_path / "serve.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, *argv[1:], "--backend", "cpu", "--synthesis-workers", "1"],
                                cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (m := re.search(r"listening on http://([^:/]+):", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()
    assert comment.startswith(m.group(1)), f"README: {comment!r}, but serve listens on {m.group(1)}"
    assert "listening on" in log.read_text().splitlines()[0]  # service.md: port 0's first line on stderr names it


# ---------------------------------------------------------------- README: engine.toml's table


def test_readme_engine_table_is_engine_config():
    """Every key of EngineConfig is in the table (but the simulated backend's), each written default is
    EngineConfig's, and each flag is one that `prove` and `serve` take."""
    from engine import EngineConfig  # noqa: PLC0415

    rows = {row[0].strip("`"): row for row in table_rows(README, "| key | flag | default | meaning |")}
    fields = set(EngineConfig.__struct_fields__) - {"simulation"}
    assert set(rows) == fields, set(rows) ^ fields
    config = EngineConfig()
    words = {"none": None, "all": None, "90% of the device memory free at start": None, "half the RAM": None,
             "the CPUs this process may use": len(os.sched_getaffinity(0)), "`$GROTH16_KEY_CACHE`, else below": None}
    for key, (_, flag, default, _meaning) in rows.items():
        expected = words[default] if default in words else literal(default)
        assert not isinstance(expected, str) or default.startswith('`"'), f"{key}: unread default {default}"
        value = getattr(config, key)
        assert value == expected, f"README says {key} = {default}, EngineConfig has {value!r}"
        for command in ("prove", "serve"):
            assert flags_in(flag) <= command_options(command), f"{key}: {flag} is not a flag of {command}"


def test_readme_config_error_example_is_the_message(tmp_path, monkeypatch):
    """The README's example of a bad key's line is what load_config says for that file."""
    import engine  # noqa: PLC0415

    message = re.search(r"\(`(engine\.toml: simulation\.gpu: [^`]+)`\)", README).group(1)
    path = tmp_path / "engine.toml"
    path.write_text('backend = "simulated"\n\n[simulation]\ngpu = 1\n')
    monkeypatch.chdir(tmp_path)  # the message names the file as given
    with pytest.raises(engine.ConfigError) as info:
        engine.load_config("engine.toml")
    assert str(info.value) == message


def test_readme_size_forms_are_read():
    """Each size form the README offers (a whole number, a float, and its strings) is a number of bytes."""
    import engine  # noqa: PLC0415

    line = " ".join(README.split()).split("Sizes are bytes", 1)[1].split("| key |", 1)[0]
    forms = re.findall(r"`([^`]+)`", line)
    assert len(forms) >= 5, forms
    for form in forms:
        value = tomllib.loads(f"v = {form}")["v"]
        config = engine.EngineConfig(host_budget=value)
        expected = {"8GiB": 8 << 30, "512 MiB": 512 << 20, "1.5G": 3 << 29}.get(value, 16 * 10**9)
        assert config.host_budget == expected, form


# ---------------------------------------------------------------- docs/service.md: [service], metrics, errors


def test_service_table_is_service_config():
    """The `[service]` table: every key of ServiceConfig, its default, and flags that `serve` takes."""
    from engine.config import parse_size  # noqa: PLC0415
    from engine.service.settings import ServiceConfig  # noqa: PLC0415

    rows = {row[0].strip("`"): row for row in table_rows(SERVICE, "| `[service]` key | flag | default |")}
    assert set(rows) == set(ServiceConfig.__struct_fields__), set(rows) ^ set(ServiceConfig.__struct_fields__)
    config = ServiceConfig()
    serve = command_options("serve")
    for key, (_, flag, default, meaning) in rows.items():
        value = getattr(config, key)
        if default == "none":  # a setting whose 0 is none, or an unset file
            assert value in (None, 0), f"service.md says {key} = none, ServiceConfig has {value!r}"
        elif key == "running_jobs":
            assert value == 0 and "`0`: this default" in meaning
        else:
            written = default.strip("`")
            expected = parse_size(written, key) if key in ("max_body", "memory_upload_max") else literal(default)
            assert value == expected, f"service.md says {key} = {default}, ServiceConfig has {value!r}"
        assert flags_in(flag) <= serve, f"{key}: {flag} is not a flag of serve"


def test_service_metrics_are_the_ones_served():
    """The metrics table names exactly the families /metrics serves, and the stage labels the timeline feeds."""
    from engine.service import metrics  # noqa: PLC0415

    rows = table_rows(SERVICE, "| metric | labels | what |")
    documented = {row[0].strip("`") for row in rows}
    m = metrics.Metrics()
    m.watch(lambda: {"queue_depth": {"high": 0}, "running": 0, "vram_capacity": [1], "vram_available": [1],
                     "host_capacity": 1, "host_available": 1, "keys": {"k": 1}, "started": 0.0})
    m.proofs.labels("k", "done").inc()
    m.job_seconds.labels("total").observe(0.1)
    m.stage_seconds.labels("synthesis").observe(0.1)
    m.device_busy.labels("0").inc(0.1)
    families = {}
    for line in m.render().decode().splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]  # a counter's family is named with its _total
            families[name] = kind
    assert documented == set(families), documented ^ set(families)
    stage_row = next(row for row in rows if row[0] == "`engine_stage_seconds`")
    stages = set(re.findall(r"`(\w+)`", stage_row[1])) - {"stage"}
    assert stages == {label for _, label in metrics._PAIRS.values()}


def test_service_error_table_is_what_the_service_answers():
    """Each (status, code) of the error table is one the service's code answers with, and the reverse."""
    from engine.service import problems  # noqa: PLC0415

    documented = {(int(status), code) for status, codes, _ in
                  (row for row in table_rows(SERVICE, "| status | `error` | when |"))
                  for code in re.findall(r"`(\w+)`", codes)}
    source = "".join(p.read_text() for p in (ROOT / "engine" / "service").glob("*.py"))
    answered = {(int(s), c) for s, c in re.findall(r'Problem\((\d{3}), "(\w+)"', source)}
    answered |= {(status, code) for _, status, code in problems._ENGINE_ERRORS}
    answered |= {(int(s), c) for s, c in re.findall(r'(\d{3}): "(\w+)"', source)}  # aiohttp's own refusals
    assert documented == answered, f"only in service.md: {documented - answered}; not in it: {answered - documented}"


def test_service_key_fields_are_the_ones_answered():
    """The KEY paragraph names exactly the fields a key's answer holds, and the count of proofs its
    prove_s_p50 is the median of."""
    from types import SimpleNamespace  # noqa: PLC0415

    from engine.service.keys import ServedKey  # noqa: PLC0415

    paragraph = SERVICE.split("\nKEY: ", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"\b[a-z_0-9]+\b", " ".join(re.findall(r"`([^`]+)`", paragraph))))
    handle = SimpleNamespace(curve="bn128", n_vars=1, n_public=0, domain_size=2, working_set_bytes=1,
                             witness_bytes=32, devices=[0], _resident_bytes={0: 1})
    answered = ServedKey("k", "/k.zkey", None, (0, 0, 0), handle=handle).describe()
    assert documented == set(answered), documented ^ set(answered)
    assert f"last {ServedKey.RECENT} proofs" in " ".join(paragraph.split())


def _constants() -> list[tuple[str, str, float]]:
    """(document, the phrase that states a number, the code's number), imported where the code keeps it."""
    from engine import client, client_wait  # noqa: PLC0415
    from engine.backends.gpu import waiting  # noqa: PLC0415
    from engine.commands import prove  # noqa: PLC0415
    from engine.distributed import connection  # noqa: PLC0415
    from engine.distributed import transport  # noqa: PLC0415
    from engine.service import http, jobs, server  # noqa: PLC0415
    from scheduler import task_log  # noqa: PLC0415

    return [
        (README, "many MiB, default {:g}", prove.PIN_ONE_LOAD_MIB),
        (README, "an address where no Ray answers is one error line within {:g} s", connection.CHECK_TIMEOUT_S),
        (DISTRIBUTED, "does within {:g} s (`GROTH16_RAY_CHECK_TIMEOUT_S`", connection.CHECK_TIMEOUT_S),
        (SERVICE, "`GROTH16_CLIENT_SPIN_MS`, else {:g} ms", client_wait.DEFAULT_SPIN_MS),
        (SERVICE, "the median of the route's last {:g} answers", client_wait.HISTORY),
        (SERVICE, "it long-polls {:g} s a request", client._poll_s(None)),
        (SERVICE, "query `wait=S` (at most {:g})", http.MAX_POLL_WAIT_S),
        (SERVICE, "once its job has run {:g} s, an interim `102 Processing`", http.JOB_ID_AFTER_S),
        (SERVICE, "(mmap threshold {:g} MiB", server.MMAP_THRESHOLD / 2**20),
        (SERVICE, "trim threshold {:g} MiB;", server.TRIM_THRESHOLD / 2**20),
        ((ROOT / "docs" / "internals.md").read_text(), "`GROTH16_WAIT_SPIN_MS`, {:g} ms", waiting.DEFAULT_SPIN_MS),
        (README, "the first {:g} and", task_log.LOG_KEEP_FIRST),
        (README, "and the last {:g} lines of a witness", task_log.LOG_KEEP_LAST),
        (README, "each cut at {:g} characters", task_log.LOG_LINE_MAX),
        (README, "returns a job's first {:g} with it", jobs.SERVICE_LOG_LINES),
        (SERVICE, "the first {:g} within", jobs.SERVICE_LOG_LINES),
        (SERVICE, "within {:g} KiB", jobs.SERVICE_LOG_CHARS / 1024),
        (DISTRIBUTED, "the first {:g} lines within", transport.RAY_LOG_LINES),
        (DISTRIBUTED, "within {:g} MiB of a job", transport.RAY_LOG_CHARS / 2**20),
    ]


def test_the_documented_defaults_are_the_code_s():
    wrong = [phrase.format(value) for text, phrase, value in _constants()
             if phrase.format(value) not in " ".join(text.split())]
    assert not wrong, f"the documents should say: {wrong}"


def test_service_route_table_is_the_app_s_routes_and_queries():
    """The API table names exactly the routes the app serves, and for each the query parameters it takes."""
    from types import SimpleNamespace  # noqa: PLC0415

    from engine.service import http  # noqa: PLC0415

    app = http.build_app(SimpleNamespace(config=SimpleNamespace(max_body=1 << 20)), [])
    served = {}
    for route in app.router.routes():
        if route.method != "HEAD":
            path = re.sub(r"\{job\}", "{id}", route.resource.canonical)
            served[f"{route.method} {path}"] = http._QUERY_NAMES.get(route.handler.__name__, ())
    rows = table_rows(SERVICE, "| method and path | request | answer |")
    documented = {row[0].strip("`"): row[1] for row in rows}
    assert set(documented) == set(served), set(documented) ^ set(served)
    for route, request in documented.items():
        takes = served[route]
        if takes is None:  # the probes ignore any query
            continue
        if request == "as `prove`":
            request = documented["POST /v1/keys/{key}/prove"]
        named = set(re.findall(r"`(\w+)(?:=\w+)?`", request.split("query", 1)[1])) if "query" in request else set()
        assert named == set(takes), f"{route}: service.md names {named or 'no'} query, it takes {takes}"



def test_service_job_fields_are_the_ones_answered():
    """The JOB paragraph names every field a job's answer holds (a done one with a deadline and log lines, an
    expired one), its timings' included, and names no field that none of them holds."""
    from types import SimpleNamespace  # noqa: PLC0415

    import engine  # noqa: PLC0415
    from engine.service import http  # noqa: PLC0415
    from engine.service.jobs import Job  # noqa: PLC0415
    from engine.service.keys import ServedKey  # noqa: PLC0415
    from engine.service.problems import Problem  # noqa: PLC0415

    paragraph = SERVICE.split("\nJOB: ", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"[A-Za-z_]\w*", " ".join(re.findall(r"`([^`]+)`", paragraph))))
    key = ServedKey("k", "/k.zkey", None, (0, 0, 0), handle=SimpleNamespace())
    proof = engine.read_proof(ROOT / "examples" / "bn128" / "proof.json")
    done = Job("1-a", key, "normal", None, "w", deadline_s=5.0, state="done", proof=proof, verified=True,
               started=1.0, finished=2.0, received=0.5)
    done.log.lines.append(("engine.witness.calculator", 20, "circuit.wasm: log: 1", None))
    done.log.left_out = 1
    expired = Job("2-a", key, "low", None, "w", state="expired", reason="deadline",
                  problem=Problem(504, "deadline_exceeded", "w: past its deadline"))
    answered = set()
    for job in (done, expired):
        view = http.job_view(job)
        answered |= set(view) | set(view["timings"])
    not_fields = {"f9a1c2e", "no", "prove", "serve", "server", "verify", "witness"}  # the paragraph's other words
    assert answered <= documented, f"not in service.md's JOB: {answered - documented}"
    assert documented - answered <= not_fields, f"service.md names {documented - answered - not_fields}"



def test_distributed_says_where_engine_lost_error_is_imported_from():
    """The page's error of a lost engine was not importable from `engine`, the import the page implied: it is
    now (as every EngineError subclass, docs/internals.md), and the page says so."""
    import engine  # noqa: PLC0415

    line = " ".join(DISTRIBUTED.split())
    named = re.search(r"`from (engine[.\w]*) import EngineLostError`", line)
    assert named, "docs/distributed.md names EngineLostError without saying where to import it from"
    module = __import__(named.group(1), fromlist=["EngineLostError"])
    assert issubclass(module.EngineLostError, engine.EngineError)


def test_every_engine_error_is_importable_from_engine():
    """docs/internals.md: `engine` exports every EngineError subclass (EngineLostError, TimelineWriteError and
    ConfigError's new home were missing or lazy)."""
    import inspect  # noqa: PLC0415

    import engine  # noqa: PLC0415
    import engine.errors  # noqa: PLC0415

    errors = {name for name, value in inspect.getmembers(engine.errors, inspect.isclass)
              if issubclass(value, engine.errors.EngineError)}
    assert errors <= set(engine.__all__), errors - set(engine.__all__)
    for name in errors:
        assert getattr(engine, name) is getattr(engine.errors, name), name


# ---------------------------------------------------------------- the documents' Python calls fit the API


def _calls(block: str, receivers: dict[str, object]) -> list[tuple[str, object, ast.Call]]:
    tree = compile(block, "<doc>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id in receivers:
            found.append((node.func.id, receivers[node.func.id], node))
        elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in receivers:
            owner = receivers[node.func.value.id]
            found.append((f"{node.func.value.id}.{node.func.attr}", getattr(owner, node.func.attr, None), node))
    return found


def _check_binds(name: str, target, call: ast.Call) -> None:
    assert target is not None, f"{name}: no such method"
    signature = inspect.signature(target.__init__ if inspect.isclass(target) else target)
    args = [None] * (len(call.args) + 1)  # self, then the call's positional arguments
    try:
        signature.bind(*args, **{k.arg: None for k in call.keywords})
    except TypeError as exc:
        pytest.fail(f"{name}{signature}: the document's call does not fit: {exc}")


def test_service_client_example_calls_fit_the_client():
    """The Python client's example calls bind to Client's methods (AsyncClient's take the same arguments; its
    constructor passes them on to Client's)."""
    from engine.client import AsyncClient, Client, ProofResult  # noqa: PLC0415

    block = blocks(SERVICE, "python")[0]
    calls = _calls(block, {"Client": Client, "AsyncClient": Client, "c": Client, "result": ProofResult})
    for name in {name.split(".")[1] for name, _, _ in calls if name.startswith("c.")}:
        assert list(inspect.signature(getattr(AsyncClient, name)).parameters) == \
            list(inspect.signature(getattr(Client, name)).parameters), name
    assert {name for name, _, _ in calls} >= {"Client", "AsyncClient", "c.load_key", "c.prove", "c.submit",
                                              "result.write"}
    in_comment = re.findall(r"c\.(\w+)\(job\[", block)  # the comment's c.wait(job["id"]), c.cancel(...)
    assert in_comment, block
    for method in in_comment:
        _check_binds(f"c.{method}", getattr(Client, method, None), ast.parse('f(job["id"])').body[0].value)
    for name, target, call in calls:
        _check_binds(name, target, call)


def test_distributed_example_calls_and_signatures_fit_ray_cluster():
    """The example's calls bind to RayCluster's methods, and the signatures the page writes out are the code's
    (without annotations), keyword-only marks included."""
    from engine.distributed import RayCluster  # noqa: PLC0415

    block = blocks(DISTRIBUTED, "python")[0]
    calls = _calls(block, {"RayCluster": RayCluster, "cluster": RayCluster})
    assert {name for name, _, _ in calls} >= {"RayCluster", "cluster.load_key", "cluster.prove",
                                              "cluster.prove_stream", "cluster.stats", "cluster.engine_stats"}
    for name, target, call in calls:
        _check_binds(name, target, call)

    def plain(fn, drop_self: bool) -> str:
        params = list(inspect.signature(fn).parameters.values())[drop_self:]
        sig = inspect.Signature([p.replace(annotation=inspect.Parameter.empty) for p in params])
        return re.sub(r"=120\.0\b", "=120", str(sig))

    written = " ".join(DISTRIBUTED.split())
    assert f"`RayCluster{plain(RayCluster.__init__, True)}`" in written
    for method in ("load_key", "prove_stream"):
        assert f"`{method}{plain(getattr(RayCluster, method), True)}`" in written, method
