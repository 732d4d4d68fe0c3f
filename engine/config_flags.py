"""The engine's command-line flags, apart from engine/config.py so that building a parser (every CLI
command, `--help`, the service's client) does not import msgspec and the configuration's types."""
from __future__ import annotations

import argparse
import re

from engine.env_setting import quoted_value  # noqa: F401 - the flags' messages (serve, bench-circuit import it here)

BACKENDS = ("auto", "cpu", "gpu", "simulated")
LOCK_MODES = ("split", "single")
PROVING_BACKENDS = ("auto", "cpu", "gpu")  # what a command that writes real proofs offers ("simulated" makes none)
ENGINE_ONLY_FLAGS = ("synthesis_workers", "compute_slots", "vram_budget", "host_budget", "lock_mode", "devices")
# an empty key_cache_dir (`--key-cache-dir "$UNSET"`) was the default directory, even where $GROTH16_KEY_CACHE
# named another; said the same by the configuration (engine/config.py) and by prove's direct path (below)
EMPTY_KEY_CACHE_DIR = 'an empty directory name (leave it out for $GROTH16_KEY_CACHE or the default; "off": no cache)'




def whole_number(text: str) -> int:
    """A whole number on the command line: ASCII digits, a sign allowed, spaces around them too.  int() also took
    '٢' (an Arabic-Indic two) and '1_0' (ten): `--synthesis-workers ٢` started two workers."""
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text, re.ASCII):
        raise argparse.ArgumentTypeError(f"{quoted_value(text)} is not a whole number")
    try:
        return int(text)
    except ValueError:  # over Python's 4300 digits
        raise argparse.ArgumentTypeError(f"{quoted_value(text)} has over 4300 digits, more than any count") from None


def slots_arg(text: str) -> int | str:
    """A count of slots or working sets on the command line: a number, or auto."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return whole_number(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{quoted_value(text)} is neither a number nor auto") from None


def positive_int(text: str) -> int:
    """A count on the command line that must be at least 1 (0 and negatives were taken as 1 in silence)."""
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{quoted_value(text)}: need at least 1")
    return value


def proofs_arg(text: str) -> int | str:
    """A count of working sets (info --proofs): a number of at least 1, or auto."""
    value = slots_arg(text)
    return value if value == "auto" else positive_int(text)


def add_arguments(parser: argparse.ArgumentParser, *, backends: tuple[str, ...] = BACKENDS) -> None:
    """The engine's flags; every default is None so that only given flags override the file.

    backends: the --backend choices offered (a command that writes proofs leaves out "simulated").
    """
    g = parser.add_argument_group("engine")
    g.add_argument("--config", metavar="FILE", help="engine configuration (TOML)")
    g.add_argument("--backend", choices=backends, default=None, help="where the heavy stages run (default auto)")
    g.add_argument("--devices", metavar="LIST", default=None, help="GPU indices, e.g. 0,1 (default: all)")
    g.add_argument("--synthesis-workers", type=whole_number, metavar="N", default=None,
                   help="processes that compute or read witnesses (default 2)")
    g.add_argument("--compute-slots", type=slots_arg, metavar="K", default=None,
                   help="proofs computing at once per device, or auto (default: two on a GPU, used by keys whose "
                        "proofs are long enough to gain from it; one on the CPU)")
    g.add_argument("--vram-budget", metavar="SIZE", default=None,
                   help="device memory per device for keys and proofs (default: 90%% of what is free at the start)")
    g.add_argument("--host-budget", metavar="SIZE", default=None,
                   help="host memory for waiting witnesses (default: half the RAM)")
    g.add_argument("--lock-mode", choices=LOCK_MODES, default=None,
                   help="split: a memory lock and compute slots per device (default); single: one lock over "
                        "both phases (for comparisons)")
    # one or the other: `--verify --no-verify` was taken, the last one winning without a word
    check = g.add_mutually_exclusive_group()
    check.add_argument("--verify", dest="verify", action="store_true", default=None,
                       help="verify every proof before returning it (default)")
    check.add_argument("--no-verify", dest="verify", action="store_false",
                       help="skip that check (faster; a wrong proof is then not caught before it is written)")
    g.add_argument("--timeline", metavar="FILE", default=None, help="write every stage as JSON lines to FILE")
    # one or the other: `--no-key-cache --key-cache-dir x` was taken, the last one winning without a word
    cache = g.add_mutually_exclusive_group()
    cache.add_argument("--key-cache-dir", metavar="DIR", default=None,
                       help="where the GPU backend keeps device-ready keys (default $GROTH16_KEY_CACHE, else "
                            "$XDG_CACHE_HOME (or ~/.cache)/groth16-engine/keys; 'off' for none)")
    cache.add_argument("--no-key-cache", dest="key_cache_dir", action="store_const", const="off",
                       help="neither read nor write the key cache")


def engine_flags_given(args: argparse.Namespace) -> list[str]:
    """The Engine-only flags (budgets, pools, locks, devices) given on the command line, as --names."""
    return ["--" + name.replace("_", "-") for name in ENGINE_ONLY_FLAGS if getattr(args, name, None) is not None]


# The flags that act only where a GPU proves (a --config file's values are left alone: one file may serve machines
# with and without a GPU).  On the CPU backend each was ignored without a word.
GPU_ONLY_FLAGS = ("devices", "vram_budget", "key_cache_dir")


def gpu_flags_given(args: argparse.Namespace) -> list[str]:
    """The GPU-only flags given on the command line, as their --names (--no-key-cache stores "off")."""
    given = []
    for name in GPU_ONLY_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            given.append("--no-key-cache" if name == "key_cache_dir" and value == "off"
                         else "--" + name.replace("_", "-"))
    return given


def gpu_flags_problem(args: argparse.Namespace, backend: str, gpus: int | None) -> tuple[str, str] | None:
    """("error" | "note", text) where GPU-only flags were given but the proof runs on the CPU: refused with
    --backend cpu, noted with auto on a machine with no CUDA device (`gpus`: its device count, None when not
    known, which says nothing); None where the flags act."""
    given = gpu_flags_given(args)
    if not given or backend not in ("cpu", "auto"):
        return None
    names, one = " and ".join(given), len(given) == 1
    if backend == "cpu":
        return "error", (f"{names} {'acts' if one else 'act'} only where a GPU proves; on the cpu backend this "
                         f"proof would ignore {'it' if one else 'them'}")
    if gpus == 0:
        return "note", f"no CUDA device here, so the CPU proves and {names} {'has' if one else 'have'} no effect"
    return None


class DirectSettings:
    """What `prove`'s direct path (one proof in this process: no --config, --timeline, --ray or Engine-only flag)
    reads of the flags, without the configuration's msgspec types (msgspec with typing_extensions: 42 ms of a cold
    CLI's 500 ms of imports on the H200's host, perf/RESULTS.md session 34).  The same values engine.config's
    from_args gives for such a line (tests/test_config_direct.py checks both); vram_budget is Engine-only, so None."""

    __slots__ = ("backend", "verify", "key_cache_dir")
    vram_budget = None

    def __init__(self, backend: str = "auto", verify: bool = True, key_cache_dir: str | None = None):
        self.backend, self.verify, self.key_cache_dir = backend, verify, key_cache_dir


def direct_settings(args: argparse.Namespace) -> DirectSettings:
    """The direct path's settings from the flags that were given (every default None: not given)."""
    given = {name: getattr(args, name, None) for name in ("backend", "verify", "key_cache_dir")}
    if given["key_cache_dir"] is not None and not given["key_cache_dir"].strip():
        from engine.errors import ConfigError  # noqa: PLC0415 - only for the error

        raise ConfigError(f"--key-cache-dir: {EMPTY_KEY_CACHE_DIR}")
    return DirectSettings(**{k: v for k, v in given.items() if v is not None})


def direct_path(args: argparse.Namespace) -> bool:
    """The line makes its one proof in this process, without the Engine (no --config, --timeline, --ray, --server
    or Engine-only flag)."""
    return not (getattr(args, "server", None) or getattr(args, "ray", None) or getattr(args, "timeline", None)
                or getattr(args, "config", None) or engine_flags_given(args))
