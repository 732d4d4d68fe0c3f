"""An asyncio-native Groth16 proving engine (BN254, BLS12-381), compatible with circom/snarkjs."""
from .curves import BLS12_381, BN254, Curve, curve_by_name
from .errors import EngineError

__all__ = ["BN254", "BLS12_381", "Curve", "curve_by_name", "EngineError"]
