"""The core: where the code and the data are, the secret key, hosts, installed apps, middleware,
templates, static files and the site's public URL."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from accounts.plans.catalogue import PLAN_ORDER
from reasoningbank.env import env_bool, env_choice, env_list, env_str

BASE_DIR = Path(__file__).resolve().parents[2]
TESTING = "pytest" in sys.modules or env_bool("RB_TESTING")

DEBUG = env_bool("DEBUG", False)
DATA_DIR = Path(env_str("RB_DATA_DIR", str(BASE_DIR / ".data")))
DATABASE_URL = env_str("DATABASE_URL")
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if TESTING:
        SECRET_KEY = "insecure-dev-only-key-set-SECRET_KEY-in-production"
    elif not DATABASE_URL:
        # Local mode: web, worker and the manage.py commands typed in another shell share one
        # random key, generated on first use beside the embedded database (mode 0600).
        from reasoningbank.secret_key import secret_key_load_or_create

        SECRET_KEY = secret_key_load_or_create(DATA_DIR / "secret_key")
    elif DEBUG:
        SECRET_KEY = "insecure-dev-only-key-set-SECRET_KEY-in-production"
    else:
        raise ImproperlyConfigured("SECRET_KEY must be set when DATABASE_URL is (production) and DEBUG is false")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("http://", "https://")):
        raise ImproperlyConfigured(f"CSRF_TRUSTED_ORIGINS entries must start with http:// or https://, got {_origin!r}")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    # single sign-on per organization (accounts/sso/): one SocialApp of these providers per organization
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.socialaccount.providers.saml",
    "django_q",
    "oauth2_provider",
    "django_htmx",
    "template_partials",
    "reasoningbank",
    "accounts",
    "memories",
    "consolidation",
    "webhooks",
    "system",
]

MIDDLEWARE = [
    # the request id (X-Request-ID), org and token prefix of every log line; one access line a request
    "reasoningbank.middleware.RequestContextMiddleware",
    # database unreachable → 503 with a clear body (before the rest: it also replaces 500s of later middleware)
    "reasoningbank.middleware.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every page (django-csp; CONTENT_SECURITY_POLICY in security.py)
    "csp.middleware.CSPMiddleware",
    # NUL in a path or query → 404/400 before any view or query (PostgreSQL rejects NUL in text)
    "reasoningbank.middleware_guards.NulByteGuardMiddleware",
    # a body too large (413), too deeply nested (400), holding NUL (400) or chunked without a length
    # (411) is refused before anything parses it (docs/security/http-hardening.md)
    "reasoningbank.middleware_guards.RequestBodyGuardMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "reasoningbank.urls"
WSGI_APPLICATION = "reasoningbank.wsgi.application"
ASGI_APPLICATION = "reasoningbank.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "system.context_processors.status_banners",
            ],
        },
    },
]


# --- Static files ----------------------------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True  # serve straight from static/ when collectstatic has not run

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Where users reach the service. run.sh leaves the address it serves on in the data directory, so that
# a command typed in another shell (create_org's sign-in link) names the same one without SITE_URL.
_SERVED_AT = DATA_DIR / "site_url"
SITE_URL = env_str(
    "SITE_URL",
    _SERVED_AT.read_text().strip() if not TESTING and not DATABASE_URL and _SERVED_AT.is_file() else "",
) or "http://127.0.0.1:8000"
# The plan a new organization starts on, whichever way it is made (sign-up, create_org): a
# self-hosted install owns its server and its LLM bill, so it gets every feature; a hosted service
# that sells plans sets ``free`` (docs/tenancy.md#plans-and-the-default-plan). Checked here, at start.
DEFAULT_PLAN = env_choice("DEFAULT_PLAN", PLAN_ORDER[-1], PLAN_ORDER)
