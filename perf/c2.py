"""The seeds' job shape (Filecoin PoRep C2): jobs of P partitions of one circuit, under VRAM budgets.

    python perf/c2.py --zkey bench.zkey --wtns bench.wtns --budgets 16GiB,whole --modes single,split
                      [--partitions 10] [--jobs 3] [--concurrency 1,2] [--tier auto|resident|host]
                      [--proof-dir DIR] [--json FILE]

A job is `prove(key, partitions=[wtns] * P)`: every partition is synthesised in
the engine's synthesis pool (the .wtns read there), checked, staged, computed
and verified, as a C2 job's 10 partitions are.  Per setting (VRAM budget x
lock mode x jobs in flight) one engine loads the key (its footprint follows the
budget: tier, fold), waits for its fold tables (they build on the device behind the
load), runs a warm-up job, then `jobs` jobs with `concurrency` in
flight, and reports s/job (wall / jobs), GPU busy (union of the device's compute
intervals over the run), the device pool's peak bytes in use (key included; the
driver's high-water mark, a pool attribute, not a device-global query), the
engine process's peak resident host memory (VmHWM, reset per setting), and the
budgets' own peaks.  `whole` is the engine's measured budget (90% of free memory).
With --tier host the key is forced onto the host tier, and the rate its bases
stream at is set beside a pinned host-to-device copy measured on the same device.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import numpy as np  # noqa: E402

from engine.api import Engine, run  # noqa: E402
from engine.config import EngineConfig, parse_size  # noqa: E402
from engine.config_flags import LOCK_MODES, slots_arg  # noqa: E402
from engine.errors import EngineError  # noqa: E402
from engine.formats import read_wtns  # noqa: E402
import sort_flags  # noqa: E402  (perf/sort_flags.py)
from scheduler.budget import fmt_bytes  # noqa: E402
from scheduler.timeline import MemorySink, Stage, summarize  # noqa: E402
from script_args import (  # noqa: E402
    Parser, choice_list, count_list, input_file, list_of, output_dir, output_file, positive, run_main, size, word_or,
)


# sizes as the engine reads them (or whole) and lock modes, at the parse: a typo was a ConfigError after the key's
# load, or a setting that ran nothing
_budgets = list_of(word_or("whole", size, "budget"), "VRAM budgets (e.g. 16GiB,whole)", "budget_list")


def parse_args(argv):
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--zkey", type=input_file, required=True)
    p.add_argument("--wtns", type=input_file, required=True)
    p.add_argument("--budgets", type=_budgets, default="16GiB,whole", help="VRAM budgets per device, e.g. 16GiB,whole")
    p.add_argument("--modes", type=choice_list(LOCK_MODES, "lock mode", "mode_list"), default="single,split")
    p.add_argument("--partitions", type=positive, default=10)
    p.add_argument("--jobs", type=positive, default=3)
    p.add_argument("--concurrency", type=count_list, default="1", help="jobs in flight, e.g. 1,2")
    p.add_argument("--tier", choices=("auto", "resident", "host"), default="auto")
    p.add_argument("--host-chunk", type=positive, default=None,
                   help="host tier: wires per streamed chunk (default: planned)")
    p.add_argument("--synthesis-workers", type=positive, default=4)
    p.add_argument("--compute-slots", type=slots_arg, default="auto",
                   help="compute slots a device (split mode): a number, or auto (the engine's default)")
    p.add_argument("--host-budget", type=size, default=None)
    p.add_argument("--proof-dir", type=output_dir, default=None,
                   help="write the last proof (and vkey.json) here, for snarkjs")
    p.add_argument("--json", type=output_file, default=None, help="append one JSON line per setting to this file")
    sort_flags.add(p)
    return p.parse_args(argv)


def witness_stats(path: str) -> dict:
    """How many witness values are 0 or 1 (cheap in an MSM): the shape of the work."""
    values = read_wtns(path).values
    small = (values[:, 1:] == 0).all(axis=1) & (values[:, 0] <= 1)
    return {"wires": int(values.shape[0]), "share_0_1": round(float(small.mean()), 3)}


def pool_high_water(backend, reset: bool = False, reserved: bool = False) -> int:
    """Peak bytes in use from the device's stream-ordered pool (its USED_MEM_HIGH attribute: counted in the
    host's order of allocs and frees, so a proof whose frees are enqueued is not counted while it still runs),
    or with `reserved` the pool's peak backing memory since the engine started, load and warm-up included
    (RESERVED_MEM_HIGH, never reset here: a pool that keeps its memory makes no new mark after a reset)."""
    return backend.device.pool_peak_bytes(reset=reset and not reserved, reserved=reserved)


def host_high_water(reset: bool = False) -> int:
    """This process's peak resident memory (VmHWM); writing 5 to clear_refs resets it."""
    if reset:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
        return 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return -1


def pcie_h2d_bytes_per_s(backend, nbytes: int = 1 << 30) -> float:
    """A pinned host-to-device copy of nbytes on one stream, timed with events (median of 3)."""
    from cuda_kernels.driver import Device, Event, PinnedBuffer  # noqa: PLC0415

    ctx = backend.ctx
    ctx.bind_thread()
    dev, stream = ctx.device, ctx.upload_stream
    host = PinnedBuffer(dev, nbytes)
    buf = dev.alloc(nbytes, stream)
    times = []
    for _ in range(4):
        e0, e1 = Event(timing=True).record(stream), None
        Device.upload(buf, host.view(np.uint8, nbytes), stream)
        e1 = Event(timing=True).record(stream)
        e1.synchronize()
        times.append(e0.elapsed_ms(e1) / 1e3)
        e0.destroy()
        e1.destroy()
    Device.free(buf, stream)
    stream.synchronize()
    host.free()
    return nbytes / sorted(times[1:])[1]


async def one_setting(args, budget: str, mode: str, conc: int) -> dict:
    sink = MemorySink()
    recording = {"on": False}

    def record(event):
        if recording["on"]:
            sink.append(event)

    cfg = dict(backend="gpu", lock_mode=mode, compute_slots=args.compute_slots,
               synthesis_workers=args.synthesis_workers,
               idle_trim_s=None, verify=True, max_in_flight=max(conc, 1) * args.partitions)
    if budget != "whole":
        cfg["vram_budget"] = parse_size(budget, "--budgets")
    if args.host_budget:
        cfg["host_budget"] = parse_size(args.host_budget, "--host-budget")
    async with Engine(EngineConfig(**cfg), on_event=record) as eng:
        backend = eng.devices[0].backend
        backend.tier, backend.host_chunk = args.tier, args.host_chunk
        t = time.perf_counter()
        key = await eng.load_key(args.zkey)
        load_s = time.perf_counter() - t
        # the key's fold tables build on the device behind the load (2^24: ~10 s); the timed jobs run after
        # them, as a service's do (before this, the whole-H200 rows at 2^24 timed proofs beside the build)
        for resident in key._record.resident.values():
            if hasattr(resident, "synchronize"):
                await anyio.to_thread.run_sync(resident.synchronize)
        tables_s = time.perf_counter() - t
        parts = [args.wtns] * args.partitions
        await eng.prove(key, partitions=parts)  # warm-up
        vram_min = {"v": eng.vram.available(0), "h": eng.host.available(0)}

        async def watch():
            while True:
                vram_min["v"] = min(vram_min["v"], eng.vram.available(0))
                vram_min["h"] = min(vram_min["h"], eng.host.available(0))
                await anyio.sleep(0.005)

        pool_high_water(backend, reset=True)
        host_high_water(reset=True)
        recording["on"] = True
        proofs = []
        t = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            limit = anyio.Semaphore(conc)

            async def job():
                async with limit:
                    proofs.extend(await eng.prove(key, partitions=parts))

            async with anyio.create_task_group() as jobs:
                for _ in range(args.jobs):
                    jobs.start_soon(job)
            tg.cancel_scope.cancel()
        wall = time.perf_counter() - t
        recording["on"] = False
        s = summarize(list(sink))
        gpu_spans = _gpu_seconds(sink)
        fp = key.footprint
        row = {
            "budget": budget, "mode": mode, "jobs_in_flight": conc, "partitions": args.partitions,
            "compute_slots": args.compute_slots, "proofs_computing": key.proofs_computing,
            "jobs": args.jobs, "s_per_job": round(wall / args.jobs, 3), "gpu_busy": round(s.gpu_busy, 3),
            "gpu_s_per_proof": round(float(np.median(gpu_spans)), 4) if gpu_spans else None,
            "peak_vram_pool": pool_high_water(backend), "peak_vram_reserved": pool_high_water(backend, reserved=True),
            "peak_host_rss": host_high_water(),
            "peak_vram_budget_used": eng.vram.capacity(0) + key.key_device_bytes - vram_min["v"],
            "peak_host_budget_used": eng.host.capacity(0) - vram_min["h"] + key.key_host_bytes,
            "vram_budget": eng.vram.capacity(0) + key.key_device_bytes, "key_load_s": round(load_s, 2),
            "tables_done_s": round(tables_s, 2),
            "failed": s.failed, "proofs": len(proofs), "footprint": fp.as_dict() if fp is not None else None,
            **_ramp_and_drain(sink),
        }
        if args.tier == "host" or (fp is not None and fp.tier == "host"):
            bw = await eng.devices[0].call(pcie_h2d_bytes_per_s, backend)
            row["pcie_h2d_bytes_per_s"] = bw
            if gpu_spans:
                row["stream_rate_vs_pcie"] = round(fp.streamed_bytes / float(np.median(gpu_spans)) / bw, 3)
            # over the run: every proof's bases streamed in the wall time (proofs computing at once share PCIe)
            row["run_stream_rate_vs_pcie"] = round(fp.streamed_bytes * len(proofs) / wall / bw, 3)
        if args.proof_dir and proofs:
            _write_proof(args, key, proofs[-1], f"{budget}-{mode}")
        return row


def _gpu_seconds(sink) -> list[float]:
    start = {}
    out = []
    for e in sink:
        if e.stage == Stage.GPU_START:
            start[(e.job, e.partition)] = e.t_ns
        elif e.stage == Stage.GPU_END and (e.job, e.partition) in start:
            out.append((e.t_ns - start[(e.job, e.partition)]) / 1e9)
    return out


def _ramp_and_drain(sink) -> dict:
    """Where a job's wall goes beside its proofs' GPU time: from the first submit to the first proof on the
    device (its partition's synthesis and check), from the last proof's done event to the last job's end (its
    epilogue and verification), and a partition's median synthesis and check (the pool's work)."""
    first = {}
    for e in sink:
        first.setdefault(e.stage, e.t_ns)
    last = {e.stage: e.t_ns for e in sink}
    spans = {}
    for name, a, b in (("synth_s", Stage.SYNTH_START, Stage.SYNTH_END), ("check_s", Stage.CHECK_START,
                                                                          Stage.CHECK_END)):
        start = {}
        for e in sink:
            if e.stage == a:
                start[(e.job, e.partition)] = e.t_ns
            elif e.stage == b and (e.job, e.partition) in start:
                spans.setdefault(name, []).append((e.t_ns - start.pop((e.job, e.partition))) / 1e9)
    out = {k: round(float(np.median(v)), 3) for k, v in spans.items()}
    if Stage.JOB_SUBMIT in first and Stage.GPU_START in first:
        out["ramp_s"] = round((first[Stage.GPU_START] - first[Stage.JOB_SUBMIT]) / 1e9, 3)
    if Stage.JOB_DONE in last and Stage.GPU_END in last:
        out["drain_s"] = round((last[Stage.JOB_DONE] - last[Stage.GPU_END]) / 1e9, 3)
    return out


def _write_proof(args, key, proof, tag: str) -> None:
    from engine.formats import read_zkey  # noqa: PLC0415
    from engine.formats.json import write_vkey  # noqa: PLC0415
    from engine.groth16.verifier import vk_from_zkey  # noqa: PLC0415

    d = Path(args.proof_dir)
    d.mkdir(parents=True, exist_ok=True)
    safe = tag.replace("/", "_")
    proof.write(d / f"proof-{safe}.json", d / f"public-{safe}.json")
    vkey = d / "vkey.json"
    if not vkey.exists():
        write_vkey(vkey, vk_from_zkey(read_zkey(args.zkey)))


def describe(row: dict) -> str:
    fp = row["footprint"] or {}
    where = (f"{fp.get('tier')} fold {fp.get('fold')}" if fp.get("tier") == "resident" else
             f"host tier, {fp.get('chunks')} chunks")
    extra = (f", bases at {row['stream_rate_vs_pcie']:.0%} of PCIe a proof, "
             f"{row['run_stream_rate_vs_pcie']:.0%} over the run" if "stream_rate_vs_pcie" in row else "")
    return (f"{row['budget']:>7} {row['mode']:<6} conc {row['jobs_in_flight']}: {row['s_per_job']:.3f} s/job, "
            f"GPU busy {100 * row['gpu_busy']:.0f}%, GPU {1e3 * (row['gpu_s_per_proof'] or 0):.1f} ms/proof, "
            f"peak VRAM {fmt_bytes(row['peak_vram_pool'])} in use, {fmt_bytes(row['peak_vram_reserved'])} reserved "
            f"(budget {fmt_bytes(row['vram_budget'])}), "
            f"peak host RSS {fmt_bytes(row['peak_host_rss'])}; {where}{extra}; key load {row['key_load_s']} s "
            f"(tables done {row['tables_done_s']} s); "
            f"{row['proofs']} proofs, {row['failed']} failed; slots {row.get('compute_slots')}, "
            f"{row.get('proofs_computing')} computing at once"
            + "".join(f"; {k} {row[k]}" for k in ("ramp_s", "drain_s", "synth_s", "check_s") if k in row))


def main(argv=None) -> int:
    args = parse_args(argv)
    sort_flags.apply(args)
    stats = witness_stats(args.wtns)
    print(f"c2 shape: {args.partitions} partitions per job of {os.path.basename(args.zkey)} "
          f"({stats['wires']:,} wires, {stats['share_0_1']:.0%} of witness values 0 or 1)", flush=True)
    try:
        for budget in [b.strip() for b in args.budgets.split(",") if b.strip()]:
            for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
                for conc in [int(c) for c in args.concurrency.split(",") if c.strip()]:
                    row = run(lambda: one_setting(args, budget, mode, conc))
                    row["witness"] = stats
                    print(describe(row), flush=True)
                    if args.json:
                        with open(args.json, "a") as f:
                            f.write(json.dumps(row) + "\n")
    except EngineError as exc:
        print(f"c2.py: {exc}", file=sys.stderr)  # as run_main says it
        return 2
    return 0


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    sys.exit(run_main(main))
