"""The server's DIALSCORE_* variables and `python -m service`'s check before gunicorn starts."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from service.config import Settings as ServerSettings  # one settings object for the server and the service
from service.config import check_writable, load_server_settings
from service.startup_checks import check_configuration
from tests.conftest import REPO


def test_defaults_and_a_good_environment():
    assert load_server_settings({}) == ServerSettings()
    settings = load_server_settings({"DIALSCORE_PORT": "9000", "DIALSCORE_READ_TIMEOUT": "2.5",
                                     "DIALSCORE_MAX_REQUESTS": "0", "DIALSCORE_HOST": "0.0.0.0"})
    assert (settings.port, settings.read_timeout, settings.max_requests, settings.host) == (9000, 2.5, 0, "0.0.0.0")


@pytest.mark.parametrize("variable, value", [
    ("DIALSCORE_WORKERS", "0"),  # a server that accepted connections and never answered
    ("DIALSCORE_WORKERS", ""),
    ("DIALSCORE_THREADS", "0"),
    ("DIALSCORE_PORT", "99999"),
    ("DIALSCORE_PORT", "abc"),
    ("DIALSCORE_PORT", "0"),
    ("DIALSCORE_GRACEFUL_TIMEOUT", "90.5"),
    ("DIALSCORE_WORKER_TIMEOUT", "-1"),
    ("DIALSCORE_READ_TIMEOUT", "inf"),  # a 500 on every request (socket timeout past time_t)
    ("DIALSCORE_READ_TIMEOUT", "nan"),
    ("DIALSCORE_READ_TIMEOUT", "0"),
    ("DIALSCORE_HOST", ""),  # gunicorn binds every interface
    ("DIALSCORE_WORKER_TMP_DIR", "/proc/no-such-folder"),
])
def test_bad_server_values_are_refused_naming_the_variable(variable, value):
    with pytest.raises(ValueError, match=f"^{variable}="):
        load_server_settings({variable: value})


def test_a_folder_the_workers_cannot_write_is_refused(tmp_path, monkeypatch):
    """A read-only metrics folder dropped every request without an answer (faked: tests may run as root)."""
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", refuse)
    with pytest.raises(ValueError, match="PROMETHEUS_MULTIPROC_DIR=.*not a folder the server can write in"):
        check_writable(str(tmp_path), "PROMETHEUS_MULTIPROC_DIR")


def test_misspelt_variables_are_named_and_known_ones_are_not():
    unknown = check_configuration({"DIALSCORE_MAX_ITEM": "10", "DIALSCORE_GRACEFUL_TIMOUT": "90",
                                   "DIALSCORE_MAX_ITEMS": "10", "DIALSCORE_READ_TIMEOUT": "5",
                                   "DIALSCORE_ENCODER_PRECISION": "int8", "DIALSCORE_DATA_DIR": "/x"})
    assert unknown == ["DIALSCORE_GRACEFUL_TIMOUT", "DIALSCORE_MAX_ITEM"]


def test_every_dialscore_variable_in_the_code_is_known():
    """The list of known names must follow the code, or the typo warning would fire on real settings."""
    import re

    names = set()
    for folder in ("service", "training", "k8s"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".yaml") and path.is_file():
                names |= set(re.findall(r"DIALSCORE_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_{])", path.read_text(encoding="utf-8")))
    special = {"DIALSCORE_ENCODER_PRECISION": "auto", "DIALSCORE_MODELS": "length", "DIALSCORE_MAX_JSON_DEPTH": "5",
               "DIALSCORE_MAX_REQUEST_LINE": "256", "DIALSCORE_MAX_HEADERS": "16", "DIALSCORE_MAX_HEADER_BYTES": "256",
               "DIALSCORE_MAX_HEAD_BYTES": "1024",  # their floors
               "DIALSCORE_REQUIRE_CUDA": "false"}  # true needs a CUDA build (tested below)
    unknown = check_configuration({name: special.get(name, "1") for name in names if name not in (
        "DIALSCORE_MODEL_STORE", "DIALSCORE_PROVIDERS", "DIALSCORE_CUDA_OPTIONS", "DIALSCORE_API_TOKEN",
        "DIALSCORE_LOG_LEVEL", "DIALSCORE_HOST", "DIALSCORE_WORKER_TMP_DIR", "DIALSCORE_READY_DIR",
        "DIALSCORE_READ_TIMEOUT", "DIALSCORE_OPENVINO_CACHE_DIR")})
    assert unknown == []


def test_python_m_service_stops_with_one_line_before_gunicorn_starts():
    env = {**os.environ, "DIALSCORE_WORKERS": "0", "DIALSCORE_PORT": "8058"}
    done = subprocess.run([sys.executable, "-m", "service"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "DIALSCORE_WORKERS='0': must be from 1 to 64" in lines[0], done.stderr


def test_every_variable_is_documented():
    """Every name the typo check knows is in README.md or docs/deploy.md (a third of the
    limits were once named only in code comments)."""
    from dataclasses import fields

    from service.config import Settings, env_name
    from service.startup_checks import OTHER_NAMES

    known = OTHER_NAMES | {env_name(f.name) for f in fields(Settings)} | {
        env_name(f.name) for f in fields(ServerSettings)}
    docs = (REPO / "README.md").read_text(encoding="utf-8") + (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert sorted(name for name in known if name not in docs) == []


@pytest.mark.parametrize("variable, value, message", [
    ("DIALSCORE_ENCODER_PRECISION", "fp16", "is not one of"),  # every MiniLM model was out, the pod never ready
    ("DIALSCORE_CUDA_OPTIONS", "bad", "is not key=value"),  # each worker failed to boot, exit 3
    ("DIALSCORE_PROVIDERS", "CudaExecutionProvider", "not an ONNX Runtime execution provider"),
])
def test_values_read_only_by_workers_are_checked_before_gunicorn_starts_too(variable, value, message):
    with pytest.raises(ValueError, match=f"{variable}.*{message}"):
        check_configuration({variable: value})


def test_an_onnx_runtime_that_cannot_be_asked_is_one_line_not_a_traceback(monkeypatch):
    import subprocess as sp

    def broken(*args, **kwargs):
        raise sp.CalledProcessError(1, args[0], output="", stderr="Traceback ...\nImportError: no onnxruntime here")

    monkeypatch.setattr(sp, "run", broken)
    with pytest.raises(ValueError, match="DIALSCORE_PROVIDERS: ONNX Runtime could not be asked.*ImportError"):
        check_configuration({"DIALSCORE_PROVIDERS": "CPUExecutionProvider"})


def test_memory_recycling_can_be_turned_off_with_zero():
    """DIALSCORE_MAX_WORKER_MEMORY_MIB=0 is the documented 'never' (as for DIALSCORE_MAX_REQUESTS)."""
    assert load_server_settings({"DIALSCORE_MAX_WORKER_MEMORY_MIB": "0"}).max_worker_memory_mib == 0
    assert load_server_settings({"DIALSCORE_MAX_WORKER_MEMORY_MIB": "512"}).max_worker_memory_mib == 512
    with pytest.raises(ValueError, match="^DIALSCORE_MAX_WORKER_MEMORY_MIB="):
        load_server_settings({"DIALSCORE_MAX_WORKER_MEMORY_MIB": "-1"})


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.53", "localhost", "::1", "[::1]"])
def test_loopback_serves_without_a_token(host):
    assert check_configuration({"DIALSCORE_HOST": host}) == []


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "10.1.2.3", "dialscore.internal"])
def test_beyond_loopback_without_a_token_is_refused_naming_the_fix(host):
    """A name is taken as reachable from anywhere (it resolves only on the pod's network, so the rule is asked
    alone: check_configuration first refuses a name that does not resolve here)."""
    from service.startup_checks import check_access

    with pytest.raises(ValueError, match="DIALSCORE_HOST=.*no DIALSCORE_API_TOKEN.*DIALSCORE_OPEN_ACCESS=true"):
        check_access(load_server_settings({"DIALSCORE_HOST": host}))
    if host != "dialscore.internal":
        with pytest.raises(ValueError, match="DIALSCORE_HOST=.*no DIALSCORE_API_TOKEN"):
            check_configuration({"DIALSCORE_HOST": host})


def test_a_token_or_explicit_open_access_lets_it_start(caplog):
    assert check_configuration({"DIALSCORE_HOST": "0.0.0.0", "DIALSCORE_API_TOKEN": "s3cret"}) == []
    assert not caplog.records
    with pytest.raises(ValueError, match="DIALSCORE_OPEN_ACCESS=true"):
        check_configuration({"DIALSCORE_HOST": "0.0.0.0", "DIALSCORE_OPEN_ACCESS": "false"})
    check_configuration({"DIALSCORE_HOST": "0.0.0.0", "DIALSCORE_OPEN_ACCESS": "true"})
    [warning] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "DIALSCORE_OPEN_ACCESS=true" in warning.getMessage() and "0.0.0.0" in warning.getMessage()


def test_python_m_service_refuses_an_open_port_in_one_line():
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIALSCORE_")}
    done = subprocess.run([sys.executable, "-m", "service", "--host", "0.0.0.0", "--port", "8059"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no DIALSCORE_API_TOKEN is set" in lines[0], done.stderr


@pytest.mark.parametrize("host", ["::1", "[::1]", "[0:0::1]"])
def test_an_ipv6_host_is_bound_in_brackets_with_or_without_them(host):
    """gunicorn reads `::1:8000` as host `::1:8000`'s last colon and `::1` alone as an empty port."""
    from gunicorn.util import parse_address

    from service.config import bind_address

    settings = load_server_settings({"DIALSCORE_HOST": host, "DIALSCORE_PORT": "8141"})
    assert settings.host == "::1"
    assert parse_address(bind_address(settings.host, settings.port)) == ("::1", 8141)
    assert bind_address("127.0.0.1", 8141) == "127.0.0.1:8141" and bind_address("localhost", 80) == "localhost:80"


@pytest.mark.parametrize("host", ["no-such-host.invalid", "[::1", "-1"])
def test_a_host_that_is_no_address_and_does_not_resolve_is_refused_naming_the_variable(host):
    with pytest.raises(ValueError, match=r"^DIALSCORE_HOST=.*not an IP address, and the name does not resolve"):
        check_configuration({"DIALSCORE_HOST": host, "DIALSCORE_API_TOKEN": "s3cret"})
    assert check_configuration({"DIALSCORE_HOST": "localhost", "DIALSCORE_API_TOKEN": "s3cret"}) == []


@pytest.mark.parametrize("host", ["no-such-host.invalid", "127.0.0.1:8000", "http://127.0.0.1"])
def test_a_mistyped_host_without_a_token_is_named_as_the_host_not_as_a_missing_token(host):
    """The access rule ran first and took a mistyped address for one reachable from other machines."""
    with pytest.raises(ValueError, match=r"^DIALSCORE_HOST=.*not an IP address, and the name does not resolve"):
        check_configuration({"DIALSCORE_HOST": host})


def test_an_address_this_machine_does_not_have_is_refused_naming_the_host_not_the_port():
    """192.0.2.1 (TEST-NET-1) was refused as `DIALSCORE_PORT=...: stop that process or choose another port`."""
    from service.startup_checks import check_port

    settings = load_server_settings({"DIALSCORE_HOST": "192.0.2.1", "DIALSCORE_API_TOKEN": "s3cret"})
    with pytest.raises(ValueError, match=r"^DIALSCORE_HOST='192.0.2.1': not an address of this machine"):
        check_port(settings, {})


def test_python_m_service_refuses_an_unresolvable_host_in_one_line():
    """gunicorn itself retried the bind five times, then exited 1 with a line naming no variable."""
    env = {**os.environ, "DIALSCORE_HOST": "no-such-host.invalid", "DIALSCORE_API_TOKEN": "s3cret",
           "DIALSCORE_PORT": "8060"}
    done = subprocess.run([sys.executable, "-m", "service"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "DIALSCORE_HOST='no-such-host.invalid'" in lines[0], done.stderr


@pytest.mark.parametrize("variable, value", [("DIALSCORE_WORKER_TMP_DIR", "-1"), ("DIALSCORE_READY_DIR", "ready"),
                                             ("DIALSCORE_OPENVINO_CACHE_DIR", "cache/openvino"),
                                             ("PROMETHEUS_MULTIPROC_DIR", "metrics")])
def test_a_relative_folder_is_refused_before_anything_is_made_in_the_working_folder(variable, value, tmp_path,
                                                                                    monkeypatch):
    """DIALSCORE_WORKER_TMP_DIR=-1 made ./-1 wherever the server was started."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=f"^{variable}='{value}': must be an absolute path"):
        check_configuration({variable: value})
    assert list(tmp_path.iterdir()) == []
    check_configuration({variable: str(tmp_path / "absolute")})


def test_the_openvino_cache_may_start_at_the_home_folder():
    """openvino.cache_dir expands ~, as its default (~/.cache/dialscore/openvino) does."""
    assert check_configuration({"DIALSCORE_OPENVINO_CACHE_DIR": "~/.cache/dialscore/openvino"}) == []


def test_a_store_that_is_not_there_or_lacks_a_named_model_is_refused_naming_the_variable(tmp_path):
    """Started anyway, every worker would answer /readyz 503 for good; a component is no model."""
    from service.startup_checks import check_store

    with pytest.raises(ValueError, match=r"^DIALSCORE_MODEL_STORE='.*no-store': no such folder"):
        check_store(load_server_settings({"DIALSCORE_MODEL_STORE": str(tmp_path / "no-store")}))
    with pytest.raises(ValueError, match=r"^DIALSCORE_MODELS='length,lenght': .* holds no model 'lenght'; its models are .*length"):
        check_store(load_server_settings({"DIALSCORE_MODELS": "length,lenght"}))
    with pytest.raises(ValueError, match=r"holds no model 'glove-50d' \(a component that models share\); its models ar") as refused:
        check_store(load_server_settings({"DIALSCORE_MODELS": "glove-50d"}))
    assert "bleu4" in str(refused.value) and "minilm-l6" not in str(refused.value)  # models only, never components
    check_store(load_server_settings({"DIALSCORE_MODELS": "length,bleu4"}))
    assert check_configuration({"DIALSCORE_MODELS": "length"}) == []


def test_a_port_in_use_is_refused_naming_the_variable_unless_gunicorn_is_handed_its_listeners():
    import socket

    from service.startup_checks import check_port

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        settings = load_server_settings({"DIALSCORE_PORT": str(port)})
        with pytest.raises(ValueError, match=rf"^DIALSCORE_PORT={port}: port {port} on 127.0.0.1 is in use"):
            check_port(settings, {})
        check_port(settings, {"LISTEN_FDS": "1"})
    check_port(settings, {})


def test_python_m_service_and_dialscore_serve_refuse_a_port_in_use_in_one_line_naming_themselves():
    """gunicorn itself retried the bind five times, then exited 1 with lines naming no variable."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        env = {**os.environ, "DIALSCORE_PORT": str(held.getsockname()[1]), "DIALSCORE_MODELS": "length"}
        for command, prog in ((["-m", "service"], "python -m service"), (["-m", "service.cli", "serve"], "dialscore serve")):
            done = subprocess.run([sys.executable, *command], cwd=REPO, env=env, capture_output=True, text=True,
                                  timeout=60)
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            assert done.returncode == 2 and len(lines) == 1, done.stderr
            assert f"{prog}: DIALSCORE_PORT=" in lines[0] and "is in use" in lines[0], lines
        given = subprocess.run([sys.executable, "-m", "service.cli", "serve", "--port", env.pop("DIALSCORE_PORT")],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        assert given.returncode == 2 and "dialscore serve: --port " in given.stderr, given.stderr  # what was given
        assert "DIALSCORE_PORT" not in given.stderr, given.stderr


def test_a_misspelt_variable_is_named_even_where_the_start_stops_on_another_check():
    """DIALSCORE_PROT=9000 leaves the port at its default; where that is taken, the start stopped naming
    DIALSCORE_PORT alone, which the caller never set, and the typo behind it went unsaid."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        env = {**os.environ, "DIALSCORE_PORT": str(held.getsockname()[1]), "DIALSCORE_PROT": "9000",
               "DIALSCORE_MODELS": "length"}
        done = subprocess.run([sys.executable, "-m", "service"], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 2, done.stderr
    assert "DIALSCORE_PROT is set but nothing reads it" in done.stderr, done.stderr
    assert "is in use" in done.stderr, done.stderr


def test_a_second_server_given_the_same_shared_folder_is_refused_in_one_line(tmp_path):
    """Two servers with one PROMETHEUS_MULTIPROC_DIR and DIALSCORE_READY_DIR cleared each other's samples
    (a counter went 10 -> absent -> 3) and counted each other's workers; the first server's lock (held
    here by a child process, as its master holds it) stops the second before gunicorn starts."""
    import socket

    for key in ("PROMETHEUS_MULTIPROC_DIR", "DIALSCORE_READY_DIR"):
        folder = tmp_path / key.lower()
        folder.mkdir()
        holder = subprocess.Popen([sys.executable, "-c", "import sys; from service.observability import shared_folders; "
                                   f"shared_folders.hold({key!r}, {str(folder)!r}); print('held', flush=True); "
                                   "sys.stdin.read()"], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "held"
            with socket.socket() as free:
                free.bind(("127.0.0.1", 0))
                port = free.getsockname()[1]
            env = {**os.environ, key: str(folder), "DIALSCORE_PORT": str(port), "DIALSCORE_MODELS": "length"}
            done = subprocess.run([sys.executable, "-m", "service"], cwd=REPO, env=env, capture_output=True, text=True,
                                  timeout=60)
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            assert done.returncode == 2 and len(lines) == 1, done.stderr
            assert f"{key}=" in lines[0] and "another dialscore server uses this folder" in lines[0], lines
        finally:
            holder.communicate("", timeout=10)
    from service.observability import shared_folders

    shared_folders.hold("DIALSCORE_READY_DIR", str(tmp_path))  # free once its holder has gone, and held twice
    shared_folders.hold("DIALSCORE_READY_DIR", str(tmp_path))  # by one server without a conflict


def test_no_writable_temporary_folder_is_refused_in_one_line_naming_the_fix(monkeypatch):
    """Without one the master stopped with a traceback (the shared folders are made there), or every
    worker failed to boot importing a library that writes there. Faked as the standard library reports it:
    tests may run as root, who can write in any folder."""
    import tempfile

    def none_usable() -> str:
        raise FileNotFoundError(2, "No usable temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp']")

    monkeypatch.setattr(tempfile, "gettempdir", none_usable)
    with pytest.raises(ValueError, match=r"no temporary folder can be written .*mount one at /tmp"):
        check_configuration({"DIALSCORE_MODELS": "length"})


def test_a_lock_file_the_server_cannot_open_is_refused_naming_the_variable(tmp_path):
    """A lock file made by another user in a shared folder raised PermissionError through `python -m
    service` (a traceback); a folder in its place fails to open for every user, root included."""
    from service.observability import shared_folders

    (tmp_path / shared_folders.LOCK_NAME).mkdir()
    with pytest.raises(ValueError, match=r"^PROMETHEUS_MULTIPROC_DIR=.*its lock file .* cannot be opened"):
        shared_folders.hold("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))


def test_recycling_the_only_worker_is_warned_about(caplog):
    """With one worker, every restart by count or memory left the pod with no worker for a whole load
    (/readyz never 200 in 45 s with the memory limit at 1 MiB)."""
    import logging

    with caplog.at_level(logging.WARNING, logger="service.startup_checks"):
        check_configuration({"DIALSCORE_WORKERS": "1", "DIALSCORE_MAX_REQUESTS": "1000"})
        assert "leaves the pod without one while its replacement loads" in caplog.text
        caplog.clear()
        check_configuration({"DIALSCORE_WORKERS": "2", "DIALSCORE_MAX_REQUESTS": "1000"})
        check_configuration({"DIALSCORE_WORKERS": "1"})
        assert "leaves the pod without one" not in caplog.text


@pytest.mark.skipif("CUDAExecutionProvider" in __import__("onnxruntime").get_available_providers(),
                    reason="this onnxruntime build has CUDA: DIALSCORE_REQUIRE_CUDA holds here")
@pytest.mark.parametrize("environ, message", [
    ({"DIALSCORE_REQUIRE_CUDA": "true"}, "this onnxruntime build has no CUDA provider .*install onnxruntime-gpu"),
    ({"DIALSCORE_REQUIRE_CUDA": "true", "DIALSCORE_PROVIDERS": "CPUExecutionProvider,CUDAExecutionProvider"},
     ".*does not put CUDAExecutionProvider .* first"),
])
def test_a_gpu_pod_that_requires_cuda_and_cannot_have_it_stops_before_gunicorn(environ, message):
    """Without it, a GPU pod whose build or list lacked CUDA served on the CPU, slowly, and reported ready."""
    with pytest.raises(ValueError, match=f"DIALSCORE_REQUIRE_CUDA: {message}"):
        check_configuration(environ)
