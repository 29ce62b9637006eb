"""The worker's settings and headers; its behaviour over real gunicorn in tests/integration."""
import pytest

from service.errors import BadHeader
from service.server.front import budget_of


def test_the_read_timeout_setting_is_checked(monkeypatch):
    from service.config import load_server_settings

    monkeypatch.delenv("DIALSCORE_READ_TIMEOUT", raising=False)
    assert load_server_settings().read_timeout == 10.0
    for bad in ("0", "-1", "nan", "soon"):
        monkeypatch.setenv("DIALSCORE_READ_TIMEOUT", bad)
        with pytest.raises(ValueError):
            load_server_settings()


def test_the_budget_is_the_header_else_the_default_and_a_bad_one_is_400():
    assert budget_of(None, 30.0) == 30.0
    assert budget_of("0.25", 30.0) == 0.25
    for bad in ("0", "-1", "nan", "inf", "soon", "3601"):
        with pytest.raises(BadHeader) as raised:
            budget_of(bad, 30.0)
        assert raised.value.status == 400 and raised.value.details == {"X-Request-Timeout": bad}
