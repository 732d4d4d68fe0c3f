"""The Ray connection a RayCluster uses, and who ends it.

A cluster joins Ray once, when it starts.  Several clusters of one process may
use one connection: the connection a cluster made ends when the last cluster
using it leaves, not when the first one does (which shut Ray down under the
others).  A connection the user made (`ray.init` before the cluster) is used
and never ended here.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from engine.errors import BackendUnavailableError

_GROUP_CLEANUP = "RAY_process_group_cleanup_enabled"
CHECK_TIMEOUT_S = 10.0  # a TCP connection to the address given, before ray.init retries it for minutes
# the package root: local Ray workers import the same code as this driver
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
    if address == "local":  # the command line's word for None: ray.init("local") would lack start_local_ray's
        address = None  # per-worker process groups (a killed engine's workers left running)
    with _lock:
        if ray.is_initialized():
            current = _gcs_address(ray)
            ours = _made.users > 0 and _made.gcs == current
            same = address is None or (current is not None and _canonical(address) == current)
            if ours and (same or address == _made.address):
                _made.users += 1
                return True
            if same:
                return False  # this process is connected already (a notebook, a test session): use that one
            # ray.init would say "Maybe you called ray.init twice by accident?"
            raise ConnectionError(f"this process is already connected to the Ray at {current or 'another address'} "
                                  "(address=None uses that connection; ray.shutdown() it to join another)")
        with _sigterm_kept():
            if address is None:
                start_local_ray(**ray_init)
            else:
                _check_answers(address)
                ray.init(address=address, **{"include_dashboard": False, "logging_level": logging.WARNING,
                                             **ray_init})
        _made.address, _made.gcs, _made.users = address, _gcs_address(ray), 1
        return True


def leave() -> None:
    """A cluster is done with the connection it joined: the last one out ends it."""
    ray = import_ray()
    with _lock:
        _made.users = max(_made.users - 1, 0)
        if _made.users == 0:
            ray.shutdown()


@contextlib.contextmanager
def _sigterm_kept() -> Iterator[None]:
    """ray.init sets its own SIGTERM handler (sys.exit(15)) and its core worker a C++ one that dumps a stack: a
    handler this process had set (the CLI's "interrupted by SIGTERM", an application's own, SIG_IGN under nohup)
    is put back.  The default action stays Ray's, as Ray made it."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if before not in (None, signal.SIG_DFL):
            signal.signal(signal.SIGTERM, before)


def _canonical(address: str) -> str:
    """host:port as Ray resolves it (localhost as the node's address, "auto" as the cluster it finds)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address  # noqa: PLC0415

        return canonicalize_bootstrap_address(address) or address
    except Exception:  # Ray's private API moved, or nothing found for "auto": compare the address as given
        return address


def _check_answers(address: str) -> None:
    """Ray retries a GCS (or client server) that does not answer about 13 minutes, printing a retry line every
    few seconds: a wrong port is said at once instead.  Addresses Ray cannot resolve are left to ray.init."""
    if address.startswith("ray://"):
        target = address[len("ray://"):].split("/", 1)[0]
    else:
        try:
            from ray._private.services import canonicalize_bootstrap_address  # noqa: PLC0415

            target = canonicalize_bootstrap_address(address)
        except Exception:  # "auto" with no cluster, a malformed address: ray.init says which
            return
    host, _, port = (target or "").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CHECK_TIMEOUT_S).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {target} ({exc.strerror or exc})") from None


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
