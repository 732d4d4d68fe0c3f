"""`python -m engine serve [--config engine.toml] [--host 127.0.0.1] [--port 8080] [--token-file FILE]`.

A long-running prover: keys stay resident, proofs come over HTTP (the API is
in docs/service.md; the client is `python -m engine prove --server URL ...`
or `engine.client`).  The engine's flags (--backend, --devices, ...) and the
`[engine]` table configure the engine; the `[service]` table and the flags
below configure the service.
"""
from __future__ import annotations

import argparse
import copy
import re

from engine.config_flags import quoted_value, whole_number

# Beyond this a count is refused as typed, cut (ServiceConfig's own ranges below it name the flag and the value: a
# 4000-digit --port was repeated in full); 2^63, as a size's bound (engine/config.py's parse_size).
FAR = 1 << 63
# a number of seconds as env_setting reads one: ASCII digits (float() took '٣' as 3 and '1_0' as 10), inf and nan
# passed on to be refused by name
_SECONDS = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                      re.ASCII | re.IGNORECASE)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve proofs over HTTP with keys kept resident (see docs/service.md)",
        description="Run the prover as an HTTP service: resident keys, priorities, deadlines, Prometheus "
        "metrics, bearer-token auth.  SIGTERM (SIGHUP, SIGQUIT) drains the admitted jobs, then exits; a second "
        "Ctrl-C exits at once.",
    )
    s = p.add_argument_group("service")
    s.add_argument("--host", default=None, help="address to bind (default 127.0.0.1; beyond loopback needs a token)")
    s.add_argument("--port", type=service_count, default=None, help="TCP port (default 8080; 0 picks a free one)")
    s.add_argument("--token-file", metavar="FILE", default=None,
                   help="bearer tokens, one a line: every request but /healthz must carry one")
    s.add_argument("--max-body", metavar="SIZE", default=None, help="largest request body (default 1GiB)")
    s.add_argument("--memory-upload-max", metavar="SIZE", default=None,
                   help="witness uploads up to SIZE are parsed in memory, larger ones spooled to a file "
                        "(default 64MiB; 0: always spooled)")
    s.add_argument("--max-queued-per-key", type=service_count, metavar="N", default=None,
                   help="queued jobs per key before 429 (default 64)")
    s.add_argument("--running-jobs", type=service_count, metavar="N", default=None,
                   help="jobs handed to the engine at once (default: on GPUs with resident keys, each compute slot and "
                        "synthesis worker gets a job and one waiting; where the CPU ends proofs, each of them and each "
                        "epilogue thread one job; 0: that default)")
    s.add_argument("--default-deadline", metavar="S", default=None,
                   help="deadline in seconds for requests that give none (default none; 0: none)")
    s.add_argument("--drain-timeout", metavar="S", default=None,
                   help="on SIGTERM, cancel what is left after S seconds (default, or 0: wait for all)")
    s.add_argument("--upload-timeout", metavar="S", default=None,
                   help="drop a request whose body sends no byte for S seconds, or trickles in slower than 1 KiB/s "
                        "after them, freeing its queue place (default 30; 0: never)")
    s.add_argument("--idle-timeout", metavar="S", default=None,
                   help="close a connection that sends no request (or not all of its head) for S seconds; behind a "
                        "proxy, keep it above the proxy's own idle timeout (default 75; 0: never)")
    from engine.config_flags import PROVING_BACKENDS, add_arguments

    add_arguments(p, backends=PROVING_BACKENDS)  # "simulated" answers no request: its proofs are no proofs
    p.set_defaults(func=run, preload=preload)


def preload(args: argparse.Namespace) -> list[str]:
    """The modules `_serve` imports, loaded while a signal still ends the start at once with its line (cli.main):
    after that, one inside an import (aiohttp's, numpy's: 200 ms of the start) waited for the import's end.  The
    server's module only where aiohttp and prometheus_client are found: `_serve` says how to install them."""
    import importlib.util

    modules = ["logging", "engine.api", "engine.config", "engine.service.settings", "engine.commands.outputs"]
    if all(importlib.util.find_spec(name) is not None for name in ("aiohttp", "prometheus_client")):
        modules.append("engine.service.server")
    return modules


def run(args: argparse.Namespace) -> int:
    """Until the event loop takes them, SIGTERM, SIGHUP and SIGQUIT stop serve as they stop `prove` (a --config
    or --token-file on a FIFO nobody writes waited forever, or died of the signal with no line); once serve
    leaves with an error or an interrupt, further signals are ignored (not a second death in the teardown)."""
    from engine import interrupts

    interrupts.stop_until_serving()
    try:
        return _serve(args)
    except BaseException:
        interrupts.ignore_from_here()
        raise
    finally:
        # engine and listener closed, stopped or not: leave without the interpreter's teardown (engine/__main__),
        # where a second Ctrl-C was a traceback in an atexit hook or the default action's death (-2) with no line,
        # and a KeyboardInterrupt that had passed through exec'd code made the exit a death by SIGINT (-2)
        args.left_clean = True


def _serve(args: argparse.Namespace) -> int:
    import logging

    from engine.api import run as run_loop
    from engine.config import ConfigError, from_args
    from engine.errors import EngineError

    try:
        from engine.service.server import serve
    except ModuleNotFoundError as exc:
        if exc.name not in ("aiohttp", "prometheus_client"):
            raise
        raise EngineError(f"serve needs {exc.name}: pip install 'groth16-engine[serve]' "
                          "(aiohttp and prometheus-client)") from None
    from engine.commands.outputs import refuse_dash
    from engine.service.settings import check_exposure, load_files, read_tokens, with_flags

    logging.basicConfig(level=logging.WARNING, format="engine serve: %(levelname)s %(name)s: %(message)s")
    refuse_dash([("configuration", args.config)])
    engine_config, service_config = load_files(args.config)
    flags = copy.copy(args)
    flags.config = None  # the file was read above, [service] table and all
    engine_config = from_args(flags, base=engine_config)
    if engine_config.backend == "simulated":  # a --config file's: every request was a 500 (no proof to send)
        raise ConfigError(f"{args.config}: backend 'simulated' makes no real proofs; use auto, cpu or gpu to serve")
    _check_gpu_flags(args, engine_config.backend)
    service_config = with_flags(
        service_config, host=args.host, port=args.port, token_file=args.token_file, max_body=args.max_body,
        memory_upload_max=args.memory_upload_max,
        max_queued_per_key=args.max_queued_per_key, running_jobs=args.running_jobs,
        default_deadline_s=seconds("--default-deadline", args.default_deadline),
        drain_timeout_s=seconds("--drain-timeout", args.drain_timeout),
        upload_timeout_s=seconds("--upload-timeout", args.upload_timeout),
        idle_timeout_s=seconds("--idle-timeout", args.idle_timeout),
    )
    refuse_dash([("token file", service_config.token_file)], [("timeline", engine_config.timeline)])
    tokens = read_tokens(service_config.token_file, None if args.token_file is not None or not args.config
                         else f"{args.config}: [service] token_file")
    check_exposure(service_config, tokens, "--host" if args.host is not None or not args.config
                   else f"{args.config}: [service] host")
    raise_descriptor_limit()
    return run_loop(lambda: serve(engine_config, service_config, tokens, interrupt_start=True))


_ZERO = {"--default-deadline": "no deadline", "--drain-timeout": "a drain that waits for every job",
         "--upload-timeout": "no upload timeout", "--idle-timeout": "no idle timeout"}  # what each one's 0 says


def service_count(text: str) -> int:
    """--port, --max-queued-per-key, --running-jobs: a whole number in ASCII digits (int() took '٨٠' as 80 and
    '1_0' as 10), refused here, cut, from 2^63 on either way (no port or count comes near; a value of thousands of
    digits was repeated in full); ServiceConfig (engine/service/settings.py) checks each one's own range."""
    value = whole_number(text)
    if value >= FAR:
        raise argparse.ArgumentTypeError(f"{quoted_value(text)} is more than any port or count (2^63 or more)")
    if value <= -FAR:
        raise argparse.ArgumentTypeError(f"{quoted_value(text)} is negative")
    return value


def seconds(flag: str, text: str | None) -> float | None:
    """A flag's seconds: a finite number in ASCII digits, not negative, named as it was typed where it is not
    (`--upload-timeout 1e400` was taken as an endless timeout, `--default-deadline inf` as a deadline that never
    came, `-1` was refused as "-1.0", and '٣' or '1_0' were taken as 3 and 10)."""
    import math

    from engine.config import ConfigError

    if text is None:
        return None
    shown = text if text and text.strip() == text and len(text) <= 40 else quoted_value(text)
    if not _SECONDS.fullmatch(text.strip()):
        raise ConfigError(f"{flag}: {shown} is not a number of seconds")
    value = float(text)
    if math.isnan(value):
        raise ConfigError(f"{flag}: {shown} is not a number")
    if not math.isfinite(value):
        raise ConfigError(f"{flag}: {shown} is not a finite number of seconds (for {_ZERO[flag]}, give 0)")
    if value < 0:
        raise ConfigError(f"{flag}: {shown} is negative")
    return value


def raise_descriptor_limit() -> None:
    """Every connection is a file descriptor: under the usual soft limit (1024) that many idle connections
    made the server refuse everyone else.  The hard limit is the operator's; the soft one only a default."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):  # macOS refuses an infinite one: keep the soft limit
            pass


def _check_gpu_flags(args: argparse.Namespace, backend: str) -> None:
    """The GPU's own flags on a server that proves on the CPU: refused with --backend cpu, a warning in the log
    where auto finds no CUDA device (they were dropped without a word)."""
    import logging

    from engine.config_flags import gpu_flags_given, gpu_flags_problem
    from engine.errors import EngineError

    if not gpu_flags_given(args) or backend not in ("cpu", "auto"):
        return
    gpus = None
    if backend == "auto":
        from engine.backends.select import cuda_device_count

        gpus = cuda_device_count()
    problem = gpu_flags_problem(args, backend, gpus)
    if problem is not None and problem[0] == "error":
        raise EngineError(problem[1].replace("this proof", "this server"))
    if problem is not None:
        logging.getLogger("engine").warning("%s", problem[1])
