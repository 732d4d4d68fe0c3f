"""The device pairing (cuda_kernels/tower.cuh, pairing.cuh) against engine/algebra/pairing.py.

Two layers.  Host: the same headers compiled by g++ over a host field
(tests/host/host_field.hpp), so the tower, the Miller loop and the final
exponentiation are checked on every machine with a C++ compiler, no GPU needed.
Device (marked `gpu`, skipped only without a CUDA device): the kernels the engine
runs, on random and edge inputs (infinity on either side, inverse pairs).
"""
from __future__ import annotations

import hashlib
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from engine.algebra import ec
from engine.algebra import pairing as pr
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.limbs import from_ints, g1_to_mont, g2_to_mont
from engine.backends.gpu import verify as gverify
from engine.backends.gpu.params import field_struct
from engine.backends.select import cuda_device_count

ROOT = Path(__file__).resolve().parent.parent
CURVES = [BN254, BLS12_381]


@pytest.fixture(params=CURVES, ids=lambda c: c.name)
def curve(request):
    return request.param


def rand_fq12(curve, rng):
    q = curve.q
    return tuple(tuple((rng.randrange(q), rng.randrange(q)) for _ in range(3)) for _ in range(2))


def g1(curve, k):
    return ec.g1_mul(curve, curve.g1_gen, k)


def g2(curve, k):
    return ec.g2_mul(curve, curve.g2_gen, k)


# ------------------------------------------------------------------ host (g++)
def _host_binary(curve, tmp: Path) -> Path:
    sources = [ROOT / "tests/host/pairing_host.cpp", ROOT / "tests/host/host_field.hpp",
               *sorted((ROOT / "cuda_kernels").glob("*.cuh"))]
    xi0, d_twist = gverify.pairing_shape(curve)
    header = "#pragma once\n#include <cstdint>\n" + field_struct("FQ_P", curve.q, curve.n8q)
    digest = hashlib.sha256(header.encode() + b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    exe = tmp / f"pairing_host_{curve.name}_{digest}"
    if not exe.exists():
        hdr = tmp / f"params_{curve.name}.h"
        hdr.write_text(header)
        subprocess.run(["g++", "-std=c++17", "-O1", "-pthread", f"-I{ROOT / 'cuda_kernels'}", f"-I{ROOT / 'tests/host'}",
                        "-include", str(ROOT / "tests/host/host_field.hpp"), "-include", str(hdr),
                        f"-DHOST_XI0={xi0}", f"-DHOST_D_TWIST={'true' if d_twist else 'false'}",
                        str(ROOT / "tests/host/pairing_host.cpp"), "-o", str(exe)], check=True)
    return exe


@pytest.fixture(scope="module")
def host_tmp(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    return tmp_path_factory.mktemp("pairing_host")


def _run_host(curve, tmp, commands: list[tuple[str, list[int]]]) -> list:
    """Run (command, Fq values) lines through the host binary; each output line an Fq12."""
    q, R = curve.q, 1 << (8 * curve.n8q)
    consts = gverify.pairing_consts(curve)
    text = f"{len(consts)} " + " ".join(f"{int(w):x}" for w in consts) + "\n"
    for name, vals in commands:
        text += name + " " + " ".join(f"{v * R % q:x}" for v in vals) + "\n"
    out = subprocess.run([str(_host_binary(curve, tmp))], input=text, capture_output=True, text=True, check=True)
    rinv = pow(R, -1, q)
    results = []
    for line in out.stdout.strip().split("\n"):
        v = [int(x, 16) * rinv % q for x in line.split()]
        c = [(v[2 * i], v[2 * i + 1]) for i in range(6)]
        results.append(((c[0], c[1], c[2]), (c[3], c[4], c[5])))
    return results


def _flat(f) -> list[int]:
    return [x for half in f for coef in half for x in coef]


def _pair_vals(P, Q) -> list[int]:
    P = P or (0, 0)
    Q = Q or ((0, 0), (0, 0))
    return [P[0], P[1], Q[0][0], Q[0][1], Q[1][0], Q[1][1]]


def test_host_tower_matches_python(curve, host_tmp):
    rng = random.Random(13)
    a, b = rand_fq12(curve, rng), rand_fq12(curve, rng)
    one = pr.FQ12_ONE
    cmds = [("mul", _flat(a) + _flat(b)), ("mul", _flat(a) + _flat(one)), ("sqr", _flat(a)), ("inv", _flat(a)),
            ("frob 1", _flat(a)), ("frob 2", _flat(a)), ("frob 3", _flat(a)), ("fe", _flat(a)), ("fe", _flat(one))]
    # the cyclotomic squaring holds in the cyclotomic subgroup: take a value after the easy part
    T = pr._tower(curve)
    cyc = T.canon12(T.m12(T.conj12(a), T.inv12(a)))
    cyc = T.canon12(T.m12(T.frob12(cyc, 2), cyc))
    cmds.append(("cyc", _flat(cyc)))
    want = [pr.fq12_mul(curve, a, b), a, pr.fq12_sqr(curve, a), pr.fq12_inv(curve, a),
            pr.fq12_frobenius(curve, a, 1), pr.fq12_frobenius(curve, a, 2), pr.fq12_frobenius(curve, a, 3),
            pr.final_exponentiation(curve, a), one, pr.fq12_cyclotomic_sqr(curve, cyc)]
    assert _run_host(curve, host_tmp, cmds) == want


def test_host_pairing_matches_python(curve, host_tmp):
    rng = random.Random(14)
    P, Q = g1(curve, rng.randrange(1, curve.r)), g2(curve, rng.randrange(1, curve.r))
    P2, Q2 = g1(curve, rng.randrange(1, curve.r)), g2(curve, rng.randrange(1, curve.r))
    G1, G2 = curve.g1_gen, curve.g2_gen
    cmds, want = [], []
    for name in ("pairs", "pairs_prepared"):  # lines on the fly, and prepared then read back
        cmds += [(f"{name} 1", _pair_vals(P, Q)), (f"{name} 1", _pair_vals(G1, G2)),
                 (f"{name} 2", _pair_vals(P, Q) + _pair_vals(P2, Q2)),
                 (f"{name} 1", _pair_vals(None, Q)), (f"{name} 1", _pair_vals(P, None)),
                 (f"{name} 2", _pair_vals(P, Q) + _pair_vals(ec.g1_neg(curve, P), Q))]
        want += [pr.pairing(curve, P, Q), pr.pairing(curve, G1, G2),
                 pr.final_exponentiation(curve, pr.miller_loop(curve, [(P, Q), (P2, Q2)])),
                 pr.FQ12_ONE, pr.FQ12_ONE, pr.FQ12_ONE]
    assert _run_host(curve, host_tmp, cmds) == want


def test_host_two_warp_pairing_matches_python(curve, host_tmp):
    """pairing.cuh's two-warp Miller loop and final exponentiation (the ring of lines, the duo's
    powers of x), two host threads standing for the two warps: random pairs, an inverse pair, the
    generators, infinity on either side."""
    rng = random.Random(15)
    pairs = [(g1(curve, rng.randrange(1, curve.r)), g2(curve, rng.randrange(1, curve.r))) for _ in range(3)]
    k = rng.randrange(1, curve.r)
    pairs += [(curve.g1_gen, curve.g2_gen), (g1(curve, k), g2(curve, curve.r - 1)), (None, curve.g2_gen),
              (curve.g1_gen, None)]
    got = _run_host(curve, host_tmp, [("pair2", _pair_vals(P, Q)) for P, Q in pairs])
    assert got == [pr.pairing(curve, P, Q) for P, Q in pairs]
    # Q's lines prepared, scaled by P in the line maker (pairing.cuh produce_prepared: the wide final phase)
    got = _run_host(curve, host_tmp, [("pair2_prepared", _pair_vals(P, Q)) for P, Q in pairs])
    assert got == [pr.pairing(curve, P, Q) for P, Q in pairs]


def test_host_pairing_is_bilinear_against_fixture_alphabeta(curve, host_tmp):
    """e(α1, β2) of a snarkjs key equals its vk_alphabeta_12 (the value snarkjs checks against)."""
    import json

    from conftest import FIXTURES
    from engine.formats import read_zkey
    from engine.groth16.verifier import vk_from_zkey

    d = FIXTURES / "tiny" / curve.name
    vk = vk_from_zkey(read_zkey(d / "tiny.zkey"))
    got = _run_host(curve, host_tmp, [("pairs 1", _pair_vals(vk.alpha1, vk.beta2))])[0]
    raw = json.loads((d / "verification_key.json").read_text())["vk_alphabeta_12"]
    want = tuple(tuple((int(c[0]), int(c[1])) for c in half) for half in raw)
    assert got == want


def _run_host_points(curve, tmp, commands: list[tuple[str, list[int], int | None]]) -> list[list[int]]:
    """(command, Fq values, plain scalar or None) lines through the host binary; each output
    line the Fq values it prints (Montgomery undone)."""
    q, R = curve.q, 1 << (8 * curve.n8q)
    consts = gverify.pairing_consts(curve)
    text = f"{len(consts)} " + " ".join(f"{int(w):x}" for w in consts) + "\n"
    for name, vals, k in commands:
        text += name + " " + " ".join(f"{v * R % q:x}" for v in vals) + ("" if k is None else f" {k:x}") + "\n"
    out = subprocess.run([str(_host_binary(curve, tmp))], input=text, capture_output=True, text=True, check=True)
    rinv = pow(R, -1, q)
    return [[int(x, 16) * rinv % q for x in line.split()] for line in out.stdout.strip().split("\n")]


def _g1_flat(P) -> list[int]:
    return [0, 0] if P is None else [P[0], P[1]]


def _g2_flat(Q) -> list[int]:
    return [0, 0, 0, 0] if Q is None else [Q[0][0], Q[0][1], Q[1][0], Q[1][1]]


def test_host_warp_point_arithmetic_matches_python(curve, host_tmp):
    """curve_warp.cuh (the tail's warp-wide XYZZ doubling, additions and scalar products)
    against engine/algebra/ec.py: random points and scalars, and the edges (scalar 0, 1, r - 1,
    r, 2^256 - 1, the window's 15, 16, 17; infinity; P + P and P + (-P))."""
    rng = random.Random(31)
    r = curve.r
    P, Q = g1(curve, rng.randrange(1, r)), g2(curve, rng.randrange(1, r))
    scalars = [rng.randrange(r), rng.randrange(r), 0, 1, 2, 15, 16, 17, r - 1, r, (1 << 256) - 1]
    cmds, want = [], []
    for k in scalars:
        cmds.append(("g1mul", _g1_flat(P), k))
        want.append(_g1_flat(ec.g1_mul(curve, P, k % r)))
        cmds.append(("g2mul", _g2_flat(Q), k))
        want.append(_g2_flat(ec.g2_mul(curve, Q, k % r)))
    cmds += [("g1mul", _g1_flat(None), 5), ("g2mul", _g2_flat(None), 5)]
    want += [[0, 0], [0, 0, 0, 0]]
    P2 = g1(curve, rng.randrange(1, r))
    for a, b in [(P, P2), (P, P), (P, ec.g1_neg(curve, P)), (None, P), (P, None), (None, None)]:
        cmds.append(("g1add", _g1_flat(a) + _g1_flat(b), None))
        s = ec.g1_add(curve, a, b)
        want.append(_g1_flat(s) * 2)
    assert _run_host_points(curve, host_tmp, cmds) == want


def test_host_binary_inverse_and_affine_match_python(curve, host_tmp):
    """inverse.cuh: the binary inversion on 0, 1, 2, p - 1, p - 2, (p + 1) / 2 and random values;
    the affine form of XYZZ points (G1 and G2, infinity) through it."""
    rng = random.Random(32)
    q = curve.q
    vals = [0, 1, 2, q - 1, q - 2, (q + 1) // 2] + [rng.randrange(q) for _ in range(20)]
    got = _run_host_points(curve, host_tmp, [(f"finv {len(vals)}", vals, None)])
    assert got == [[pow(v, -1, q) if v else 0 for v in vals]]
    P, Q = g1(curve, rng.randrange(1, curve.r)), g2(curve, rng.randrange(1, curve.r))
    cmds = [("g1aff", _g1_flat(P), None), ("g1aff", _g1_flat(None), None),
            ("g2aff", _g2_flat(Q), None), ("g2aff", _g2_flat(None), None)]
    assert _run_host_points(curve, host_tmp, cmds) == [_g1_flat(P), [0, 0], _g2_flat(Q), [0, 0, 0, 0]]


def test_host_divsteps_inverse_matches_python(curve, host_tmp):
    """inverse.cuh's divsteps (the tail's inversion): the limbs' integers where its batches and
    30-bit limbs have edges (0, 1, 2, 3, p - 1, p - 2, (p +- 1) / 2, every 2^k and 2^k - 1 below p,
    words of all ones, values next to a limb boundary) and 3000 random values, as Montgomery
    inputs; every inverse must equal Python's, and 0 gives 0."""
    q, R = curve.q, 1 << (8 * curve.n8q)
    limbs = _inverse_edges(curve, random.Random(33))
    rinv = pow(R, -1, q)
    vals = [x * rinv % q for x in limbs]  # _run_host_points sends v R: the integer the limbs hold is x
    got = _run_host_points(curve, host_tmp, [(f"fdinv {len(vals)}", vals, None)])
    want = [pow(v, -1, q) if v else 0 for v in vals]
    bad = [hex(x) for x, g, w in zip(limbs, got[0], want) if g != w]
    assert not bad, f"{len(bad)} wrong inverses, first limbs {bad[:3]}"


def test_host_mul_xi_matches_python(curve, host_tmp):
    """tower.cuh's mul_xi (BN254: 9x -/+ y with one reduction, its quotient estimated from the top
    words; BLS12-381: additions) on the words where the estimate is tightest: 0, 1, p - 1, p - 2, the
    words just below and above k p / 9 (9x next to a multiple of p) and random values."""
    rng = random.Random(33)
    q, R = curve.q, 1 << (8 * curve.n8q)
    rinv = pow(R, -1, q)
    words = [0, 1, 2, q - 1, q - 2, (q + 1) // 2]
    words += [w for k in range(1, 9) for w in (k * q // 9, k * q // 9 + 1, k * q // 9 - 1)]
    words += [rng.randrange(q) for _ in range(12)]
    pairs = [(x, y) for x in words for y in (0, 1, q - 1, rng.randrange(q))]
    vals = [w * rinv % q for pair in pairs for w in pair]  # the host binary takes plain values
    xi0 = gverify.pairing_shape(curve)[0]
    want = [v for a0, a1 in zip(vals[::2], vals[1::2]) for v in ((xi0 * a0 - a1) % q, (a0 + xi0 * a1) % q)]
    assert _run_host_points(curve, host_tmp, [(f"xi {len(pairs)}", vals, None)]) == [want]


def test_pairing_kernel_arguments_follow_kernels_cu(monkeypatch):
    """engine/backends/gpu/epilogue.py's launches of groth16_pairing put each phase's and the
    batched check's arguments where kernels.cu reads them (op, consts, p1 .. p10, u1 .. u5), a
    batch's grid and strides (words) too; the final phase on its six warps."""
    import re

    from cuda_kernels.driver import U32
    from engine.backends.gpu import epilogue as gepi

    sig = (ROOT / "cuda_kernels/kernels.cu").read_text().split(" groth16_pairing(")[1].split(")")[0]
    assert [re.sub(r".*\b(\w+)$", r"\1", a.strip()) for a in sig.split(",")] == \
        ["op", "consts"] + [f"p{i}" for i in range(1, 11)] + ["u1", "u2", "u3", "u4", "u5"]
    final = (gepi.TAIL_FINAL, 192)
    calls = []
    monkeypatch.setattr(gepi, "launch", lambda mod, name, grid, block, stream, *args, **kw:
                        calls.append((name, block, args, grid)))
    tail = ("consts", "results", U32(7), "witness", U32(8), U32(9), "tables", "points", "gamma", "delta", "target")
    gepi.launch_early(None, tail, None)
    gepi.launch_mid(None, tail, None)
    gepi.launch_final(None, tail, None)
    for launch_phase in (gepi.launch_early, gepi.launch_mid, gepi.launch_final):
        launch_phase(None, tail, None, batch=(5, 400, 96))
    strides = [[0, 0]] * 3 + [[100, 24]] * 3
    for (name, block, args, grid), (phase, threads), st in zip(calls, [(0, 128), (1, 128), final] * 2, strides):
        assert name == "groth16_pairing" and block == threads and len(args) == 17
        assert grid == (1 if st[0] == 0 else 5)
        assert args[0].value == phase and args[1:8] == ("consts", "results", "witness", "tables", "points", "gamma",
                                                         "delta")
        assert args[8] == "target" and args[9:12] == (0, 0, 0) and [a.value for a in args[12:]] == [7, 8, 9, *st]


# ------------------------------------------------------------------ device
@pytest.fixture(scope="module")
def backend():
    if cuda_device_count() == 0:
        pytest.skip("no CUDA device on this machine")
    from engine.backends.gpu import GpuBackend

    b = GpuBackend()
    yield b
    b.close()


def _device_pairings(backend, curve, pairs, two_warps: bool = False):
    from cuda_kernels.driver import Device

    backend.bind_thread()
    mod, stream, dev = backend.ctx.module(curve), backend.ctx.compute_stream(0), backend.device
    consts = gverify.pairing_consts(curve)
    bufs = []

    def up(a):
        b = dev.alloc(a.nbytes, stream)
        Device.upload(b, np.ascontiguousarray(a), stream)
        bufs.append(b)
        return b

    c = up(consts)
    p1 = up(g1_to_mont(curve, [p for p, _ in pairs]))
    p2 = up(g2_to_mont(curve, [q for _, q in pairs]))
    out = dev.alloc(len(pairs) * 12 * curve.n8q, stream)
    from engine.backends.gpu.epilogue import PAIRING_VALUE, TOOLS, launch_pairing

    if two_warps:  # the final phase's Miller loop: a block of two warps a pair (kernels.cu's tools op 13)
        launch_pairing(mod, len(pairs), 64, stream, TOOLS + 13, c, (p1, p2), out, (len(pairs),))
    else:
        launch_pairing(mod, len(pairs), 32, stream, TOOLS + PAIRING_VALUE, c, (p1, p2), out, (len(pairs),))  # a warp a pair
    host = np.empty(len(pairs) * 3 * curve.n8q, dtype=np.uint32)
    Device.download(host, out, stream)
    stream.synchronize()
    for b in (*bufs, out):
        Device.free(b, stream)
    w = 3 * curve.n8q
    return [gverify.fq12_from_mont(curve, host[i * w:(i + 1) * w]) for i in range(len(pairs))]


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_pairing_matches_cpu(backend, curve):
    rng = random.Random(21)
    pairs = [(g1(curve, rng.randrange(1, curve.r)), g2(curve, rng.randrange(1, curve.r))) for _ in range(3)]
    pairs += [(curve.g1_gen, curve.g2_gen), (None, curve.g2_gen), (curve.g1_gen, None), (None, None)]
    got = _device_pairings(backend, curve, pairs)
    assert got == [pr.pairing(curve, p, q) for p, q in pairs]


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_two_warp_pairing_matches_cpu(backend, curve):
    """pairing.cuh's two-warp Miller loop (one warp makes the lines into the ring, the other takes
    them: the proof's final phase) on random pairs, the generators, inverse pairs and infinity on
    either side, the final exponentiation after it."""
    rng = random.Random(23)
    pairs = [(g1(curve, rng.randrange(1, curve.r)), g2(curve, rng.randrange(1, curve.r))) for _ in range(4)]
    k = rng.randrange(1, curve.r)
    pairs += [(curve.g1_gen, curve.g2_gen), (g1(curve, k), g2(curve, curve.r - 1)), (None, curve.g2_gen),
              (curve.g1_gen, None), (None, None)]
    got = _device_pairings(backend, curve, pairs, two_warps=True)
    assert got == [pr.pairing(curve, p, q) for p, q in pairs]


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_var_base_mul_matches_cpu(backend, curve):
    from cuda_kernels.driver import Device, U32, launch

    rng = random.Random(22)
    pts = [g1(curve, rng.randrange(1, curve.r)) for _ in range(6)] + [None, curve.g1_gen]
    ks = [0, 1, curve.r - 1, 2, rng.randrange(curve.r), (1 << 255) - 1, 5, rng.randrange(curve.r)]
    backend.bind_thread()
    mod, stream, dev = backend.ctx.module(curve), backend.ctx.compute_stream(0), backend.device
    a, s = g1_to_mont(curve, pts), from_ints(ks, 4)
    bufs = [dev.alloc(x.nbytes, stream) for x in (a, s, a)]
    Device.upload(bufs[0], a, stream)
    Device.upload(bufs[1], s, stream)
    launch(mod, "g1_var_mul_test", 1, 32, stream, bufs[0], bufs[1], U32(len(pts)), bufs[2])
    out = np.empty_like(a)
    Device.download(out, bufs[2], stream)
    stream.synchronize()
    for b in bufs:
        Device.free(b, stream)
    from engine.algebra.limbs import g1_from_mont

    assert g1_from_mont(curve, out) == [ec.g1_mul(curve, p, k) for p, k in zip(pts, ks)]


def _inverse_edges(curve, rng) -> list[int]:
    """Integers for an Fq inversion's limbs: the edges of the divsteps' batches and 30-bit limbs, random values."""
    q = curve.q
    xs = [0, 1, 2, 3, q - 1, q - 2, q - 3, (q - 1) // 2, (q + 1) // 2]
    xs += [1 << k for k in range(q.bit_length() - 1)] + [(1 << k) - 1 for k in range(2, q.bit_length())]
    xs += [(1 << (30 * k)) + d for k in range(1, q.bit_length() // 30 + 1) for d in (-1, 0, 1)]
    xs += [int("ffffffff" * w, 16) % q for w in range(1, curve.n8q // 4 + 1)]
    return xs + [rng.randrange(q) for _ in range(3000)]


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_divsteps_inverse_matches_cpu(backend, curve):
    """inverse.cuh on the device (fq_inverse_test): the divsteps (the tail's) and the binary loop give
    X^-1 R^2 mod q for the limbs' integer X (the Montgomery form of the inverse), 0 for 0."""
    from cuda_kernels.driver import Device, U32, launch

    xs = _inverse_edges(curve, random.Random(34))
    q, R, words = curve.q, 1 << (8 * curve.n8q), curve.n8q // 4
    host = np.array([(x >> (32 * j)) & 0xFFFFFFFF for x in xs for j in range(words)], dtype=np.uint32)
    backend.bind_thread()
    mod, stream, dev = backend.ctx.module(curve), backend.ctx.compute_stream(0), backend.device
    a, out = dev.alloc(host.nbytes, stream), dev.alloc(host.nbytes, stream)
    Device.upload(a, host, stream)
    want = [pow(x, -1, q) * R * R % q if x else 0 for x in xs]
    for binary in (0, 1):
        launch(mod, "fq_inverse_test", -(-len(xs) // 128), 128, stream, a, U32(len(xs)), U32(binary), out)
        got = np.empty_like(host)
        Device.download(got, out, stream)
        stream.synchronize()
        vals = [sum(int(got[i * words + j]) << (32 * j) for j in range(words)) for i in range(len(xs))]
        bad = [hex(x) for x, g, w in zip(xs, vals, want) if g != w]
        assert not bad, f"binary={binary}: {len(bad)} wrong inverses, first inputs {bad[:3]}"
    for b in (a, out):
        Device.free(b, stream)


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_glv_halves_match_cpu(backend, curve):
    """The mid phase's GLV halves (curve_warp.cuh's glv_half_mul, one warp each): (+-k1) P and
    (+-k2) phi(P) from engine/algebra/glv.py's split add up to k P, for random points and
    scalars, k = 0, 1, r - 1, lambda, scalars whose halves are negative, and infinity."""
    from engine.algebra import glv
    from engine.algebra.limbs import g1_from_mont

    rng = random.Random(44)
    r, lam = curve.r, glv.endomorphism(curve)[1]
    ks = [0, 1, r - 1, lam, r - lam, 1 << 127, rng.randrange(r), rng.randrange(r), rng.randrange(r), 5]
    ks += [k for k in (rng.randrange(r) for _ in range(200)) if glv.split_words(curve, k)[1] == 3][:2]
    pts = [g1(curve, rng.randrange(1, r)) for _ in ks[:-1]] + [None]
    items, rows = [], []
    for p, k in zip(pts, ks):
        halves, signs = glv.split_words(curve, k)
        for h in (0, 1):  # h = 1: k2 against phi(P)
            items.append(p)
            rows.append([(halves >> (128 * h)) & ((1 << 128) - 1) | (h | ((signs >> h) & 1) << 1) << 128])
    n = len(items)
    s = from_ints([row[0] for row in rows], 4).view(np.uint32).reshape(-1)
    out = _device_call(backend, curve, 14, [g1_to_mont(curve, items).view(np.uint32).reshape(-1), s],
                       n * curve.n8q // 2, n, n)
    got = g1_from_mont(curve, out.view(np.uint64))
    for i, (p, k) in enumerate(zip(pts, ks)):
        assert ec.g1_add(curve, got[2 * i], got[2 * i + 1]) == ec.g1_mul(curve, p, k % r), (i, k)


# ---- the warp-wide batches (fp2_group.cuh, tower.cuh, curve_warp.cuh) on the device
def _mont_words(curve, values: list[int]) -> np.ndarray:
    R = 1 << (8 * curve.n8q)
    return from_ints([v * R % curve.q for v in values], curve.n8q // 8).view(np.uint32).reshape(-1)


def _plain(curve, words: np.ndarray) -> list[int]:
    n = curve.n8q // 4
    rinv = pow(1 << (8 * curve.n8q), -1, curve.q)
    w = np.ascontiguousarray(words, dtype=np.uint32).reshape(-1, n)
    return [int.from_bytes(row.tobytes(), "little") * rinv % curve.q for row in w]


def _device_call(backend, curve, op: int, inputs: list[np.ndarray], out_words: int, blocks: int, n: int) -> np.ndarray:
    """Upload the pairing constants and `inputs` (a, b), run the tools' `op` (kernels.cu's
    pairing_tools) on n items in `blocks` warps, return the output's words."""
    from cuda_kernels.driver import Device
    from engine.backends.gpu.epilogue import TOOLS, launch_pairing

    inputs = [gverify.pairing_consts(curve), *inputs]
    backend.bind_thread()
    mod, stream, dev = backend.ctx.module(curve), backend.ctx.compute_stream(0), backend.device
    bufs = []
    for a in inputs:
        b = dev.alloc(max(a.nbytes, 16), stream)
        Device.upload(b, np.ascontiguousarray(a), stream)
        bufs.append(b)
    out = dev.alloc(4 * out_words, stream)
    launch_pairing(mod, blocks, 32, stream, TOOLS + op, bufs[0], tuple(bufs[1:]), out, (n,))
    host = np.empty(out_words, dtype=np.uint32)
    Device.download(host, out, stream)
    stream.synchronize()
    for b in (*bufs, out):
        Device.free(b, stream)
    return host


def _tower_op(backend, curve, op: int, a_list, b_list=None) -> list:
    b_list = b_list or [pr.FQ12_ONE] * len(a_list)
    n, w = len(a_list), 12 * curve.n8q // 4
    a = np.concatenate([_mont_words(curve, _flat(x)) for x in a_list])
    b = np.concatenate([_mont_words(curve, _flat(x)) for x in b_list])
    host = _device_call(backend, curve, op, [a, b], n * w, n, n)
    return [gverify.fq12_from_mont(curve, host[i * w:(i + 1) * w]) for i in range(n)]


def _edge_fq12s(curve, rng):
    q = curve.q
    zero = tuple(tuple((0, 0) for _ in range(3)) for _ in range(2))
    top = tuple(tuple((q - 1, q - 1) for _ in range(3)) for _ in range(2))
    return [rand_fq12(curve, rng) for _ in range(3)] + [zero, pr.FQ12_ONE, top]


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_tower_batches_match_cpu(backend, curve):
    """The Fq12 product, squarings, inverse, Frobenius, final exponentiation and product by a
    line, each an operation of batched Fq2 products on a warp, against engine/algebra/pairing.py
    on random values and 0, 1, p - 1 in every coefficient."""
    rng = random.Random(41)
    xs = _edge_fq12s(curve, rng)
    ys = [rand_fq12(curve, rng) for _ in xs[:3]] + xs[3:][::-1]
    assert _tower_op(backend, curve, 0, xs, ys) == [pr.fq12_mul(curve, x, y) for x, y in zip(xs, ys)]
    assert _tower_op(backend, curve, 1, xs) == [pr.fq12_sqr(curve, x) for x in xs]
    nz = [x for x in xs if any(c for half in x for coef in half for c in coef)]
    assert _tower_op(backend, curve, 3, nz) == [pr.fq12_inv(curve, x) for x in nz]
    for k in (1, 2, 3):
        assert _tower_op(backend, curve, 3 + k, xs) == [pr.fq12_frobenius(curve, x, k) for x in xs]
    assert _tower_op(backend, curve, 7, xs[:2]) == [pr.final_exponentiation(curve, x) for x in xs[:2]]
    T = pr._tower(curve)
    cyc = [T.canon12(T.m12(T.frob12(c, 2), c)) for c in (T.canon12(T.m12(T.conj12(x), T.inv12(x))) for x in xs[:3])]
    assert _tower_op(backend, curve, 2, cyc) == [pr.fq12_cyclotomic_sqr(curve, c) for c in cyc]
    # the line: b's coefficients (ly yP, lx xP, lc) as the sparse element of the twist's type
    _, d_twist = gverify.pairing_shape(curve)
    z = (0, 0)
    lines = [rand_fq12(curve, rng) for _ in xs]
    want = []
    for x, l in zip(xs, lines):
        ly, lx, lc = l[0]
        elem = ((ly, z, z), (lx, lc, z)) if d_twist else ((lc, lx, z), (z, ly, z))
        want.append(pr.fq12_mul(curve, x, elem))
    assert _tower_op(backend, curve, 8, xs, lines) == want


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_mul_xi_on_edge_words_matches_cpu(backend, curve):
    """The device's products by xi (BN254: xi_nine.cuh's PTX block, its quotient estimated from the
    top words) on the words where the estimate is tightest: an Fq12 product by v hands a's third Fq6
    coefficient, as stored, to mul_xi (Karatsuba's u12 = (a1 + a2) 1 - a1 = a2), so a's coefficients
    are the Fq values whose Montgomery words are 0, 1, p - 1, p - 2 and the words next to k p / 9."""
    rng = random.Random(43)
    q, R = curve.q, 1 << (8 * curve.n8q)
    rinv = pow(R, -1, q)
    words = [0, 1, q - 1, q - 2] + [w for k in range(1, 9) for w in (k * q // 9, k * q // 9 + 1)]
    vals = [w * rinv % q for w in words]  # plain values: _tower_op stores v R mod q = w
    xs = []
    for i in range(0, len(vals), 2):
        c = [(vals[i], vals[i + 1]), (vals[-1 - i], vals[i]), (vals[i + 1], vals[-1 - i])]
        xs.append(((tuple(rng.sample(c, 3))), tuple(c)))
    z, one = (0, 0), (1, 0)
    v = ((z, one, z), (z, z, z))
    assert _tower_op(backend, curve, 0, xs, [v] * len(xs)) == [pr.fq12_mul(curve, x, v) for x in xs]
    assert _tower_op(backend, curve, 0, xs, xs[::-1]) == [pr.fq12_mul(curve, x, y) for x, y in zip(xs, xs[::-1])]


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_fq2_batch_matches_cpu(backend, curve):
    """One batch of k Fq2 products for k = 1 .. 20 (a part round, one round, two): random values
    and 0, 1, p - 1."""
    rng = random.Random(42)
    q = curve.q
    edge = [0, 1, q - 1]
    for k in (1, 2, 9, 10, 11, 19, 20):
        xs = [(rng.choice(edge + [rng.randrange(q)]), rng.randrange(q)) for _ in range(k)]
        ys = [(rng.randrange(q), rng.choice(edge + [rng.randrange(q)])) for _ in range(k)]
        x = _mont_words(curve, [c for v in xs for c in v])
        y = _mont_words(curve, [c for v in ys for c in v])
        host = _device_call(backend, curve, 12, [x, y], k * curve.n8q // 2, 1, k)
        got = _plain(curve, host)
        want = []
        for (a0, a1), (b0, b1) in zip(xs, ys):
            want += [(a0 * b0 - a1 * b1) % q, (a0 * b1 + a1 * b0) % q]
        assert got == want, k


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
def test_device_warp_point_mul_matches_cpu(backend, curve):
    """curve_warp.cuh's k P (a warp a product) on G1 and G2: random points and scalars, 0, 1,
    r - 1, r, 2^256 - 1, the point at infinity."""
    from engine.algebra.limbs import g1_from_mont, g2_from_mont

    rng = random.Random(43)
    r = curve.r
    ks = [0, 1, r - 1, r, (1 << 256) - 1, 16, rng.randrange(r), rng.randrange(r)]
    p1 = [g1(curve, rng.randrange(1, r)) for _ in ks[:-1]] + [None]
    p2 = [g2(curve, rng.randrange(1, r)) for _ in ks[:-1]] + [None]
    n = len(ks)
    s = from_ints(ks, 4).view(np.uint32).reshape(-1)
    h1 = _device_call(backend, curve, 10, [g1_to_mont(curve, p1).view(np.uint32).reshape(-1), s], n * curve.n8q // 2,
                      n, n)
    h2 = _device_call(backend, curve, 11, [g2_to_mont(curve, p2).view(np.uint32).reshape(-1), s], n * curve.n8q, n, n)
    assert g1_from_mont(curve, h1.view(np.uint64)) == [ec.g1_mul(curve, p, k % r) for p, k in zip(p1, ks)]
    assert g2_from_mont(curve, h2.view(np.uint64)) == [ec.g2_mul(curve, p, k % r) for p, k in zip(p2, ks)]
