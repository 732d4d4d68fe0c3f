"""The Ray connection a RayCluster uses, and who ends it.

A cluster joins Ray once, when it starts.  Several clusters of one process may
use one connection: the connection a cluster made ends when the last cluster
using it leaves, not when the first one does (which shut Ray down under the
others).  A connection the user made (`ray.init` before the cluster) is used
and never ended here.
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

from engine.errors import BackendUnavailableError

# the package root: local Ray workers import the same code as this driver
_GROUP_CLEANUP = "RAY_process_group_cleanup_enabled"
_CODE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def import_ray():
    try:
        import ray  # noqa: PLC0415
    except ImportError:
        raise BackendUnavailableError(
            "Ray is not installed: pip install 'groth16-engine[ray]' (or pip install ray)"
        ) from None
    return ray


@dataclass
class _Made:
    """The connection clusters made: the address they were given, its GCS, and how many clusters use it."""

    address: str | None = None
    gcs: str | None = None
    users: int = 0


_made = _Made()
_lock = threading.Lock()  # clusters on other threads' event loops join and leave too


def join(address: str | None, ray_init: dict) -> bool:
    """Connects for a cluster; True when the cluster must `leave()` (a connection clusters made),
    False when it uses the user's own.  Ray's errors (no cluster at that address...) propagate."""
    ray = import_ray()
    with _lock:
        if ray.is_initialized():
            ours = _made.users > 0 and _made.gcs == _gcs_address(ray)
            if ours and (address is None or address == _made.address):
                _made.users += 1
                return True
            if address is None:
                return False  # this process is connected already (a notebook, a test session): use that one
        if address is None:
            start_local_ray(**ray_init)
        else:
            ray.init(address=address, **{"include_dashboard": False, "logging_level": logging.WARNING, **ray_init})
        _made.address, _made.gcs, _made.users = address, _gcs_address(ray), 1
        return True


def leave() -> None:
    """A cluster is done with the connection it joined: the last one out ends it."""
    ray = import_ray()
    with _lock:
        _made.users = max(_made.users - 1, 0)
        if _made.users == 0:
            ray.shutdown()


def _gcs_address(ray) -> str | None:
    try:
        return ray.get_runtime_context().gcs_address
    except Exception:  # a Ray client connection may not say
        return None


def start_local_ray(**kwargs: Any) -> None:
    """ray.init for a local instance whose workers import this checkout's code and take their
    process group down with them.

    An engine's worker processes (synthesis, the CPU pool) are its actor's children and
    grandchildren; when the actor is killed they would outlive it.  With per-worker process
    groups (RAY_process_group_cleanup_enabled, read by the raylet at its start) Ray ends the
    whole group.  On a cluster started with `ray start`, set it in that environment."""
    ray = import_ray()
    kwargs.setdefault("address", "local")  # a new instance, even where RAY_ADDRESS or `ray start` names one
    kwargs.setdefault("include_dashboard", False)
    kwargs.setdefault("logging_level", logging.WARNING)
    env = dict(kwargs.pop("runtime_env", None) or {})
    env_vars = dict(env.get("env_vars", {}))
    env_vars.setdefault("PYTHONPATH", os.pathsep.join(p for p in (_CODE_ROOT, os.environ.get("PYTHONPATH")) if p))
    kwargs["runtime_env"] = {**env, "env_vars": env_vars}
    saved = os.environ.get(_GROUP_CLEANUP)
    os.environ[_GROUP_CLEANUP] = "1"
    try:
        ray.init(**kwargs)
    finally:
        if saved is None:
            os.environ.pop(_GROUP_CLEANUP, None)
        else:
            os.environ[_GROUP_CLEANUP] = saved
