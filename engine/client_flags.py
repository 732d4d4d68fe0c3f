"""prove's --server flags: apart from engine/client.py (its HTTP code) and engine/client_argv.py (the plain
line's reader), so that building prove's parser for a local proof imports neither, and neither imports the
other."""
from __future__ import annotations

import math

PRIORITIES = ("high", "normal", "low")


def _server_url(value: str) -> str:
    """An empty --server (`--server "$URL"`, URL unset) was read as none: the proof ran here, without a word."""
    if not value.strip():
        from argparse import ArgumentTypeError  # noqa: PLC0415 - argparse is loaded where this runs

        raise ArgumentTypeError("an empty URL (expected http://HOST:PORT or https://HOST:PORT)")
    return value


# what a number of seconds is written with (float() also took '٣' as 3 and '1_0' as 10, and 'nan')
_DECIMAL_CHARS = frozenset("0123456789+-.eE")
_NO_DEADLINE = ("inf", "+inf", "infinity", "+infinity")


def _deadline_seconds(value: str) -> tuple[float | None, str]:
    """(seconds, "") for a good --deadline (inf: none, as leaving it out), else (None, why not)."""
    text = value.strip()  # (spaces around it: as float() and the count flags take them)
    if text.lower() in _NO_DEADLINE:
        return math.inf, ""
    seconds = math.nan
    if set(text) <= _DECIMAL_CHARS:
        try:
            seconds = float(text)
        except ValueError:  # '', '1e', '+-5', '1.2.3'
            pass
    if seconds == math.inf:  # 1e400: more digits than a float holds, not the word that means none
        return None, "is more seconds than a float holds (inf: no deadline)"
    if not seconds > 0:  # nan: none of the above; 0 and -1 (-1e400 too)
        return None, "is not a number of seconds > 0 (inf: no deadline)"
    return seconds, ""


def deadline_value(value: str) -> float | None:
    """--deadline's seconds (> 0 and finite, written in ASCII digits; inf: none), or None: -1, 0 or NaN went to the
    server, refused once the key had loaded, and float() took '٣' and '1_0' as 3 and 10, and 1e400 as none."""
    return _deadline_seconds(value)[0]


def _deadline(value: str) -> float:
    seconds, problem = _deadline_seconds(value)
    if seconds is None:
        from argparse import ArgumentTypeError  # noqa: PLC0415 - argparse is loaded where this runs

        from engine.config_flags import quoted_value  # noqa: PLC0415 - loaded where this runs (prove's parser)

        raise ArgumentTypeError(f"{quoted_value(value)} {problem}")
    return seconds


def add_server_arguments(parser) -> None:
    """--server URL, --token-file, --priority, --deadline."""
    g = parser.add_argument_group("server (prove through `python -m engine serve`)")
    g.add_argument("--server", metavar="URL", default=None, type=_server_url,
                   help="prove on this server (e.g. http://127.0.0.1:8080); it loads the key by path on first use")
    g.add_argument("--token-file", metavar="FILE", default=None, help="the bearer token for --server")
    g.add_argument("--priority", choices=PRIORITIES, default=None, help="with --server (default normal)")
    g.add_argument("--deadline", type=_deadline, metavar="S", default=None,
                   help="with --server: cancel the proof if it has not finished after S seconds (inf: none, as "
                        "without it)")


# prove's flags that act only with --server or only with --ray (attribute, flag, the flag they need): a proof
# without that flag refuses them, as prove_command refuses the local ones with --server, so that a --deadline is
# never one that cancels nothing
REMOTE_ONLY = (("token_file", "--token-file", "--server"), ("priority", "--priority", "--server"),
               ("deadline", "--deadline", "--server"), ("engines", "--engines", "--ray"))

# prove's flags that configure a local proof: prove_command refuses them with --server
LOCAL_ONLY = ("r1cs", "timeline", "config", "backend", "devices", "synthesis_workers", "compute_slots",
               "vram_budget", "host_budget", "lock_mode", "verify")
