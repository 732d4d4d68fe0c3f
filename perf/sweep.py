"""Throughput sweep: N proofs per setting over concurrency × compute slots × lock mode.

    python perf/sweep.py --simulate --proofs 40 --concurrency 1,2,4,8 --slots 1,2 --modes single,split
    python perf/sweep.py --backend gpu --zkey k.zkey --wtns w.wtns --proofs 20 --concurrency 1,2,4

--simulate runs the SIMULATED device of scheduler/simulated.py (stage times and
VRAM are the --sim-* parameters; no GPU is used, the numbers describe the model,
not hardware); the synthesis pool, budgets, locks and threads are the real ones.
Prints a table (proofs/min, p50/p95 latency, GPU busy %, queue wait) and
writes to --out: a Gantt chart of one run (gantt.png), throughput against
concurrency (throughput.png), each run's timeline (JSON lines) and the table
as JSON.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import msgspec  # noqa: E402

from engine.api import Engine, run  # noqa: E402
from engine.config import EngineConfig, SimulationConfig, parse_size  # noqa: E402
from engine.errors import EngineError  # noqa: E402
from scheduler.timeline import Event, JsonlSink, MemorySink, summarize  # noqa: E402
from cpu_share import CpuSnapshot, format_share  # noqa: E402  (perf/cpu_share.py)
from script_args import (  # noqa: E402
    Parser, choice_list, count_list, input_file, output_dir, positive, positive_float, run_main, size,
    whole_count_list,
)
from engine.config_flags import LOCK_MODES  # noqa: E402
from engine.file_writes import write_file  # noqa: E402 - whole or not at all


def _ints(text: str) -> list[int]:
    """A comma list of counts of at least one (script_args.count_list: '٣', '1,,2', 0 refused), as numbers."""
    return [int(x) for x in count_list(text).split(",")]


def _gantt(text: str) -> str:
    """MODE:SLOTS:CONC: a lock mode and two counts of at least one, handed on stripped."""
    parts = [part.strip() for part in text.split(":")]
    if len(parts) != 3 or parts[0] not in LOCK_MODES:
        raise argparse.ArgumentTypeError(f"{text!r} is no MODE:SLOTS:CONC (MODE one of {', '.join(LOCK_MODES)})")
    try:
        positive(parts[1]), positive(parts[2])
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is no MODE:SLOTS:CONC: {e}") from None
    return ":".join(parts)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = Parser(description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--simulate", action="store_true", help="use the simulated device (no GPU)")
    src.add_argument("--backend", choices=("gpu", "cpu"), help="a real backend (needs --zkey and --wtns)")
    p.add_argument("--zkey", type=input_file, help="proving key (real backend)")
    p.add_argument("--wtns", type=input_file, nargs="+", help="witness file(s), used in turn (real backend)")
    p.add_argument("--proofs", type=positive, default=24, help="proofs per setting (default 24)")
    p.add_argument("--warmup", type=int, default=None, help="proofs before measuring (default: 0 simulated, 1 real)")
    p.add_argument("--concurrency", type=_ints, default=[1, 2, 4, 8], help="jobs in flight, e.g. 1,2,4,8")
    p.add_argument("--slots", type=_ints, default=[1, 2], help="compute slots per device, e.g. 1,2")
    p.add_argument("--modes", type=choice_list(LOCK_MODES, "lock mode", "mode_list"), default="single,split",
                   help="lock modes, e.g. single,split")
    p.add_argument("--devices", type=whole_count_list, default=None,
                   help="GPU indices (real) or a count (simulated), default 1")
    p.add_argument("--synthesis-workers", type=positive, default=4)
    p.add_argument("--epilogue-threads", type=positive, default=None,
                   help="epilogues/verifications in flight (default: one per CPU; a simulation's are sleeps, "
                   "so give it as many as the modelled host has cores)")
    p.add_argument("--host-budget", type=size, default=None)
    p.add_argument("--vram-budget", type=size, default=None)
    p.add_argument("--no-verify", action="store_true")
    p.add_argument("--out", type=output_dir, default="perf/out", help="directory for PNGs, timelines and the table")
    p.add_argument("--switch-interval", type=positive_float, default=None, metavar="S",
                   help="sys.setswitchinterval for the run (an experiment: how long a thread that wants the GIL "
                   "waits for a busy one, 5 ms by default; the device thread's launches queue behind the others)")
    p.add_argument("--no-plots", action="store_true", help="no PNGs (the timelines and the table only)")
    p.add_argument("--cpu", action="store_true", help="print each run's CPU time per thread group and worker")
    p.add_argument("--gantt", type=_gantt, default=None, metavar="MODE:SLOTS:CONC",
                   help="which run to draw (default: the fastest)")
    sim = p.add_argument_group("simulated device (a model, not a measurement)")
    sim.add_argument("--sim-gpu-ms", type=float, default=60.0, help="kernel time of one proof alone")
    sim.add_argument("--sim-upload-ms", type=float, default=25.0, help="upload stream time per proof")
    sim.add_argument("--sim-stage-host-ms", type=float, default=3.0, help="host work in the memory phase")
    sim.add_argument("--sim-synth-ms", type=float, default=40.0)
    sim.add_argument("--sim-epilogue-ms", type=float, default=4.0)
    sim.add_argument("--sim-verify-ms", type=float, default=4.0)
    sim.add_argument("--sim-vram", type=size, default="16GiB")
    sim.add_argument("--sim-working-set", type=size, default="5GiB")
    sim.add_argument("--sim-gain", type=float, default=0.2, help="extra throughput per extra concurrent proof")
    sim.add_argument("--sim-jitter", type=float, default=0.1)
    sim.add_argument("--sim-rows", type=int, default=4096, help="witness rows (host bytes = 32 × rows)")
    args = p.parse_args(argv)
    if args.backend and not (args.zkey and args.wtns):
        p.error("--backend needs --zkey and --wtns")
    if args.simulate and args.devices and (not args.devices.strip().isdigit() or int(args.devices) < 1):
        p.error(f"argument --devices: {args.devices!r} is no count of simulated devices (1 or more)")
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if args.gantt:  # one of the sweep's runs, or runs[chosen] was a KeyError after the whole sweep
        mode, slots, conc = args.gantt.split(":")
        skipped = mode == "single" and int(slots) > 1 and 1 in args.slots  # (sweep() does not run it)
        if mode not in args.modes or int(slots) not in args.slots or int(conc) not in args.concurrency or skipped:
            p.error(f"argument --gantt: {args.gantt!r} is not one of this sweep's runs (--modes, --slots, "
                    "--concurrency; single mode runs 1 slot)")
    return args


def make_config(args: argparse.Namespace, mode: str, slots: int) -> EngineConfig:
    common = dict(lock_mode=mode, compute_slots=slots, synthesis_workers=args.synthesis_workers,
                  verify=not args.no_verify, idle_trim_s=None, max_in_flight=max(args.concurrency))
    if args.epilogue_threads:
        common["epilogue_threads"] = args.epilogue_threads
    if args.host_budget:
        common["host_budget"] = parse_size(args.host_budget, "--host-budget")
    if args.vram_budget:
        common["vram_budget"] = parse_size(args.vram_budget, "--vram-budget")
    if args.simulate:
        sim = SimulationConfig(
            devices=int(args.devices or 1), vram=args.sim_vram, working_set=args.sim_working_set,
            witness_rows=args.sim_rows, synth_ms=args.sim_synth_ms, stage_host_ms=args.sim_stage_host_ms,
            upload_ms=args.sim_upload_ms, gpu_ms=args.sim_gpu_ms, epilogue_ms=args.sim_epilogue_ms,
            verify_ms=args.sim_verify_ms, concurrency_gain=args.sim_gain, jitter=args.sim_jitter,
        )
        return EngineConfig(backend="simulated", simulation=sim, **common)
    devices = [int(x) for x in args.devices.split(",")] if args.devices else None
    return EngineConfig(backend=args.backend, devices=devices, **common)


async def one_run(args: argparse.Namespace, mode: str, slots: int, conc: int,
                  extras: dict | None = None) -> list[Event]:
    """N proofs with `conc` in flight; returns the measured run's events.  `extras` (a dict) gets the
    measured run's CPU time per thread group and synthesis worker (perf/cpu_share.py) and, on the GPU
    backend, its batches as the device ran them (engine/backends/gpu/batch.RECENT)."""
    sink = MemorySink()
    recording = {"on": False}

    def record(event: Event) -> None:
        if recording["on"]:
            sink.append(event)

    async with Engine(make_config(args, mode, slots), on_event=record) as eng:
        key = await eng.load_key(args.zkey if args.backend else "simulated-key")
        wtns = itertools.cycle(args.wtns or [None])

        def item():
            w = next(wtns)
            return w if w is not None else {}

        warmup = args.warmup if args.warmup is not None else (0 if args.simulate else 1)
        for _ in range(warmup):
            await eng.prove(key, item())
        pids = eng.synth.pids() if eng.synth is not None else []
        batches = _batch_log()
        n_before = len(batches) if batches is not None else 0
        cpu0 = CpuSnapshot.take(pids)
        recording["on"] = True
        failures = 0
        async for result in eng.prove_stream(key, (item() for _ in range(args.proofs)), max_in_flight=conc):
            if not result.ok:
                failures += 1
                if failures == 1:
                    print(f"  a proof failed: {result.error}", file=sys.stderr)
        recording["on"] = False
        cpu1 = CpuSnapshot.take(pids)
        if extras is not None:
            extras["cpu"] = cpu0.delta(cpu1)
            if batches is not None:
                extras["batches"] = [b._asdict() for b in list(batches)[n_before:]]
    return list(sink)


def _batch_log():
    """The GPU backend's record of batches (None where the module cannot be imported)."""
    try:
        from engine.backends.gpu import batch  # noqa: PLC0415
    except Exception:  # noqa: BLE001 - no driver bindings here: no batches to report
        return None
    return batch.RECENT


def plot_throughput(rows: list[dict], path: str, title: str) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (mode, slots), group in itertools.groupby(sorted(rows, key=lambda r: (r["mode"], r["slots"], r["conc"])),
                                                   key=lambda r: (r["mode"], r["slots"])):
        group = list(group)
        ax.plot([r["conc"] for r in group], [r["proofs_per_min"] for r in group], marker="o",
                linestyle="--" if mode == "single" else "-", label=f"{mode}, {slots} slot(s)")
    ax.set_xlabel("jobs in flight (concurrency)")
    ax.set_ylabel("proofs per minute")
    ax.set_xscale("log", base=2)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    write_file(path, lambda f: fig.savefig(f, format="png", dpi=110))  # a PNG whole or none
    plt.close(fig)


def format_table(rows: list[dict]) -> str:
    head = "| mode   | slots | conc | proofs | proofs/min | p50 lat s | p95 lat s | GPU busy % | queue wait p50 s |"
    sep = "|--------|------:|-----:|-------:|-----------:|----------:|----------:|-----------:|-----------------:|"
    lines = [head, sep]
    for r in rows:
        lines.append(
            f"| {r['mode']:<6} | {r['slots']:>5} | {r['conc']:>4} | {r['proofs']:>6} | {r['proofs_per_min']:>10.1f} | "
            f"{r['p50']:>9.3f} | {r['p95']:>9.3f} | {100 * r['gpu_busy']:>10.1f} | {r['queue_wait']:>16.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return sweep(args)
    except EngineError as exc:  # a budget too small, a bad file: one line, not a traceback
        print(f"sweep.py: {exc}", file=sys.stderr)  # as run_main and the parser say it
        return 2


def sweep(args: argparse.Namespace) -> int:
    os.makedirs(args.out, exist_ok=True)
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    what = "SIMULATED device" if args.simulate else f"{args.backend} backend, {os.path.basename(args.zkey)}"
    print(f"sweep on the {what}: {args.proofs} proofs per setting", flush=True)
    rows: list[dict] = []
    runs: dict[tuple, list[Event]] = {}
    for mode, slots, conc in itertools.product(args.modes, args.slots, args.concurrency):
        if mode == "single" and slots > 1 and 1 in args.slots:
            continue  # single mode has one lock: compute slots do not apply
        t = time.perf_counter()
        extras: dict = {}
        events = run(lambda: one_run(args, mode, slots, conc, extras))
        s = summarize(events)
        runs[(mode, slots, conc)] = events
        name = f"timeline-{mode}-s{slots}-c{conc}.jsonl"
        sink = JsonlSink(os.path.join(args.out, name))
        for e in events:
            sink(e)
        sink.close()
        write_file(os.path.join(args.out, f"extras-{mode}-s{slots}-c{conc}.json"),
                   msgspec.json.format(msgspec.json.encode(extras)))
        rows.append(dict(mode=mode, slots=slots, conc=conc, proofs=s.proofs_done, proofs_per_min=s.proofs_per_min,
                         p50=s.latency_p50_s, p95=s.latency_p95_s, gpu_busy=s.gpu_busy,
                         queue_wait=s.queue_wait_p50_s, failed=s.failed, timeline=name))
        print(f"  {mode:<6} slots={slots} conc={conc:<3} {s.proofs_per_min:8.1f} proofs/min "
              f"({time.perf_counter() - t:.1f} s)", flush=True)
        if args.cpu and "cpu" in extras:
            print(format_share(extras["cpu"]), flush=True)
    table = format_table(rows)
    print()
    print(table)
    write_file(os.path.join(args.out, "sweep.json"),
               msgspec.json.format(msgspec.json.encode({"source": what, "rows": rows})))
    if args.no_plots:
        return 0
    try:
        from timeline import plot_gantt  # perf/timeline.py  # noqa: PLC0415

        if args.gantt:
            m, sl, c = args.gantt.split(":")
            chosen = (m, int(sl), int(c))
        else:
            chosen = max(runs, key=lambda k: next(r["proofs_per_min"] for r in rows
                                                   if (r["mode"], r["slots"], r["conc"]) == k))
        plot_gantt(runs[chosen], os.path.join(args.out, "gantt.png"),
                   title=f"{what}: {chosen[0]} lock mode, {chosen[1]} slot(s), concurrency {chosen[2]}")
        plot_throughput(rows, os.path.join(args.out, "throughput.png"), title=f"throughput ({what})")
        print(f"\nwrote {args.out}/gantt.png ({chosen[0]}, {chosen[1]} slot(s), conc {chosen[2]}), "
              f"{args.out}/throughput.png, sweep.json and the timelines")
    except ImportError:
        print("\n(matplotlib is not installed: no PNGs; pip install '.[perf]')")
    return 0


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    sys.exit(run_main(main))
