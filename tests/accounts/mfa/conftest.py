"""Fixtures of the multi-factor tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def totp_tolerance(settings: Any) -> None:
    """A code of the period before or after is accepted too, so a period that ends between computing a
    code and sending it changes no test's outcome (tests/accounts/mfa/mfa_helpers.py)."""
    settings.MFA_TOTP_TOLERANCE = 1
