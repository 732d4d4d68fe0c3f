"""The Engine's host-side ceiling on GPU proofs: the whole path over the fake driver (no device time).

    python perf/host_ceiling.py --proofs 400 --concurrency 32 --slots 1,2

Issue 13 item 5 (h13tput): with a batch of 16 at 15 ms of device time (~1000 proofs/s) the Engine still
made ~316 proofs/s at the 2^14 domain.  This runs perf/sweep.py's run (synthesis of .wtns files in the
pool, the witness check, the VRAM budget, stage / compute_batch / the waits on the device threads,
finish, verify) with GpuBackend over tests/fake_cuda.py: every driver call succeeds at once and kernels do
nothing, so proofs/s here is what the host path alone allows on this machine.  The fake's flag word is 0
(not verified): the device check's verdict is taken as passed here, nothing else is changed.  The
tiny fixture keys of tests/fixtures (a witness of a few wires: the per-proof costs that do not scale).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from script_args import Parser, count_list, curve_name, input_file, positive, run_main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "perf"), str(ROOT / "tests")]


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--curve", type=curve_name, default="bn128")
    p.add_argument("--proofs", type=positive, default=400)
    p.add_argument("--concurrency", type=positive, default=32)
    p.add_argument("--slots", type=count_list, default="1,2")
    p.add_argument("--no-verify", action="store_true", help="the Engine's verify=False (no verify step a proof)")
    p.add_argument("--zkey", type=input_file, default=None, help="another key than the tiny fixture's (with --wtns)")
    p.add_argument("--wtns", type=input_file, default=None)
    args = p.parse_args(argv)

    from fake_cuda import fake_driver  # noqa: PLC0415 - tests/fake_cuda.py

    import sweep  # noqa: PLC0415 - perf/sweep.py
    from engine.api import run  # noqa: PLC0415
    import engine.backends.select as select  # noqa: PLC0415
    from engine.backends.gpu import epilogue as gepi, runtime  # noqa: PLC0415
    from scheduler.timeline import summarize  # noqa: PLC0415

    decode = gepi.decode_proof
    gepi.decode_proof = lambda curve, raw: (decode(curve, raw)[0], True)  # the fake's kernels set no flag
    runtime.GpuContext.prepare = lambda self, curve: b"fake cubin"  # no NVRTC: the fake loads anything
    select.cuda_device_count = lambda: 1
    tiny = ROOT / "tests" / "fixtures" / "tiny" / args.curve
    with fake_driver():
        zkey, wtns = args.zkey or str(tiny / "tiny.zkey"), args.wtns or str(tiny / "tiny.wtns")
        sa = sweep.parse_args(["--backend", "gpu", "--zkey", zkey, "--wtns", wtns,
                               "--proofs", str(args.proofs), "--concurrency", str(args.concurrency),
                               "--slots", args.slots, "--modes", "split", *(["--no-verify"] if args.no_verify else [])])
        for slots in sa.slots:
            t = time.perf_counter()
            s = summarize(run(lambda: sweep.one_run(sa, "split", slots, args.concurrency)))
            print(f"slots {slots}: {s.proofs_done} proofs, {s.proofs_per_min / 60:.1f} proofs/s, {s.failed} failed "
                  f"({time.perf_counter() - t:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    sys.exit(run_main(main))
