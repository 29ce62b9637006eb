"""OpenVINO's own runtime (the `openvino` package) as the sentence encoders' CPU backend: whether it is
installed, whether `auto` takes it on this CPU, what it computes in, and a compiled model behind the
surface of ONNX Runtime's InferenceSession that runtime.Session wraps.

It compiles the committed ONNX files at load (any x86-64 CPU, AMD's too), with a compiled-model cache
directory so that a restart and the second worker load the compiled blob instead of compiling again.
Everything is created in the worker, after gunicorn's fork, like every ONNX Runtime session.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import queue
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# The name DIALSCORE_PROVIDERS and GET /models give OpenVINO: ONNX Runtime's for its OpenVINO EP, kept so
# that settings and clients written against it still hold, though the runtime is now OpenVINO's own.
EP = "OpenVINOExecutionProvider"
# CPU features where `auto` takes OpenVINO, strongest first: bf16 arithmetic (computes in bf16; measured
# faster than the CPU EP on MiniLM and mpnet on AMD EPYC Zen 4/5 and on an Intel Xeon with AMX) and AVX-512
# VNNI (f32, measured faster on MiniLM). AVX2 alone is not among them: no such CPU was at hand to measure,
# so the CPU EP stays its path.
GAINS = ("amx_bf16", "avx512_bf16", "avx512_vnni")
BF16 = ("amx_bf16", "avx512_bf16")
# An Intel core of the Sapphire Rapids class (it reports AVX512_FP16) whose AMX the hypervisor hides: there
# OpenVINO in bf16 (AVX512_BF16) ran slower than its own f32 and than the CPU EP, and in f32 no faster than
# the CPU EP, so `auto` keeps the CPU EP and a forced OpenVINO computes in f32
# (the figures: docs/notes/README.md, the note on Sapphire Rapids without AMX).
NO_GAIN = "avx512_fp16"
# OpenVINO's CPU plugin quantises activations of int8-weight MatMuls on the fly by default, which moves a
# vector by up to 1.4e-3 with its batch-mates; the service compiles float weights only, and says so.
COMPILE_CONFIG = {"PERFORMANCE_HINT": "LATENCY", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
_ONNX_TYPES = {np.dtype(np.float32): "tensor(float)", np.dtype(np.float16): "tensor(float16)",
               np.dtype(np.int64): "tensor(int64)", np.dtype(np.int32): "tensor(int32)",
               np.dtype(np.bool_): "tensor(bool)"}


@dataclass(frozen=True)
class Found:
    """OpenVINO's runtime as this process found it: whether it can compile for the CPU, and why."""

    usable: bool
    reason: str
    version: str | None = None


def _openvino() -> ModuleType:
    """The `openvino` package, imported without its usage telemetry. Its import sends an event to Google
    Analytics unless the user opted out (a file in their home), from a process it forks off the worker's
    threads; where `openvino_telemetry` cannot be imported, OpenVINO takes its own stub that sends nothing."""
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type] - None: "cannot be imported"
    import openvino

    return openvino


@cache
def found() -> Found:
    """Whether `openvino` is installed and offers the CPU device (imported once, in the worker)."""
    try:
        ov = _openvino()
    except ImportError:
        return Found(False, "the openvino package is not installed")
    version = ov.get_version().split("-")[0]
    try:
        devices = ov.Core().available_devices
    except Exception as exc:  # noqa: BLE001 - a runtime that fails to start leaves the CPU EP serving
        return Found(False, f"OpenVINO {version} did not start ({type(exc).__name__}: {exc})", version)
    if "CPU" not in devices:
        return Found(False, f"OpenVINO {version} offers no CPU device ({', '.join(devices) or 'none'})", version)
    return Found(True, f"OpenVINO {version} runtime", version)


def measured_slower(flags: set[str]) -> bool:
    """A CPU where OpenVINO was measured no faster than the CPU EP at any precision (NO_GAIN without AMX)."""
    return NO_GAIN in flags and "amx_bf16" not in flags


def gains(flags: set[str]) -> str | None:
    """The strongest of GAINS the CPU reports, or None: where `auto` prefers OpenVINO."""
    if measured_slower(flags):
        return None
    return next((name for name in GAINS if name in flags), None)


def why_not(flags: set[str]) -> str:
    """Why `auto` leaves OpenVINO out where gains(flags) is None."""
    if measured_slower(flags):
        return (f"the CPU reports {NO_GAIN} without AMX (an Intel Sapphire Rapids-class core with AMX hidden), "
                "where OpenVINO was measured slower than the CPU EP in bf16 and no faster in f32")
    return "the CPU reports neither bf16 arithmetic nor AVX-512 VNNI, where OpenVINO was measured faster"


def inference_precision(flags: set[str]) -> str:
    """What OpenVINO computes in: bf16 where the CPU has bf16 arithmetic that pays (not where
    measured_slower: there its bf16 ran slower than its f32), else f32."""
    return "bf16" if any(name in flags for name in BF16) and not measured_slower(flags) else "f32"


def cache_dir(setting: str) -> Path | None:
    """The compiled-model cache (DIALSCORE_OPENVINO_CACHE_DIR; empty: ~/.cache/dialscore/openvino),
    created where missing, or None where it cannot be written: then each worker compiles for itself."""
    folder = Path(setting).expanduser() if setting else Path.home() / ".cache" / "dialscore" / "openvino"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        log.warning("OpenVINO's compiled-model cache %s is not writable (%s): every worker compiles the "
                    "encoders itself", folder, exc)
        return None
    return folder


COMPILE_LOCK = ".compile.lock"  # in the cache folder: one process compiles into it at a time


@contextmanager
def compiling(cache: Path | None) -> Iterator[None]:
    """Hold the cache's compile lock (an flock, let go when its holder exits however it exits): OpenVINO's
    write of a compiled blob is not safe against another process writing the same blob, and a worker whose
    compile failed there served on the CPU EP beside siblings on OpenVINO, each scoring alike requests
    apart. The second worker waits for the first compile, then loads its blob."""
    if cache is None:
        yield
        return
    with open(cache / COMPILE_LOCK, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def graph_to_compile(path: Path, dequantise: bool, cache: Path | None) -> Iterator[Path]:
    """The file OpenVINO compiles for `path`: itself, or with `dequantise` its float graph (float_graph),
    kept in the cache; without one, in a private temporary folder removed once the `with` block has
    compiled it (the compiled model holds its weights in memory), so that no worker start leaves its
    90 MB in $TMPDIR."""
    if not dequantise:
        yield path
    elif cache is not None:
        yield float_graph(path, cache)
    else:
        with tempfile.TemporaryDirectory(prefix="dialscore-openvino-") as private:
            yield float_graph(path, Path(private))


def float_graph(path: Path, folder: Path) -> Path:
    """The int8 file `path` with its weights dequantised to float initialisers, as ONNX Runtime's CPU EP
    serves it as int8-float (session.disable_quant_qdq folds each DequantizeLinear): the same int8-rounded
    weights in float arithmetic, a plain ONNX graph OpenVINO compiles to bf16. Written once into `folder`
    under the int8 file's hash, by rename, so that two workers starting together never read half a file."""
    import onnxruntime as ort

    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    target = folder / f"{path.stem}-float-{digest}.onnx"
    if target.exists():
        return target
    partial = folder / f".{target.name}.{os.getpid()}.partial"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # standard ONNX ops only
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    options.optimized_model_filepath = str(partial)
    options.log_severity_level = 3
    try:
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # ONNX Runtime says "Protobuf serialization failed" for a full or unwritable folder
        free = shutil.disk_usage(folder).free / 2**20
        raise OSError(f"its float graph (about {4 * path.stat().st_size / 2**20:.0f} MiB) could not be written "
                      f"to {folder}, which has {free:.0f} MiB free ({exc})") from exc
    os.replace(partial, target)
    return target


@dataclass(frozen=True)
class Port:
    """An input or output as ONNX Runtime's NodeArg describes it (the parts runtime.Session reads)."""

    name: str
    type: str
    shape: list[Any]


class CompiledSession:
    """A model OpenVINO compiled for the CPU, run like an ONNX Runtime session: `streams` runs may be in
    flight at once (one infer request each, taken from a queue), on `threads` threads in all.

    OpenVINO keeps the kernels it builds for each input shape, up to `shapes` of them (its
    CPU_RUNTIME_CACHE_CAPACITY, 5,000 by default): about 2 MiB a shape for MiniLM, resident for good, so
    that at its default a worker grows with every (batch, length) it meets (docs/deploy.md, Memory)."""

    def __init__(self, path: Path, threads: int, streams: int, precision: str, cache: Path | None,
                 shapes: int) -> None:
        ov = _openvino()

        config: dict[str, Any] = {**COMPILE_CONFIG, "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": streams,
                                  "INFERENCE_PRECISION_HINT": precision, "CPU_RUNTIME_CACHE_CAPACITY": shapes}
        if cache is not None:
            config["CACHE_DIR"] = str(cache)
        self.compiled = ov.Core().compile_model(str(path), "CPU", config)
        self.precision = precision
        self._inputs = [_port(p) for p in self.compiled.inputs]
        self._outputs = [_port(p) for p in self.compiled.outputs]
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _ in range(max(1, streams)):
            self._requests.put(self.compiled.create_infer_request())
        # pybind11 makes an iterator's type on its first use, unsafely when two threads meet there (pybind11
        # #5970: "Object of type 'iterator' is not an instance of 'iterator'"); `infer` iterates a tensor's
        # Shape, so that type is made here, on the loading thread, before encoder threads run in parallel.
        tuple(ov.Shape([1]))

    def get_inputs(self) -> list[Port]:
        return self._inputs

    def get_outputs(self) -> list[Port]:
        return self._outputs

    def get_providers(self) -> list[str]:
        return [EP]

    def run(self, outputs: list[str] | None, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The named outputs (all where None), copied out of the infer request before it serves another run."""
        request = self._requests.get()
        try:
            results = request.infer(feeds)
            return [np.array(results[self.compiled.output(name)], copy=True)
                    for name in (outputs or [p.name for p in self._outputs])]
        finally:
            self._requests.put(request)


def _port(port: Any) -> Port:
    shape = port.get_partial_shape()
    dims = [d.get_length() if d.is_static else None for d in shape] if shape.rank.is_static else []
    return Port(port.get_any_name(), _ONNX_TYPES.get(np.dtype(port.get_element_type().to_dtype()), "tensor(float)"), dims)
