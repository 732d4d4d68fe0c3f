"""Cost of the prime-order subgroup checks (engine/algebra/subgroup.py) on the CPU.

    python perf/subgroup.py [--repeats 20]

Per point: the endomorphism test next to the plain [r]P = O test, for each group with a
cofactor; then what the checks add to one `verify` of the fixtures' proofs (three proof
points each time; the key's points once per key) and to reading a zkey's verification key.
Median of `repeats` runs after one warm-up, random subgroup points.
"""
from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path

from engine.algebra import subgroup
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.ec import g1_mul, g2_mul
from engine.formats import read_zkey
from engine.formats.json import read_proof, read_vkey
from engine.groth16 import verifier
from script_args import Parser, positive, run_main  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tiny"


def median_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = Parser()
    ap.add_argument("--repeats", type=positive, default=20)
    args = ap.parse_args()
    rng = random.Random(14)
    print("group            fast test   [r]P test   (ms per point)")
    for curve, g2 in ((BN254, True), (BLS12_381, False), (BLS12_381, True)):
        gen, mul = (curve.g2_gen, g2_mul) if g2 else (curve.g1_gen, g1_mul)
        P = mul(curve, gen, rng.randrange(1, curve.r))
        fast = subgroup.g2_in_subgroup if g2 else subgroup.g1_in_subgroup
        slow = subgroup.g2_mul_unreduced if g2 else subgroup.g1_mul_unreduced
        f = median_ms(lambda: fast(curve, P), args.repeats)
        s = median_ms(lambda: slow(curve, P, curve.r), args.repeats)
        print(f"{curve.name:9} {'G2' if g2 else 'G1'}     {f:9.2f}   {s:9.2f}")
    print("\nverify (one proof)   with checks   proof-point checks alone   vk_from_zkey (key checks)")
    for name in ("bn128", "bls12381"):
        d = FIXTURES / name
        vk = read_vkey(d / "verification_key.json")
        proof = read_proof(d / "proof.json", vk.curve)
        public = [int(x) for x in json.loads((d / "public.json").read_text())]
        zkey = read_zkey(d / "tiny.zkey")
        full = median_ms(lambda: verifier.verify(vk, public, proof), args.repeats)
        checks = median_ms(lambda: verifier.proof_problem(vk, proof), args.repeats)
        key = median_ms(lambda: verifier.key_problem(vk), args.repeats)
        print(f"{name:9}            {full:9.1f} ms   {checks:9.2f} ms ({100 * checks / full:.1f} %)"
              f"        {key:.2f} ms for {len(vk.ic) + 4} points (nPublic {vk.n_public})")
        del zkey


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
