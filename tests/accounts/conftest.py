"""Fixtures of the accounts tests."""

from __future__ import annotations

import time

import pytest
from django.db import connection

MINUTE_ROOM_SECONDS = 10.0


@pytest.fixture
def minute_room() -> None:
    """The write limits' minute windows turn on the minute of the database's clock
    (accounts/write_limits/services.py): a test that counts writes within one minute starts with at least
    ``MINUTE_ROOM_SECONDS`` of it left (waiting for the next minute if need be), so no window turns
    under it and its counts are exact. Use it with the ``django_db`` mark."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
        (now,) = cursor.fetchone()
    left = 60.0 - now % 60.0
    if left < MINUTE_ROOM_SECONDS:
        time.sleep(left + 0.05)
