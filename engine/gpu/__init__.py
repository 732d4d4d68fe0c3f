"""The GPU backend (cuda-python driver API + NVRTC kernels from cuda_kernels/)."""
from .backend import GpuBackend

__all__ = ["GpuBackend"]
