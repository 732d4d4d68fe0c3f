"""The field side of a development Groth16 setup (spec §4.5): what every key point is a multiple of.

Values are Python ints in numpy object arrays, so each field operation on a
whole vector runs in numpy's loop rather than in bytecode.  The Lagrange
values cost one geometric sequence and one batch inversion (about five
multiplications per point, in chunks across a process pool); the sparse sums
over the r1cs terms are one multiplication per term and one `np.add.reduceat`
per chunk of terms, with the coefficients decoded once per distinct value
(circuits use few: 1, -1, powers of two).

Closed forms, with n = 2^k, ω the n-th root, Z(X) = X^n - 1:

* L_c(τ) = Z(τ)/n · ω^c/(τ - ω^c), the Lagrange basis of {ω^c} at τ.
* The H points are the Lagrange basis of the 2n points {ω^j} ∪ {g·ω^j} at τ,
  at the coset points x_j = g·ω^j (g = ω_2n, or the shift 25 when k equals the
  2-adicity).  With Z'(X) = (X^n - 1)(X^n - g^n):
  L'_j(τ) = Z'(τ)·x_j / (n·g^n·(g^n - 1)·(τ - x_j)).
  For g = ω_2n (g^n = -1) this is (τ^2n - 1)/(2n) · x_j/(τ - x_j), the usual form.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.algebra.curves import Curve
from engine.errors import BudgetError, CurveMismatchError
from engine.algebra.field import batch_inverse_array, geometric
from engine.algebra.limbs import fr_from_ints, to_ints
from scheduler.setup_pool import fork_map

PARALLEL_MIN = 1 << 15  # shorter vectors are not worth a process pool


@dataclass
class KeyScalars:
    """The discrete logs of every point of a key (plain (count, 4) uint64 each, spec §4.5)."""

    a: np.ndarray  # u_i(τ), one per wire
    b: np.ndarray  # v_i(τ), one per wire (for both B1 and B2)
    ic: np.ndarray  # β u_i + α v_i + w_i for i <= nPublic
    c: np.ndarray  # (β u_i + α v_i + w_i)/δ for i > nPublic
    h: np.ndarray  # L'_{2j+1}(τ)/δ, j < n


def log_domain(curve: Curve, n_constraints: int, n_public: int, name: str = "circuit") -> int:
    """k with n = 2^k as snarkjs picks it: floor(log2(m + nPublic)) + 1; too large for the curve -> error."""
    k = max(1, (n_constraints + n_public).bit_length())
    limit = min(curve.two_adicity, 31)  # roots of unity; and domainSize is a u32 in the zkey header
    if k > limit:
        raise CurveMismatchError(
            f"{name}: {n_constraints} constraints + {n_public} public signals need a domain of 2^{k}, but "
            f"{curve.name} keys hold at most 2^{limit} (2-adicity {curve.two_adicity}, u32 domain size)"
        )
    return k


def available_memory() -> int | None:
    """Bytes this process can still take: MemAvailable + SwapFree, at most its cgroup's limit (not the limit less
    its usage, which counts page cache the kernel would give back); None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            info = {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in f if ":" in line)}
        avail = info["MemAvailable"] + info.get("SwapFree", 0)
    except (OSError, KeyError, ValueError, IndexError):
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file) as f:
                avail = min(avail, int(f.read()))  # "max": no limit (ValueError)
        except (OSError, ValueError):
            continue
    return avail


def check_memory(need: int, name: str, what: str) -> None:
    """Refuse, before any work, what cannot fit in this machine's memory (it ran until the OOM killer came);
    `need` is a lower bound, so nothing that would fit is refused."""
    avail = available_memory()
    if avail is not None and need > avail:
        from scheduler.budget import fmt_bytes  # noqa: PLC0415 - anyio, only for the refusal

        raise BudgetError(f"{name}: {what} needs at least {fmt_bytes(need, up=True)} of memory, but this machine "
                          f"has {fmt_bytes(avail)} available")


def _inverse_series_chunk(st: dict, start: int, stop: int):
    """scale / (first·ratio^i - 1) for i in [start, stop): the shape of both Lagrange forms below."""
    r = st["r"]
    seq = geometric(st["first"] * pow(st["ratio"], start, r), st["ratio"], stop - start, r)
    out = batch_inverse_array((seq - 1) % r, r) * st["scale"] % r
    return fr_from_ints(out.tolist()) if st["limbs"] else out


def _inverse_series(r: int, first: int, ratio: int, scale: int, count: int, *, limbs: bool, workers: int):
    st = {"r": r, "first": first, "ratio": ratio, "scale": scale, "limbs": limbs}
    parts = fork_map(_inverse_series_chunk, count, st, workers=workers, min_parallel=PARALLEL_MIN)
    if not parts:
        return np.zeros((0, 4), np.uint64) if limbs else np.empty(0, dtype=object)
    return np.concatenate(parts)


def lagrange_at(curve: Curve, k: int, tau: int, count: int, *, workers: int = 1) -> np.ndarray:
    """L_c(τ) for c < count on the 2^k domain (object array of ints in [0, r)).

    L_c(τ) = Z(τ)/n · ω^c/(τ - ω^c) = (Z(τ)/n) / (τ·ω^-c - 1): one geometric
    sequence and one batch inversion.
    """
    r, n = curve.r, 1 << k
    zn = (pow(tau, n, r) - 1) * pow(n, -1, r) % r
    if zn == 0:
        raise ValueError("tau lies in the evaluation domain")
    w_inv = pow(curve.root_of_unity(k), -1, r)
    return _inverse_series(r, tau, w_inv, zn, count, limbs=False, workers=workers)


def coset_lagrange_at(curve: Curve, k: int, tau: int, scale: int = 1, *, limbs: bool = False,
                      workers: int = 1, g: int | None = None) -> np.ndarray:
    """scale·L'_j(τ) at the coset points x_j = g·ω^j, j < n (see the module docstring).

    L'_j(τ) = const·x_j/(τ - x_j) = const / (τ·g^-1·ω^-j - 1).  With limbs,
    the result is a plain (n, 4) uint64 array, else an object array.  g is the
    curve's coset generator for 2^k unless given (tests use the k = 2-adicity
    shift on small domains).
    """
    r, n = curve.r, 1 << k
    g = curve.coset_generator(k) if g is None else g
    gn = pow(g, n, r)
    tn = pow(tau, n, r)
    num = (tn - 1) * (tn - gn) % r
    den = n * gn % r * (gn - 1) % r
    if num == 0:
        raise ValueError("tau lies in the evaluation domain or its coset")
    const = num * pow(den, -1, r) % r * scale % r
    w_inv = pow(curve.root_of_unity(k), -1, r)
    return _inverse_series(r, tau * pow(g, -1, r) % r, w_inv, const, n, limbs=limbs, workers=workers)


def signed_coefficients(curve: Curve, coeffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct coefficients as small signed ints (c or c - r) and each term's index into them.

    Distinct rows are found through a 64-bit mix of the limbs and then checked
    row by row (a collision falls back to an exact byte sort).
    """
    c = np.ascontiguousarray(coeffs, dtype=np.uint64)
    if c.shape[0] == 0:
        return np.empty(0, dtype=object), np.empty(0, dtype=np.int64)
    mix = c[:, 0] ^ (c[:, 1] * np.uint64(0x9E3779B97F4A7C15)) ^ (c[:, 2] * np.uint64(0xC2B2AE3D27D4EB4F))
    mix ^= c[:, 3] * np.uint64(0x165667B19E3779F9)
    _, first, inverse = np.unique(mix, return_index=True, return_inverse=True)
    if not (c[first][inverse] == c).all():
        rows = c.view(np.dtype((np.void, 32))).ravel()
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    r, half = curve.r, curve.r // 2
    vals = [v - r if v > half else v for v in to_ints(c[first])]
    table = np.empty(len(vals), dtype=object)
    table[:] = vals
    return table, inverse.reshape(-1).astype(np.int64)


def wire_sums(curve: Curve, lc, row_values: np.ndarray, n_wires: int, chunk: int = 1 << 22) -> np.ndarray:
    """Σ_c M[c][i]·row_values[c] for every wire i (object array of ints in [0, r)).

    Terms are processed in chunks (bounded memory for circuits of tens of
    millions of terms): products, sort by wire, one reduceat per chunk.
    """
    r = curve.r
    out = np.zeros(n_wires, dtype=object)
    nnz = int(lc.row_ptr[-1])
    if nnz == 0:
        return out
    table, index = signed_coefficients(curve, lc.coeffs)
    rows = np.repeat(np.arange(len(lc.row_ptr) - 1, dtype=np.int64), np.diff(lc.row_ptr))
    wires = np.asarray(lc.wires, dtype=np.int64)
    for start in range(0, nnz, chunk):
        sl = slice(start, min(nnz, start + chunk))
        w = wires[sl]
        order = np.argsort(w, kind="stable")
        ws = w[order]
        prod = row_values[rows[sl][order]] * table[index[sl][order]]
        heads = np.flatnonzero(np.concatenate(([True], ws[1:] != ws[:-1])))
        out[ws[heads]] += np.add.reduceat(prod, heads)
    return out % r


def _wire_chunk(st: dict, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Limbs of u_i, v_i and of β u_i + α v_i + w_i (divided by δ for private wires), i in [start, stop)."""
    r, npub = st["r"], st["npub"]
    u, v, w = (st[x][start:stop] for x in "uvw")
    t = (st["beta"] * u + st["alpha"] * v + w) % r
    private = slice(max(0, npub + 1 - start), None)
    t[private] = t[private] * st["delta_inv"] % r
    return tuple(fr_from_ints(x.tolist()) if len(x) else np.zeros((0, 4), np.uint64) for x in (u, v, t))


def key_scalars(curve: Curve, r1cs, k: int, waste, progress=None, *, workers: int = 1):
    """KeyScalars of a circuit (spec §4.5), the CPU way; `progress` gets one stage per step."""
    from engine.progress import Progress  # noqa: PLC0415

    prog = progress or Progress()
    r, m, npub, nv = curve.r, r1cs.n_constraints, r1cs.n_public, r1cs.n_wires
    delta_inv = pow(waste.delta, -1, r)
    with prog.timed("lagrange"):
        lag = lagrange_at(curve, k, waste.tau, m + npub + 1, workers=workers)
    with prog.timed("qap A"):
        u = wire_sums(curve, r1cs.a, lag, nv)
        u[: npub + 1] = (u[: npub + 1] + lag[m : m + npub + 1]) % r  # the rows (0, m+s, s, 1) of §4.4
    with prog.timed("qap B"):
        v = wire_sums(curve, r1cs.b, lag, nv)
    with prog.timed("qap C"):
        w = wire_sums(curve, r1cs.c, lag, nv)
    del lag
    with prog.timed("wire scalars"):
        st = {"r": r, "npub": npub, "u": u, "v": v, "w": w, "alpha": waste.alpha, "beta": waste.beta,
              "delta_inv": delta_inv}
        parts = fork_map(_wire_chunk, nv, st, workers=workers, min_parallel=PARALLEL_MIN)
        a, b, t = (np.concatenate([p[i] for p in parts]) for i in range(3))
    with prog.timed("h"):
        h = coset_lagrange_at(curve, k, waste.tau, delta_inv, limbs=True, workers=workers)
    return KeyScalars(a=a, b=b, ic=t[: npub + 1], c=t[npub + 1 :], h=h)


def coeff_entries(curve: Curve, r1cs) -> np.ndarray:
    """The zkey coeffs section exactly as zkey_new emits it (spec §4.4), as a COEFF_DTYPE array.

    Per constraint its A terms then its B terms, value = c·R^2 mod r; then
    (0, m + s, s, R^2 mod r) for s = 0..nPublic.
    """
    from engine.formats.zkey import COEFF_DTYPE  # noqa: PLC0415

    m, npub, r = r1cs.n_constraints, r1cs.n_public, curve.r
    r2 = (1 << 512) % r
    na, nb = np.diff(r1cs.a.row_ptr), np.diff(r1cs.b.row_ptr)
    per_row = na + nb
    start = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(per_row, out=start[1:])
    total = int(start[-1]) + npub + 1
    out = np.zeros(total, dtype=COEFF_DTYPE)
    for mtx, lc, offset in ((0, r1cs.a, np.zeros(m, dtype=np.int64)), (1, r1cs.b, na)):
        cnt = np.diff(lc.row_ptr)
        nnz = int(lc.row_ptr[-1])
        if nnz == 0:
            continue
        rows = np.repeat(np.arange(m, dtype=np.int64), cnt)
        pos = np.repeat(start[:-1] + offset - lc.row_ptr[:-1], cnt) + np.arange(nnz, dtype=np.int64)
        table, index = signed_coefficients(curve, lc.coeffs)
        enc = fr_from_ints([int(v) * r2 % r for v in table])
        out["matrix"][pos] = mtx
        out["row"][pos] = rows
        out["wire"][pos] = lc.wires
        out["value"][pos] = enc[index]
    extra = np.arange(npub + 1)
    tail = slice(total - npub - 1, total)
    out["matrix"][tail] = 0
    out["row"][tail] = m + extra
    out["wire"][tail] = extra
    out["value"][tail] = fr_from_ints([r2])[0]
    return out
