"""Django settings for ReasoningBank. Every value comes from the environment (docs/configuration.md).

One module per concern, each importing what it needs from the others; this module gathers them, and
DJANGO_SETTINGS_MODULE stays ``reasoningbank.settings``:

* ``base``: paths, the secret key, hosts, apps, middleware, templates, static files, SITE_URL
* ``database``: DATABASE_URL or the embedded PostgreSQL, the pool, backpressure
* ``security``: sign-in, Content-Security-Policy, proxies, abuse limits, caches, request limits, cookies
* ``api``: the REST API and its OpenAPI schema
* ``ai``: the embedder and the LLM
* ``memories``: search, confidence, SessionStart context, distillation, import, the write gate
* ``consolidation``: consolidation, the promotion ladder, institutional promotion
* ``worker``: the django-q2 cluster and the heartbeats
* ``observability``: /metrics, logs, traces
* ``oauth``: the OAuth 2.1 authorization server
* ``webhooks``: webhook deliveries (address guard, timeout, retries)
* ``sso``: single sign-on per organization (allauth socialaccount: OpenID Connect and SAML)
"""

from reasoningbank.settings.ai import *  # noqa: F403
from reasoningbank.settings.api import *  # noqa: F403
from reasoningbank.settings.base import *  # noqa: F403
from reasoningbank.settings.consolidation import *  # noqa: F403
from reasoningbank.settings.database import *  # noqa: F403
from reasoningbank.settings.memories import *  # noqa: F403
from reasoningbank.settings.oauth import *  # noqa: F403
from reasoningbank.settings.observability import *  # noqa: F403
from reasoningbank.settings.security import *  # noqa: F403
from reasoningbank.settings.sso import *  # noqa: F403
from reasoningbank.settings.webhooks import *  # noqa: F403
from reasoningbank.settings.worker import *  # noqa: F403
