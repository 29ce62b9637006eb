"""ONNX Runtime sessions (and OpenVINO's compiled encoders) for one worker: providers, threads, and checked inputs.

Sessions are created after gunicorn forks (the store loads inside each worker), never in the
master: ONNX Runtime thread pools do not survive a fork.
"""
from __future__ import annotations

import contextvars
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import onnxruntime as ort

from service.observability import tracing
from service.artifacts import openvino
from service.artifacts.hardware import cpu_flags, usable_cores
from service.artifacts.providers import AUTO, CPU, ProviderChoice, choose_providers
from service.config import Settings, cuda_provider_options

log = logging.getLogger(__name__)

_NUMPY_TYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
}


@dataclass(frozen=True)
class RuntimeSettings:
    providers: tuple[str, ...] = (AUTO,)  # names in order of preference; auto: providers.choose_providers
    intra_op_threads: int = 0  # 0: cores / workers
    encoder_threads: int = 0  # ONNX runs one request's encoder may have in flight at once; 0: the cores
    workers: int = 1
    cuda_options: tuple[str, ...] = ()  # "key=value" entries for the CUDA provider, over CUDA_DEFAULTS
    batch_size: int = 64  # texts per ONNX run after length bucketing (memory grows with it)
    encoder_precision: str = "auto"  # the sentence encoder's file: int8, fp32, or auto (choose_precision)
    openvino_cache_dir: str = ""  # OpenVINO's compiled-model cache (openvino.cache_dir)
    openvino_shape_cache: int = 64  # input shapes whose kernels OpenVINO keeps built (CompiledSession)
    require_cuda: bool = False  # a session that does not run on CUDA is CudaUnavailable, not served on the CPU

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> "RuntimeSettings":
        """The runtime part of the service's settings, with `overrides` on top: the one way to build it,
        so that every entry point (the server, bulk, gpu-check.sh) honours every DIALSCORE_* runtime
        variable."""
        values = {f.name: getattr(settings, f.name) for f in fields(cls)}
        return cls(**{**values, **overrides})


def providers_of(sessions: list[Any]) -> list[str]:
    """Execution providers the sessions really got, in order, each once (CPU where there are none)."""
    seen: list[str] = []
    for session in sessions:
        seen += [p for p in session.get_providers() if p not in seen]
    return seen or ["CPUExecutionProvider"]


def default_threads(workers: int) -> int:
    """Cores divided among workers: oversubscribed thread pools halve throughput under gunicorn."""
    return max(1, usable_cores() // max(1, workers))


class CudaUnavailable(RuntimeError):
    """A session fell back from CUDA to the CPU where DIALSCORE_REQUIRE_CUDA forbids it: its model fails."""


class Runtime:
    """Creates sessions with one worker's settings and remembers them for provider reporting."""

    def __init__(self, settings: RuntimeSettings | None = None) -> None:
        self.settings = settings or RuntimeSettings()
        self.threads = self.settings.intra_op_threads or default_threads(self.settings.workers)
        self.encoder_threads = self.settings.encoder_threads or usable_cores()
        # The encoder's cores go to parallel runs first: one run per thread beat one run on two threads
        # by 1.5x on a shared 2-core CPU (docs/notes/2026-11-27-benchmarks-history.md).
        self.encoder_run_threads = max(1, self.threads // self.encoder_threads)
        self.flags = cpu_flags()
        self.choice: ProviderChoice = choose_providers(self.settings.providers, ort.get_available_providers(),
                                                       self.flags, openvino.found)
        self.providers = self.choice.providers
        self.cuda_options = cuda_provider_options(self.settings.cuda_options)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()  # requests meet at the first use (on CUDA the warm-up makes none)
        if openvino.EP in self.settings.providers and self.choice.encoder != openvino.EP:
            log.warning("DIALSCORE_PROVIDERS names %s, but the encoders run on %s: %s", openvino.EP,
                        self.choice.encoder, self.choice.reason)

    def map_threads(self, function: Callable[[Any], Any], work: list[Any]) -> list[Any]:
        """`function` over `work`, up to `encoder_threads` at a time on this worker's thread pool (ONNX
        Runtime lets go of the GIL while it runs), results in order. A lone request so uses every
        core; under load the cores are shared by the OS, as among workers."""
        if self.encoder_threads < 2 or len(work) < 2:
            return [function(part) for part in work]
        with self._pool_lock:  # made on first use, in the worker (a pool's threads do not survive a fork)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.encoder_threads, thread_name_prefix="encoder")
        caller = contextvars.copy_context()  # the request's trace context, which pool threads do not inherit
        return list(self._pool.map(lambda part: caller.copy().run(function, part), work))

    def provider_list(self) -> list:
        """Providers as InferenceSession takes them, CUDA with its options."""
        return [(p, self.cuda_options) if p == "CUDAExecutionProvider" else p for p in self.providers]

    def session(self, path: Path, threads: int | None = None, config: dict[str, str] | None = None) -> "Session":
        """An ONNX Runtime session on the providers of every graph but the encoders, `threads` intra-op
        threads (default: the worker's share of the cores), `config` as session configuration entries."""
        raw = ort.InferenceSession(str(path), sess_options=self._options(threads or self.threads, config),
                                   providers=self.provider_list())
        got = raw.get_providers()
        if self.settings.require_cuda and "CUDAExecutionProvider" not in got:
            raise CudaUnavailable(f"{Path(path).name} runs on {', '.join(got)}, not CUDA, and DIALSCORE_REQUIRE_CUDA "
                                  "is set (no GPU visible, or CUDA's libraries missing: the log above says which)")
        if "CUDAExecutionProvider" in self.providers and "CUDAExecutionProvider" not in got:
            log.warning("%s: CUDA was requested but the session runs on %s", Path(path).name, got)
        return Session(raw, Path(path).name)

    def encoder_session(self, path: Path, config: dict[str, str] | None = None, weights: str = "fp32") -> "Session":
        """A sentence encoder's session on the encoders' provider (self.choice). On OpenVINO a compiled
        model with one stream a share of a request (encoder_threads), each on the threads a share gets on
        the CPU EP, computing in openvino.inference_precision; `weights` int8-float or int8 compiles the
        int8 file's weights dequantised to float (openvino.graph_to_compile). Where OpenVINO cannot compile
        it, the CPU EP's session, with a warning. `config` applies to the CPU EP only."""
        if self.settings.require_cuda and self.choice.encoder != "CUDAExecutionProvider":
            raise CudaUnavailable(f"{Path(path).name}: the encoders run on {self.choice.encoder} "
                                  f"({self.choice.reason}), and DIALSCORE_REQUIRE_CUDA is set")
        if self.choice.encoder != openvino.EP:
            return self.session(path, self.encoder_run_threads, config)
        precision = openvino.inference_precision(self.flags)
        cache = openvino.cache_dir(self.settings.openvino_cache_dir)
        try:
            with openvino.compiling(cache), openvino.graph_to_compile(Path(path), weights in ("int8", "int8-float"),
                                                                       cache) as graph:
                compiled = openvino.CompiledSession(graph, self.encoder_threads * self.encoder_run_threads,
                                                    self.encoder_threads, precision, cache,
                                                    self.settings.openvino_shape_cache)
        except Exception as exc:  # noqa: BLE001 - the CPU EP serves what OpenVINO cannot
            log.warning("%s: OpenVINO could not compile it (%s: %s); the CPU EP serves it", Path(path).name,
                        type(exc).__name__, exc)
            return self.session(path, self.encoder_run_threads, config)
        return Session(compiled, Path(path).name, compute=precision)

    def _options(self, threads: int, config: dict[str, str] | None) -> ort.SessionOptions:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        for key, value in (config or {}).items():
            options.add_session_config_entry(key, value)
        return options


class Session:
    """A thin wrapper that feeds the dtypes the graph asks for and checks names and ranks."""

    def __init__(self, session: ort.InferenceSession | openvino.CompiledSession, name: str,
                 compute: str | None = None) -> None:
        self._session = session
        self.name = name
        self.compute = compute  # OpenVINO's inference precision where it runs the graph; None: the graph's own
        self.inputs = {i.name: i for i in session.get_inputs()}
        self.outputs = [o.name for o in session.get_outputs()]
        # On CUDA, cuBLAS picks kernels by shape, so no way of batching makes a score bit-identical
        # whatever shares its batch (measured within 5.4e-7 of a range, docs/gpu.md), and a run costs
        # a launch and two copies: there, heads run a whole batch at once rather than a row at a time.
        self.on_cuda = session.get_providers()[0] == "CUDAExecutionProvider"
        self.batch_exact = False  # rows of equal width may share a run (rows_exact_in_batch, run_rows_packed)

    def get_providers(self) -> list[str]:
        return self._session.get_providers()

    @property
    def bit_exact_across_batches(self) -> bool:
        """Whether a row's outputs are the same bits whatever shares its batch: on the CPU EP, as the
        graphs we export are run (padding masked, pooling and heads outside or row by row); not on
        OpenVINO (bf16 and its own kernels) nor on CUDA (cuBLAS picks kernels by shape)."""
        return self._session.get_providers()[0] == CPU

    def run(self, feeds: dict[str, Any], outputs: list[str] | None = None) -> list[np.ndarray]:
        with tracing.span("onnx.run", graph=self.name, rows=_rows(feeds)):
            return self._run(feeds, outputs)

    def _run(self, feeds: dict[str, Any], outputs: list[str] | None = None) -> list[np.ndarray]:
        missing = set(self.inputs) - set(feeds)
        extra = set(feeds) - set(self.inputs)
        if missing or extra:
            raise ValueError(f"{self.name}: inputs missing {sorted(missing)}, unexpected {sorted(extra)}")
        cast: dict[str, np.ndarray] = {}
        for key, value in feeds.items():
            meta = self.inputs[key]
            array = np.asarray(value, dtype=_NUMPY_TYPES.get(meta.type))
            if len(meta.shape) != array.ndim:
                raise ValueError(f"{self.name}: input {key} has rank {array.ndim}, graph wants {len(meta.shape)}")
            cast[key] = array
        return self._session.run(outputs, cast)

    def run_rows(self, feeds: dict[str, Any]) -> list[np.ndarray]:
        """`run` one row at a time (axis 0 of every input), outputs stacked: for a small head, whose kernels may
        round a row differently by its position in the batch. The contract wants a score independent of the
        batch, and a head row costs little beside the encoders on the CPU. On CUDA, where a run alone is not
        exact either and costs a launch, the rows run as one batch (docs/gpu.md)."""
        arrays = {key: np.asarray(value) for key, value in feeds.items()}
        count = len(next(iter(arrays.values())))
        return self.run_rows_packed(count, lambda rows: {key: _take(value, rows) for key, value in arrays.items()})

    def run_rows_packed(self, count: int, pack: Callable[[Sequence[int]], dict[str, Any]],
                        widths: Sequence[int] | None = None) -> list[np.ndarray]:
        """`run_rows` for inputs that `pack(rows)` builds for a list of rows, so that a row run alone
        is packed to its own width (a context of its own turns, no padding): each row alone on the
        CPU, all `count` at once on CUDA (or when there are none); outputs stacked in row order.
        Where `rows_exact_in_batch` held for this graph (`batch_exact`), rows of equal `widths` (nothing
        to pad among them) run as one batch: the bits each would get alone, in one run instead of many."""
        with tracing.span("onnx.rows", graph=self.name, rows=count):
            if self.on_cuda or not count:
                return self._run(pack(range(count)))
            if self.batch_exact and widths is not None:
                groups: dict[int, list[int]] = {}
                for row, width in enumerate(widths):
                    groups.setdefault(width, []).append(row)
                runs: list[Sequence[int]] = list(groups.values())
            else:
                runs = [range(row, row + 1) for row in range(count)]
            parts = [self._run(pack(rows)) for rows in runs]
            order = np.argsort(np.concatenate([np.asarray(rows) for rows in runs]), kind="stable")
            return [np.concatenate([part[k] for part in parts])[order] for k in range(len(self.outputs))]

    def rows_exact_in_batch(self, feeds: dict[str, Any]) -> bool:
        """Whether every row of `feeds` (axis 0 of each input, nothing padded) gets the same output bits in
        one run as run alone, on this CPU and this graph's kernels: where it does, run_rows_packed may batch
        rows of equal width (`batch_exact`). Checked at load, not proven: the tests hold every served
        head to it over batches of 1 to 64 rows."""
        arrays = {key: np.asarray(value) for key, value in feeds.items()}
        count = len(next(iter(arrays.values())))
        together = self._run(arrays)
        alone = [self._run({key: value[i:i + 1] for key, value in arrays.items()}) for i in range(count)]
        return all(np.array_equal(together[k], np.concatenate([row[k] for row in alone]))
                   for k in range(len(self.outputs)))


def _take(array: np.ndarray, rows: Sequence[int]) -> np.ndarray:
    """The rows of `array` (axis 0): a view for a range, a copy for a list."""
    return array[rows.start:rows.stop] if isinstance(rows, range) else array[list(rows)]


def _rows(feeds: dict[str, Any]) -> int | None:
    """Rows of a run's first input, for its span."""
    first = next(iter(feeds.values()), None)
    shape = getattr(first, "shape", None)
    return int(shape[0]) if shape else None
