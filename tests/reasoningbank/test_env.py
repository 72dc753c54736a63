import pytest
from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import env_bool, env_choice, env_duration, env_float, env_int, env_list


def test_malformed_values_fail_loudly_naming_the_variable(monkeypatch):
    monkeypatch.setenv("RB_X", "maybe")
    with pytest.raises(ImproperlyConfigured, match="RB_X must be a boolean"):
        env_bool("RB_X")
    monkeypatch.setenv("RB_X", "12a")
    with pytest.raises(ImproperlyConfigured, match="RB_X must be an integer"):
        env_int("RB_X", 1)
    monkeypatch.setenv("RB_X", "1.5")
    with pytest.raises(ImproperlyConfigured, match="RB_X must be <= 1"):
        env_float("RB_X", 0.5, maximum=1)
    monkeypatch.setenv("RB_X", "weekly")
    with pytest.raises(ImproperlyConfigured, match="duration"):
        env_duration("RB_X", "24h")
    monkeypatch.setenv("RB_X", "redis")
    with pytest.raises(ImproperlyConfigured, match="one of"):
        env_choice("RB_X", "a", ["a", "b"])


def test_well_formed_values_parse(monkeypatch):
    monkeypatch.setenv("RB_X", "12h")
    assert env_duration("RB_X", "24h") == 12 * 3600
    monkeypatch.setenv("RB_X", " a.test, b.test ,,")
    assert env_list("RB_X") == ["a.test", "b.test"]
    monkeypatch.setenv("RB_X", "yes")
    assert env_bool("RB_X") is True
    monkeypatch.delenv("RB_X")
    assert env_int("RB_X", 7) == 7
