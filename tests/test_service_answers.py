"""The service's job answers (engine/service/http.py `_job_response`): msgspec's encoding of a job view
is the JSON web.json_response wrote, numpy scalars included (a proof's stage timings may be numpy floats)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine.service.http import _job_response


def test_job_answer_is_the_same_json_numpy_scalars_included():
    view = {"id": "7", "key": "k", "state": "done", "deadline_s": None,
            "timings": {"upload_s": 1.25e-4, "prove_s": np.float64(0.0151), "stages": {"msm": np.float32(0.5)},
                        "count": np.int64(3)},
            "proof": {"pi_a": ["1", "2", "1"], "protocol": "groth16"}, "public": ["33", "0"]}
    r = _job_response(view, 202, {"Location": "/v1/jobs/7"})
    assert (r.status, r.content_type, r.charset, r.headers["Location"]) == (202, "application/json", "utf-8",
                                                                              "/v1/jobs/7")
    assert json.loads(r.body) == json.loads(json.dumps(view, default=lambda o: o.item()))
    with pytest.raises(TypeError, match="object"):  # a bug's value is a 500 (the errors middleware), not bad JSON
        _job_response({"x": object()})
