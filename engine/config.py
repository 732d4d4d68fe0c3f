"""The engine's configuration: a msgspec struct, loaded from TOML, overridden by CLI flags.

    [engine]                      # (the table is optional: keys may sit at the top level)
    backend = "auto"              # auto | cpu | gpu | simulated
    devices = [0, 1]              # GPU indices (all when absent)
    synthesis_workers = 4
    compute_slots = "auto"        # per device: 2 on a GPU, a key's proofs sharing them where that pays; or a number
    vram_budget = "60GiB"         # per device; absent: the backend's figure, measured once
    host_budget = "64GiB"         # synthesised witnesses waiting; absent: half the RAM
    lock_mode = "split"           # split | single (the old one-lock design, for experiments)
    verify = true                 # verify every proof before returning it
    timeline = "timeline.jsonl"
    key_cache_dir = "/data/keycache"  # device-ready keys ("off": none; absent: $GROTH16_KEY_CACHE,
                                  # else $XDG_CACHE_HOME/groth16-engine/keys)

    [engine.simulation]           # only for backend = "simulated"
    devices = 2
    gpu_ms = 50

Sizes are bytes (an integer, or a float such as 16e9) or strings such as "8GiB", "512 MiB", "1.5G".
`add_arguments(parser)` and `from_args(args)` give every command the same
flags; `load(path)` reads a file.  Errors are `ConfigError`: one line naming the
file or flag, the key as written (`simulation.gpu_ms`) and the problem, in the
engine's words (check_table), never msgspec's.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import stat
import typing
from typing import Any, ClassVar

import msgspec

from engine.env_setting import cut as _cut
from engine.errors import ConfigError  # noqa: F401 - its home before: re-exported (engine.config.ConfigError)

# the command-line side (flags, no msgspec) lives in config_flags.py; its names are re-exported here
from engine.config_flags import (  # noqa: F401
    BACKENDS,
    EMPTY_KEY_CACHE_DIR,
    ENGINE_ONLY_FLAGS,
    LOCK_MODES,
    PROVING_BACKENDS,
    add_arguments,
    engine_flags_given,
)
START_METHODS = ("forkserver", "spawn")


_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kib": 1 << 10, "kb": 10**3,
    "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
    "g": 1 << 30, "gib": 1 << 30, "gb": 10**9,
    "t": 1 << 40, "tib": 1 << 40, "tb": 10**12,
}


def check_field_types(struct: msgspec.Struct, prefix: str = "", paths: tuple[str, ...] = ()) -> None:
    """Each field of `struct` against its annotation.  msgspec checks types when it decodes (a TOML file, the
    flags) but not when Python code builds the struct: `EngineConfig(devices="0,1")` was a TypeError from a
    comparison, `devices=[0.5]` and `timeline=5` were accepted, `simulation={...}` stayed a dict.  Each field
    takes its value as msgspec converts it; fields named in `paths` take any os.PathLike.  A problem is said as
    one read from a file is (check_table)."""
    for name in paths:
        value = getattr(struct, name)
        if isinstance(value, os.PathLike):
            setattr(struct, name, os.fspath(value))
    for f in msgspec.structs.fields(struct):
        value = getattr(struct, f.name)
        if isinstance(value, dict) and _is_struct(f.type):  # a table's own keys named: simulation.gpu_ms
            value = check_table(value, f.type, f"{prefix}{f.name}.")
        try:
            setattr(struct, f.name, msgspec.convert(value, f.type))
        except msgspec.ValidationError as exc:
            raise ConfigError(_type_problem(struct, prefix + f.name, value, f, exc)) from None


def check_table(data: Any, struct: type[msgspec.Struct], prefix: str = "") -> dict:
    """`data` (a TOML table, or a dict) held against `struct`'s keys before msgspec converts it: an unknown key, a
    value of the wrong type or a table where a value goes is said in the engine's words, naming the key as
    written (msgspec said "Object contains unknown field `x` - at `$.simulation`", "Expected `int | str | null`,
    got `float` - at `$.vram_budget`").  Returns the table with its sizes (struct.SIZE_KEYS) in bytes: a TOML
    float (16e9) is a size as it is from Python."""
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix.removesuffix('.') or 'configuration'}: expected a table, got {_got(data)}")
    fields = {f.name: f for f in msgspec.structs.fields(struct)}
    out = {}
    for key, value in data.items():
        f = fields.get(key)
        if f is None:
            raise ConfigError(_unknown_key(prefix, key, fields))
        name = prefix + key
        if key in getattr(struct, "SIZE_KEYS", ()):
            value = parse_size(value, name)
        elif _is_struct(f.type) and isinstance(value, dict):
            value = check_table(value, f.type, name + ".")
        elif not (_is_struct(f.type) and isinstance(value, f.type)):
            try:
                msgspec.convert(value, f.type)
            except msgspec.ValidationError as exc:
                raise ConfigError(_type_problem(struct, name, value, f, exc)) from None
        out[key] = value
    return out


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _unknown_key(prefix: str, key: Any, fields: dict) -> str:
    """An unknown key, as written, with the nearest known one (a misspelling) or the table's keys."""
    import difflib  # noqa: PLC0415 - only for a misspelt key

    near = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6)
    hint = f"did you mean {prefix}{near[0]}?" if near else "its keys: " + ", ".join(fields)
    table = f"the {prefix.removesuffix('.')} table" if prefix else "the engine's configuration"
    return f"{prefix}{_key(key)}: not a key of {table} ({hint})"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: Any) -> str:
    """A key as TOML writes it: bare where it can be, else quoted (so that a newline in it stays on its line)."""
    text = str(key)
    return text if _BARE_KEY.fullmatch(text) else _cut(json.dumps(text, ensure_ascii=False))


_WORDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}


def _type_problem(struct: Any, name: str, value: Any, f: Any, exc: msgspec.ValidationError) -> str:
    """A value of the wrong type, in words: what the key holds (struct.EXPECTED, else its annotation's)."""
    if isinstance(value, int) and not isinstance(value, bool) and "out of range" in str(exc):
        return f"{name}: {_shown(value)} is out of range"  # 10**400 for a number of seconds
    expected = getattr(struct, "EXPECTED", {}).get(f.name) or _described(f.type)
    return f"{name}: expected {expected}, got {_got(value)}"


def _described(tp: Any) -> str:
    """An annotation in words: `float | None` is "a number" (TOML has no null: leaving the key out is None)."""
    if _is_struct(tp):
        return "a table"
    if typing.get_origin(tp) is list:
        return "an array of " + _described(typing.get_args(tp)[0]).removeprefix("a ") + "s"
    parts = [_described(a) for a in typing.get_args(tp) if a is not type(None)] if typing.get_args(tp) else []
    return " or ".join(parts) if parts else _WORDS.get(tp, getattr(tp, "__name__", str(tp)))


def _got(value: Any) -> str:
    """A value and what it is, for "expected X, got ...": `the string 'two'`, `a table {'a': 1}`."""
    if isinstance(value, bool):
        return "true" if value else "false"  # as TOML writes it
    kinds = ((int, "the whole number"), (float, "the number"), (str, "the string"), (dict, "a table"),
             (list, "an array"), (datetime.datetime, "the date-time"), (datetime.date, "the date"),
             (datetime.time, "the time"))
    kind = next((word for tp, word in kinds if isinstance(value, tp)), type(value).__name__)
    if isinstance(value, (datetime.date, datetime.time)):  # (a datetime is a date)
        return f"{kind} {value.isoformat()}"
    return f"{kind} {_shown(value)}"


def refuse_nan(value: Any, what: str) -> None:
    """TOML and float() both read `nan`, which every range check (`< 0`, `<= 0`) lets by: then an asyncio sleep
    or a deadline of nan failed later, inside the engine's or the service's task group."""
    if isinstance(value, float) and math.isnan(value):
        raise ConfigError(f"{what}: nan is not a number")


def parse_size(value: int | float | str | None, what: str = "size") -> int | None:
    """Bytes from an int, a float (16e9) or a string like "8GiB" / "1.5 G" / "512MB" (binary unless the unit says
    B).  An int of 2^63 and more was taken (a string of as much was refused); nan, inf and a bool or a table were
    msgspec's "Expected `int | str | null`, got `float`"."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{what}: expected a size (bytes, or a string such as \"8GiB\"), got {_got(value)}")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            raise ConfigError(f"{what}: nan is not a size")
        if value < 0:
            raise ConfigError(f"{what}: {_shown(value)} is negative")
        if value >= _MAX_SIZE:
            raise ConfigError(f"{what}: {_shown(value)} is larger than any memory (at most 2^63 bytes)")
        return int(value)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*", str(value))  # 16e9: as TOML's
    if not m or m.group(2).lower() not in _UNITS:
        raise ConfigError(f"{what}: {_shown(value)} is not a size (examples: 8GiB, 512MiB, 1.5G, 1000000)")
    size = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if size >= _MAX_SIZE:  # float() of 309 digits and more is inf, and int(inf) an OverflowError
        raise ConfigError(f"{what}: {_shown(value)} is larger than any memory (at most 2^63 bytes)")
    return int(size)


_MAX_SIZE = float(1 << 63)


def _shown(value: Any) -> str:
    """A value for an error line, cut where it is long (a size of 5000 digits filled the terminal)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return f"a number of about {round(abs(value).bit_length() * math.log10(2))} digits"  # (repr of one of
        # more than 4300 digits is a ValueError)
    return _cut(repr(value))




MAX_SIMULATED_DEVICES = 1024  # as compute_slots' bound: what one engine starts at once
MAX_SIMULATED_MS = 86_400_000  # a day: time.sleep() of 1e300 ms (or inf) was an OverflowError in a worker
MAX_WITNESS_ROWS = 1 << 32  # a circuit's wires are counted in 32 bits (.r1cs, .wtns)


class SimulationConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The simulated device (backend = "simulated"): a model, not a GPU."""

    SIZE_KEYS: ClassVar[tuple[str, ...]] = ("vram", "working_set", "key_resident")

    devices: int = 1
    vram: int | str = "8GiB"
    working_set: int | str = "2GiB"
    key_resident: int | str = 0
    witness_rows: int = 1024
    synth_ms: float = 20.0
    stage_host_ms: float = 1.0
    upload_ms: float = 10.0
    gpu_ms: float = 50.0
    epilogue_ms: float = 5.0
    verify_ms: float = 5.0
    concurrency_gain: float = 0.0
    jitter: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        self.vram = parse_size(self.vram, "simulation.vram")  # sizes first: a float (16e9) is a size too
        self.working_set = parse_size(self.working_set, "simulation.working_set")
        self.key_resident = parse_size(self.key_resident, "simulation.key_resident")
        check_field_types(self, "simulation.")
        if self.devices < 1:
            raise ConfigError(f"simulation.devices: need at least 1, got {_shown(self.devices)}")
        if self.devices > MAX_SIMULATED_DEVICES:  # a device worker each, all started with the engine
            raise ConfigError(f"simulation.devices: {_shown(self.devices)} is more than the engine starts (a device "
                              f"worker each, all started at once); give at most {MAX_SIMULATED_DEVICES}")
        for name in ("synth_ms", "stage_host_ms", "upload_ms", "gpu_ms", "epilogue_ms", "verify_ms",
                     "concurrency_gain", "jitter"):
            value = getattr(self, name)
            refuse_nan(value, f"simulation.{name}")
            if value < 0:
                raise ConfigError(f"simulation.{name}: {value} is negative")
            if math.isinf(value) or (name.endswith("_ms") and value > MAX_SIMULATED_MS):  # (a gain: inf * 0)
                raise ConfigError(f"simulation.{name}: {value} is too large"
                                  + (f" (at most {MAX_SIMULATED_MS}, a day)" if name.endswith("_ms") else ""))
        if self.vram == 0:  # every proof failed on the device: no working set fits in 0 bytes
            raise ConfigError("simulation.vram: 0 bytes holds no key or proof")
        if not 1 <= self.witness_rows <= MAX_WITNESS_ROWS:  # 0 or less was a ValueError in a synthesis worker
            raise ConfigError(f"simulation.witness_rows: {_shown(self.witness_rows)} is not a witness's count of "
                              f"values (1 to 2^32)")
        if self.seed < 0:  # numpy's generator refused it in every synthesis worker
            raise ConfigError(f"simulation.seed: {_shown(self.seed)} is negative")


def _cpus() -> int:
    from scheduler.cpu_pool import resolve_workers  # noqa: PLC0415

    return resolve_workers(None)


# Counts the engine starts that many of at once: `--compute-slots 100000000` built two threads a slot and took the
# machine's memory for minutes before the kernel killed it.  Synthesis workers scale with the machine (a 2-socket
# host has 384 CPUs): four a CPU, at least 256.
def _started_at_once() -> tuple[tuple[str, int, str], ...]:
    return (("synthesis_workers", max(256, 4 * (os.cpu_count() or 1)), "a process each"),
            ("compute_slots", 1024, "two threads each"), ("device_threads", 1024, "a thread each"))


class EngineConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    SIZE_KEYS: ClassVar[tuple[str, ...]] = ("vram_budget", "host_budget")
    EXPECTED: ClassVar[dict[str, str]] = {  # what a key holds, where its type alone says less (check_table)
        "backend": "one of " + ", ".join(BACKENDS),
        "lock_mode": "one of " + ", ".join(LOCK_MODES),
        "synthesis_start_method": "one of " + ", ".join(START_METHODS),
        "devices": "an array of device indices such as [0, 1]",
        "compute_slots": 'a whole number or "auto"',
        "timeline": "a file name (a string)",
        "key_cache_dir": 'a directory name (a string), or "off"',
    }

    backend: str = "auto"
    devices: list[int] | None = None
    synthesis_workers: int = 2
    synthesis_start_method: str = "forkserver"
    compute_slots: int | str = "auto"  # "auto": scheduler/compute_share.py
    device_threads: int = 1
    vram_budget: int | str | None = None
    host_budget: int | str | None = None
    lock_mode: str = "split"
    verify: bool = True
    timeline: str | None = None
    # epilogues + verifications in flight: they run in the CPU process pool (scheduler.cpu_pool),
    # so by default as many as there are CPUs
    epilogue_threads: int = msgspec.field(default_factory=lambda: _cpus())
    max_in_flight: int = 64
    idle_trim_s: float | None = 5.0
    shutdown_timeout_s: float | None = None
    # the GPU backend's key cache (engine/formats/key_cache.py): a directory, "off", or None for
    # $GROTH16_KEY_CACHE / the default; `python -m engine cache` lists and clears it
    key_cache_dir: str | None = None
    simulation: SimulationConfig = msgspec.field(default_factory=SimulationConfig)

    def __post_init__(self) -> None:
        self.vram_budget = parse_size(self.vram_budget, "vram_budget")  # sizes first: a float (16e9) is a size too
        self.host_budget = parse_size(self.host_budget, "host_budget")
        for name in ("vram_budget", "host_budget"):  # a server started with 0, then failed every proof
            if getattr(self, name) == 0:
                raise ConfigError(f"{name}: 0 bytes holds no key or witness (leave it out for the default)")
        check_field_types(self, paths=("timeline", "key_cache_dir"))
        if self.timeline == "":  # was no timeline, without a word
            raise ConfigError("timeline: an empty file name (leave it out for no timeline)")
        if self.key_cache_dir is not None and not self.key_cache_dir.strip():
            raise ConfigError(f"key_cache_dir: {EMPTY_KEY_CACHE_DIR}")
        _choice("backend", self.backend, BACKENDS)
        _choice("lock_mode", self.lock_mode, LOCK_MODES)
        _choice("synthesis_start_method", self.synthesis_start_method, START_METHODS,
                hint=" (never fork: the main process may have initialised CUDA)")
        if isinstance(self.compute_slots, str) and self.compute_slots.strip().lower() == "auto":
            self.compute_slots = "auto"  # as --compute-slots takes it (the file refused "Auto")
        if isinstance(self.compute_slots, str) and self.compute_slots != "auto":
            raise ConfigError(f"compute_slots: {self.compute_slots!r} is neither a number nor \"auto\"")
        for name in ("synthesis_workers", "compute_slots", "device_threads", "epilogue_threads", "max_in_flight"):
            if getattr(self, name) != "auto" and getattr(self, name) < 1:
                raise ConfigError(f"{name}: need at least 1, got {_shown(getattr(self, name))}")
        for name, most, what in _started_at_once():
            value = getattr(self, name)
            if value != "auto" and value > most:
                raise ConfigError(f"{name}: {_shown(value)} is more than this machine can use ({what}, all started "
                                  f"with the engine); give at most {most}")
        _check_devices(self.devices)
        refuse_nan(self.idle_trim_s, "idle_trim_s")
        refuse_nan(self.shutdown_timeout_s, "shutdown_timeout_s")
        _check_idle_trim(self.idle_trim_s)
        if self.shutdown_timeout_s is not None and self.shutdown_timeout_s < 0:
            raise ConfigError(f"shutdown_timeout_s: {self.shutdown_timeout_s} is negative (absent: wait for every job)")

    def replace(self, **changes: Any) -> "EngineConfig":
        """A copy with some fields changed (validated like a fresh one)."""
        data = msgspec.to_builtins(self)
        data.update(changes)
        return convert(data, "configuration")


# A device index no machine has: CUDA's count is far below (the engine starts a worker a device, and no more than
# MAX_SIMULATED_DEVICES of simulated ones); `--devices 99999999999999999999` reached the engine's start.  Indices
# below this that the machine lacks are refused there, where the device count is known ("not present").
MAX_DEVICE_INDEX = MAX_SIMULATED_DEVICES - 1
# The trim loop wakes every idle_trim_s (scheduler/device_worker.py): 1e-9 woke it without pause, a core's worth of
# CPU for the life of the engine.  The tests' shortest is 0.01.
MIN_IDLE_TRIM_S = 0.01


def _check_devices(devices: list[int] | None) -> None:
    """A list of distinct device indices, each from 0 to MAX_DEVICE_INDEX, the first bad one named."""
    if devices is None:
        return
    if not devices:
        raise ConfigError("devices: an empty list names no device (leave it out for all)")
    for d in devices:
        if not 0 <= d <= MAX_DEVICE_INDEX:
            raise ConfigError(f"devices: {_shown(d)} is not a device index (0 to {MAX_DEVICE_INDEX})")
    if len(set(devices)) != len(devices):  # was two workers on one GPU
        twice = next(d for d in devices if devices.count(d) > 1)
        raise ConfigError(f"devices: {_cut(repr(devices))} names device {twice} more than once")


def _check_idle_trim(seconds: float | None) -> None:
    """0 (or None) never trims; otherwise at least MIN_IDLE_TRIM_S, and finite (inf trimmed never, as 0 says)."""
    if seconds is None or seconds == 0:  # a TOML file has no None
        return
    if seconds < 0:
        raise ConfigError(f"idle_trim_s: {seconds} is negative (0: never trim)")
    if seconds < MIN_IDLE_TRIM_S:
        raise ConfigError(f"idle_trim_s: {seconds} is too short: at least {MIN_IDLE_TRIM_S} s between the trim "
                          "loop's wake-ups (0: never trim)")
    if math.isinf(seconds):
        raise ConfigError("idle_trim_s: inf is no time to wait (0: never trim)")


def _choice(name: str, value: str, choices: tuple[str, ...], hint: str = "") -> None:
    if value not in choices:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(choices)}{hint}")


def convert(data: dict, source: str) -> EngineConfig:
    """An EngineConfig from plain data; problems become one-line ConfigErrors naming `source`."""
    try:
        return msgspec.convert(check_table(data, EngineConfig), EngineConfig)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {exc}") from None


STREAM_CAP = 1 << 20  # what a configuration file that is not a regular one may give


def read_toml(path: str | os.PathLike) -> dict:
    """A configuration file's tables; every way it cannot be read is a one-line ConfigError naming it (a folder
    and a file that is not UTF-8 were tracebacks)."""
    import tomllib  # noqa: PLC0415 - only a --config run reads TOML

    path = os.fsdecode(os.fspath(path))  # a bytes name was shown as b'...'
    if not path:  # was ": no such configuration file"
        raise ConfigError("an empty name is not a configuration file")
    try:
        with open(path, "rb") as f:  # a pipe or a device at most STREAM_CAP: /dev/zero or `<(yes)` took all memory
            data = f.read() if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else f.read(STREAM_CAP + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a configuration file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration file: {exc.strerror or exc}") from None
    except ValueError:  # Python's refusal of a NUL in the name (it was "holds a number too long to read")
        raise ConfigError(f"{path!r}: a name with a NUL character names no file") from None
    if len(data) > STREAM_CAP:
        raise ConfigError(f"{path}: gave more than {STREAM_CAP >> 20} MiB without ending (not a regular file)")
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: is not a TOML text file (not UTF-8)") from None
    if not text.strip():  # a file truncated or never written ran on the defaults without a word
        raise ConfigError(f"{path}: is empty, a configuration file without settings (for the defaults, give none)")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except ValueError:  # an integer of more than Python's 4300 digits (TOMLDecodeError is a ValueError too)
        raise ConfigError(f"{path}: holds a number too long to read (over 4300 digits)") from None


def load(path: str | os.PathLike) -> EngineConfig:
    """Read a TOML file (keys at the top level or under [engine]).  A `[service]` table is serve's
    (engine/service/settings.py): one file serves both, so `prove --config` sets it aside."""
    path = os.fsdecode(os.fspath(path))
    return convert(engine_part(read_toml(path), path), path)


def engine_part(data: dict, path: str) -> dict:
    """The engine's keys of a configuration file: its `[engine]` table, else its top level (a `[service]` table
    set aside).  Keys at the top level beside an `[engine]` table were ignored without a word: refused."""
    for table in ("engine", "service"):  # `engine = 5` was "unknown field `engine`"; `service = 5` was set aside
        if table in data and not isinstance(data[table], dict):
            raise ConfigError(f"{path}: {table}: expected the [{table}] table, got {_got(data[table])}")
    rest = {k: v for k, v in data.items() if k != "service"}
    if "engine" not in data:
        return rest
    beside = [k for k in rest if k != "engine"]
    if beside:
        keys = ", ".join(beside[:8]) + (", ..." if len(beside) > 8 else "")
        raise ConfigError(f"{path}: {keys} {'sits' if len(beside) == 1 else 'sit'} at the top level beside an "
                          "[engine] table, which alone is read: put the engine's keys in one place (all under "
                          "[engine], or all at the top level without it)")
    return data["engine"]


# ------------------------------------------------------------------ command-line flags

def from_args(args: argparse.Namespace, base: EngineConfig | None = None) -> EngineConfig:
    """The configuration file (if --config), then the flags that were given."""
    config = base
    if getattr(args, "config", None):
        config = load(args.config)
    config = config or EngineConfig()
    changes: dict[str, Any] = {}
    for name in ("backend", "synthesis_workers", "compute_slots", "vram_budget", "host_budget", "lock_mode",
                 "verify", "timeline", "key_cache_dir"):
        value = getattr(args, name, None)
        if value is not None:
            changes[name] = value
    devices = getattr(args, "devices", None)
    if devices is not None:
        changes["devices"] = device_list(str(devices))
    if not changes:
        return config
    try:
        return config.replace(**changes)
    except ConfigError as exc:
        raise ConfigError(_as_flag(str(exc).removeprefix("configuration: "), changes)) from None


def device_list(text: str) -> list[int]:
    """--devices' indices: ASCII digits between commas (spaces around them allowed, an empty item skipped, as a
    trailing comma).  int() took '١' (an Arabic-Indic one), '+1' and '1_0' (ten); the item is named."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if not re.fullmatch(r"[0-9]+", item, re.ASCII):
            raise ConfigError(f"--devices: {_cut(repr(item))} is not a device index (digits 0-9, such as 0,1)")
        digits = item.lstrip("0") or "0"  # (int() of over 4300 digits, zeros too, is a ValueError)
        if len(digits) > len(str(MAX_DEVICE_INDEX)):
            raise ConfigError(f"--devices: {_cut(item)} is not a device index (0 to {MAX_DEVICE_INDEX})")
        out.append(int(digits))
    return out


def _as_flag(message: str, changes: dict[str, Any]) -> str:
    """A refused value named by the flag that gave it (`--synthesis-workers: need at least 1`), not by the
    configuration key the user never wrote; a problem with no one flag keeps the general prefix."""
    for name in changes:
        if message.startswith(name + ":"):
            return "--" + name.replace("_", "-") + message[len(name):]
    return f"command-line flags: {message}"
