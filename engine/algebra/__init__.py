"""The CPU reference math (fields, curves, pairings, MSM, NTT): the oracle every kernel is checked against.

Imports nothing of the rest of the project.
"""
