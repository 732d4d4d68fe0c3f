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
        subprocess.run(["g++", "-std=c++17", "-O1", f"-I{ROOT / 'cuda_kernels'}", f"-I{ROOT / 'tests/host'}",
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


# ------------------------------------------------------------------ device
@pytest.fixture(scope="module")
def backend():
    if cuda_device_count() == 0:
        pytest.skip("no CUDA device on this machine")
    from engine.backends.gpu import GpuBackend

    b = GpuBackend()
    yield b
    b.close()


def _device_pairings(backend, curve, pairs):
    from cuda_kernels.driver import Device, U32, launch

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
    launch(mod, "pairing_values", -(-len(pairs) // 8), 32, stream, c, p1, p2, U32(len(pairs)), out)
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
