"""Proofs through `python -m engine serve` (HTTP) against the same Engine in-process.

    python perf/serve.py [--log-constraints 14,16] [--backend auto] [--repeats 30] [--clients 8]
                         [--workdir DIR] [--example examples/bn128/sudoku]

For each size: a bench circuit (seed 0) and a development key; then, on one
warm engine each, `repeats` sequential proofs (after warm-up) in-process
(`await eng.prove(key, wtns)`) and through HTTP (`Client.prove` uploading the
.wtns to a server started on a loopback port), p50/p95 latency of each and
the p50 difference (what HTTP adds), and proofs/s with `clients` concurrent
requests (in-process: that many concurrent `prove` calls).  Last, the CLI
client's whole command (`python -m engine prove --server ...`, interpreter
start included) against the warm server, median of `repeats // 3`, for the
example's circuit and for each size.  Every proof is verified by the engine
(config verify = true) on both sides.
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

from engine.api import Engine  # noqa: E402
from engine.client import Client  # noqa: E402
from engine.config import EngineConfig  # noqa: E402
from engine.groth16.bench_circuit import write_bench_circuit  # noqa: E402
from engine.groth16.setup import select_setup_ops, setup_file  # noqa: E402


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def make_circuit(workdir: Path, log_c: int, backend: str) -> tuple[str, str]:
    d = workdir / f"bn128_2^{log_c}"
    r1cs, wtns, _ = write_bench_circuit(d, "bn128", 1 << log_c, n_public=2, seed=0)
    zkey = d / "bench.zkey"
    if not zkey.exists():
        ops = select_setup_ops(backend, notes=open(os.devnull, "w"))
        setup_file(r1cs, zkey, ops)
        ops.close()
    return str(zkey), str(wtns)


async def in_process(zkey: str, wtns: str, backend: str, repeats: int, clients: int) -> dict:
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
        t = time.perf_counter()
        sem = asyncio.Semaphore(clients)

        async def one():
            async with sem:
                await eng.prove(key, wtns)

        await asyncio.gather(*[one() for _ in range(n)])
        return {"lat": lat, "rate": n / (time.perf_counter() - t)}


def over_http(url: str, zkey: str, wtns: str, repeats: int, clients: int) -> dict:
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
    n = max(clients * 4, repeats)
    per = [n // clients + (i < n % clients) for i in range(clients)]

    def worker(count: int) -> None:
        with Client(url) as c:
            for _ in range(count):
                c.prove(key, body)

    t = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in per]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return {"lat": lat, "server": server, "rate": n / (time.perf_counter() - t)}


def cli_wall(url: str, zkey: str, wtns: str, repeats: int, out: Path) -> float:
    walls = []
    for _ in range(repeats):
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "engine", "prove", "--server", url, zkey, wtns,
                            str(out / "proof.json"), str(out / "public.json")], cwd=ROOT, capture_output=True,
                           text=True)
        walls.append(time.perf_counter() - t)
        if r.returncode:
            raise SystemExit(f"CLI client failed: {r.stderr}")
    return statistics.median(walls)


def start_server(backend: str, log: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve", "--backend", backend, "--port", "0"], cwd=ROOT,
                            stderr=open(log, "w"), stdout=subprocess.DEVNULL)
    for _ in range(1200):
        m = re.search(r"listening on (http://\S+)", log.read_text())
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text()}")
        time.sleep(0.05)
    raise SystemExit("server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-constraints", default="14,16")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--example", default=str(ROOT / "examples" / "bn128" / "sudoku"))
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="perf-serve-"))
    sizes = [int(x) for x in args.log_constraints.split(",") if x]
    files = {f"2^{k}": make_circuit(work, k, args.backend) for k in sizes}
    rows = []
    proc, url = start_server(args.backend, work / "serve.log")
    try:
        cli_rows = {"example " + Path(args.example).name: cli_wall(url, args.example + ".zkey", args.example + ".wtns",
                                                                   max(3, args.repeats // 3), work)}
        for label, (zkey, wtns) in files.items():
            local = asyncio.run(in_process(zkey, wtns, args.backend, args.repeats, args.clients))
            http = over_http(url, zkey, wtns, args.repeats, args.clients)
            cli_rows[label] = cli_wall(url, zkey, wtns, max(3, args.repeats // 3), work)
            p50_l, p50_h = statistics.median(local["lat"]), statistics.median(http["lat"])
            rows.append({
                "size": label, "in-process p50 ms": p50_l * 1e3, "in-process p95 ms": pct(local["lat"], 0.95) * 1e3,
                "HTTP p50 ms": p50_h * 1e3, "HTTP p95 ms": pct(http["lat"], 0.95) * 1e3,
                "HTTP adds p50 ms": (p50_h - p50_l) * 1e3,
                "wire+service p50 ms": statistics.median(h - s for h, s in zip(http["lat"], http["server"])) * 1e3,
                "in-process proofs/s": local["rate"], "HTTP proofs/s": http["rate"],
            })
    finally:
        proc.terminate()
        proc.wait(60)
    print(f"backend {args.backend}, {args.repeats} sequential proofs after warm-up, {args.clients} clients for "
          "proofs/s; Python", sys.version.split()[0])
    head = list(rows[0])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r["size"] if k == "size" else f"{r[k]:.2f}" for k in head) + " |")
    print("\n| CLI client, whole command against the warm server | median ms |\n|---|---|")
    for label, wall in cli_rows.items():
        print(f"| {label} | {wall * 1e3:.1f} |")
    print(json.dumps({"rows": rows, "cli_ms": {k: v * 1e3 for k, v in cli_rows.items()}}))


if __name__ == "__main__":
    main()
