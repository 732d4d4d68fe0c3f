"""`python -m engine serve` with an engine whose proofs take no time: the service and the wire, timed alone.

    python perf/instant_serve.py [--port 0] [--token-file FILE] [--running-jobs N]

The real process (engine/service/server.py: aiohttp on uvloop, the Service,
its queue, limits, auth and signals) around `InstantEngine`, a test double
that loads any .zkey as a key of the example sudoku circuit's shape and
answers every proof at once with that circuit's proof
(examples/bn128/proof.json, public.json).  The witness upload is received,
checked and handed to the engine exactly as by the real server; the double
only skips the proving.  perf/serve.py and tests/test_client_startup.py
time the CLI client and HTTP against it.  It prints the same
"listening on http://..." line as `serve`.
"""
from __future__ import annotations

import asyncio
import copy
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.api import run  # noqa: E402
from engine.config import EngineConfig  # noqa: E402
from engine.formats.json import read_proof, read_public  # noqa: E402
from engine.service.server import serve  # noqa: E402
from engine.service.settings import ServiceConfig, read_tokens  # noqa: E402
from script_args import Parser, input_file, run_main  # noqa: E402

EXAMPLE = ROOT / "examples" / "bn128"


class InstantEngine:
    """The Engine's face as the Service uses it; every proof is the example's, returned at once."""

    delay_s = 0.0  # --delay-ms: each proof waits this long, asleep (the process idles as during a real proof)

    def __init__(self, config: EngineConfig, on_event=None):
        self.config = config
        self.devices: list = []
        self.proofs = 0
        self._proof = read_proof(EXAMPLE / "proof.json")
        self._proof.public = read_public(EXAMPLE / "public.json", self._proof.curve)

    async def __aenter__(self) -> "InstantEngine":
        return self

    async def __aexit__(self, *exc) -> None:
        return None

    async def load_key(self, path, wasm=None):
        return SimpleNamespace(curve="bn128", n_vars=0, n_public=len(self._proof.public), domain_size=0,
                               working_set_bytes=0, witness_bytes=0, devices=[], _resident_bytes={})

    async def unload_key(self, handle) -> None:
        return None

    async def prove(self, handle, witness):
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        t = time.perf_counter()
        proof = copy.copy(self._proof)
        self.proofs += 1
        proof.timings = {"instant": time.perf_counter() - t}
        return proof

    def stats(self) -> dict:
        return {"vram_capacity": 0, "vram_available": 0, "host_capacity": 0, "host_available": 0,
                "proofs": self.proofs}

    def at_rest(self) -> bool:
        return True


def main() -> int:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token-file", type=input_file, default=None)
    ap.add_argument("--running-jobs", type=int, default=8)
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="each proof takes this long, asleep: what idling between requests costs the wire")
    args = ap.parse_args()
    InstantEngine.delay_s = args.delay_ms / 1e3
    config = ServiceConfig(port=args.port, token_file=args.token_file, running_jobs=args.running_jobs)
    tokens = read_tokens(config.token_file)
    return run(lambda: serve(EngineConfig(backend="cpu"), config, tokens, make_engine=InstantEngine))


if __name__ == "__main__":
    sys.exit(run_main(main))
