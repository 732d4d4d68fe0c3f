"""200 requests from 8 concurrent clients against a real server, with random cancels and disconnects.

Every completed proof must verify, every request gets its answer (none lost),
the server ends with every budget back and no job, queue entry or upload left,
and stopping it leaves no process.
"""
from __future__ import annotations

import random
import threading
import time

import pytest

from engine.client import ServerError
from test_service import SUDOKU, SUDOKU_BLS, TINY, TOKEN, ServerProcess, raw_request, wait_at_rest

REQUESTS, CLIENTS = 200, 8


@pytest.mark.slow
def test_200_requests_8_clients_random_cancels_and_disconnects(tmp_path):
    from engine import read_proof, read_public, read_vkey, verify
    import json

    srv = ServerProcess(tmp_path, "--max-queued-per-key", "64")
    circuits = [TINY, TINY, TINY, SUDOKU, SUDOKU_BLS]
    outcomes: list[tuple[str, object, object]] = []  # (kind, circuit, ProofResult | None)
    errors: list[str] = []
    lock = threading.Lock()
    try:
        with srv.client() as c:
            keys = {base: c.load_key(f"{base}.zkey")["id"] for base in set(circuits)}
        plan = random.Random(16)
        work = [(plan.choice(circuits), plan.choices(["wait", "poll", "cancel", "disconnect"], [6, 2, 1, 1])[0],
                 plan.random()) for _ in range(REQUESTS)]
        bodies = {base: (base.parent / f"{base.name}.wtns").read_bytes() for base in set(circuits)}

        def client_loop(index: int) -> None:
            with srv.client() as c:
                for base, kind, r in work[index::CLIENTS]:
                    key = keys[base]
                    try:
                        if kind == "wait":
                            outcomes.append((kind, base, c.prove(key, bodies[base], priority=("high", "normal",
                                                                                               "low")[int(r * 3)])))
                        elif kind == "poll":
                            job = c.submit(key, bodies[base])
                            outcomes.append((kind, base, c.wait(job["id"])))
                        elif kind == "cancel":
                            job = c.submit(key, bodies[base])
                            time.sleep(r * 0.05)
                            view = c.cancel(job["id"])
                            assert view["state"] in ("cancelled", "done"), view
                            outcomes.append((kind, base, None))
                        else:
                            head = (f"POST /v1/keys/{key}/prove HTTP/1.1\r\nHost: x\r\n"
                                    f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(bodies[base])}")
                            cut = bodies[base] if r < 0.5 else bodies[base][: len(bodies[base]) // 2]
                            raw_request(srv.port, head, cut, close_after=r * 0.1)
                            outcomes.append((kind, base, None))
                    except (ServerError, AssertionError) as exc:
                        with lock:
                            errors.append(f"{kind} {base.name}: {exc}")

        t0 = time.monotonic()
        threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        elapsed = time.monotonic() - t0
        assert not any(t.is_alive() for t in threads), "a client is still waiting (a lost request)"
        assert not errors, errors[:5]
        assert len(outcomes) == REQUESTS  # every request answered or deliberately abandoned
        vks = {base: read_vkey(base.parent / "verification_key.json") for base in set(circuits)}
        proofs = [(base, res) for _, base, res in outcomes if res is not None]
        for i, (base, res) in enumerate(proofs):
            d = tmp_path / f"p{i}"
            d.mkdir()
            res.write(d / "proof.json", d / "public.json")
            vk = vks[base]
            assert verify(vk, read_public(d / "public.json", vk.curve), read_proof(d / "proof.json", vk.curve))
        with srv.client() as c:
            stats = wait_at_rest(c)
            assert stats["queue_depth"] == {"high": 0, "normal": 0, "low": 0} and stats["running"] == 0
            engine = stats["engine"]
            assert engine["vram_available"] == engine["vram_capacity"]
            assert engine["host_available"] == engine["host_capacity"] and engine["jobs_in_flight"] == 0
            metrics = c.metrics()
        done = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                   if line.startswith("engine_proofs_total") and 'outcome="done"' in line)
        assert done >= len(proofs)
        print(json.dumps({"requests": REQUESTS, "proofs": len(proofs), "seconds": round(elapsed, 1)}))
        srv.stop()
    finally:
        srv.kill()
