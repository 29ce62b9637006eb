"""The batch bounds GET /models states: MARGIN times what make bench measured for the provider and compute
a model's encoders run on, rounded up; 0 where bit-exact; None where not measured."""
from __future__ import annotations

import json
from pathlib import Path

from service.artifacts import batch_bounds

ON_OPENVINO = [{"name": "minilm-l6", "provider": "OpenVINOExecutionProvider", "compute": "bf16"}]
ON_CUDA = [{"name": "minilm-l6", "provider": "CUDAExecutionProvider"}]


def test_a_bound_is_rounded_up_never_below_what_was_measured() -> None:
    assert batch_bounds.round_up(3.21e-4) == 3.3e-4
    assert batch_bounds.round_up(1e-3) == 1e-3
    assert batch_bounds.round_up(0.0) == 0.0
    for value in (1.234e-7, 9.99e-3, 0.5):
        assert value <= batch_bounds.round_up(value) <= value * 1.1


def test_recorded_moves_become_the_bounds_of_that_provider_and_compute(tmp_path: Path) -> None:
    figures = tmp_path / "bounds.json"
    batch_bounds.record("OpenVINOExecutionProvider bf16", "a CPU", {"m": 2.01e-4, "exact": 0.0}, figures)
    written = json.loads(figures.read_text())
    assert written == {"OpenVINOExecutionProvider bf16": {"machines": ["a CPU"], "models": {"m": 2.1e-4, "exact": 0.0}}}
    assert batch_bounds.key(ON_OPENVINO) == "OpenVINOExecutionProvider bf16"
    assert batch_bounds.key(ON_CUDA) == "CUDAExecutionProvider -" and batch_bounds.key([]) is None


def test_a_second_run_keeps_the_larger_move_per_model_and_names_both_machines(tmp_path: Path) -> None:
    figures = tmp_path / "bounds.json"
    batch_bounds.record("OpenVINOExecutionProvider f32", "other", {"x": 1e-5}, figures)
    batch_bounds.record("OpenVINOExecutionProvider bf16", "Zen 5", {"m": 2.01e-4, "n": 1e-4}, figures)
    batch_bounds.record("OpenVINOExecutionProvider bf16", "Zen 4", {"m": 1e-4, "n": 3e-4, "new": 5e-5}, figures)
    batch_bounds.record("OpenVINOExecutionProvider bf16", "Zen 4", {"m": 1e-4}, figures)
    batch_bounds.record("OpenVINOExecutionProvider bf16", "Zen", {"m": 1e-4}, figures)  # a name inside another's
    written = json.loads(figures.read_text())
    assert written["OpenVINOExecutionProvider bf16"] == {
        "machines": ["Zen 5", "Zen 4", "Zen"], "models": {"m": 2.1e-4, "n": 3e-4, "new": 5e-5}}
    assert written["OpenVINOExecutionProvider f32"] == {"machines": ["other"], "models": {"x": 1e-5}}


def test_get_models_states_the_committed_bound_zero_where_exact_and_none_where_unmeasured() -> None:
    committed = batch_bounds.measured()
    assert batch_bounds.bound("unref-minilm", True, ON_OPENVINO) == 0.0
    assert batch_bounds.bound("unref-minilm", False, ON_CUDA) is None
    for where, entry in committed.items():
        for model, value in entry["models"].items():
            assert 0 <= value < 0.05, (where, model)
            provider, compute = where.split(" ")
            stated = batch_bounds.bound(model, False, [{"provider": provider, "compute": compute}])
            assert stated == batch_bounds.round_up(batch_bounds.MARGIN * value) >= batch_bounds.MARGIN * value
