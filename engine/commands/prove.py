"""`python -m engine prove <circuit.zkey> <witness.wtns> <proof.json> <public.json>`.

The argument order of `snarkjs groth16 prove` and rapidsnark.  With
`--wasm circuit.wasm --input input.json` the witness is computed in-process
and only <proof.json> <public.json> follow the key.  The proof is verified
before anything is written (unless --no-verify), and both files are written
only once everything has succeeded, so a failed run leaves no proof behind.
One exception: a --timeline that could not be written (a full disk) fails the
command (exit 2) once the verified proof is written, not instead of it.

One proof runs directly in this process.  `--timeline FILE`, `--config FILE`
or any of the Engine's own flags (budgets, pools, locks, devices) run it
through the asyncio Engine instead (scheduler, budgets, timeline), with the
same checks, the same one-line errors and exit codes; Ctrl-C exits 130 and
leaves no file behind on either path, until the proof is being written: from
there the command has succeeded and a Ctrl-C is ignored (engine/interrupts.py).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from engine import exit_handoff, interrupts
from engine.commands.outputs import check_outputs
from engine.errors import EngineError
from engine.progress import add_output_flags, format_timings, make_progress, report_proof


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "prove",
        help="make a Groth16 proof (snarkjs-compatible) from a .zkey and a witness",
        description="Prove with a snarkjs .zkey and a .wtns witness (or circuit.wasm + input.json), writing "
        "proof.json and public.json as snarkjs does.  The proof is verified before it is written.",
    )
    p.add_argument("zkey", metavar="circuit.zkey")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="<witness.wtns> <proof.json> <public.json>, or <proof.json> <public.json> with --wasm")
    p.add_argument("--wasm", metavar="circuit.wasm", help="compute the witness from this circom wasm ...")
    p.add_argument("--input", metavar="input.json", help="... and these input signals")
    p.add_argument("--r1cs", metavar="circuit.r1cs",
                   help="check the witness against these constraints first and name the first failing one")
    add_output_flags(p)
    from engine.config_flags import PROVING_BACKENDS, add_arguments

    # --backend, --verify/--no-verify, --timeline, --config and the engine's knobs
    add_arguments(p, backends=PROVING_BACKENDS)
    from engine.client_flags import add_server_arguments

    add_server_arguments(p)  # --server URL, --token-file, --priority, --deadline
    from engine.distributed.command import add_arguments as add_ray_arguments

    add_ray_arguments(p)  # --ray ADDRESS, --engines N
    p.set_defaults(func=run, preload=preload, start=start)


# A lone proof's streams (upload, compute, the tail's five side lanes: pipeline.run_compute; the key tables'
# side stream: key.py) number ONE_PROOF_STREAMS; the direct path's context makes ONE_PROOF_QUEUES hardware work
# queues for them, not the Engine's 32 (driver.prefer_connections).  Each queue costs about 14 ms to make, on
# the device's start, which runs beside the imports and, where they are byte-compiled (an installed package),
# ends after them: it is on the cold CLI's path; the release is off it (engine/exit_handoff.py).  Measured in
# turns on the H200, every module byte-compiled, runs 0.5 s apart (perf/RESULTS.md, session 34): 2^14 domain
# 4 / 2 / 1 queues 423.8 / 395.1 / 377.6 ms (the proof 8.9 / 9.2 / 10.7 ms), 2 / 1 again 401.7 / 394.1;
# 2^20 domain 600.6 / 576.4 / 567.5 ms (the proof 61.3 / 59.8 / 60.8).  The streams stay: on one queue their
# work runs in the order it was queued, which a lone proof's chain of stages nearly is already.
ONE_PROOF_STREAMS = 8
ONE_PROOF_QUEUES = 1


def _direct_gpu(args: argparse.Namespace) -> bool:
    """The line proves once, in this process, on the GPU when one exists (run's direct path)."""
    from engine.config_flags import direct_path

    return direct_path(args) and args.backend in (None, "auto", "gpu")


def start(args: argparse.Namespace) -> None:
    """Before the heavy imports (cli.main): on the direct GPU path, the driver and the device's context start
    on a thread (engine/backends/device_start.py) while the main thread loads the rest."""
    if _direct_gpu(args):
        from engine.backends.device_start import DeviceStart

        args.device_start = DeviceStart(0, connections=ONE_PROOF_QUEUES)


def preload(args: argparse.Namespace) -> list[str]:
    """Modules `run` will import, loaded before Ctrl-C becomes a KeyboardInterrupt (cli.main): an
    interrupt inside an import can be lost or crash an extension's init."""
    if getattr(args, "server", None):
        return ["engine.client"]
    if getattr(args, "ray", None):
        return ["engine.distributed.command"]
    from engine.config_flags import direct_path

    # engine.formats loads its readers on first use: name them.  The direct GPU path checks its proof on the
    # device and reads its flags without engine.config: the CPU verifier, the CPU backend (with the CPU MSM's
    # pool) and msgspec are not on its way (engine.backends.select imports the CPU backend where no GPU is found)
    modules = ["numpy", "engine.formats.zkey", "engine.formats.wtns", "engine.groth16.prover",
               "engine.backends.select"]
    if not (direct_path(args) and args.backend == "gpu"):
        modules += ["engine.groth16.verifier", "engine.backends.cpu"]
    if not direct_path(args):
        modules.append("engine.config")
    if args.r1cs:
        modules += ["engine.formats.r1cs", "engine.groth16.r1cs_check"]
    if args.backend == "cpu":  # what the CPU pool's first start imports (its large MSMs)
        modules += ["multiprocessing.forkserver", "multiprocessing.popen_forkserver", "multiprocessing.connection",
                    "multiprocessing.resource_tracker", "multiprocessing.spawn"]
    if args.wasm or args.input:
        modules.append("engine.witness.calculator")
    if not direct_path(args):  # the Engine's (a --ray line returned above)
        modules += ["anyio", "engine.api", "scheduler.synth_pool", "scheduler.cpu_pool"]
    if args.backend == "gpu":
        modules.append("engine.backends.gpu")
    return modules


def _split_files(args) -> tuple[str | None, str, str]:
    """(witness.wtns or None, proof.json, public.json), with no output over an input or another output."""
    wtns, proof, public = _files(args)
    _check_outputs(args, wtns, proof, public, getattr(args, "timeline", None))
    return wtns, proof, public


def _check_outputs(args, wtns, proof, public, timeline, timeline_role: str = "timeline") -> None:
    check_outputs([("proof", proof), ("public signals", public), (timeline_role, timeline)],
                  [("key", args.zkey), ("witness", wtns), ("wasm", args.wasm), ("input signals", args.input),
                   ("r1cs", args.r1cs), ("configuration", getattr(args, "config", None))])


def _files(args) -> tuple[str | None, str, str]:
    if args.wasm or args.input:
        if not (args.wasm and args.input):
            raise EngineError("--wasm and --input go together (circuit.wasm and its input.json)")
        if len(args.files) != 2:
            raise EngineError("with --wasm/--input, give <circuit.zkey> <proof.json> <public.json>")
        return None, args.files[0], args.files[1]
    if len(args.files) != 3:
        raise EngineError("give <circuit.zkey> <witness.wtns> <proof.json> <public.json> (or --wasm/--input)")
    return args.files[0], args.files[1], args.files[2]


def _witness_from_wasm(zkey, wasm: str, inputs: str):
    from engine.witness.calculator import WasmCircuit, parse_inputs

    circuit = WasmCircuit.load(wasm, quick=True)  # one witness: compile time dominates
    circuit.check_key(zkey)  # its field and witness size: the wasm of another circuit is named
    return circuit.prime, circuit.calculate(parse_inputs(inputs), source=inputs)


def _check_where(args: argparse.Namespace) -> None:
    """--server and --ray are two places to prove; the flags that act in only one of them need it."""
    from engine.client_flags import REMOTE_ONLY

    if args.server and getattr(args, "ray", None):
        raise EngineError("--server and --ray are two places to prove: give one")
    for name, flag, needs in REMOTE_ONLY:
        if getattr(args, name, None) is not None and not getattr(args, needs[2:], None):
            raise EngineError(f"{flag} acts only with {needs}, which is not given (this proof would ignore it)")


def run(args: argparse.Namespace) -> int:
    _check_where(args)
    if args.server:  # prove on a `python -m engine serve` (before any import that would load numpy or CUDA)
        from engine.client_command import prove_command

        return prove_command(args, *_split_files(args))
    try:
        return _run_local(args)
    finally:
        device_start = getattr(args, "device_start", None)
        if device_start is not None:  # started by start() for a command that failed before its backend took it
            device_start.close()


def _run_local(args: argparse.Namespace) -> int:
    from engine.config_flags import direct_path, direct_settings
    from engine.progress import process_age

    started = process_age()  # the interpreter's start-up and every import up to here

    wtns_path, proof_path, public_path = _split_files(args)
    if direct_path(args):  # one proof here: its few settings read without engine.config (msgspec)
        settings = direct_settings(args)
        _refuse_gpu_flags_on_cpu(args, settings.backend)
        return _run_direct(args, settings, wtns_path, proof_path, public_path, started)
    from engine.config import ConfigError, from_args

    config = from_args(args)
    if not args.ray:  # a cluster's engines run elsewhere, on their machines' devices
        _refuse_gpu_flags_on_cpu(args, config.backend)
    if config.timeline and config.timeline != getattr(args, "timeline", None):  # a --config file's timeline
        _check_outputs(args, wtns_path, proof_path, public_path, config.timeline, f"timeline of {args.config}")
    if config.backend == "simulated":
        raise ConfigError(f"{args.config or 'configuration'}: backend 'simulated' makes no real proofs; "
                          "use auto, cpu or gpu to prove")
    if args.ray:  # on a Ray cluster: engine/distributed/command.py
        from engine.distributed.command import prove_on_ray

        return prove_on_ray(args, config, wtns_path, proof_path, public_path)
    return _run_engine(args, config, wtns_path, proof_path, public_path)


def _refuse_gpu_flags_on_cpu(args, backend: str) -> None:
    from engine.config_flags import gpu_flags_problem

    problem = gpu_flags_problem(args, backend, None)
    if problem is not None:
        raise EngineError(problem[1])


def _warn_gpu_flags_unused(args, backend: str, gpus: int, progress=None) -> None:
    """A GPU-only flag on a line whose auto backend found no device: one warning line (JSON with --json), even
    with --quiet, not silently dropped."""
    from engine.config_flags import gpu_flags_problem

    problem = gpu_flags_problem(args, backend, gpus)
    if problem is not None:
        import warnings

        if progress is not None:
            progress.done()  # a bar's line cleared first (the next stage draws it again)

        warnings.warn(problem[1], stacklevel=2)


def _prepare_witness(args, zkey, wtns_path, progress):
    """(prime, values, name): the witness read or computed here, checked against the key (and --r1cs)."""
    from engine.formats import read_wtns
    from engine.groth16.prover import check_witness_for_key

    with progress.timed("witness", 0.1):
        if wtns_path is None:
            from engine.commands.witness import circuit_log_shown  # the circuit's log() lines, as in `witness`

            witness_name = args.input
            with circuit_log_shown(progress, quiet=args.quiet):
                prime, values = _witness_from_wasm(zkey, args.wasm, args.input)
        else:
            witness_name = wtns_path
            w = read_wtns(wtns_path)
            prime, values = w.prime, w.values
        check_witness_for_key(zkey, prime, values, witness_name)
    if args.r1cs:
        from engine.formats import read_r1cs
        from engine.groth16.r1cs_check import check_witness

        with progress.timed("check constraints", 0.2):
            check_witness(read_r1cs(args.r1cs), values, r1cs_name=args.r1cs, witness_name=witness_name,
                          prime=prime, zkey=zkey)
    return prime, values, witness_name


def _run_direct(args, config, wtns_path, proof_path, public_path, started=None) -> int:
    # Whatever happens from here, the backend is closed (finally) and the files are written whole or not at all:
    # engine/__main__ may leave without the interpreter's teardown (cli.left_clean)
    args.left_clean = True
    progress = make_progress("prove", quiet=args.quiet, json=args.json)
    if started is not None:
        progress.timings["interpreter + imports"] = started
    if getattr(args, "device_start", None) is None:
        start(args)  # a caller other than cli.main, which starts the device before its imports (run closes it)
    with interrupts.recorded():
        return _prove_direct(args, config, wtns_path, proof_path, public_path, progress)


def _prove_direct(args, config, wtns_path, proof_path, public_path, progress) -> int:
    from engine.formats import read_zkey
    from engine.groth16.prover import prove
    from engine.progress import process_age

    try:
        if config.backend == "gpu" and any(map(_piped, (args.zkey, wtns_path, args.input, args.r1cs))):
            _refuse_no_gpu(getattr(args, "device_start", None))  # before a wait for a writer (see _refuse_no_gpu)
        with progress.timed("read key", 0.0):
            zkey = read_zkey(args.zkey)
        prime, values, witness_name = _prepare_witness(args, zkey, wtns_path, progress)
        backend, candidates = _start_backend(config, zkey, progress, getattr(args, "device_start", None),
                                             on_cpu=lambda gpus: _warn_gpu_flags_unused(args, config.backend, gpus,
                                                                                        progress))
        if config.vram_budget is not None and hasattr(backend, "key_budget_bytes"):
            backend.key_budget_bytes = config.vram_budget  # the key's footprint is planned against it
        if hasattr(backend, "proofs_per_load"):
            backend.proofs_per_load = 1  # loaded for this one proof: no fold tables that pay off over many
        try:
            with progress.timed("load key", 0.35):
                if candidates is None:
                    key = backend.load_key(zkey)
                else:  # the GPU's, its footprint chosen among the candidates made beside the context
                    key = backend.load_key(zkey, backend.plan_key(zkey, candidates=candidates))
            progress.add_timings(getattr(key, "timings", {}), prefix="  key: ")
            footprint = getattr(key, "footprint", None)
            if footprint is not None and args.verbose and not args.json:
                print(f"key footprint: {footprint.describe()}", file=sys.stderr)
            with progress.timed("prove", 0.5):
                proof = prove(zkey, values, backend, key, prime=prime, witness_name=witness_name,
                              verify=config.verify)
        finally:
            with progress.timed("close backend", 0.9):
                if exit_handoff.releases_left_to_exit():  # the process ends next: engine/exit_handoff.py
                    backend.close_for_exit()
                else:
                    backend.close()
        interrupts.check()  # a Ctrl-C that some code swallowed on the way: nothing is written
        interrupts.finished()  # from here the proof is made: a Ctrl-C is too late and ignored
        with progress.timed("write", 0.95):
            proof.write(proof_path, public_path)
        progress.add_timings(proof.timings, prefix="  ")
    finally:
        progress.done()
    age = process_age()
    if age is not None:
        progress.timings["total so far (exit follows)"] = age
    if args.json:
        print(json.dumps({"event": "result", "proof": proof_path, "public": public_path, "curve": zkey.curve.name,
                          "backend": backend.name, "verified": bool(config.verify), "timings": progress.timings}))
    elif args.verbose:
        print(f"backend: {backend.name}", file=sys.stderr)
        print(format_timings(progress.timings), file=sys.stderr)
    return 0


def _start_backend(config, zkey, progress, device_start=None, on_cpu=None):
    """The backend and the key's footprint candidates (None: planned at the load), its cold start timed stage
    by stage for --verbose: cuInit and the device's context (begun on a thread by start(), else here) with
    the key's candidates and kernels made beside the context (_beside_the_context), the GPU backend's import,
    its streams, the curve's kernel module (only this key's curve is loaded)."""
    from engine.backends.select import select_backend

    name, count, ahead = config.backend, 0, None
    if name in ("auto", "gpu"):
        ahead = _beside_the_context(zkey, device_start, progress)
        with progress.timed("wait for the device's start", 0.3):
            count = device_start.wait()
        progress.add_timings(device_start.timings, prefix="  device (beside the imports): ")
    if name == "auto":
        name = "gpu" if count else "cpu"
        if not count and on_cpu is not None:  # `on_cpu(0)`: what the line's GPU flags say to that
            on_cpu(0)
    if name != "gpu" or not count:  # the CPU, or no device: select_backend names the problem
        with progress.timed("backend", 0.3):
            return select_backend(name), None
    with progress.timed("import gpu backend", 0.3):
        import engine.backends.gpu  # noqa: F401
    with progress.timed("context", 0.3):
        backend = select_backend("gpu", key_cache_dir=config.key_cache_dir, device=device_start.take())
    try:
        if ahead is not None and ahead.cubin is not None:
            backend.ctx.adopt(zkey.curve, ahead.cubin, ahead.facts.arch)
        elif ahead is not None:  # not in the kernel cache: NVRTC compiles them now (65-110 s on the H200's host)
            from cuda_kernels.build import cache_dir  # noqa: PLC0415

            progress.note(f"compiling the {zkey.curve.name} kernels for {ahead.facts.arch} with NVRTC: a minute or "
                          f"two, once (kept in {cache_dir()})")
        with progress.timed("kernel module", 0.33):
            backend.prepare_key(zkey)
            backend.ctx.module(zkey.curve)
        if backend.maintenance_due() and pins_for_one_load(zkey):  # pin its staging buffers (nothing else runs)
            with progress.timed("pin staging buffers", 0.34):
                backend.maintain()
    except BaseException:
        backend.close()
        raise
    return backend, (ahead.candidates if ahead is not None else None)


class _Ahead:
    """What _beside_the_context made: the device's facts, the key's candidates, the curve's CUBIN (None: not in
    the kernel cache)."""

    def __init__(self, facts, candidates, cubin: bytes | None):
        self.facts, self.candidates, self.cubin = facts, candidates, cubin


def _beside_the_context(zkey, device_start, progress) -> _Ahead | None:
    """While the device's context starts on its thread (the last 45 ms of a byte-compiled cold proof's wait
    on the H200, perf/RESULTS.md session 34): the key's footprint candidates (footprint.key_candidates: the
    SM count is known once cuInit has run; the budget, known with the context, only picks among them: the
    load's plan 15-30 ms of its 43) and the curve's kernels read from the kernel cache (hashing the sources,
    reading the CUBIN; a miss is compiled after the context, as before, so that a device that fails to start
    says so before a compile).  None where the device is not known by then (no device, no driver library)."""
    facts = device_start.known() if device_start is not None else None
    if facts is None:
        return None
    from engine.backends.gpu.footprint import KeyShape, key_candidates
    from engine.backends.gpu.runtime import cached_curve_cubin

    with progress.timed("beside the context: key plan, kernels", 0.3):
        return _Ahead(facts, key_candidates(KeyShape.of(zkey), sm_count=facts.sm_count),
                      cached_curve_cubin(zkey.curve, facts.arch))


# The key's load of a lone proof pins the staging buffers (staging.py: 160 MiB, 82-86 ms to pin on the H200's host)
# only for a key whose upload is at least this large; below it the same pipeline runs on pageable buffers, which
# the driver stages itself (~5 GB/s against ~20: slower copies, no pinning).  Measured in turns (perf/RESULTS.md,
# session 34; upload_bytes 128 / 510 / 2041 MiB): the 2^18 domain's CLI proof 457.3 ms pinned against 415.4
# pageable, 2^20 489.2 against 474.7, 2^22 713.4 against 882.3.  GROTH16_PIN_ONE_LOAD_MIB overrides it (0: always).
PIN_ONE_LOAD_MIB = 768.0
PIN_ONE_LOAD_ENV = "GROTH16_PIN_ONE_LOAD_MIB"


def pins_for_one_load(zkey) -> bool:
    """Whether the CLI's one load of this key pins its staging buffers first (PIN_ONE_LOAD_MIB)."""
    from engine.backends.gpu.key import upload_bytes
    from engine.env_setting import number

    mib = number(PIN_ONE_LOAD_ENV, PIN_ONE_LOAD_MIB, EngineError, "always pins", "MiB", "MiB")
    return upload_bytes(zkey) >= mib * (1 << 20)


def _reader_of(timeline) -> int | None:
    """A timeline that is a FIFO: its reader waited for here, where Ctrl-C still acts (the Engine opens the
    file inside its event loop, where a Ctrl-C only cancels the task and open() goes on waiting for ever);
    the descriptor kept open until the Engine is done, so that its own open() finds the reader there."""
    from engine.paths import is_pipe

    if not timeline or not is_pipe(timeline):
        return None
    try:
        return os.open(timeline, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:  # the Engine's own open() names the problem
        return None


def _piped(path) -> bool:
    """An input that is a pipe (a FIFO, `<(...)`) is read on the main thread, before the Engine starts: there
    a Ctrl-C or SIGTERM interrupts a wait for a writer that never comes (or one that stalls) at once.  The
    Engine reads it on a thread that a signal cannot interrupt and that the exit then waited for: 2 or 3
    signals were needed."""
    from engine.paths import is_pipe

    return path is not None and is_pipe(path)


def _refuse_no_gpu(device_start=None) -> None:
    """`--backend gpu` without a device, said before a piped input is waited for: the device's start is waited
    for only after the reads (the direct path), or the Engine starts after them; a FIFO whose writer never came
    hid the error behind a wait for ever."""
    if device_start is not None:
        if not device_start.wait():
            device_start.take()  # raises: the start's own error, or no device
        return
    from engine.backends.select import cuda_device_count
    from engine.errors import BackendUnavailableError

    if not cuda_device_count():
        raise BackendUnavailableError("--backend gpu: no CUDA device found on this machine")


def _key_read_here(path):
    """The key to give the Engine: its path, or a piped key's bytes read here (_piped), which the --r1cs check
    and the Engine then both read (the Engine opened the pipe a second time and found it empty)."""
    if not _piped(path):
        return path
    from engine.formats.binfile import InMemoryFile, open_binfile
    from engine.formats.zkey import SECTION_NAMES

    bf = open_binfile(path, "zkey", max_version=2, names=SECTION_NAMES)  # as read_zkey reads a pipe (its records)
    return InMemoryFile(bf.path, bf.buf)


class _CheckedWitness:
    """A witness made and checked here (for --r1cs, or read from a pipe), handed to the Engine as values with their
    name."""

    def __init__(self, values, prime: int, path: str):
        self.values, self.prime, self.path = values, prime, path


def _run_engine(args, config, wtns_path, proof_path, public_path) -> int:
    """The same proof through the asyncio Engine (timeline, budgets, synthesis pool)."""
    from engine.api import prove_files
    from engine.commands.witness import circuit_log_shown
    from engine.config_flags import gpu_flags_given
    from engine.errors import TimelineWriteError
    from engine.groth16.kit import InputsFile

    timeline_existed = bool(args.timeline) and os.path.exists(args.timeline)
    if config.backend == "auto" and gpu_flags_given(args):
        from engine.backends.select import cuda_device_count

        _warn_gpu_flags_unused(args, "auto", cuda_device_count())
    progress = make_progress("prove", quiet=args.quiet, json=args.json)
    reader = _reader_of(config.timeline)  # before the Engine's own open(), which Ctrl-C cannot interrupt
    try:
        with progress.timed("engine", 0.0):
            if config.backend == "gpu" and (args.r1cs or any(map(_piped, (args.zkey, wtns_path, args.input)))):
                _refuse_no_gpu()  # before a wait here that the Engine's start would have spared
            key = _key_read_here(args.zkey)
            if args.r1cs or _piped(wtns_path) or _piped(args.input):  # the values made here first (see _piped)
                from engine.formats import read_zkey

                prime, values, name = _prepare_witness(args, read_zkey(key), wtns_path, progress)
                item = _CheckedWitness(values, prime, name)
            else:  # an input.json path is read in the Engine's synthesis worker; its errors name the file
                item = InputsFile(args.input) if wtns_path is None else wtns_path
            wasm = None if isinstance(item, _CheckedWitness) else args.wasm  # (a piped one was read here)
            try:
                with circuit_log_shown(progress, quiet=args.quiet):  # its lines from the synthesis worker
                    proofs, timeline_error = prove_files(key, [item], config=config, timeline=args.timeline,
                                                         wasm=wasm), None
            except TimelineWriteError as exc:  # the disk filled under the timeline: the proof is still written
                if not exc.results:
                    raise
                proofs, timeline_error = exc.results, exc
        proof = proofs[0]
        interrupts.finished()  # from here the proof is made: a Ctrl-C is too late and ignored
        with progress.timed("write", 0.95):
            proof.write(proof_path, public_path)
        if timeline_error is not None:  # the command did not do all it was asked: exit 2, naming what it did
            raise TimelineWriteError(timeline_error.path, f"{timeline_error.problem} (the proof was written to "
                                                          f"{proof_path} and {public_path})")
    except BaseException as exc:  # interrupted, or a reader that left (of --json's lines, of a proof on a pipe)
        if not (isinstance(exc, (KeyboardInterrupt, BrokenPipeError)) or isinstance(exc.__cause__, BrokenPipeError)):
            raise
        if args.timeline and not timeline_existed:  # an interrupted run leaves no file it started
            try:
                os.unlink(args.timeline)
            except OSError:
                pass
        raise
    finally:
        progress.done()
        if reader is not None:
            os.close(reader)
    report_proof(progress, proof, verbose=args.verbose, as_json=args.json, proof=proof_path, public=public_path,
                 curve=proof.curve.name, timeline=args.timeline)
    return 0
