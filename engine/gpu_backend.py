"""The GPU backend's public names (implementation in engine/gpu/)."""
from .gpu import GpuBackend, GpuSetupOps

__all__ = ["GpuBackend", "GpuSetupOps"]
