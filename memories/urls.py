"""REST routes for memories, included by ``reasoningbank.urls`` under ``api/v1/``; each feature's views
are in ``memories/<feature>/api.py``."""

from django.urls import path, register_converter

from memories.ask import api as ask_api
from memories.code import api_recall as code_recall_api
from memories.code import api_seed as code_seed_api
from memories.code import api_staleness as code_staleness_api
from memories.code_reports import api as code_reports_api
from memories.confidence import api as confidence_api
from memories.context import api as context_api
from memories.core import api as core_api
from memories.moderation import api as moderation_api
from memories.search import api as search_api
from memories.sessions import api as sessions_api
from memories.transfer import api as transfer_api
from memories.trust import api_injection as injection_api
from memories.trust import api_policy as policy_api
from memories.trust import api_quarantine as quarantine_api
from memories.trust import provenance_api


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
    path("memories", core_api.MemoryListView.as_view(), name="api-memories"),
    # before the detail route, so "search", "context" and "ask" are never read as memory ids
    path("memories/search", search_api.MemorySearchView.as_view(), name="api-memory-search"),
    path("memories/context", context_api.MemoryContextView.as_view(), name="api-memory-context"),
    path("memories/ask", ask_api.MemoryAskView.as_view(), name="api-memory-ask"),
    path("memories/recall", code_recall_api.MemoryRecallView.as_view(), name="api-memory-recall"),
    path("memories/<str:memory_id>", core_api.MemoryDetailView.as_view(), name="api-memory"),
    path("memories/<str:memory_id>/archive", moderation_api.MemoryArchiveView.as_view(), name="api-memory-archive"),
    path("memories/<str:memory_id>/restore", moderation_api.MemoryRestoreView.as_view(), name="api-memory-restore"),
    path("memories/<str:memory_id>/feedback", confidence_api.MemoryFeedbackView.as_view(), name="api-memory-feedback"),
    path("memories/<str:memory_id>/outcome", confidence_api.MemoryOutcomeView.as_view(), name="api-memory-outcome"),
    path("memories/<str:memory_id>/lineage", core_api.MemoryLineageView.as_view(), name="api-memory-lineage"),
    path("memories/<str:memory_id>/signals", confidence_api.MemorySignalsView.as_view(), name="api-memory-signals"),
    path("summaries", context_api.SummaryListView.as_view(), name="api-summaries"),
    path("summaries/<str:summary_id>", context_api.SummaryDetailView.as_view(), name="api-summary"),
    # what the instruction-smell detector held for an admin's review (the summaries' routes first)
    path("quarantine", quarantine_api.QuarantineListView.as_view(), name="api-quarantine"),
    path("quarantine/summaries", quarantine_api.HeldSummaryListView.as_view(), name="api-quarantine-summaries"),
    path(
        "quarantine/summaries/<str:summary_id>",
        quarantine_api.HeldSummaryView.as_view(),
        name="api-quarantine-summary",
    ),
    path(
        "quarantine/summaries/<str:summary_id>/approve",
        quarantine_api.HeldSummaryApproveView.as_view(),
        name="api-quarantine-summary-approve",
    ),
    path("quarantine/<str:memory_id>", quarantine_api.QuarantineMemoryView.as_view(), name="api-quarantine-memory"),
    path(
        "quarantine/<str:memory_id>/approve",
        quarantine_api.QuarantineApproveView.as_view(),
        name="api-quarantine-approve",
    ),
    path("code/history", code_seed_api.HistorySeedView.as_view(), name="api-code-history"),
    path("export", transfer_api.ExportView.as_view(), name="api-export"),
    path("import", transfer_api.ImportView.as_view(), name="api-import"),
    path("sessions", sessions_api.SessionListCreateView.as_view(), name="api-sessions"),
    # before the session routes: a session whose client id is "code-report" is still reachable by its ses_… id
    path("sessions/code-report", code_reports_api.SessionCodeReportView.as_view(), name="api-session-code-report"),
    path("code/changes", code_staleness_api.CodeChangesView.as_view(), name="api-code-changes"),
    # a client's session_id may contain "/"; retry first, so "x/retry" is x's retry
    path("sessions/<client_id:session_id>/retry", sessions_api.SessionRetryView.as_view(), name="api-session-retry"),
    path("sessions/<client_id:session_id>", sessions_api.SessionDetailView.as_view(), name="api-session"),
    # moderation of consolidation's contradictions and merges (published with consolidation's routes)
    path("consolidation/disputes", moderation_api.DisputeListView.as_view(), name="api-disputes"),
    path(
        "consolidation/disputes/<str:link_id>/resolve",
        moderation_api.DisputeResolveView.as_view(),
        name="api-dispute-resolve",
    ),
    path("memories/<str:memory_id>/unmerge", moderation_api.MemoryUnmergeView.as_view(), name="api-memory-unmerge"),
    # the review for injection (docs/security/memory-poisoning.md#injection-policy)
    path(
        "memories/<str:memory_id>/clear-for-injection",
        injection_api.MemoryInjectionClearView.as_view(),
        name="api-memory-injection-clear",
    ),
    path("trust/injection-pending", injection_api.InjectionPendingListView.as_view(), name="api-injection-pending"),
    # the organization's trust policy (docs/security/memory-poisoning.md#the-trust-policy)
    path("trust/policy", policy_api.TrustPolicyView.as_view(), name="api-trust-policy"),
    path(
        "oauth-clients/trusted",
        provenance_api.TrustedOAuthClientsView.as_view(),
        name="api-oauth-clients-trusted",
    ),
]
