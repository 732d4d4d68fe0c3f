"""A stop signal sent to the whole process group (a closed terminal's SIGHUP, Ctrl-\\'s SIGQUIT) while a pool starts.

multiprocessing's resource tracker ignores SIGINT and SIGTERM but died of SIGHUP and SIGQUIT; the clean-up
after the signal then relaunched it, and `prove --timeline ...` said "warning: resource_tracker: process died
unexpectedly, relaunching.  Some resources might leak." before its one `interrupted by SIGHUP` line.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO


@pytest.mark.parametrize("signame", ["SIGHUP", "SIGQUIT"])
def test_the_resource_tracker_outlives_a_stop_signal_to_the_group(signame):
    script = textwrap.dedent(f"""
        import multiprocessing, os, signal, sys, time
        sys.path.insert(0, {str(REPO)!r})
        from multiprocessing import resource_tracker
        from scheduler.processes import start_process

        process = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
        start_process(process)
        process.join()
        tracker = resource_tracker._resource_tracker._pid
        os.kill(tracker, signal.{signame})
        time.sleep(0.3)
        print("alive" if os.waitpid(tracker, os.WNOHANG) == (0, 0) else "dead")
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.stdout.strip() == "alive", (proc.stdout, proc.stderr)
    assert proc.stderr == ""
