"""The service's configuration: the `[service]` table of engine.toml, then the `serve` flags.

    [service]
    host = "127.0.0.1"         # loopback by default; anything else needs token_file
    port = 8080
    token_file = "token"       # one bearer token per line; every route but /healthz needs one
    max_body = "1GiB"          # the largest request body (a .wtns upload)
    memory_upload_max = "64MiB"  # .wtns uploads up to this size are parsed in memory; larger
                               #   ones (or of unknown length) go to a file a synthesis worker reads
    max_queued_per_key = 64    # queued (not yet running) jobs per key; beyond: 429
    running_jobs = 0           # jobs handed to the engine at once; 0: 2 x (devices x compute
                               #   slots + synthesis workers) on GPUs, + epilogue threads
                               #   instead where the CPU ends proofs (Service.default_slots)
    job_ttl_s = 600            # how long a finished job's result can be fetched
    default_deadline_s = 0     # a deadline for requests that name none; 0: none
    drain_timeout_s = 0        # SIGTERM waits this long for jobs, then cancels them; 0: no limit
    upload_timeout_s = 30      # a request body that sends no byte this long (or trickles) is dropped; 0: never
    idle_timeout_s = 75        # a connection with no request this long is closed (above a proxy's); 0: never
"""
from __future__ import annotations

import ipaddress
import math
import os
import socket
from typing import Any, ClassVar

import msgspec

from engine.config import (ConfigError, EngineConfig, check_field_types, check_table, convert, engine_part,
                           parse_size, read_toml, refuse_nan)
from engine.errors import InputFileError


# The keys that are seconds: finite, not negative (0: none or never, as each documents; job_ttl_s: more than 0)
SECONDS = ("job_ttl_s", "default_deadline_s", "drain_timeout_s", "upload_timeout_s", "idle_timeout_s")


class ServiceConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    EXPECTED: ClassVar[dict[str, str]] = {  # what a key holds, where its type alone says less (check_table)
        "max_body": 'a size (bytes, or a string such as "1GiB")',
        "memory_upload_max": 'a size (bytes, or a string such as "64MiB")',
        "token_file": "a file name (a string)",
    }

    host: str = "127.0.0.1"
    port: int = 8080
    token_file: str | None = None
    max_body: int | str = "1GiB"
    memory_upload_max: int | str = "64MiB"
    max_queued_per_key: int = 64
    running_jobs: int = 0
    job_ttl_s: float = 600.0
    max_jobs_kept: int = 10000
    default_deadline_s: float = 0.0
    drain_timeout_s: float = 0.0
    upload_timeout_s: float = 30.0
    idle_timeout_s: float = 75.0

    def __post_init__(self) -> None:
        given_body = self.max_body  # as written, for its message: "0.4" is 0 bytes
        self.max_body = parse_size(self.max_body, "service.max_body")
        self.memory_upload_max = parse_size(self.memory_upload_max, "service.memory_upload_max")
        check_field_types(self, "service.", paths=("token_file",))
        if self.token_file == "":  # was "cannot read the token file: No such file or directory", naming none
            raise ConfigError("service.token_file: an empty file name (leave it out for no tokens)")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"service.port: {self.port} is not a TCP port")
        for name in ("max_queued_per_key", "max_jobs_kept"):
            if getattr(self, name) < 1:
                raise ConfigError(f"service.{name}: need at least 1, got {getattr(self, name)}")
        for name in ("running_jobs", *SECONDS):
            value = getattr(self, name)
            refuse_nan(value, f"service.{name}")
            if isinstance(value, float) and math.isinf(value):  # TOML's inf, 1e400: a timeout that never came
                raise ConfigError(f"service.{name}: {value} is not a finite number of seconds")
            if value < 0:
                raise ConfigError(f"service.{name}: {value} is negative")
        if self.job_ttl_s == 0:  # every detached job's result was dropped before its owner could fetch it
            raise ConfigError("service.job_ttl_s: 0 keeps no finished job to fetch; give more than 0 seconds")
        if self.max_body < 1:
            raise ConfigError(f"service.max_body: {given_body!r} is less than 1 byte")


def load_files(path: str | os.PathLike | None) -> tuple[EngineConfig, ServiceConfig]:
    """engine.toml -> (engine part, service part); the engine part is `[engine]` or the top level."""
    if path is None:
        return EngineConfig(), ServiceConfig()
    path = os.fspath(path)
    data = read_toml(path)
    engine = engine_part(data, path)
    service = data.get("service", {})
    try:  # (check_table: the key as written and the problem in the engine's words, not msgspec's "Expected `int`,
        # got `str` - at `$.port`"; the struct's own checks name their key as service.NAME too)
        service_config = msgspec.convert(check_table(service, ServiceConfig, "service."), ServiceConfig)
    except (ConfigError, msgspec.ValidationError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return convert(engine, path), service_config


def with_flags(config: ServiceConfig, **flags: Any) -> ServiceConfig:
    """The flags that were given (not None) override the file."""
    changes = {k: v for k, v in flags.items() if v is not None}
    if not changes:
        return config
    data = msgspec.to_builtins(config)
    data.update(changes)
    try:
        return msgspec.convert(check_table(data, ServiceConfig, "service."), ServiceConfig)
    except (ConfigError, msgspec.ValidationError) as exc:
        raise ConfigError(_as_flag(str(exc), changes)) from None


def _as_flag(message: str, changes: dict[str, Any]) -> str:
    """A refused value named by the flag that gave it (`--port: 99999 is not a TCP port`), not by the [service]
    key the user never wrote (engine/config.py's _as_flag does the same for the engine's flags)."""
    for name in changes:
        flag = "--" + name.removesuffix("_s").replace("_", "-")  # drain_timeout_s: --drain-timeout
        if message.startswith(f"service.{name}:"):
            return flag + message[len(f"service.{name}"):]
        if message.endswith(f"- at `$.{name}`"):  # msgspec's own: "Expected `int`, got `str` - at `$.port`"
            return f"{flag}: {message[:-len(f' - at `$.{name}`')]}"
    return f"command-line flags: {message}"


def read_tokens(path: str | None, source: str | None = None) -> list[str]:
    """The bearer tokens of a token file (one a line, blank lines and #comments skipped).  `source`, where the
    name came from a configuration file (`engine.toml: [service] token_file`), is named in the error with it: a
    relative name is read from the current directory, not the file's (it said "tok: cannot read ...")."""
    from engine.client_wire import token_file_tokens  # noqa: PLC0415 - the client reads the same file the same way

    if path is None:
        return []
    where = path if source is None else f"{source} = {path!r}"
    try:
        tokens = token_file_tokens(path)
    except InputFileError as exc:
        if source is None:
            raise ConfigError(str(exc)) from None
        relative = " (a relative name is read from the current directory)" \
            if not os.path.isabs(path) and "cannot read" in exc.problem else ""
        raise ConfigError(f"{where}: {exc.problem}{relative}") from None
    short = [t for t in tokens if len(t) < 16]
    if short:
        raise ConfigError(f"{where}: a token of {len(short[0])} characters is too easy to guess (use 16 or more)")
    return tokens


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback one (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError, ValueError):  # (a label over 63 characters, a NUL)
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def unresolved(host: str) -> str | None:
    """Why `host` names no address to listen on, or None ("" is every interface)."""
    if not host:
        return None
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    try:
        socket.getaddrinfo(host, None)
    except socket.gaierror as exc:
        return exc.strerror or str(exc)
    except (UnicodeError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return None


def check_exposure(config: ServiceConfig, tokens: list[str], source: str = "--host") -> None:
    """Binding beyond loopback without a token is refused: anyone could prove with (and unload) our keys; a
    host that names no address, whatever the tokens, is said to be one (not "cannot listen on", naming no source).
    `source` says where the host came from: the flag, or a configuration file's key (`engine.toml: [service]
    host`), which the message names (it said --host for a host that no flag had given)."""
    where = f"--host {config.host}" if source == "--host" else f"{source} = {config.host!r}"
    if (why := unresolved(config.host)) is not None:  # it asked for a token, then the server could not bind
        raise ConfigError(f"{where}: names no address to listen on ({why})")
    if tokens or is_loopback(config.host):
        return
    if source == "--host":
        raise ConfigError(f"--host {config.host or repr(config.host)}: serving beyond loopback needs --token-file "
                          "(every request would be anonymous)")
    raise ConfigError(f"{source} = {config.host!r}: serving beyond loopback needs a token file (token_file in "
                      "[service], or --token-file): every request would be anonymous")
