"""Rule 1 of design.md §5 by construction: every driver call goes through cuda_kernels/driver.py,
which refuses the device-global ones while a proof reservation is outstanding, per device and owner.

Runs on the CPU over a fake driver module (tests/fake_cuda.py); the GPU half is in
tests/test_gpu_failure_paths.py.
"""
from __future__ import annotations

import ast
import re
import threading

import anyio
import pytest

from conftest import REPO
from cuda_kernels import device_global, driver
from engine.api import Engine
from engine.config import EngineConfig, SimulationConfig
from fake_cuda import fake_driver
from scheduler.budget import Budget
from scheduler.device_worker import DeviceWorker

# every kind the brief names: context sync, pool trim, memory reading, synchronous alloc/free,
# pinning host memory (and unpinning), NULL-stream copies
BANNED = ["cuCtxSynchronize", "cuMemPoolTrimTo", "cuMemGetInfo", "cuMemGetInfo_v2", "cuMemAlloc", "cuMemAlloc_v2",
          "cuMemFree", "cuMemFree_v2", "cuMemHostAlloc", "cuMemHostRegister", "cuMemHostRegister_v2",
          "cuMemFreeHost", "cuMemHostUnregister", "cuMemAllocHost", "cuMemcpyHtoD", "cuMemsetD32",
          "cuDevicePrimaryCtxReset", "cuCtxDestroy"]
ALLOWED = ["cuMemAllocFromPoolAsync", "cuMemFreeAsync", "cuLaunchKernel", "cuEventRecord", "cuStreamSynchronize",
           "cuEventSynchronize", "cuMemcpyHtoDAsync", "cuMemsetD32Async", "cuMemPoolGetAttribute"]


@pytest.fixture
def fake():
    with fake_driver() as fake:
        yield fake


def _on_thread(fn):
    """fn() on a fresh thread; returns what it raised (or None)."""
    out = []

    def run():
        try:
            fn()
            out.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out[0]


async def test_every_banned_call_is_refused_however_it_is_reached(fake):
    budget = Budget([100], name="VRAM budget", guard_devices=[0])
    dev = driver.Device(0)
    dev.set_owner(budget)
    try:
        res = await budget.reserve(10)
        for name in BANNED:
            # through getattr, on a thread bound to the device
            def stray(name=name):
                dev.make_current()
                getattr(driver.cu, name)(0)
            assert isinstance(_on_thread(stray), device_global.DeviceGlobalCallError), name

            # from a method named close (the old text scan exempted those by name)
            class Planted:
                def close(self, name=name):
                    getattr(driver.cu, name)(0)
            assert isinstance(_on_thread(Planted().close), device_global.DeviceGlobalCallError), name

            # from a thread that never bound any device: checked against every device
            assert isinstance(_on_thread(lambda name=name: getattr(driver.cu, name)(0)),
                              device_global.DeviceGlobalCallError), name
        for name in ALLOWED:  # stream-ordered and local calls stay allowed, and bare (nothing in the way)
            device_global.check(name, 0)
            assert "_checked" not in getattr(driver.cu, name).__qualname__, name
        # and the wrapper's own methods
        for call in (dev.synchronize, lambda: dev.trim_pool(0), dev.memory_info, lambda: driver.PinnedBuffer(dev, 64)):
            with pytest.raises(device_global.DeviceGlobalCallError):
                call()
        assert fake.pinned_allocs == 0 and "cuMemGetInfo" not in fake.calls  # refused before the driver
        res.release()
        for name in BANNED:  # idle: every one is allowed again (it reaches the driver)
            err = _on_thread(lambda name=name: getattr(driver.cu, name)(0))
            assert not isinstance(err, device_global.DeviceGlobalCallError), name
        dev.trim_pool(0)
        assert dev.memory_info()[1] == fake.total_memory
        driver.PinnedBuffer(dev, 64).free()
    finally:
        budget.close()


async def test_a_banned_call_planted_in_the_scheduler_threads_is_refused(fake):
    """A closure run on a DeviceWorker's device thread (the scheduler's code) is refused too."""

    class Backend:
        def __init__(self):
            self.device = driver.Device(0)

        def set_guard_owner(self, owner):
            self.device.set_owner(owner)

        def bind_thread(self):
            self.device.make_current()

    budget = Budget([100], name="VRAM budget", guard_devices=[0])
    worker = DeviceWorker(0, Backend(), budget)
    worker.start()
    try:
        res = await budget.reserve(1)
        with pytest.raises(device_global.DeviceGlobalCallError, match="cuCtxSynchronize"):
            await worker.call(lambda: getattr(driver.cu, "cuCtxSynchronize")())
        res.release()
        await worker.call(lambda: getattr(driver.cu, "cuCtxSynchronize")())
    finally:
        await worker.stop()
        budget.close()


async def test_the_guard_is_per_device_and_owner(fake):
    a_budget = Budget([100], name="VRAM budget A", guard_devices=[0])
    b_budget = Budget([100], name="VRAM budget B", guard_devices=[0])
    other = Budget([100], name="VRAM budget C", guard_devices=[1])
    a, b = driver.Device(0), driver.Device(0)
    a.set_owner(a_budget)
    b.set_owner(b_budget)
    try:
        held = await a_budget.reserve(10)
        b.trim_pool(0)  # B's idle trim while A holds a proof: its own pool, allowed
        b.memory_info()  # B's start-up reading: allowed
        driver.PinnedBuffer(b, 64).free()
        with pytest.raises(device_global.DeviceGlobalCallError):
            a.trim_pool(0)  # A's own: refused
        with pytest.raises(device_global.DeviceGlobalCallError, match="cuCtxSynchronize"):
            b.synchronize()  # waits for A's streams too: refused for everyone on the device
        c = driver.Device(1)
        c.set_owner(other)
        c.synchronize()  # another device is not affected
        held.release()
        a.trim_pool(0)
        b.synchronize()
    finally:
        for budget in (a_budget, b_budget, other):
            budget.close()


def test_scope_of_names_the_device_global_calls():
    for name in BANNED:
        assert device_global.scope_of(name) is not None, name
    for name in ALLOWED:
        assert device_global.scope_of(name) is None, name
    assert device_global.scope_of("cuCtxSynchronize") == device_global.CONTEXT
    assert device_global.scope_of("cuMemPoolTrimTo") == device_global.OWNER


def test_injected_faults_fire_once_at_the_nth_call(fake):
    stream = driver.Stream(fake.cuStreamCreate(0)[1])
    with driver.inject_fault("cuEventRecord", nth=2, error="CUDA_ERROR_LAUNCH_FAILED"):
        e = driver.Event()
        e.record(stream)
        assert driver.fault_pending("cuEventRecord")
        with pytest.raises(driver.DeviceError, match="cuEventRecord failed: CUDA_ERROR_LAUNCH_FAILED"):
            e.record(stream)
        assert not driver.fault_pending("cuEventRecord")
        e.record(stream)  # once
    with driver.inject_fault("cuMemAllocFromPoolAsync", error="CUDA_ERROR_OUT_OF_MEMORY"):
        dev = driver.Device(0)
        with pytest.raises(driver.DeviceOutOfMemoryError, match="1.0 MiB requested"):
            dev.alloc(1 << 20, stream)


async def test_two_engines_on_one_device_in_one_process_work():
    """A's idle trim and B's proofs (and the other way round) on the same device index, one process:
    the old process-global guard refused the trim of one while the other held a reservation."""
    sim = SimulationConfig(devices=1, vram="4GiB", working_set="1GiB", witness_rows=64, synth_ms=1, upload_ms=1,
                           stage_host_ms=0, gpu_ms=40, epilogue_ms=0, verify_ms=0)
    fast = EngineConfig(backend="simulated", simulation=sim, idle_trim_s=0.01, synthesis_workers=1)
    busy = EngineConfig(backend="simulated", simulation=sim, idle_trim_s=None, synthesis_workers=1)
    async with Engine(busy) as b_eng, Engine(fast) as a_eng:
        a_key, b_key = await a_eng.load_key("a"), await b_eng.load_key("b")
        a_dev, b_dev = a_eng.devices[0].backend, b_eng.devices[0].backend
        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(b_eng.prove, b_key, {})  # B keeps a reservation outstanding throughout
            await anyio.sleep(0.02)
            for _ in range(3):
                await a_eng.prove(a_key, {})
                await anyio.sleep(0.05)  # A idles while B proves: A trims
    assert a_dev.trims >= 1
    # A's trims happened while B held reservations on the same device index, and were allowed
    assert any(call == "cuMemPoolTrimTo" for call, _ in a_dev.global_calls)
    assert all(outstanding == 0 for _, outstanding in a_dev.global_calls)  # A's own: none
    assert b_dev.trims == 0


# ------------------------------------------------------------ one door to the driver
SOURCES = [REPO / "cli.py", *[p for d in ("engine", "scheduler", "cuda_kernels", "perf", "scripts")
                              for p in (REPO / d).rglob("*.py")]]
# the bindings' door, and the driver library's own entry points for a process's start (before the bindings load)
DOORS = {REPO / "cuda_kernels" / "driver.py", REPO / "cuda_kernels" / "driver_library.py"}
RAW_DRIVER = re.compile(r"libcuda|nvcuda|bindings\s*\.\s*driver|bindings\s+import\s+[^\n]*\bdriver\b|cuda\s*\.\s*cudart|"
                        r"from\s+cuda\s+import\s+[^\n]*\b(cuda|cudart|runtime)\b|bindings\s*\.\s*runtime|"
                        r"bindings\s+import\s+[^\n]*\bruntime\b|driver\s*\.\s*_bindings|\bset_bindings\b")


def _imports_cuda(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "cuda" and not _allowed(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "cuda":
            found += [f"{node.module}.{a.name}" for a in node.names if not _allowed(f"{node.module}.{a.name}")]
    return found


def _allowed(module: str) -> bool:
    """NVRTC's bindings, and the bindings' library finder (cuda_kernels/build.py names NVRTC's file with it)."""
    return module == "cuda.bindings.nvrtc" or module.startswith("cuda.pathfinder")


def test_no_module_reaches_the_driver_but_through_the_wrapper():
    """cuda.bindings.driver (and the runtime API) is imported by cuda_kernels/driver.py only, and the driver
    library itself is opened by cuda_kernels/driver_library.py only; NVRTC (cuda.bindings.nvrtc) and the
    bindings' library finder are the other CUDA modules the project uses."""
    offenders = []
    for path in SOURCES:
        if path in DOORS:
            continue
        text = path.read_text()
        offenders += [f"{path.relative_to(REPO)}: imports {m}" for m in _imports_cuda(ast.parse(text))]
        offenders += [f"{path.relative_to(REPO)}: {m.group(0)!r}" for m in RAW_DRIVER.finditer(text)]
    assert offenders == []


def test_the_door_check_finds_planted_ways_round_it():
    planted = ["from cuda.bindings import driver", "import cuda.bindings.driver as d", "from cuda import cudart",
               "importlib.import_module('cuda.bindings.driver')", "x = driver._bindings.cuCtxSynchronize",
               "lib = ctypes.CDLL('libcuda.so.1')", "ctypes.util.find_library('cuda') or 'libcuda.so'"]
    for text in planted:
        assert _imports_cuda(ast.parse(text)) or RAW_DRIVER.search(text), text
    assert not _imports_cuda(ast.parse("from cuda.bindings import nvrtc")) and not RAW_DRIVER.search(
        "from cuda.bindings import nvrtc")


def test_inside_the_door_only_the_wrapper_touches_the_bindings():
    """In driver.py the raw module is named only by the lines that load and serve it."""
    raw = re.compile(r"(?<![A-Za-z0-9_])_bindings\b")
    door = REPO / "cuda_kernels" / "driver.py"
    lines = [line.strip() for line in door.read_text().splitlines() if raw.search(line.split("#", 1)[0])]
    allowed = {"from cuda.bindings import driver as _bindings", "_bindings = None",
               "global _bindings, _initialised", "previous, _bindings, _initialised = _bindings, module, False",
               "if _bindings is None:", "return getattr(_bindings, name)"}
    assert set(lines) <= allowed, set(lines) - allowed
