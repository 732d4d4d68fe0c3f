"""Which verification keys have had every point checked (on its curve, in its subgroup): a scalar multiplication
a point, so the reader (engine.formats.json.read_vkey) and the verifier share this record instead of checking
a key twice.  Apart from both so that neither imports the other."""
from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from engine.groth16.proof import VerificationKey

_lock = Lock()
_checked: OrderedDict = OrderedDict()  # the last 64 keys whose points passed the checks


def _vk_id(vk: VerificationKey) -> tuple:
    return (vk.curve.name, vk.alpha1, vk.beta2, vk.gamma2, vk.delta2, tuple(vk.ic))


def was_checked(vk: VerificationKey) -> bool:
    with _lock:
        return _vk_id(vk) in _checked


def note_checked(vk: VerificationKey) -> None:
    """Remember a key whose every point was found on its curve and in its subgroup."""
    with _lock:
        _checked[_vk_id(vk)] = True
        while len(_checked) > 64:
            _checked.popitem(last=False)
