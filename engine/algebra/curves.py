"""Curve constants for BN254 ("bn128") and BLS12-381, as circom/snarkjs define them.

Everything else in the engine is written once and parameterised by a `Curve`
from this table: Python arithmetic, file formats, the CUDA kernels (which get
their limbs from engine.backends.gpu.params.params_header).  Values are from
shared/docs/snarkjs-groth16-spec.md §5.2 and §7; `_check` verifies the
derived ones at import so a typo cannot reach a proof.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class Curve:
    name: str  # snarkjs's name: "bn128" or "bls12381"
    q: int  # base field prime
    r: int  # scalar field prime (group order)
    n8q: int  # bytes per base-field element in files (8 * ceil(bits/64))
    n8r: int  # bytes per scalar-field element in files
    g1_b: int  # G1: y^2 = x^3 + b
    g2_b: tuple[int, int]  # G2 over Fq2 = Fq[u]/(u^2+1): y^2 = x^3 + b2
    g1_gen: tuple[int, int]
    g2_gen: tuple[tuple[int, int], tuple[int, int]]
    fq6_nonresidue: tuple[int, int]  # xi in Fq6 = Fq2[v]/(v^3 - xi)
    # pairing parameters
    x_param: int  # BN: u with 6u+2 loop; BLS: x (negative), loop over |x|
    family: str  # "bn" or "bls12"
    nqr: int = 5  # smallest quadratic non-residue of Fr (both curves)
    aliases: tuple[str, ...] = field(default=())

    # ---- derived scalar-field data (roots of unity as ffjavascript defines them)
    @property
    def two_adicity(self) -> int:
        s, t = 0, self.r - 1
        while t % 2 == 0:
            s, t = s + 1, t // 2
        return s

    @property
    def r_odd_part(self) -> int:
        return (self.r - 1) >> self.two_adicity

    def root_of_unity(self, k: int) -> int:
        """w[k]: the primitive 2^k-th root snarkjs uses (nqr^t squared s-k times)."""
        s = self.two_adicity
        if not 0 <= k <= s:
            raise ValueError(f"{self.name}: no 2^{k}-th root of unity in Fr (2-adicity {s})")
        w = pow(self.nqr, self.r_odd_part, self.r)
        return pow(w, 1 << (s - k), self.r)

    def coset_generator(self, k: int) -> int:
        """g for a domain of 2^k: w[k+1], or shift = nqr^2 when k equals the 2-adicity."""
        if k == self.two_adicity:
            return self.nqr * self.nqr % self.r
        return self.root_of_unity(k + 1)

    # ---- Montgomery constants (R = 2^(8*n8))
    @cached_property
    def rq(self) -> int:
        return (1 << (8 * self.n8q)) % self.q

    @cached_property
    def rr(self) -> int:
        return (1 << (8 * self.n8r)) % self.r

    @cached_property  # an inversion on every decode of a proof's points otherwise
    def rq_inv(self) -> int:
        return pow(self.rq, -1, self.q)

    @cached_property  # an inversion on every decode of a proof's points otherwise
    def rr_inv(self) -> int:
        return pow(self.rr, -1, self.r)

    @property
    def q_limbs64(self) -> int:
        return self.n8q // 8

    @property
    def r_limbs64(self) -> int:
        return self.n8r // 8

    @property
    def g1_bytes(self) -> int:
        return 2 * self.n8q

    @property
    def g2_bytes(self) -> int:
        return 4 * self.n8q


BN254 = Curve(
    name="bn128",
    q=0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47,
    r=0x30644E72E131A029B85045B68181585D2833E84879B9709143E1F593F0000001,
    n8q=32,
    n8r=32,
    g1_b=3,
    g2_b=(
        19485874751759354771024239261021720505790618469301721065564631296452457478373,
        266929791119991161246907387137283842545076965332900288569378510910307636690,
    ),
    g1_gen=(1, 2),
    g2_gen=(
        (
            10857046999023057135944570762232829481370756359578518086990519993285655852781,
            11559732032986387107991004021392285783925812861821192530917403151452391805634,
        ),
        (
            8495653923123431417604973247489272438418190587263600148770280649306958101930,
            4082367875863433681332203403145435568316851327593401208105741076214120093531,
        ),
    ),
    fq6_nonresidue=(9, 1),
    x_param=4965661367192848881,
    family="bn",
    aliases=("bn254", "altbn128", "bn128"),
)

BLS12_381 = Curve(
    name="bls12381",
    q=0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB,
    r=0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001,
    n8q=48,
    n8r=32,
    g1_b=4,
    g2_b=(4, 4),
    g1_gen=(
        3685416753713387016781088315183077757961620795782546409894578378688607592378376318836054947676345821548104185464507,
        1339506544944476473020471379941921221584933875938349620426543736416511423956333506472724655353366534992391756441569,
    ),
    g2_gen=(
        (
            352701069587466618187139116011060144890029952792775240219908644239793785735715026873347600343865175952761926303160,
            3059144344244213709971259814753781636986470325476647558659373206291635324768958432433509563104347017837885763365758,
        ),
        (
            1985150602287291935568054521177171638300868978215655730859378665066344726373823718423869104263333984641494340347905,
            927553665492332455747201965776037880757740193453592970025027978793976877002675564980949289727957565575433344219582,
        ),
    ),
    fq6_nonresidue=(1, 1),
    x_param=-0xD201000000010000,
    family="bls12",
    aliases=("bls12381", "bls12_381"),
)

CURVES: tuple[Curve, ...] = (BN254, BLS12_381)


def _normalise(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def curve_by_name(name: str) -> Curve:
    """Look a curve up the way snarkjs does: case-insensitive, non-alphanumerics dropped."""
    if not isinstance(name, str):  # not an AttributeError from inside _normalise
        raise TypeError(f"curve name must be a str such as 'bn128' or 'bls12381', got {type(name).__name__}")
    key = _normalise(name)
    for c in CURVES:
        if key == _normalise(c.name) or key in {_normalise(a) for a in c.aliases}:
            return c
    raise KeyError(f"unknown curve {name!r} (supported: bn128/bn254, bls12381)")


def curve_by_scalar_prime(r: int) -> Curve | None:
    """The curve whose scalar field is r (how snarkjs recognises .r1cs/.wtns files), or None."""
    for c in CURVES:
        if c.r == r:
            return c
    return None


def curve_by_base_prime(q: int) -> Curve | None:
    for c in CURVES:
        if c.q == q:
            return c
    return None


def _check() -> None:
    spec_rr = {
        "bn128": 0x0E0A77C19A07DF2F666EA36F7879462E36FC76959F60CD29AC96341C4FFFFFFB,
        "bls12381": 0x1824B159ACC5056F998C4FEFECBC4FF55884B7FA0003480200000001FFFFFFFE,
    }
    spec_rq = {
        "bn128": 0x0E0A77C19A07DF2F666EA36F7879462C0A78EB28F5C70B3DD35D438DC58F0D9D,
        "bls12381": 0x15F65EC3FA80E4935C071A97A256EC6D77CE5853705257455F48985753C758BAEBF4000BC40C0002760900000002FFFD,
    }
    spec_ws = {
        "bn128": 19103219067921713944291392827692070036145651957329286315305642004821462161904,
        "bls12381": 937917089079007706106976984802249742464848817460758522850752807661925904159,
    }
    for c in CURVES:
        assert c.rr == spec_rr[c.name] and c.rq == spec_rq[c.name], c.name
        assert c.root_of_unity(c.two_adicity) == spec_ws[c.name], c.name
        x, y = c.g1_gen
        assert (y * y - x * x * x - c.g1_b) % c.q == 0, c.name
    assert BN254.two_adicity == 28 and BLS12_381.two_adicity == 32


_check()
