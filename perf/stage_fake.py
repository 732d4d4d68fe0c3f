"""A warm proof's host calls on the fake driver (tests/fake_cuda.py): no device time, so what is left is
the Python and the driver calls' bookkeeping of stage, compute (its enqueue) and wait.

    python perf/stage_fake.py --zkey key.zkey --wtns bench.wtns [--proofs 50]

Medians in ms.  Development-machine figures only: the fake's calls cost nothing, real ones a few
microseconds each (perf/proof_timeline.py is the device's view).
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path
from script_args import Parser, input_file, positive, run_main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "perf")]


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--zkey", type=input_file, required=True)
    ap.add_argument("--wtns", type=input_file, required=True)
    ap.add_argument("--proofs", type=positive, default=50)
    args = ap.parse_args()
    from fake_cuda import fake_driver  # noqa: PLC0415
    import engine.backends.select as select  # noqa: PLC0415
    from engine.backends.gpu import epilogue as gepi, runtime  # noqa: PLC0415
    from engine.formats import read_wtns, read_zkey  # noqa: PLC0415
    from proof_timeline import timed_proof  # noqa: PLC0415 - perf/proof_timeline.py

    decode = gepi.decode_proof
    gepi.decode_proof = lambda curve, raw: (decode(curve, raw)[0], True)  # the fake's kernels set no flag
    runtime.GpuContext.prepare = lambda self, curve: b"fake cubin"
    select.cuda_device_count = lambda: 1
    with fake_driver():
        backend = select.select_backend("gpu")
        zkey, wit = read_zkey(args.zkey), read_wtns(args.wtns)
        key = backend.load_key(zkey)
        key.synchronize()
        backend.maintain()  # the key's pinned buffers
        rows = []
        for i in range(args.proofs + 3):
            t0, t1, t2, t3 = timed_proof(backend, key, wit.values)
            if i >= 3:
                rows.append((t1 - t0, t2 - t1, t3 - t2))
        backend.close()
    med = [statistics.median(r[j] for r in rows) * 1e3 for j in range(3)]
    print(f"{zkey.curve.name} domain 2^{zkey.log_domain}, {len(rows)} proofs on the fake driver, medians (ms): "
          f"stage {med[0]:.3f}, compute {med[1]:.3f}, wait {med[2]:.3f}")


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
