"""Witness calculation: engine.witness.calculator against snarkjs on the same machine, in the same run.

Circuit: tests/circuits/witness/merkle.circom (a Poseidon Merkle path of depth
72, over 2^14 non-linear constraints), compiled here with circom2.

Measured (medians):
  * per witness, in-process and warm: WasmCircuit.calculate against circom_runtime's
    calculateWTNSBin (what `snarkjs wtns calculate` runs) in one node process;
  * whole commands: `python -m engine witness` (cold: empty module cache, so the
    baseline compiler runs; warm: compiled module on disk) against `snarkjs wtns calculate`;
  * read-out of the witness: the helper's block copy, the helper calling
    readSharedRWMemory, and one Python call per 32-bit word (what a direct
    port of circom's JS does; timed on a slice, scaled to the whole witness);
  * throughput of N spawned worker processes, each loading the circuit once.

Writes its section of perf/RESULTS.md (replacing an older one) and prints it.
Usage: python perf/witness.py [--runs 15] [--cli-runs 5] [--seconds 6] [--workers 1,2] [--no-write]

Without Node.js (e.g. the 16-core GPU machine), only the worker throughput,
same method, for a circuit.wasm compiled elsewhere:

    python perf/witness.py --export DIR          # here (needs node): DIR/merkle.wasm, DIR/input.json
    python perf/witness.py --wasm DIR/merkle.wasm --input DIR/input.json --workers 1,2,4,8,16 --no-write
"""
from __future__ import annotations

import datetime as dt
import json
import multiprocessing as mp
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from script_args import Parser, count_list, positive, positive_float, run_main  # noqa: E402
from engine.file_writes import write_file  # noqa: E402 - whole or not at all

BIN = ROOT / "node_modules" / ".bin"
CIRCUIT = ROOT / "tests" / "circuits" / "witness" / "merkle.circom"
INPUT = ROOT / "tests" / "circuits" / "witness" / "merkle_input.json"
RESULTS = ROOT / "perf" / "RESULTS.md"
SECTION = "## Witness calculation (engine.witness.calculator vs snarkjs)"
WASM_SECTION = "## Witness throughput of worker processes (engine.witness.calculator, no node)"

NODE_BENCH = """
import fs from "fs";
import builder from "%s";
const [wasmPath, inputPath, n] = process.argv.slice(2);
const wc = await builder(fs.readFileSync(wasmPath), {});
const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));
const times = [];
for (let i = 0; i < Number(n); i++) {
  const t = performance.now(), c = process.cpuUsage();
  await wc.calculateWTNSBin(input, 0);
  const dc = process.cpuUsage(c);
  times.push([performance.now() - t, (dc.user + dc.system) / 1000]);
}
console.log(JSON.stringify(times));
"""


def compile_circuit(out: Path) -> tuple[Path, str]:
    src = CIRCUIT.relative_to(ROOT)  # circom2 runs under WASI: relative paths from the repository
    out.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        [str(BIN / "circom2"), str(src), "--wasm", "--r1cs", "-l", "node_modules", "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    counts = re.findall(r"((?:non-linear|linear) constraints: \d+)", res.stdout)
    return out / "merkle_js" / "merkle.wasm", ", ".join(counts)


def wall(cmd: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=ROOT)
    return time.perf_counter() - t


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def node_per_witness(wasm: Path, runs: int, tmp: Path) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds of the whole node process) per witness."""
    script = tmp / "bench.mjs"
    script.write_text(NODE_BENCH % (ROOT / "node_modules" / "circom_runtime" / "js" / "witness_calculator.js"))
    out = subprocess.run(["node", str(script), str(wasm), str(INPUT), str(runs)], capture_output=True, text=True,
                         check=True)
    pairs = json.loads(out.stdout)
    return [w / 1000 for w, _ in pairs], [c / 1000 for _, c in pairs]


def engine_per_witness(wasm: Path, runs: int, cache: Path, quick: bool = False):
    """(wall s, CPU s) per witness, and (cold compile s, load-from-disk s), with an empty module cache."""
    from engine.witness.calculator import WasmCircuit, parse_inputs

    os.environ["GROTH16_ENGINE_CACHE"] = str(cache)
    shutil.rmtree(cache, ignore_errors=True)
    WasmCircuit._cache.clear()
    t = time.perf_counter()
    WasmCircuit.load(wasm, quick=quick)
    cold = time.perf_counter() - t
    WasmCircuit._cache.clear()  # as a new process finds it
    t = time.perf_counter()
    circuit = WasmCircuit.load(wasm, quick=quick)
    warm = time.perf_counter() - t
    assert circuit.from_disk_cache
    inputs = parse_inputs(INPUT)
    walls, cpus = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        circuit.calculate(inputs)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return walls, cpus, cold, warm


def readout(wasm: Path) -> dict[str, float]:
    """Seconds to read the whole witness out after a calculation, three ways."""
    from engine.witness.calculator import WasmCircuit, parse_inputs

    c = WasmCircuit.load(wasm)
    c.calculate(parse_inputs(INPUT))
    rt = c._runtime()
    st, n, n32 = rt.store, c.n_witness, c.n32
    res = {}
    t = time.perf_counter()
    rt.copy_witness(st, 0, n, n32, rt.shared_start)
    res["helper block copy (memory.copy)"] = time.perf_counter() - t
    t = time.perf_counter()
    rt.read_witness(st, 0, n, n32)
    res["helper calling readSharedRWMemory"] = time.perf_counter() - t
    get, read = rt.ex["getWitness"], rt.ex["readSharedRWMemory"]
    part = min(n, 500)
    t = time.perf_counter()
    for i in range(part):
        get(st, i)
        for j in range(n32):
            read(st, j)
    res["one Python call per word (scaled)"] = (time.perf_counter() - t) * n / part
    return res


def _worker(wasm: str, input_json: str, barrier, stop_at, counts, cpu, idx: int) -> None:
    from engine.witness.calculator import WasmCircuit, parse_inputs

    c = WasmCircuit.load(wasm)
    inputs = parse_inputs(input_json)
    c.calculate(inputs)  # warm
    barrier.wait()
    n, t = 0, time.process_time()
    while time.time() < stop_at.value:
        c.calculate(inputs)
        n += 1
    counts[idx], cpu[idx] = n, time.process_time() - t


def throughput(wasm: Path, workers: int, seconds: float, input_json: Path = INPUT) -> tuple[float, float]:
    """(witnesses per second of all workers together, CPU seconds one witness costs a worker)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(workers + 1)
    stop_at = ctx.Value("d", time.time() + 3600)
    counts, cpu = ctx.Array("i", workers), ctx.Array("d", workers)
    procs = [ctx.Process(target=_worker, args=(str(wasm), str(input_json), barrier, stop_at, counts, cpu, i))
             for i in range(workers)]
    for p in procs:
        p.start()
    barrier.wait()
    start = time.time()
    stop_at.value = start + seconds
    for p in procs:
        p.join()
    done = sum(counts)
    return done / (time.time() - start), sum(cpu) / max(done, 1)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{cpu}, {os.cpu_count()} logical CPUs, load average {load:.1f} at start"


def versions() -> str:
    from importlib import metadata

    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    snarkjs = json.loads((ROOT / "node_modules" / "snarkjs" / "package.json").read_text())["version"]
    return (f"Python {platform.python_version()}, wasmtime {metadata.version('wasmtime')}; "
            f"node {node}, snarkjs {snarkjs}")


def throughput_rows(rates: dict[int, tuple[float, float]]) -> list[str]:
    first = next(iter(rates))
    return [
        "| worker processes | witnesses/s | speed-up vs 1 | CPU time per witness |",
        "|---|---|---|---|",
        *[f"| {w} | {r:.1f} | {r / rates[first][0] * first:.2f}x | {ms(c)} |" for w, (r, c) in rates.items()],
    ]


def export(directory: Path) -> int:
    """Compile the Merkle circuit (needs node) and copy merkle.wasm + input.json into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="witness-export-") as tmpd:
        wasm, constraints = compile_circuit(Path(tmpd))
        shutil.copyfile(wasm, directory / "merkle.wasm")
    shutil.copyfile(INPUT, directory / "input.json")
    print(f"wrote {directory / 'merkle.wasm'} ({constraints}) and {directory / 'input.json'}; on the other machine:")
    print(f"  python perf/witness.py --wasm {directory / 'merkle.wasm'} --input {directory / 'input.json'} "
          "--workers 1,2,4,8,16 --no-write")
    return 0


def wasm_only(args, workers: list[int]) -> int:
    """Worker throughput for a given circuit.wasm and input.json: no node, no snarkjs."""
    from importlib import metadata

    from engine.errors import EngineError
    from engine.witness.calculator import WasmCircuit, parse_inputs

    started = machine()
    wasm, input_json = Path(args.wasm).resolve(), Path(args.input).resolve()
    with tempfile.TemporaryDirectory(prefix="witness-perf-") as tmpd:
        os.environ["GROTH16_ENGINE_CACHE"] = str(Path(tmpd) / "cache")  # workers inherit it
        try:
            t = time.perf_counter()
            circuit = WasmCircuit.load(wasm)  # compiled once here; workers map it from the disk cache
            compile_s = time.perf_counter() - t
            circuit.calculate(parse_inputs(input_json), source=str(input_json))  # a bad input fails here, once
        except EngineError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        curve = circuit.curve.name if circuit.curve else f"prime {circuit.prime:#x}"
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        rates = {w: throughput(wasm, w, args.seconds, input_json) for w in workers}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [
        WASM_SECTION,
        "",
        f"- date: {dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"- machine: {started}; {cores} CPUs available to this process, load average {busy:.1f} before the runs",
        f"- software: Python {platform.python_version()}, wasmtime {metadata.version('wasmtime')}",
        f"- command: `{' '.join(['python perf/witness.py', *sys.argv[1:]])}`",
        f"- circuit: {wasm.name} ({wasm.stat().st_size} bytes, {curve}), {circuit.n_witness} witness values; "
        f"Cranelift compile {ms(compile_s)}; {args.seconds:g} s per worker count",
        "",
        *throughput_rows(rates),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(text, WASM_SECTION)
    return 0


def main() -> int:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=positive, default=15, help="witnesses per in-process timing")
    ap.add_argument("--cli-runs", type=positive, default=5, help="runs of each command")
    ap.add_argument("--seconds", type=positive_float, default=6.0, help="duration of each throughput measurement")
    ap.add_argument("--workers", type=count_list, default=None,
                    help="comma-separated worker counts (default 1..cpu_count)")
    ap.add_argument("--no-write", action="store_true", help="print only, leave perf/RESULTS.md alone")
    ap.add_argument("--wasm", type=Path, metavar="FILE",
                    help="only the worker throughput, for this circuit.wasm (no node or snarkjs needed)")
    ap.add_argument("--input", type=Path, metavar="FILE", help="the input.json for --wasm")
    ap.add_argument("--export", type=Path, metavar="DIR",
                    help="compile the Merkle circuit (needs node) and copy merkle.wasm and input.json into DIR")
    args = ap.parse_args()
    if args.export and (args.wasm or args.input):
        ap.error("--export makes the files that --wasm/--input use elsewhere: give one or the other")
    if bool(args.wasm) != bool(args.input):
        ap.error("--wasm and --input go together")
    default_workers = list(range(1, max(2, os.cpu_count() or 1) + 1))
    try:
        workers = [int(w) for w in args.workers.split(",")] if args.workers else default_workers
    except ValueError:
        ap.error(f"--workers {args.workers}: expected comma-separated counts, e.g. 1,2,4")
    if any(w < 1 for w in workers):
        ap.error(f"--workers {args.workers}: counts must be at least 1")
    if args.export:
        return export(args.export)
    if args.wasm:
        return wasm_only(args, workers)
    started = machine()

    with tempfile.TemporaryDirectory(prefix="witness-perf-") as tmpd:
        tmp = Path(tmpd)
        os.environ["GROTH16_ENGINE_CACHE"] = str(tmp / "cache")  # cold and warm under our control
        wasm, constraints = compile_circuit(tmp / "build")
        env = dict(os.environ)
        # whole commands, alternating so both see the same machine load
        ours_cold, ours_warm, snark_cli = [], [], []
        engine_cmd = [sys.executable, "-m", "engine", "witness", "--quiet", str(wasm), str(INPUT), str(tmp / "e.wtns")]
        snark_cmd = [str(BIN / "snarkjs"), "wtns", "calculate", str(wasm), str(INPUT), str(tmp / "s.wtns")]
        for _ in range(args.cli_runs):
            shutil.rmtree(tmp / "cache", ignore_errors=True)
            ours_cold.append(wall(engine_cmd, env))
            ours_warm.append(wall(engine_cmd, env))
            snark_cli.append(wall(snark_cmd))
        identical = (tmp / "e.wtns").read_bytes() == (tmp / "s.wtns").read_bytes()
        # per witness, in-process
        snark_times, snark_cpu = node_per_witness(wasm, args.runs, tmp)
        quick_times, quick_cpu, quick_cold, _ = engine_per_witness(wasm, args.runs, tmp / "cache-quick", quick=True)
        ours_times, ours_cpu, ours_cold_load, ours_warm_load = engine_per_witness(wasm, args.runs, tmp / "cache-opt")
        # workers (below) load the optimised build from tmp/cache-opt
        reads = readout(wasm)
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        rates = {w: throughput(wasm, w, args.seconds) for w in workers}
        from engine.witness.calculator import WasmCircuit

        n_witness = WasmCircuit.load(wasm).n_witness

    med = statistics.median
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [
        SECTION,
        "",
        f"- date: {dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"- machine: {started}",
        f"- software: {versions()}",
        f"- command: `{' '.join(['python perf/witness.py', *sys.argv[1:]])}`",
        f"- circuit: tests/circuits/witness/merkle.circom (Poseidon Merkle path, depth 72): {constraints}, "
        f"{n_witness} witness values; our .wtns byte-identical to snarkjs's: {identical}",
        "",
        "| per witness, in-process, warm | wall median | wall min | first | CPU median |",
        "|---|---|---|---|---|",
        f"| engine `WasmCircuit.calculate`, Cranelift ({args.runs} runs) | {ms(med(ours_times))} | "
        f"{ms(min(ours_times))} | {ms(ours_times[0])} | {ms(med(ours_cpu))} |",
        f"| engine, Winch baseline build (`load(quick=True)`, the CLI's cold path) | {ms(med(quick_times))} | "
        f"{ms(min(quick_times))} | {ms(quick_times[0])} | {ms(med(quick_cpu))} |",
        f"| snarkjs `calculateWTNSBin` in node ({args.runs} runs) | {ms(med(snark_times))} | {ms(min(snark_times))} | "
        f"{ms(snark_times[0])} | {ms(med(snark_cpu))} |",
        "",
        "CPU is the process's user+system time per witness (node's includes its background compiler threads); "
        "on a shared, loaded machine it is the steadier measure.",
        "",
        f"Loading the circuit in-process: compiling with Cranelift {ms(ours_cold_load)}, with Winch "
        f"{ms(quick_cold)}; mapping the compiled module from the disk cache {ms(ours_warm_load)}.",
        "",
        "| whole command (median of %d) | wall time |" % args.cli_runs,
        "|---|---|",
        f"| `python -m engine witness`, cold (empty module cache: Winch compile) | {ms(med(ours_cold))} |",
        f"| `python -m engine witness`, warm (compiled module on disk) | {ms(med(ours_warm))} |",
        f"| `snarkjs wtns calculate` | {ms(med(snark_cli))} |",
        "",
        "| witness read-out (%d values) | time |" % n_witness,
        "|---|---|",
        *[f"| {k} | {ms(v)} |" for k, v in reads.items()],
        "",
        f"Throughput: {cores} CPUs available to this process, load average {busy:.1f} just before; CPU time per "
        "witness staying flat as workers are added means the workers share nothing and scale with the cores "
        "they get."
        + (
            " Here other jobs kept the CPUs busy, so the added workers found no idle core: rerun on an idle "
            "machine for the N-fold figure."
            if busy > 0.5 * cores
            else ""
        ),
        "",
        *throughput_rows(rates),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(text)
    return 0


def write_section(text: str, section: str = SECTION) -> None:
    """Replace our section of perf/RESULTS.md (up to the next '## ' heading), keeping the others."""
    old = RESULTS.read_text() if RESULTS.exists() else "# Performance results\n\n"
    start = old.find(section)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        nxt = old.find("\n## ", start + len(section))
        new = old[:start] + text + ("\n" + old[nxt + 1:] if nxt >= 0 else "")
    write_file(RESULTS, new.rstrip("\n") + "\n")


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    sys.exit(run_main(main))
