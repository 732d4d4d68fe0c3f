"""A staged proof's device state: what the memory phase (pipeline.stage) allocated and uploaded, handed to
the compute phase (pipeline.compute, launch.py's launches, batch.py).  Its own module so that the launches
and the phases both read it without importing each other."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cuda_kernels.driver import DeviceBuffer, Event, PinnedBuffer

from engine.backends.gpu import msm as gmsm
from engine.backends.gpu.runtime import destroy_events as _destroy


@dataclass
class ProductsScratch:
    """A small proof's s w, r w (2 n_wires plain scalars) and the sort and bucket scratch of the s w MSM over
    A, the r w MSM over B1 and the H lane (launch.py _launch_products)."""
    scaled: DeviceBuffer
    s: tuple
    r: tuple
    h: tuple


class ProductsRegion:
    """The products' bytes, reserved by the memory phase as one carved buffer and carved into a ProductsScratch
    only when a compute phase runs them (launch._launch_products): making their three scratch copies' ~60
    buffer objects at every stage cost ~0.1 ms of Python a proof on the fake driver here, which a proof beside
    others (no products) need not pay."""

    def __init__(self, buffer: DeviceBuffer, carve):
        self.buffer = buffer
        self._carve = carve
        self._scratch: ProductsScratch | None = None

    def scratch(self) -> ProductsScratch:
        if self._scratch is None:
            self._scratch = self._carve(self.buffer)
        return self._scratch


@dataclass
class ProofState:
    witness: DeviceBuffer
    a: DeviceBuffer
    b: DeviceBuffer
    c: DeviceBuffer
    sort: gmsm.SortScratch
    buckets: gmsm.BucketScratch
    results: DeviceBuffer
    device_buffers: list[DeviceBuffer]  # every buffer the memory phase allocated
    host: PinnedBuffer | None  # witness then results; None: no free pinned buffer (pageable copies)
    results_offset: int
    uploaded: Event
    upload_start: Event | None = None  # timing events around the witness upload
    streaming: Any = None  # host-tier key: the proof's staging buffers and events (host_tier.HostProof)
    range_offset: int | None = None  # where the device's range check answers in `host` (None: checked here)
    b2_scratch: tuple | None = None  # (sort, buckets) of a B2 MSM beside the rest (proof_streams.b2_beside)
    # s w, r w and the (sort, buckets) of their MSMs and of the H lane's (proof_streams.products_beside): ProductsRegion
    products: Any = None
    blinding_r: int = 0  # the tail's r: with b1_times_r, B1's result slot holds r B1 (ResidentCore undoes it)
    b1_times_r: bool = False  # set by launch.py when the products ran beside (B1's slot: r B1)
    before_final: Event | None = None  # recorded just before the device tail's final phase (waiting.py)

    def results_view(self, nbytes: int) -> np.ndarray | None:
        return None if self.host is None else self.host.array[self.results_offset:self.results_offset + nbytes]

    def unreduced_row(self) -> int | None:
        """After the done event: the first witness row the device found not reduced, or None."""
        if self.host is None or self.range_offset is None:
            return None
        found = int(self.host.array[self.range_offset:self.range_offset + 4].view(np.uint32)[0])
        return None if found == 0 else 0xFFFFFFFF - found

    def release_host(self, ctx) -> None:
        """After the done event: the pinned buffer and the events back to their pools (a host-tier proof's own
        events destroyed)."""
        ctx.pinned.give_back(self.host)
        self.host = None
        ctx.events.give(self.uploaded, self.upload_start)
        if self.streaming is not None:
            _destroy(*self.streaming.events)
