"""The ONNX Runtime layer, on tiny graphs the test builds."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from service.config import CUDA_DEFAULTS, cuda_provider_options
from service.artifacts.runtime import CudaUnavailable, Runtime, RuntimeSettings, default_threads


def _masked_mean_graph(path):
    """mean over time of x[b, t, :] where mask[b, t] = 1: a padding-exact reduction like our encoders'."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "time", 3])
    mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "time"])
    out = helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["batch", 3])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    last = helper.make_tensor("last", TensorProto.INT64, [1], [-1])
    nodes = [
        helper.make_node("Unsqueeze", ["mask", "last"], ["m3"]),
        helper.make_node("Mul", ["x", "m3"], ["xm"]),
        helper.make_node("ReduceSum", ["xm", "axes"], ["total"], keepdims=0),
        helper.make_node("ReduceSum", ["mask", "axes"], ["count"], keepdims=1),
        helper.make_node("Div", ["total", "count"], ["mean"]),
    ]
    return _saved(path, helper.make_graph(nodes, "masked_mean", [x, mask], [out], initializer=[axes, last]), 17)


def _saved(path, graph, opset: int):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def test_session_runs_and_reports_cpu(tmp_path):
    runtime = Runtime(RuntimeSettings(intra_op_threads=1))
    session = runtime.session(_masked_mean_graph(tmp_path / "g.onnx"))
    assert "CPUExecutionProvider" in session.get_providers()
    x = np.arange(12, dtype=np.float64).reshape(1, 4, 3)  # float64 in: cast to what the graph asks
    (mean,) = session.run({"x": x, "mask": [[1, 1, 0, 0]]})
    np.testing.assert_allclose(mean, x[0, :2].mean(axis=0, keepdims=True), rtol=1e-6)


def test_padding_does_not_change_results(tmp_path):
    session = Runtime().session(_masked_mean_graph(tmp_path / "g.onnx"))
    rng = np.random.default_rng(0)
    short = rng.normal(size=(1, 2, 3))
    padded = np.concatenate([short, rng.normal(size=(1, 5, 3))], axis=1)
    (a,) = session.run({"x": short, "mask": np.ones((1, 2))})
    (b,) = session.run({"x": padded, "mask": [[1, 1, 0, 0, 0, 0, 0]]})
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_run_rows_is_each_row_run_alone(tmp_path):
    session = Runtime(RuntimeSettings(intra_op_threads=1)).session(_masked_mean_graph(tmp_path / "g.onnx"))
    rng = np.random.default_rng(1)
    x, mask = rng.normal(size=(5, 4, 3)), (rng.random((5, 4)) < 0.7).astype(float)
    mask[:, 0] = 1
    (rows,) = session.run_rows({"x": x, "mask": mask})
    alone = np.concatenate([session.run({"x": x[i:i + 1], "mask": mask[i:i + 1]})[0] for i in range(5)])
    np.testing.assert_array_equal(rows, alone)
    assert rows.shape == (5, 3)


class _SaysCuda:
    """A real CPU session that reports CUDA first, as a GPU worker's does: what Session decides by."""

    def __init__(self, raw) -> None:
        self.raw, self.runs = raw, 0

    def get_providers(self) -> list[str]:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]

    def get_inputs(self):
        return self.raw.get_inputs()

    def get_outputs(self):
        return self.raw.get_outputs()

    def run(self, outputs, feeds):
        self.runs += 1
        return self.raw.run(outputs, feeds)


def test_run_rows_runs_one_batch_on_cuda(tmp_path):
    """Row by row buys no exactness on CUDA (cuBLAS picks kernels by shape) and costs a launch a row."""
    from service.artifacts.runtime import Session

    cpu = Runtime(RuntimeSettings(intra_op_threads=1)).session(_masked_mean_graph(tmp_path / "g.onnx"))
    assert not cpu.on_cuda
    raw = _SaysCuda(cpu._session)
    session = Session(raw, "g.onnx")
    assert session.on_cuda
    rng = np.random.default_rng(2)
    x, mask = rng.normal(size=(5, 4, 3)), np.ones((5, 4))
    (rows,) = session.run_rows({"x": x, "mask": mask})
    assert raw.runs == 1
    np.testing.assert_allclose(rows, cpu.run_rows({"x": x, "mask": mask})[0], atol=1e-6)


def test_wrong_inputs_are_named(tmp_path):
    session = Runtime().session(_masked_mean_graph(tmp_path / "g.onnx"))
    with pytest.raises(ValueError, match="missing"):
        session.run({"x": np.zeros((1, 2, 3))})
    with pytest.raises(ValueError, match="rank"):
        session.run({"x": np.zeros((2, 3)), "mask": np.ones((1, 2))})


def test_providers_asked_for_are_filtered_to_available():
    runtime = Runtime(RuntimeSettings(providers=("CUDAExecutionProvider", "CPUExecutionProvider")))
    import onnxruntime as ort

    assert set(runtime.providers) <= set(ort.get_available_providers())
    assert runtime.providers[-1] == "CPUExecutionProvider"


def test_cuda_options_override_our_defaults_and_must_be_key_value():
    assert cuda_provider_options(()) == CUDA_DEFAULTS
    assert cuda_provider_options(("use_tf32=1", " gpu_mem_limit = 1073741824 ")) == {
        **CUDA_DEFAULTS, "use_tf32": "1", "gpu_mem_limit": "1073741824"}
    for bad in ("use_tf32", "=1", "use_tf32="):
        with pytest.raises(ValueError, match="key=value"):
            cuda_provider_options((bad,))
    runtime = Runtime(RuntimeSettings(cuda_options=("device_id=0",)))
    assert runtime.cuda_options["device_id"] == "0"
    assert all(p == "CPUExecutionProvider" or p[0] == "CUDAExecutionProvider" for p in runtime.provider_list())


def test_threads_divide_the_cores():
    assert default_threads(1) >= default_threads(2) >= 1
    assert Runtime(RuntimeSettings(intra_op_threads=3)).threads == 3


def test_runtime_settings_copy_every_runtime_field_of_the_service_settings():
    """One constructor for the server, bulk and gpu-check.sh: a field RuntimeSettings adds must be a setting."""
    from dataclasses import fields

    from service.config import Settings

    settings = Settings(providers=("CPUExecutionProvider",), intra_op_threads=3, workers=5,
                        cuda_options=("device_id=1",), batch_size=7)
    got = RuntimeSettings.from_settings(settings)
    assert all(getattr(got, f.name) == getattr(settings, f.name) for f in fields(RuntimeSettings))
    assert got.batch_size == 7 and got.workers == 5
    assert RuntimeSettings.from_settings(settings, workers=1).workers == 1


def test_the_cuda_provider_is_given_our_defaults_and_the_operators_options():
    """On a GPU machine InferenceSession must get CUDA's options (use_tf32=0 by default: TF32 moved
    scores by up to 2e-4 of their range, service/config.py). Faked here: the provider list a machine
    with CUDA would have, so the check runs on a CPU-only machine too."""
    runtime = Runtime(RuntimeSettings(cuda_options=("device_id=0",)))
    runtime.providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert CUDA_DEFAULTS["use_tf32"] == "0"
    assert runtime.provider_list() == [("CUDAExecutionProvider", {"use_tf32": "0", "device_id": "0"}),
                                       "CPUExecutionProvider"]


def _batch_centred_graph(path):
    """x minus the mean over the batch: every row depends on its batch-mates."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [0])
    nodes = [helper.make_node("ReduceMean", ["x", "axes"], ["mean"], keepdims=1),
             helper.make_node("Sub", ["x", "mean"], ["y"])]
    return _saved(path, helper.make_graph(nodes, "batch_centred", [x], [out], initializer=[axes]), 18)


def test_the_batching_probe_tells_a_per_row_graph_from_one_that_mixes_rows(tmp_path):
    runtime = Runtime(RuntimeSettings(intra_op_threads=1))
    rng = np.random.default_rng(3)
    per_row = runtime.session(_masked_mean_graph(tmp_path / "g.onnx"))
    assert per_row.rows_exact_in_batch({"x": rng.normal(size=(9, 4, 3)), "mask": np.ones((9, 4))})
    mixing = runtime.session(_batch_centred_graph(tmp_path / "c.onnx"))
    assert not mixing.rows_exact_in_batch({"x": rng.normal(size=(9, 3))})


def test_rows_of_equal_width_share_a_run_where_the_probe_held(tmp_path):
    """run_rows_packed: one run a width, outputs back in row order, each row's bits as alone."""
    from service.artifacts.runtime import Session

    cpu = Runtime(RuntimeSettings(intra_op_threads=1)).session(_masked_mean_graph(tmp_path / "g.onnx"))
    raw = _SaysCuda(cpu._session)
    raw.get_providers = lambda: ["CPUExecutionProvider"]
    session = Session(raw, "g.onnx")
    rng = np.random.default_rng(4)
    widths = [3, 1, 3, 2, 1, 3]
    rows = [rng.normal(size=(1, w, 3)) for w in widths]

    def pack(picked):
        return {"x": np.concatenate([rows[i] for i in picked]), "mask": np.ones((len(picked), widths[picked[0]]))}

    alone = session.run_rows_packed(len(rows), pack, widths)[0]
    assert raw.runs == len(rows)  # batch_exact stays off until probe_batching sets it at load
    raw.runs = 0
    session.batch_exact = True
    (together,) = session.run_rows_packed(len(rows), pack, widths)
    assert raw.runs == 3
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(together[1], rows[1][0].mean(axis=0).astype(np.float32))


@pytest.mark.skipif("CUDAExecutionProvider" in __import__("onnxruntime").get_available_providers(),
                    reason="this onnxruntime build has CUDA: its sessions run there")
def test_a_session_that_is_not_on_cuda_is_refused_where_cuda_is_required(tmp_path):
    """A GPU pod whose device or CUDA libraries are missing gets CPU sessions: with require_cuda they fail,
    so their models fail to load and the pod is not ready, rather than serving at CPU speed."""
    path = _masked_mean_graph(tmp_path / "mean.onnx")
    runtime = Runtime(RuntimeSettings(providers=("CUDAExecutionProvider", "CPUExecutionProvider"), require_cuda=True))
    with pytest.raises(CudaUnavailable, match="runs on CPUExecutionProvider, not CUDA"):
        runtime.session(path)
    with pytest.raises(CudaUnavailable, match="the encoders run on CPUExecutionProvider"):
        runtime.encoder_session(path)
    assert Runtime(RuntimeSettings(providers=("CUDAExecutionProvider", "CPUExecutionProvider"))).session(path).run(
        {"x": np.ones((1, 2, 3), np.float32), "mask": [[1, 1]]})


def test_requests_meeting_at_the_first_use_of_the_encoder_pool_make_one(monkeypatch):
    """The pool is made on first use; on CUDA the warm-up makes none, so the first requests met there and
    each made a pool."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from service.artifacts import runtime as runtime_module

    made = []

    def slow_pool(*args, **kwargs):
        made.append(1)
        time.sleep(0.05)
        return ThreadPoolExecutor(*args, **kwargs)

    monkeypatch.setattr(runtime_module, "ThreadPoolExecutor", slow_pool)
    runtime = Runtime(RuntimeSettings(encoder_threads=2))
    start = threading.Barrier(8)

    def call() -> None:
        start.wait()
        assert runtime.map_threads(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1
