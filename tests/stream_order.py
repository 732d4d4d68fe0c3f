"""Happens-before on a fake driver's streams (tests/fake_cuda.py): which launches the device may run
before which, from the order of the calls and the events between streams.

`StreamOrder(fake)` wraps the fake's kernel lookups, launches, host-to-device copies (named "upload",
their first_arg the destination), event records and stream waits; each launch gets a vector clock (a
stream's launches are ordered, a wait orders its stream after the event's record), so `before(x, y)`
says whether launch x is done before launch y can start.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field


@dataclass
class Launch:
    name: str
    stream: int
    params: int  # the kernelParams array's address (valid during the call only: see first_arg)
    first_arg: int
    clock: dict = field(default_factory=dict)


class StreamOrder:
    def __init__(self, fake):
        self.launches: list[Launch] = []
        self._names: dict[int, str] = {}
        self._stream_clock: dict[int, dict] = {}
        self._event_clock: dict[int, dict] = {}
        get, run, record = fake.cuModuleGetFunction, fake.cuLaunchKernel, fake.cuEventRecord
        wait = fake.cuStreamWaitEvent  # the fake's catch-all: it only notes the call
        copy = fake.cuMemcpyHtoDAsync  # the catch-all too

        def tick(stream: int) -> dict:
            clock = self._stream_clock.setdefault(stream, {})
            clock[stream] = clock.get(stream, 0) + 1
            return dict(clock)

        def get_function(mod, name):
            res, handle = get(mod, name)
            self._names[int(handle)] = name.decode() if isinstance(name, bytes) else str(name)
            return res, handle

        def launch(func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            s = int(stream)
            clock = tick(s)
            arg0 = ctypes.c_void_p.from_address(int(params)).value
            first = ctypes.c_uint64.from_address(arg0).value if arg0 else 0
            self.launches.append(Launch(self._names.get(int(func), "?"), s, int(params), first, clock))
            return run(func, gx, gy, gz, bx, by, bz, shared, stream, params, extra)

        def upload(dst, src, nbytes, stream):
            self.launches.append(Launch("upload", int(stream), 0, int(dst), tick(int(stream))))
            return copy(dst, src, nbytes, stream)

        def event_record(h, stream):
            self._event_clock[int(h)] = dict(self._stream_clock.get(int(stream), {}))
            return record(h, stream)

        def stream_wait(stream, h, flags=0):
            clock = self._stream_clock.setdefault(int(stream), {})
            for s, t in self._event_clock.get(int(h), {}).items():
                clock[s] = max(clock.get(s, 0), t)
            return wait(stream, h, flags)

        fake.cuModuleGetFunction, fake.cuLaunchKernel = get_function, launch
        fake.cuEventRecord, fake.cuStreamWaitEvent = event_record, stream_wait
        fake.cuMemcpyHtoDAsync = upload

    def named(self, name: str, first_arg: int | None = None) -> list[Launch]:
        return [x for x in self.launches if x.name == name and (first_arg is None or x.first_arg == first_arg)]

    @staticmethod
    def before(x: Launch, y: Launch) -> bool:
        """x is done before y starts: y's stream had seen x's launch (its own or through waits)."""
        return y.clock.get(x.stream, 0) >= x.clock[x.stream] and x is not y
