"""The worker's settings and headers; its behaviour over real gunicorn in tests/integration."""
import pytest

from service.errors import BadHeader
from service.server.intake import Head
from service.server.worker import budget_of


def test_the_read_timeout_setting_is_checked(monkeypatch):
    from service.server.worker import read_timeout

    monkeypatch.delenv("DIALSCORE_READ_TIMEOUT", raising=False)
    assert read_timeout() == 10.0
    for bad in ("0", "-1", "nan", "soon"):
        monkeypatch.setenv("DIALSCORE_READ_TIMEOUT", bad)
        with pytest.raises(ValueError):
            read_timeout()


def test_the_budget_is_the_header_else_the_default_and_a_bad_one_is_400():
    assert budget_of(Head("POST", "/rerank"), 30.0) == 30.0
    assert budget_of(Head("POST", "/rerank", {"x-request-timeout": "0.25"}), 30.0) == 0.25
    for bad in ("0", "-1", "nan", "inf", "soon", "3601"):
        with pytest.raises(BadHeader) as raised:
            budget_of(Head("POST", "/rerank", {"x-request-timeout": bad}), 30.0)
        assert raised.value.status == 400 and raised.value.details == {"X-Request-Timeout": bad}
