"""RayCluster.prove_stream's flow: items fed as slots free up, results as they finish (or in input order).

Kept apart from cluster.py because it is a flow over any one-item job, not the cluster's state: the cluster
checks the call, picks the limit and hands over its job.  An item's slot comes back when the reader takes
its result (as on an Engine): items in flight and results waiting for the reader, or held back for an
earlier one, are `limit` at most together.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable

from engine.jobs import StreamResult, _aiter


async def results(job: Callable[[Any], Awaitable[list[Any]]], items: Iterable[Any] | AsyncIterable[Any],
                  limit: int, ordered: bool) -> AsyncIterator[StreamResult]:
    """One StreamResult per item of `items`, `job(item)` (a list of one proof) run for each.  A failure is a
    StreamResult with `error`; the stream goes on.  Leaving early (aclose) cancels the rest; the caller's
    iterable failing ends the stream with its error, after the results of the items it gave."""
    done: asyncio.Queue = asyncio.Queue()
    slots = asyncio.Semaphore(limit)
    tasks: set[asyncio.Task] = set()
    feeding = {"error": None, "count": 0, "done": False}

    async def one(index: int, item: Any) -> None:
        try:
            proof = await job(item)
            done.put_nowait(StreamResult(index, item, proof[0], None))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            done.put_nowait(StreamResult(index, item, None, exc))

    async def feeder() -> None:
        try:
            async for item in _aiter(items):
                await slots.acquire()
                task = asyncio.create_task(one(feeding["count"], item))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                feeding["count"] += 1
        except Exception as exc:  # the caller's iterable failed: end the stream with its error
            feeding["error"] = exc
        finally:
            feeding["done"] = True
            done.put_nowait(None)  # wakes the consumer to re-check the count

    feed = asyncio.create_task(feeder())
    yielded, next_index, buffered = 0, 0, {}
    try:
        while not (feeding["done"] and yielded == feeding["count"]):
            result = await done.get()
            if result is None:
                continue
            if not ordered:
                yielded += 1
                yield result
                slots.release()  # the reader came back for the next one: feed another item
                continue
            buffered[result.index] = result
            while next_index in buffered:
                yielded += 1
                yield buffered.pop(next_index)
                slots.release()
                next_index += 1
        if feeding["error"] is not None:
            raise feeding["error"]
    finally:
        feed.cancel()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(feed, *tasks, return_exceptions=True)
