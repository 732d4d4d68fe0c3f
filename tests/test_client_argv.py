"""engine/client_argv.py reads a plain `prove --server` line as prove's argparse parser does, and leaves
every other line to that parser."""
from __future__ import annotations

import random

import pytest

import cli
from engine.client_argv import UNSET, read_prove_server

ATTRS = ("server", "token_file", "priority", "deadline", "wasm", "input", "json", "quiet", "verbose", "zkey",
         "files", "engines", *UNSET)
PARSER = cli.build_parser(only="prove")


def argparse_reads(argv: list[str]):
    try:
        return PARSER.parse_args(argv)
    except SystemExit:
        return None


def same(argv: list[str]) -> bool:
    """True when the fast reader took the line; then argparse reads it, to the same values."""
    fast = read_prove_server(argv)
    if fast is None:
        return False
    full = argparse_reads(argv)
    assert full is not None, f"argparse refuses a line the fast reader took: {argv}"
    for name in ATTRS:
        assert getattr(fast, name) == getattr(full, name), (argv, name, getattr(fast, name), getattr(full, name))
    return True


@pytest.mark.parametrize("argv", [
    ["prove", "--server", "http://127.0.0.1:8080", "c.zkey", "w.wtns", "p.json", "q.json"],
    ["prove", "c.zkey", "w.wtns", "p.json", "q.json", "--server=http://h:1", "--json"],
    ["prove", "--server", "http://h", "--token-file", "t", "--priority", "high", "--deadline", "2.5", "--verbose",
     "c.zkey", "w.wtns", "p.json", "q.json"],
    ["prove", "--server", "u", "--wasm", "c.wasm", "--input=in.json", "c.zkey", "p.json", "q.json", "--quiet"],
    ["prove", "--server", "u", "--deadline", "1e3", "--priority", "low", "--priority", "normal", "c", "w", "p", "q"],
    ["prove", "--server", "u", "--deadline=inf", "-", "w", "p", "q"],
])
def test_plain_lines_read_alike(argv):
    assert same(argv)


@pytest.mark.parametrize("argv", [
    ["prove", "--serv", "u", "c", "w", "p", "q"],                     # an abbreviation: argparse's
    ["prove", "--server", "u", "--help"],
    ["prove", "--server", "u", "-h", "c", "w", "p", "q"],
    ["prove", "--server", "u", "--json", "--quiet", "c", "w", "p", "q"],  # exclusive: argparse's error
    ["prove", "--server", "u", "--priority", "urgent", "c", "w", "p", "q"],
    ["prove", "--server", "u", "--deadline", "soon", "c", "w", "p", "q"],
    ["prove", "--server", "u", "--deadline", "-1", "c", "w", "p", "q"],
    ["prove", "--server", "u", "--deadline=", "c", "w", "p", "q"],
    ["prove", "--server", "u", "c", "w", "--json", "p", "q"],             # files split by a flag
    ["prove", "--server", "u", "c", "w", "p"],                            # one file short
    ["prove", "--server", "u", "--wasm", "c.wasm", "c", "p", "q"],        # --wasm without --input
    ["prove", "--server", "u", "--r1cs", "c.r1cs", "c", "w", "p", "q"],   # a local-only flag: the client refuses it
    ["prove", "--server", "u", "--", "c", "w", "p", "q"],
    ["prove", "--server"],
    ["verify", "--server", "u", "a", "b", "c"],
])
def test_other_lines_go_to_argparse(argv):
    assert read_prove_server(argv) is None


def test_random_lines_never_read_differently():
    """Lines built from the flags, their values (good and bad) and files in random orders: whatever the
    fast reader takes, argparse reads to the same values; and it takes a good share of them."""
    rng = random.Random(7)
    flags = [["--server", "http://h:8"], ["--server=http://x"], ["--token-file", "tok"], ["--priority", "high"],
             ["--priority=low"], ["--priority", "bad"], ["--deadline", "3"], ["--deadline=0.5"], ["--deadline", "x"],
             ["--json"], ["--quiet"], ["--verbose"], ["--wasm", "c.wasm"], ["--input", "i.json"], ["--serv", "h"],
             ["--r1cs", "r"], ["--deadline", "-2"], ["-"], ["--verbose=1"]]
    taken = 0
    for _ in range(3000):
        parts = [rng.choice(flags) for _ in range(rng.randint(0, 4))]
        parts.insert(rng.randint(0, len(parts)), ["--server", "http://127.0.0.1:9"])
        files = [f"f{k}" for k in range(rng.choice((2, 3, 4, 4, 4, 5)))]
        at = rng.randint(0, len(parts))
        line = [tok for part in parts[:at] for tok in part] + files + [tok for part in parts[at:] for tok in part]
        if rng.random() < 0.1 and len(files) > 1:
            line.insert(line.index(files[1]), "--json")  # a flag inside the files
        taken += same(["prove", *line])
    assert taken > 300
