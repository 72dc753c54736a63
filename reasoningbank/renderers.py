"""The REST API's JSON renderer: every string of every answer neutralised (reasoningbank/text_safety.py,
docs/agent-api.md "Control characters"), whichever view built it — memories, summaries, sessions,
runs, errors that quote a caller's field name. The export keeps the plain ``JSONRenderer`` on purpose:
it is a backup, and restores byte for byte."""

from __future__ import annotations

from typing import Any

from rest_framework.renderers import JSONRenderer

from reasoningbank.text_safety import value_neutralise


class AgentJSONRenderer(JSONRenderer):
    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: dict[str, Any] | None = None
    ) -> bytes:
        return super().render(value_neutralise(data), accepted_media_type, renderer_context)
