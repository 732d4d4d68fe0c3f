"""`prove --ray`'s ends that race with Ray: what Ray leaves to run after the command has said its last line.

Ctrl-C in the command's first second can cut off `import ray` halfway (as can a broken install): Ray's exit hook,
registered by the part that was imported, then failed at the exit with a traceback after the command's error
line.  The cut is made here where a Ctrl-C lands by chance (a module of Ray's that raises as it is imported), so
that the test does not depend on the timing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

# the CLI as `python -m engine` runs it, with a Ctrl-C (or an ImportError) as Ray's package imports its next module
# once its worker module (which registers Ray's exit hook) has been imported whole
CUT_OFF_IMPORT = r"""
import os, runpy, sys

class CutOff:
    def find_spec(self, name, path=None, target=None):
        worker = sys.modules.get("ray._private.worker")
        if name.startswith("ray.") and worker is not None and not getattr(worker.__spec__, "_initializing", 1):
            raise {"KeyboardInterrupt": KeyboardInterrupt, "ImportError": ImportError}[os.environ["CUT_BY"]]
        return None

sys.meta_path.insert(0, CutOff())
sys.argv[0] = "engine"
runpy.run_module("engine", run_name="__main__", alter_sys=True)
"""

INTERRUPTED = {"event": "error", "error": "Interrupted", "message": "interrupted", "exit_code": 130}
NO_RAY = {"event": "error", "error": "BackendUnavailableError", "exit_code": 2,  # (a broken install's, as it is)
          "message": "Ray is installed but its import failed: importing ray: ImportError (a broken install? pip "
                     "install --force-reinstall ray)"}


@pytest.mark.parametrize("cut_by, json_flag, code, said", [("KeyboardInterrupt", True, 130, INTERRUPTED),
                                                           ("KeyboardInterrupt", False, 130, "interrupted"),
                                                           ("ImportError", True, 2, NO_RAY)])
def test_an_import_of_ray_cut_off_ends_with_the_commands_line_only(tmp_path, cut_by, json_flag, code, said):
    """Before: "Exception ignored in atexit callback: <function shutdown ...>" and Ray's traceback (by chance's
    Ctrl-C: "AttributeError: module 'ray' has no attribute 'actor'") came after the error line or object."""
    d = EXAMPLES / "bn128"
    run = subprocess.run([sys.executable, "-c", CUT_OFF_IMPORT, "prove", "--ray", "local", "--backend", "cpu",
                          *(["--json"] if json_flag else []), str(d / "sudoku.zkey"), str(d / "sudoku.wtns"),
                          str(tmp_path / "proof.json"), str(tmp_path / "public.json")], cwd=REPO, capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, timeout=120, env={**os.environ, "CUT_BY": cut_by})
    assert (run.returncode, run.stdout) == (code, ""), (run.returncode, run.stdout, run.stderr)
    if json_flag:
        assert [json.loads(line) for line in run.stderr.splitlines()] == [said], run.stderr
    else:
        assert run.stderr == said + "\n", run.stderr
    assert not (tmp_path / "proof.json").exists()
