"""Prometheus metrics for `/metrics`, in the service's own registry.

Counters and histograms are fed as things happen: job outcomes per key by
the service, per-stage latencies and device busy time by the engine's
timeline (a sink that pairs each *_START with its *_END).  Gauges that the
engine already knows (queue depth, budgets, resident bytes) are read at
scrape time by a collector, so they are never stale.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import GaugeMetricFamily

from scheduler.timeline import Event, Stage

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                   120.0, 300.0)

# timeline stage pairs -> the stage label of engine_stage_seconds
_PAIRS = {
    Stage.SYNTH_START: (Stage.SYNTH_END, "synthesis"),
    Stage.CHECK_START: (Stage.CHECK_END, "check"),
    Stage.HOST_WAIT: (Stage.HOST_GRANTED, "host_budget_wait"),
    Stage.BUDGET_WAIT: (Stage.BUDGET_GRANTED, "vram_budget_wait"),
    Stage.MEM_START: (Stage.MEM_END, "device_memory"),
    Stage.GPU_START: (Stage.GPU_END, "device_compute"),
    Stage.EPILOGUE_START: (Stage.EPILOGUE_END, "epilogue"),
    Stage.VERIFY_START: (Stage.VERIFY_END, "verify"),
}
_ENDS = {end: (start, label) for start, (end, label) in _PAIRS.items()}


class Metrics:
    CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

    def __init__(self) -> None:
        disable_created_metrics()  # *_created series double the page and say nothing a scraper needs
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.proofs = Counter("engine_proofs", "Proof jobs that ended, by key and outcome",
                              ["key", "outcome"], registry=r)
        self.job_seconds = Histogram("engine_job_seconds", "Time of a job in the service, by phase",
                                     ["phase"], buckets=LATENCY_BUCKETS, registry=r)
        self.stage_seconds = Histogram("engine_stage_seconds", "Time of a proof's stage inside the engine",
                                       ["stage"], buckets=LATENCY_BUCKETS, registry=r)
        self.device_busy = Counter("engine_device_busy_seconds", "Seconds a device was computing (any slot)",
                                   ["device"], registry=r)
        self._lock = threading.Lock()
        self._open: dict[tuple, int] = {}  # (start stage, job, partition, device) -> t_ns
        self._busy: dict[int, tuple[int, int]] = {}  # device -> (slots computing, since t_ns)

    # ---- the timeline sink (may be called from device threads)
    def on_event(self, event: Event) -> None:
        stage = event.stage
        if stage in _PAIRS:
            with self._lock:
                self._open[(stage, event.job, event.partition)] = event.t_ns
                if stage == Stage.GPU_START:
                    n, since = self._busy.get(event.device, (0, event.t_ns))
                    self._busy[event.device] = (n + 1, event.t_ns if n == 0 else since)
        elif stage in _ENDS:
            start, label = _ENDS[stage]
            with self._lock:
                t0 = self._open.pop((start, event.job, event.partition), None)
                if stage == Stage.GPU_END and event.device in self._busy:
                    n, since = self._busy[event.device]
                    if n <= 1:
                        del self._busy[event.device]
                        self.device_busy.labels(str(event.device)).inc(max(0, event.t_ns - since) / 1e9)
                    else:
                        self._busy[event.device] = (n - 1, since)
            if t0 is not None:
                self.stage_seconds.labels(label).observe(max(0, event.t_ns - t0) / 1e9)
        elif stage in (Stage.CANCELLED, Stage.FAILED):
            with self._lock:  # a partition that ended early leaves no open stage behind
                for k in [k for k in self._open if k[1] == event.job and k[2] == event.partition]:
                    del self._open[k]

    # ---- job outcomes
    def job_ended(self, key_id: str, outcome: str, queued_s: float | None, run_s: float | None,
                  total_s: float) -> None:
        self.proofs.labels(key_id, outcome).inc()
        if queued_s is not None:
            self.job_seconds.labels("queue").observe(queued_s)
        if run_s is not None:
            self.job_seconds.labels("engine").observe(run_s)
        self.job_seconds.labels("total").observe(total_s)

    def watch(self, read: Callable[[], dict]) -> None:
        """Gauges read at scrape time from `read()` (see Service.gauges)."""
        self.registry.register(_Gauges(read))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Gauges:
    def __init__(self, read: Callable[[], dict]):
        self.read = read

    def describe(self):  # no samples at registration time (the service may not be ready)
        return []

    def collect(self):
        g = self.read()
        depth = GaugeMetricFamily("engine_queue_depth", "Jobs queued in the service, by priority",
                                  labels=["priority"])
        for priority, n in g["queue_depth"].items():
            depth.add_metric([priority], n)
        yield depth
        yield GaugeMetricFamily("engine_jobs_running", "Jobs handed to the engine", value=g["running"])
        vram = GaugeMetricFamily("engine_vram_bytes", "Device memory budget for proofs, by device and state",
                                 labels=["device", "state"])
        for dev, (cap, avail) in enumerate(zip(g["vram_capacity"], g["vram_available"])):
            vram.add_metric([str(dev), "capacity"], cap)
            vram.add_metric([str(dev), "in_use"], cap - avail)
        yield vram
        host = GaugeMetricFamily("engine_host_budget_bytes", "Host memory budget for witnesses, by state",
                                 labels=["state"])
        host.add_metric(["capacity"], g["host_capacity"])
        host.add_metric(["in_use"], g["host_capacity"] - g["host_available"])
        yield host
        keys = GaugeMetricFamily("engine_key_resident_bytes", "Device memory a resident key holds",
                                 labels=["key"])
        for key_id, nbytes in g["keys"].items():
            keys.add_metric([key_id], nbytes)
        yield keys
        yield GaugeMetricFamily("engine_uptime_seconds", "Seconds since the service started",
                                value=time.monotonic() - g["started"])

