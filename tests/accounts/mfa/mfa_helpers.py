"""Second factors for tests: TOTP codes computed from the secret (allauth's own HOTP), enrolled
authenticators, and the password step of a sign-in."""

from __future__ import annotations

import time
from typing import Any

from allauth.mfa import app_settings
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP, format_hotp_value, generate_totp_secret, hotp_value
from django.test import Client

PASSWORD = "correct-horse-battery"  # tests/factories.py


def totp_code(secret: str, step: int = 0) -> str:
    """The code an authenticator app shows for ``secret``, ``step`` periods from now. allauth refuses a
    code used once already, so a test that needs two codes takes two steps; the tests run with a
    tolerance of one period (``MFA_TOTP_TOLERANCE``), so a period ending mid-test changes nothing."""
    counter = int(time.time()) // app_settings.TOTP_PERIOD + step
    return format_hotp_value(hotp_value(secret, counter))


def totp_enrol(user: Any) -> str:
    """``user`` gets an authenticator app (and recovery codes, as the enrolment page makes); its secret."""
    secret = generate_totp_secret()
    TOTP.activate(user, secret)
    RecoveryCodes.activate(user)
    return secret


def recovery_codes(user: Any) -> list[str]:
    from allauth.mfa.models import Authenticator

    return RecoveryCodes(
        Authenticator.objects.get(user=user, type=Authenticator.Type.RECOVERY_CODES)
    ).get_unused_codes()


def password_step(client: Client, email: str) -> Any:
    return client.post("/accounts/login/", {"login": email, "password": PASSWORD})


def password_confirm(client: Client) -> Any:
    """allauth asks for the password again before a second factor is added or removed (a session left
    open is not enough to change them); this answers it."""
    return client.post("/accounts/reauthenticate/", {"password": PASSWORD})
