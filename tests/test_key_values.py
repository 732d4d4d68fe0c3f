"""The values a proving key hands the prover unchecked: every point coordinate must be a reduced Montgomery value
(below the base field prime q: the GPU takes the raw limbs, so x + q, which still fits the slot, gave a wrong
proof under --no-verify), and the header's alpha1, beta1, beta2, delta1, delta2 must lie in their prime-order
subgroups (else no proof made with the key can verify).  Either is refused before any work, in one line naming
the file, the section and the point, whatever the backend and whether or not the proof is verified after.
The crafted keys are copies of the bundled examples with a few bytes changed."""
from __future__ import annotations

import asyncio
import json
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLES, run_engine
from engine.algebra import subgroup
from engine.algebra.field import fq2_add, fq2_mul, fq2_sqr, fq2_sqrt, sqrt
from engine.algebra.limbs import g1_to_mont, g2_to_mont
from engine.backends.cpu import CpuBackend
from engine.errors import FormatError
from engine.formats import read_wtns, read_zkey
from engine.groth16.prover import check_key, prove

# the header's points in file order (spec §4.2), their size in coordinates and the name errors give them
HEADER = [("alpha1", 2, "vk_alpha_1"), ("beta1", 2, "vk_beta_1"), ("beta2", 4, "vk_beta_2"),
          ("gamma2", 4, "vk_gamma_2"), ("delta1", 2, "vk_delta_1"), ("delta2", 4, "vk_delta_2")]
SECTIONS = {3: "IC", 5: "A", 6: "B1", 7: "B2", 8: "C", 9: "H"}
G2_COORDS = ("x.c0", "x.c1", "y.c0", "y.c1")


def example(tmp_path: Path, curve: str) -> tuple[Path, Path]:
    """A writable copy of the bundled sudoku key of `curve`, and its witness."""
    dst = tmp_path / f"{curve}.zkey"
    shutil.copyfile(EXAMPLES / curve / "sudoku.zkey", dst)
    return dst, EXAMPLES / curve / "sudoku.wtns"


def header_offset(z, name: str) -> int:
    """Where header point `name` starts in the file: after n8q, q, n8r, r, nVars, nPublic, domainSize."""
    off = z.sections[2][0] + 4 + z.curve.n8q + 4 + 32 + 12
    for other, coords, _ in HEADER:
        if other == name:
            return off
        off += coords * z.curve.n8q
    raise KeyError(name)


def add_q(path: Path, where: str | int, point: int = 0, coord: int = 0) -> None:
    """Add q to one coordinate's Montgomery value in place (x + q still fits its 32/48-byte slot and reads
    as x modulo q): a header point by name, or point `point` of section `where`."""
    z = read_zkey(path)
    n8q, q = z.curve.n8q, z.curve.q
    if isinstance(where, str):
        off = header_offset(z, where) + coord * n8q
    else:
        per_point = (z.curve.g2_bytes if where == 7 else z.curve.g1_bytes)
        off = z.sections[where][0] + point * per_point + coord * n8q
    del z
    data = bytearray(path.read_bytes())
    value = int.from_bytes(data[off:off + n8q], "little") + q
    assert value < 1 << (8 * n8q)
    data[off:off + n8q] = value.to_bytes(n8q, "little")
    path.write_bytes(bytes(data))


def outside_subgroup(curve, g2: bool):
    """A point of the curve (the twist for G2) outside the prime-order subgroup (seeded: the same each run)."""
    rng, q = random.Random(2121), curve.q
    while True:
        if g2:
            x = (rng.randrange(q), rng.randrange(q))
            y = fq2_sqrt(fq2_add(fq2_mul(fq2_sqr(x, q), x, q), curve.g2_b, q), q)
        else:
            x = rng.randrange(q)
            y = sqrt((x * x * x + curve.g1_b) % q, q)
        if y is not None and not (subgroup.g2_in_subgroup if g2 else subgroup.g1_in_subgroup)(curve, (x, y)):
            return (x, y)


def put_outside_subgroup(path: Path, name: str) -> None:
    put_point(path, name, outside_subgroup(read_zkey(path).curve, name.endswith("2")))


def put_point(path: Path, name: str, point) -> None:
    """Header point `name` replaced by `point` (affine; None: the point at infinity, written (0, 0))."""
    z = read_zkey(path)
    g2 = name.endswith("2")
    if point is None:
        raw = bytes((4 if g2 else 2) * z.curve.n8q)
    else:
        raw = (g2_to_mont(z.curve, [point]) if g2 else g1_to_mont(z.curve, [point])).tobytes()
    off = header_offset(z, name)
    del z
    data = bytearray(path.read_bytes())
    data[off:off + len(raw)] = raw
    path.write_bytes(bytes(data))


class NoWork(CpuBackend):
    def prove_core(self, *a, **k):
        raise AssertionError("the backend ran for a key that should have been refused")


def one_error_line(proc, *words: str) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 0, f"exit 0 on a bad key:\n{proc.stdout}\n{proc.stderr}"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{proc.stderr}"
    for word in words:
        assert re.search(word, lines[0]), f"the error does not say /{word}/: {lines[0]}"
    return lines[0]


def refused_verified_or_not(path: Path, wtns: Path, pattern: str) -> None:
    """The key is refused before the backend runs, whether or not the proof would be verified after."""
    z, w = read_zkey(path), read_wtns(wtns)
    for verify in (False, True):
        with pytest.raises(FormatError, match=rf"^{re.escape(str(path))}: {pattern}"):
            prove(z, w.values, NoWork(workers=1), verify=verify)


def cli_no_verify_refuses(tmp_path: Path, path: Path, wtns: Path, *words: str) -> None:
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    proc = run_engine("prove", "--no-verify", "--backend", "cpu", path, wtns, proof, public)
    one_error_line(proc, re.escape(str(path)), *words)
    assert not proof.exists() and not public.exists()


# ---------------------------------------------------------------- coordinates not below q

# (section or header point, point index (-1: the last), coordinate): every point section and header point,
# with G2 coordinates of both halves
CASES = [(3, -1, 1), (5, 3, 0), (6, -1, 1), (7, 2, 3), (7, -1, 0), (8, -1, 1), (9, 5, 0), (9, -1, 1),
         ("alpha1", 0, 0), ("beta1", 0, 1), ("beta2", 0, 2), ("gamma2", 0, 1), ("delta1", 0, 1), ("delta2", 0, 3)]


def expected_words(z, where, point: int, coord: int) -> list[str]:
    g2 = where == 7 or (isinstance(where, str) and where.endswith("2"))
    names = G2_COORDS if g2 else ("x", "y")
    if isinstance(where, str):
        return [r"section 2 \(Groth16 header\)", rf"\b{where}\b", rf"\b{re.escape(names[coord])}\b", "q"]
    count = getattr(z, SECTIONS[where].lower()).shape[0]
    index = point % count
    return [rf"section {where} \({SECTIONS[where]}\)", rf"point {index}\b", rf"\b{re.escape(names[coord])}\b",
            "q"]


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("where,point,coord", CASES, ids=[f"{w}-{p}-{c}" for w, p, c in CASES])
def test_api_prove_refuses_a_coordinate_not_below_q(tmp_path, curve, where, point, coord):
    path, wtns = example(tmp_path, curve)
    if not isinstance(where, str) and point < 0:
        point = getattr(read_zkey(path), SECTIONS[where].lower()).shape[0] - 1
    add_q(path, where, point, coord)
    z, w = read_zkey(path), read_wtns(wtns)
    for verify in (False, True):
        with pytest.raises(FormatError) as info:
            prove(z, w.values, NoWork(workers=1), verify=verify)
        message = str(info.value)
        assert message.startswith(f"{path}: ") and "\n" not in message, message
        for word in expected_words(z, where, point, coord):
            assert re.search(word, message), f"/{word}/ not in: {message}"


def test_coordinate_bound_is_exactly_q(tmp_path):
    """q itself is refused, q - 1 (a field element) is not refused by the range check (the limbs compare as a
    number, not limb by limb)."""
    from engine.formats.zkey import check_coordinates

    path, _ = example(tmp_path, "bls12381")
    z = read_zkey(path)
    q, lq = z.curve.q, z.curve.q_limbs64
    a = np.array(z.a)
    top = (1 << 64 * (lq - 1)) * (q >> 64 * (lq - 1))  # q's top limb, zeros below: less than q
    for value, refused in ((q, True), (q + 1, True), ((1 << 64 * lq) - 1, True), (q - 1, False), (top, False)):
        a[1, 0] = [(value >> (64 * i)) & ((1 << 64) - 1) for i in range(lq)]
        z.a = a
        if refused:
            with pytest.raises(FormatError, match=r"section 5 \(A\): point 1\b"):
                check_coordinates(z)
        else:
            check_coordinates(z)


def test_a_large_section_names_its_bad_point(tmp_path):
    """A section of many points is checked in parts on threads (formats/rows.py): the point named is still the
    first bad one, counted from the section's start."""
    from engine.formats.zkey import check_coordinates

    path, _ = example(tmp_path, "bn128")
    z = read_zkey(path)
    q = z.curve.q
    h = np.zeros((1 << 17, 2, 4), dtype=np.uint64)  # 8 MiB: more than one part
    for index, coord in ((100_000, 1), (120_000, 0)):
        h[index, coord] = [((q + 5) >> (64 * i)) & ((1 << 64) - 1) for i in range(4)]
    z.h = h
    with pytest.raises(FormatError, match=r"section 9 \(H\): point 100000's y coordinate"):
        check_coordinates(z)


def test_a_checked_key_does_not_vouch_for_a_copy_with_other_points(tmp_path):
    """The header and IC of a crafted copy are the good key's: the check of the good key must not pass it."""
    good, wtns = example(tmp_path, "bn128")
    bad = tmp_path / "bad.zkey"
    shutil.copyfile(good, bad)
    add_q(bad, 9, 7, 1)
    check_key(read_zkey(good))
    with pytest.raises(FormatError, match=r"section 9 \(H\): point 7\b"):
        prove(read_zkey(bad), read_wtns(wtns).values, NoWork(workers=1), verify=False)


def test_cli_no_verify_refuses_a_coordinate_not_below_q(tmp_path):
    path, wtns = example(tmp_path, "bn128")
    add_q(path, 7, 4, 2)
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    proc = run_engine("prove", "--no-verify", "--backend", "cpu", path, wtns, proof, public)
    one_error_line(proc, re.escape(str(path)), r"section 7 \(B2\)", r"point 4\b")
    assert not proof.exists() and not public.exists()


def test_engine_load_key_refuses_a_coordinate_not_below_q(tmp_path):
    """Refused at load_key, before the key is uploaded, not by each proof after."""
    from engine import Engine, EngineConfig

    path, _ = example(tmp_path, "bls12381")
    add_q(path, 5, 2, 0)

    async def main():
        async with Engine(EngineConfig(backend="cpu", verify=False, synthesis_workers=1)) as eng:
            with pytest.raises(FormatError, match=rf"{re.escape(str(path))}: section 5 \(A\): point 2\b"):
                await eng.load_key(str(path))
            good = await eng.load_key(str(EXAMPLES / "bls12381" / "sudoku.zkey"))  # the engine still serves
            proof = await eng.prove(good, str(EXAMPLES / "bls12381" / "sudoku.wtns"))
            assert proof.public == [int(v) for v in json.loads((EXAMPLES / "bls12381" / "public.json").read_text())]

    asyncio.run(main())


# ---------------------------------------------------------------- header points outside their subgroups

SUBGROUP_CASES = [("bls12381", "alpha1"), ("bls12381", "beta1"), ("bls12381", "delta1"), ("bn128", "beta2"),
                  ("bls12381", "beta2"), ("bn128", "delta2"), ("bls12381", "delta2")]


@pytest.mark.parametrize("curve,name", SUBGROUP_CASES, ids=[f"{c}-{n}" for c, n in SUBGROUP_CASES])
def test_api_prove_refuses_a_header_point_outside_its_subgroup(tmp_path, curve, name):
    path, wtns = example(tmp_path, curve)
    put_outside_subgroup(path, name)
    vk_name = dict((n, v) for n, _, v in HEADER)[name]
    refused_verified_or_not(path, wtns, rf"{vk_name} .*outside its prime-order")


def test_cli_no_verify_refuses_a_header_point_outside_its_subgroup(tmp_path):
    path, wtns = example(tmp_path, "bls12381")
    put_outside_subgroup(path, "alpha1")
    cli_no_verify_refuses(tmp_path, path, wtns, "vk_alpha_1", "subgroup")


# ---------------------------------------------------------------- section points off their curves

def flip_used_point(path: Path, wtns: Path, sid: int) -> None:
    """Flip a bit of y of the last point of section `sid` whose wire has a non-zero witness value (a point the
    proof's sums use: A, B1, B2 by wire; C from wire nPublic+1; H always used)."""
    z, w = read_zkey(path), read_wtns(wtns)
    first = z.n_public + 1 if sid == 8 else 0
    arr = getattr(z, SECTIONS[sid].lower())
    index = arr.shape[0] - 1 if sid == 9 else max(
        i for i in range(arr.shape[0]) if arr[i].any() and w.values[first + i].any())
    per_point = z.curve.g2_bytes if sid == 7 else z.curve.g1_bytes
    off = z.sections[sid][0] + index * per_point + per_point // 2
    del z, w
    data = bytearray(path.read_bytes())
    data[off] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("sid", [5, 6, 7, 8, 9])
def test_api_no_verify_never_returns_a_proof_off_its_curve(tmp_path, curve, sid):
    """Every point of a section is not checked on its curve (millions of points); one off it, with --no-verify,
    gave a proof whose pi_a, pi_b or pi_c is off the curve (exit 0): the three points are checked instead."""
    from engine.errors import VerificationError

    path, wtns = example(tmp_path, curve)
    flip_used_point(path, wtns, sid)
    with pytest.raises(VerificationError, match=rf"{re.escape(str(path))}.*(pi_a|pi_b|pi_c) .*not a point"):
        prove(read_zkey(path), read_wtns(wtns).values, CpuBackend(workers=1), verify=False)


def test_cli_no_verify_writes_no_proof_off_its_curve(tmp_path):
    path, wtns = example(tmp_path, "bn128")
    flip_used_point(path, wtns, 5)
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    proc = run_engine("prove", "--no-verify", "--backend", "cpu", path, wtns, proof, public)
    one_error_line(proc, re.escape(str(path)), "pi_a", "not a point")
    assert not proof.exists() and not public.exists()


# ---------------------------------------------------------------- header points at infinity

@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("name", ["alpha1", "beta1", "beta2", "delta1", "delta2"])
def test_a_header_point_at_infinity_is_refused(tmp_path, curve, name):
    """A degenerate key: delta1 at infinity took the blinding r*delta1 out of pi_a (and s*delta1 out of pi_c),
    so a proof showed its witness's sum in the clear, and --no-verify returned it; alpha, beta or delta2 at
    infinity cannot come from a setup either (each is a secret scalar times a generator)."""
    path, wtns = example(tmp_path, curve)
    put_point(path, name, None)
    vk_name = dict((n, v) for n, _, v in HEADER)[name]
    refused_verified_or_not(path, wtns, rf"{vk_name} is the point at infinity")


def test_cli_no_verify_refuses_delta1_at_infinity(tmp_path):
    path, wtns = example(tmp_path, "bn128")
    put_point(path, "delta1", None)
    cli_no_verify_refuses(tmp_path, path, wtns, "vk_delta_1", "infinity")


# ---------------------------------------------------------------- beta1/beta2 and delta1/delta2 of one scalar

@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("name", ["beta1", "beta2", "delta1", "delta2"])
def test_a_header_pair_of_two_scalars_is_refused(tmp_path, curve, name):
    """beta1 and beta2 (delta1 and delta2) are one secret scalar times each generator; a key where they are not
    (each point valid, in its subgroup) makes proofs that cannot verify, which --no-verify returned."""
    from engine.algebra import ec

    path, wtns = example(tmp_path, curve)
    z = read_zkey(path)
    c = z.curve
    point = (ec.g2_mul if name.endswith("2") else ec.g1_mul)(c, c.g2_gen if name.endswith("2") else c.g1_gen, 12345)
    del z
    put_point(path, name, point)
    pair = "vk_beta_1 and vk_beta_2" if name.startswith("beta") else "vk_delta_1 and vk_delta_2"
    refused_verified_or_not(path, wtns, rf"{pair} are not")


def test_cli_no_verify_refuses_a_delta_pair_of_two_scalars(tmp_path):
    from engine.algebra import ec

    path, wtns = example(tmp_path, "bls12381")
    c = read_zkey(path).curve
    put_point(path, "delta1", ec.g1_mul(c, c.g1_gen, 7))
    cli_no_verify_refuses(tmp_path, path, wtns, "vk_delta_1 and vk_delta_2")
