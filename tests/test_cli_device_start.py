"""The CLI's direct GPU path starts the device on a thread before its heavy imports, with the work queues of one
proof (engine/backends/device_start.py, cuda_kernels/driver.prefer_connections), on the fake driver."""
from __future__ import annotations

from pathlib import Path

import pytest

from fake_cuda import fake_driver

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "bn128"
QUEUES = "CUDA_DEVICE_MAX_CONNECTIONS"


def _calls(fake, name: str) -> int:
    return sum(1 for c in fake.calls if c == name)


def driver_queues() -> str | None:
    import os  # noqa: PLC0415

    return os.environ.get(QUEUES)


def _parse(*argv: str):
    from cli import build_parser  # noqa: PLC0415

    return build_parser(only="prove").parse_args(["prove", *argv])


def test_prefer_connections_sets_the_queues_before_init_keeps_the_users_and_is_refused_after(monkeypatch):
    from cuda_kernels import driver  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver():
        assert driver.prefer_connections(8)
        driver.init()
        assert driver.os.environ[QUEUES] == "8"
        assert not driver.prefer_connections(4)  # the driver has read it: nothing changes
        assert driver.os.environ[QUEUES] == "8"
    monkeypatch.setenv(QUEUES, "16")
    with fake_driver():
        driver.prefer_connections(8)
        driver.init()
        assert driver.os.environ[QUEUES] == "16"  # the user's value
    monkeypatch.delenv(QUEUES)
    with fake_driver():  # a fresh driver asks for the engine's default again
        driver.init()
        assert driver.os.environ[QUEUES] == driver.MAX_CONNECTIONS


def test_the_started_device_is_the_backends_one_context_retained_once_and_released_once(monkeypatch):
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver() as fake:
        start = DeviceStart(0, connections=8)
        assert start.wait() == 1
        assert {"cuInit", "context"} <= set(start.timings)
        device = start.take()
        backend = GpuBackend(device)
        assert backend.ctx.device is device
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1
        backend.close()
        start.close()  # taken: nothing left to release
        assert _calls(fake, "cuDevicePrimaryCtxRelease") == 1
        assert not fake.live_streams
        assert driver_queues() == "8"


def test_a_device_nobody_took_is_released_by_close(monkeypatch):
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver() as fake:
        start = DeviceStart(0)
        start.close()
        start.close()
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1 == _calls(fake, "cuDevicePrimaryCtxRelease")


def test_no_device_counts_zero_and_take_names_the_problem(monkeypatch):
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415
    from engine.errors import BackendUnavailableError  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver() as fake:
        fake.cuDeviceGetCount = lambda: (0, 0)
        start = DeviceStart(0)
        assert start.wait() == 0
        with pytest.raises(BackendUnavailableError, match="no CUDA device"):
            start.take()
        start.close()
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 0


def test_a_failed_context_start_is_raised_by_take_as_the_drivers_error(monkeypatch):
    from cuda_kernels import driver  # noqa: PLC0415
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415
    from engine.errors import DeviceError  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver():
        with driver.inject_fault("cuDevicePrimaryCtxRetain", 1, "CUDA_ERROR_OUT_OF_MEMORY"):
            start = DeviceStart(0)
            start.wait()
        with pytest.raises(DeviceError, match="cuDevicePrimaryCtxRetain"):
            start.take()
        start.close()


@pytest.mark.parametrize("argv, starts", [
    ([], True),
    (["--backend", "gpu"], True),
    (["--backend", "auto", "--no-verify"], True),
    (["--backend", "cpu"], False),
    (["--server", "http://127.0.0.1:1"], False),
    (["--timeline", "t.json"], False),
    (["--compute-slots", "2"], False),
    (["--ray", "auto"], False),
])
def test_only_the_direct_gpu_path_starts_the_device(argv, starts, monkeypatch):
    from engine.commands import prove  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    args = _parse(*argv, "k.zkey", "w.wtns", "p.json", "q.json")
    with fake_driver() as fake:
        prove.start(args)
        start = getattr(args, "device_start", None)
        assert (start is not None) == starts
        if start is not None:
            start.close()
            assert driver_queues() == str(prove.ONE_PROOF_QUEUES)
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == (1 if starts else 0)


def test_a_proof_that_fails_before_its_backend_releases_the_started_device(tmp_path, monkeypatch, capsys):
    """The CLI in-process on the fake driver: the device starts as the line is read, the witness is missing, the
    one-line error comes out and the context is released; no file is written."""
    from cli import main  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver() as fake:
        code = main(["prove", "--backend", "gpu", str(EXAMPLE / "sudoku.zkey"), str(tmp_path / "missing.wtns"),
                     str(tmp_path / "p.json"), str(tmp_path / "q.json")])
        assert code != 0
        assert "missing.wtns" in capsys.readouterr().err
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1 == _calls(fake, "cuDevicePrimaryCtxRelease")
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("argv", [
    ["--backend", "gpu", str(EXAMPLE / "sudoku.zkey"), "only-one-more-file.json"],  # _split_files refuses it
    ["--backend", "gpu", "--wasm", "c.wasm", str(EXAMPLE / "sudoku.zkey"), "p.json", "q.json"],  # --input missing
])
def test_a_line_refused_before_its_proof_begins_releases_the_started_device(argv, monkeypatch, capsys):
    """Errors that run() raises before the direct path (the files' count, --wasm without --input) come after
    start(): the device is released, not left to a thread in the driver while the interpreter exits."""
    from cli import main  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver() as fake:
        assert main(["prove", *argv]) != 0
        assert capsys.readouterr().err.startswith("error: ")
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1 == _calls(fake, "cuDevicePrimaryCtxRelease")


def test_a_direct_proof_called_without_cli_main_starts_its_device_there(tmp_path, monkeypatch):
    """prove.run on arguments that did not come through cli.main (no start() yet): the direct path starts the
    device itself and run releases it on the way out."""
    from engine.commands import prove  # noqa: PLC0415
    from engine.errors import EngineError  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    args = _parse("--backend", "gpu", "--quiet", str(EXAMPLE / "sudoku.zkey"), str(tmp_path / "missing.wtns"),
                  str(tmp_path / "p.json"), str(tmp_path / "q.json"))
    with fake_driver() as fake:
        with pytest.raises(EngineError, match="missing.wtns"):
            prove.run(args)
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1 == _calls(fake, "cuDevicePrimaryCtxRelease")
        assert driver_queues() == str(prove.ONE_PROOF_QUEUES)


@pytest.mark.parametrize("in_cache", [True, False])
def test_start_backend_takes_the_started_device_and_times_the_wait(monkeypatch, in_cache):
    """Beside the context: the key's candidates, and the curve's CUBIN when the kernel cache has it (the module
    then loads it; nothing is compiled).  A miss is compiled after the context, as before, with a note first."""
    import io  # noqa: PLC0415
    import json  # noqa: PLC0415

    from engine.commands import prove  # noqa: PLC0415
    from engine.config import EngineConfig  # noqa: PLC0415
    from engine.formats import read_zkey  # noqa: PLC0415
    from engine.progress import make_progress  # noqa: PLC0415
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415

    from engine.backends.gpu import runtime  # noqa: PLC0415
    from engine.backends.gpu.footprint import KeyShape  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    looked, compiled = [], []
    monkeypatch.setattr(runtime, "cached_curve_cubin",
                        lambda curve, arch: looked.append((curve.name, arch)) or (b"ahead" if in_cache else None))
    monkeypatch.setattr(runtime, "curve_cubin", lambda curve, arch: compiled.append((curve.name, arch)) or b"built")
    zkey = read_zkey(EXAMPLE / "sudoku.zkey")
    events = io.StringIO()
    progress = make_progress("prove", json=True, stream=events)
    with fake_driver() as fake:
        start = DeviceStart(0, connections=prove.ONE_PROOF_QUEUES)
        backend, candidates = prove._start_backend(EngineConfig(backend="auto"), zkey, progress, start)
        try:
            assert backend.name == "gpu"
            assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1
            assert {"beside the context: key plan, kernels", "wait for the device's start",
                    "  device (beside the imports): cuInit", "  device (beside the imports): context", "context",
                    "kernel module"} <= set(progress.timings)
            # looked up beside the context for this device; the load plans from the candidates
            assert looked == [("bn128", backend.device.arch)]
            notes = [e["text"] for e in map(json.loads, events.getvalue().splitlines()) if e["event"] == "note"]
            if in_cache:  # the module loads the CUBIN found ahead
                assert compiled == [] and backend.ctx._cubins["bn128"] == b"ahead"
                assert notes == []
            else:  # compiled by the context's prepare, once, the user told first (a minute or two on a first run)
                assert compiled == [("bn128", backend.device.arch)] and backend.ctx._cubins["bn128"] == b"built"
                assert len(notes) == 1 and "compiling the bn128 kernels" in notes[0] and "NVRTC" in notes[0]
            assert candidates.made_for(KeyShape.of(zkey), backend.device.sm_count, backend.fold, backend.tier,
                                    backend.host_chunk)
        finally:
            backend.close()
            start.close()
        assert _calls(fake, "cuDevicePrimaryCtxRelease") == 1


def test_a_lone_proof_makes_the_streams_the_cli_counts_on(monkeypatch):
    """A key load and a proof alone, with every phase beside the compute stream that a small proof puts there,
    make at most ONE_PROOF_STREAMS streams, the count prove.py's note measured its ONE_PROOF_QUEUES hardware
    queues against (one queue: the context's start is on a byte-compiled CLI's path, the proof nearly a chain),
    and the CLI asks for no more queues than streams."""
    from engine.commands import prove  # noqa: PLC0415
    from test_gpu_tail_fake import _backend, _tiny  # noqa: PLC0415

    for name in ("GROTH16_PRODUCTS_BESIDE", "GROTH16_FRONT_BESIDE", "GROTH16_PI_B_BESIDE"):
        monkeypatch.delenv(name, raising=False)
    zkey, witness = _tiny("bn128")
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        key.synchronize()
        backend.compute(backend.stage(key, witness)).wait()
        assert len(backend.side_streams._streams) == 5  # the tail's lanes 0-4: the most a proof alone uses
        assert fake.streams_made <= prove.ONE_PROOF_STREAMS
        assert 1 <= prove.ONE_PROOF_QUEUES <= prove.ONE_PROOF_STREAMS
        backend.unload_key(key)
        backend.close()


class FakeDriverLibrary:
    """The driver library's C entry points as DriverStart calls them through ctypes (byref out-arguments,
    CUresult ints): a stand-in for libcuda.so.1."""

    def __init__(self, count: int = 1, init_result: int = 0, retain_result: int = 0, on_init=None, on_release=None,
                 on_retain=None, attributes: dict | None = None):
        self.count, self.init_result, self.retain_result = count, init_result, retain_result
        self.on_init, self.on_release, self.on_retain = on_init, on_release, on_retain
        self.attributes = {16: 132, 75: 9, 76: 0} if attributes is None else attributes or None
        self.calls: list = []

    def cuInit(self, flags):
        self.calls.append("cuInit")
        if self.on_init is not None:
            self.on_init()
        return self.init_result

    def cuDeviceGetCount(self, out):
        out._obj.value = self.count
        return 0

    def cuDeviceGet(self, out, index):
        out._obj.value = index
        return 0

    def cuDevicePrimaryCtxSetFlags_v2(self, device, flags):
        self.calls.append(("flags", flags))
        return 0

    def cuDevicePrimaryCtxRetain(self, out, device):
        self.calls.append("retain")
        if self.on_retain is not None:
            self.on_retain()
        out._obj.value = 0xC0
        return self.retain_result

    def cuDeviceGetAttribute(self, out, attribute, device):
        if self.attributes is None:
            return 1  # CUDA_ERROR_INVALID_VALUE
        out._obj.value = self.attributes[attribute]
        return 0

    def cuDevicePrimaryCtxRelease_v2(self, device):
        self.calls.append("release")
        if self.on_release is not None:
            self.on_release()
        return 0


def test_the_driver_librarys_head_start_hands_its_context_to_the_bindings_and_gives_its_retain_back(monkeypatch):
    """cuInit and the context's retain through the library itself (the blocking-sync flags first, as
    driver.Device sets them), then the bindings' own retain, then the head start's retain released: the
    context is held throughout, by one retain in the end."""
    from cuda_kernels.driver_library import CU_CTX_SCHED_BLOCKING_SYNC  # noqa: PLC0415
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver() as fake:
        bindings_retains_at_release = []
        lib = FakeDriverLibrary(on_release=lambda: bindings_retains_at_release.append(
            _calls(fake, "cuDevicePrimaryCtxRetain")))
        start = DeviceStart(0, connections=8, native=lib)
        assert start.wait() == 1
        assert lib.calls == ["cuInit", ("flags", CU_CTX_SCHED_BLOCKING_SYNC), "retain", "release"]
        assert bindings_retains_at_release == [1]  # released after the bindings held the context
        assert {"cuInit", "context", "bindings (cuInit, context)"} <= set(start.timings)
        device = start.take()
        device.close()
        start.close()
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1 == _calls(fake, "cuDevicePrimaryCtxRelease")
        assert lib.calls.count("release") == 1
        assert driver_queues() == "8"


@pytest.mark.parametrize("lib", [
    FakeDriverLibrary(init_result=100),  # CUDA_ERROR_NO_DEVICE
    FakeDriverLibrary(count=0),
    FakeDriverLibrary(retain_result=2),  # CUDA_ERROR_OUT_OF_MEMORY
], ids=["cuInit fails", "no device", "retain fails"])
def test_a_head_start_that_fails_leaves_the_start_to_the_bindings(lib, monkeypatch):
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver() as fake:
        start = DeviceStart(0, native=lib)
        assert start.wait() == 1  # the bindings' own count and context
        assert "release" not in lib.calls  # nothing retained there: nothing to give back
        assert "bindings (cuInit, context)" not in start.timings and "context" in start.timings
        start.close()
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1 == _calls(fake, "cuDevicePrimaryCtxRelease")


def test_a_head_start_is_given_back_when_the_bindings_fail_or_nobody_takes_the_device(monkeypatch):
    from cuda_kernels import driver  # noqa: PLC0415
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415
    from engine.errors import DeviceError  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver():
        lib = FakeDriverLibrary()
        with driver.inject_fault("cuDevicePrimaryCtxRetain", 1, "CUDA_ERROR_OUT_OF_MEMORY"):
            start = DeviceStart(0, native=lib)
            start.wait()
        assert lib.calls.count("release") == 1
        with pytest.raises(DeviceError, match="cuDevicePrimaryCtxRetain"):
            start.take()
        start.close()
    with fake_driver() as fake:
        lib = FakeDriverLibrary()
        start = DeviceStart(0, native=lib)
        start.close()  # the command failed before its backend: both retains given back
        assert lib.calls.count("release") == 1
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1 == _calls(fake, "cuDevicePrimaryCtxRelease")


def test_no_head_start_where_the_bindings_are_loaded_already(monkeypatch):
    """A program that has the driver module (or the tests' fake) keeps to the bindings: the library itself is
    not touched beside them."""
    from cuda_kernels import driver_library  # noqa: PLC0415
    from engine.backends import device_start  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    monkeypatch.setattr(driver_library, "_driver_library", lambda: pytest.fail("the driver library was opened"))
    with fake_driver():
        start = device_start.DeviceStart(0)
        assert start._native is None
        start.close()


def test_the_head_start_runs_while_the_bindings_are_imported(tmp_path):
    """In a fresh interpreter (the CLI's), the driver library's cuInit is called before cuda_kernels.driver
    (numpy and the bindings: 200 ms on the H200's host) has finished importing, with the CLI's work queues
    already in the environment cuInit reads."""
    import json  # noqa: PLC0415
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    script = tmp_path / "head_start.py"
    script.write_text(f"""
import json, os, sys
sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tests')!r}]
from test_cli_device_start import FakeDriverLibrary
seen = {{}}

def on_init():
    driver = sys.modules.get("cuda_kernels.driver")
    seen["driver ready at cuInit"] = hasattr(driver, "Device")
    seen["numpy ready at cuInit"] = hasattr(sys.modules.get("numpy"), "ndarray")
    seen["queues at cuInit"] = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS")

lib = FakeDriverLibrary(on_init=on_init)
from engine.backends.device_start import DeviceStart
start = DeviceStart(0, connections=8, native=lib)
start.wait()
start.close()
seen["calls"] = [c for c in lib.calls if isinstance(c, str)]
print(json.dumps(seen))
""")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["driver ready at cuInit"] is False and seen["numpy ready at cuInit"] is False, seen
    assert seen["queues at cuInit"] == "8"
    assert seen["calls"] == ["cuInit", "retain", "release"]


def test_the_device_is_known_after_cuinit_while_its_context_still_starts():
    """DriverStart.known(): the SM count and architecture (what the CLI plans the key and reads its kernels with)
    as soon as cuInit has run, not after the context's retain; None, without losing the head start, where the
    library cannot tell."""
    import threading  # noqa: PLC0415

    from cuda_kernels.driver_library import DeviceFacts, DriverStart  # noqa: PLC0415

    retain_may_end = threading.Event()
    lib = FakeDriverLibrary(on_retain=lambda: retain_may_end.wait(30), attributes={16: 114, 75: 9, 76: 0})
    start = DriverStart(0, lib)
    try:
        assert start.known() == DeviceFacts(114, "sm_90")
        assert "context" not in start.timings  # the retain has not returned yet
    finally:
        retain_may_end.set()
    assert start.wait()
    start.release()

    for lib in (FakeDriverLibrary(attributes={}), FakeDriverLibrary(init_result=100), FakeDriverLibrary(count=0)):
        start = DriverStart(0, lib)
        assert start.known() is None
        assert start.wait() == ("retain" in lib.calls)  # attributes unknown: the context is still retained
        start.release()


def test_device_start_knows_the_device_from_the_bindings_without_a_head_start(monkeypatch):
    from cuda_kernels.driver_library import DeviceFacts  # noqa: PLC0415
    from engine.backends.device_start import DeviceStart  # noqa: PLC0415

    monkeypatch.delenv(QUEUES, raising=False)
    with fake_driver():
        start = DeviceStart(0)  # the bindings are loaded: no head start
        assert start._native is None
        assert start.known() == DeviceFacts(132, "sm_90")
        start.close()
    from cuda_kernels import driver  # noqa: PLC0415

    with fake_driver(), driver.inject_fault("cuDevicePrimaryCtxRetain", 1, "CUDA_ERROR_OUT_OF_MEMORY"):
        start = DeviceStart(0)
        assert start.known() is None  # the start failed; take() says why
        start.close()


def test_the_head_starts_release_is_a_device_global_call_under_rule_one():
    """The release goes through device_global's check like the wrapper's calls: refused while a proof holds a
    reservation on the device (it cannot in the CLI's fresh process, where the head start runs)."""
    from cuda_kernels import device_global  # noqa: PLC0415
    from cuda_kernels.driver_library import DriverStart  # noqa: PLC0415

    lib = FakeDriverLibrary()
    start = DriverStart(0, lib)
    assert start.wait()
    handle = device_global.register(0, lambda: 1)  # one proof's reservation on device 0
    try:
        with pytest.raises(device_global.DeviceGlobalCallError):
            start.release()
    finally:
        device_global.unregister(handle)
    assert "release" not in lib.calls
    start.release()  # once nothing forbids it
    assert lib.calls.count("release") == 1


@pytest.mark.parametrize("process_ends", [False, True])
def test_the_direct_path_leaves_its_releases_to_the_exit_only_when_the_process_ends(process_ends, tmp_path,
                                                                                     monkeypatch, capsys):
    """engine/__main__ marks that the process ends after the command (exit_handoff.process_ends): the backend
    is then closed for the exit (its streams' work waited for, nothing destroyed, the context not released:
    the exit's hand-off runs those in a child); called in-process (cli.main from a test or an app) it is
    closed as ever, the context released once."""
    from cli import main  # noqa: PLC0415
    from engine import exit_handoff  # noqa: PLC0415
    from engine.backends.gpu.backend import GpuBackend  # noqa: PLC0415
    from engine.backends.gpu.runtime import GpuContext  # noqa: PLC0415
    from engine.errors import EngineError  # noqa: PLC0415

    from engine.backends.gpu import runtime  # noqa: PLC0415

    def failing_load(self, zkey, footprint=None):
        raise EngineError(f"{zkey.path}: the key's load failed (test)")

    monkeypatch.delenv(QUEUES, raising=False)
    monkeypatch.setenv(exit_handoff.ENV, "1")
    monkeypatch.setattr(exit_handoff, "process_ends", process_ends)
    monkeypatch.setattr(GpuContext, "prepare", lambda self, curve: b"fake cubin")
    monkeypatch.setattr(runtime, "cached_curve_cubin", lambda curve, arch: None)
    monkeypatch.setattr(GpuBackend, "load_key", failing_load)
    with fake_driver() as fake:
        code = main(["prove", "--backend", "gpu", str(EXAMPLE / "sudoku.zkey"), str(EXAMPLE / "sudoku.wtns"),
                     str(tmp_path / "p.json"), str(tmp_path / "q.json")])
        assert code != 0 and "the key's load failed" in capsys.readouterr().err
        assert _calls(fake, "cuDevicePrimaryCtxRetain") == 1
        assert _calls(fake, "cuStreamSynchronize") >= 1  # the streams made so far: their work waited for
        if process_ends:
            assert _calls(fake, "cuDevicePrimaryCtxRelease") == 0 and _calls(fake, "cuStreamDestroy") == 0
            assert fake.live_streams
        else:
            assert _calls(fake, "cuDevicePrimaryCtxRelease") == 1 and not fake.live_streams
    assert not (tmp_path / "p.json").exists()


def _key_of(nbytes: int):
    import numpy as np  # noqa: PLC0415

    class Key:
        pass

    key = Key()
    key.a = np.zeros(nbytes, np.uint8)
    key.b1 = key.b2 = key.c = key.h = key.coeffs = np.zeros(0, np.uint8)
    return key


def test_a_lone_proofs_load_pins_its_staging_only_for_a_large_key(monkeypatch):
    """Pinning the staging buffers costs a lone proof ~85 ms on the H200's host; the pageable copies cost less
    below PIN_ONE_LOAD_MIB of upload (prove.py's note): a 2^20-domain key (510 MiB) loads pageable, a 2^21 one
    pinned; GROTH16_PIN_ONE_LOAD_MIB overrides the bound, and a bad value is one clear error."""
    from engine.commands import prove  # noqa: PLC0415
    from engine.errors import EngineError  # noqa: PLC0415

    monkeypatch.delenv(prove.PIN_ONE_LOAD_ENV, raising=False)
    assert not prove.pins_for_one_load(_key_of(510 << 20))
    assert prove.pins_for_one_load(_key_of(1020 << 20))
    monkeypatch.setenv(prove.PIN_ONE_LOAD_ENV, "0")
    assert prove.pins_for_one_load(_key_of(1))
    monkeypatch.setenv(prove.PIN_ONE_LOAD_ENV, "2048")
    assert not prove.pins_for_one_load(_key_of(1020 << 20))
    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv(prove.PIN_ONE_LOAD_ENV, bad)
        with pytest.raises(EngineError, match=prove.PIN_ONE_LOAD_ENV):
            prove.pins_for_one_load(_key_of(1))
