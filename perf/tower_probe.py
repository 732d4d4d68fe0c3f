"""The tower's chains as a small kernel of their own, so variants of the tower can be built in
seconds and timed side by side in one device call (t13tower).

    python perf/tower_probe.py build OUT TREE [CURVES]   # here: OUT/<curve>.cubin of TREE's tower
    NVDISASM=... python perf/tower_probe.py sass OUT     # here: per-function SASS counts (nvdisasm)
    python perf/tower_probe.py ptx TREE [CURVE]          # here: branches per tower function in the PTX
    python perf/tower_probe.py time DIR...               # device: each DIR's cubins, chains timed

kernels.cu's groth16_pairing holds the whole pairing (and its tools) in one kernel that takes
NVRTC minutes; this one holds only the chains perf/pairing_latency.py times for the tower (Fq12
product, cyclotomic squaring, Fq12 squaring, product by a line, the two-warp Miller loop and
final exponentiation), over the same headers, so a variant of tower.cuh / fp2_group.cuh /
pairing.cuh builds in ~10 s (BN254) and its SASS can be read per function.  `time` also prints
a digest of every chain's result: variants that compute the same values print the same digests
(the tower's results must stay bit-identical).
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

SRC = r'''
#include "params.cuh"
#include "field.cuh"
#include "tower.cuh"
#include "pairing.cuh"
struct FQI_P : FQ_P { static constexpr bool MUL_OUT_OF_LINE = false; };
// as kernels.cu: the tail's product as even/odd chains
template <> struct product_traits<FQI_P> {
    static constexpr bool by_value = false, even_odd = true, split = false, inlined = false;
};
typedef fp<FQI_P> fqi_t;
constexpr bool DT = FQ_P::N == 8;
typedef pairing_ops<fp2g<fqi_t>, DT ? 9 : 1, DT> PAIR;
constexpr int PROBE_WORDS = PAIR::RING_WORDS > PAIR::DUO_WORDS ? PAIR::RING_WORDS : PAIR::DUO_WORDS;
// mode 0 Fq12 product, 1 cyclotomic squaring, 2 Fq12 squaring, 3 product by a line, 4 batch of
// ten Fq2 products, 5 Miller loop on two warps, 6 final exponentiation on two warps (64 threads)
extern "C" __global__ void __launch_bounds__(64) tower_probe(const uint32_t* consts, uint32_t mode, uint32_t iters,
                                                             const uint32_t* in, uint32_t* out) {
    __shared__ __align__(16) uint32_t pool[PROBE_WORDS];
    typedef PAIR::F12 F12;
    F12 x = F12::load(in), y = F12::load(in + F12::WORDS);
    PAIR::F2 u = PAIR::F2::load(in + 2 * F12::WORDS), v = PAIR::F2::load(in + 2 * F12::WORDS + PAIR::F2::WORDS);
    const PAIR::consts k = PAIR::make_consts(consts);
    __syncthreads();
    const uint64_t t0 = clock64();
    if (mode <= 3) {
        for (uint32_t i = 0; i < iters; i++)
            x = mode == 0 ? x * y : mode == 1 ? x.cyc_sqr() : mode == 2 ? x.sqr()
                                                           : PAIR::mul_scaled_line(x, {u, v, y.c1.c0});
    } else if (mode == 4) {
        PAIR::batch bt;
        for (uint32_t i = 0; i < iters; i++) {
            for (int j = 0; j < 10; j++) bt.put(j, u, v);
            bt.run(10);
            u = bt.get(i % 10);
        }
        x.c0.c0 = u;
    } else if (mode == 5) {
        for (uint32_t i = 0; i < iters; i++) {
            if (threadIdx.x == 0) pool[0] = pool[1] = pool[2] = 0;
            __syncthreads();
            if (threadIdx.x >= 32) PAIR::produce_lines(k, u.c0, v.c1, u, v, pool);
            else x = PAIR::consume_lines(k, pool) * x;
            __syncthreads();
        }
    } else {
        for (uint32_t i = 0; i < iters; i++) {
            if (threadIdx.x < 4) pool[threadIdx.x] = 0;
            __syncthreads();
            x = PAIR::final_exp(k, x * y, pool);
            __syncthreads();
        }
    }
    const uint64_t t1 = clock64();
    if (threadIdx.x == 0) {
        out[0] = (uint32_t)(t1 - t0), out[1] = (uint32_t)((t1 - t0) >> 32);
        x.store(out + 4);
    }
}
'''
MODES = ["fq12 mul", "cyclotomic sqr", "fq12 sqr", "fq12 x line", "batch of 10 fq2 mul", "miller loop (two warps)",
         "final exp (two warps)"]
NVDISASM = os.environ.get("NVDISASM", "nvdisasm")  # e.g. the nvidia-cuda-nvdisasm wheel's bin/nvdisasm


def build(out: Path, tree: Path, curves: list[str]) -> None:
    sys.path.insert(0, str(tree))
    from cuda_kernels.build import DEFAULT_OPTIONS, compile_source  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu.params import params_header  # noqa: PLC0415
    out.mkdir(parents=True, exist_ok=True)
    for c in curves:
        opts = [f"--include-path={tree}/cuda_kernels".encode()] + [o.encode() for o in DEFAULT_OPTIONS]
        cubin, _ = compile_source(SRC.encode(), "tower_probe.cu", {"params.cuh": params_header(curve_by_name(c)).encode()},
                                  "sm_90", opts)
        (out / f"{c}.cubin").write_bytes(cubin)


def ptx(tree: Path, curve: str) -> dict[str, str]:
    """The probe kernel's PTX for `curve` (NVRTC, no device needed): {function name: its body}."""
    sys.path.insert(0, str(tree))
    from cuda.bindings import nvrtc  # noqa: PLC0415
    from cuda_kernels.build import DEFAULT_OPTIONS, _check  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu.params import params_header  # noqa: PLC0415
    header = params_header(curve_by_name(curve)).encode()
    err, prog = nvrtc.nvrtcCreateProgram(SRC.encode(), b"tower_probe.cu", 1, [header], [b"params.cuh"])
    _check(err, "nvrtcCreateProgram")
    try:
        opts = [b"--gpu-architecture=compute_90", f"--include-path={tree}/cuda_kernels".encode(),
                *(o.encode() for o in DEFAULT_OPTIONS)]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _check(res, "nvrtcCompileProgram")
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        buf = bytearray(size)
        nvrtc.nvrtcGetPTX(prog, buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    text = bytes(buf).decode(errors="replace").replace("\0", "")
    funcs = {}
    for m in re.finditer(r"^\.func[^\n]*?(\S+)\($(.*?)^}", text, re.S | re.M):
        funcs[m.group(1)] = m.group(2)
    return funcs


def branches(body: str) -> int:
    """Branch instructions in a PTX function body."""
    return len(re.findall(r"^\s*(?:@%p\d+\s+)?bra(?:\.uni)?\s", body, re.M))


def sass(out: Path) -> None:
    for cubin in sorted(out.glob("*.cubin")):
        text = subprocess.run([NVDISASM, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
        funcs: dict[str, list[str]] = {}
        cur = None
        for line in text.splitlines():
            m = re.match(r"^(\$tower_probe\$\S+|tower_probe):$", line)
            if m:
                cur = m.group(1)
                funcs[cur] = []
            elif cur and re.search(r"/\*[0-9a-f]{4,}\*/", line):
                funcs[cur].append(line)
        print(cubin.name)
        for name, ls in funcs.items():
            def n(pat: str) -> int:
                return sum(1 for s in ls if re.search(pat, s))
            print(f"  {name[-48:]:48s} ins {len(ls):5d} LDL {n('LDL'):4d} STL {n('STL'):4d} LDS {n('LDS'):3d} "
                  f"STS {n('STS'):3d} BSSY {n('BSSY'):3d} SEL {n(' SEL '):4d} IADD3 {n('IADD3'):4d}")


def time(dirs: list[Path]) -> None:
    import numpy as np  # noqa: PLC0415
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from cuda_kernels.driver import U32, Device, Module, launch  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu import verify as gverify  # noqa: PLC0415
    dev = Device(0)
    stream = dev.stream()
    rng = np.random.default_rng(13)
    for curve_name in ("bn128", "bls12381"):
        curve = curve_by_name(curve_name)
        n = curve.n8q // 4
        consts_host = gverify.pairing_consts(curve)
        consts = dev.alloc(consts_host.nbytes, stream)
        Device.upload(consts, consts_host, stream)
        # inputs: two Fq12 and two Fq2, reduced, Montgomery (random values below q)
        vals = [int(rng.integers(0, 1 << 62)) ** 5 % curve.q for _ in range(28)]
        words = np.array([(x >> (32 * j)) & 0xFFFFFFFF for x in vals for j in range(n)], dtype=np.uint32)
        inp = dev.alloc(words.nbytes, stream)
        Device.upload(inp, words, stream)
        out = dev.alloc(4 * (4 + 12 * n), stream)
        host = np.zeros(4 + 12 * n, dtype=np.uint32)
        for d in dirs:
            cubin = d / f"{curve_name}.cubin"
            if not cubin.exists():
                continue
            mod = Module(cubin.read_bytes())
            for mode, name in enumerate(MODES):
                iters = 200 if mode <= 4 else 3
                for _ in range(2):  # the first launch warms up
                    launch(mod, "tower_probe", 1, 64, stream, consts, U32(mode), U32(iters), inp, out)
                    Device.download(host, out, stream)
                    stream.synchronize()
                cycles = int(host[0]) | int(host[1]) << 32
                digest = hashlib.sha256(host[4:].tobytes()).hexdigest()[:12]
                print(f"{curve_name:9s} {d.name:14s} {name:24s} {cycles / iters:10.0f} cycles  {digest}", flush=True)
        for b in (consts, inp, out):
            Device.free(b, stream)


USAGE = (f"usage: {Path(sys.argv[0]).name} build OUT TREE [CURVES] | sass OUT | ptx TREE [CURVE] | time DIR... "
         "(--help: what each does)")
ARITY = {"build": (4, 5), "sass": (3, 3), "ptx": (3, 4), "time": (3, None)}  # argv's length, script and command in


def _usage_error(problem: str = "") -> None:
    """A wrong command line: the usage, one line (with what was wrong), exit 2 as argparse's."""
    print(USAGE + (f": {problem}" if problem else ""), file=sys.stderr)
    raise SystemExit(2)


def main(argv: list[str]) -> None:
    import pipe_exit  # noqa: PLC0415 - beside this file; `| head`: quietly 141, not a BrokenPipeError traceback

    pipe_exit.install()
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(USAGE.split(" (--help")[0] + "\n\n" + __doc__.strip())
        return
    if len(argv) < 2 or argv[1] not in ARITY:
        _usage_error(f"no command {argv[1]!r}" if len(argv) > 1 else "")
    cmd, (least, most) = argv[1], ARITY[argv[1]]
    if len(argv) < least or (most is not None and len(argv) > most):
        _usage_error(f"{cmd} takes {least - 2}" + ("" if most == least else
                                                   f" to {most - 2}" if most else " or more") + " arguments")
    if cmd in ("build", "ptx"):
        tree = Path(argv[3] if cmd == "build" else argv[2]).resolve()
        if not (tree / "cuda_kernels").is_dir():
            _usage_error(f"TREE {str(tree)!r} holds no cuda_kernels/ (name a checkout of this repository)")
        sys.path.insert(0, str(tree))  # (the tree's own engine, as build() and ptx() read it)
        from engine.algebra.curves import curve_by_name  # noqa: PLC0415

        names = argv[4 if cmd == "build" else 3].split(",") if len(argv) > (4 if cmd == "build" else 3) else None
        for name in names or ():
            try:
                curve_by_name(name)
            except KeyError as e:
                _usage_error(e.args[0])
    if cmd == "sass" and not any(Path(argv[2]).glob("*.cubin")):
        _usage_error(f"OUT {argv[2]!r} holds no .cubin (what `build OUT TREE` writes)")
    try:
        _run(cmd, argv)
    except Exception as e:  # noqa: BLE001 - NVRTC's rejection of a variant: one line, the log where it has one
        if type(e).__name__ != "CompileFailed":
            raise
        log = getattr(e, "log", "")
        print(f"{Path(argv[0]).name}: {e}" + (f"\n{log.strip()}" if log.strip() else ""), file=sys.stderr)
        raise SystemExit(1) from None


def _run(cmd: str, argv: list[str]) -> None:
    if cmd == "build":
        build(Path(argv[2]), Path(argv[3]).resolve(), (argv[4] if len(argv) > 4 else "bn128,bls12381").split(","))
    elif cmd == "sass":
        sass(Path(argv[2]))
    elif cmd == "ptx":
        for name, body in ptx(Path(argv[2]).resolve(), argv[3] if len(argv) > 3 else "bn128").items():
            print(f"{name[-60:]:60s} bra {branches(body):4d} lines {body.count(chr(10)):6d}")
    else:
        from needs_gpu import require_gpu  # noqa: PLC0415 - only `time` runs on the device

        require_gpu()
        time([Path(p) for p in argv[2:]])


if __name__ == "__main__":
    main(sys.argv)
