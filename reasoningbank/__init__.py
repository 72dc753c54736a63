"""The shared kernel (and, beside it, the composition that assembles the service).

The kernel is the library every app uses and that knows no app (docs/architecture.md#the-layers).
``PUBLIC_MODULES`` below is what the apps may import of it; the rest is the kernel's own: the
composition (settings, urls, asgi, wsgi, the MCP server's assembly), the request guards and admission
in front of Django, the start-up and embedded-database helpers, the providers behind ``ai.embedders``
and ``ai.llm``, and the rules behind ``scrubbing`` and ``poisoning``.
"""

#: The modules other apps may import (docs/architecture.md#app-interfaces); everything else is private to reasoningbank.
PUBLIC_MODULES: tuple[str, ...] = (
    # errors, ids and the shapes every endpoint shares
    "reasoningbank.errors",
    "reasoningbank.ids",
    "reasoningbank.api_errors",
    "reasoningbank.http_errors",
    "reasoningbank.contracts",
    "reasoningbank.serializers",
    "reasoningbank.pagination",
    "reasoningbank.json_limits",
    "reasoningbank.mcp_registry",
    "reasoningbank.request_context",
    "reasoningbank.middleware",
    "reasoningbank.admin",
    # the kernel's own rows and writes (LLM calls and budgets, worker beats), tenant keys, the database
    "reasoningbank.models",
    "reasoningbank.services",
    "reasoningbank.sharding",
    "reasoningbank.db_locks",
    "reasoningbank.db_replica",
    "reasoningbank.db_threads",
    "reasoningbank.fair_share",
    "reasoningbank.work_heartbeat",
    "reasoningbank.schedules",
    "reasoningbank.health",
    # embedding and LLM providers, every call metered and budgeted
    "reasoningbank.ai.embedders",
    "reasoningbank.ai.llm",
    "reasoningbank.ai.metered",
    "reasoningbank.ai.budget",
    "reasoningbank.ai.batch_providers",
    "reasoningbank.ai.batch_services",
    "reasoningbank.ai.check",
    "reasoningbank.ai.prompt_kinds",
    "reasoningbank.ai.purposes",
    # untrusted text: secrets, poisoning, neutralisation, leaked credentials, outbound addresses
    "reasoningbank.scrubbing",
    "reasoningbank.scrubbing.markers",
    "reasoningbank.poisoning",
    "reasoningbank.poisoning.remote_code",
    "reasoningbank.text_safety",
    "reasoningbank.leaks",
    "reasoningbank.net_guard",
    # git remotes made comparable (projects tied to a repository, code anchors)
    "reasoningbank.repositories",
    # observability
    "reasoningbank.tracing",
    "reasoningbank.metrics",
    "reasoningbank.logging_json",
)
