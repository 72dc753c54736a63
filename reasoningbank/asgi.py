"""The ASGI application: Django for everything (the MCP endpoint is mounted beside it in #3)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank.settings")
application = get_asgi_application()
