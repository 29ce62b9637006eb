"""service/artifacts/openvino.py: the float graph OpenVINO compiles from an int8 encoder, and a compiled
session safe to run on several threads from its first run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.artifacts.openvino import float_graph, found
from tests.conftest import MODEL_STORE, REPO
from tests.test_package_init import SUPPRESSING



def test_a_float_graph_that_cannot_be_written_says_where_and_how_much_room_there_is(tmp_path: Path) -> None:
    """A /tmp smaller than the graph read as ONNX Runtime's "INVALID_PROTOBUF: Protobuf serialization
    failed", as if the model file were corrupt. A file in the folder's place fails for every user."""
    encoder = MODEL_STORE / "minilm-l6" / "encoder-int8.onnx"
    (tmp_path / "not-a-folder").write_text("")
    with pytest.raises(OSError, match=r"float graph \(about \d+ MiB\) could not be written to .*not-a-folder, "
                                      r"which has \d+ MiB free"):
        float_graph(encoder, tmp_path / "not-a-folder")


def test_a_compiled_session_leaves_no_type_for_its_first_run_to_make() -> None:
    """pybind11 makes an iterator's type on first use, and two threads meeting there fail with "Object of
    type 'iterator' is not an instance of 'iterator'" (a worker's warm-up runs the encoder on two threads;
    it failed a model's load once). A fresh process, since any earlier iteration in this one makes it."""
    if not found().usable:
        pytest.skip(f"OpenVINO: {found().reason}")
    script = """
import gc, sys
from pathlib import Path
import numpy as np
from service.artifacts.openvino import CompiledSession
def bound_types():
    return {id(t) for t in gc.get_objects() if isinstance(t, type) and t.__module__ == "pybind11_builtins"}
session = CompiledSession(Path(sys.argv[1]), 1, 2, "f32", None, 16)
before = bound_types()
session.run(None, {port.name: np.ones((1, 4), np.int64) for port in session.get_inputs()})
print(len(bound_types() - before))
"""
    done = subprocess.run([sys.executable, "-c", script, str(MODEL_STORE / "minilm-l6" / "encoder-int8.onnx")],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=True)
    assert done.stdout.split() == ["0"], done.stderr


def test_workers_compiling_into_one_cache_take_turns(tmp_path: Path) -> None:
    """OpenVINO's write of a compiled blob is not safe against another process writing the same one: a
    worker whose compile failed served on the CPU EP beside a sibling on OpenVINO, and the pod's answers
    to one request differed by worker. While the cache's compile lock is held elsewhere, a load waits, then
    compiles (or loads the blob) on OpenVINO."""
    import fcntl
    import threading

    from service.artifacts import openvino
    from service.artifacts.runtime import Runtime, RuntimeSettings

    if not found().usable:
        pytest.skip(f"OpenVINO: {found().reason}")
    runtime = Runtime(RuntimeSettings(providers=(openvino.EP, "CPUExecutionProvider"), intra_op_threads=1,
                                      openvino_cache_dir=str(tmp_path)))
    loaded: list[object] = []
    with open(tmp_path / openvino.COMPILE_LOCK, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another worker compiling
        load = threading.Thread(target=lambda: loaded.append(runtime.encoder_session(
            MODEL_STORE / "minilm-l6" / "encoder-int8.onnx", weights="int8-float")))
        load.start()
        load.join(timeout=2.0)
        assert load.is_alive() and not loaded, "compiled while another process held the cache's compile lock"
        fcntl.flock(held, fcntl.LOCK_UN)
    load.join(timeout=120)
    assert [session.compute for session in loaded] == [openvino.inference_precision(runtime.flags)]


def test_a_compile_lock_excludes_another_compile_lock(tmp_path: Path) -> None:
    """Two workers' loads each take the lock (flock locks of two opens exclude each other, even in one process):
    a shared lock would let both write the same blob at once."""
    import threading

    from service.artifacts import openvino

    entered = threading.Event()

    def second() -> None:
        with openvino.compiling(tmp_path):
            entered.set()

    with openvino.compiling(tmp_path):
        waiting = threading.Thread(target=second)
        waiting.start()
        assert not entered.wait(0.5), "a second compile entered while the first held the lock"
    waiting.join(timeout=10)
    assert entered.is_set()


def test_without_a_writable_cache_openvino_still_compiles(tmp_path: Path) -> None:
    """With no cache to share (DIALSCORE_OPENVINO_CACHE_DIR unwritable) there is nothing to lock: each worker
    compiles for itself on OpenVINO, not on the CPU EP."""
    from service.artifacts import openvino
    from service.artifacts.runtime import Runtime, RuntimeSettings

    with openvino.compiling(None):
        pass
    if not found().usable:
        pytest.skip(f"OpenVINO: {found().reason}")
    (tmp_path / "a-file").write_text("")
    runtime = Runtime(RuntimeSettings(providers=(openvino.EP, "CPUExecutionProvider"), intra_op_threads=1,
                                      openvino_cache_dir=str(tmp_path / "a-file" / "cache")))
    session = runtime.encoder_session(MODEL_STORE / "minilm-l6" / "encoder-int8.onnx", weights="int8-float")
    assert session.compute == openvino.inference_precision(runtime.flags)


def test_the_runtime_is_imported_without_its_usage_telemetry(tmp_path: Path) -> None:
    """`import openvino` sent a usage event to Google Analytics from every worker (opt-out: no consent file
    in the user's home means yes; only CI variables turn it off), forking a process off the worker's threads
    to send it, and wrote `~/intel/openvino_ga_cid`. A fresh process with a home of its own and no CI."""
    if not found().usable:
        pytest.skip(f"OpenVINO is not usable here: {found().reason}")
    env = {k: v for k, v in os.environ.items() if k not in SUPPRESSING}
    code = ("from service.artifacts import openvino; assert openvino.found().usable\n"
             "import openvino.tools.ovc.telemetry_utils as used; print(used.tm.__name__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**env, "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["openvino.tools.ovc.telemetry_stub"]
    assert not (tmp_path / "intel").exists()
