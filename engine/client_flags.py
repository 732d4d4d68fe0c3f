"""prove's --server flags: apart from engine/client.py (its HTTP code) and engine/client_argv.py (the plain
line's reader), so that building prove's parser for a local proof imports neither, and neither imports the
other."""
from __future__ import annotations

PRIORITIES = ("high", "normal", "low")


def add_server_arguments(parser) -> None:
    """--server URL, --token-file, --priority, --deadline."""
    g = parser.add_argument_group("server (prove through `python -m engine serve`)")
    g.add_argument("--server", metavar="URL", default=None,
                   help="prove on this server (e.g. http://127.0.0.1:8080); it loads the key by path on first use")
    g.add_argument("--token-file", metavar="FILE", default=None, help="the bearer token for --server")
    g.add_argument("--priority", choices=PRIORITIES, default=None, help="with --server (default normal)")
    g.add_argument("--deadline", type=float, metavar="S", default=None,
                   help="with --server: cancel the proof if it has not finished after S seconds")


# prove's flags that act only with --server or only with --ray (attribute, flag, the flag they need): a proof
# without that flag refuses them, as prove_command refuses the local ones with --server, so that a --deadline is
# never one that cancels nothing
REMOTE_ONLY = (("token_file", "--token-file", "--server"), ("priority", "--priority", "--server"),
               ("deadline", "--deadline", "--server"), ("engines", "--engines", "--ray"))

# prove's flags that configure a local proof: prove_command refuses them with --server
LOCAL_ONLY = ("r1cs", "timeline", "config", "backend", "devices", "synthesis_workers", "compute_slots",
               "vram_budget", "host_budget", "lock_mode", "verify")
