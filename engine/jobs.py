"""What an Engine's callers hold and what its jobs are made of: the key handle, a stream's result, a job's
handle, and the small helpers the Engine and the RayCluster share (a call's witnesses, a lone error out of its
ExceptionGroup).  engine/api.py re-exports the public ones."""
from __future__ import annotations

import asyncio
import dataclasses
import operator
import os
from dataclasses import dataclass, field
from typing import Any, AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence

import anyio

from scheduler.pipeline import KeyRecord

from engine.config import EngineConfig
from engine.errors import EngineClosedError


@dataclass(eq=False)
class KeyInfo:
    """What a loaded key tells its caller, the same from an engine (KeyHandle) and a cluster
    (engine.distributed.ClusterKey, which gets it from an engine's handle: key_info)."""

    label: str
    path: str | None
    curve: str | None
    n_vars: int
    n_public: int
    domain_size: int
    working_set_bytes: int  # device memory one proof reserves
    witness_bytes: int  # host memory one synthesised witness reserves


def key_info(handle: KeyInfo) -> dict:
    """`handle`'s KeyInfo fields, by name (what an engine's actor sends its cluster)."""
    return {f.name: getattr(handle, f.name) for f in dataclasses.fields(KeyInfo)}


@dataclass(eq=False)
class KeyHandle(KeyInfo):
    """A proving key loaded into an engine (resident on its devices)."""

    devices: tuple[int, ...]
    # the key's footprint (backends that plan it: the GPU's; device 0's when several)
    tier: str | None = None  # "resident" | "host" (bases streamed from pinned host memory)
    fold: int | None = None  # precomputed shifted copies per witness base (MSM windows folded)
    msm_cost: float | None = None  # estimated seconds of one proof's MSMs under that plan (footprint.py's model)
    proofs_in_flight: int | None = None  # working sets the budget keeps room for beside the key
    proofs_computing: int | None = None  # its proofs computing at once on a device (split lock mode)
    key_device_bytes: int = 0  # device memory the key holds (per device)
    key_host_bytes: int = 0  # pinned host memory the key holds (all devices)
    footprint: Any = field(repr=False, default=None)  # the backend's KeyFootprint (describe(), as_dict())
    _record: KeyRecord = field(repr=False, default=None)
    _engine: Any = field(repr=False, default=None)  # the Engine that loaded it
    _jobs: int = field(repr=False, default=0)
    _no_jobs: Any = field(repr=False, default=None)  # an anyio.Event an unload waits on, set when _jobs is 0

    def _job_ended(self) -> None:
        self._jobs -= 1
        if not self._jobs and self._no_jobs is not None:
            self._no_jobs.set()
            self._no_jobs = None

    async def _wait_no_jobs(self) -> None:
        """Until none of this key's jobs is in flight (draining the engine waited for every key's: an unload
        never ended while other keys were busy)."""
        while self._jobs:
            self._no_jobs = self._no_jobs or anyio.Event()
            await self._no_jobs.wait()
    _resident_bytes: dict = field(repr=False, default_factory=dict)
    _host_bytes: dict = field(repr=False, default_factory=dict)


@dataclass
class StreamResult:
    """One item of `Engine.prove_stream`: its position, and the proof or the error."""

    index: int
    item: Any
    proof: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class _JobHandle:
    def __init__(self, job_id: int):
        self.id = job_id
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.cancelled = False
        self.callbacks: list[Callable[["_JobHandle"], None]] = []

    async def result(self) -> Any:
        try:
            await self.done.wait()
        except BaseException:
            self.scope.cancel()  # the caller gave up: the job gives back what it holds
            raise
        if self.error is not None:
            raise self.error
        if self.cancelled:
            raise EngineClosedError(f"job {self.id} was cancelled because the engine shut down")
        return self.value


def _single(group: BaseExceptionGroup) -> BaseException:
    """The one exception of a group (nested groups flattened); the group itself when there are several."""
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup) -> None:
        for e in g.exceptions:
            walk(e) if isinstance(e, BaseExceptionGroup) else leaves.append(e)

    walk(group)
    return leaves[0] if len(leaves) == 1 else group


def checked_config(config: Any, who: str) -> EngineConfig:
    """`config` if it is an EngineConfig (a new default one for None); anything else was an AttributeError about
    'timeline' once the engine started."""
    if config is None:
        return EngineConfig()
    if not isinstance(config, EngineConfig):
        hint = ("engine.load_config(path) reads a TOML file" if isinstance(config, (str, os.PathLike)) else
                "EngineConfig(**settings) takes a dict's settings" if isinstance(config, dict) else "")
        raise TypeError(f"{who}(config): an EngineConfig, not a {type(config).__name__}"
                        + (f" ({hint})" if hint else ""))
    return config


def witness_items(items: Any, what: str) -> Any:
    """`items` (a job's partitions, a stream's or a batch's witnesses) as given, unless it is one witness, which
    iterating takes apart: a path string was proved as one file a character ("a: no such file"), an inputs dict
    as its keys, an (m, 4) array as its rows."""
    one = isinstance(items, (str, bytes, os.PathLike, Mapping)) or getattr(items, "ndim", 3) <= 2
    if one or not (hasattr(items, "__iter__") or hasattr(items, "__aiter__")):
        raise TypeError(f"{what}: a list (or another iterable) of witnesses, one a proof; got a "
                        f"{type(items).__name__}" + (" (for one proof, give [it])" if one else ""))
    return items


def job_items(witness: Any, partitions: Sequence[Any] | None) -> list[Any]:
    """The witnesses of a `prove(key, witness)` or `prove(key, partitions=[...])` call (Engine, RayCluster)."""
    if (witness is None) == (partitions is None):
        raise TypeError("prove(key, witness) or prove(key, partitions=[...]), not both or neither")
    items = [witness] if partitions is None else list(witness_items(partitions, "partitions"))
    if not items:
        raise ValueError("partitions: an empty list")
    return items


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


async def _aiter(items: Iterable[Any] | AsyncIterable[Any]) -> AsyncIterator[Any]:
    if hasattr(items, "__aiter__"):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


def check_loop(loop: Any, who: str = "this engine") -> None:
    """Refuse a call from another event loop than `loop` (None: not bound yet): the engine's task group,
    budgets and events live on one loop, and jobs submitted from two loops at once hung both."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if loop is not None and running is not loop:
        raise RuntimeError(f"{who} belongs to the event loop that entered it; from another thread or loop, "
                           "submit with asyncio.run_coroutine_threadsafe(eng.prove(...), that_loop)")


def stream_limit(max_in_flight: Any, default: int) -> int:
    """prove_stream's `max_in_flight` (None or 0: the config's); anything but a positive count was anyio's
    error about "max_buffer_size", or (True) a limit of one."""
    if max_in_flight is None:
        return default
    try:
        limit = operator.index(max_in_flight)  # ints, numpy's too; not floats, strings or bools
        if isinstance(max_in_flight, bool):
            raise TypeError
    except TypeError:
        raise TypeError(f"prove_stream: max_in_flight is a count of items, not {type(max_in_flight).__name__} "
                        f"{max_in_flight!r:.40}") from None
    if limit < 0:
        raise ValueError(f"prove_stream: max_in_flight {limit} is negative (None: the config's)")
    return limit or default


def _default_host_budget() -> int:
    """Half the machine's RAM: synthesised witnesses waiting for a device never take more."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30
