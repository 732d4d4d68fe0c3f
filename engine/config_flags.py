"""The engine's command-line flags, apart from engine/config.py so that building a parser (every CLI
command, `--help`, the service's client) does not import msgspec and the configuration's types."""
from __future__ import annotations

import argparse

BACKENDS = ("auto", "cpu", "gpu", "simulated")
LOCK_MODES = ("split", "single")
PROVING_BACKENDS = ("auto", "cpu", "gpu")  # what a command that writes real proofs offers ("simulated" makes none)
ENGINE_ONLY_FLAGS = ("synthesis_workers", "compute_slots", "vram_budget", "host_budget", "lock_mode", "devices")


def add_arguments(parser: argparse.ArgumentParser, *, backends: tuple[str, ...] = BACKENDS) -> None:
    """The engine's flags; every default is None so that only given flags override the file.

    backends: the --backend choices offered (a command that writes proofs leaves out "simulated").
    """
    g = parser.add_argument_group("engine")
    g.add_argument("--config", metavar="FILE", help="engine configuration (TOML)")
    g.add_argument("--backend", choices=backends, default=None, help="where the heavy stages run (default auto)")
    g.add_argument("--devices", metavar="LIST", default=None, help="GPU indices, e.g. 0,1 (default: all)")
    g.add_argument("--synthesis-workers", type=int, metavar="N", default=None,
                   help="processes that compute or read witnesses (default 2)")
    g.add_argument("--compute-slots", type=int, metavar="K", default=None, help="compute slots per device")
    g.add_argument("--vram-budget", metavar="SIZE", default=None, help="device memory per device for proofs")
    g.add_argument("--host-budget", metavar="SIZE", default=None, help="host memory for waiting witnesses")
    g.add_argument("--lock-mode", choices=LOCK_MODES, default=None,
                   help="split: a memory lock and compute slots per device (default); single: one lock over "
                        "both phases (for comparisons)")
    g.add_argument("--verify", dest="verify", action="store_true", default=None,
                   help="verify every proof before returning it (default)")
    g.add_argument("--no-verify", dest="verify", action="store_false",
                   help="skip that check (faster; a wrong proof is then not caught before it is written)")
    g.add_argument("--timeline", metavar="FILE", default=None, help="write every stage as JSON lines to FILE")
    g.add_argument("--key-cache-dir", metavar="DIR", default=None,
                   help="where the GPU backend keeps device-ready keys (default $GROTH16_KEY_CACHE, else "
                        "~/.cache/groth16-engine/keys; 'off' for none)")
    g.add_argument("--no-key-cache", dest="key_cache_dir", action="store_const", const="off",
                   help="neither read nor write the key cache")


def engine_flags_given(args: argparse.Namespace) -> list[str]:
    """The Engine-only flags (budgets, pools, locks, devices) given on the command line, as --names."""
    return ["--" + name.replace("_", "-") for name in ENGINE_ONLY_FLAGS if getattr(args, name, None) is not None]
