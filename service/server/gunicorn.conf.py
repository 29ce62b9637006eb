"""gunicorn settings for dialscore; `python -m service` passes this file with `-c`.

Values come from the environment that `python -m service` prepares (DIALSCORE_HOST, PORT,
WORKERS, ...), so operators configure one set of DIALSCORE_* variables.
"""
import atexit
import os
import shutil
import tempfile

from service.config import check_writable, load_server_settings
from service.observability.logs import gunicorn_logconfig

# One settings object (service/config.py); `python -m service` checks it before gunicorn starts
# (service/startup_checks.py) and stops with one line naming a bad variable.
_settings = load_server_settings()
bind = f"{_settings.host}:{_settings.port}"
workers = _settings.workers
# uvicorn's worker (HTTP parsed by h11) serving the Flask app through a2wsgi behind admission
# (service/server/worker.py, front.py); the scoring threads are DIALSCORE_THREADS, read there.
worker_class = "service.server.worker.DialscoreWorker"
# Models load in each worker after the fork (ONNX Runtime sessions must not cross a fork).
preload_app = False
wsgi_app = "service.server.front:create_front()"
timeout = _settings.worker_timeout
# SIGTERM: stop accepting, let in-flight requests finish for up to this long (< the pod's grace period).
graceful_timeout = _settings.graceful_timeout
keepalive = 5
max_requests = _settings.max_requests
# Half, not a tenth: workers that see the same traffic reach the count together, and reloading
# together would leave the pod without a serving worker.
max_requests_jitter = max_requests // 2
worker_tmp_dir = _settings.worker_tmp_dir or None
logconfig_dict = gunicorn_logconfig(_settings.log_level)
accesslog = "-"
errorlog = "-"

# Prometheus multiprocess mode: every worker writes samples to one folder that /metrics reads.
_owned_metrics_dir = None
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    _owned_metrics_dir = tempfile.mkdtemp(prefix="dialscore-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _owned_metrics_dir

# Pod-level readiness (service/store/readiness.py): workers mark "models loaded" in a shared folder.
_owned_ready_dir = None
if not os.environ.get("DIALSCORE_READY_DIR"):
    _owned_ready_dir = tempfile.mkdtemp(prefix="dialscore-ready-")
    os.environ["DIALSCORE_READY_DIR"] = _owned_ready_dir

# Imported only now: prometheus_client picks its multiprocess value class at import time, and the
# workers inherit the master's modules through the fork.
from prometheus_client import multiprocess  # noqa: E402

# Workers write both folders (metrics on every request, readiness once loaded): a read-only one
# dropped every request without an answer, or kept /readyz at "0 of 2 loaded" for good.
check_writable(os.environ["PROMETHEUS_MULTIPROC_DIR"], "PROMETHEUS_MULTIPROC_DIR")
check_writable(os.environ["DIALSCORE_READY_DIR"], "DIALSCORE_READY_DIR")

from service.observability import metrics as metrics_files  # noqa: E402
from service.store import readiness  # noqa: E402


def on_starting(server):
    """Start from empty metrics and readiness folders: a previous run's files would be counted again."""
    folder = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.endswith(".db"):
            os.remove(os.path.join(folder, name))
    readiness.clear(readiness.marker_dir())


def post_fork(server, worker):
    """Tell the worker how many workers the pod runs, for /readyz (set here: `-w` may override WORKERS).

    A worker that replaces another (max_requests, a crash, a reload: its age is past the first
    `num_workers`) loads its models before it takes a request, while its siblings serve. Loading in
    the background, it would accept requests only to answer 503 not_ready, and those count towards
    max_requests, so under load workers would be recycled before they finish loading. The first
    workers still load in the background, so that /healthz answers while a pod starts and /readyz
    says why it is not ready yet.
    """
    os.environ[readiness.WORKERS_ENV] = str(server.num_workers)
    if worker.age > server.num_workers:
        os.environ["DIALSCORE_LOAD_SYNC"] = "true"


def child_exit(server, worker):
    folder = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    # Anything raised here ends gunicorn's main loop, and every worker with it (a failing volume).
    try:
        multiprocess.mark_process_dead(worker.pid, folder)
        metrics_files.fold_dead_worker(worker.pid, folder)
    except Exception:  # noqa: BLE001 - the dead worker's files stay, still counted as they are
        server.log.exception("could not fold the metrics of worker %s; its files are kept", worker.pid)
    try:
        readiness.forget(worker.pid)
    except Exception:  # noqa: BLE001 - its marker stays; /readyz counts only markers of live workers
        server.log.exception("could not remove the readiness marker of worker %s", worker.pid)


def _remove_owned_folders() -> None:
    for owned in (_owned_metrics_dir, _owned_ready_dir):
        if owned:
            shutil.rmtree(owned, ignore_errors=True)


def on_exit(server):
    _remove_owned_folders()


# Also when the master stops without on_exit (a worker that fails to boot halts it): the folders
# were left in /tmp. Only in the master: a worker that exits must not remove its siblings' folders.
_master_pid = os.getpid()
atexit.register(lambda: os.getpid() == _master_pid and _remove_owned_folders())
