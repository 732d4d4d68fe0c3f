#!/usr/bin/env bash
# Session 31, call 1 (carry [".whl", ".kcache"]): the cold CLI with the driver library's head start beside the
# imports, prove's parser alone and the exit without the teardown; what the kernel module's load is made of; the
# CLI's GPU tests; the proofs it wrote come back for snarkjs.  OUT=/tmp/out bash perf/s31a_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) cold CLI"
python3 perf/cli_start.py --runs 7 --workdir /tmp/cs --json $OUT/cli_start.json 2>&1
python3 -m engine export-vkey /tmp/cs/bench.zkey $OUT/cs-vkey.json --quiet && cp /tmp/cs/proof.json $OUT/cs-proof.json &&
  cp /tmp/cs/public.json $OUT/cs-public.json
echo "== $(date +%T) the kernel module's load alone (fresh process each; ctypes; the bn128 cubin)"
ls -la $GROTH16_KERNEL_CACHE/*.cubin
for mode in LAZY EAGER; do for i in 1 2 3; do
CUDA_MODULE_LOADING=$mode python3 -c "
import ctypes, glob, os, time
os.environ.setdefault('CUDA_DEVICE_MAX_CONNECTIONS', '8')
l = ctypes.CDLL('libcuda.so.1'); assert l.cuInit(0) == 0
d = ctypes.c_int(); l.cuDeviceGet(ctypes.byref(d), 0); c = ctypes.c_void_p(); l.cuDevicePrimaryCtxRetain(ctypes.byref(c), d)
l.cuCtxSetCurrent(c)
for path in sorted(glob.glob(os.environ['GROTH16_KERNEL_CACHE'] + '/*.cubin'), key=os.path.getsize):
    t = time.perf_counter(); data = open(path, 'rb').read(); t1 = time.perf_counter()
    m = ctypes.c_void_p(); r = l.cuModuleLoadData(ctypes.byref(m), data); t2 = time.perf_counter()
    print('$mode', os.path.basename(path)[:8], len(data), 'read %.1f ms' % ((t1 - t) * 1e3), 'cuModuleLoadData %.1f ms' % ((t2 - t1) * 1e3), r)
"; done; done
echo "== $(date +%T) a process's end with its context released first or left to the exit (ctypes, 8 queues; wall of the whole process)"
for how in release exit release exit release exit; do
  python3 - $how <<'PY'
import ctypes, os, subprocess, sys, time
code = ("import ctypes, os, sys, time; os.environ['CUDA_DEVICE_MAX_CONNECTIONS'] = '8'; l = ctypes.CDLL('libcuda.so.1');"
        " l.cuInit(0); d = ctypes.c_int(); l.cuDeviceGet(ctypes.byref(d), 0); c = ctypes.c_void_p();"
        " l.cuDevicePrimaryCtxRetain(ctypes.byref(c), d); l.cuCtxSetCurrent(c); s = ctypes.c_void_p();"
        " l.cuStreamCreate(ctypes.byref(s), 1); l.cuStreamSynchronize(s); t = time.perf_counter();"
        + (" l.cuStreamDestroy_v2(s); l.cuDevicePrimaryCtxRelease_v2(d);" if sys.argv[1] == "release" else "")
        + " sys.stderr.write('%.1f' % ((time.perf_counter() - t) * 1e3)); sys.stderr.flush(); os._exit(0)")
t = time.perf_counter()
p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print(sys.argv[1], "release call %s ms" % p.stderr, "process wall %.1f ms" % ((time.perf_counter() - t) * 1e3), p.returncode)
PY
done
echo "== $(date +%T) sudoku through the CLI, both curves"
for c in bn128 bls12381; do for i in 1 2; do
  /usr/bin/time -f "$c wall %e s" python3 -m engine prove --backend gpu --verbose --quiet examples/$c/sudoku.zkey \
    examples/$c/sudoku.wtns $OUT/sudoku-$c-proof.json $OUT/sudoku-$c-public.json 2>&1 | grep -E "wall|total so far|wait for|device \(|kernel module|load key|close backend"
done; done
echo "== $(date +%T) the CLI's GPU tests"
python3 -m pytest -q -m gpu tests/test_cli_startup.py tests/test_key_cache.py tests/test_gpu_failure_paths.py \
  tests/test_gpu_guard.py tests/test_cli_device_start.py tests/test_cli_exit.py -p no:cacheprovider 2>&1 | tail -4
echo "== $(date +%T) the CPU-side CLI tests here (fresh interpreters over the real driver)"
python3 -m pytest -q tests/test_cli_device_start.py tests/test_cli_exit.py tests/test_cli_interrupt_edges.py -p no:cacheprovider 2>&1 | tail -3
echo "== $(date +%T) done"
