"""Beyond one host: Engines as Ray actors behind the Engine's own async API (`pip install '.[ray]'`).

    from engine.distributed import RayCluster

    async with RayCluster(address=None, engines=2, config=EngineConfig(backend="cpu")) as cluster:
        key = await cluster.load_key("circuit.zkey")
        proof = await cluster.prove(key, "witness.wtns")

See docs/distributed.md.  Importing this package needs no Ray; entering a
RayCluster does (a one-line BackendUnavailableError says how to install it).
"""
from __future__ import annotations

from engine.distributed.cluster import ClusterKey, RayCluster, import_ray
from engine.errors import EngineLostError

__all__ = ["RayCluster", "ClusterKey", "EngineLostError", "import_ray"]
