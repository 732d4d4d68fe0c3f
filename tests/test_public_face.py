"""The public face (`from engine import ...`), Proof's own files, the README's Python, and an Engine
that embeds anywhere: scripts without a `__main__` guard, `python -`, `python -c`, the interactive
interpreter, a main module run by name (as a Jupyter kernel's is), and a start that fails cleanly."""
from __future__ import annotations

import json
import multiprocessing
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import engine
from conftest import EXAMPLES, REPO, node_tool, run_snarkjs

SUDOKU = EXAMPLES / "bn128"
PY_TIMEOUT_S = 300


def _python(args: list[str], *, stdin: str | None = None, cwd: Path, env: dict | None = None):
    """Run this interpreter in a subprocess whose path reaches this checkout (not the user's main)."""
    full_env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run([sys.executable, *args], input=stdin, text=True, capture_output=True, cwd=cwd,
                          timeout=PY_TIMEOUT_S, env=full_env)


# ---------------------------------------------------------------- the names


def test_every_public_name_imports_from_engine():
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name
    assert issubclass(engine.ConfigError, engine.EngineError)
    for name in ("FormatError", "MismatchError", "UnsatisfiedWitnessError", "DeviceOutOfMemoryError",
                 "EngineStartError", "VerificationError", "WitnessGenerationError"):
        assert issubclass(getattr(engine, name), engine.EngineError), name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        engine.nope  # noqa: B018


def test_importing_engine_is_light():
    """The package itself loads neither numpy nor CUDA: a client or the CLI pays only for what it uses."""
    out = _python(["-c", "import sys, engine; print(sorted(m for m in ('numpy', 'cuda', 'anyio') if m in sys.modules))"],
                  cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- Proof's files


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_proof_text_is_snarkjs_text(curve):
    """A snarkjs-made proof.json/public.json read back and written by Proof: the same bytes."""
    d = EXAMPLES / curve
    proof = engine.read_proof(d / "proof.json")
    proof.public = engine.read_public(d / "public.json")
    assert proof.to_json() == (d / "proof.json").read_text()
    assert proof.public_json() == (d / "public.json").read_text()


def test_public_json_of_no_signals_is_snarkjs_empty_array():
    proof = engine.read_proof(SUDOKU / "proof.json")
    proof.public = []
    assert proof.public_json() == "[\n]"


def test_proof_write_writes_both_files(tmp_path):
    proof = engine.read_proof(SUDOKU / "proof.json")
    proof.public = engine.read_public(SUDOKU / "public.json")
    proof.write(tmp_path / "p.json", tmp_path / "pub.json")
    assert (tmp_path / "p.json").read_text() == (SUDOKU / "proof.json").read_text()
    assert (tmp_path / "pub.json").read_text() == (SUDOKU / "public.json").read_text()
    assert sorted(os.listdir(tmp_path)) == ["p.json", "pub.json"]


def test_proof_write_is_all_or_nothing_and_names_the_users_path(tmp_path):
    proof = engine.read_proof(SUDOKU / "proof.json")
    proof.public = engine.read_public(SUDOKU / "public.json")
    (tmp_path / "p.json").write_text("old")
    missing = tmp_path / "no-such-dir" / "pub.json"
    with pytest.raises(engine.InputFileError) as info:
        proof.write(tmp_path / "p.json", missing)
    assert str(missing) in str(info.value) and ".tmp" not in str(info.value)
    assert (tmp_path / "p.json").read_text() == "old"  # the first file was not replaced either
    assert sorted(os.listdir(tmp_path)) == ["p.json"]  # no temporary file left


# ---------------------------------------------------------------- the README's Python


def _readme_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def test_readme_has_python_examples_that_use_only_public_names():
    blocks = _readme_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        for module in re.findall(r"^\s*(?:from|import) (engine[.\w]*)", block, re.M):
            assert module == "engine", f"README imports {module}: examples use the public names only"


@pytest.mark.parametrize("index", range(len(_readme_blocks())))
def test_readme_python_block_runs(index, tmp_path):
    """Each ```python block of the README, as a user would paste it (from a directory holding examples/)."""
    (tmp_path / "examples").symlink_to(EXAMPLES)
    block = _readme_blocks()[index]
    out = _python(["-"], stdin=block, cwd=tmp_path)
    assert out.returncode == 0, f"README block {index} failed:\n{block}\n--- stderr:\n{out.stderr}"
    assert "Traceback" not in out.stderr


# ---------------------------------------------------------------- embedding anywhere

_EMBED = """\
import asyncio
import os
from engine import Engine, EngineConfig
marker = os.environ["MAIN_MARKER"]
with open(marker, "a") as f:
    f.write(f"{os.getpid()}\\n")
async def main():
    async with Engine(EngineConfig(backend="cpu", synthesis_workers=2)) as eng:
        key = await eng.load_key(os.environ["ZKEY"], wasm=os.environ["WASM"])
        proofs = await eng.prove(key, partitions=[os.environ["WTNS"], {"puzzle": PUZZLE, "solution": SOLUTION}])
        for i, proof in enumerate(proofs):
            proof.write(f"proof{i}.json", f"public{i}.json")
        print("proved", len(proofs))
asyncio.run(main())
"""


def _embed_source() -> str:
    inputs = json.loads((SUDOKU / "input.json").read_text())
    return _EMBED.replace("PUZZLE", repr(inputs["puzzle"])).replace("SOLUTION", repr(inputs["solution"]))


def _embed_env(tmp_path: Path) -> dict:
    return {"MAIN_MARKER": str(tmp_path / "main-ran"), "ZKEY": str(SUDOKU / "sudoku.zkey"),
            "WASM": str(SUDOKU / "sudoku.wasm"), "WTNS": str(SUDOKU / "sudoku.wtns")}


def _check_embedded_run(out, tmp_path: Path) -> None:
    assert out.returncode == 0, out.stderr
    assert "proved 2" in out.stdout
    assert "Traceback" not in out.stderr and "RuntimeWarning" not in out.stderr, out.stderr
    runs = (tmp_path / "main-ran").read_text().split()
    assert len(runs) == 1, f"the user's main module ran {len(runs)} times: workers re-imported it"
    for i in range(2):
        assert json.loads((tmp_path / f"proof{i}.json").read_text())["protocol"] == "groth16"


def test_engine_in_a_script_without_a_main_guard(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(_embed_source())
    _check_embedded_run(_python([str(script)], cwd=tmp_path, env=_embed_env(tmp_path)), tmp_path)


def test_engine_in_a_script_read_from_stdin(tmp_path):
    _check_embedded_run(_python(["-"], stdin=_embed_source(), cwd=tmp_path, env=_embed_env(tmp_path)), tmp_path)


def test_engine_in_python_dash_c(tmp_path):
    _check_embedded_run(_python(["-c", _embed_source()], cwd=tmp_path, env=_embed_env(tmp_path)), tmp_path)


def _as_typed(source: str) -> str:
    """The source as typed at the >>> prompt: a blank line closes each top-level block."""
    out: list[str] = []
    for line in source.splitlines():
        if out and out[-1].startswith((" ", "\t")) and not line.startswith((" ", "\t")):
            out.append("")
        out.append(line)
    return "\n".join(out) + "\n\n"


def test_engine_in_the_interactive_interpreter(tmp_path):
    out = _python(["-i", "-q"], stdin=_as_typed(_embed_source()), cwd=tmp_path, env=_embed_env(tmp_path))
    _check_embedded_run(out, tmp_path)


def test_engine_under_a_main_module_run_by_name(tmp_path):
    """A Jupyter kernel's main is a module run by name (ipykernel_launcher): workers must not re-run it."""
    pkg = tmp_path / "launcher_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(_embed_source())
    _check_embedded_run(_python(["-m", "launcher_pkg"], cwd=tmp_path, env=_embed_env(tmp_path)), tmp_path)


# ---------------------------------------------------------------- a start that fails


def _shm_blocks() -> set[str]:
    try:
        return set(os.listdir("/dev/shm"))
    except FileNotFoundError:  # not Linux
        return set()


async def test_a_failed_start_raises_one_engine_error_and_leaves_nothing_behind(monkeypatch, tmp_path):
    import scheduler.synth_pool as synth_pool

    real = synth_pool.start_process
    calls = []

    def second_start_fails(process):  # and every start after it: a pool retries a start that failed once
        calls.append(process)
        if len(calls) >= 2:
            raise OSError(11, "Resource temporarily unavailable (injected)")
        real(process)

    monkeypatch.setattr(synth_pool, "start_process", second_start_fails)
    threads_before = {t.ident for t in threading.enumerate()}
    children_before = set(multiprocessing.active_children())  # e.g. the shared CPU pool of earlier tests
    shm_before = _shm_blocks()
    timeline = tmp_path / "timeline.jsonl"
    cfg = engine.EngineConfig(backend="cpu", synthesis_workers=2, timeline=str(timeline))
    with pytest.raises(engine.EngineStartError) as info:
        async with engine.Engine(cfg):
            pytest.fail("the body must not run")
    assert "injected" in str(info.value)
    assert not isinstance(info.value, BaseExceptionGroup)
    assert set(multiprocessing.active_children()) - children_before == set()
    # the event loop's own idle worker threads (anyio's pool) are the loop's, not the engine's
    leftover = [t for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()
                and t.name != "AnyIO worker thread"]
    assert leftover == [], leftover
    assert _shm_blocks() - shm_before == set()
    assert not timeline.exists()


async def test_errors_inside_the_engine_block_reach_the_caller_as_themselves():
    cfg = engine.EngineConfig(backend="cpu", synthesis_workers=1)
    with pytest.raises(engine.FormatError, match=r"\.r1cs"):
        async with engine.Engine(cfg) as eng:
            await eng.load_key(SUDOKU / "sudoku.r1cs")
    with pytest.raises(RuntimeError, match="the user's own"):
        async with engine.Engine(cfg):
            raise RuntimeError("the user's own")
    with pytest.raises(engine.MismatchError):
        async with engine.Engine(cfg) as eng:
            key = await eng.load_key(SUDOKU / "sudoku.zkey")
            await eng.prove(key, EXAMPLES / "bls12381" / "sudoku.wtns")


# ---------------------------------------------------------------- the CI check: 10 proofs from `python -`

_TEN = """\
import asyncio
import json
from engine import Engine, EngineConfig

async def main():
    inputs = json.load(open("examples/bn128/input.json"))
    async with Engine(EngineConfig(backend="cpu")) as eng:
        key = await eng.load_key("examples/bn128/sudoku.zkey", wasm="examples/bn128/sudoku.wasm")
        proofs = await eng.prove(key, partitions=[inputs] * 5 + ["examples/bn128/sudoku.wtns"] * 5)
    for i, proof in enumerate(proofs):
        proof.write(f"proof{i}.json", f"public{i}.json")
    print(len(proofs), "proofs written")

asyncio.run(main())
"""


@pytest.mark.snarkjs
def test_ten_proofs_from_a_piped_script_pass_snarkjs_verify(tmp_path):
    node_tool("snarkjs")
    (tmp_path / "examples").symlink_to(EXAMPLES)
    out = _python(["-"], stdin=_TEN, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "10 proofs written" in out.stdout
    for i in range(10):
        res = run_snarkjs("groth16", "verify", SUDOKU / "verification_key.json", tmp_path / f"public{i}.json",
                          tmp_path / f"proof{i}.json")
        assert res.returncode == 0 and "OK!" in res.stdout, (i, res.stdout, res.stderr)
