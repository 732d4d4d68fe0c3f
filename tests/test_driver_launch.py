"""cuda_kernels.driver.launch on the fake driver: what the kernel's parameters point at.

launch packs every argument into an 8-byte slot of one array and passes the array of the slots' addresses
(perf/launch_overhead.py: the host's cost of a launch); a kernel reads a U32 parameter as the low 4 bytes
of its slot, a pointer as all 8.
"""
from __future__ import annotations

import ctypes

import pytest

from fake_cuda import fake_driver


def _captured(fake):
    seen = []
    real = fake.cuLaunchKernel

    def launch(func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        seen.append(((gx, gy, gz), (bx, by, bz), shared, stream, int(params)))
        return real(func, gx, gy, gz, bx, by, bz, shared, stream, params, extra)

    fake.cuLaunchKernel = launch
    return seen


def test_each_argument_is_read_where_its_parameter_points():
    from cuda_kernels import driver  # noqa: PLC0415
    from cuda_kernels.driver import DeviceBuffer, Ptr, U32, launch  # noqa: PLC0415

    with fake_driver() as fake:
        seen = _captured(fake)
        mod = driver.Module(b"fake cubin")
        stream = driver.Stream(7)
        values = []

        def read(params: int, n: int) -> list[tuple[int, int]]:
            ptrs = (ctypes.c_void_p * n).from_address(params)
            return [(ctypes.c_uint32.from_address(p).value, ctypes.c_uint64.from_address(p).value) for p in ptrs]

        args = (U32(0xFFFFFFFF), Ptr(0x1234_5678_9ABC_DEF0), DeviceBuffer(0x7000_0000_1000, 64), 0x42, U32(3), 0)
        real = fake.cuLaunchKernel

        def check_during(*a):  # the slots live for the call only: read them inside it
            values.append(read(int(a[9]), len(args)))
            return real(*a)

        fake.cuLaunchKernel = check_during
        launch(mod, "k", (3, 2, 1), 128, stream, *args, shared=512)
        assert [x[:4] for x in seen] == [((3, 2, 1), (128, 1, 1), 512, 7)] and len(values) == 1
        got = values[0]
        assert [lo for lo, _ in got][0] == 0xFFFFFFFF and got[4][0] == 3
        assert [full for _, full in got][1:4] == [0x1234_5678_9ABC_DEF0, 0x7000_0000_1000, 0x42] and got[5][1] == 0


def test_grid_shapes_and_an_empty_grid():
    from cuda_kernels import driver  # noqa: PLC0415
    from cuda_kernels.driver import U32, launch  # noqa: PLC0415

    with fake_driver() as fake:
        seen = _captured(fake)
        mod = driver.Module(b"fake cubin")
        stream = driver.Stream(9)
        launch(mod, "k", 5, 64, stream, U32(1))
        launch(mod, "k", (4, 3, 2), 32, stream)
        launch(mod, "k", 0, 64, stream, U32(1))  # nothing to do: no launch
        launch(mod, "k", (0, 3, 1), 64, stream, U32(1))
        assert [(g, b, s) for g, b, s, _, _ in seen] == [((5, 1, 1), (64, 1, 1), 0), ((4, 3, 2), (32, 1, 1), 0)]


def test_a_failed_launch_names_the_kernel():
    from cuda_kernels import driver  # noqa: PLC0415
    from cuda_kernels.driver import U32, launch  # noqa: PLC0415
    from engine.errors import DeviceError  # noqa: PLC0415

    with fake_driver() as fake:
        mod = driver.Module(b"fake cubin")
        fake.cuLaunchKernel = lambda *a: (fake.CUresult.CUDA_ERROR_INVALID_VALUE,)
        with pytest.raises(DeviceError, match=r"cuLaunchKernel\(msm_combine_g1e\)"):
            launch(mod, "msm_combine_g1e", 1, 32, driver.Stream(1), U32(1))
