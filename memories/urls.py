"""REST routes for memories, included by ``reasoningbank.urls`` under ``api/v1/``."""

from django.urls import path, register_converter

from memories import api, api_sessions, api_summaries, api_transfer


class ClientIdConverter:
    """A client-chosen session id: any characters, "/" and line breaks included (``<path:…>`` stops
    at a newline, which turned such an id into Django's HTML 404 page)."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ClientIdConverter, "client_id")

urlpatterns = [
    path("memories", api.MemoryListView.as_view(), name="api-memories"),
    # before the detail route, so "search", "context" and "ask" are never read as memory ids
    path("memories/search", api.MemorySearchView.as_view(), name="api-memory-search"),
    path("memories/context", api.MemoryContextView.as_view(), name="api-memory-context"),
    path("memories/ask", api.MemoryAskView.as_view(), name="api-memory-ask"),
    path("memories/<str:memory_id>", api.MemoryDetailView.as_view(), name="api-memory"),
    path("memories/<str:memory_id>/archive", api.MemoryArchiveView.as_view(), name="api-memory-archive"),
    path("memories/<str:memory_id>/restore", api.MemoryRestoreView.as_view(), name="api-memory-restore"),
    path("memories/<str:memory_id>/feedback", api.MemoryFeedbackView.as_view(), name="api-memory-feedback"),
    path("memories/<str:memory_id>/outcome", api.MemoryOutcomeView.as_view(), name="api-memory-outcome"),
    path("memories/<str:memory_id>/lineage", api.MemoryLineageView.as_view(), name="api-memory-lineage"),
    path("memories/<str:memory_id>/signals", api.MemorySignalsView.as_view(), name="api-memory-signals"),
    path("summaries", api_summaries.SummaryListView.as_view(), name="api-summaries"),
    path("summaries/<str:summary_id>", api_summaries.SummaryDetailView.as_view(), name="api-summary"),
    path("export", api_transfer.ExportView.as_view(), name="api-export"),
    path("import", api_transfer.ImportView.as_view(), name="api-import"),
    path("sessions", api_sessions.SessionListCreateView.as_view(), name="api-sessions"),
    # before the session routes: a session whose client id is "code-report" is still reachable by its ses_… id
    path("sessions/code-report", api_sessions.SessionCodeReportView.as_view(), name="api-session-code-report"),
    # a client's session_id may contain "/"; retry first, so "x/retry" is x's retry
    path("sessions/<client_id:session_id>/retry", api_sessions.SessionRetryView.as_view(), name="api-session-retry"),
    path("sessions/<client_id:session_id>", api_sessions.SessionDetailView.as_view(), name="api-session"),
]
