"""The CLI's `prove --server URL`: the local command's files, a prover service's engine (engine.client's
Client); apart from the client so that its module holds the HTTP client alone."""
from __future__ import annotations

import json
import os
import sys
import time

from engine.client import Client, ServerError
from engine.client_flags import LOCAL_ONLY
from engine.errors import EngineError, InputFileError


def prove_command(args, wtns_path: str | None, proof_path: str, public_path: str) -> int:
    """`python -m engine prove --server URL ...`: the local command's files, the server's engine."""
    given = [name for name in LOCAL_ONLY if getattr(args, name, None) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise EngineError(f"{flag} configures a local proof; with --server the server's configuration applies")
    from engine.paths import is_pipe  # noqa: PLC0415

    t0 = time.perf_counter()
    for path, what in ((args.zkey, "key"), (args.wasm, "wasm")):  # the server opens these by their paths
        if path is not None and is_pipe(path):
            raise InputFileError(path, f"is a pipe; with --server the server reads the {what} by its path: "
                                       "give the file")
    if wtns_path is None:
        from engine.formats.json_text import NotJsonInput, read_json_bytes  # noqa: PLC0415 - stdlib only

        try:  # bounded where it is a pipe or a device (/dev/zero ate the memory)
            witness, name = json.loads(read_json_bytes(args.input)), args.input
        except OSError as exc:
            raise InputFileError(args.input, f"cannot read: {exc.strerror or exc}") from None
        except NotJsonInput as exc:
            raise InputFileError(args.input, str(exc)) from None
        except RecursionError:  # was a traceback
            raise InputFileError(args.input, "is not valid JSON: nested too deeply") from None
        except ValueError as exc:
            raise InputFileError(args.input, f"is not valid JSON: {exc}") from None
        if not isinstance(witness, dict):
            raise InputFileError(args.input, "expected a JSON object of input signals")
    else:
        witness, name = wtns_path, wtns_path
    with Client(args.server, token_file=args.token_file) as client:
        requested = time.monotonic()
        key = client.load_key(os.path.abspath(args.zkey), os.path.abspath(args.wasm) if args.wasm else None)
        try:
            result = client.prove(key["id"], witness, priority=args.priority or "normal", deadline=args.deadline,
                                  name=name)
        except ServerError as exc:
            show_log(exc, args, t0)  # the circuit's log() lines before the job's error, as the local path
            raise
        answered = time.monotonic()
    show_log(result, args, t0)
    if result.verified is False and not getattr(args, "quiet", False) and not getattr(args, "json", False):
        print("warning: the prover server did not verify this proof (it runs with --no-verify)", file=sys.stderr)
    result.write(proof_path, public_path)
    elapsed = time.perf_counter() - t0
    if getattr(args, "json", False):
        # CLOCK_MONOTONIC is one clock for every process of the machine: perf/serve.py splits the
        # command's wall time at these two stamps (start -> first request, requests, answer -> exit)
        print(json.dumps({"event": "result", "proof": proof_path, "public": public_path, "server": args.server,
                          "key": result.key, "job": result.job, "curve": result.proof.get("curve"),
                          "verified": result.verified,
                          "seconds": round(elapsed, 6), "timings": result.timings,
                          "monotonic": {"first_request": requested, "answered": answered}}))
    elif getattr(args, "verbose", False):
        t = result.timings
        print(f"server {args.server}, key {result.key}, job {result.job}: queued {t.get('queue_s') or 0:.4f} s, "
              f"proved {t.get('prove_s') or 0:.4f} s; whole command {elapsed:.4f} s", file=sys.stderr)
    return 0


def show_log(carrier, args, t0: float) -> None:
    """A job's circuit log() lines (`carrier`: a ProofResult, or a failed job's ServerError) as the local path
    shows them: each a line on stderr, {"event": "log", "text": ...} with --json, none with --quiet."""
    if getattr(args, "quiet", False):
        return
    lines = list(getattr(carrier, "log", ()))
    if getattr(carrier, "log_left_out", 0):
        lines.append(f"{carrier.log_left_out} more log lines left out (the prover server keeps the first "
                     f"{len(lines)} of a job)")
    if not lines:
        return
    import sys  # noqa: PLC0415
    import time  # noqa: PLC0415

    if getattr(args, "json", False):
        import json  # noqa: PLC0415

        t = round(time.perf_counter() - t0, 6)
        lines = [json.dumps({"event": "log", "text": line, "t": t}) for line in lines]
    try:
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a reader of stderr that left, none (2>&-): the proof stands
        pass
