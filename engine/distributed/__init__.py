"""Beyond one host: Engines as Ray actors behind the Engine's own async API (`pip install '.[ray]'`).

    from engine.distributed import RayCluster

    async with RayCluster(address=None, engines=2, config=EngineConfig(backend="cpu")) as cluster:
        key = await cluster.load_key("circuit.zkey")
        proof = await cluster.prove(key, "witness.wtns")

See docs/distributed.md.  Importing this package needs no Ray (and loads
nothing heavy until a name is used); entering a RayCluster does, and without
Ray it raises a one-line BackendUnavailableError saying how to install it.
"""
from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's own flag without importing typing (~4 ms of the CLI client's start)

from engine.errors import EngineLostError

_LAZY = {
    "RayCluster": ("engine.distributed.cluster", "RayCluster"),
    "ClusterKey": ("engine.distributed.cluster", "ClusterKey"),
}

__all__ = ["RayCluster", "ClusterKey", "EngineLostError"]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'engine.distributed' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from typing import Any

    from engine.distributed.cluster import ClusterKey, RayCluster  # noqa: F401
