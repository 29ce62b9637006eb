"""gunicorn settings for dialscore; `python -m service` passes this file with `-c`.

Values come from the environment that `python -m service` prepares (DIALSCORE_HOST, PORT,
WORKERS, ...), so operators configure one set of DIALSCORE_* variables.
"""
import atexit
import os

from service.config import bind_address, load_server_settings
from service.observability import shared_folders
from service.observability.logs import gunicorn_logconfig
from service.store import readiness

# One settings object (service/config.py); `python -m service` checks it before gunicorn starts
# (service/startup_checks.py) and stops with one line naming a bad variable.
_settings = load_server_settings()
bind = bind_address(_settings.host, _settings.port)
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

# The folders the workers share for metrics and readiness (service/observability/shared_folders.py),
# set before any import of prometheus_client: the workers inherit the master's modules through the fork.
_owned_folders = shared_folders.claim((shared_folders.METRICS_ENV, readiness.DIR_ENV))
_master_pid = os.getpid()
# Whenever the master exits, but for a kill (gunicorn's halt, which a worker that fails to boot causes too,
# ends in sys.exit); never in a worker, which must not remove its siblings' folders.
atexit.register(lambda: os.getpid() == _master_pid and shared_folders.remove(_owned_folders))


def on_starting(server):
    """Start from no samples and no markers: a previous run's would be counted again. USR2 is refused:
    a new master would share or split this one's markers and samples while its workers serve."""
    shared_folders.clear_metrics()
    readiness.clear(readiness.marker_dir())
    server.handle_usr2 = lambda: server.log.warning(  # the arbiter looks its signal handlers up by name
        "USR2 ignored: upgrading on the fly is not supported; restart the server or roll the pod (docs/deploy.md)")


def nworkers_changed(server, new_value, old_value):
    """The pod's worker count for /readyz and recycling, which every worker reads live (TTIN, TTOU)."""
    readiness.record_workers(new_value)


def post_fork(server, worker):
    """A worker that starts once the pod has been ready (one that TTIN adds) or that replaces another (its
    age past the first `num_workers`) loads its models before taking requests, while its siblings serve;
    the first ones load in the background, so that once imported they answer /healthz while the pod
    starts, and /readyz says why it is not ready."""
    if worker.age > server.num_workers or readiness.pod_was_ready():
        os.environ["DIALSCORE_LOAD_SYNC"] = "true"


def child_exit(server, worker):
    shared_folders.fold_worker(worker.pid, server.log)
    readiness.forget(worker.pid)
