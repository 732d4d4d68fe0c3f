"""Analyse a timeline file (JSON lines from `--timeline` or Engine(config.timeline)); draw a Gantt chart.

    python perf/timeline.py run.jsonl                 # summary: throughput, latency, GPU busy, waits
    python perf/timeline.py run.jsonl --gantt g.png   # and a Gantt chart (needs matplotlib)
    python perf/timeline.py run.jsonl --json          # the summary as JSON

The figures come from scheduler.timeline.summarize: GPU busy is the union of
GPU_START..GPU_END intervals per device over the wall time of the run.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import msgspec  # noqa: E402

from scheduler.timeline import Event, Stage, Summary, load_events, partition_spans, summarize  # noqa: E402


def format_summary(s: Summary) -> str:
    lines = [
        f"proofs done      {s.proofs_done}  (failed {s.failed}, cancelled {s.cancelled})",
        f"wall time        {s.wall_s:.3f} s",
        f"throughput       {s.proofs_per_min:.1f} proofs/min",
        f"latency p50/p95  {s.latency_p50_s:.3f} / {s.latency_p95_s:.3f} s",
        f"GPU busy         {100 * s.gpu_busy:.1f} %  "
        + " ".join(f"dev{d}={100 * v:.1f}%" for d, v in sorted(s.gpu_busy_by_device.items())),
        f"queue wait p50/p95  {s.queue_wait_p50_s:.3f} / {s.queue_wait_p95_s:.3f} s",
        "stage            p50 s     p95 s",
    ]
    for name in s.stage_p50_s:
        lines.append(f"  {name:<14} {s.stage_p50_s[name]:8.4f}  {s.stage_p95_s[name]:8.4f}")
    return "\n".join(lines)


def _lanes(intervals: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Pack (start, end, job) intervals into the fewest rows without overlap."""
    rows: list[list[tuple[int, int, int]]] = []
    ends: list[int] = []
    for iv in sorted(intervals):
        for i, end in enumerate(ends):
            if iv[0] >= end:
                rows[i].append(iv)
                ends[i] = iv[1]
                break
        else:
            rows.append([iv])
            ends.append(iv[1])
    return rows


def gantt_rows(events: Sequence[Event]) -> list[tuple[str, list[tuple[int, int, int]]]]:
    """(row label, [(start ns, end ns, job)]) for synthesis workers, memory phases, compute slots, epilogues."""
    spans = partition_spans(events)
    groups: dict[str, list[tuple[int, int, int]]] = {}
    for (job, _p), parts in spans.items():
        for name, (a, b, start) in parts.items():
            if name == "synth":
                groups.setdefault(f"synth w{start.slot}", []).append((a, b, job))
            elif name == "mem":
                groups.setdefault(f"dev{start.device} memory", []).append((a, b, job))
            elif name == "gpu":
                groups.setdefault(f"dev{start.device} compute s{start.slot}", []).append((a, b, job))
            elif name in ("epilogue", "verify"):
                groups.setdefault("cpu epilogue+verify", []).append((a, b, job))
    rows = []
    for label in sorted(groups, key=lambda l: (not l.startswith("synth"), l.startswith("cpu"), l)):
        lanes = _lanes(groups[label])
        for i, lane in enumerate(lanes):
            rows.append((label if len(lanes) == 1 else f"{label} #{i}", lane))
    return rows


def plot_gantt(events: Sequence[Event], path: str, title: str = "timeline") -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    rows = gantt_rows(events)
    t0 = min((e.t_ns for e in events if e.stage == Stage.SUBMIT), default=min(e.t_ns for e in events))
    cmap = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(12, 0.35 * len(rows) + 1.5))
    for y, (_label, lane) in enumerate(rows):
        ax.broken_barh([((a - t0) / 1e9, (b - a) / 1e9) for a, b, _ in lane], (y - 0.4, 0.8),
                       facecolors=[cmap(job % 20) for _, _, job in lane], edgecolor="black", linewidth=0.2)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first submission (colour = job)")
    ax.set_title(title)
    fig.tight_layout()
    try:
        _save_whole(fig, path)
    finally:
        plt.close(fig)


def _save_whole(fig, path: str) -> None:
    """The figure under `path` whole or not at all: drawn to a temporary file beside it and renamed over it (a
    full disk, a kill half-way left half a PNG under the name).  A path that is there and is no plain file (a
    FIFO, /dev/stdout) is written in place, as the engine writes its outputs (engine/file_writes.py).  Errors
    stay OSErrors, for main()'s one line."""
    import tempfile  # noqa: PLC0415

    fmt = os.path.splitext(path)[1][1:].lower() or "png"
    if os.path.exists(path) and not os.path.isfile(path):
        fig.savefig(path, dpi=110, format=fmt)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, dpi=110, format=fmt)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def main(argv: list[str] | None = None) -> int:
    if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # (loaded as a module, tests/test_timeline.py)
        sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    from script_args import Parser  # noqa: PLC0415 - beside this file

    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("file", help="timeline (JSON lines)")
    parser.add_argument("--gantt", metavar="PNG", help="write a Gantt chart")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(format="warning: %(message)s")  # load_events' word on a cut last line
    try:
        events = load_events(args.file)
    except (OSError, msgspec.DecodeError) as exc:
        print(f"error: {args.file}: {exc}", file=sys.stderr)
        return 2
    if args.gantt and not events:  # (a run killed before its first whole line): min() of nothing was a traceback
        print(f"error: {args.file}: no events to draw", file=sys.stderr)
        return 2
    if args.gantt:  # before the summary: it was a ModuleNotFoundError traceback after it
        try:
            from matplotlib.backend_bases import FigureCanvasBase  # noqa: PLC0415
        except ImportError:
            print("error: --gantt needs matplotlib (pip install matplotlib)", file=sys.stderr)
            return 2
        kinds = FigureCanvasBase.get_supported_filetypes()
        ext = os.path.splitext(args.gantt)[1][1:].lower()
        if ext and ext not in kinds:  # (a ValueError traceback after the summary)
            print(f"error: {args.gantt}: matplotlib writes no .{ext} files (name one of: {', '.join(sorted(kinds))})",
                  file=sys.stderr)
            return 2
    summary = summarize(events)
    print(msgspec.json.encode(summary).decode() if args.json else format_summary(summary))
    if args.gantt:
        try:
            plot_gantt(events, args.gantt, title=os.path.basename(args.file))
        except OSError as exc:  # (a folder that does not exist, a full disk): a traceback after the summary
            sys.stdout.flush()
            print(f"error: {args.gantt}: cannot write: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"wrote {args.gantt}")
    return 0


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    from script_args import run_main

    sys.exit(run_main(main))
