import random, sys
import numpy as np
sys.path.insert(0, ".")
from engine.algebra.curves import curve_by_name
from engine.algebra.limbs import from_ints, to_ints
from engine.backends.gpu import GpuBackend
from cuda_kernels.driver import Device, U32, launch
backend = GpuBackend()
for cname in sys.argv[1].split(","):
    curve = curve_by_name(cname)
    q, words = curve.q, curve.n8q // 4
    R = 1 << (32 * words); rinv = pow(R, -1, q); half = words // 2
    rng = random.Random(5)
    edge = [0, 1, q - 1, q - 2, (q + 1) // 2, R % q]
    pairs = [(a0, a1, b0, b1) for a0 in edge for a1 in edge for b0 in (0, 1, q - 1) for b1 in (0, q - 1)]
    pairs += [tuple(rng.randrange(q) for _ in range(4)) for _ in range(1000)]
    a = [v for p in pairs for v in p[:2]]; b = [v for p in pairs for v in p[2:]]
    ha = from_ints(a, half).reshape(len(pairs), 2 * half); hb = from_ints(b, half).reshape(len(pairs), 2 * half)
    backend.bind_thread()
    mod, stream, dev = backend.ctx.module(curve), backend.ctx.compute_stream(0), backend.device
    n = len(pairs)
    da, db = dev.alloc(ha.nbytes, stream), dev.alloc(hb.nbytes, stream)
    dout = dev.alloc(n * 10 * words * 4, stream)
    Device.upload(da, ha, stream); Device.upload(db, hb, stream)
    launch(mod, "fq2_split_debug", -(-n // 128), 128, stream, da, db, U32(n), dout)
    host = np.empty(n * 10 * words, dtype=np.uint32)
    Device.download(host, dout, stream); stream.synchronize()
    def val(ws): return sum(int(w) << (32 * j) for j, w in enumerate(ws))
    bad = {k: 0 for k in ("w0", "w1", "ws", "s01", "c0", "c1", "c1_from_dev_pieces")}
    sample = {}
    for i, (a0, a1, b0, b1) in enumerate(pairs):
        o = host[i * 10 * words:(i + 1) * 10 * words]
        W = 2 * words
        w0, w1, ws, s01 = (val(o[k * W:(k + 1) * W]) for k in range(4))
        c0, c1 = val(o[8 * words:9 * words]), val(o[9 * words:10 * words])
        ew0, ew1, ews = a0 * b0, a1 * b1, (a0 + a1) % q * ((b0 + b1) % q)
        checks = {"w0": w0 == ew0, "w1": w1 == ew1, "ws": ws == ews, "s01": s01 == w0 + w1,
                  "c0": c0 == (a0 * b0 - a1 * b1) * rinv % q, "c1": c1 == (a0 * b1 + a1 * b0) * rinv % q,
                  "c1_from_dev_pieces": c1 == (ws - s01) * rinv % q}
        for k, ok in checks.items():
            if not ok:
                bad[k] += 1
                sample.setdefault(k, (i, hex(ws), hex(s01), hex(c1), hex((ws - s01) * rinv % q), hex(w0 + w1)))
    print(cname, "bad:", bad)
    # the same inputs through fp2 operator* (fq2_split_test)
    d2 = dev.alloc(n * 2 * words * 4, stream)
    launch(mod, "fq2_split_test", -(-n // 128), 128, stream, da, db, U32(n), d2)
    h2 = np.empty(n * 2 * words, dtype=np.uint32)
    Device.download(h2, d2, stream); stream.synchronize()
    wrong = []
    for i, (a0, a1, b0, b1) in enumerate(pairs):
        g0, g1 = val(h2[2 * i * words:(2 * i + 1) * words]), val(h2[(2 * i + 1) * words:(2 * i + 2) * words])
        e0, e1 = (a0 * b0 - a1 * b1) * rinv % q, (a0 * b1 + a1 * b0) * rinv % q
        if (g0, g1) != (e0, e1):
            wrong.append((i, g0 == e0, g1 == e1, hex(g1), hex(e1), hex(g1 - e1) if g1 > e1 else "-"))
    print(cname, "operator* wrong:", len(wrong), "of", n)
    for w in wrong[:6]:
        print("  ", w, pairs[w[0]] == pairs[w[0]], [hex(v) for v in pairs[w[0]]])
    for k, v in sample.items():
        print(" ", k, v)
