"""Asyncio scheduling for the prover: budgets, device workers, locks, the synthesis pool, the timeline.

Knows nothing of elliptic curves (design.md §3); engine/api.py composes it
with a backend and the prover.  Modules:

* budget.py        all-or-nothing FIFO byte budgets (VRAM per device, host memory); a VRAM
                   budget's proof reservations are what cuda_kernels/device_global.py checks
* locks.py         the memory lock and numbered compute slots; split/single modes
* device_worker.py the device's driver thread(s) and waiter threads
* shm.py, synth_pool.py  the synthesis process pool and its shared-memory transport
* pipeline.py      a job's partitions through all stages, cancellation-safe
* timeline.py      msgspec events as JSON lines, and their analysis
* simulated.py     a SIMULATED device for tests and sweeps without a GPU
"""
