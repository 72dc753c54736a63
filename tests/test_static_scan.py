"""WhiteNoise's static files are listed once per process for the same settings and directories, and
listed again when either changes (tests/static_scan.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from whitenoise.middleware import WhiteNoiseMiddleware


def test_two_middlewares_under_the_same_settings_share_one_listing_of_the_static_files() -> None:
    first, second = WhiteNoiseMiddleware(lambda request: None), WhiteNoiseMiddleware(lambda request: None)
    assert first.files is second.files
    assert any(url.startswith("/static/") for url in first.files)


def test_another_static_root_or_a_file_added_to_it_is_listed_anew(settings: Any, tmp_path: Path) -> None:
    settings.STATIC_ROOT = tmp_path
    (tmp_path / "first.css").write_text("a {}")
    before = WhiteNoiseMiddleware(lambda request: None)
    assert "/static/first.css" in before.files
    (tmp_path / "second.css").write_text("b {}")
    later = tmp_path.stat().st_mtime_ns + 1_000_000_000  # the entry's mtime moved, on any clock resolution
    os.utime(tmp_path, ns=(later, later))
    after = WhiteNoiseMiddleware(lambda request: None)
    assert "/static/second.css" in after.files
