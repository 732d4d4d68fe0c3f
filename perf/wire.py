"""Where HTTP's time goes for one upload against perf/instant_serve.py, part by part, for each client spin.

    python perf/wire.py [--log-constraints 14] [--repeats 200] [--delay-ms 0,15] [--spins 0,3]

For each instant server (its proofs take no time, or sleep --delay-ms) and each client spin
(engine/client_wait.py; 0: the client blocks in recv as before), the medians over `repeats`
sequential proofs of a random .wtns of the bench circuit's size, split on one clock
(CLOCK_MONOTONIC; the server's stamps come back in the job's timings as Unix times, turned back
here): the client's send (sendmsg of head and body), send end -> the prove handler's entry on the
server (the server waking, reading and parsing the head), the handler's entry -> the job queued
(the body read into its buffer, parsed, admitted: `upload_s`), queued -> the job's end (the
engine), the job's end -> the answer's first byte at the client (the handler waking, the JSON
answer, the write, the client waking), the client's read of the answer and its JSON parse; and
wire+service (HTTP latency minus the server's own time for the job), with the CPU the client
spent per request.  A bench for choosing the client's and the service's set-up.
"""
from __future__ import annotations

import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serve import EXAMPLE, instant_wtns, start_server, stop  # noqa: E402  (perf/serve.py)

from engine.client import Client, _answer, _prove_request  # noqa: E402
from engine.client_wire import read_sync, send_all  # noqa: E402
from script_args import Parser, amount_list, positive, run_main  # noqa: E402

PARTS = ("send", "-> handler", "upload read", "engine", "-> answer at client", "read + parse", "wire+service",
         "client CPU")


def one(c: Client, key: str, body: bytes) -> list[float]:
    """One proof through the client's own steps, stamped; the parts in seconds (PARTS' order)."""
    req = _prove_request("prove", key, body, "normal", None, None)
    head, route = c._head(req), f"POST {req.path.partition('?')[0]}"
    cpu, t0 = time.process_time(), time.monotonic()
    send_all(c._sock, head, req.body)
    t1 = time.monotonic()
    c.answers.wait(c._sock, route, c.timeout)
    c._sock.recv(1, socket.MSG_PEEK)  # the answer's first byte (at once after a spin; spin 0 blocks here)
    t2 = time.monotonic()
    status, ctype, raw, _ = read_sync(c._stream)
    view = _answer(c.url, status, ctype, raw)
    t3 = time.monotonic()
    cpu = time.process_time() - cpu
    offset = time.time() - time.monotonic()  # the view's Unix times -> this machine's monotonic clock
    tm = view["timings"]
    queued, finished = tm["submitted_at"] - offset, tm["finished_at"] - offset
    entry = queued - tm["upload_s"]
    return [t1 - t0, entry - t1, tm["upload_s"], finished - queued, t2 - finished, t3 - t2,
            (t3 - t0) - tm["total_s"], cpu]


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-constraints", type=positive, default=14)
    ap.add_argument("--repeats", type=positive, default=200)
    ap.add_argument("--delay-ms", type=amount_list, default="0,15")
    ap.add_argument("--spins", type=amount_list, default="0,3",
                    help="comma-separated client spins (ms); each is measured twice, ABAB")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="perf-wire-"))
    body = Path(instant_wtns(work, args.log_constraints)).read_bytes()
    spins = [float(x) for x in args.spins.split(",") if x != ""]
    print(f"{len(body) / 1024:.0f} KiB uploads; medians (ms) of each part:")
    print("| instant proof ms | client spin ms | " + " | ".join(PARTS) + " |\n|" + "---|" * (len(PARTS) + 2))
    for delay in (float(x) for x in args.delay_ms.split(",")):
        proc, url = start_server(["perf/instant_serve.py", "--delay-ms", str(delay)], work / "instant.log")
        try:
            for spin in spins * 2:
                with Client(url, spin_ms=spin) as c:
                    key = c.load_key(str(EXAMPLE) + ".zkey")["id"]
                    for _ in range(5):
                        one(c, key, body)
                    n = args.repeats if not delay else max(20, args.repeats // 5)
                    rows = [one(c, key, body) for _ in range(n)]
                print(f"| {delay:g} | {spin:g} | " + " | ".join(
                    f"{statistics.median(r[j] for r in rows) * 1e3:.3f}" for j in range(len(PARTS))) + " |", flush=True)
        finally:
            stop(proc)


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
