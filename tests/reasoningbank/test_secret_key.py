"""The local SECRET_KEY kept in RB_DATA_DIR/secret_key (reasoningbank/secret_key.py)."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.exceptions import ImproperlyConfigured

from reasoningbank.secret_key import secret_key_load_or_create


def test_a_key_is_generated_once_private_to_its_owner_and_then_reused(tmp_path):
    path = tmp_path / "data" / "secret_key"
    key = secret_key_load_or_create(path)

    assert len(key) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secret_key_load_or_create(path) == key
    assert [p.name for p in path.parent.iterdir()] == ["secret_key"]  # no temporary file left


def test_processes_starting_together_agree_on_one_key(tmp_path):
    path = tmp_path / "secret_key"
    with ThreadPoolExecutor(max_workers=8) as pool:
        keys = set(pool.map(lambda _: secret_key_load_or_create(path), range(32)))
    assert keys == {path.read_text().strip()}


@pytest.mark.parametrize("content", ["", "short\n"])
def test_an_unusable_key_file_names_itself_and_the_way_out(tmp_path, content):
    path = tmp_path / "secret_key"
    path.write_text(content)
    with pytest.raises(ImproperlyConfigured, match=r"secret_key holds no usable SECRET_KEY.*delete it"):
        secret_key_load_or_create(path)
