"""Where a sweep's time goes between batches: the device's gaps, the host's hops, the threads' CPU.

    python perf/timeline_gaps.py OUT_DIR [--batches 12]      (OUT_DIR: perf/sweep.py --out, a GPU run)

Issue 13 item 5: 376.5 proofs/s at the 2^14 domain in the sweep against ~600 for batches back to back
by one thread and ~950 for the host path with an instant device.  For each run in OUT_DIR (its
timeline-*.jsonl and the extras-*.json beside it) this prints
  * the throughput over the whole run (perf/sweep.py's figure) and in the steady part (from the first
    batch's end to the last one's: the ramp and the drain left out), the ramp and the drain;
  * per batch: its size, slot, when its leader got the slot (GPU_START), the compute_batch call on the
    device thread (queued, enqueue ms), its device span (CUDA events: the done event seen by the host
    minus its device time), the decode of its k results, and when its last proof was handed back;
  * the device's idle time between batches (the sum of the gaps over the steady part);
  * medians of the per-proof host steps, the device thread's queue and the hop back to the event loop;
  * the CPU share of each thread group and of the synthesis workers (perf/cpu_share.py).
Stdlib + msgspec only; runs where the timelines were made or wherever they are copied.
"""
from __future__ import annotations

import json
import logging
import re
import statistics
import sys
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scheduler.timeline import Stage, load_events, summarize  # noqa: E402
from cpu_share import format_share  # noqa: E402
from script_args import Parser, positive, run_main  # noqa: E402

MS = 1e6  # ns per ms


class TimelineUnusable(Exception):
    """A timeline that reads but holds nothing this analysis can use."""


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def batches_of(events, spans: list[dict]) -> list[dict]:
    """The run's compute calls, one row each: members, slot, the leader's GPU_START, the device
    thread's call, the device span (from `spans`: engine/backends/gpu/batch.RECENT) and hand-backs."""
    calls: dict[tuple[int, str], dict] = {}
    start = {(e.job, e.partition): e for e in events if e.stage == Stage.GPU_START}
    end = {(e.job, e.partition): e.t_ns for e in events if e.stage == Stage.GPU_END}
    for e in events:
        if e.stage == Stage.CALL_START and e.detail.startswith("compute"):
            row = calls.setdefault((e.t_ns, e.detail), {"members": [], "call_start": e.t_ns})
            row["members"].append((e.job, e.partition))
        elif e.stage == Stage.CALL_END and e.detail.startswith("compute"):
            pass
    ends = {}
    for e in events:
        if e.stage == Stage.CALL_END and e.detail.startswith("compute"):
            ends.setdefault((e.job, e.partition), e.t_ns)
    rows = []
    for (_, detail), row in sorted(calls.items()):
        m = row["members"]
        k = int(re.search(r"of (\d+)", detail).group(1)) if "of" in detail else 1
        first = start.get(m[0])
        row.update(k=k, slot=first.slot if first else -1, lead=first.t_ns if first else row["call_start"],
                   call_end=ends.get(m[0], row["call_start"]),
                   handed=max((end[x] for x in m if x in end), default=None),
                   first_end=min((end[x] for x in m if x in end), default=None))
        rows.append(row)
    # device spans: each batch's done event after its call ended, matched in order per size
    free = sorted(spans, key=lambda s: s["done_ns"])
    for row in rows:
        match = next((s for s in free if s["k"] == row["k"] and s["done_ns"] >= row["call_end"]), None)
        if match is not None:
            free.remove(match)
            row["done"] = match["done_ns"]
            row["device_s"] = match["device_s"]
            row["decode_s"] = match["decode_s"]
            row["dev_start"] = match["done_ns"] - int(match["device_s"] * 1e9)
        else:  # a lone proof (pipeline.compute): its GPU_END is when its waiter saw the done event
            row["done"] = row["first_end"]
            row["device_s"] = row["decode_s"] = None
            row["dev_start"] = None
    return rows


def per_proof(events) -> dict[str, list[float]]:
    """ms per proof of the host steps and hops (stage pairs), over every proof of the run."""
    at: dict[tuple[int, int], dict[str, int]] = {}
    for e in events:
        d = at.setdefault((e.job, e.partition), {})
        key = e.stage if e.stage not in (Stage.CALL_START, Stage.CALL_END) else f"{e.stage}:{e.detail.split()[0]}"
        d.setdefault(key, e.t_ns)
    pairs = {
        "submit -> synth start": (Stage.SUBMIT, Stage.SYNTH_START),
        "synth (pool)": (Stage.SYNTH_START, Stage.SYNTH_END),
        "synth end -> check": (Stage.SYNTH_END, Stage.CHECK_START),
        "check": (Stage.CHECK_START, Stage.CHECK_END),
        "budget + mem lock wait": (Stage.BUDGET_WAIT, Stage.MEM_START),
        "stage: queued on device thread": (Stage.MEM_START, "CALL_START:stage"),
        "stage: on device thread": ("CALL_START:stage", "CALL_END:stage"),
        "stage: back on the loop": ("CALL_END:stage", Stage.MEM_END),
        "staged -> slot (gpu wait)": (Stage.GPU_WAIT, Stage.GPU_START),
        "gpu start -> gpu end": (Stage.GPU_START, Stage.GPU_END),
        "gpu end -> epilogue start": (Stage.GPU_END, Stage.EPILOGUE_START),
        "epilogue + verify": (Stage.EPILOGUE_START, Stage.DONE),
        "latency (submit -> done)": (Stage.SUBMIT, Stage.DONE),
    }
    out: dict[str, list[float]] = {name: [] for name in pairs}
    for d in at.values():
        for name, (a, b) in pairs.items():
            if a in d and b in d:
                out[name].append((d[b] - d[a]) / MS)
    return out


def analyse(timeline: Path, shown: int) -> str:
    events = sorted(load_events(timeline), key=lambda e: e.t_ns)
    if not any(e.stage == Stage.SUBMIT for e in events):  # (an empty file, a run killed before its first proof)
        raise TimelineUnusable("no proof submitted in it: nothing to analyse")
    tag = timeline.stem.replace("timeline-", "")
    extras_path = timeline.with_name(f"extras-{tag}.json")
    extras = json.loads(extras_path.read_text()) if extras_path.exists() else {}
    s = summarize(events)
    rows = batches_of(events, extras.get("batches", []))
    submit0 = min(e.t_ns for e in events if e.stage == Stage.SUBMIT)
    dones = sorted(e.t_ns for e in events if e.stage == Stage.DONE)
    out = [f"### {tag}", ""]
    sizes = [r["k"] for r in rows]
    out.append(f"{s.proofs_done} proofs in {s.wall_s * 1000:.1f} ms: **{s.proofs_per_min / 60:.1f} proofs/s** "
               f"(the sweep's figure); {len(rows)} compute calls, sizes {sizes}")
    done_at = [r["done"] for r in rows if r.get("done") is not None]
    if len(done_at) >= 2:
        t_a, t_b = min(done_at), max(done_at)
        n_steady = sum(r["k"] for r in rows if r.get("done") is not None and t_a < r["done"] <= t_b)
        steady = n_steady / ((t_b - t_a) / 1e9)
        out.append(f"steady part (first batch's end to the last's, {(t_b - t_a) / MS:.1f} ms, {n_steady} proofs): "
                   f"**{steady:.1f} proofs/s**; ramp (first submit to first batch's end) {(t_a - submit0) / MS:.1f} ms, "
                   f"drain (last batch's end to last done) {(dones[-1] - t_b) / MS:.1f} ms")
        # the device's idle time between batches in the steady part
        spans = sorted((r["dev_start"], r["done"]) for r in rows if r.get("dev_start") is not None)
        busy_end, idle, gaps = None, 0, []
        for a, b in spans:
            if busy_end is not None and a > busy_end:
                gaps.append((a - busy_end) / MS)
                idle += a - busy_end
            busy_end = b if busy_end is None else max(busy_end, b)
        dev = sum(r["device_s"] for r in rows if r.get("device_s")) * 1000
        if spans:
            whole = (spans[-1][1] - spans[0][0]) / MS
            out.append(f"device: {dev:.1f} ms of batch time in a {whole:.1f} ms span from the first batch's "
                       f"start to the last one's end; idle between batches {idle / MS:.1f} ms "
                       f"(gaps: median {_med(gaps):.2f} ms, max {max(gaps, default=0):.2f} ms)")
    out += ["", "| batch | k | slot | lead (ms) | call queued ms | enqueue ms | dev start | device ms | done | "
                "decode ms | last handed | gap before ms |", "|" + "---|" * 12]
    prev_end = None
    for i, r in enumerate(rows[:shown]):
        rel = (lambda t: f"{(t - submit0) / MS:.1f}" if t is not None else "-")
        gap = (r["dev_start"] - prev_end) / MS if r.get("dev_start") is not None and prev_end is not None else None
        if r.get("done") is not None:
            prev_end = r["done"] if prev_end is None else max(prev_end, r["done"])
        out.append(f"| {i} | {r['k']} | {r['slot']} | {rel(r['lead'])} | {(r['call_start'] - r['lead']) / MS:.2f} | "
                   f"{(r['call_end'] - r['call_start']) / MS:.2f} | {rel(r.get('dev_start'))} | "
                   f"{r['device_s'] * 1000:.2f} | " if r.get("device_s") is not None else
                   f"| {i} | {r['k']} | {r['slot']} | {rel(r['lead'])} | {(r['call_start'] - r['lead']) / MS:.2f} | "
                   f"{(r['call_end'] - r['call_start']) / MS:.2f} | - | - | ")
        out[-1] += (f"{rel(r.get('done'))} | {r['decode_s'] * 1000 if r.get('decode_s') is not None else float('nan'):.2f} | "
                    f"{rel(r.get('handed'))} | {gap if gap is not None else float('nan'):.2f} |")
    if len(rows) > shown:
        out.append(f"| ... {len(rows) - shown} more | | | | | | | | | | | |")
    out += ["", "| per proof (ms) | median | p90 | n |", "|---|---|---|---|"]
    for name, xs in per_proof(events).items():
        if xs:
            xs.sort()
            out.append(f"| {name} | {_med(xs):.3f} | {xs[int(0.9 * (len(xs) - 1))]:.3f} | {len(xs)} |")
    if "cpu" in extras:
        out += ["", format_share(extras["cpu"])]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="a perf/sweep.py --out directory")
    p.add_argument("--batches", type=positive, default=12, help="batch rows shown per run (default 12)")
    args = p.parse_args(argv)
    logging.basicConfig(format="warning: %(message)s")  # load_events' word on a cut last line or an empty file
    files = sorted(Path(args.out).glob("timeline-*.jsonl"))
    if not files:
        print(f"{args.out}: no timeline-*.jsonl", file=sys.stderr)
        return 2
    for f in files:
        try:
            print(analyse(f, args.batches))
        except (OSError, msgspec.DecodeError, TimelineUnusable) as exc:  # (msgspec's ValidationError is one)
            print(f"error: {f}: {exc}", file=sys.stderr)  # a bad line, or a run with no proof: was a traceback
            return 2
    return 0


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    sys.exit(run_main(main))
