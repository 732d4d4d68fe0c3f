"""The GPU backend (cuda-python driver API + NVRTC kernels from cuda_kernels/).

`GpuSetupOps` (development setups) loads on first use (PEP 562): a proof's cold
start imports the backend without the setup's modules.
"""
from engine.backends.gpu.backend import GpuBackend

__all__ = ["GpuBackend", "GpuSetupOps"]


def __getattr__(name: str):
    if name == "GpuSetupOps":
        from engine.backends.gpu.setup_points import GpuSetupOps  # noqa: PLC0415

        globals()[name] = GpuSetupOps
        return GpuSetupOps
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
