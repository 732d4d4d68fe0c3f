"""The one line a GPU benchmark prints where this machine has no CUDA device, instead of the driver's traceback.

Each GPU script calls `require_gpu()` after its arguments are read (so `--help` still works anywhere).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def require_gpu(script: str | None = None) -> None:
    """Exit 2 with one line naming the script when no CUDA device can be used here.  Also the GPU scripts' one
    shared call: their stdout's reader that leaves (`| head`) ends them quietly with 141 (perf/pipe_exit.py)."""
    import pipe_exit  # noqa: PLC0415 - beside this file

    pipe_exit.install()
    from engine.backends.select import cuda_device_count  # noqa: PLC0415 - the engine's own test of a device

    if cuda_device_count() == 0:
        name = script or Path(sys.argv[0]).name
        print(f"{name}: needs a CUDA device; none found on this machine (no NVIDIA driver, or no device visible)",
              file=sys.stderr)
        raise SystemExit(2)
