"""What `python -m service` checks before gunicorn starts: every DIALSCORE_* value, the folders the
workers write, the provider names, that an address beyond loopback has a token or explicit open access,
that the host is an address or a name that resolves and the port free, that the model store and every
model DIALSCORE_MODELS names are there, that a temporary folder can be written, and variables nothing
reads (typos); one line names a bad one."""
from __future__ import annotations

import errno
import ipaddress
import json
import logging
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path

from service.config import (Settings, absolute_folder, check_cuda_required, check_writable, env_name,
                            load_server_settings, refuse_unknown_providers)
from service.observability import shared_folders
from service.store import readiness

# The DIALSCORE_* names read outside Settings (the worker's own, bulk's, training's), for the warning
# about a misspelt one; the Settings fields are added where it is checked.
OTHER_NAMES = frozenset({
    "DIALSCORE_READY_DIR", "DIALSCORE_SHARD_COUNT", "DIALSCORE_DATA_DIR",
    "DIALSCORE_MINILM_CACHE",
})


log = logging.getLogger(__name__)
SHARED_FOLDERS = (shared_folders.METRICS_ENV, readiness.DIR_ENV)  # the workers' folders (gunicorn.conf.py claims them)


def is_loopback(host: str) -> bool:
    """Whether `host` (DIALSCORE_HOST, an IPv6 address possibly in brackets) reaches this machine only:
    127.0.0.0/8, ::1 or localhost. A name other than localhost may resolve anywhere, so it is not."""
    host = host.strip().strip("[]").lower()
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_access(settings: Settings) -> None:
    """ValueError when the server would listen beyond loopback with no DIALSCORE_API_TOKEN and without
    DIALSCORE_OPEN_ACCESS=true; a warning when open access was chosen there."""
    if settings.api_token or is_loopback(settings.host):
        return
    if not settings.open_access:
        raise ValueError(f"DIALSCORE_HOST={settings.host!r} is reachable from other machines and no "
                         "DIALSCORE_API_TOKEN is set: set a token, bind 127.0.0.1, or set "
                         "DIALSCORE_OPEN_ACCESS=true to serve every endpoint without one")
    log.warning("DIALSCORE_OPEN_ACCESS=true: serving on %s without DIALSCORE_API_TOKEN; every endpoint is open "
                "to whoever can reach it", settings.host)


def check_host(host: str) -> None:
    """ValueError unless DIALSCORE_HOST is an IP address or a name that resolves: gunicorn would retry
    the bind five times and then stop with a line that does not name the variable."""
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    try:
        socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ValueError(f"DIALSCORE_HOST={host!r}: not an IP address, and the name does not resolve ({reason}); "
                         "give an address such as 127.0.0.1, ::1 or 0.0.0.0") from None


def check_store(settings: Settings) -> None:
    """ValueError where DIALSCORE_MODEL_STORE is no folder or lacks a model DIALSCORE_MODELS names (a
    component, which models share, is no model): the workers would serve /readyz 503 for good, a pod
    restarted until its startup probe gives up."""
    root = settings.model_store
    if not root.is_dir():
        raise ValueError(f"DIALSCORE_MODEL_STORE={str(root)!r}: no such folder; give the model store's folder")
    kinds = {path.parent.name: manifest_kind(path) for path in root.glob("*/manifest.json")}
    missing = [name for name in settings.models if kinds.get(name, "component") == "component"]
    if missing:
        held = sorted(name for name, kind in kinds.items() if kind != "component")
        parts = [f"{name!r}" + (" (a component that models share)" if name in kinds else "") for name in missing]
        raise ValueError(f"DIALSCORE_MODELS={','.join(settings.models)!r}: {root} holds no model "
                         f"{', '.join(parts)}; its models are {', '.join(held) or 'none'}")


def manifest_kind(path: Path) -> str | None:
    """The manifest's `kind`; None where it does not read (the store reports that manifest when it loads)."""
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return None


def check_port(settings: Settings, environ: Mapping[str, str]) -> None:
    """ValueError where DIALSCORE_PORT is taken on DIALSCORE_HOST or not this user's to bind, or where the host
    is no address of this machine: gunicorn would retry five times, then exit 1 with lines naming no
    variable. Skipped where systemd hands gunicorn its listeners (LISTEN_FDS): that port is held on purpose."""
    if environ.get("LISTEN_FDS"):
        return
    family, kind, proto, _, address = socket.getaddrinfo(settings.host, settings.port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                raise ValueError(f"DIALSCORE_HOST={settings.host!r}: not an address of this machine ({exc.strerror}); "
                                 "give one of its addresses, or 0.0.0.0 or :: for every interface") from None
            why = "is in use by another process" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
            raise ValueError(f"DIALSCORE_PORT={settings.port}: port {settings.port} on {settings.host} {why}; "
                             "stop that process or choose another port") from None


def hold_folders(environ: Mapping[str, str]) -> None:
    """Lock the shared folders the operator set (PROMETHEUS_MULTIPROC_DIR, DIALSCORE_READY_DIR) for this
    server, ValueError where another server holds one; gunicorn.conf.py finds them held."""
    for key in SHARED_FOLDERS:
        if environ.get(key):
            shared_folders.hold(key, environ[key])


def unknown_names(environ: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """DIALSCORE_* variables that nothing reads: a misspelt limit is otherwise silently the default."""
    return sorted(k for k in environ if k.startswith("DIALSCORE_") and k not in known)


def misspelt_names(environ: Mapping[str, str]) -> list[str]:
    """The DIALSCORE_* names nothing reads, found without reading any value, so that they can be named even
    where a check below stops the start: a misspelt port variable leaves the port at 8000, which may be taken."""
    return unknown_names(environ, OTHER_NAMES | {env_name(f.name) for f in fields(Settings)})


def check_configuration(environ: Mapping[str, str]) -> list[str]:
    """Every DIALSCORE_* value the server and the service read, and the access rule above, checked before
    gunicorn starts; ValueError naming the first bad one. Returns the DIALSCORE_* names nothing reads (typos)."""
    settings = load_server_settings(environ)
    check_host(settings.host)  # before the access rule, which would take a mistyped address for a remote one
    check_access(settings)
    if settings.workers == 1 and (settings.max_requests or settings.max_worker_memory_mib):
        log.warning("DIALSCORE_WORKERS=1 with DIALSCORE_MAX_REQUESTS or DIALSCORE_MAX_WORKER_MEMORY_MIB: each restart "
                    "of the one worker leaves the pod without one while its replacement loads; run two or more")
    check_store(settings)
    if environ.get("DIALSCORE_PROVIDERS") or settings.require_cuda:
        known, available = providers_apart()
        refuse_unknown_providers(settings.providers, known)
        if settings.require_cuda:
            check_cuda_required(settings.providers, available)
    for key in SHARED_FOLDERS:
        absolute_folder(key, environ.get(key, ""))
        if environ.get(key):
            check_writable(environ[key], key)
    check_temporary_folder()
    return misspelt_names(environ)


def check_temporary_folder() -> None:
    """ValueError where no temporary folder can be written: the shared folders left unset are made there,
    and the workers' libraries write there as they import; without one the master stopped with a traceback,
    or every worker failed to boot."""
    try:
        tempfile.gettempdir()  # tries $TMPDIR, /tmp, /var/tmp, /usr/tmp and the working folder by writing in each
    except FileNotFoundError:
        raise ValueError("no temporary folder can be written ($TMPDIR, /tmp, /var/tmp, /usr/tmp): mount one at "
                         "/tmp (an emptyDir in a pod; --tmpfs /tmp with docker run --read-only) or set TMPDIR "
                         "to a folder this user can write in") from None


def providers_apart() -> tuple[list[str], list[str]]:
    """The providers ONNX Runtime knows and those this build has, asked in a child process: the master must
    not load it before it forks the workers (their sessions would share its state)."""
    query = "import json, onnxruntime as o; print(json.dumps([o.get_all_providers(), o.get_available_providers()]))"
    try:
        asked = subprocess.run([sys.executable, "-c", query], capture_output=True, text=True, check=True, timeout=60)
        known, available = json.loads(asked.stdout)
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise ValueError(f"DIALSCORE_PROVIDERS: ONNX Runtime could not be asked for its providers ({last[0]})") from None
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"DIALSCORE_PROVIDERS: ONNX Runtime could not be asked for its providers ({exc})") from None
    return known, available
