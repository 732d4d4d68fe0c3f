"""Which backend a caller gets: "cpu", "gpu", or "auto" (the GPU where a CUDA device exists).

Apart from the seam (base.py) so that the base never imports the backends built on it.
"""
from __future__ import annotations

from typing import Any

from engine.backends.base import Backend


def cuda_device_count() -> int:
    """How many CUDA devices this process can use; 0 when there is no driver or device."""
    try:
        from cuda_kernels import driver  # noqa: PLC0415 - the only door to the CUDA driver

        return driver.device_count()
    except Exception:  # no cuda-python, no driver library (DynamicLibNotFoundError), no device
        return 0


def select_backend(name: str = "auto", **options: Any) -> Backend:
    """Make a backend by name: "cpu", "gpu", or "auto" (the GPU when a CUDA device exists)."""
    from engine.errors import BackendUnavailableError  # noqa: PLC0415

    if name not in ("auto", "cpu", "gpu"):
        raise BackendUnavailableError(f"unknown backend {name!r} (choose cpu, gpu or auto)")
    if name == "auto":
        name = "gpu" if cuda_device_count() > 0 else "cpu"
    if name == "gpu":
        if cuda_device_count() == 0:
            raise BackendUnavailableError("--backend gpu: no CUDA device found on this machine")
        from engine.backends.gpu import GpuBackend  # noqa: PLC0415

        return GpuBackend(**options)
    from engine.backends.cpu import CpuBackend  # noqa: PLC0415

    return CpuBackend(**options)
