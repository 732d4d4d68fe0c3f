"""The host tier: a key whose bases do not fit the VRAM budget keeps them in pinned host memory.

The key's NTT tables and CSR matrices stay on the device as usual; the MSM
bases (A, B1, C, B2 per wire, H per domain row: `footprint.KeyShape.bases_bytes`)
live in one pinned buffer, counted in the host budget by the engine.  Each
proof streams them through two device staging buffers of a chunk each (laid
over the proof's a and b where they fit: those are dead once the front has made
h, so the buffers cost no memory there and their first upload waits for the
front: `footprint.staging_over_front`): the key's copy stream for the proof's
compute stream (one per compute slot, so two proofs computing at once stream
side by side) uploads chunk i+1 while the
proof's compute stream runs the MSMs of chunk i (one sort of the chunk's
scalars, then A, B1, C and B2 over it; or H), and the two streams are ordered
by events only (design.md §5 rule 1: nothing device-global):

    copy:    wait uploaded | [wait freed[j]] upload chunk i into buffer j | record loaded[j]
    compute: wait loaded[j] | sort + MSMs of chunk i | record freed[j]

Every chunk's MSM writes its own XYZZ result; the host adds them (a few
dozen point additions) when the proof's done event has fired.  The sum of
the chunk MSMs is the whole MSM, so the proof is the one the resident path
makes (tests/test_gpu_host_tier.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Event, Module, PinnedBuffer, Stream

from engine.algebra import ec
from engine.errors import DeviceError
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu.footprint import (FR, KeyFootprint, KeyShape, acc_bytes, aligned_bytes, chunk_ranges,
                                           g1_bytes, g2_bytes, host_chunk_bytes, tail_plan)
from engine.backends.gpu.points import decode_xyzz_g1, decode_xyzz_g2
from engine.backends.gpu.runtime import destroy_events, release_all

WITNESS_BASES = ("a", "b1", "c", "b2")  # one staging buffer holds a chunk of each, in this order


@dataclass
class HostProof:
    """One proof's staging buffers and events for streaming the bases (its chunk results are the
    proof's own results buffer, one slot per MSM per chunk: pipeline.result_bytes)."""

    staging: list[DeviceBuffer]  # allocations of their own first, then those over a and b
    loaded: list[Event]
    freed: list[Event]
    front_done: Event  # recorded on the compute stream once h is made: a and b are free from there
    over_front: int = 0  # how many of the staging buffers (the last ones) lie over a and b

    @property
    def events(self) -> list[Event]:
        return [*self.loaded, *self.freed, self.front_done]


class HostTier:
    """A key's bases pinned in host memory, and the plan for streaming them through one device."""

    def __init__(self, ctx, zkey, c_padded: np.ndarray, footprint: KeyFootprint):
        self.ctx = ctx
        self.curve = curve = zkey.curve
        self.footprint = footprint
        self.shape = shape = KeyShape.of(zkey)
        self.point_bytes = {"a": g1_bytes(curve), "b1": g1_bytes(curve), "c": g1_bytes(curve),
                            "b2": g2_bytes(curve), "h": g1_bytes(curve)}
        sources = {"a": zkey.a, "b1": zkey.b1, "c": c_padded, "b2": zkey.b2, "h": zkey.h}
        # pinning is device-global: at key load only, while the engine holds the whole pool
        self.pinned = PinnedBuffer(ctx.device, shape.bases_bytes())
        self.offsets: dict[str, int] = {}
        offset = 0
        for name in (*WITNESS_BASES, "h"):
            raw = np.ascontiguousarray(sources[name]).view(np.uint8).reshape(-1)
            self.pinned.array[offset:offset + raw.nbytes] = raw
            self.offsets[name] = offset
            offset += raw.nbytes
        if offset != self.pinned.nbytes:
            raise ValueError(f"{zkey.path}: the key's point sections hold {offset} bytes, expected {self.pinned.nbytes}")
        self.ctx = ctx
        # a copy stream per compute stream: one shared stream would queue the second proof's uploads
        # behind every upload of the first (each waiting on that proof's MSMs), serialising them
        self.copy_streams: dict[Stream, Stream] = {}  # compute stream (the runtime's, one a slot) -> copy
        self.chunks_h = chunk_ranges(shape.domain, footprint.chunk_h)
        self.chunks_w = chunk_ranges(shape.n_wires, footprint.chunk_w)
        self.chunk_bytes = host_chunk_bytes(shape, footprint.chunk_w, footprint.chunk_h)
        self.slots = len(self.chunks_h) + 4 * len(self.chunks_w)

    @property
    def nbytes(self) -> int:
        """Pinned host bytes held (what the host budget gives up for this key)."""
        return self.pinned.nbytes

    def _host(self, name: str, lo: int, hi: int) -> np.ndarray:
        size = self.point_bytes[name]
        start = self.offsets[name] + lo * size
        return self.pinned.array[start:start + (hi - lo) * size]

    # ---- one proof
    def stage(self, dev: Device, stream: Stream, front: tuple[DeviceBuffer, DeviceBuffer] | None = None) -> HostProof:
        """The proof's two staging buffers and its events.  With `front` (the proof's a and b, carved one
        after the other) those that fit there lie over them; the rest are allocated (stream-ordered, on the
        upload stream): as many as the footprint counted there (KeyFootprint.staging_over_front)."""
        over, step = 0, aligned_bytes(self.chunk_bytes)
        if front is not None and front[1].ptr == front[0].ptr + aligned_bytes(front[0].nbytes):  # as pipeline carves
            over = self.footprint.staging_over_front
        # recorded: a failing stage frees them
        staging = [dev.alloc(self.chunk_bytes, stream) for _ in range(2 - over)]
        staging += [DeviceBuffer(front[0].ptr + k * step, self.chunk_bytes) for k in range(over)]
        events: list[Event] = []
        try:
            for _ in range(5):
                events.append(Event())
        except BaseException:  # the ones made before a failing cuEventCreate are not leaked
            destroy_events(*events)
            raise
        return HostProof(staging=staging, loaded=events[:2], freed=events[2:4], front_done=events[4], over_front=over)

    def enqueue(self, mod: Module, st, layouts: dict, stream: Stream, mark) -> None:
        """All chunks of the H MSM, then of the four witness MSMs; `mark()` after H and after the rest.

        `st` is the proof's proof_state.ProofState (witness, H scalars in `c`, sort and bucket scratch,
        results, `streaming`: its HostProof); `layouts` maps "h"/"w" to (plan, layout) of a whole chunk.  The
        last, shorter chunk keeps the window and the per-thread entry count, so that scratch serves it."""
        hp: HostProof = st.streaming
        copy = self.copy_stream(stream)
        copy.wait_event(st.uploaded)  # the staging buffers were allocated on the upload stream
        hp.front_done.record(stream)  # the front (launch._front) was queued on `stream` just before
        g1_acc, g2_acc = acc_bytes(self.curve, False), acc_bytes(self.curve, True)
        slot = 0
        jobs = []
        for lo, hi in self.chunks_h:
            jobs.append(("h", lo, hi, slot))
            slot += 1
        for lo, hi in self.chunks_w:
            jobs.append(("w", lo, hi, slot))
            slot += 4
        try:
            for i, (kind, lo, hi, slot) in enumerate(jobs):
                j = i % 2
                buf = hp.staging[j]
                if i >= 2:
                    copy.wait_event(hp.freed[j])  # the MSMs of chunk i-2 are done with this buffer
                elif j >= 2 - hp.over_front:
                    copy.wait_event(hp.front_done)  # this buffer lies over a and b: h must be made first
                names = ("h",) if kind == "h" else WITNESS_BASES
                offset, msms = 0, []
                for name in names:
                    Device.upload(buf, self._host(name, lo, hi), copy, offset)
                    group, acc = ("g2", g2_acc) if name == "b2" else ("g1", g1_acc)
                    msms.append((group, buf.ptr + offset, acc, st.results.ptr + (slot + len(msms)) * g2_acc))
                    offset += (hi - lo) * self.point_bytes[name]
                hp.loaded[j].record(copy)
                stream.wait_event(hp.loaded[j])
                plan, layout = _chunk_layout(*layouts[kind], hi - lo)
                scalars = (st.c if kind == "h" else st.witness).ptr + lo * FR
                gmsm.sorted_msms(mod, plan, layout, scalars, msms, st.sort, st.buckets, stream)
                hp.freed[j].record(stream)
                if kind == "h" and (i + 1 == len(jobs) or jobs[i + 1][0] == "w"):
                    mark()
        finally:
            _join(copy, stream)  # the frees that follow on `stream` come after every copy
        mark()
        mark()  # the witness chunks run A, B1, C and B2 together: the B2 stage is empty here

    def copy_stream(self, compute: Stream) -> Stream:
        """The copy stream beside compute stream `compute` (made at its first proof, on the device thread)."""
        copy = self.copy_streams.get(compute)
        if copy is None:
            copy = self.copy_streams[compute] = self.ctx.device.stream()
        return copy

    def results(self, raw: np.ndarray) -> tuple:
        """(A, B1, B2, C, H) summed over the chunks, affine, from the downloaded result slots."""
        curve, size = self.curve, acc_bytes(self.curve, True)
        g1_size = acc_bytes(curve, False)

        def g1(slot):
            return decode_xyzz_g1(curve, raw[slot * size: slot * size + g1_size])

        nh = len(self.chunks_h)
        h = ec.g1_sum(curve, [g1(s) for s in range(nh)])
        starts = range(nh, self.slots, 4)
        a = ec.g1_sum(curve, [g1(s) for s in starts])
        b1 = ec.g1_sum(curve, [g1(s + 1) for s in starts])
        c = ec.g1_sum(curve, [g1(s + 2) for s in starts])
        b2 = ec.g2_sum(curve, [decode_xyzz_g2(curve, raw[(s + 3) * size:(s + 4) * size]) for s in starts])
        return a, b1, b2, c, h

    def close(self) -> None:
        """At key unload (the device thread, the engine holding the whole pool): the copy streams
        drained, the pinned bases unpinned."""
        copies = list(self.copy_streams.values())
        self.copy_streams.clear()
        release_all(*[c.synchronize for c in copies], *[c.destroy for c in copies], self.pinned.free)


def _join(copy: Stream, stream: Stream) -> None:
    """Make `stream` wait for everything queued on `copy` (on a failure midway too: the proof's
    buffers are then freed on `stream` and no copy may still be writing into them)."""
    event = None
    try:
        event = Event()
        event.record(copy)
        stream.wait_event(event)
    except DeviceError:
        copy.synchronize()  # this stream only (rule 1 allows it), then the frees are safe
    finally:
        if event is not None:
            try:
                event.destroy()
            except DeviceError:
                pass


def _chunk_layout(plan: gmsm.MsmPlan, layout: gmsm.AccumulateLayout, n: int):
    """The plan and layout of a chunk of n <= plan.n points, within the whole chunk's scratch."""
    if n == plan.n:
        return plan, layout
    tail = tail_plan(plan, n)
    chunks = max(1, -(-tail.xyzz_entries // layout.chunk))
    return tail, gmsm.AccumulateLayout(layout.chunk, chunks, layout.seg_len, layout.segs)
