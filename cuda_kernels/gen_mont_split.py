"""The Montgomery product split in two, as even/odd chains (gen_mont_eo.py's form): a double-width
product T = a b (or a squaring) and the reduction REDC(T) = T / 2^(32n) mod p.

Why: the MSM's accumulation and the key's fold tables are bound by the pipe that runs the integer
multiply-adds (IMAD.WIDE for the even/odd product's 32 x 32 -> 64 products, and also the IMAD.X and
IMAD.MOV that ptxas puts there; perf/RESULTS.md, session 32).  A fused Montgomery product spends n^2
wide products on a b and n^2 on the reduction.  Split, a squaring needs n(n+1)/2 for a^2 (each cross
product once, doubled by an addition chain; measured 1.18x the fused product on BN254, 1.22x on
BLS12-381), and a difference of two products one reduction, not two (Y3 = R (Q - X3) - Y1 PPP of the
XYZZ formulas: REDC(T1 + p^2 - T2)).  Karatsuba for a b (3 (n/2)^2
wide products) was measured too and dropped: its sign and carry additions land on the same pipe as
IMAD.X (0.91x on BN254, 1.00x on BLS12-381; commit e7ed40a has it).

Every chain carries only as far as a bound allows (stated where it is used); tests/test_mont_split.py
runs the generated PTX on the host (tests/ptx_sim.py) against Python integers.
"""
from __future__ import annotations

try:  # imported as cuda_kernels.gen_mont_split or run beside gen_mont_ptx.py as a script
    from cuda_kernels.gen_mont_eo import _Acc, _Chain, _carry_into, _csub, _merge, _pair
except ImportError:  # pragma: no cover
    from gen_mont_eo import _Acc, _Chain, _carry_into, _csub, _merge, _pair


def _row(lines: list[str], e: _Acc, o: _Acc, a, b_i: str, i: int, first: int, n: int) -> None:
    """e + o += (a_j for j >= first) * b_i at columns i + j, one chain a parity.  Bound (n-word a, rows
    taken in order of i): after row i the rows' sum is below a 2^(32(i+1)) < 2^(32(n+i+1)), so each
    accumulator fits the words up to n + i, and a chain ending below that word carries into the next
    one, never written before."""
    for acc, parity in ((e, 0), (o, 1)):
        cs = [c for c in range(i + first, i + n) if c % 2 == parity]
        if not cs:
            continue
        ch = _Chain(lines)
        for c in cs:
            _pair(ch, acc, c, a(c - i), b_i)
        top = cs[-1] + 1
        if top < n + i:
            ch.emit(carry_out=True)
            _carry_into(lines, acc, top + 1)
        else:
            ch.emit()


def wide_body(lines: list[str], out, a, b, n: int, tag: str) -> None:
    """out(0..2n-1) = a * b (n words each): n^2 wide products."""
    e, o = _Acc(f"{tag}e", 2 * n), _Acc(f"{tag}o", 2 * n)
    lines.append(f".reg .u32 {tag}e<{2 * n}>, {tag}o<{2 * n}>;")
    for i in range(n):
        _row(lines, e, o, a, b(i), i, 0, n)
    _merge(lines, out, e, o, 0, 2 * n)


def sqr_body(lines: list[str], out, a, n: int, tag: str) -> None:
    """out(0..2n-1) = a^2: the cross products a_i a_j (i < j) once, doubled, then the squares a_i^2
    added in one chain: n(n+1)/2 wide products.  Bound of the cross rows <= i: their sum is below
    (a mod 2^(32(i+1))) a < 2^(32(n+i+1)), as for _rows; the whole cross sum is below a^2 / 2, so
    its double fits 2n words, and the squares' chain ends at a^2 < 2^(64n)."""
    e, o = _Acc(f"{tag}e", 2 * n), _Acc(f"{tag}o", 2 * n)
    lines.append(f".reg .u32 {tag}e<{2 * n}>, {tag}o<{2 * n}>, {tag}c<{2 * n}>;")
    for i in range(n - 1):
        _row(lines, e, o, a, a(i), i, i + 1, n)
    c = lambda k: f"{tag}c{k}"  # noqa: E731
    _merge(lines, c, e, o, 0, 2 * n)
    lines.append(f"add.cc.u32 {c(0)}, {c(0)}, {c(0)};")
    for k in range(1, 2 * n):
        op = "addc.cc.u32" if k < 2 * n - 1 else "addc.u32"
        lines.append(f"{op} {c(k)}, {c(k)}, {c(k)};")
    for i in range(n):
        lines.append(f"{'mad' if i == 0 else 'madc'}.lo.cc.u32 {out(2 * i)}, {a(i)}, {a(i)}, {c(2 * i)};")
        cc = ".cc" if i < n - 1 else ""
        lines.append(f"madc.hi{cc}.u32 {out(2 * i + 1)}, {a(i)}, {a(i)}, {c(2 * i + 1)};")


def redc_body(lines: list[str], out, t, p, inv: str, n: int, tag: str) -> None:
    """out = T / 2^(32n) mod p, fully reduced, for T < p 2^(32n) (2n words t(0..2n-1)), p < 2^(32n-1).
    The low half's reduction is gen_mont_eo's CIOS rows without their a b_i chains: the window
    X + 2^32 Y (X at positions 0..n-1, Y at 1..n), m = X_0 inv, X, Y += m p by parity, then the shift
    by renaming (X_1 added into the new X_0, X_2.. the addends of the next Y chain).  The window
    stays below 2^(32n) + 2^32 p < 2^(32(n+1)), so Y never carries out of position n.  After n rows
    U = (T_lo + M p) / 2^(32n) < p + 1, and U + T_hi < 2p takes one conditional subtraction.  n^2 wide
    products."""
    lines.append(f".reg .u32 {tag}u<{n}>, {tag}v<{n}>, {tag}r<{n}>, {tag}m;")
    X, Y = f"{tag}u", f"{tag}v"

    def chain_x(addends) -> None:
        ch = _Chain(lines)
        for j in range(0, n, 2):
            ch.add("lo", f"{X}{j}", p(j), f"{tag}m", addends(j))
            ch.add("hi", f"{X}{j + 1}", p(j), f"{tag}m", addends(j + 1))
        ch.emit(carry_out=True)
        lines.append(f"addc.u32 {Y}{n - 1}, {Y}{n - 1}, 0;")

    for i in range(n):
        if i == 0:
            lines.append(f"mul.lo.u32 {tag}m, {t(0)}, {inv};")
            ch = _Chain(lines)
            for j in range(1, n, 2):
                ch.add("lo", f"{Y}{j - 1}", p(j), f"{tag}m", None)
                ch.add("hi", f"{Y}{j}", p(j), f"{tag}m", None)
            ch.emit()
            chain_x(t)
        else:
            old_x, X, Y = X, Y, X
            lines.append(f"add.cc.u32 {X}0, {X}0, {old_x}1;")
            lines.append(f"mul.lo.u32 {tag}m, {X}0, {inv};")  # no .cc: the carry waits for the Y chain
            ch = _Chain(lines, carry_in=True)
            for j in range(1, n, 2):
                ch.add("lo", f"{Y}{j - 1}", p(j), f"{tag}m", f"{old_x}{j + 1}" if j + 1 < n else None)
                ch.add("hi", f"{Y}{j}", p(j), f"{tag}m", f"{old_x}{j + 2}" if j + 2 < n else None)
            ch.emit()
            chain_x(lambda j: f"{X}{j}")
    r = lambda k: f"{tag}r{k}"  # noqa: E731
    # U = Y + (X >> 32); then U + T_hi
    lines.append(f"add.cc.u32 {r(0)}, {Y}0, {X}1;")
    for k in range(1, n):
        op = "addc.cc.u32" if k < n - 1 else "addc.u32"
        lines.append(f"{op} {r(k)}, {Y}{k}, {X + str(k + 1) if k + 1 < n else 0};")
    lines.append(f"add.cc.u32 {r(0)}, {r(0)}, {t(n)};")
    for k in range(1, n):
        op = "addc.cc.u32" if k < n - 1 else "addc.u32"
        lines.append(f"{op} {r(k)}, {r(k)}, {t(n + k)};")
    lines.append(f".reg .u32 s<{n}>, c;")
    lines.append(".reg .pred nb;")
    _csub(lines, r, out, p, n)


def redc_diff_body(lines: list[str], out, t1, t2, p2, p, inv: str, n: int, tag: str) -> None:
    """out = (T1 - T2) / 2^(32n) mod p: REDC(T1 + K - T2), one reduction for a difference of products.
    K = p^2 (the immediates p2) for T1, T2 < p^2: T1 + p^2 < 2p^2 never carries out of 2n words and
    stays above T2, the sum below 2 p^2 < p 2^(32n).  K = 2 p^2 for T1 < p^2, T2 < 2 p^2 (an Fq2
    product's c1 = s - (v0 + v1)): the sum below 3 p^2 < p 2^(32n) where 3p < 2^(32n) (both curves)."""
    lines.append(f".reg .u32 {tag}t<{2 * n}>;")
    t = lambda k: f"{tag}t{k}"  # noqa: E731
    lines.append(f"add.cc.u32 {t(0)}, {t1(0)}, {p2(0)};")
    for k in range(1, 2 * n):
        op = "addc.cc.u32" if k < 2 * n - 1 else "addc.u32"
        lines.append(f"{op} {t(k)}, {t1(k)}, {p2(k)};")
    lines.append(f"sub.cc.u32 {t(0)}, {t(0)}, {t2(0)};")
    for k in range(1, 2 * n):
        op = "subc.cc.u32" if k < 2 * n - 1 else "subc.u32"
        lines.append(f"{op} {t(k)}, {t(k)}, {t2(k)};")
    redc_body(lines, out, t, p, inv, n, tag + "r")


def product(n: int, kind: str) -> list[str]:
    """One asm body: kind "wide" (%0..%(2n-1) = a b; a, b), "sqr" (= a^2; a), "redc" (%0..%(n-1) =
    REDC(T); T in 2n words, then the immediates p and inv), "redcd" (%0..%(n-1) = REDC(T1 + p^2 - T2);
    T1, T2, then the immediates p^2, p, inv), "redcd2" (the same with 2 p^2 for T2 < 2 p^2), "sqrm" (sqr
    + redc: %0..%(n-1) = a^2 / R mod p; a, p, inv)."""
    lines = ["{"]
    out = lambda k: f"%{k}"  # noqa: E731
    if kind in ("wide", "sqr"):
        a = lambda j: f"%{2 * n + j}"  # noqa: E731
        b = lambda j: f"%{3 * n + j}"  # noqa: E731
        if kind == "wide":
            wide_body(lines, out, a, b, n, "w")
        else:
            sqr_body(lines, out, a, n, "q")
    elif kind == "redc":
        t = lambda k: f"%{n + k}"  # noqa: E731
        p = lambda j: f"%{3 * n + j}"  # noqa: E731
        redc_body(lines, out, t, p, f"%{4 * n}", n, "r")
    elif kind in ("redcd", "redcd2"):  # the immediates: p^2 (redcd) or 2 p^2 (redcd2)
        t1 = lambda k: f"%{n + k}"  # noqa: E731
        t2 = lambda k: f"%{3 * n + k}"  # noqa: E731
        p2 = lambda k: f"%{5 * n + k}"  # noqa: E731
        p = lambda j: f"%{7 * n + j}"  # noqa: E731
        redc_diff_body(lines, out, t1, t2, p2, p, f"%{8 * n}", n, "d")
    elif kind == "sqrm":
        a = lambda j: f"%{n + j}"  # noqa: E731
        p = lambda j: f"%{2 * n + j}"  # noqa: E731
        lines.append(f".reg .u32 T<{2 * n}>;")
        tw = lambda k: f"T{k}"  # noqa: E731
        sqr_body(lines, tw, a, n, "q")
        redc_body(lines, out, tw, p, f"%{3 * n}", n, "r")
    else:
        raise ValueError(kind)
    lines.append("}")
    return lines


def _wrap(name: str, doc: str, lines: list[str], outs: list[str], ins: list[str], imms: list[str]) -> str:
    body = "\n".join(f'        "{ln}\\n\\t"' for ln in lines)
    tail = f",\n          {', '.join(imms)}" if imms else ""
    return (
        f"    // {doc} (gen_mont_split.py)\n"
        "    template <class P>\n"
        f"    static __device__ __forceinline__ void {name} {{\n"
        f"        asm(\n{body}\n"
        f"        : {', '.join(outs)}\n        : {', '.join(ins)}{tail});\n"
        "    }\n"
    )


def wrappers(n: int) -> str:
    """The methods of mont_ptx<n> that field.cuh's split form calls: wide_eo (a 2n-word product),
    redc_diff_eo, sqr_split (the squaring and its reduction in one statement), and for the Fq2 product
    (c0 = (v0 - v1) / R, c1 = (s - (v0 + v1)) / R) redc_diff2_eo (field.cuh adds v0 + v1 in C++: an asm
    addition there gave a wrong c1 on the device, session 33).  The bodies "sqr" and "redc" alone are
    what tests/test_mont_split.py checks piece by piece."""
    w = lambda arr, k: [f'"r"({arr}[{j}])' for j in range(k)]  # noqa: E731
    # outputs early-clobbered ("=&r") so that no output shares a register with an input: each body
    # below writes its outputs last anyway (tests/test_mont_split.py), this keeps that true if one changes
    o = lambda arr, k: [f'"=&r"({arr}[{j}])' for j in range(k)]  # noqa: E731
    ps = [f'"n"(P::MOD[{j}])' for j in range(n)] + ['"n"(P::INV)']
    return "".join([
        _wrap("wide_eo(uint32_t* t, const uint32_t* a, const uint32_t* b)", "T = a b, 2N words",
              product(n, "wide"), o("t", 2 * n), w("a", n) + w("b", n), []),
        _wrap("redc_diff_eo(uint32_t* r, const uint32_t* t1, const uint32_t* t2)",
              "r = (T1 - T2) / R mod p for T1, T2 < p^2, one reduction", product(n, "redcd"), o("r", n),
              w("t1", 2 * n) + w("t2", 2 * n), [f'"n"(P::MOD2[{j}])' for j in range(2 * n)] + ps),
        _wrap("sqr_split(uint32_t* r, const uint32_t* a)", "a^2 / R mod p: the squaring, then REDC",
              product(n, "sqrm"), o("r", n), w("a", n), ps),
        _wrap("redc_diff2_eo(uint32_t* r, const uint32_t* t1, const uint32_t* t2)",
              "r = (T1 - T2) / R mod p for T1 < p^2, T2 < 2 p^2, one reduction", product(n, "redcd2"), o("r", n),
              w("t1", 2 * n) + w("t2", 2 * n), [f'"n"(P::MOD2X2[{j}])' for j in range(2 * n)] + ps),
    ])
