"""The GPU backend's public name (implementation in engine/gpu/)."""
from .gpu import GpuBackend

__all__ = ["GpuBackend"]
