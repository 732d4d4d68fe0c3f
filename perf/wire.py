"""The client's socket options against the wire's cost: HTTP latency of one upload against perf/instant_serve.py.

    python perf/wire.py [--log-constraints 14] [--repeats 200] [--delay-ms 0,15]

For each instant server (its proofs take no time, or sleep --delay-ms) and each client variant
(engine.client.Client as shipped; with an 8 MiB send buffer; in blocking mode without a timeout,
so that no poll() precedes each send and receive), the median and p95 of `repeats` sequential
proofs of a random .wtns of the bench circuit's size, and wire+service (HTTP latency minus the
server's own time for the job).  A scratch bench for choosing the client's socket set-up.
"""
from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serve import EXAMPLE, instant_wtns, pct, start_server, stop  # noqa: E402  (perf/serve.py)

from engine.client import Client  # noqa: E402


def variant(name: str) -> type[Client]:
    class Tuned(Client):
        def _open(self) -> None:
            super()._open()
            if name == "sndbuf 8 MiB":
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
            elif name == "blocking, no timeout":
                self._sock.settimeout(None)
    return Client if name == "as shipped" else Tuned


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-constraints", type=int, default=14)
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--delay-ms", default="0,15")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="perf-wire-"))
    body = Path(instant_wtns(work, args.log_constraints)).read_bytes()
    print("| instant proof ms | client | HTTP p50 ms | HTTP p95 ms | wire+service p50 ms |\n|---|---|---|---|---|")
    for delay in (float(x) for x in args.delay_ms.split(",")):
        proc, url = start_server(["perf/instant_serve.py", "--delay-ms", str(delay)], work / "instant.log")
        try:
            for name in ("as shipped", "sndbuf 8 MiB", "blocking, no timeout"):
                with variant(name)(url) as c:
                    key = c.load_key(str(EXAMPLE) + ".zkey")["id"]
                    for _ in range(5):
                        c.prove(key, body)
                    lat, wire = [], []
                    for _ in range(args.repeats if not delay else max(20, args.repeats // 5)):
                        t = time.perf_counter()
                        r = c.prove(key, body)
                        lat.append(time.perf_counter() - t)
                        wire.append(lat[-1] - r.timings["total_s"])
                print(f"| {delay:g} | {name} | {statistics.median(lat) * 1e3:.3f} | {pct(lat, 0.95) * 1e3:.3f} | "
                      f"{statistics.median(wire) * 1e3:.3f} |", flush=True)
        finally:
            stop(proc)


if __name__ == "__main__":
    main()
