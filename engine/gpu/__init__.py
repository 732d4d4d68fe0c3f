"""The GPU backend (cuda-python driver API + NVRTC kernels from cuda_kernels/)."""
from .backend import GpuBackend
from .setup_ops import GpuSetupOps

__all__ = ["GpuBackend", "GpuSetupOps"]
