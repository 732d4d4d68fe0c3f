"""The instruction mix of built kernels, from their SASS: no GPU needed.

    python perf/sass_mix.py --curve bn128 --kernels msm_accumulate_g1s,msm_accumulate_g1i
    python perf/sass_mix.py --cubin .kcache/<key>.cubin --kernels msm_accumulate_g1s

Per kernel: registers, instructions, wide products (IMAD.WIDE*), the other IMAD-pipe instructions
(IMAD, IMAD.X, IMAD.HI, IMAD.MOV: the pipe a wide product saturates), IMAD.MOV and MOV (register
moves, on the multiplier pipe and the ALU pipe), calls, and local-memory traffic.  The counts are
static (each instruction of the kernel and the functions it calls, once): what a build change does
to the code, not how fast it runs.  --curve builds (or takes from the disk cache) the tree's kernels
for that curve with NVRTC; the SASS comes from cuobjdump (CUDA's, or pip's nvidia-cuda-cuobjdump).
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from script_args import Parser, curve_name, input_file, run_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OP = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)")


def cuobjdump() -> str:
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import nvidia  # noqa: PLC0415

        for base in nvidia.__path__:
            for cand in Path(base).glob("*/bin/cuobjdump"):
                return str(cand)
    except ImportError:
        pass
    # exit 2 and the script's name, as every other refusal of these scripts (sys.exit(str) was exit 1)
    print("sass_mix.py: cuobjdump not found: install the CUDA toolkit or `pip install nvidia-cuda-cuobjdump`",
          file=sys.stderr)
    raise SystemExit(2)


def cubin_for(curve_name: str) -> bytes:
    from cuda_kernels.build import compile_cubin  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu.params import params_header  # noqa: PLC0415

    cubin, _log = compile_cubin(params_header(curve_by_name(curve_name)))
    return cubin


def _tool(tool: str, flag: str, cubin: Path) -> str:
    """cuobjdump's output; a file it cannot read (no CUBIN) is one line naming the file, exit 2, not a
    CalledProcessError's traceback."""
    proc = subprocess.run([tool, flag, str(cubin)], capture_output=True, text=True)
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        print(f"{Path(sys.argv[0]).name}: {cubin}: cuobjdump could not read it ({said})", file=sys.stderr)
        raise SystemExit(2)
    return proc.stdout


def mix(cubin: Path, kernels: list[str]) -> list[dict]:
    tool = cuobjdump()
    sass, usage = (_tool(tool, flag, cubin) for flag in ("-sass", "-res-usage"))
    regs = dict(re.findall(r"Function (\w+):\s*\n\s*REG:(\d+)", usage))
    rows = []
    for body in re.split(r"\n\s*Function : ", sass)[1:]:
        name = body.split("\n", 1)[0].strip()
        if kernels and name not in kernels:
            continue
        ops = collections.Counter(m.group(1) for m in map(OP.match, body.split("\n")) if m)
        wide = sum(v for k, v in ops.items() if k.startswith("IMAD.WIDE"))
        rows.append({
            "kernel": name, "regs": int(regs.get(name, 0)), "instructions": sum(ops.values()), "wide": wide,
            "imad_other": sum(v for k, v in ops.items() if k.startswith("IMAD") and not k.startswith("IMAD.WIDE")),
            "imad_mov": ops["IMAD.MOV.U32"], "mov": ops["MOV"], "calls": ops["CALL.REL.NOINC"],
            "local": sum(v for k, v in ops.items() if k.startswith(("LDL", "STL"))),
        })
    return rows


def main() -> int:
    ap = Parser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--cubin", type=input_file, help="a built CUBIN")
    src.add_argument("--curve", type=curve_name, help="build this tree's kernels for the curve (bn128, bls12381)")
    ap.add_argument("--kernels", default="", help="comma list of kernel names (default: every kernel)")
    args = ap.parse_args()
    kernels = [k for k in args.kernels.split(",") if k]
    if args.cubin:
        rows = mix(Path(args.cubin), kernels)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "k.cubin"
            path.write_bytes(cubin_for(args.curve))
            rows = mix(path, kernels)
    missing = set(kernels) - {r["kernel"] for r in rows}
    if missing:
        print(f"not in the build: {', '.join(sorted(missing))}", file=sys.stderr)
    cols = ["kernel", "regs", "instructions", "wide", "imad_other", "imad_mov", "mov", "calls", "local"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return 1 if missing else 0


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(run_main(main))
