"""The prover service: `python -m engine serve`, an HTTP API over one Engine.

* `settings.py`: the service's own configuration (`[service]` in engine.toml, flags)
* `problems.py`: every HTTP error as a `Problem` (status, code, one-line message)
* `jobs.py`: a job's record and the priority queue in front of the Engine
* `keys.py`: resident keys, loaded by path on first use
* `uploads.py`: reused buffers for the witness uploads kept in memory
* `metrics.py`: Prometheus metrics, fed by the engine's timeline
* `core.py`: `Service`, which admits, runs, cancels and drains jobs
* `http.py`: the aiohttp application (routes, auth, limits)
* `server.py`: the process: engine + service + listener + signals
* `start_signals.py`: Ctrl-C and the stop signals until the engine has started (where an interrupt may be raised)

The wire API is documented in docs/service.md; the client is `engine.client`.
"""
