"""Proofs through `python -m engine serve` (HTTP) against the same Engine in-process, and the CLI client's time.

    python perf/serve.py [--log-constraints 14,16] [--backend auto] [--repeats 30] [--clients 8]
                         [--running-jobs 0] [--workdir DIR] [--example examples/bn128/sudoku]
    python perf/serve.py --instant-only       # no engine at all: the service, the wire and the client

For each size: a bench circuit (seed 0) and a development key; then, on one
warm engine each, `repeats` sequential proofs (after warm-up) in-process
(`await eng.prove(key, wtns)`) and through HTTP (`Client.prove` uploading the
.wtns to a server started on a loopback port): p50/p95 latency of each, the
p50 difference, and "wire+service", the median over requests of the HTTP
latency minus the server's own time for the job (admission to end): what
the upload, its parsing, the queue hand-off and the answer cost.  Proofs/s:
`clients` concurrent requests (in-process: that many concurrent `prove`
calls), for each `--running-jobs` value (0: the server's default; each
other value starts a server of its own).

The same figures against perf/instant_serve.py (the real service around an
engine whose proofs take no time) are what HTTP costs alone.  Last, the CLI
client (`python -m engine prove --server ... --json`), median of `repeats
// 3` runs against the warm servers, split at the CLOCK_MONOTONIC stamps it
prints: process start -> first request sent (interpreter, imports,
parser), the requests (load_key + prove), answer -> exit (files written,
interpreter exit); beside `python -c pass` and the client's largest imports
(-X importtime).  Every real proof is verified by the engine (verify =
true) on both sides.
"""
from __future__ import annotations

import argparse
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


async def in_process(zkey: str, wtns: str, backend: str, repeats: int, clients: int) -> dict:
    from engine.api import Engine
    from engine.config import EngineConfig

    async with Engine(EngineConfig(backend=backend)) as eng:
        key = await eng.load_key(zkey)
        for _ in range(3):
            await eng.prove(key, wtns)
        lat = []
        for _ in range(repeats):
            t = time.perf_counter()
            await eng.prove(key, wtns)
            lat.append(time.perf_counter() - t)
        n = max(clients * 4, repeats)
        sem = asyncio.Semaphore(clients)

        async def one():
            async with sem:
                await eng.prove(key, wtns)

        t = time.perf_counter()
        await asyncio.gather(*[one() for _ in range(n)])
        return {"lat": lat, "rate": n / (time.perf_counter() - t)}


def http_latency(url: str, zkey: str, wtns: str, repeats: int) -> dict:
    body = Path(wtns).read_bytes()
    with Client(url) as c:
        key = c.load_key(os.path.abspath(zkey))["id"]
        for _ in range(3):
            c.prove(key, body)
        lat, server = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            r = c.prove(key, body)
            lat.append(time.perf_counter() - t)
            server.append(r.timings["total_s"])
    return {"lat": lat, "wire": [h - s for h, s in zip(lat, server)], "key": key, "body": body}


def http_rate(url: str, key: str, body: bytes, count: int, clients: int) -> float:
    per = [count // clients + (i < count % clients) for i in range(clients)]

    def worker(k: int) -> None:
        with Client(url) as c:
            for _ in range(k):
                c.prove(key, body)

    threads = [threading.Thread(target=worker, args=(k,)) for k in per]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return count / (time.perf_counter() - t)


def cli_breakdown(url: str, zkey: str, wtns: str, repeats: int, out: Path) -> dict:
    """Medians (ms) of the CLI client's whole command and its three parts."""
    cmd = [sys.executable, "-m", "engine", "prove", "--server", url, "--json", zkey, wtns, str(out / "proof.json"),
           str(out / "public.json")]
    parts: dict[str, list[float]] = {"whole": [], "start -> first request": [], "requests": [], "answer -> exit": []}
    for _ in range(repeats):
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
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
            subprocess.run([sys.executable, *argv], cwd=ROOT)
            walls.append(time.perf_counter() - t)
        found[label] = statistics.median(walls) * 1e3
    return found


def client_imports(url: str, zkey: str, wtns: str, out: Path, top: int = 8) -> list[tuple[str, float]]:
    """The client command's largest top-level imports (cumulative ms, from -X importtime)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "engine", "prove", "--server", url, zkey, wtns,
                        str(out / "proof.json"), str(out / "public.json")], cwd=ROOT, capture_output=True, text=True)
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-constraints", default="14,16")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--running-jobs", default="0", help="comma-separated; 0 is the server's default")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--example", default=str(EXAMPLE))
    ap.add_argument("--instant-only", action="store_true", help="only the service over the instant engine")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="perf-serve-"))
    work.mkdir(parents=True, exist_ok=True)  # a --workdir that does not exist yet (the closing call of 2026-12-01 died on it)
    sizes = [int(x) for x in args.log_constraints.split(",") if x]
    cli_n = max(5, args.repeats // 3)
    report: dict = {"python": sys.version.split()[0], "dont_write_bytecode": bool(sys.flags.dont_write_bytecode)}

    # ---- the service alone: perf/instant_serve.py
    proc, url = start_server(["perf/instant_serve.py", "--running-jobs", str(args.clients)], work / "instant.log")
    instant_rows, cli_rows = [], {}
    try:
        cli_rows["instant server, example " + Path(args.example).name] = cli_breakdown(
            url, args.example + ".zkey", args.example + ".wtns", cli_n, work)
        for k in sizes:
            wtns = instant_wtns(work, k)
            h = http_latency(url, args.example + ".zkey", wtns, args.repeats * 3)
            rate = http_rate(url, h["key"], h["body"], max(args.clients * 8, args.repeats), args.clients)
            instant_rows.append({"size": f"2^{k}", "upload KiB": len(h["body"]) / 1024,
                                 "HTTP p50 ms": statistics.median(h["lat"]) * 1e3,
                                 "HTTP p95 ms": pct(h["lat"], 0.95) * 1e3,
                                 "wire+service p50 ms": statistics.median(h["wire"]) * 1e3,
                                 "wire+service p95 ms": pct(h["wire"], 0.95) * 1e3,
                                 f"proofs/s, {args.clients} clients": rate})
            cli_rows[f"instant server, 2^{k} upload"] = cli_breakdown(url, args.example + ".zkey", wtns, cli_n, work)
        imports = client_imports(url, args.example + ".zkey", args.example + ".wtns", work)
    finally:
        stop(proc)
    report["interpreter_ms"] = interpreter_ms(cli_n)

    # ---- the real engine, in-process and through HTTP
    rows, rate_rows = [], []
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
                for label, (zkey, wtns) in files.items():
                    # the other running_jobs values: throughput only (3 warm-up proofs, no latency series)
                    h = http_latency(url, zkey, wtns, args.repeats if n_slots == slot_values[0] else 0)
                    count = max(args.clients * 4, args.repeats)
                    http_rate(url, h["key"], h["body"], args.clients, args.clients)  # warm every connection path
                    rate = http_rate(url, h["key"], h["body"], count, args.clients)
                    if n_slots == slot_values[0]:
                        local = run_loop(lambda: in_process(zkey, wtns, args.backend, args.repeats, args.clients))
                        cli_rows[f"bench {label}"] = cli_breakdown(url, zkey, wtns, cli_n, work)
                        p50_l, p50_h = statistics.median(local["lat"]), statistics.median(h["lat"])
                        rows.append({
                            "size": label, "in-process p50 ms": p50_l * 1e3,
                            "in-process p95 ms": pct(local["lat"], 0.95) * 1e3,
                            "HTTP p50 ms": p50_h * 1e3, "HTTP p95 ms": pct(h["lat"], 0.95) * 1e3,
                            "HTTP adds p50 ms": (p50_h - p50_l) * 1e3,
                            "wire+service p50 ms": statistics.median(h["wire"]) * 1e3,
                            "wire+service p95 ms": pct(h["wire"], 0.95) * 1e3,
                            f"in-process proofs/s, {args.clients} callers": local["rate"],
                            f"HTTP proofs/s, {args.clients} clients, running_jobs {slots}": rate,
                        })
                    else:
                        rate_rows.append({"size": label, "running_jobs": slots, f"HTTP proofs/s, {args.clients} "
                                          "clients": rate})
            finally:
                stop(proc)

    # the figures last (a log's tail shows them), the whole record first
    print(json.dumps({**report, "rows": rows, "rates": rate_rows, "instant": instant_rows, "cli_ms": cli_rows,
                      "imports_ms": imports}))
    print(f"backend {args.backend}; Python {report['python']}; {args.repeats} sequential proofs after warm-up; "
          f"bytecode writing {'off' if report['dont_write_bytecode'] else 'on'}")
    if rows:
        print("The engine in-process against the same engine through HTTP:")
        table(rows)
    if rate_rows:
        print("Other running_jobs:")
        table(rate_rows)
    print(f"The service alone (perf/instant_serve.py: proofs take no time; {args.repeats * 3} requests):")
    table(instant_rows)
    print(f"The CLI client, `python -m engine prove --server URL ...`, median of {cli_n} runs (ms):")
    table([{"against": k, **v} for k, v in cli_rows.items()])
    print(", ".join(f"{k}: {v:.1f} ms" for k, v in report["interpreter_ms"].items()) +
          "; the client command's largest imports (cumulative ms): " +
          ", ".join(f"{name} {ms:.1f}" for name, ms in imports))


if __name__ == "__main__":
    main()
