"""REST routes for memories, included by ``reasoningbank.urls`` under ``api/v1/``."""

from django.urls import path

from memories import api, api_sessions

urlpatterns = [
    path("memories", api.MemoryListView.as_view(), name="api-memories"),
    # before the detail route, so "search" is never read as a memory id
    path("memories/search", api.MemorySearchView.as_view(), name="api-memory-search"),
    path("memories/<str:memory_id>", api.MemoryDetailView.as_view(), name="api-memory"),
    path("memories/<str:memory_id>/archive", api.MemoryArchiveView.as_view(), name="api-memory-archive"),
    path("memories/<str:memory_id>/restore", api.MemoryRestoreView.as_view(), name="api-memory-restore"),
    path("memories/<str:memory_id>/feedback", api.MemoryFeedbackView.as_view(), name="api-memory-feedback"),
    path("memories/<str:memory_id>/outcome", api.MemoryOutcomeView.as_view(), name="api-memory-outcome"),
    path("memories/<str:memory_id>/lineage", api.MemoryLineageView.as_view(), name="api-memory-lineage"),
    path("memories/<str:memory_id>/signals", api.MemorySignalsView.as_view(), name="api-memory-signals"),
    path("sessions", api_sessions.SessionListCreateView.as_view(), name="api-sessions"),
    # a client's session_id may contain "/" (``<path:…>``); retry first, so "x/retry" is x's retry
    path("sessions/<path:session_id>/retry", api_sessions.SessionRetryView.as_view(), name="api-session-retry"),
    path("sessions/<path:session_id>", api_sessions.SessionDetailView.as_view(), name="api-session"),
]
