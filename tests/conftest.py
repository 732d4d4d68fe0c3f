"""Shared test fixtures: paths, the pinned node tools (circom2, snarkjs), and the engine CLI.

The node tools come from `npm ci` (package.json pins snarkjs, circom2 and
circomlib).  A test that needs them fails with a message saying to run
`npm ci`: it is never skipped, because a silently skipped interop test is how
an incompatible prover ships.

Trusted setups are slow in snarkjs (`powersoftau prepare phase2` takes minutes
from power 11 up on 2 cores), so the phase-1 files made here are small
(`SESSION_PTAU_POWER`) and cached in `<repo>/.cache/ptau`; circuits too large
for them have snarkjs-made keys committed under `tests/fixtures/interop/`
(`scripts/make_interop_fixtures.sh`).

Helpers are plain functions (importable as `from conftest import ...`) and
each also has a fixture of the same name for tests that prefer injection.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
CIRCUITS = TESTS / "circuits"  # shared .circom sources, each with <name>.input.json beside it
FIXTURES = TESTS / "fixtures"
EXAMPLES = REPO / "examples"
NODE_BIN = REPO / "node_modules" / ".bin"
PTAU_CACHE = REPO / ".cache" / "ptau"
CURVES = ("bn128", "bls12381")

# Largest phase-1 power made in a test session: domain 2^6 = 64 rows, enough
# for every circuit in tests/circuits except power_table (committed keys).
# Measured on 2 busy cores: new + contribute + prepare phase2 takes ~11 s per
# curve at power 6, ~25-40 s at 8, 40-95 s at 10, 90-260 s at 11.
SESSION_PTAU_POWER = 6

NODE_TIMEOUT_S = 600
ENGINE_TIMEOUT_S = 900


# ---------------------------------------------------------------- node tools


def node_tool(name: str) -> Path:
    """Path of node_modules/.bin/<name>; fails the test with the fix if npm ci was not run."""
    path = NODE_BIN / name
    if not path.exists():
        pytest.fail(
            f"{path} not found: run `npm ci` in {REPO} (installs the snarkjs, circom2 and circomlib "
            "pinned in package.json)",
            pytrace=False,
        )
    if shutil.which("node") is None:
        pytest.fail("`node` is not on PATH: install Node.js >= 18, then run `npm ci`", pytrace=False)
    return path


def _run(cmd: list[str], *, cwd: Path | None, check: bool, timeout: int) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"command failed (exit {proc.returncode}): {' '.join(map(str, cmd))}\n"
            f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}",
            pytrace=False,
        )
    return proc


def run_snarkjs(*args, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """Run the pinned `snarkjs` with args; `check=True` fails the test (with its output) on a non-zero exit."""
    return _run([node_tool("snarkjs"), *args], cwd=cwd, check=check, timeout=NODE_TIMEOUT_S)


def circom_compile(circom_file: Path, curve: str, outdir: Path) -> tuple[Path, Path]:
    """Compile a circuit with the pinned circom2 for `curve`; returns (r1cs, wasm) paths in outdir.

    circomlib is on the include path as "circomlib/circuits/...".
    """
    circom_file, outdir = Path(circom_file), Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    name = circom_file.stem
    _run(
        [node_tool("circom2"), circom_file, "--r1cs", "--wasm", "--prime", curve,
         "-l", REPO / "node_modules", "-o", outdir],
        cwd=REPO, check=True, timeout=NODE_TIMEOUT_S,
    )
    r1cs, wasm = outdir / f"{name}.r1cs", outdir / f"{name}_js" / f"{name}.wasm"
    assert r1cs.exists() and wasm.exists(), f"circom2 did not write {r1cs} and {wasm}"
    return r1cs, wasm


def witness_calculate(wasm: Path, input_json: Path, wtns: Path) -> Path:
    """`snarkjs wtns calculate`: the witness the way snarkjs users make it."""
    run_snarkjs("wtns", "calculate", wasm, input_json, wtns, check=True)
    return Path(wtns)


def ptau(curve: str, power: int = SESSION_PTAU_POWER) -> Path:
    """A phase-2-ready powers-of-tau file (new, one contribution, prepare phase2), cached on disk.

    Cached as <repo>/.cache/ptau/<curve>_<power>.ptau; made under a file lock
    and moved into place at the end, so concurrent sessions never read half a file.
    """
    PTAU_CACHE.mkdir(parents=True, exist_ok=True)
    final = PTAU_CACHE / f"{curve}_{power}.ptau"
    if final.exists():
        return final
    with open(PTAU_CACHE / f"{curve}_{power}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.exists():  # made by another session while we waited
            return final
        work = PTAU_CACHE / f"{curve}_{power}.{os.getpid()}.tmp"
        work.mkdir(exist_ok=True)
        try:
            run_snarkjs("powersoftau", "new", curve, power, work / "p0.ptau", check=True)
            run_snarkjs("powersoftau", "contribute", work / "p0.ptau", work / "p1.ptau",
                        "-name=tests", f"-e=tests-{curve}-{power}", check=True)
            run_snarkjs("powersoftau", "prepare", "phase2", work / "p1.ptau", work / "p.ptau", check=True)
            os.replace(work / "p.ptau", final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final


@dataclass(frozen=True)
class Groth16Keys:
    """The keys of one snarkjs Groth16 setup, beside the r1cs they came from."""

    zkey: Path  # after one `zkey contribute`, so delta != 1
    vkey: Path  # `zkey export verificationkey` of zkey
    zkey0: Path  # straight from `groth16 setup` (delta = 1)
    vkey0: Path  # `zkey export verificationkey` of zkey0


def groth16_setup(r1cs: Path, curve: str, power: int = SESSION_PTAU_POWER) -> Groth16Keys:
    """`groth16 setup` + `zkey contribute` + both vkey exports, next to `r1cs` (<stem>_0.zkey, <stem>.zkey)."""
    r1cs = Path(r1cs)
    out, stem = r1cs.parent, r1cs.stem
    keys = Groth16Keys(out / f"{stem}.zkey", out / f"{stem}.vkey.json", out / f"{stem}_0.zkey", out / f"{stem}_0.vkey.json")
    run_snarkjs("groth16", "setup", r1cs, ptau(curve, power), keys.zkey0, check=True)
    run_snarkjs("zkey", "contribute", keys.zkey0, keys.zkey, "-name=tests", f"-e=tests-{stem}", check=True)
    run_snarkjs("zkey", "export", "verificationkey", keys.zkey, keys.vkey, check=True)
    run_snarkjs("zkey", "export", "verificationkey", keys.zkey0, keys.vkey0, check=True)
    return keys


# ---------------------------------------------------------------- the engine


def run_engine(*args, cwd: Path | None = None, timeout: int = ENGINE_TIMEOUT_S) -> subprocess.CompletedProcess:
    """`python -m engine <args>` in a subprocess from the repo root (this checkout's code), never raising."""
    return subprocess.run(
        [sys.executable, "-m", "engine", *map(str, args)],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


# ---------------------------------------------------------------- file headers


@dataclass(frozen=True)
class R1csHeader:
    prime: int
    n_wires: int
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    n_constraints: int

    @property
    def n_public(self) -> int:
        return self.n_pub_out + self.n_pub_in


def r1cs_header(path: Path) -> R1csHeader:
    """Section 1 of an .r1cs, read independently of engine.formats (for checking fixtures)."""
    data = Path(path).read_bytes()
    assert data[:4] == b"r1cs", f"{path}: not an r1cs file"
    (n_sections,) = struct.unpack_from("<I", data, 8)
    pos = 12
    for _ in range(n_sections):
        kind, size = struct.unpack_from("<IQ", data, pos)
        pos += 12
        if kind == 1:
            (n8,) = struct.unpack_from("<I", data, pos)
            prime = int.from_bytes(data[pos + 4 : pos + 4 + n8], "little")
            w, o, i, p = struct.unpack_from("<4I", data, pos + 4 + n8)
            (m,) = struct.unpack_from("<I", data, pos + 4 + n8 + 24)
            return R1csHeader(prime, w, o, i, p, m)
        pos += size
    raise AssertionError(f"{path}: no header section")


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def node_bin() -> Path:
    """node_modules/.bin with snarkjs and circom2 (fails the session's node tests if `npm ci` was not run)."""
    node_tool("snarkjs")
    node_tool("circom2")
    return NODE_BIN


@pytest.fixture(name="run_snarkjs", scope="session")
def _run_snarkjs_fixture(node_bin):
    """The `run_snarkjs(*args, cwd=None, check=False)` helper."""
    return run_snarkjs


@pytest.fixture(name="circom_compile", scope="session")
def _circom_compile_fixture(node_bin):
    """The `circom_compile(circom_file, curve, outdir) -> (r1cs, wasm)` helper."""
    return circom_compile


@pytest.fixture(name="ptau", scope="session")
def _ptau_fixture(node_bin):
    """The `ptau(curve, power=SESSION_PTAU_POWER) -> Path` helper (disk-cached across sessions)."""
    return ptau


@pytest.fixture(name="groth16_setup", scope="session")
def _groth16_setup_fixture(node_bin):
    """The `groth16_setup(r1cs, curve) -> Groth16Keys` helper (contributed and before-contribution keys)."""
    return groth16_setup


@pytest.fixture(name="run_engine", scope="session")
def _run_engine_fixture():
    """The `run_engine(*args) -> CompletedProcess` helper for `python -m engine`."""
    return run_engine


@pytest.fixture(scope="session", autouse=True)
def _wasm_stores_closed_at_the_end():
    """Every circuit's wasmtime store closed before pytest's own end (its last collection, the interpreter's
    teardown), as engine.witness.calculator's atexit handler does for a user's process."""
    yield
    calculator = sys.modules.get("engine.witness.calculator")
    if calculator is not None:
        calculator._release_at_exit()


@pytest.fixture(scope="session", autouse=True)
def _key_cache_in_a_temporary_directory(tmp_path_factory):
    """GPU keys loaded by tests (and by the CLI they run) cache in a directory of this session,
    never in the user's ~/.cache (engine/formats/key_cache.py); a test may still name its own."""
    previous = os.environ.get("GROTH16_KEY_CACHE")
    os.environ["GROTH16_KEY_CACHE"] = str(tmp_path_factory.mktemp("key-cache"))
    yield
    if previous is None:
        os.environ.pop("GROTH16_KEY_CACHE", None)
    else:
        os.environ["GROTH16_KEY_CACHE"] = previous


# ---- loopback HTTP helpers of the client's tests (tests/test_client_*.py)

class LoopbackServer:
    """A hand-made HTTP server on a free loopback port: each connection on a thread of its own, given to the
    subclass's `handle(conn)`; `close()` stops accepting.  For answers no real server would give."""

    def __init__(self):
        import socket  # noqa: PLC0415
        import threading  # noqa: PLC0415

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        import threading  # noqa: PLC0415

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted(conn)
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def accepted(self, conn) -> None:
        """A new connection, before its thread starts (KeepThenDrop keeps them)."""

    def handle(self, conn) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()


def read_http_head(f) -> tuple[list[str], int]:
    """A request's head lines from a socket's file (none at the end of the stream) and its Content-Length;
    the body is left for the caller to read."""
    head = []
    while (line := f.readline()) not in (b"\r\n", b""):
        head.append(line.decode())
    length = next((int(h.split(":")[1]) for h in head if h.lower().startswith("content-length")), 0)
    return head, length


@contextlib.contextmanager
def instant_server(tmp_path_factory, *args: str):
    """perf/instant_serve.py (the real service around an engine whose proofs take no time) on a free
    loopback port, its URL while the block runs; it must exit cleanly when stopped."""
    import re  # noqa: PLC0415
    import time  # noqa: PLC0415

    log = tmp_path_factory.mktemp("instant") / "serve.log"
    proc = subprocess.Popen([sys.executable, "perf/instant_serve.py", "--port", "0", *args], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"), stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (m := re.search(r"listening on (http://\S+)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield m.group(1)
    finally:
        proc.terminate()
        assert proc.wait(30) == 0, log.read_text()
