"""Even/odd multiply-add chains for 8-limb fields: the NTT's twiddle products (gen_mont_ptx.py
writes them into mont_ptx.cuh).

ptxas turns a pair `mad.lo.cc d0, a, b, c0; madc.hi.cc d1, a, b, c1` (the low and high word of
one 32x32 product, added into two adjacent accumulator words, carry in and out) into ONE
IMAD.WIDE.U32.X.  The carry-chain and 64-bit-product forms of gen_mont_ptx.py do not give it
that pattern: per product they spend about 120 extra IMAD.X or IADD3.X folding high halves
into the next column (SASS counts in perf/RESULTS.md).  Here the products of a row are split
by the parity of their column into two accumulators, EVEN (pairs of words (0,1), (2,3), ...)
and ODD (pairs (1,2), (3,4), ...): inside each, a row's products are adjacent pairs of one
chain, and the two accumulators are added once at the end.

Every chain carries only as far as a bound allows (each stated where it is used); the host
simulator in tests/test_mont_eo.py runs the generated PTX on random and extreme operands
against Python integers.
"""
from __future__ import annotations


class _Chain:
    """One carry chain of multiply-add words.  add(kind, dst, a, b, addend): dst = the low or
    high word of a*b, plus addend (a register, or None for 0), plus the chain's carry."""

    def __init__(self, lines: list[str], carry_in: bool = False):
        self.lines, self.ops, self.carry_in = lines, [], carry_in

    def add(self, kind: str, dst: str, a: str, b: str, addend: str | None) -> None:
        self.ops.append((kind, dst, a, b, addend or "0"))

    def emit(self, carry_out: bool = False) -> None:
        for k, (kind, dst, a, b, addend) in enumerate(self.ops):
            first = k == 0 and not self.carry_in
            last = k == len(self.ops) - 1
            cc = ".cc" if (not last or carry_out) else ""
            op = ("mad" if first else "madc") + f".{kind}{cc}.u32"
            self.lines.append(f"{op} {dst}, {a}, {b}, {addend};")


class _Acc:
    """Accumulator words name0..name(size-1), each zero until first written (live)."""

    def __init__(self, name: str, size: int):
        self.name, self.live = name, [False] * size

    def __getitem__(self, k: int) -> str:
        return f"{self.name}{k}"

    def addend(self, k: int) -> str | None:
        return self[k] if self.live[k] else None

    def touch(self, k: int) -> None:
        self.live[k] = True


def _pair(chain: _Chain, acc: _Acc, c: int, a: str, b: str, lo_only: bool = False) -> None:
    """acc[c], acc[c+1] += a * b (low word only where lo_only: the top of a truncated result)."""
    chain.add("lo", acc[c], a, b, acc.addend(c))
    acc.touch(c)
    if not lo_only:
        chain.add("hi", acc[c + 1], a, b, acc.addend(c + 1))
        acc.touch(c + 1)


def _carry_into(lines: list[str], acc: _Acc, k: int) -> None:
    """acc[k] = the pending carry; acc[k] must still be zero (asserted): by the bounds below no
    chain ever carries into a word that already holds a value."""
    assert not acc.live[k], (acc.name, k)
    lines.append(f"addc.u32 {acc[k]}, 0, 0;")
    acc.touch(k)


def _merge(lines: list[str], out, e: _Acc, o: _Acc, k0: int, k1: int, carry_out: bool = False) -> None:
    """out(k - k0) = (e + o) word k for k in [k0, k1): one addition chain."""
    for k in range(k0, k1):
        op = "add" if k == k0 else "addc"
        cc = ".cc" if (k < k1 - 1 or carry_out) else ""
        lines.append(f"{op}{cc}.u32 {out(k - k0)}, {e.addend(k) or 0}, {o.addend(k) or 0};")


def _csub(lines: list[str], src, dst, p, n: int) -> None:
    """dst = src - p if src >= p else src (src < 2^(32n))."""
    lines.append(f"sub.cc.u32 s0, {src(0)}, {p(0)};")
    for j in range(1, n):
        lines.append(f"subc.cc.u32 s{j}, {src(j)}, {p(j)};")
    lines.append("subc.u32 c, 0, 0;")  # 0: no borrow (src >= p), else all ones
    lines.append("setp.eq.u32 nb, c, 0;")
    for j in range(n):
        lines.append(f"selp.u32 {dst(j)}, s{j}, {src(j)}, nb;")


def mul_shoup_eo(n: int) -> tuple[list[str], str]:
    """x * w mod p for a table constant w with ws = floor(w 2^(32n) / p) (Shoup), as even/odd
    chains.  Operands: r %0..%(n-1); x, w, ws; then the immediates p and p' = 2^(32n) - p.

    q = floor of (the columns >= n-1 of x * ws, plus the high words of column n-2) / 2^(32n).
    It falls short of floor(x w / p) in two ways: the dropped part (below 2n * 2^(32(n-1))) can
    take the carry into column n, which needs x * ws mod 2^(32n) below that part, and ws is
    rounded down, which costs one only when the fraction of x ws / 2^(32n) is above
    1 - x / 2^(32n) > 1/2.  The two exclude each other (tests/test_mont_eo.py), so q is at most
    one low and r = x w - q p lies in [0, 2p): computed as (x w + q p') mod 2^(32n) (needs
    2p < 2^(32n): both scalar fields), then made canonical by one conditional subtraction.
    92 wide products, 7 high and 16 low words."""
    assert n % 2 == 0
    x = lambda j: f"%{n + j}"  # noqa: E731
    w = lambda j: f"%{2 * n + j}"  # noqa: E731
    ws = lambda j: f"%{3 * n + j}"  # noqa: E731
    p = lambda j: f"%{4 * n + j}"  # noqa: E731
    pc = lambda j: f"%{5 * n + j}"  # noqa: E731  (p' = 2^(32n) - p)
    lines = ["{", f".reg .u32 qe<{n + 1}>, qo<{n + 1}>, q<{n + 1}>, re<{n}>, ro<{n}>, t<{n}>, s<{n}>, c;",
             ".reg .pred nb;"]
    # q: relative column c = i + j - (n - 1) in [0, n]; row i holds j >= n-1-i, so c in [0, i].
    # Bound: the terms of rows <= i sum below (x mod 2^(32(i+1))) ws / 2^(32(n-1)) < 2^(32(i+2)),
    # so after row i each accumulator fits its words 0..i+1 and a chain ending at word i+1
    # carries nothing out.
    qe, qo = _Acc("qe", n + 1), _Acc("qo", n + 1)
    for i in range(n):
        j0 = n - 1 - i
        even = _Chain(lines)
        for c in range(0, i + 1, 2):
            _pair(even, qe, c, x(i), ws(c + j0))
        top = max(range(0, i + 1, 2)) + 1
        even.emit(carry_out=top < i + 1)
        if top < i + 1:
            _carry_into(lines, qe, i + 1)
        odd = _Chain(lines)
        if i <= n - 2:  # the high word of x_i * ws_(n-2-i), column n-1
            odd.add("hi", qo[0], x(i), ws(n - 2 - i), qo.addend(0))
            qo.touch(0)
        odd_cs = list(range(1, i + 1, 2))
        for c in odd_cs:
            _pair(odd, qo, c, x(i), ws(c + j0))
        top = (odd_cs[-1] + 1) if odd_cs else 0
        odd.emit(carry_out=top < i + 1)
        if top < i + 1:
            _carry_into(lines, qo, top + 1)
    # Q = qe + qo < 2^(32(n+1)); q = Q >> 32 (word 0 only gives its carry)
    _merge(lines, lambda k: f"q{k}", qe, qo, 0, n + 1)
    # r = (x w + q p') mod 2^(32n): columns c = i + j < n; even columns to re, odd to ro; the
    # top word n-1 (odd) takes the low word only, and carries out of it are dropped (mod 2^(32n)).
    re, ro = _Acc("re", n), _Acc("ro", n)
    for mult, const in ((x, w), (lambda i: f"q{i + 1}", pc)):
        for i in range(n):
            for acc, parity in ((re, 0), (ro, 1)):
                chain = _Chain(lines)
                for c in range(i + ((i + parity) % 2), n, 2):
                    _pair(chain, acc, c, mult(i), const(c - i), lo_only=c == n - 1)
                if chain.ops:
                    chain.emit()
    _merge(lines, lambda k: f"t{k}", re, ro, 0, n)
    # t < 2p: one conditional subtraction
    _csub(lines, lambda j: f"t{j}", lambda j: f"%{j}", p, n)
    lines.append("}")
    return lines, "shoup"


def mul_mont_eo(n: int) -> tuple[list[str], str]:
    """Montgomery product a * b / 2^(32n) mod p (CIOS, one word of b a row) as even/odd chains.
    Operands: r %0..%(n-1); a, b; then the immediates p and inv = -p^-1 mod 2^32.

    The running value T = X + 2^32 Y, X the words at positions 0..n-1 (pairs (0,1), (2,3), ...),
    Y the words at positions 1..n (pairs (1,2), ...).  A row adds a*b_i (even a_j into X, odd
    into Y), m = X_0 inv, adds m p the same way, and divides by 2^32: X_0 is then zero, Y becomes
    the next X, and X's words 2..n-1 the next Y (moved as the next row's multiply-adds read them
    as addends) while X_1 alone is added into the next X_0.  With a, b < p < 2^(32n-1) and
    T < 2p before a row, T + a b_i + m p < 2^33 p < 2^(32(n+1)): Y (at positions 1..n) never
    carries out of position n; X's carries out of position n-1 are added into Y's top word.
    The result T < 2p takes one conditional subtraction."""
    assert n % 2 == 0
    a = lambda j: f"%{n + j}"  # noqa: E731
    b = lambda j: f"%{2 * n + j}"  # noqa: E731
    p = lambda j: f"%{3 * n + j}"  # noqa: E731
    inv = f"%{4 * n}"
    lines = ["{", f".reg .u32 u<{n}>, v<{n}>, t<{n}>, s<{n}>, m, c;", ".reg .pred nb;"]
    X, Y = "u", "v"  # register names of the two arrays; they swap every row

    def chain_x(mult: str, coeff) -> None:
        """X += coeff_even * mult; the carry out of position n-1 joins Y's top word."""
        ch = _Chain(lines)
        for j in range(0, n, 2):
            ch.add("lo", f"{X}{j}", coeff(j), mult, f"{X}{j}")
            ch.add("hi", f"{X}{j + 1}", coeff(j), mult, f"{X}{j + 1}")
        ch.emit(carry_out=True)
        lines.append(f"addc.u32 {Y}{n - 1}, {Y}{n - 1}, 0;")

    def chain_y(mult: str, coeff) -> None:
        """Y += coeff_odd * mult (Y word k at position k+1); no carry out (bound above)."""
        ch = _Chain(lines)
        for j in range(1, n, 2):
            ch.add("lo", f"{Y}{j - 1}", coeff(j), mult, f"{Y}{j - 1}")
            ch.add("hi", f"{Y}{j}", coeff(j), mult, f"{Y}{j}")
        ch.emit()

    for i in range(n):
        if i == 0:  # T = a * b_0: the products do not overlap, no carries
            for j in range(0, n, 2):
                lines.append(f"mul.lo.u32 {X}{j}, {a(j)}, {b(0)};")
                lines.append(f"mul.hi.u32 {X}{j + 1}, {a(j)}, {b(0)};")
                lines.append(f"mul.lo.u32 {Y}{j}, {a(j + 1)}, {b(0)};")
                lines.append(f"mul.hi.u32 {Y}{j + 1}, {a(j + 1)}, {b(0)};")
        else:
            # the shift of the previous row: new X = old Y (renamed), old X_1 added into X_0,
            # its carry entering the new Y chain, whose addends are old X_2.. (new Y_k = old X_(k+2))
            old_x, X, Y = X, Y, X
            lines.append(f"add.cc.u32 {X}0, {X}0, {old_x}1;")
            ch = _Chain(lines, carry_in=True)
            for j in range(1, n, 2):
                lo_add = f"{old_x}{j + 1}" if j + 1 < n else None
                hi_add = f"{old_x}{j + 2}" if j + 2 < n else None
                ch.add("lo", f"{Y}{j - 1}", a(j), b(i), lo_add)
                ch.add("hi", f"{Y}{j}", a(j), b(i), hi_add)
            ch.emit()
            chain_x(b(i), a)
        lines.append(f"mul.lo.u32 m, {X}0, {inv};")
        chain_y("m", p)
        chain_x("m", p)
    # T = Y + (X >> 32) after the last row's shift
    lines.append(f"add.cc.u32 t0, {Y}0, {X}1;")
    for k in range(1, n):
        op = "addc.cc.u32" if k < n - 1 else "addc.u32"
        lines.append(f"{op} t{k}, {Y}{k}, {X + str(k + 1) if k + 1 < n else 0};")
    _csub(lines, lambda j: f"t{j}", lambda j: f"%{j}", p, n)
    lines.append("}")
    return lines, "mont"


def wrap_shoup(n: int) -> str:
    lines, _ = mul_shoup_eo(n)
    body = "\n".join(f'        "{ln}\\n\\t"' for ln in lines)
    outs = ", ".join(f'"=r"(r[{j}])' for j in range(n))
    ins = ", ".join([f'"r"(x[{j}])' for j in range(n)] + [f'"r"(w[{j}])' for j in range(n)]
                    + [f'"r"(ws[{j}])' for j in range(n)])
    ps = ", ".join(f'"n"(P::MOD[{j}])' for j in range(n))
    pcs = ", ".join(f'"n"(0u - P::MOD[0])' if j == 0 else f'"n"(~P::MOD[{j}])' for j in range(n))
    return (
        "    // Shoup product by a table constant as even/odd chains (gen_mont_eo.py)\n"
        "    template <class P>\n"
        "    static __device__ __forceinline__ void mul_shoup_eo(uint32_t* r, const uint32_t* x, const uint32_t* w,\n"
        "                                                        const uint32_t* ws) {\n"
        f"        asm(\n{body}\n"
        f"        : {outs}\n        : {ins},\n          {ps},\n          {pcs});\n"
        "    }\n"
    )


def wrap_mont(n: int) -> str:
    lines, _ = mul_mont_eo(n)
    body = "\n".join(f'        "{ln}\\n\\t"' for ln in lines)
    outs = ", ".join(f'"=r"(r[{j}])' for j in range(n))
    ins = ", ".join([f'"r"(a[{j}])' for j in range(n)] + [f'"r"(b[{j}])' for j in range(n)])
    ps = ", ".join(f'"n"(P::MOD[{j}])' for j in range(n)) + ', "n"(P::INV)'
    return (
        "    // Montgomery product as even/odd chains (gen_mont_eo.py)\n"
        "    template <class P>\n"
        "    static __device__ __forceinline__ void mul_eo(uint32_t* r, const uint32_t* a, const uint32_t* b) {\n"
        f"        asm(\n{body}\n"
        f"        : {outs}\n        : {ins},\n          {ps});\n"
        "    }\n"
    )
