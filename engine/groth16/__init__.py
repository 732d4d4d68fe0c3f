"""The Groth16 proof system, one phase a module: setup, prover, verifier, the proof and its checks."""
