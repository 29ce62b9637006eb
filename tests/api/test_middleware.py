"""Request IDs, JSON logs and the bearer token, on a small Flask app with the real hooks installed."""
from __future__ import annotations

import io
import json
import logging

import pytest
from flask import Flask

from service.observability import logs as logging_setup
from service.api import middleware
from service.config import load_settings

log = logging.getLogger("tests.middleware")


def make_app(token: str = "") -> Flask:
    app = Flask("middleware-test")
    app.config["SETTINGS"] = load_settings({"api_token": token}, environ={})
    middleware.init_app(app)

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz():
        return {"status": "ready"}

    @app.post("/score")
    def score():
        log.info("scoring", extra={"items": 3})
        return {"scores": [1.0]}

    return app


@pytest.fixture()
def json_log():
    stream = io.StringIO()
    handler = logging_setup.configure_logging("INFO", stream)
    yield stream
    logging.getLogger().removeHandler(handler)


def test_request_id_is_made_and_echoed():
    client = make_app().test_client()
    first = client.get("/healthz").headers["X-Request-ID"]
    second = client.get("/healthz").headers["X-Request-ID"]
    assert len(first) == 32 and first != second


def test_caller_request_id_is_kept_and_forged_ones_replaced():
    client = make_app().test_client()
    assert client.get("/healthz", headers={"X-Request-ID": "chatbot-42.7"}).headers["X-Request-ID"] == "chatbot-42.7"
    forged = client.get("/healthz", headers={"X-Request-ID": "a b\tINFO fake"}).headers["X-Request-ID"]
    assert forged != "a b\tINFO fake" and len(forged) == 32
    too_long = client.get("/healthz", headers={"X-Request-ID": "x" * 200}).headers["X-Request-ID"]
    assert len(too_long) == 32


def test_log_records_are_json_with_the_request_id(json_log):
    client = make_app().test_client()
    client.post("/score", json={}, headers={"X-Request-ID": "req-123"})
    records = [json.loads(line) for line in json_log.getvalue().splitlines()]
    scoring = [r for r in records if r["message"] == "scoring"]
    assert scoring, records
    assert scoring[0]["request_id"] == "req-123"
    assert scoring[0]["items"] == 3 and scoring[0]["level"] == "INFO" and scoring[0]["logger"] == "tests.middleware"
    log.info("outside a request")
    outside = json.loads(json_log.getvalue().splitlines()[-1])
    assert outside["request_id"] == "-"


def test_exceptions_are_logged_as_one_json_line(json_log):
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    lines = json_log.getvalue().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["level"] == "ERROR" and "ValueError: boom" in record["exc_info"]


def test_gunicorn_access_records_become_fields():
    """The access logger gets gunicorn's atoms dict as args; the formatter turns it into fields."""
    atoms = {"h": "10.0.0.1", "m": "POST", "U": "/score", "q": "", "s": "200", "B": 17, "a": "curl/8",
             "D": 12345, "{x-request-id}o": "abc"}
    record = logging.LogRecord("gunicorn.access", logging.INFO, __file__, 1, '%(h)s "%(r)s" %(s)s', (atoms,), None)
    entry = json.loads(logging_setup.JsonFormatter().format(record))
    assert entry["method"] == "POST" and entry["path"] == "/score" and entry["status"] == 200
    assert entry["bytes"] == 17 and entry["duration_ms"] == 12.345 and entry["request_id"] == "abc"
    assert "query" not in entry


def test_extra_fields_are_logged_but_uvicorns_coloured_copy_of_the_message():
    """uvicorn logs each start and stop with `color_message`, the message with a terminal's escape codes:
    shipped to a log store, it is noise in every line."""
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "Started server process [%d]", (7,), None)
    record.color_message, record.worker = "Started server process [\x1b[36m%d\x1b[0m]", 7
    entry = json.loads(logging_setup.JsonFormatter().format(record))
    assert entry["message"] == "Started server process [7]" and entry["worker"] == 7
    assert "color_message" not in entry


def test_access_records_keep_query_names_never_values():
    """A token pasted into a URL (`?token=...`) must not reach the log: the path and the names only."""
    atoms = {"h": "10.0.0.1", "m": "GET", "U": "/models", "q": "token=s3cret&verbose=1&flag",
             "r": "GET /models?token=s3cret&verbose=1&flag HTTP/1.1", "s": "200",
             "f": "https://bot.example/chat?session=hunter2#access_token=zz", "{raw_uri}e": "/models?token=s3cret"}
    record = logging.LogRecord("gunicorn.access", logging.INFO, __file__, 1, '"%(r)s" %(f)s %({raw_uri}e)s',
                               (atoms,), None)
    entry = json.loads(logging_setup.JsonFormatter().format(record))
    assert entry["path"] == "/models" and entry["query"] == "token&verbose&flag"
    assert record.getMessage() == '"GET /models?token&verbose&flag HTTP/1.1" https://bot.example/chat?session /models?token'


@pytest.mark.parametrize("msg, args, logged", [
    ("Error handling request %s", ("/score?token=s3cret",), "Error handling request /score?token"),
    ("Invalid request from ip=1.2.3.4: Invalid HTTP request line: 'GET /x?token=s3cret'", (),
     "Invalid request from ip=1.2.3.4: Invalid HTTP request line: 'GET /x?token'"),
    ("Booting worker with pid: %s", (123,), "Booting worker with pid: 123"),
])
def test_gunicorn_error_records_drop_query_values(msg, args, logged):
    record = logging.LogRecord("gunicorn.error", logging.WARNING, __file__, 1, msg, args, None)
    assert logging_setup.QueryValuesFilter().filter(record) and record.getMessage() == logged


def test_gunicorn_logconfig_is_accepted_by_dictconfig():
    import logging.config

    config = logging_setup.gunicorn_logconfig("debug")
    before = logging.getLogger().handlers[:]
    level = logging.getLogger().level
    try:
        logging.config.dictConfig(config)
        handler = logging.getLogger("gunicorn.access").handlers[0]
        assert isinstance(handler.formatter, logging_setup.JsonFormatter)
        assert logging.getLogger("gunicorn.error").level == logging.DEBUG
    finally:
        for name in ("gunicorn.access", "gunicorn.error"):
            logging.getLogger(name).handlers.clear()
        logging.getLogger().handlers[:] = before
        logging.getLogger().setLevel(level)


def test_no_token_configured_means_open():
    client = make_app().test_client()
    assert client.post("/score", json={}).status_code == 200


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Bearer s3cret-but-longer", "Basic s3cret", "s3cret",
                                    "Bearer "])
def test_wrong_or_missing_token_is_401_in_the_contract_format(header):
    client = make_app("s3cret").test_client()
    headers = {"Authorization": header} if header is not None else {}
    response = client.post("/score", json={}, headers=headers)
    assert response.status_code == 401
    body = response.get_json()
    assert body["error"]["code"] == "unauthorized" and body["error"]["details"] == {}
    assert body["error"]["message"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.headers["X-Request-ID"]


def test_a_configured_token_is_stripped_and_must_fit_a_header():
    """A Secret made with --from-file ends in a newline, which made every request 401."""
    client = make_app("s3cret\n").test_client()
    assert client.post("/score", json={}, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    with pytest.raises(ValueError, match="DIALSCORE_API_TOKEN"):
        load_settings({"api_token": "two words"}, environ={})


def test_start_up_says_whether_the_token_is_required(caplog):
    with caplog.at_level(logging.INFO, logger="service.api.middleware"):
        make_app()
        make_app("s3cret")
    said = [r for r in caplog.records if r.name == "service.api.middleware"]
    assert said[0].levelno == logging.WARNING and "every endpoint is open" in said[0].getMessage()
    assert said[1].levelno == logging.INFO and "bearer token required" in said[1].getMessage()
    assert "s3cret" not in caplog.text


def test_right_token_passes_and_probes_stay_open():
    client = make_app("s3cret").test_client()
    assert client.post("/score", json={}, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert client.post("/score", json={}, headers={"Authorization": "bearer s3cret"}).status_code == 200
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200


def test_several_tokens_let_a_rotation_pass_either():
    """old,new during a rotation: either passes, neither half of one, nor
    the comma-joined string; a blank token between commas is refused at start."""
    client = make_app("old-t0ken,new-t0ken").test_client()
    for offered, status in (("old-t0ken", 200), ("new-t0ken", 200), ("old-t0ken,new-t0ken", 401), ("old", 401),
                            ("", 401)):
        assert client.post("/score", json={}, headers={"Authorization": f"Bearer {offered}"}).status_code == status
    with pytest.raises(ValueError, match="an empty token between commas"):
        load_settings(environ={"DIALSCORE_API_TOKEN": "a,,b"})


def test_the_real_app_has_the_hooks(tmp_path):
    """create_app installs the middleware: token on /score and /models, probes open, IDs echoed."""
    from service.app import create_app
    from tests.conftest import copy_store

    store = copy_store(tmp_path / "store", ("length",))
    app = create_app({"model_store": store, "load_sync": True, "api_token": "t0ken"})
    client = app.test_client()
    item = {"context": ["hello"], "response": "hi there"}
    denied = client.post("/score", json={"model": "length", "items": [item]})
    assert denied.status_code == 401 and denied.get_json()["error"]["code"] == "unauthorized"
    assert client.get("/models").status_code == 401
    assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200
    allowed = client.post("/score", json={"model": "length", "items": [item]},
                          headers={"Authorization": "Bearer t0ken", "X-Request-ID": "abc-1"})
    assert allowed.status_code == 200 and allowed.get_json()["scores"] == [2.0]
    assert allowed.headers["X-Request-ID"] == "abc-1"
    from prometheus_client import REGISTRY

    def unauthorized_count() -> float:
        return REGISTRY.get_sample_value("dialscore_errors_total", {"code": "unauthorized"}) or 0.0

    before = unauthorized_count()
    client.post("/score", json={"model": "length", "items": [item]}, headers={"Authorization": "Bearer nope"})
    assert unauthorized_count() == before + 1


def test_an_empty_token_never_matches() -> None:
    """An empty entry in a configured list (``tok,``) must not let an empty bearer through."""
    assert not middleware._matches(b"", "a,,b")
    assert not middleware._matches(b"", "tok,")
    assert middleware._matches(b"b", "a,,b")
