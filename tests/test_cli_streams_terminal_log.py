"""A circuit's log() lines on a terminal that shows the progress bar.

`witness` printed them with a plain logging handler while the bar was on the line: the log line was appended
to the bar (`witness [########---]  30.0%   0.03s calculate   circuit.wasm: log: hi 7`), and a shorter one left
the bar's tail behind it.  They are now written above the bar (cleared first), as the bar's notes are."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from conftest import REPO, circom_compile

pytestmark = pytest.mark.snarkjs


def test_a_circuit_log_line_on_a_terminal_is_a_line_of_its_own(tmp_path, node_bin):
    _, wasm = circom_compile(REPO / "tests" / "circuits" / "witness" / "noinputs.circom", "bn128", tmp_path)
    (tmp_path / "input.json").write_text("{}")
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "engine", "witness", str(wasm), "input.json", "w.wtns"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower, timeout=120,
                              cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"})
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert proc.returncode == 0, shown
    text = shown.decode()
    log = f"{wasm}: log: no inputs 7"
    assert log in text, text
    before = text[:text.index(log)]
    assert before.endswith("\r"), repr(before[-120:])  # the bar cleared, the line starts at the left edge
    assert before.rstrip("\r").endswith(" " * 20) or before == "\r", repr(before[-120:])
