"""The proof's epilogue and self-check on the device: per-key tables, per-proof launches, decoding.

Per key (`KeyEpilogue`, built when the key is loaded, all on the device): the byte
tables of δ1, α1, β1 (G1), δ2 (G2) and, for up to IC_TABLE_MAX public inputs, IC_1..IC_n
that the epilogue's fixed-base products read;
the key's α1, β1, β2 and IC points; the pairing constants, the prepared lines of γ2,
δ2 and β2, and the check's target e(α1, β2)^-1 = pairing(-α1, β2).

Per proof, three phases (cuda_kernels/groth16_check.cuh): `early` on a side stream
as soon as the witness and r, s are up (table products, the public-input point L);
`mid` on the side stream once the A, B1, C, H sums exist, beside the B2 MSM (s·A,
r·B1, pi_a, pi_c); `final` on the compute stream after the B2 MSM (pi_b, the three
Miller loops side by side on four warps, the final exponentiation on two, the flag).  Everything stays on the
device; what comes back (one copy, after the MSM sums) is the affine proof and
the flag.  r and s come from the OS's CSPRNG (`secrets`) and travel with the witness.
"""
from __future__ import annotations

import secrets
import threading

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Stream, U32, launch

from engine.algebra import glv
from engine.algebra.curves import Curve
from engine.algebra.limbs import from_ints, g1_from_mont, g1_to_mont, g2_from_mont, g2_to_mont
from engine.backends.gpu import verify as gverify
from engine.backends.gpu.runtime import free_buffers, release_all

FB_ROWS = 32 * 256  # rows of a byte table (epilogue.cuh)
IC_TABLE_MAX = 4  # keys with up to this many public inputs get byte tables of IC_1..IC_n (groth16_check.cuh's
# WARP_IC_MAX): L's products are then fixed-base, 32 additions each, not a 256-bit double-and-add chain
PAIRING_KERNEL = "groth16_pairing"  # the tail's phases, the batched check, the tools (kernels.cu)
TAIL_EARLY, TAIL_MID, TAIL_FINAL, BATCH_CHECK, TOOLS = 0, 1, 2, 3, 16  # its ops
TAIL_MID_PRODUCTS, TAIL_JOIN = 4, 5  # the mid phase in two launches (a small proof's: launch.py)
TAIL_JOIN_PRODUCTS = 6  # the join after s A and r B1 came from MSMs (a small proof's products beside: launch.py)
TAIL_PI_B, TAIL_FINAL_GIVEN_B = 9, 10  # pi_b beside (a small proof's, after B2), then the final phase without it
PAIRING_VALUE = 9  # the tools' op for pairing(P, Q)


def launch_pairing(mod, grid: int, block: int, stream: Stream, op: int, consts, ptrs: tuple = (), out=0,
                   u: tuple = ()) -> None:
    """groth16_pairing(op, consts, p1 .. p9 = ptrs, p10 = out, u1 .. u5 = u): kernels.cu says what
    each op reads from them (u4, u5: a batch's strides, engine/backends/gpu/batch.py)."""
    if len(ptrs) > 9 or len(u) > 5:
        raise ValueError(f"groth16_pairing takes 9 pointers and 5 words, not {len(ptrs)} and {len(u)}")
    ptrs = (*ptrs, *(0,) * (9 - len(ptrs)))
    words = [x if isinstance(x, U32) else U32(x) for x in (*u, *(0,) * (5 - len(u)))]
    launch(mod, PAIRING_KERNEL, grid, block, stream, U32(op), consts, *ptrs, out, *words)
SCALAR_BYTES = 6 * 32  # r, s, rs, s's and r's GLV halves, their signs: after the witness


def g1_words(curve: Curve) -> int:
    return curve.n8q // 2  # 2 coordinates of n8q bytes, in 32-bit words


def proof_bytes(curve: Curve) -> int:
    """pi_a, pi_b, pi_c, L (affine) and the check's flag word (padded to 16 bytes): what comes back."""
    return 3 * 2 * curve.n8q + 4 * curve.n8q + 16


def blinding_scalars(curve: Curve, draw=secrets.randbelow) -> np.ndarray:
    """The epilogue's inputs as six plain (4,) uint64 rows: r, s, rs mod r, then s's and r's GLV
    splits (engine/algebra/glv.py: |k1| in the low 128 bits, |k2| in the high), then their sign
    bits (s's in the first 32-bit word, r's in the second): the mid phase's products by A and B1
    run as two half-length products each."""
    r, s = draw(curve.r), draw(curve.r)
    (s_halves, s_signs), (r_halves, r_signs) = glv.split_words(curve, s), glv.split_words(curve, r)
    return from_ints([r, s, r * s % curve.r, s_halves, r_halves, s_signs | r_signs << 32], 4)


def ic_tables(n_public: int) -> int:
    """How many IC points (IC_1 ..) a key with n_public public inputs has byte tables for."""
    return n_public if n_public <= IC_TABLE_MAX else 0


def key_buffer_bytes(curve: Curve, n_public: int) -> dict[str, int]:
    """The device buffers `KeyEpilogue` allocates for a key, by name, in bytes (no device needed:
    footprint.py counts them into the key's device bytes)."""
    g1b, g2b = 2 * curve.n8q, 4 * curve.n8q
    return {
        "points": (2 + n_public + 1) * g1b + g2b,  # alpha1, beta1, beta2, IC_0..IC_nPublic
        "bases": 3 * g1b + g2b,  # delta1, alpha1, beta1, delta2
        "tables": FB_ROWS * (3 * g1b + g2b + ic_tables(n_public) * g1b),  # then IC_1.. (ic_tables)
        "consts": gverify.pairing_consts_nbytes(curve),
        "g2": 3 * g2b,  # gamma2, delta2, beta2
        "lines": 3 * gverify.n_lines(curve) * 3 * 2 * curve.n8q,
        "neg_alpha": g1b,
        "target": 12 * curve.n8q,
    }


def key_bytes(curve: Curve, n_public: int) -> int:
    """Device bytes of one key's `KeyEpilogue` (each buffer at least Device.alloc's 16 bytes)."""
    return sum(max(b, 16) for b in key_buffer_bytes(curve, n_public).values())


def proof_device_bytes(curve: Curve) -> int:
    """What the tail adds to one proof's working set: r, s, rs after the witness, and the affine
    proof, L, the flag and the phases' scratch after the MSM sums (pipeline.stage)."""
    return SCALAR_BYTES + proof_bytes(curve) + scratch_bytes(curve)


class KeyEpilogue:
    """What the epilogue and the check need of one key, resident beside its points."""

    def __init__(self, key, zkey):
        curve = zkey.curve
        stream: Stream = key.ctx.upload_stream
        mod = key.module
        self.curve = curve
        self.n_public = zkey.n_public
        size = key_buffer_bytes(curve, zkey.n_public)

        def upload(name: str, host: np.ndarray | None = None) -> DeviceBuffer:
            # every buffer exactly as key_buffer_bytes counts it (the key's footprint)
            host = np.zeros(0, np.uint8) if host is None else np.ascontiguousarray(host)
            if host.nbytes not in (0, size[name]):
                raise RuntimeError(f"epilogue buffer {name}: {host.nbytes} bytes, counted {size[name]}")
            return key._upload(host, reserve=size[name])

        g1b, g2b = 2 * curve.n8q, 4 * curve.n8q
        neg_alpha = g1_to_mont(curve, [_neg(curve, g1_from_mont(curve, np.asarray(zkey.alpha1))[0])])
        g1_pts = np.concatenate([np.asarray(p, dtype=np.uint64).reshape(-1, 2, curve.q_limbs64)
                                 for p in (zkey.alpha1, zkey.beta1)])
        self.points = upload("points", np.concatenate([g1_pts.reshape(-1), np.asarray(zkey.beta2, dtype=np.uint64).reshape(-1),
                                                       np.asarray(zkey.ic, dtype=np.uint64).reshape(-1)]))
        # byte tables: delta1, alpha1, beta1 (G1), delta2 (G2)
        bases = upload("bases", np.concatenate([np.asarray(p, dtype=np.uint64).reshape(-1)
                                                for p in (zkey.delta1, zkey.alpha1, zkey.beta1, zkey.delta2)]))
        self.tables = upload("tables")
        blocks = FB_ROWS // 128
        for i in range(3):
            launch(mod, "fb_table_g1", blocks, 128, stream, bases.offset(i * g1b), self.tables.offset(i * FB_ROWS * g1b))
        launch(mod, "fb_table_g2", blocks, 128, stream, bases.offset(3 * g1b), self.tables.offset(3 * FB_ROWS * g1b))
        ic0 = 2 * g1b + g2b  # IC_0 in `points` (after alpha1, beta1, beta2)
        for i in range(1, ic_tables(zkey.n_public) + 1):  # IC_i's table after delta2's
            launch(mod, "fb_table_g1", blocks, 128, stream, self.points.offset(ic0 + i * g1b),
                   self.tables.offset(FB_ROWS * (3 * g1b + g2b + (i - 1) * g1b)))
        # pairing: constants, lines of gamma2, delta2, beta2, target pairing(-alpha1, beta2)
        self.consts = upload("consts", gverify.pairing_consts(curve))
        g2 = upload("g2", np.concatenate([np.asarray(p, dtype=np.uint64).reshape(-1)
                                          for p in (zkey.gamma2, zkey.delta2, zkey.beta2)]))
        self.line_bytes = gverify.n_lines(curve) * 3 * 2 * curve.n8q
        self.lines = upload("lines")
        launch(mod, "g2_prepare", 1, 3 * 32, stream, self.consts, g2, U32(3), self.lines)  # a warp a point
        neg_alpha_buf = upload("neg_alpha", neg_alpha)
        self.target = upload("target")
        launch_pairing(mod, 1, 32, stream, TOOLS + PAIRING_VALUE, self.consts, (neg_alpha_buf, g2.offset(2 * g2b)),
                       self.target, (1,))

    def gamma_lines(self) -> int:
        return self.lines.ptr

    def delta_lines(self) -> int:
        return self.lines.ptr + self.line_bytes

    def beta_lines(self) -> int:
        return self.lines.ptr + 2 * self.line_bytes

    def alpha_table(self) -> int:
        return self.tables.ptr + FB_ROWS * 2 * self.curve.n8q


def _neg(curve: Curve, p):
    return None if p is None else (p[0], -p[1] % curve.q)


def scratch_bytes(curve: Curve) -> int:
    """What the tail's phases hand on to each other after the flag: five table products and the mid
    phase's s·A + r·B1 (XYZZ) (groth16_check.cuh, tail_args)."""
    return 4 * 4 * curve.n8q + 8 * curve.n8q + 4 * curve.n8q


def glv_sum_offset(curve: Curve) -> int:
    """Where the mid phase's s A + r B1 (XYZZ) lies after the five result slots (groth16_check.cuh's glv_sum:
    after the proof area, the four G1 and the one G2 table products)."""
    return proof_bytes(curve) + 6 * 4 * curve.n8q


def tail_args(ep: KeyEpilogue, n_wires: int, results: DeviceBuffer, slot_bytes: int, witness: DeviceBuffer) -> tuple:
    return (ep.consts, results, U32(slot_bytes // 4), witness, U32(n_wires), U32(ep.n_public), ep.tables, ep.points,
            ep.gamma_lines(), ep.delta_lines(), ep.target)


def _launch_phase(mod, phase: int, threads: int, args: tuple, stream: Stream, batch: tuple | None) -> None:
    consts, results, slot_words, witness, n_wires, n_public, tables, points, gamma, delta, target = args
    k, res_stride, wit_stride = batch or (1, 0, 0)
    launch_pairing(mod, k, threads, stream, phase, consts, (results, witness, tables, points, gamma, delta, target),
                   0, (slot_words, n_wires, n_public, res_stride // 4, wit_stride // 4))


# `batch` = (k, results stride, witness stride), strides in bytes: the phase of k proofs in one launch
# of k blocks, proof j's results and witness (then r, s, rs) at args' + j * stride (engine/backends/gpu/batch.py).


def launch_early(mod, args: tuple, side: Stream, batch: tuple | None = None) -> None:
    """Table products and L: needs only the witness and r, s."""
    _launch_phase(mod, TAIL_EARLY, 128, args, side, batch)


def launch_mid(mod, args: tuple, side: Stream, batch: tuple | None = None) -> None:
    """s A, r B1 (two GLV halves each, a warp a half), pi_a, pi_c: needs the A, B1, C, H sums."""
    _launch_phase(mod, TAIL_MID, 128, args, side, batch)


def launch_mid_products(mod, args: tuple, side: Stream) -> None:
    """The mid phase's s A + r B1 only (into the scratch): needs the A and B1 sums."""
    _launch_phase(mod, TAIL_MID_PRODUCTS, 128, args, side, None)


def launch_join(mod, args: tuple, side: Stream, products: bool = False) -> None:
    """pi_a and pi_c after launch_mid_products: needs the C and H sums too.  With `products`: after the
    MSMs of s w over A (into the scratch's glv_sum_offset) and r w over B1 (into B1's slot) instead."""
    _launch_phase(mod, TAIL_JOIN_PRODUCTS if products else TAIL_JOIN, 64, args, side, None)


def launch_pi_b(mod, args: tuple, stream: Stream) -> None:
    """pi_b alone into the proof area: needs the B2 sum and the early phase (s delta2)."""
    _launch_phase(mod, TAIL_PI_B, 32, args, stream, None)


def launch_final(mod, args: tuple, stream: Stream, batch: tuple | None = None, pi_b_given: bool = False) -> None:
    """pi_b (unless launch_pi_b made it), the three Miller loops side by side, the final exponentiation
    and the flag: six warps, a line maker and a consumer for each pair (groth16_check.cuh)."""
    _launch_phase(mod, TAIL_FINAL_GIVEN_B if pi_b_given else TAIL_FINAL, 192, args, stream, batch)


class SideStreams:
    """Side streams per compute slot: a proof's tail runs its early and mid phases on lane 0,
    beside the slot's own stream, so they overlap the MSMs they do not depend on; a batch
    (engine/backends/gpu/batch.py) runs the early and mid phases of its k proofs there too, one
    launch of k blocks each."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._streams: dict[tuple[int, int], Stream] = {}
        self._lock = threading.Lock()

    def get(self, slot: int, lane: int = 0) -> Stream:
        with self._lock:
            s = self._streams.get((slot, lane))
            if s is None:
                s = self._streams[(slot, lane)] = self.ctx.device.stream(urgent=True)  # as the compute streams
            return s

    def finish(self) -> None:
        """Wait for the side lanes' work (close_for_exit: the streams stay)."""
        for s in self._streams.values():
            s.synchronize()

    def close(self) -> None:
        """Every lane waited for and destroyed, though one call fails (runtime.release_all)."""
        streams = list(self._streams.values())
        self._streams.clear()
        release_all(*[s.synchronize for s in streams], *[s.destroy for s in streams])


def decode_proof(curve: Curve, raw: np.ndarray) -> tuple[tuple, bool]:
    """(pi_a, pi_b, pi_c) as affine int tuples, and the check's verdict, from the bytes after the MSM slots."""
    g1b, g2b = 2 * curve.n8q, 4 * curve.n8q
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    pi_a = g1_from_mont(curve, raw[:g1b].view(np.uint64))[0]
    pi_b = g2_from_mont(curve, raw[g1b:g1b + g2b].view(np.uint64))[0]
    pi_c = g1_from_mont(curve, raw[g1b + g2b:2 * g1b + g2b].view(np.uint64))[0]
    flag = int(raw[3 * g1b + g2b:3 * g1b + g2b + 4].view(np.uint32)[0])
    return (pi_a, pi_b, pi_c), flag == 1


def verify_batch(ctx, mod, ep: KeyEpilogue, items: list[tuple[list[int], tuple]]) -> bool:
    """One device multi-pairing for n proofs of one key, as engine/groth16/verifier.verify_batch
    folds them (random 128-bit rho_j, rho_0 = 1): True iff every proof verifies (but for a
    chance of about 2^-128).  items: (public signals, (pi_a, pi_b, pi_c) affine ints)."""
    curve = ep.curve
    if not items:
        return True
    for public, pts in items:
        if len(public) != ep.n_public or any(not 0 <= v < curve.r for v in public) or any(p is None for p in pts):
            return False
    n = len(items)
    r = curve.r
    rho = [1] + [secrets.randbits(128) | 1 for _ in range(n - 1)]
    total = sum(rho) % r
    ic_scalars = [total] + [sum(rj * pub[i] for rj, (pub, _) in zip(rho, items)) % r for i in range(ep.n_public)]
    proofs = np.concatenate([np.concatenate([g1_to_mont(curve, [a]).reshape(-1), g2_to_mont(curve, [b]).reshape(-1),
                                             g1_to_mont(curve, [c]).reshape(-1)]) for _, (a, b, c) in items])
    dev = ctx.device
    stream = ctx.compute_stream(0)
    host = np.zeros(4, dtype=np.uint32)

    def up(a: np.ndarray) -> DeviceBuffer:
        buf = dev.alloc(a.nbytes, stream)
        Device.upload(buf, np.ascontiguousarray(a), stream)
        return buf

    with Device.recording() as bufs:  # freed however it ends (a failed call left them on the device)
        try:
            pts = up(proofs)
            sc = up(from_ints([*rho, total], 4))
            ics = up(from_ints(ic_scalars, 4))
            work = dev.alloc((n + 3) * 2 * curve.n8q, stream)
            flag = dev.alloc(16, stream)
            threads = min(256, max(64, 32 * (-(-(2 * n + len(ic_scalars) + 1) // 32))))
            ic = ep.points.offset(2 * 2 * curve.n8q + 4 * curve.n8q)
            launch_pairing(mod, 1, threads, stream, BATCH_CHECK, ep.consts,
                           (pts, sc, ic, ics, ep.alpha_table(), ep.beta_lines(), ep.gamma_lines(), ep.delta_lines(),
                            work), flag, (n, len(ic_scalars)))
            Device.download(host, flag, stream)
        finally:
            release_all(lambda: free_buffers(bufs, stream), stream.synchronize)
    return int(host[0]) == 1
