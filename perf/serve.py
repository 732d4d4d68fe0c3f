"""Proofs through `python -m engine serve` (HTTP) against the same Engine in-process, and the CLI client's time.

    python perf/serve.py [--log-constraints 14,16] [--backend auto] [--repeats 30] [--clients 8]
                         [--running-jobs 0] [--workdir DIR] [--example examples/bn128/sudoku]
                         [--spins 0,3] [--rounds 4] [--no-rates]
    python perf/serve.py --instant-only       # no engine at all: the service, the wire and the client

For each size: a bench circuit (seed 0) and a development key; then, on one
warm engine each, `repeats` sequential proofs (after warm-up) in-process
(`await eng.prove(key, witness)` with the witness read once, as the service
hands the engine a parsed upload; also with the .wtns path, which the engine
reads in its synthesis pool) and through HTTP (`Client.prove` uploading the
.wtns to a server started on a loopback port): p50/p95 latency of each, the
p50 difference (HTTP against the in-memory witness: the same engine path),
and "wire+service", the median over requests of the HTTP
latency minus the server's own time for the job (admission to end): what
the upload, its parsing, the queue hand-off and the answer cost; split into
the server's read of the upload (the job's `upload_s`: handler entry to
queued) and the rest (the client, the wire both ways, the answer).  Proofs/s:
`clients` concurrent requests (in-process: that many concurrent `prove`
calls), for each `--running-jobs` value (0: the server's default; each
other value starts a server of its own).

Paired rounds (`--rounds`, `--spins`): the two medians above come from
series taken a minute apart, and a drift of the device between them passed
for HTTP's cost (1.20 and 2.00 ms in two calls of 2026-12-01); so in-process
blocks and HTTP blocks (one per client spin, engine/client_wait.py) alternate
`rounds` times over one warm engine each side, and HTTP adds is reported per
round and over all of them.

The same figures against perf/instant_serve.py (the real service around an
engine whose proofs take no time) are what HTTP costs alone, for the client
as it is and for each `--spins` value.  Last, the CLI
client (`python -m engine prove --server ... --json`), median of `repeats
// 3` runs against the warm servers, split at the CLOCK_MONOTONIC stamps it
prints: process start -> first request sent (interpreter, imports,
parser), the requests (load_key + prove), answer -> exit (files written,
interpreter exit); beside `python -c pass` and the client's largest imports
(-X importtime).  `--client-venv DIR --client-wheel WHL` runs the client as a
user installed it by the README (`python3 -m venv`, `pip install`): that venv's
interpreter, the wheel's byte-compiled engine, no PYTHONPATH; without it the
client is this checkout under the running interpreter.  Every real proof is
verified by the engine (verify = true) on both sides.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.client import Client  # noqa: E402
from engine.client_wait import ENV  # noqa: E402
from engine.progress import stage_seconds  # noqa: E402
from script_args import Parser, amount_list, count_list, output_dir, positive, run_main, whole_count_list  # noqa: E402

EXAMPLE = ROOT / "examples" / "bn128" / "sudoku"


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def make_circuit(workdir: Path, log_c: int, backend: str) -> tuple[str, str]:
    from engine.groth16.bench_circuit import write_bench_circuit
    from engine.groth16.setup import select_setup_ops, setup_file

    d = workdir / f"bn128_2^{log_c}"
    r1cs, wtns, _ = write_bench_circuit(d, "bn128", 1 << log_c, n_public=2, seed=0)
    zkey = d / "bench.zkey"
    if not zkey.exists():
        ops = select_setup_ops(backend, notes=open(os.devnull, "w"))
        setup_file(r1cs, zkey, ops)
        ops.close()
    return str(zkey), str(wtns)


async def in_process(zkey: str, wtns: str, backend: str, repeats: int, clients: int, rate: bool = True) -> dict:
    """Latency with the witness as a .wtns path (read and checked in the synthesis pool) and as a
    `Witness` read once (the service's path: it hands the engine the parsed upload), and proofs/s."""
    from engine.api import Engine
    from engine.config import EngineConfig
    from engine.formats.wtns import read_wtns

    witness = read_wtns(wtns)
    async with Engine(EngineConfig(backend=backend)) as eng:
        key = await eng.load_key(zkey)
        found, stages = {}, []
        for label, item in (("file", wtns), ("memory", witness)):
            for _ in range(3):
                await eng.prove(key, item)
            lat = []
            for _ in range(repeats):
                t = time.perf_counter()
                proof = await eng.prove(key, item)
                lat.append(time.perf_counter() - t)
                if label == "memory":
                    stages.append(dict(proof.timings))
            found[label] = lat
        if not rate:
            return {"lat": found["memory"], "lat_file": found["file"], "stages": stages, "rate": 0.0}
        n = max(clients * 4, repeats)
        sem = asyncio.Semaphore(clients)

        async def one():
            async with sem:
                await eng.prove(key, witness)

        t = time.perf_counter()
        await asyncio.gather(*[one() for _ in range(n)])
        return {"lat": found["memory"], "lat_file": found["file"], "stages": stages,
                "rate": n / (time.perf_counter() - t)}


def http_latency(url: str, zkey: str, wtns: str, repeats: int, spin_ms: float | None = None) -> dict:
    body = Path(wtns).read_bytes()
    with Client(url, spin_ms=spin_ms) as c:
        key = c.load_key(os.path.abspath(zkey))["id"]
        for _ in range(3):
            c.prove(key, body)
        lat, server, upload, stages = [], [], [], []
        for _ in range(repeats):
            t = time.perf_counter()
            r = c.prove(key, body)
            lat.append(time.perf_counter() - t)
            server.append(r.timings["total_s"])
            upload.append(r.timings.get("upload_s") or 0.0)
            stages.append(r.timings.get("stages") or {})
    return {"lat": lat, "wire": [h - s for h, s in zip(lat, server)], "upload": upload, "stages": stages,
            "rest": [h - s - u for h, s, u in zip(lat, server, upload)], "key": key, "body": body}


async def paired_rounds(url: str, zkey: str, wtns: str, backend: str, rounds: int, per_round: int,
                        spins: list[float]) -> dict:
    """HTTP against in-process in alternating blocks: `rounds` x (`per_round` in-process proofs, then
    `per_round` through HTTP for each client spin), one warm engine each side the whole time, so that a
    drift of the device or the machine between two series does not pass for HTTP's cost.  The HTTP
    blocks run on a worker thread (a blocking client, as a user's) while this loop's engine idles.
    Returns each series' latencies (s) by round."""
    import anyio

    from engine.api import Engine
    from engine.config import EngineConfig
    from engine.formats.wtns import read_wtns

    witness, body = read_wtns(wtns), Path(wtns).read_bytes()
    clients = {spin: Client(url, spin_ms=spin) for spin in spins}
    found: dict = {"in-process": [[] for _ in range(rounds)],
                   **{f"HTTP, spin {spin:g} ms": [[] for _ in range(rounds)] for spin in spins},
                   **{f"wire+service, spin {spin:g} ms": [[] for _ in range(rounds)] for spin in spins}}
    try:
        async with Engine(EngineConfig(backend=backend)) as eng:
            key = await eng.load_key(zkey)
            ids = {}
            for spin, c in clients.items():
                ids[spin] = await anyio.to_thread.run_sync(lambda c=c: c.load_key(os.path.abspath(zkey))["id"])

            def http_block(spin: float, n: int, r: int | None) -> None:
                c = clients[spin]
                for _ in range(n):
                    t = time.perf_counter()
                    res = c.prove(ids[spin], body)
                    lat = time.perf_counter() - t
                    if r is not None:
                        found[f"HTTP, spin {spin:g} ms"][r].append(lat)
                        found[f"wire+service, spin {spin:g} ms"][r].append(lat - res.timings["total_s"])

            for _ in range(3):
                await eng.prove(key, witness)
            for spin in spins:
                await anyio.to_thread.run_sync(http_block, spin, 3, None)
            for r in range(rounds):
                for _ in range(per_round):
                    t = time.perf_counter()
                    await eng.prove(key, witness)
                    found["in-process"][r].append(time.perf_counter() - t)
                for spin in spins:
                    await anyio.to_thread.run_sync(http_block, spin, per_round, r)
    finally:
        for c in clients.values():
            c.close()
    return found


def paired_table(found: dict, spins: list[float]) -> list[dict]:
    """Per round and over all rounds: p50s (ms) and HTTP's p50 minus in-process's, for each spin."""
    rounds = len(found["in-process"])
    rows = []
    for r in [*range(rounds), None]:
        pick = (lambda v: v[r]) if r is not None else (lambda v: [x for block in v for x in block])
        local = statistics.median(pick(found["in-process"]))
        row = {"round": str(r + 1) if r is not None else "all", "in-process p50 ms": local * 1e3}
        for spin in spins:
            h = statistics.median(pick(found[f"HTTP, spin {spin:g} ms"]))
            row[f"HTTP p50 ms, spin {spin:g}"] = h * 1e3
            row[f"HTTP adds p50 ms, spin {spin:g}"] = (h - local) * 1e3
            row[f"wire+service p50 ms, spin {spin:g}"] = statistics.median(
                pick(found[f"wire+service, spin {spin:g} ms"])) * 1e3
        rows.append(row)
    return rows


def http_rate(url: str, key: str, body: bytes, count: int, clients: int, spin_ms: float | None = None) -> float:
    per = [count // clients + (i < count % clients) for i in range(clients)]

    def worker(k: int) -> None:
        with Client(url, spin_ms=spin_ms) as c:
            for _ in range(k):
                c.prove(key, body)

    threads = [threading.Thread(target=worker, args=(k,)) for k in per]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return count / (time.perf_counter() - t)


# The interpreter that runs the CLI client, and how: this checkout's by default (cwd = its root, so
# `-m engine` is this tree); with --client-venv, a venv's own, run from a neutral directory without
# PYTHONPATH so that it imports the engine installed in it (main() sets this).
CLIENT = {"python": sys.executable, "cwd": str(ROOT), "env": None}


def run_client(argv: list[str], extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = CLIENT["env"] if not extra_env else {**(CLIENT["env"] or os.environ), **extra_env}
    return subprocess.run([CLIENT["python"], *argv], cwd=CLIENT["cwd"], env=env, capture_output=True, text=True)


def client_venv(venv: Path, wheel: str | None) -> dict:
    """A venv as the README makes one (`python3 -m venv`, then `pip install`), for the client alone.

    The wheel (`pip wheel --no-deps .` of this tree) goes in with --no-deps: the client path imports
    none of the dependencies (tests/test_client_startup.py), and none of them adds a .pth file that
    `site` would run at start.  pip byte-compiles what it installs, as any install does."""
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if wheel:
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--force-reinstall",
                        wheel], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    where = subprocess.run([str(py), "-c", "import engine; print(engine.__file__)"], cwd=venv, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    if where.startswith(str(ROOT)):
        raise SystemExit(f"the venv's engine is this checkout ({where}), not an installed one")
    return {"python": str(py), "cwd": str(venv), "env": env, "engine": where}


def cli_breakdown(url: str, zkey: str, wtns: str, repeats: int, out: Path, extra_env: dict | None = None) -> dict:
    """Medians (ms) of the CLI client's whole command and its three parts."""
    argv = ["-m", "engine", "prove", "--server", url, "--json", os.path.abspath(zkey), os.path.abspath(wtns),
            str(out / "proof.json"), str(out / "public.json")]
    parts: dict[str, list[float]] = {"whole": [], "start -> first request": [], "requests": [], "answer -> exit": []}
    for _ in range(repeats):
        t0 = time.monotonic()
        r = run_client(argv, extra_env)
        t3 = time.monotonic()
        if r.returncode:
            raise SystemExit(f"CLI client failed: {r.stderr}")
        stamps = json.loads(r.stdout.strip().splitlines()[-1])["monotonic"]
        t1, t2 = stamps["first_request"], stamps["answered"]
        for name, value in zip(parts, (t3 - t0, t1 - t0, t2 - t1, t3 - t2)):
            value = max(value, 0.0)
            parts[name].append(value * 1e3)
    return {name: statistics.median(v) for name, v in parts.items()}


def interpreter_ms(repeats: int) -> dict:
    found = {}
    for label, argv in (("python -c pass", ["-c", "pass"]), ("python -S -c pass", ["-S", "-c", "pass"])):
        walls = []
        for _ in range(repeats):
            t = time.perf_counter()
            run_client(argv)
            walls.append(time.perf_counter() - t)
        found[label] = statistics.median(walls) * 1e3
    return found


def client_imports(url: str, zkey: str, wtns: str, out: Path, top: int = 8) -> list[tuple[str, float]]:
    """The client command's largest top-level imports (cumulative ms, from -X importtime)."""
    r = run_client(["-X", "importtime", "-m", "engine", "prove", "--server", url, os.path.abspath(zkey),
                    os.path.abspath(wtns), str(out / "proof.json"), str(out / "public.json")])
    rows = re.findall(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", r.stderr, re.M)
    tops = [(name.strip(), int(cum) / 1e3) for cum, name in rows if not name.startswith(" ")]
    return sorted(tops, key=lambda x: -x[1])[:top]


def start_server(argv: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, *argv], cwd=ROOT, stderr=open(log, "w"), stdout=subprocess.DEVNULL)
    for _ in range(2400):
        m = re.search(r"listening on (http://\S+)", log.read_text())
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text()}")
        time.sleep(0.05)
    raise SystemExit("server did not start")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(60)


def table(rows: list[dict]) -> None:
    if not rows:
        return
    head = list(rows[0])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r[k] if isinstance(r[k], str) else f"{r[k]:.2f}" for k in head) + " |")


def instant_wtns(work: Path, log_c: int) -> str:
    """A .wtns of the bench circuit's size at 2^log_c (random values; the instant engine reads none)."""
    import numpy as np

    from engine.algebra.curves import curve_by_name
    from engine.formats.wtns import write_wtns

    path = work / f"instant_2^{log_c}.wtns"
    if not path.exists():
        values = np.random.default_rng(log_c).integers(0, 1 << 62, size=((1 << log_c) + 3, 4), dtype=np.uint64)
        write_wtns(path, curve_by_name("bn128").r, values)
    return str(path)


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-constraints", type=count_list, default="14,16")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--repeats", type=positive, default=30)
    ap.add_argument("--clients", type=positive, default=8)
    ap.add_argument("--running-jobs", type=whole_count_list, default="0",
                    help="comma-separated; 0 is the server's default")
    ap.add_argument("--workdir", type=output_dir, default=None)
    ap.add_argument("--example", default=str(EXAMPLE))
    ap.add_argument("--instant-only", action="store_true", help="only the service over the instant engine")
    ap.add_argument("--instant-delay-ms", type=amount_list, default="0",
                    help="comma-separated: the instant engine's proofs take this long, asleep (perf/instant_serve.py "
                         "--delay-ms); the first value also times the CLI client")
    ap.add_argument("--client-venv", default=None,
                    help="run the CLI client from this venv (made if missing) instead of this checkout's interpreter")
    ap.add_argument("--client-wheel", default=None, help="the engine's wheel to install into --client-venv")
    ap.add_argument("--spins", type=amount_list, default="0,3",
                    help="comma-separated client spins (ms, engine/client_wait.py) to compare: the instant server's "
                         "rows, the paired rounds and the CLI client (its default against the first value)")
    ap.add_argument("--rounds", type=positive, default=4,
                    help="paired rounds: in-process and HTTP (each spin) in alternating blocks of --repeats proofs")
    ap.add_argument("--no-rates", action="store_true", help="no proofs/s (latency and the CLI client only)")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="perf-serve-"))
    work.mkdir(parents=True, exist_ok=True)  # a --workdir that does not exist yet (the closing call of 2026-12-01 died on it)
    sizes = [int(x) for x in args.log_constraints.split(",") if x]
    cli_n = max(5, args.repeats // 3)
    spins = [float(x) for x in args.spins.split(",") if x != ""]
    report: dict = {"python": sys.version.split()[0], "dont_write_bytecode": bool(sys.flags.dont_write_bytecode)}
    if args.client_venv:
        CLIENT.update(client_venv(Path(args.client_venv), args.client_wheel))
    report["client"] = {"python": CLIENT["python"], "engine": CLIENT.get("engine", str(ROOT / "engine"))}

    # ---- the service alone: perf/instant_serve.py (at each --instant-delay-ms)
    instant_rows, cli_rows, imports = [], {}, []
    delays = [float(x) for x in args.instant_delay_ms.split(",") if x != ""]
    for d_i, delay in enumerate(delays):
        proc, url = start_server(["perf/instant_serve.py", "--running-jobs", str(args.clients), "--delay-ms",
                                  str(delay)], work / "instant.log")
        try:
            if d_i == 0:
                cli_rows["instant server, example " + Path(args.example).name] = cli_breakdown(
                    url, args.example + ".zkey", args.example + ".wtns", cli_n, work)
            for k, spin in ((k, spin) for k in sizes for spin in [None, *spins]):
                wtns = instant_wtns(work, k)
                h = http_latency(url, args.example + ".zkey", wtns, args.repeats * (3 if not delay else 1), spin)
                rate = 0.0 if args.no_rates or spin is not None else http_rate(
                    url, h["key"], h["body"], max(args.clients * 8, args.repeats), args.clients)
                instant_rows.append({"size": f"2^{k}", "proof ms (asleep)": delay,
                                     "client spin ms": "default" if spin is None else f"{spin:g}",
                                     "upload KiB": len(h["body"]) / 1024,
                                     "HTTP p50 ms": statistics.median(h["lat"]) * 1e3,
                                     "HTTP p95 ms": pct(h["lat"], 0.95) * 1e3,
                                     "wire+service p50 ms": statistics.median(h["wire"]) * 1e3,
                                     "wire+service p95 ms": pct(h["wire"], 0.95) * 1e3,
                                     "of it: upload read p50 ms": statistics.median(h["upload"]) * 1e3,
                                     "of it: the rest p50 ms": statistics.median(h["rest"]) * 1e3,
                                     f"proofs/s, {args.clients} clients": rate})
                if d_i == 0 and spin is None:
                    cli_rows[f"instant server, 2^{k} upload"] = cli_breakdown(url, args.example + ".zkey", wtns,
                                                                              cli_n, work)
            if d_i == 0:
                imports = client_imports(url, args.example + ".zkey", args.example + ".wtns", work)
        finally:
            stop(proc)
    report["interpreter_ms"] = interpreter_ms(cli_n)

    # ---- the real engine, in-process and through HTTP
    rows, rate_rows, stage_rows, paired_rows = [], [], [], []
    if not args.instant_only:
        from engine.api import run as run_loop

        files = {f"2^{k}": make_circuit(work, k, args.backend) for k in sizes}
        slot_values = [int(x) for x in args.running_jobs.split(",") if x != ""]
        for n_slots in slot_values:
            flags = ["-m", "engine", "serve", "--backend", args.backend, "--port", "0"]
            flags += ["--running-jobs", str(n_slots)] if n_slots else []
            proc, url = start_server(flags, work / f"serve-{n_slots}.log")
            slots = re.search(r"(\d+) job slots", (work / f"serve-{n_slots}.log").read_text()).group(1)
            try:
                if n_slots == slot_values[0]:
                    cli_rows["example " + Path(args.example).name] = cli_breakdown(
                        url, args.example + ".zkey", args.example + ".wtns", cli_n, work)
                if n_slots == slot_values[0]:  # the client's start beside a real (idle) server, not the instant one
                    report["interpreter_ms, real server up"] = interpreter_ms(cli_n)
                    report["imports_ms, real server up"] = client_imports(url, args.example + ".zkey",
                                                                          args.example + ".wtns", work)
                for label, (zkey, wtns) in files.items():
                    # the other running_jobs values: throughput only (3 warm-up proofs, no latency series)
                    h = http_latency(url, zkey, wtns, args.repeats if n_slots == slot_values[0] else 0)
                    count = max(args.clients * 4, args.repeats)
                    rate = rate_off = 0.0
                    if not args.no_rates:
                        http_rate(url, h["key"], h["body"], args.clients, args.clients)  # warm every connection path
                        rate = http_rate(url, h["key"], h["body"], count, args.clients)
                        rate_off = http_rate(url, h["key"], h["body"], count, args.clients, 0)  # the client's spin off
                    if n_slots == slot_values[0]:
                        local = run_loop(lambda: in_process(zkey, wtns, args.backend, args.repeats, args.clients,
                                                            not args.no_rates))
                        cli_rows[f"bench {label}"] = cli_breakdown(url, zkey, wtns, cli_n, work)
                        if spins:  # the CLI client with the first --spins value (0: as before this change)
                            cli_rows[f"bench {label}, client spin {spins[0]:g} ms"] = cli_breakdown(
                                url, zkey, wtns, cli_n, work, {ENV: f"{spins[0]:g}"})
                        if spins and args.rounds:
                            found = run_loop(lambda: paired_rounds(url, zkey, wtns, args.backend, args.rounds,
                                                                   args.repeats, spins))
                            report.setdefault("paired_s", {})[label] = found
                            paired_rows.extend({"size": label, **r} for r in paired_table(found, spins))
                        p50_l, p50_h = statistics.median(local["lat"]), statistics.median(h["lat"])
                        names = [n for n in stage_seconds(local["stages"][0]) if all(n in st for st in h["stages"])] if (
                            local["stages"] and h["stages"]) else []
                        stage_rows.extend({"size": label, "stage": n,
                                           "in-process p50 ms": statistics.median(st[n] for st in local["stages"]) * 1e3,
                                           "HTTP p50 ms": statistics.median(st[n] for st in h["stages"]) * 1e3}
                                          for n in names)
                        rows.append({
                            "size": label, "in-process p50 ms": p50_l * 1e3,
                            "in-process p95 ms": pct(local["lat"], 0.95) * 1e3,
                            "in-process, .wtns path, p50 ms": statistics.median(local["lat_file"]) * 1e3,
                            "HTTP p50 ms": p50_h * 1e3, "HTTP p95 ms": pct(h["lat"], 0.95) * 1e3,
                            "HTTP adds p50 ms": (p50_h - p50_l) * 1e3,
                            "wire+service p50 ms": statistics.median(h["wire"]) * 1e3,
                            "wire+service p95 ms": pct(h["wire"], 0.95) * 1e3,
                                 "of it: upload read p50 ms": statistics.median(h["upload"]) * 1e3 if h["upload"] else 0.0,
                                 "of it: the rest p50 ms": statistics.median(h["rest"]) * 1e3 if h["rest"] else 0.0,
                            f"in-process proofs/s, {args.clients} callers": local["rate"],
                            f"HTTP proofs/s, {args.clients} clients, running_jobs {slots}": rate,
                            "the same, client spin 0": rate_off,
                        })
                    else:
                        rate_rows.append({"size": label, "running_jobs": slots, f"HTTP proofs/s, {args.clients} "
                                          "clients": rate})
            finally:
                stop(proc)

    # the figures last (a log's tail shows them), the whole record first
    print(json.dumps({**report, "rows": rows, "rates": rate_rows, "stages": stage_rows, "instant": instant_rows,
                      "paired": paired_rows, "cli_ms": cli_rows, "imports_ms": imports}))
    print(f"backend {args.backend}; Python {report['python']}; {args.repeats} sequential proofs after warm-up; "
          f"bytecode writing {'off' if report['dont_write_bytecode'] else 'on'}")
    if rows:
        print("The engine in-process against the same engine through HTTP:")
        table(rows)
    if paired_rows:
        print(f"Paired rounds: {args.repeats} in-process proofs, then {args.repeats} through HTTP for each client "
              f"spin, {args.rounds} times over (one warm engine each side); HTTP adds = HTTP p50 - in-process p50:")
        table(paired_rows)
    if stage_rows:
        print("The proof's own stages (the engine's timings), in-process against the server's:")
        table(stage_rows)
    if rate_rows:
        print("Other running_jobs:")
        table(rate_rows)
    print(f"The service alone (perf/instant_serve.py: proofs take no time; {args.repeats * 3} requests):")
    table(instant_rows)
    print(f"The CLI client, `python -m engine prove --server URL ...` ({CLIENT['python']}, engine from "
          f"{report['client']['engine']}), median of {cli_n} runs (ms):")
    table([{"against": k, **v} for k, v in cli_rows.items()])
    print(", ".join(f"{k}: {v:.1f} ms" for k, v in report["interpreter_ms"].items()) +
          "; the client command's largest imports (cumulative ms): " +
          ", ".join(f"{name} {ms:.1f}" for name, ms in imports))
    if "imports_ms, real server up" in report:
        print("With the real server up: " +
              ", ".join(f"{k}: {v:.1f} ms" for k, v in report["interpreter_ms, real server up"].items()) +
              "; largest imports: " + ", ".join(f"{name} {ms:.1f}" for name, ms in report["imports_ms, real server up"]))


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
