"""Every setting of the service and its server, once: a default and a DIALSCORE_* environment variable.

Precedence in create_app: these defaults, then the environment, then the mapping the caller passes (tests).
"""
from __future__ import annotations

import ipaddress
import logging
import math
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Settings:
    """Field `name` is read from DIALSCORE_<NAME>; `max_*` fields are the limits GET /models lists."""

    # DIALSCORE_MODEL_STORE; the folder beside service/: the checkout's, or the copy `pip install` puts in site-packages
    model_store: Path = REPO_ROOT / "model_store"
    models: tuple[str, ...] = ()  # DIALSCORE_MODELS: comma list; empty = every model in the store
    max_body_bytes: int = 1 << 20  # DIALSCORE_MAX_BODY_BYTES
    max_items: int = 512  # DIALSCORE_MAX_ITEMS
    max_candidates: int = 64  # DIALSCORE_MAX_CANDIDATES
    max_turns: int = 50  # DIALSCORE_MAX_TURNS: context turns of an item or a /rerank (the models read their last few)
    # DIALSCORE_MAX_DIALOGUE_TURNS: turns of a dialogue item (DSTC9's interactive dialogues run to 630)
    max_dialogue_turns: int = 1000
    # DIALSCORE_MAX_CHARS: characters per utterance (FED's and DSTC9's longest turns have 3,414); the cost
    # bounds are the body's bytes and the encoders' word pieces, so a long turn is not refused for its length
    max_chars: int = 10_000
    # DIALSCORE_MAX_ENCODER_TOKENS: word pieces of a request's distinct texts through the sentence encoder,
    # which bound its cost (docs/benchmarks.md gives the time a word piece takes)
    max_encoder_tokens: int = 100_000
    max_correlate_items: int = 100_000  # DIALSCORE_MAX_CORRELATE_ITEMS
    max_resamples: int = 10_000  # DIALSCORE_MAX_RESAMPLES
    max_bootstrap_work: int = 20_000_000  # DIALSCORE_MAX_BOOTSTRAP_WORK: /correlate items x resamples (memory)
    max_bootstrap_metric_work: int = 60_000_000  # DIALSCORE_MAX_BOOTSTRAP_METRIC_WORK: items x resamples x metrics (time)
    max_metrics: int = 32  # DIALSCORE_MAX_METRICS: /correlate metrics (comparisons grow with its square)
    max_ratings: int = 200_000  # DIALSCORE_MAX_RATINGS: /human-eval rows
    max_systems: int = 64  # DIALSCORE_MAX_SYSTEMS: /human-eval systems (pairwise tests grow with its square)
    max_criteria: int = 64  # DIALSCORE_MAX_CRITERIA: /human-eval criteria a rating scores, and entries of reverse / qc_criteria
    # DIALSCORE_NOT_ENGLISH_CONFIDENCE: the language identifier's confidence at which a reply in the Latin script
    # is warned about as `not_english` (docs/api.md: how 0.8 was chosen)
    not_english_confidence: float = 0.8
    max_json_depth: int = 32  # DIALSCORE_MAX_JSON_DEPTH: nesting of a request body (the contract's need 5)
    # Checked by the worker's front (server/front.py), which answers 414 / 431 `too_large` before the app sees the request.
    max_request_line: int = 4094  # DIALSCORE_MAX_REQUEST_LINE: bytes of the request line without its CRLF (at most 8190)
    max_headers: int = 100  # DIALSCORE_MAX_HEADERS: header fields per request
    max_header_bytes: int = 8190  # DIALSCORE_MAX_HEADER_BYTES: bytes of one header field
    # DIALSCORE_MAX_HEAD_BYTES: bytes of the whole head, request line to blank line (and of chunked trailers),
    # which h11 holds per connection until it is whole
    max_head_bytes: int = 32768
    batch_size: int = 64  # DIALSCORE_BATCH_SIZE: texts per ONNX run after length bucketing (memory grows with it)
    workers: int = 2  # DIALSCORE_WORKERS: gunicorn workers (also divides the cores among sessions)
    intra_op_threads: int = 0  # DIALSCORE_INTRA_OP_THREADS: 0 = cores / workers
    # DIALSCORE_ENCODER_THREADS: ONNX runs of one request's sentence encoder at once (each a share of its texts of
    # about equal word pieces), each on intra_op_threads / encoder_threads (at least 1); 0 = the cores: a lone
    # request uses them all
    encoder_threads: int = 0
    # DIALSCORE_PROVIDERS: execution providers in order of preference; `auto` is CUDA where this build has it, then
    # OpenVINO's own runtime (OpenVINOExecutionProvider) for the sentence encoders where the CPU reports bf16
    # arithmetic (AMX, AVX512_BF16) or AVX-512 VNNI, but not on an AVX512_FP16 core without AMX (measured slower
    # there), then the CPU EP (service/artifacts/providers.py).
    # CPUExecutionProvider alone keeps every score bit-exact across batches.
    providers: tuple[str, ...] = ("auto",)
    # DIALSCORE_OPENVINO_CACHE_DIR: OpenVINO's compiled-model cache, so that a restart and the second worker load
    # the compiled encoders instead of compiling them (docs/deploy.md); empty: ~/.cache/dialscore/openvino
    openvino_cache_dir: str = ""
    # DIALSCORE_OPENVINO_SHAPE_CACHE: input shapes whose kernels OpenVINO keeps built (its
    # CPU_RUNTIME_CACHE_CAPACITY; about 2 MiB a shape for MiniLM): more is faster on shapes met again, and
    # resident for good (docs/deploy.md, Memory)
    openvino_shape_cache: int = 64
    cuda_options: tuple[str, ...] = ()  # DIALSCORE_CUDA_OPTIONS: key=value,... for ONNX Runtime's CUDA provider (CUDA_DEFAULTS below)
    # DIALSCORE_REQUIRE_CUDA: every ONNX graph must run on CUDA: a build without it stops start-up, and a model
    # whose session falls back to the CPU (no device, a driver missing) fails to load, so the pod is not ready
    require_cuda: bool = False
    load_sync: bool = False  # DIALSCORE_LOAD_SYNC: load models before serving instead of in the background
    # DIALSCORE_OPEN_ACCESS: serve without DIALSCORE_API_TOKEN on an address other than loopback; without it
    # `python -m service` refuses to start there (startup_checks.py)
    open_access: bool = False
    api_token: str = ""  # DIALSCORE_API_TOKEN: when set, every endpoint but the probes, /openapi.json and /docs/ (api/middleware.py OPEN_PATHS) needs `Authorization: Bearer <token>` (several, comma-separated: any passes)
    log_level: str = "INFO"  # DIALSCORE_LOG_LEVEL
    encoder_precision: str = "auto"  # DIALSCORE_ENCODER_PRECISION: the sentence encoder's file, w8a8, int8, int8-float, fp32 or auto (choose_precision)
    # The server's own, read by gunicorn (server/gunicorn.conf.py) in the master: SERVER_FIELDS.
    host: str = "127.0.0.1"  # DIALSCORE_HOST
    port: int = 8000  # DIALSCORE_PORT
    # DIALSCORE_THREADS: scoring requests a worker runs at once. ONNX Runtime already spreads one request over
    # the worker's cores, so a second one shares them and both take twice as long: more threads add latency,
    # not throughput, on CPUs (docs/benchmarks.md, load test)
    threads: int = 1
    worker_timeout: int = 120  # DIALSCORE_WORKER_TIMEOUT: seconds without a heartbeat, or past a deadline, before replacement
    graceful_timeout: int = 25  # DIALSCORE_GRACEFUL_TIMEOUT: seconds in-flight requests get after SIGTERM
    read_timeout: float = 10.0  # DIALSCORE_READ_TIMEOUT: seconds a request may take to arrive whole
    # DIALSCORE_REQUEST_TIMEOUT: a request's budget in seconds when it sends no X-Request-Timeout header; work that
    # cannot start and finish within its budget is refused with 503 (server/admission.py)
    request_timeout: float = 30.0
    # DIALSCORE_MAX_QUEUE: requests a worker holds waiting for one of its threads; past it, 503 `overloaded`
    max_queue: int = 16
    max_requests: int = 0  # DIALSCORE_MAX_REQUESTS: recycle a worker after this many (0: never)
    # DIALSCORE_MAX_WORKER_MEMORY_MIB: recycle a worker whose resident memory passed this after a request (0: never)
    max_worker_memory_mib: int = 0
    # DIALSCORE_MAX_PENDING_BYTES: bytes of request bodies a worker holds while they arrive, all connections
    # together; past it, a request gets 503 `overloaded` (each is also under max_body_bytes)
    max_pending_bytes: int = 16 << 20
    worker_tmp_dir: str = ""  # DIALSCORE_WORKER_TMP_DIR: gunicorn's heartbeat files ("": the system's)

    def limits(self) -> dict[str, int]:
        """What GET /models lists as `limits`: every `max_*` setting but the server's, in declaration order,
        so a new limit is published without a list to keep in step (its range: SERVICE_RANGES, which a test
        holds to every integer field)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name.startswith("max_") and f.name not in SERVER_FIELDS}


def env_name(field: str) -> str:
    """The environment variable of a Settings field."""
    return f"DIALSCORE_{field.upper()}"


# --- the server's values: gunicorn takes them as they come, so each is held to what it can use -----
# name: (lowest, highest) for the integers; the timeouts, host and worker_tmp_dir have their own checks
SERVER_RANGES = {"port": (1, 65535), "threads": (1, 1024), "worker_timeout": (0, 86400),
                 "graceful_timeout": (0, 86400), "max_requests": (0, 10**9), "max_queue": (0, 10**6),
                 "max_worker_memory_mib": (0, 10**7), "max_pending_bytes": (1, 1 << 40)}
SERVER_FIELDS = ("host", "port", "threads", "worker_timeout", "graceful_timeout", "read_timeout", "request_timeout",
                 "max_queue", "max_requests", "max_worker_memory_mib", "max_pending_bytes", "worker_tmp_dir")
MAX_READ_TIMEOUT = 3600.0  # seconds; socket timeouts past ~1e10 overflow time_t
MAX_WORKERS = 64  # gunicorn workers the master runs
# A count a request may hold: below 2**31, so that no limit overflows the C ints of numpy and ONNX
# Runtime; a request is also under max_body_bytes, which bounds every count in it.
MAX_COUNT = 10**9
MAX_SESSION_THREADS = 256  # ONNX Runtime / OpenVINO threads per worker: more cost memory and start-up, never speed

# The service's integer settings: name: (lowest, highest), checked by load_settings (the server's are
# SERVER_RANGES). A limit below 1 would refuse every request while /readyz said ready; 0 is "cores / workers"
# for the thread counts.
SERVICE_RANGES = {
    **{name: (1, MAX_COUNT) for name in (
        "max_items", "max_candidates", "max_turns", "max_dialogue_turns", "max_chars", "max_encoder_tokens",
        "max_correlate_items", "max_resamples", "max_bootstrap_work", "max_bootstrap_metric_work", "max_metrics",
        "max_ratings", "max_systems", "max_criteria")},
    "max_body_bytes": (1, 1 << 30),  # a body is held whole in a worker's memory
    # the schemas and the error handler recurse into a body: well within Python's recursion limit (1000);
    # the contract's shapes nest 5 deep
    "max_json_depth": (5, 256),
    # the head limits' ceilings are gunicorn's own; their floors leave room for the kubelet's health checks
    # and a client's usual head (kubelet sends 4 fields and its own), below which /healthz would be refused
    "max_request_line": (256, 8190), "max_headers": (16, 32768), "max_header_bytes": (256, 1 << 20),
    "max_head_bytes": (1024, 1 << 24),
    "batch_size": (1, 8192),  # a run holds at most 8,192 padded word pieces (MAX_TOKENS), so more changes nothing
    "workers": (1, MAX_WORKERS),
    "intra_op_threads": (0, MAX_SESSION_THREADS),
    "encoder_threads": (0, MAX_SESSION_THREADS),
    "openvino_shape_cache": (0, 5000),  # OpenVINO's own default, past which its memory is the worker's whole
}


# int() and float() also read "1_0" as 10, and float() "inf" and "nan": a setting is written plainly.
WHOLE = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def plain_int(raw: Any) -> int:
    """An int, or its decimal digits as text (a sign and surrounding spaces allowed); ValueError otherwise."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if not WHOLE.fullmatch(str(raw).strip()):
        raise ValueError(raw)
    return int(str(raw))


def plain_float(raw: Any) -> float:
    """A finite number, or its decimal text (an exponent allowed); ValueError otherwise."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
        return float(raw)
    if not DECIMAL.fullmatch(str(raw).strip()):
        raise ValueError(raw)
    return float(str(raw))


def whole_number(key: str, raw: str, lowest: int, highest: int) -> int:
    """`raw` as an integer from `lowest` to `highest`; ValueError naming `key`."""
    try:
        value = plain_int(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r}: must be a whole number from {lowest} to {highest}") from None
    if not lowest <= value <= highest:
        raise ValueError(f"{key}={raw!r}: must be from {lowest} to {highest}")
    return value


def _seconds(key: str, raw: str) -> float:
    try:
        value = plain_float(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r}: must be a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= MAX_READ_TIMEOUT):
        raise ValueError(f"{key}={raw!r}: must be a number of seconds above 0 and at most {MAX_READ_TIMEOUT:g}")
    return value


def _server_value(name: str, raw: Any) -> Any:
    key, raw = env_name(name), str(raw).strip()
    if name == "host" and not raw:  # gunicorn binds an empty host on every interface
        raise ValueError(f"{key}='': give an address to listen on (0.0.0.0 for every interface)")
    if name == "host":
        return unbracketed(raw)
    if name == "worker_tmp_dir":
        return absolute_folder(key, raw)
    if name in ("read_timeout", "request_timeout"):
        return _seconds(key, raw)
    return whole_number(key, raw, *SERVER_RANGES[name])


def unbracketed(host: str) -> str:
    """DIALSCORE_HOST without the brackets of an IPv6 literal (`[::1]` and `::1` are one address)."""
    inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return str(ipaddress.IPv6Address(inner))
    except ValueError:
        return host


def bind_address(host: str, port: int) -> str:
    """gunicorn's `bind` for a host and port: an IPv6 literal in brackets, or gunicorn reads its last
    colon as the port's (`::1:8000`), and `::1` alone as an empty port."""
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return f"{host}:{port}"
    return f"[{host}]:{port}"


def absolute_folder(key: str, folder: str, home: bool = False) -> str:
    """`folder` (empty: unset), ValueError naming `key` where it is relative: it would be made in whatever
    folder the server was started from (`-1` made ./-1). `home`: a leading ~ is expanded where it is read."""
    if folder and not os.path.isabs(os.path.expanduser(folder) if home else folder):
        raise ValueError(f"{key}={folder!r}: must be an absolute path (a relative one would be made in the folder "
                         "the server was started from)")
    return folder


def check_writable(folder: str, key: str) -> None:
    """ValueError unless `folder` exists (or can be made) and a file can be written in it: the
    workers write there on every request (metrics) or once loaded (readiness)."""
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as exc:
        raise ValueError(f"{key}={folder!r}: not a folder the server can write in ({exc.strerror or exc})") from None


# Our defaults for ONNX Runtime's CUDA provider, under what DIALSCORE_CUDA_OPTIONS sets.
# use_tf32=0: TF32 (ONNX Runtime's default) rounds fp32 matrix products to a 10-bit mantissa, which moved
# H100 scores by up to 2e-4 of their range from the CPU's (1e-6 without); a research tool gives the CPU's
# scores on every device, and TF32's extra throughput is one setting away (docs/gpu.md).
CUDA_DEFAULTS: dict[str, str] = {"use_tf32": "0"}


def cuda_provider_options(entries: tuple[str, ...]) -> dict[str, str]:
    """CUDA_DEFAULTS updated by "key=value" entries; ONNX Runtime itself rejects unknown keys."""
    options = dict(CUDA_DEFAULTS)
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"CUDA provider option {entry!r} is not key=value")
        options[key.strip()] = value.strip()
    return options


PRECISION_ENV = "DIALSCORE_ENCODER_PRECISION"
PRECISIONS = ("w8a8", "int8", "int8-float", "fp32")


def encoder_precision(value: Any) -> str:
    """DIALSCORE_ENCODER_PRECISION, lower-cased: w8a8, int8, int8-float, fp32 or auto (also for an empty
    value). int8-float is the int8 file with its weights turned to float at load (sentence_encoder.py)."""
    requested = str(value).strip().lower() or "auto"
    if requested not in PRECISIONS + ("auto",):
        raise ValueError(f"{PRECISION_ENV}={requested!r} is not one of {PRECISIONS + ('auto',)}")
    return requested


TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _convert(raw: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        word = str(raw).strip().lower()
        if word not in TRUE + FALSE:  # any other word would silently read as false
            raise ValueError(f"must be true or false (or 1/0, yes/no, on/off), not {raw!r}")
        return word in TRUE
    if isinstance(default, int):
        try:
            return plain_int(raw)
        except ValueError:
            raise ValueError(f"must be a whole number, not {raw!r}") from None
    if isinstance(default, float):
        try:
            return plain_float(raw)
        except ValueError:
            raise ValueError(f"must be a finite number, not {raw!r}") from None
    if isinstance(default, Path):
        if not str(raw).strip():  # Path("") is the working directory, whose folders would be taken for models
            raise ValueError("must name a folder")
        return Path(str(raw).strip())
    if isinstance(default, tuple):
        if isinstance(raw, (list, tuple)):
            return tuple(raw)
        return tuple(part.strip() for part in str(raw).split(",") if part.strip())
    return str(raw).strip()  # as every other value: a Secret or a YAML value may end in a space or newline


def load_settings(overrides: dict[str, Any] | None = None, environ: Mapping[str, str] | None = None,
                  check_providers: bool = True) -> Settings:
    """The settings, checked, the server's values first; ValueError naming the variable of a bad one.
    `check_providers=False` skips the provider names, which are asked of ONNX Runtime (gunicorn's
    master reads its settings here and must not load it before the fork)."""
    environ = os.environ if environ is None else environ
    base = Settings()
    values: dict[str, Any] = {}
    for name in SERVER_FIELDS:
        if env_name(name) in environ:
            values[name] = _server_value(name, environ[env_name(name)])
    if values.get("worker_tmp_dir"):
        check_writable(values["worker_tmp_dir"], "DIALSCORE_WORKER_TMP_DIR")
    for f in fields(Settings):
        key = env_name(f.name)
        if key in environ and f.name not in SERVER_FIELDS:
            try:
                values[f.name] = _convert(environ[key], getattr(base, f.name))
            except ValueError as exc:
                raise ValueError(f"{key}={environ[key]!r}: {exc}") from exc
    for name, raw in (overrides or {}).items():
        if name not in {f.name for f in fields(Settings)}:
            raise KeyError(f"unknown setting {name!r}")
        values[name] = _server_value(name, raw) if name in SERVER_FIELDS else _convert(raw, getattr(base, name))
    settings = replace(base, **values)
    # A Secret made with `--from-file` ends in a newline; the offered token is stripped, so an
    # unstripped configured one could never match and every request would be 401.
    settings = replace(settings, api_token=settings.api_token.strip())
    if any(ch.isspace() or not ch.isprintable() for ch in settings.api_token):
        raise ValueError("DIALSCORE_API_TOKEN: must not hold spaces or control characters (a header cannot carry them)")
    # Set but blank (a Secret with an empty value) must fail closed, not serve every endpoint open.
    if not settings.api_token and "DIALSCORE_API_TOKEN" in environ:
        raise ValueError("DIALSCORE_API_TOKEN: set but blank; give the token, or unset the variable to serve "
                         "without one")
    if settings.api_token and not all(settings.api_token.split(",")):
        raise ValueError("DIALSCORE_API_TOKEN: an empty token between commas (several tokens are separated by "
                         "single commas, for a rotation)")
    # HTTP headers are read as latin-1 and compared as UTF-8 here, so a non-ASCII token would match no
    # client that sends it as UTF-8 (curl does).
    if not settings.api_token.isascii():
        raise ValueError("DIALSCORE_API_TOKEN: must be ASCII (letters, digits and punctuation; RFC 6750's "
                         "token characters are safest)")
    for name, (lowest, highest) in SERVICE_RANGES.items():
        value = getattr(settings, name)
        if not lowest <= value <= highest:
            raise ValueError(f"{env_name(name)}={value}: must be from {lowest} to {highest}")
    check_limits_agree(settings)
    if not 0 < settings.not_english_confidence <= 1:  # NaN fails too
        raise ValueError(f"DIALSCORE_NOT_ENGLISH_CONFIDENCE={settings.not_english_confidence}: must be above 0 and "
                         "at most 1")
    if not settings.models and environ.get("DIALSCORE_MODELS", "").strip():  # commas alone: not "every model"
        raise ValueError(f"DIALSCORE_MODELS={environ['DIALSCORE_MODELS']!r}: names no model; name them separated by "
                         "commas, or leave it empty to serve every model in the store")
    # the one spelling logging and gunicorn take; empty is the default, as for the other settings
    settings = replace(settings, log_level=settings.log_level.upper() or Settings.log_level)
    if settings.log_level not in LOG_LEVELS:
        raise ValueError(f"DIALSCORE_LOG_LEVEL={settings.log_level!r}: must be one of {', '.join(LOG_LEVELS)}")
    if not settings.providers:
        raise ValueError("DIALSCORE_PROVIDERS: name at least one ONNX Runtime execution provider")
    try:  # the one parser (pure Python): checked here so that a typo stops start-up
        cuda_provider_options(settings.cuda_options)
    except ValueError as exc:
        raise ValueError(f"DIALSCORE_CUDA_OPTIONS: {exc}") from exc
    settings = replace(settings, encoder_precision=encoder_precision(settings.encoder_precision))
    absolute_folder("DIALSCORE_OPENVINO_CACHE_DIR", settings.openvino_cache_dir, home=True)
    if not check_providers:
        return settings
    check_provider_names(settings.providers, explicit="DIALSCORE_PROVIDERS" in environ)
    if settings.require_cuda:
        import onnxruntime as ort

        check_cuda_required(settings.providers, ort.get_available_providers())
    return settings


def check_cuda_required(providers: tuple[str, ...], available: Sequence[str]) -> None:
    """ValueError where DIALSCORE_REQUIRE_CUDA cannot hold: CUDA not first in the list, or not in this
    build (`available`: its providers)."""
    if providers[0] not in ("CUDAExecutionProvider", AUTO_PROVIDERS):
        raise ValueError(f"DIALSCORE_REQUIRE_CUDA: DIALSCORE_PROVIDERS={','.join(providers)} does not put "
                         "CUDAExecutionProvider (or auto) first")
    if "CUDAExecutionProvider" not in available:
        raise ValueError("DIALSCORE_REQUIRE_CUDA: this onnxruntime build has no CUDA provider (it has "
                         f"{', '.join(available)}); install onnxruntime-gpu, or unset it")


def check_limits_agree(settings: Settings) -> None:
    """ValueError where one limit would refuse for good what another admits: a body under max_body_bytes
    refused 503 on an idle worker, a head with its line and one field at their limits refused 431."""
    if settings.max_pending_bytes < settings.max_body_bytes:
        raise ValueError(f"DIALSCORE_MAX_PENDING_BYTES={settings.max_pending_bytes}: must be at least "
                         f"DIALSCORE_MAX_BODY_BYTES ({settings.max_body_bytes}), or a body between the two is "
                         "refused on an idle worker")
    least = settings.max_request_line + settings.max_header_bytes + 6  # three CRLFs
    if settings.max_head_bytes < least:
        raise ValueError(f"DIALSCORE_MAX_HEAD_BYTES={settings.max_head_bytes}: must be at least DIALSCORE_MAX_REQUEST_LINE "
                         f"+ DIALSCORE_MAX_HEADER_BYTES + 6 ({least}), so that a request line and a header field "
                         "at their limits fit")


def load_server_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings as gunicorn's master reads them (server/gunicorn.conf.py, `python -m service`'s check):
    the worker count held to what the master runs, and ONNX Runtime not loaded before the fork."""
    environ = os.environ if environ is None else environ
    if "DIALSCORE_WORKERS" in environ:
        whole_number("DIALSCORE_WORKERS", environ["DIALSCORE_WORKERS"].strip(), 1, MAX_WORKERS)
    return load_settings(environ=environ, check_providers=False)


AUTO_PROVIDERS = "auto"
# Providers served by a runtime of their own (OpenVINO's, service/artifacts/openvino.py): no onnxruntime
# build lists them as available.
PLUGIN_PROVIDERS = ("OpenVINOExecutionProvider",)  # a name for OpenVINO's own runtime here


def refuse_unknown_providers(providers: Sequence[str], known: Sequence[str]) -> None:
    """ValueError naming the providers that are not in ONNX Runtime's list of all it knows (nor `auto`)."""
    unknown = [p for p in providers if p not in known and p != AUTO_PROVIDERS]
    if unknown:
        raise ValueError(f"DIALSCORE_PROVIDERS: {', '.join(unknown)} is not an ONNX Runtime execution provider "
                         "(for example auto, CUDAExecutionProvider, OpenVINOExecutionProvider, CPUExecutionProvider)")


def check_provider_names(providers: tuple[str, ...], explicit: bool) -> None:
    """ValueError for a name ONNX Runtime does not know (it would drop a misspelt one and run on the CPU
    without a word); a warning for a known one this build lacks, when the operator asked for it (the
    default names CUDA first on every machine)."""
    import onnxruntime as ort  # not at import: gunicorn's master reads these settings and must not load it

    refuse_unknown_providers(providers, ort.get_all_providers())
    missing = [p for p in providers if p not in ort.get_available_providers() + [AUTO_PROVIDERS, *PLUGIN_PROVIDERS]]
    if explicit and missing:
        logging.getLogger(__name__).warning("DIALSCORE_PROVIDERS asks for %s, which this onnxruntime build does "
                                            "not have (it has %s)", ", ".join(missing),
                                            ", ".join(ort.get_available_providers()))
