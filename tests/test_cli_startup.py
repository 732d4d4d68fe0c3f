"""The CLI's cold start: what each command imports before it works, and `prove --verbose`'s stages.

Every subprocess runs with cwd = the repo root, so it imports this tree's code."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "bn128"

# Runs the CLI in-process, then prints which heavy packages it imported.
PROBE = """
import json, sys
from cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "cuda", "msgspec", "wasmtime", "anyio", "asyncio"})
pool = sys.modules.get("scheduler.cpu_pool")
import multiprocessing
print(json.dumps({"code": code, "heavy": heavy, "pool": bool(pool and pool.running()),
                  "children": len(multiprocessing.active_children())}))
"""


def _probe(*argv: str) -> dict:
    p = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["prove", "--help"], ["--help"], ["verify", "--help"], ["cache", "--help"]])
def test_cli_help_imports_neither_numpy_nor_cuda(argv):
    out = _probe(*argv)
    assert out["code"] == 0
    assert "numpy" not in out["heavy"] and "cuda" not in out["heavy"], out


def test_prove_parser_imports_nothing_heavy():
    """Building prove's parser (every `prove`, the service client's `prove --server` too) loads neither
    msgspec (the flags live in engine/config_flags.py) nor asyncio (the --ray flags' module)."""
    out = _probe("prove", "--help")
    assert out["code"] == 0 and out["heavy"] == [], out


def test_cache_command_imports_neither_numpy_nor_cuda(tmp_path):
    out = _probe("cache", "list", "--dir", str(tmp_path))
    assert out["code"] == 0
    assert "numpy" not in out["heavy"] and "cuda" not in out["heavy"], out


def test_cpu_prove_imports_no_cuda_and_starts_no_pool(tmp_path):
    out = _probe("prove", "--backend", "cpu", "--quiet", str(EXAMPLE / "sudoku.zkey"), str(EXAMPLE / "sudoku.wtns"),
                 str(tmp_path / "proof.json"), str(tmp_path / "public.json"))
    assert out["code"] == 0 and "cuda" not in out["heavy"], out
    assert "msgspec" not in out["heavy"], out  # the direct path's flags need no engine.config
    assert not out["pool"] and out["children"] == 0, out  # one small proof: no process pool, no worker
    assert (tmp_path / "proof.json").exists()


def test_prove_verbose_names_every_cold_start_stage(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "engine", "prove", "--backend", "cpu", "--verbose", "--quiet",
         str(EXAMPLE / "sudoku.zkey"), str(EXAMPLE / "sudoku.wtns"), str(tmp_path / "p.json"), str(tmp_path / "q.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    stages = dict(re.findall(r"^  (\S.*?)\s+([0-9.]+) ms$", p.stderr, re.M))
    for name in ("interpreter + imports", "read key", "witness", "backend", "load key", "prove", "close backend",
                 "write", "total so far (exit follows)"):
        assert name in stages, (name, p.stderr)
    total = float(stages["total so far (exit follows)"])
    inside = sum(float(stages[k]) for k in ("interpreter + imports", "read key", "witness", "backend", "load key",
                                             "prove", "close backend", "write"))
    assert 0 < float(stages["interpreter + imports"]) < total
    assert inside <= total + 25  # the stages are parts of the whole (10 ms clock ticks on both ends)


def _cuda() -> int:
    from engine.backends.select import cuda_device_count

    return cuda_device_count()


@pytest.mark.gpu
@pytest.mark.skipif(_cuda() == 0, reason="no CUDA device on this machine")
def test_gpu_prove_verbose_times_cuinit_context_module_and_key_cache(tmp_path):
    import os

    env = {**os.environ, "GROTH16_KEY_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "engine", "prove", "--backend", "gpu", "--verbose", "--quiet",
           str(EXAMPLE / "sudoku.zkey"), str(EXAMPLE / "sudoku.wtns"), str(tmp_path / "p.json"), str(tmp_path / "q.json")]
    for run in range(2):  # the first run writes the key cache, the second reads it
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        stages = dict(re.findall(r"^  (\S.*?)\s+([0-9.]+) ms$", p.stderr, re.M))
        for name in ("interpreter + imports", "beside the context: key plan, kernels",
                     "wait for the device's start", "import gpu backend", "context",
                     "kernel module", "load key", "prove", "close backend", "write"):
            assert name in stages, (name, p.stderr)
        beside = dict(re.findall(r"^    device \(beside the imports\): (\S.*?)\s+([0-9.]+) ms$", p.stderr, re.M))
        assert {"cuInit", "context"} <= set(beside), p.stderr  # the device's start on its thread, timed there
        # cuInit and the context came from the driver library's head start, before the bindings were imported
        assert "bindings (cuInit, context)" in beside, p.stderr
        assert len(list((tmp_path / "cache").glob("*.gkc"))) == 1


GPU_PROBE = """
import json, sys
from cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(m for m in ("msgspec", "engine.config", "engine.groth16.verifier",
                                                        "engine.backends.cpu", "scheduler.cpu_pool", "engine.client")
                                                   if m in sys.modules)}))
"""


@pytest.mark.gpu
@pytest.mark.skipif(_cuda() == 0, reason="no CUDA device on this machine")
def test_gpu_direct_proof_loads_neither_msgspec_nor_the_cpu_verifier_nor_the_client(tmp_path):
    """A proof checked on the device needs no CPU verifier (nor the CPU MSM's pool it brings), its flags no
    engine.config (msgspec), its parser no HTTP client: about 60 ms of a cold CLI's imports on the H200's host."""
    import os

    env = {**os.environ, "GROTH16_KEY_CACHE": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-c", GPU_PROBE, "prove", "--backend", "gpu", "--quiet",
                        str(EXAMPLE / "sudoku.zkey"), str(EXAMPLE / "sudoku.wtns"), str(tmp_path / "p.json"),
                        str(tmp_path / "q.json")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"code": 0, "loaded": []}, (out, p.stderr)
    assert (tmp_path / "p.json").exists()
