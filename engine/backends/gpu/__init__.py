"""The GPU backend (cuda-python driver API + NVRTC kernels from cuda_kernels/)."""
from engine.backends.gpu.backend import GpuBackend
from engine.backends.gpu.setup_points import GpuSetupOps

__all__ = ["GpuBackend", "GpuSetupOps"]
