"""Pieces of the circom witness calculator; the public API is `engine.witness.calculator`."""
