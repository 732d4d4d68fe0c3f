"""CPU time of each thread of this process and of given worker processes, over a measured run.

Why: at the 2^14 domain the Engine's throughput on the H200 (376 proofs/s) was below both what the
device allows (~600 proofs/s by one thread, batches back to back) and what its host path allows with
an instant device (~950 on the development machine): whether the event loop, the device thread, the
waiter threads or the synthesis workers are busy, and how busy the process is as a whole (its Python
threads share one GIL), is what perf/sweep.py records with this and perf/timeline_gaps.py prints.

    snap = CpuSnapshot.take(pids)       ... the run ...     share = snap.delta(CpuSnapshot.take(pids))

Threads are read with pthread_getcpuclockid (ns), processes from /proc/<pid>/stat (clock ticks).
Threads are grouped by name with their trailing index dropped ("device0-waiter-1" -> "device0-waiter",
"AnyIO worker thread" as it is); a thread started during the run counts from zero.
"""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field

_INDEX = re.compile(r"[-_ ]?\d+$")


def group_name(name: str) -> str:
    """A thread's group: its name without a trailing index ("device0-1" -> "device0")."""
    return _INDEX.sub("", name) or name


def _thread_cpu() -> dict[int, tuple[str, float]]:
    out: dict[int, tuple[str, float]] = {}
    for t in threading.enumerate():
        if t.ident is None:
            continue
        try:
            out[t.ident] = (t.name, time.clock_gettime(time.pthread_getcpuclockid(t.ident)))
        except (OSError, AttributeError, OverflowError):  # ended meanwhile, or no per-thread clock here
            pass
    return out


def process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` (None when it is gone or /proc is not there)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class CpuSnapshot:
    wall: float
    threads: dict[int, tuple[str, float]]
    processes: dict[int, float] = field(default_factory=dict)
    process_total: float = 0.0  # this whole process (every thread, the ended ones too)

    @classmethod
    def take(cls, pids: list[int] = ()) -> "CpuSnapshot":
        procs = {pid: c for pid in pids if (c := process_cpu(pid)) is not None}
        return cls(time.perf_counter(), _thread_cpu(), procs, time.process_time())

    def delta(self, later: "CpuSnapshot") -> dict:
        """CPU seconds per thread group and per worker process between the two snapshots, the wall
        time, and each as a share of the wall (1.0 = one core all the time)."""
        wall = max(later.wall - self.wall, 1e-9)
        groups: dict[str, float] = {}
        counts: dict[str, int] = {}
        for ident, (name, cpu) in later.threads.items():
            before = self.threads.get(ident)
            used = cpu - (before[1] if before is not None and before[0] == name else 0.0)
            g = group_name(name)
            groups[g] = groups.get(g, 0.0) + used
            counts[g] = counts.get(g, 0) + 1
        procs = {pid: later.processes[pid] - self.processes.get(pid, later.processes[pid])
                 for pid in later.processes}
        return {"wall_s": wall, "process_cpu_s": later.process_total - self.process_total,
                "threads": {g: {"cpu_s": v, "share": v / wall, "threads": counts[g]} for g, v in groups.items()},
                "workers_cpu_s": sum(procs.values()), "workers_share": sum(procs.values()) / wall,
                "process_share": (later.process_total - self.process_total) / wall}


def format_share(share: dict) -> str:
    """One table: each thread group's CPU share of the run's wall time, then the process and the workers."""
    lines = ["| thread group | threads | CPU s | share of wall |", "|---|---|---|---|"]
    for g, v in sorted(share["threads"].items(), key=lambda kv: -kv[1]["cpu_s"]):
        lines.append(f"| {g} | {v['threads']} | {v['cpu_s']:.3f} | {v['share']:.2f} |")
    lines.append(f"| (this process, all threads) | | {share['process_cpu_s']:.3f} | {share['process_share']:.2f} |")
    lines.append(f"| (synthesis workers) | | {share['workers_cpu_s']:.3f} | {share['workers_share']:.2f} |")
    return "\n".join(lines)
