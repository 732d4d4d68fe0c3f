"""The Ray connection a RayCluster uses, and who ends it.

A cluster joins Ray once, when it starts.  Several clusters of one process may
use one connection: the connection a cluster made ends when the last cluster
using it leaves, not when the first one does (which shut Ray down under the
others).  A connection the user made (`ray.init` before the cluster) is used
and never ended here.
"""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from engine.distributed.fault_signals import fault_handlers_kept
from engine.distributed.transport import first_line
from engine.errors import BackendUnavailableError, ConfigError, EngineError, EngineLostError, EngineStartError

_GROUP_CLEANUP = "RAY_process_group_cleanup_enabled"
_GCS_WAIT_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"  # Ray's: a process without its GCS that long exits
CHECK_TIMEOUT_S = 5.0  # the address answering as Ray does (connected, then its first bytes), before ray.init
TIMEOUT_ENV = "GROTH16_RAY_CHECK_TIMEOUT_S"  # another number of seconds (0: no check, ray.init retries for minutes)
# an HTTP/2 client's opening, its preface and an empty SETTINGS frame: Ray's gRPC servers answer with their SETTINGS
_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
# the package root: local Ray workers import the same code as this driver
_CODE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def import_ray():
    """Ray, imported.  Each way its import fails is one BackendUnavailableError naming what failed; a setting
    of Ray's that its import would crash on (gcs_wait_s), a ConfigError naming the variable, before it."""
    if "ray._raylet" not in sys.modules and _installed():  # its C++ settings are read as its core library loads
        gcs_wait_s(strict=True)
    try:
        import ray  # noqa: PLC0415
    except BaseException as exc:
        _exit_hook_kept_quiet()
        if isinstance(exc, Exception):
            raise BackendUnavailableError(import_problem(exc)) from None
        raise
    return ray


def _installed() -> bool:
    """Whether Python finds a `ray` to import (where it finds none, that is the one thing to say)."""
    import importlib.util  # noqa: PLC0415

    try:
        return importlib.util.find_spec("ray") is not None
    except Exception:  # noqa: BLE001 - a finder that fails: the import says how
        return False


def import_problem(exc: Exception) -> str:
    """Why `import ray` failed.  "not installed" only where Python found no `ray`: a broken install (a submodule,
    a dependency or a shared library that would not load, an error in a module Ray imports) was said the same
    way, and the user reinstalled what was there, or went looking for a missing package."""
    if isinstance(exc, ModuleNotFoundError) and exc.name == "ray":
        return "Ray is not installed: pip install 'groth16-engine[ray]' (or pip install ray)"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        what = f"no module named {exc.name!r}"
    elif isinstance(exc, ImportError) and exc.name:  # a shared library (ray._raylet's) or a name not in a module
        what = f"{exc.name}: {first_line(exc).removeprefix('ImportError: ')}"
    else:  # (an ImportError that names nothing, an error of another kind: the module whose import it ended)
        what = f"{_where(exc)}{first_line(exc)}"
    return f"Ray is installed but its import failed: {what} (a broken install? pip install --force-reinstall ray)"


def _where(exc: BaseException) -> str:
    """"importing MODULE: ", the innermost module body running when `exc` was raised ("in FILE: " where that is no
    module's: a script's, a finder's), "" where the traceback says nothing."""
    tb, last, module = exc.__traceback__, None, None
    while tb is not None:
        last = tb.tb_frame
        if last.f_code.co_name == "<module>" and last.f_globals.get("__name__") not in (None, "__main__"):
            module = last.f_globals["__name__"]
        tb = tb.tb_next
    if module is not None:
        return f"importing {module}: "
    return f"in {last.f_code.co_filename}: " if last is not None else ""


def _exit_hook_kept_quiet() -> None:
    """An import of Ray cut off halfway (Ctrl-C in `prove --ray`'s first second, a broken install) left Ray's
    exit hook (ray.shutdown, registered by ray._private.worker) in a package without the modules the hook
    imports: at the exit it printed "Exception ignored in atexit callback" and its traceback, after the
    command's error line (its JSON object with --json).  It is replaced by one that shuts down only what a
    later, whole import started."""
    worker = sys.modules.get("ray._private.worker")
    if getattr(worker, "shutdown", None) is None:  # cut off before the hook was registered
        return
    atexit.unregister(worker.shutdown)
    atexit.unregister(_shutdown_if_started)  # (once, whatever the number of imports cut off)
    atexit.register(_shutdown_if_started)


def _shutdown_if_started() -> None:
    """Ray's exit hook after a cut-off import: ray.shutdown where a later import connected or started Ray."""
    worker = sys.modules.get("ray._private.worker")
    started = getattr(worker, "_global_node", None) is not None
    if started or getattr(getattr(worker, "global_worker", None), "connected", False):
        worker.shutdown(_exiting_interpreter=True)


@dataclass
class _Made:
    """The connection clusters made: the address they were given, its GCS, and how many clusters use it."""

    address: str | None = None
    gcs: str | None = None
    users: int = 0
    ended: threading.Event | None = None  # set once it ends: a thread that started a local instance waits for it


class AddressError(ConnectionError):
    """An address where no Ray cluster is (or none can be): its message is the whole reason."""


def checked_address(address: Any) -> str | None:
    """A RayCluster's address, checked as its other arguments are: a number was Ray's AttributeError, bytes its
    TypeError, an empty one "no port"."""
    if address is None or (isinstance(address, str) and address.strip()):
        return address
    raise EngineError(f"address: {address!r} is not an address (None, 'local', 'auto', 'HOST:PORT' or "
                      "'ray://HOST:PORT')")


_made = _Made()
_lock = threading.Lock()  # clusters on other threads' event loops join and leave too


def join(address: str | None, ray_init: dict, ended: threading.Event | None = None) -> bool:
    """Connects for a cluster; True when the cluster must `leave()` (a connection clusters made),
    False when it uses the user's own.  Ray's errors (no cluster at that address...) propagate.  `ended`: set
    when the connection this call makes ends."""
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
        with _sigterm_kept(), fault_handlers_kept():
            if address is None:
                start_local_ray(**ray_init)
            else:
                try:
                    ray.init(address=address, **{"include_dashboard": False, "logging_level": logging.WARNING,
                                                 **ray_init})
                except ConnectionError as exc:
                    raise _refused(exc, address) from None
        _made.address, _made.gcs, _made.users, _made.ended = address, _gcs_address(ray), 1, ended
        return True


async def joined(address: str | None, ray_init: dict) -> bool:
    """join() for a RayCluster, the address checked first (awaited: Ctrl-C, a cancellation, ends the wait); a
    failure is one EngineStartError naming the address."""
    try:
        if address not in (None, "local") and not import_ray().is_initialized():
            await _check_answers(address)
        if not import_ray().is_initialized() and not (address or "").startswith("ray://"):  # (Ray Client keeps
            return await _joined_on_a_thread(address, ray_init)  # per-thread state: joined on this one)
        return join(address, ray_init)
    except Exception as exc:
        where = "a local Ray instance" if address in (None, "local") else f"Ray at {address!r}"
        why = exc if isinstance(exc, AddressError) else first_line(exc)  # an AddressError's message: the reason
        raise EngineStartError(f"could not start or join {where}: {why}") from None


async def _joined_on_a_thread(address: str, ray_init: dict) -> bool:
    """join() on a thread of its own: ray.init waits in C++ (20 tries, a second each, at a cluster that refuses
    this process's token), where the main thread cannot run a signal's handler: Ctrl-C and SIGTERM waited for it.
    Awaited, a cancellation ends the wait at once; the thread is left to finish, and a connection it made after
    that is ended.  A local instance's processes die with the thread that started them (PR_SET_PDEATHSIG): the
    thread that started one waits until its connection ends (or the process does)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    abandoned = threading.Event()
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None

    def settle(ok: bool, value: Any) -> None:
        if not done.done():
            (done.set_result if ok else done.set_exception)(value)
        elif ok and value:  # the wait was cancelled after the thread looked: no one is left to use it
            leave()

    def run() -> None:
        quiet = _NotMainThreadWarning()
        worker_log = logging.getLogger("ray._private.worker")
        worker_log.addFilter(quiet)
        ended = threading.Event()
        try:
            made = join(address, ray_init, ended)
            started = made and _made.ended is ended  # (read before the connection is handed on and can end)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            if not abandoned.is_set():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(settle, False, exc)
            return
        finally:
            worker_log.removeFilter(quiet)
        if abandoned.is_set():
            if made:
                leave()  # no one is left to use it
            return
        try:
            loop.call_soon_threadsafe(settle, True, made)
        except RuntimeError:  # the loop closed meanwhile
            if made:
                leave()
        if started:
            ended.wait()

    threading.Thread(target=run, name="ray-join", daemon=True).start()
    try:
        return await done
    except asyncio.CancelledError:
        abandoned.set()
        if done.done() and not done.cancelled() and done.exception() is None and done.result():
            leave()  # joined just as the wait was cancelled
        raise
    finally:
        if before not in (None, signal.SIG_DFL):  # Ray's core worker sets its own in C++ (see _sigterm_kept)
            signal.signal(signal.SIGTERM, before)


class _NotMainThreadWarning(logging.Filter):
    """Ray's "SIGTERM handler is not set because current thread is not the main thread": joined on a thread on
    purpose, the process's own handler kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("SIGTERM handler is not set")


def leave() -> None:
    """A cluster is done with the connection it joined: the last one out ends it."""
    ray = import_ray()
    with _lock:
        _made.users = max(_made.users - 1, 0)
        if _made.users == 0:
            try:
                with fault_handlers_kept():  # (Ray puts SIG_DFL back: a circuit's wasm trap would kill the process)
                    ray.shutdown()
            finally:
                if _made.ended is not None:  # the thread that started the local instance may end now
                    _made.ended.set()
                    _made.ended = None


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


_NONE_FOUND = "Could not find any running Ray instance"  # Ray's words (services.py) where "auto" finds none
NO_RAY_HERE = ("no Ray runs on this node ('auto' joins the cluster that `ray start` started here, or the one "
               "RAY_ADDRESS names): start one with `ray start --head`, or give 'local' (`--ray local`) for a Ray "
               "instance of this process's own")


def _refused(exc: ConnectionError, address: str) -> BaseException:
    """ray.init says "Failed to connect to Ray cluster at HOST:PORT", its reason in its cause's text: a token the
    cluster refused (token authentication, Ray's default for a new cluster) is said, with what to set.  "auto" on a
    node where no Ray runs was Ray's own advice, to set an `--address` flag this command line does not have."""
    cause = str(exc.__cause__ or "")
    if "AuthenticationError" in cause or "InvalidAuthToken" in cause:
        return AddressError("the cluster refused this process's authentication token: set RAY_AUTH_MODE=token, with "
                            "the cluster's token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token")
    if address == "auto" and str(exc).startswith(_NONE_FOUND):
        return AddressError(NO_RAY_HERE)
    return exc


def _canonical(address: str) -> str:
    """host:port as Ray resolves it (localhost as the node's address, "auto" as the cluster it finds)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address  # noqa: PLC0415

        return canonicalize_bootstrap_address(address) or address
    except Exception:  # Ray's private API moved, or nothing found for "auto": compare the address as given
        return address


async def _check_answers(address: str) -> None:
    """Ray retries an address where no Ray answers for minutes (a GCS it cannot reach; a service that is not Ray
    and never answers its gRPC, such as a web server or a listener that says nothing): such an address is said
    within seconds instead.  Ray answers an HTTP/2 opening with its SETTINGS frame at once (gRPC); TLS (RAY_USE_TLS)
    is checked to the connection only.  "auto" with no cluster to find, and scheme modules, are left to ray.init."""
    from engine.env_setting import number  # noqa: PLC0415

    timeout = number(TIMEOUT_ENV, CHECK_TIMEOUT_S, AddressError, "leaves it to ray.init", "seconds", "s")
    timeout = min(timeout, 86400.0)  # "inf" as a day: a socket's timeout has a limit (OverflowError beyond it)
    target = _target(address)
    if target is None or not timeout:
        return
    host, port, given = target
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    # a service on the loopback interface only is not where Ray goes for 127.0.0.1
    moved = f", the address Ray uses for {given}" if given != host else ""
    deadline = time.monotonic() + timeout
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except socket.gaierror as exc:
        why = "" if exc.errno == socket.EAI_NONAME else f" ({exc.strerror})"
        raise AddressError(f"host {host} does not resolve{why}") from None
    except TimeoutError:
        raise AddressError(f"nothing answers at {where} within {timeout:g} s{moved}") from None
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else exc.strerror or exc  # not asyncio's "Connect call failed"
        raise AddressError(f"nothing answers at {where} ({why}){moved}") from None
    try:
        if os.environ.get("RAY_USE_TLS", "0").strip().lower() not in ("", "0", "false"):
            return
        answer = await _first_answer(reader, writer, deadline)
    finally:
        writer.close()
    if answer is not None and len(answer) == 9 and answer[3] == 4 and answer[5:] == bytes(4):
        return  # a SETTINGS frame on the connection's stream: gRPC, as Ray speaks it
    if answer is None:
        what = f"accepted the connection but did not answer within {timeout:g} s"
    elif not answer:
        what = "closed the connection without answering"
    elif answer.startswith((b"HTTP/", b"<")):  # a status line, or a page without one
        what = "answers HTTP (a web server), not Ray's gRPC"
    else:
        what = f"answered {answer!r}, not Ray's gRPC"
    raise AddressError(f"not a Ray cluster: the service at {where} {what}")


def _target(address: str) -> tuple[str, int, str] | None:
    """The host and port ray.init will connect to (localhost as this node's address, as Ray resolves it) and the
    host as given; None where Ray finds the address itself ("auto") or a scheme module of Ray's takes it."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "", address
    elif scheme.lower() in ("http", "https"):  # Ray's own words for these end mid-sentence on their first line
        raise AddressError(f"{scheme}:// is not a Ray address (expected HOST:PORT or ray://HOST:PORT)")
    elif scheme != "ray":
        return None
    if not scheme and address == "auto":
        env = os.environ.get("RAY_ADDRESS", "")
        if env.partition("://")[0].lower() in ("http", "https") and "://" in env:
            raise AddressError(f"RAY_ADDRESS={env!r} is an HTTP address (a dashboard's?), not a Ray cluster's: set it "
                               "to HOST:PORT (the head's GCS) or ray://HOST:PORT")
        if env.startswith("ray://"):  # ray.init("auto") connects to it as a Ray client
            return _target(env)
        try:
            from ray._private.services import canonicalize_bootstrap_address  # noqa: PLC0415

            rest = canonicalize_bootstrap_address(address)
        except Exception:  # no cluster to find: ray.init says so
            return None
        if not rest:
            return None
    host, colon, port = rest.split("/", 1)[0].rpartition(":")
    if not colon and scheme:
        return None  # ray://HOST: Ray Client's own default port
    if not colon or not port:
        raise AddressError("no port (expected HOST:PORT)")
    if not host.strip("[]"):
        raise AddressError("no host (expected HOST:PORT)")
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        raise AddressError(f"port {port} is not a port number (1-65535)")
    host = given = host.strip("[]")
    if not scheme:
        try:
            from ray._private.services import resolve_ip_for_localhost  # noqa: PLC0415

            host = resolve_ip_for_localhost(host).strip("[]")
        except Exception:  # Ray's private API moved: the host as given
            pass
    return host, int(port), given


async def _first_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        deadline: float) -> bytes | None:
    """The first 9 bytes (a frame's header) the service sends after an HTTP/2 opening, fewer where it closed
    the connection; None where it said nothing before the deadline."""
    answer = b""
    try:
        writer.write(_HELLO)
        while len(answer) < 9:
            got = await asyncio.wait_for(reader.read(9 - len(answer)), max(deadline - time.monotonic(), 0.01))
            if not got:
                break
            answer += got
    except TimeoutError:
        return answer or None
    except OSError:  # reset: it closed the connection
        pass
    return answer


def watch_gcs(ray, gone: Callable[[str], None]) -> asyncio.Task | None:
    """A task that calls `gone(why)` once the connected cluster's GCS has refused connections (or not taken one)
    for most of the time Ray's own processes wait for it (RAY_gcs_rpc_server_reconnect_timeout_s, 60 s) before
    they exit, this one with status 1 and Ray's line whatever the engine was doing: its jobs fail first, with the
    reason.  A GCS that comes back sooner (fault-tolerant, restarted) is waited for, as Ray does."""
    address = _gcs_address(ray)
    host, _, port = (address or "").rpartition(":")
    if not (host and port.isdigit()) or _client_mode():  # a Ray client has no GCS connection of its own to lose,
        return None  # and the address it is told may be the cluster's inside, not reachable from here
    wait = _rays_own_gcs_wait(ray)
    patience = max(wait - 20, wait / 3, 0)  # then ray.shutdown (seconds) ends this process's wait before Ray ends it

    async def watch() -> None:
        since = None
        while True:
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)), 1.0)
                writer.close()
                since = None
            except (OSError, TimeoutError):
                since = since or time.monotonic()
                if time.monotonic() - since >= patience:
                    return gone(f"the Ray cluster's GCS at {address} has not answered for "
                                f"{time.monotonic() - since:.0f} s: the cluster is gone")
            await asyncio.sleep(1.0)

    return asyncio.create_task(watch())


GCS_WAIT_DEFAULT_S = 60  # Ray's default (src/ray/common/ray_config_def.h: int32_t, 60)
_INT32 = (-(1 << 31), (1 << 31) - 1)


def gcs_wait_s(strict: bool = False) -> int:
    """RAY_gcs_rpc_server_reconnect_timeout_s as Ray's C++ reads it (ray_config.h: an istringstream's `>>` into an
    int32_t, then RAY_CHECK that the text is not empty and was read to its end): blanks before it, a sign, ASCII
    digits; a number past int32 clamped, a sign alone 0, a negative one taken (Ray's process then exits as soon
    as its GCS fails to answer).  A value Ray does not take ("nan", "1.5", "60 ", "", "٦٠") ends `import ray`
    with a segmentation fault and no word: `strict` (before that import) refuses it with one line; after it
    (the variable changed since Ray read it) Ray's default.  float() took "nan" (the watch never said the
    cluster was gone) and "inf"."""
    text = os.environ.get(_GCS_WAIT_ENV)
    if text is None:
        return GCS_WAIT_DEFAULT_S
    found = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?)([0-9]*)", text, re.ASCII) if text else None
    if found is None:
        if strict:
            raise ConfigError(f"{_GCS_WAIT_ENV}: {_cut(text)} is not a whole number of seconds, and Ray's import "
                              f"would crash on it (leave it unset for Ray's {GCS_WAIT_DEFAULT_S} s)")
        return GCS_WAIT_DEFAULT_S
    sign, digits = found.groups()
    if not sign and not digits:  # blanks alone: Ray's value is whatever its memory held
        return GCS_WAIT_DEFAULT_S
    digits = digits.lstrip("0") or "0"
    if len(digits) > 10:  # (int() of over 4300 digits is a ValueError)
        return _INT32[0] if sign == "-" else _INT32[1]
    return max(_INT32[0], min(_INT32[1], int(sign + digits)))


def _rays_own_gcs_wait(ray) -> int:
    """The wait Ray's core uses, where its build says it (ray._config: the variable, or a cluster's system config
    over it; 2.60's does not), else the variable read as Ray reads it."""
    own = getattr(getattr(ray, "_config", None), "gcs_rpc_server_reconnect_timeout_s", None)
    try:
        value = own() if callable(own) else None
    except Exception:  # noqa: BLE001 - a build whose accessor fails: the variable
        value = None
    return value if isinstance(value, int) and not isinstance(value, bool) else gcs_wait_s()


def _cut(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


class Lifeline:
    """A cluster's GCS as its watch sees it: why it is gone (None while it answers); the calls awaited through it
    (a key's load) then fail with EngineLostError, where each would wait for Ray to end this process."""

    def __init__(self) -> None:
        self.why: str | None = None
        self._calls: set[asyncio.Future] = set()

    def lost(self, why: str) -> None:
        self.why = why
        for call in list(self._calls):
            call.cancel()

    async def answer(self, ref: Any, name: str) -> Any:
        """What `await ref` gives; the caller's own cancellation stays a CancelledError."""
        call = asyncio.ensure_future(ref)
        self._calls.add(call)
        try:
            return await call
        except asyncio.CancelledError:
            if self.why is not None and not asyncio.current_task().cancelling():
                raise EngineLostError(f"{name}: {self.why}") from None
            raise
        finally:
            self._calls.discard(call)


def _client_mode() -> bool:
    try:
        from ray.util.client import ray as client  # noqa: PLC0415

        return bool(client.is_connected())
    except Exception:  # Ray's layout moved: a driver's connection
        return False


def resources(ray) -> str:
    """What the cluster has, for a message."""
    try:
        res = ray.cluster_resources()
    except Exception:
        return "unknown resources"
    return f"{res.get('CPU', 0):g} CPU, {res.get('GPU', 0):g} GPU"


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
        with fault_handlers_kept():
            ray.init(**kwargs)
    finally:
        if saved is None:
            os.environ.pop(_GROUP_CLEANUP, None)
        else:
            os.environ[_GROUP_CLEANUP] = saved
