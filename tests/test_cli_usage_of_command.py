"""An argument a command does not take: argparse's top-level parser reported it, with the top level's usage
(`usage: python -m engine [-h] COMMAND ...`), which does not show the flags the command does take."""
from __future__ import annotations

import json

import pytest

import cli


@pytest.mark.parametrize("argv, command", [
    (["cache", "list", "--key-cache-dir", "/tmp/x"], "cache"),
    (["prove", "k.zkey", "w.wtns", "p.json", "pub.json", "--bogus"], "prove"),
    (["verify", "vk.json", "pub.json", "p.json", "extra.json"], "verify"),
    (["info", "--devices", "0", "k.zkey"], "info"),
])
def test_an_argument_a_command_does_not_take_shows_that_commands_usage(capsys, argv, command):
    with pytest.raises(SystemExit) as leaving:
        cli.main(argv)
    assert leaving.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: python -m engine {command} "), err
    assert f"\npython -m engine {command}: error: unrecognized arguments: " in err, err


def test_with_json_it_stays_one_json_line(capsys):
    with pytest.raises(SystemExit) as leaving:
        cli.main(["cache", "--json", "list", "--key-cache-dir", "/tmp/x"])
    assert leaving.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert json.loads(line) == {"event": "error", "error": "UsageError", "exit_code": 2,
                                "message": "unrecognized arguments: --key-cache-dir /tmp/x"}


def test_no_command_still_shows_the_top_level(capsys):
    with pytest.raises(SystemExit) as leaving:
        cli.main(["--bogus"])
    assert leaving.value.code == 2
    assert capsys.readouterr().err.startswith("usage: python -m engine [-h] [--version] COMMAND ...")
