"""prove's direct path reads its flags without engine.config (engine/config_flags.direct_settings): for every
line that takes that path it must give what engine.config.from_args gives, and no other line may take it."""
from __future__ import annotations

import itertools

import pytest

from cli import build_parser
from engine.config import from_args
from engine.config_flags import direct_path, direct_settings

FILES = ["k.zkey", "w.wtns", "p.json", "q.json"]
BACKENDS = [[], ["--backend", "auto"], ["--backend", "gpu"], ["--backend", "cpu"]]
VERIFY = [[], ["--verify"], ["--no-verify"]]
CACHE = [[], ["--no-key-cache"], ["--key-cache-dir", "/tmp/keys"], ["--key-cache-dir", "off"]]
OTHER = [[], ["--quiet"], ["--verbose"], ["--r1cs", "c.r1cs"]]


def _parse(*argv: str):
    return build_parser(only="prove").parse_args(["prove", *argv])


@pytest.mark.parametrize("backend, verify, cache, other", list(itertools.product(BACKENDS, VERIFY, CACHE, OTHER)))
def test_direct_settings_match_from_args(backend, verify, cache, other):
    args = _parse(*backend, *verify, *cache, *other, *FILES)
    assert direct_path(args)
    mine, theirs = direct_settings(args), from_args(args)
    assert (mine.backend, mine.verify, mine.key_cache_dir, mine.vram_budget) == \
        (theirs.backend, theirs.verify, theirs.key_cache_dir, theirs.vram_budget)


@pytest.mark.parametrize("flags", [
    ["--config", "engine.toml"], ["--timeline", "t.jsonl"], ["--vram-budget", "8GiB"], ["--host-budget", "1GiB"],
    ["--synthesis-workers", "2"], ["--compute-slots", "2"], ["--lock-mode", "single"], ["--devices", "0"],
    ["--server", "http://127.0.0.1:1"], ["--ray", "auto"],
])
def test_lines_for_the_engine_server_or_ray_do_not_take_the_direct_path(flags):
    assert not direct_path(_parse(*flags, *FILES))
