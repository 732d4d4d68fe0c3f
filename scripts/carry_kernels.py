"""Kernel builds made here, carried to the GPU machine, so that a device call measures instead
of compiling (BN254 ~65 s, BLS12-381 ~110 s there).

    python scripts/carry_kernels.py build DIR NAME=TREE...    # here: NVRTC builds of each TREE's kernels
    python scripts/carry_kernels.py install DIR NAME=TREE...  # there: the builds under that NVRTC's keys
    CARRY_CURVES=bls12381 python scripts/carry_kernels.py build ...  # one curve's builds only

The disk cache (cuda_kernels/build.py) keys a build by its sources, params, options and the
NVRTC version; the GPU machine's NVRTC may differ from this one's, so `install` files each
carried CUBIN under the key that machine computes for the same sources and keeps it only if
the driver loads it (a CUBIN for sm_90 needs no JIT; one the driver refuses is dropped, and
the cache then builds it there as usual).  A NAME is the same tree here and there (its path
may differ); DIR/map.json: {"NAME|curve": [key here, source digest]}: a build goes only to a
tree of the same sources.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

CURVES = tuple(os.environ.get("CARRY_CURVES", "bn128,bls12381").split(","))  # CARRY_CURVES=bls12381: one curve
ARCH = "sm_90"

# prints the cache key and a digest of what the build compiles (sources, params, options:
# the key without the NVRTC version), so that a build is carried only to the same sources
KEY = """
import hashlib, sys
from engine.algebra.curves import curve_by_name
from engine.backends.gpu.params import params_header
from cuda_kernels.build import DEFAULT_OPTIONS, cache_key, compile_cubin, sources
p = params_header(curve_by_name(sys.argv[1]))
if sys.argv[2] == "build":
    compile_cubin(p, arch="%s")
h = hashlib.sha256()
for name, text in sources().items():
    h.update(name.encode() + b"\\0" + text.encode() + b"\\0")
h.update(p.encode() + b"\\0" + "\\0".join(DEFAULT_OPTIONS).encode())
print(cache_key(p, "%s", DEFAULT_OPTIONS), h.hexdigest()[:32])
""" % (ARCH, ARCH)


def key_of(tree: str, curve: str, cache: Path, build: bool) -> list[str]:
    """[cache key, source digest] of `tree`'s build for `curve`."""
    extra = os.environ.get("PYTHONPATH", "")  # the GPU machine's carried wheels
    env = {**os.environ, "PYTHONPATH": tree + (":" + extra if extra else ""), "GROTH16_KERNEL_CACHE": str(cache),
           "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", KEY, curve, "build" if build else "key"], cwd=tree, env=env,
                         check=True, capture_output=True, text=True)
    return parse_keys(out.stdout)


def parse_keys(stdout: str) -> list[str]:
    """The last two 32-hex-digit tokens the KEY snippet printed: [cache key, source digest].  A compile's
    log can precede them and end in a NUL (NVRTC's C string), which once joined the two in map.json."""
    tokens = re.findall(r"[0-9a-f]{32}", stdout)
    if len(tokens) < 2:
        raise RuntimeError(f"carry_kernels: no cache key and digest in {stdout[-200:]!r}")
    return tokens[-2:]


def build(cache: Path, trees: dict[str, str]) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for name, tree in trees.items():
        for curve in CURVES:
            mapping[f"{name}|{curve}"] = key_of(tree, curve, cache, build=True)  # [key, digest]
            print(name, curve, mapping[f"{name}|{curve}"], flush=True)
    (cache / "map.json").write_text(json.dumps(mapping, indent=1))


def loads(path: Path) -> bool:
    """False only when the driver refuses the CUBIN; a check that cannot run (no device here)
    keeps the build (the cache would meet a bad one's load error anyway)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from cuda_kernels.driver import Device, Module  # noqa: PLC0415 - the project's one door to the driver

    try:
        Device(0)
    except Exception as exc:  # noqa: BLE001 - report and keep
        print(f"load check not run: {exc!r}", flush=True)
        return True
    try:
        Module(path.read_bytes())
    except Exception as exc:  # noqa: BLE001 - the driver's refusal
        print(f"{path.name}: {exc}", flush=True)
        return False
    return True


def install(cache: Path, trees: dict[str, str]) -> None:
    mapping = json.loads((cache / "map.json").read_text())
    for entry, value in mapping.items():
        local, digest = parse_keys(" ".join(value))
        name, curve = entry.split("|")
        tree = trees.get(name, "")
        if not tree or not Path(tree).is_dir():
            print(f"{entry}: no tree here", flush=True)
            continue
        there, digest_there = key_of(tree, curve, cache, build=False)
        src, dst = cache / f"{local}.cubin", cache / f"{there}.cubin"
        if digest_there != digest:
            print(f"{entry}: the tree here is not the one built (builds here)", flush=True)
            continue
        if there != local and src.exists() and not dst.exists():
            shutil.copyfile(src, dst)
        ok = dst.exists() and loads(dst)
        if dst.exists() and not ok:
            dst.unlink()
        print(f"{entry}: {'carried build loads' if ok else 'no usable carried build (builds here)'} ({there})",
              flush=True)


if __name__ == "__main__":
    named = dict(a.split("=", 1) for a in sys.argv[3:])
    named = {k: str(Path(v).resolve()) for k, v in named.items()}
    (build if sys.argv[1] == "build" else install)(Path(sys.argv[2]).resolve(), named)
