"""Progress.note: a line the user should read while a command runs (the first run's kernel compile), on the line
above a terminal's bar, as a JSON event with --json, and nowhere with --quiet."""
from __future__ import annotations

import io
import json

from engine.progress import BarProgress, JsonProgress, make_progress


def test_a_note_goes_above_the_bar_which_is_drawn_again():
    out = io.StringIO()
    bar = BarProgress("prove", out)
    bar.stage("kernel module", 0.33)
    bar.note("compiling the bn128 kernels")
    bar.stage("load key", 0.35)
    text = out.getvalue()
    before, after = text.split("compiling the bn128 kernels\n")
    assert before.endswith("\r") and "kernel module" in before  # the bar was cleared first
    assert "load key" in after and "[" in after  # and drawn again below the note


def test_a_note_is_a_json_event_and_silent_when_quiet():
    out = io.StringIO()
    progress = JsonProgress(out)
    progress.note("compiling the bn128 kernels")
    (event,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert event["event"] == "note" and event["text"] == "compiling the bn128 kernels" and event["t"] >= 0
    quiet = io.StringIO()
    make_progress("prove", quiet=True, stream=quiet).note("compiling")
    assert quiet.getvalue() == ""
