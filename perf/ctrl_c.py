"""Ctrl-C: time from SIGINT to the exit of `python -m engine prove`, direct and Engine (--timeline) paths,
SIGINT to the pid and to the process group (issue 14 item 4).

    python perf/ctrl_c.py ZKEY WTNS [--delays 0.3,0.8,1.2,1.6,2.0] [--repeats 2]

Each run is signalled after `delay` s; it must exit 130 with the one line `interrupted`, leaving no
file, unless its proof was already written (then Ctrl-C is too late and ignored: exit 0, counted as
"ended before its signal").  Prints the median and the largest exit time per path and target.
"""
from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from script_args import Parser, amount_list, input_file, positive, run_main  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def one(zkey: str, wtns: str, delay: float, timeline: bool, group: bool) -> tuple[float, int, str, list]:
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "engine", "prove", zkey, wtns, f"{d}/proof.json", f"{d}/public.json",
               "--backend", "cpu"] + (["--timeline", f"{d}/t.jsonl"] if timeline else [])
        p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
        time.sleep(delay)
        if p.poll() is not None:
            raise SystemExit(f"the proof ended before {delay} s: use a larger circuit")
        t0, sent = time.perf_counter(), time.time()
        os.killpg(p.pid, signal.SIGINT) if group else p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
        proof = Path(d, "proof.json")
        if p.returncode == 0 and proof.exists() and proof.stat().st_mtime < sent + 0.05:
            return time.perf_counter() - t0, None, err.strip(), os.listdir(d)  # written before its signal
        return time.perf_counter() - t0, p.returncode, err.strip(), os.listdir(d)


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("zkey", type=input_file)
    ap.add_argument("wtns", type=input_file)
    ap.add_argument("--delays", type=amount_list, default="0.3,0.8,1.2,1.6,2.0")
    ap.add_argument("--repeats", type=positive, default=2)
    a = ap.parse_args()
    delays = [float(x) for x in a.delays.split(",")]
    for timeline in (False, True):
        for group in (False, True):
            times, bad, late = [], [], 0
            for _ in range(a.repeats):
                for delay in delays:
                    t, rc, err, left = one(a.zkey, a.wtns, delay, timeline, group)
                    if rc is None:
                        late += 1
                        continue
                    times.append(t)
                    if rc != 130 or err != "interrupted" or left:
                        bad.append((delay, rc, err[-200:], left))
            if not times:
                raise SystemExit("every proof was written before its signal: use a larger circuit")
            print(f"{'engine' if timeline else 'direct'} path, SIGINT to the {'group' if group else 'pid'}: "
                  f"{len(times)} runs, median {statistics.median(times):.3f} s, max {max(times):.3f} s, "
                  f"{len(bad)} not clean {bad}, {late} ended before their signal")


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
