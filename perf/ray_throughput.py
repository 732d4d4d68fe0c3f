"""Throughput of a RayCluster with 1, 2, ... engines, against one local Engine; the driver's own ceiling.

    python perf/ray_throughput.py --engines 1,2 --proofs 80 --sim-gpu-ms 100
    python perf/ray_throughput.py --engines 1,2 --proofs 80 --sim-gpu-ms 0 --sim-synth-ms 0   # the driver's cap
    python perf/ray_throughput.py --engines 2 --witness-mib 32                                # witnesses by object store

The engines run the SIMULATED device (scheduler/simulated.py: kernel and
upload times are parameters, nothing runs on a GPU) inside real Ray actors on
a local Ray instance; the synthesis pool, budgets and locks in each actor are
the real ones, and so are the driver's placement, the object store and Ray's
calls.  So the figures describe the cluster machinery around a modelled
device: how close N engines come to N times one, and how many jobs per second
the driver and Ray can carry at all (with --sim-gpu-ms 0).

Each setting: a warm-up stream (every engine loads the key), then a timed
stream of --proofs one-proof jobs (prove_stream, unordered; or, with
--batch K, all at once as jobs of K proofs each), repeated
--repeats times; the median is reported.  --witness-mib sends each job an
in-memory witness of that size (put into the object store by the driver)
instead of circuit inputs that the engine's synthesis worker expands.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from gpu_common import table  # noqa: E402

from engine.api import Engine  # noqa: E402
from engine.config import EngineConfig, SimulationConfig  # noqa: E402
from engine.distributed.cluster import RayCluster, start_local_ray  # noqa: E402
from script_args import Parser, count_list, output_file, positive, run_main  # noqa: E402
from engine.file_writes import write_file  # noqa: E402 - whole or not at all


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--engines", type=count_list, default="1,2", help="engine counts, e.g. 1,2,4")
    p.add_argument("--proofs", type=positive, default=80, help="one-proof jobs per timed stream")
    p.add_argument("--repeats", type=positive, default=3)
    p.add_argument("--no-local", action="store_true", help="skip the one-local-Engine baseline")
    p.add_argument("--batch", type=positive, default=1,
                   help="proofs per job (jobs of several partitions: one call carries them all)")
    p.add_argument("--witness-mib", type=float, default=0.0, help="send in-memory witnesses of this size")
    p.add_argument("--cpus", type=positive, default=None, help="CPUs the local Ray instance advertises (default: all)")
    p.add_argument("--json", type=output_file, metavar="FILE", help="write the rows as JSON")
    sim = p.add_argument_group("simulated device (a model, not a measurement)")
    sim.add_argument("--sim-gpu-ms", type=float, default=100.0)
    sim.add_argument("--sim-upload-ms", type=float, default=5.0)
    sim.add_argument("--sim-synth-ms", type=float, default=5.0)
    sim.add_argument("--sim-devices", type=positive, default=1, help="simulated GPUs per engine")
    sim.add_argument("--slots", type=positive, default=1, help="compute slots per device")
    return p.parse_args(argv)


def engine_config(args) -> EngineConfig:
    sim = SimulationConfig(devices=args.sim_devices, vram="8GiB", working_set="1GiB", witness_rows=1024,
                           synth_ms=args.sim_synth_ms, upload_ms=args.sim_upload_ms, stage_host_ms=0,
                           gpu_ms=args.sim_gpu_ms, epilogue_ms=1, verify_ms=1)
    return EngineConfig(backend="simulated", synthesis_workers=1, compute_slots=args.slots, epilogue_threads=2,
                        idle_trim_s=None, simulation=sim)


def items(args, count: int) -> list:
    if not args.witness_mib:
        return [{"seed": i} for i in range(count)]
    rows = max(2, int(args.witness_mib * (1 << 20)) // 32)
    base = np.random.default_rng(1).integers(0, 1 << 62, size=(rows, 4), dtype=np.uint64)
    base[0] = (1, 0, 0, 0)
    return [base for _ in range(count)]  # the same array, put into the object store once per job


async def timed_stream(prover, key, work: list, batch: int = 1) -> float:
    """Seconds to prove `work`: a stream of one-proof jobs, or jobs of `batch` proofs all at once."""
    start = time.perf_counter()
    if batch == 1:
        failed = [r.error async for r in prover.prove_stream(key, work) if not r.ok]
        if failed:
            raise SystemExit(f"{len(failed)} proofs failed, the first: {failed[0]}")
    else:
        chunks = [work[i:i + batch] for i in range(0, len(work), batch)]
        await asyncio.gather(*(prover.prove(key, partitions=chunk) for chunk in chunks))
    return time.perf_counter() - start


async def measure(prover, args, engines: int) -> dict:
    key = await prover.load_key("sim.zkey")
    await timed_stream(prover, key, items(args, 4 * engines))  # warm-up: every engine loads the key
    work = items(args, args.proofs)
    times = [await timed_stream(prover, key, work, args.batch) for _ in range(args.repeats)]
    wall = statistics.median(times)
    row = {"proofs/s": f"{args.proofs / wall:.1f}", "wall s (median)": f"{wall:.2f}",
           "ms per proof": f"{1e3 * wall / args.proofs:.1f}"}
    if isinstance(prover, RayCluster):
        row["split"] = "/".join(str(e["completed"]) for e in prover.stats()["per_engine"])
    return row


async def main(args) -> list[dict]:
    cfg = engine_config(args)
    rows = []
    if not args.no_local:
        async with Engine(cfg) as engine:
            rows.append({"setting": "local Engine (no Ray)", **await measure(engine, args, 1), "split": "-"})
    start_local_ray(**({"num_cpus": args.cpus} if args.cpus else {}))
    for n in (int(x) for x in args.engines.split(",")):
        async with RayCluster(None, engines=n, config=cfg, cpus_per_engine=0) as cluster:
            rows.append({"setting": f"RayCluster, {n} engine(s)", **await measure(cluster, args, n)})
    base = next((float(r["proofs/s"]) for r in rows if r["setting"].startswith("RayCluster, 1 ")), None)
    for r in rows:
        r["vs 1 engine"] = f"{float(r['proofs/s']) / base:.2f}x" if base else "-"
    return rows


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    args = parse_args(None)
    rows = run_main(asyncio.run, main(args))
    load = os.getloadavg()[0]
    print(f"\n{datetime.date.today()} {os.cpu_count()} CPUs (load {load:.1f}); simulated device: gpu {args.sim_gpu_ms} ms, "
          f"upload {args.sim_upload_ms} ms, synthesis {args.sim_synth_ms} ms, {args.sim_devices} device(s) x "
          f"{args.slots} slot(s) per engine; {args.proofs} proofs in jobs of {args.batch}, x {args.repeats}"
          + (f"; {args.witness_mib} MiB witnesses through the object store" if args.witness_mib else ""))
    print(table(rows, ["setting", "proofs/s", "vs 1 engine", "ms per proof", "wall s (median)", "split"]))
    if args.json:
        run_main(write_file, args.json, json.dumps({"args": vars(args), "rows": rows}, indent=1))
