"""Who may come in and how much: sign-in (django-allauth), the Content-Security-Policy, trusted proxies,
abuse limits and the cache they share, API tokens, request size limits and secure cookies."""

from __future__ import annotations

import ipaddress
import re

from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import env_bool, env_choice, env_duration, env_int, env_list, env_str
from reasoningbank.json_limits import JSON_MAX_DEPTH_DEFAULT
from reasoningbank.settings.base import SITE_URL, TESTING
from reasoningbank.settings.memories import IMPORT_MAX_BYTES, SESSION_TRACE_MAX_BYTES

# --- Auth (django-allauth: email + password) -------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
if TESTING:
    # fixtures create many users; PBKDF2 would dominate test time
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_EMAIL_VERIFICATION = env_choice("ACCOUNT_EMAIL_VERIFICATION", "optional", ["none", "optional", "mandatory"])
ACCOUNT_LOGOUT_ON_GET = False
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"
ACCOUNT_LOGOUT_REDIRECT_URL = "/accounts/login/"
# Multi-factor sign-in (allauth.mfa; accounts/mfa/, docs/identity.md#multi-factor-authentication): an
# authenticator app (TOTP) and security keys / passkeys (WebAuthn) as second factors, recovery codes as
# the way back in. Passkeys are a second factor after the password, not a password replacement: an
# organization's "require MFA" policy is then always two factors.
MFA_SUPPORTED_TYPES = ["totp", "webauthn", "recovery_codes"]
MFA_TOTP_ISSUER = "ReasoningBank"
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "ReasoningBank <noreply@localhost>")

# --- Content-Security-Policy (django-csp; docs/security/http-hardening.md) -------------------------
# Scripts, styles, images, fonts and fetches from this origin only: no inline script, handler or style
# anywhere in the dashboard (static/js/app.js binds behaviour by data- attributes; htmx is told by its
# meta config not to inject its indicator <style> and not to eval), so an injected tag or attribute
# cannot run. No form-action: the consent page's form ends in a redirect to the client's own URI,
# which form-action would block. The admin (Django 5.2's own templates hold inline script and style)
# and the Swagger UI at /api/docs/ (an inline initialiser) are left out.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/admin/", "/api/docs/"],
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
    },
}


# --- Client addresses (reasoningbank/asgi_guards.py) -------------------------------------------
# X-Forwarded-For (and X-Forwarded-Proto) are believed only from these proxies (addresses or networks,
# e.g. 127.0.0.1,10.0.0.0/8); empty: never, and the connection's peer is the client. Every per-address
# limit below counts the address this yields (docs/security/http-hardening.md).
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", [])
for _proxy in TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"TRUSTED_PROXIES must be comma-separated addresses or CIDRs such as 10.0.0.0/8, got {_proxy!r}"
        ) from None

# --- Abuse limits (accounts/throttling.py, accounts/adapter.py) -----------------------------
# Shared by every web worker process: failed bearer tokens and logins are counted in the table
# rb_throttle, allauth's rate limits live in the database cache rb_cache (migration accounts/0003).
AUTH_THROTTLE_FAILURES = env_int("AUTH_THROTTLE_FAILURES", 20, minimum=1)
AUTH_THROTTLE_PREFIX_FAILURES = env_int("AUTH_THROTTLE_PREFIX_FAILURES", 10, minimum=1)
AUTH_THROTTLE_WINDOW = env_duration("AUTH_THROTTLE_WINDOW", "1m")
AUTH_THROTTLE_BLOCK = env_duration("AUTH_THROTTLE_BLOCK", "5m")
LOGIN_ACCOUNT_FAILURES = env_int("LOGIN_ACCOUNT_FAILURES", 5, minimum=1)
LOGIN_ACCOUNT_WINDOW = env_duration("LOGIN_ACCOUNT_WINDOW", "15m")
LOGIN_BACKOFF_MAX = env_duration("LOGIN_BACKOFF_MAX", "1h")

# --- The audit log (accounts/audit_log/, docs/identity.md#the-audit-log) ----------------------------
# the most rows one export of the log holds (CSV or JSON, streamed): an export past it is cut there and says so
AUDIT_EXPORT_MAX_ROWS = env_int("AUDIT_EXPORT_MAX_ROWS", 100_000, minimum=1, maximum=10_000_000)


def _per_address_rates(name: str, default: str) -> str:
    """An allauth rate list such as ``10/m/ip,50/h/ip``, per client address only."""
    value = env_str(name, default).replace(" ", "")
    if not all(re.fullmatch(r"[1-9][0-9]*/[0-9]*[smhd](/ip)?", part) for part in value.split(",")):
        raise ImproperlyConfigured(f"{name} must be rates such as 10/m/ip,50/h/ip (per address); got {value!r}")
    return value


ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
ACCOUNT_RATE_LIMITS = {
    # per address only: allauth's default adds "5 per 5 minutes per email", which locks the owner
    # out as well; the per-account layer with backoff is in accounts/adapter.py
    "login_failed": _per_address_rates("LOGIN_FAILED_RATE_LIMIT", "10/m/ip,50/h/ip"),
    "signup": _per_address_rates("SIGNUP_RATE_LIMIT", "10/h/ip,30/d/ip"),
}
# The default cache is process memory, except allauth's rate-limit keys and deep search's question
# rewrites, which go to the database cache that every process shares (reasoningbank/cache.py).
CACHES = {
    "default": {
        "BACKEND": "reasoningbank.cache.RoutedCache",
        "OPTIONS": {"local": "local", "shared": "shared", "shared_prefixes": ["allauth:rl:", "search:rewrite:"]},
    },
    "local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "reasoningbank"},
    "shared": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "rb_cache",
        "OPTIONS": {"MAX_ENTRIES": 10_000},
    },
}

# --- API tokens ------------------------------------------------------------------------------
# last_used_at is written at most this often so that busy agents do not turn every read into a write.
TOKEN_LAST_USED_INTERVAL_SECONDS = env_int("TOKEN_LAST_USED_INTERVAL_SECONDS", 300, minimum=0)


# --- Write limits and suspension (accounts/write_limits/services.py) --------------------------
def _write_limit(name: str) -> int | None:
    """A write limit for every organization instead of its plan's: unset, the plan's (None); 0, none."""
    if env_str(name, "") == "":
        return None
    return env_int(name, 0, minimum=0)


# writes per token (connected app, member) and per organization, per minute and per UTC day; the plan's
# (accounts/plans/catalogue.py) unless set (docs/security/memory-poisoning.md#write-limits)
WRITE_LIMIT_TOKEN_PER_MINUTE = _write_limit("WRITE_LIMIT_TOKEN_PER_MINUTE")
WRITE_LIMIT_TOKEN_PER_DAY = _write_limit("WRITE_LIMIT_TOKEN_PER_DAY")
WRITE_LIMIT_ORG_PER_MINUTE = _write_limit("WRITE_LIMIT_ORG_PER_MINUTE")
WRITE_LIMIT_ORG_PER_DAY = _write_limit("WRITE_LIMIT_ORG_PER_DAY")
# this many writes the instruction-smell detector flags within the window suspend a token's (a connected
# app's) write rights until an admin lifts it
WRITE_SUSPEND_FLAGGED = env_int("WRITE_SUSPEND_FLAGGED", 3, minimum=1)
WRITE_SUSPEND_WINDOW = env_duration("WRITE_SUSPEND_WINDOW", "10m")

# --- Request limits (reasoningbank/middleware_guards.py, reasoningbank/asgi_guards.py) -----------------
# A larger request body is answered 413 before it is read (JSON in the error shape under /api/, /oauth/
# and /mcp); the import endpoint takes a whole file: room for IMPORT_MAX_BYTES of text and its JSON
# escaping. Django's own limit is the largest of them, so it never answers first (with an HTML 400). The
# default leaves room for a session trace of SESSION_TRACE_MAX_BYTES, JSON-escaped, on REST and MCP.
REQUEST_MAX_BYTES = env_int(
    "REQUEST_MAX_BYTES",
    max(2_621_440, 2 * SESSION_TRACE_MAX_BYTES + 64 * 1024),
    minimum=64 * 1024,
    maximum=256 * 1024 * 1024,
)
REQUEST_MAX_BYTES_BY_PATH = {"/api/v1/import": max(REQUEST_MAX_BYTES, 2 * IMPORT_MAX_BYTES)}
DATA_UPLOAD_MAX_MEMORY_SIZE = max(REQUEST_MAX_BYTES, *REQUEST_MAX_BYTES_BY_PATH.values())
# JSON nested deeper than this (arrays and objects) is refused with a 400 before any parser recurses
# into it; nothing this service reads nests more than a few levels (docs/security/http-hardening.md)
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", JSON_MAX_DEPTH_DEFAULT, minimum=8, maximum=512)

# https-only cookies when users reach the site over https (SITE_URL says how), whatever DEBUG is: a
# local run over http://127.0.0.1 with DEBUG off must still sign in, a deployment on https is secure.
_SITE_IS_HTTPS = SITE_URL.lower().startswith("https://")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", _SITE_IS_HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", _SITE_IS_HTTPS)
# a CSRF refusal under /api/, /oauth/, /.well-known/ or /mcp is JSON in the error shape; pages keep
# Django's page (docs/security/http-hardening.md#one-error-shape)
CSRF_FAILURE_VIEW = "reasoningbank.api_errors.csrf_failure"
