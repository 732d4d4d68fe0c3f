"""Kernel builds made here, carried to the GPU machine, so that a device call measures instead
of compiling (BN254 ~65 s, BLS12-381 ~110 s there).

    python scripts/carry_kernels.py build DIR NAME=TREE...    # here: NVRTC builds of each TREE's kernels
    python scripts/carry_kernels.py install DIR NAME=TREE...  # there: the builds under that NVRTC's keys

The disk cache (cuda_kernels/build.py) keys a build by its sources, params, options and the
NVRTC version; the GPU machine's NVRTC may differ from this one's, so `install` files each
carried CUBIN under the key that machine computes for the same sources and keeps it only if
the driver loads it (a CUBIN for sm_90 needs no JIT; one the driver refuses is dropped, and
the cache then builds it there as usual).  A NAME is the same tree here and there (its path
may differ); DIR/map.json: {"NAME|curve": key here}.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

CURVES = ("bn128", "bls12381")
ARCH = "sm_90"

KEY = """
import sys
from engine.algebra.curves import curve_by_name
from engine.backends.gpu.params import params_header
from cuda_kernels.build import DEFAULT_OPTIONS, cache_key, compile_cubin
p = params_header(curve_by_name(sys.argv[1]))
if sys.argv[2] == "build":
    compile_cubin(p, arch="%s")
print(cache_key(p, "%s", DEFAULT_OPTIONS))
""" % (ARCH, ARCH)


def key_of(tree: str, curve: str, cache: Path, build: bool) -> str:
    extra = os.environ.get("PYTHONPATH", "")  # the GPU machine's carried wheels
    env = {**os.environ, "PYTHONPATH": tree + (":" + extra if extra else ""), "GROTH16_KERNEL_CACHE": str(cache),
           "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", KEY, curve, "build" if build else "key"], cwd=tree, env=env,
                         check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def build(cache: Path, trees: dict[str, str]) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for name, tree in trees.items():
        for curve in CURVES:
            mapping[f"{name}|{curve}"] = key_of(tree, curve, cache, build=True)
            print(name, curve, mapping[f"{name}|{curve}"], flush=True)
    (cache / "map.json").write_text(json.dumps(mapping, indent=1))


def loads(path: Path) -> bool:
    """False only when the driver answers the load with an error (a CUBIN it refuses); a check
    that cannot run keeps the build (the cache would rebuild a bad one's load error anyway)."""
    try:
        from cuda.bindings import driver as cu

        cu.cuInit(0)
        _, dev = cu.cuDeviceGet(0)
        _, ctx = cu.cuDevicePrimaryCtxRetain(dev)
        cu.cuCtxSetCurrent(ctx)
        err, mod = cu.cuModuleLoadData(path.read_bytes())
    except Exception as exc:  # noqa: BLE001 - report and keep
        print(f"load check not run: {exc!r}", flush=True)
        return True
    if int(err) != 0:
        print(f"{path.name}: cuModuleLoadData {err}", flush=True)
        return False
    cu.cuModuleUnload(mod)
    return True


def install(cache: Path, trees: dict[str, str]) -> None:
    mapping = json.loads((cache / "map.json").read_text())
    for entry, local in mapping.items():
        name, curve = entry.split("|")
        tree = trees.get(name, "")
        if not tree or not Path(tree).is_dir():
            print(f"{entry}: no tree here", flush=True)
            continue
        there = key_of(tree, curve, cache, build=False)
        src, dst = cache / f"{local}.cubin", cache / f"{there}.cubin"
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
