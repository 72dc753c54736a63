"""REST routes for accounts, included by ``reasoningbank.urls`` under ``api/v1/``; each feature's views
are in ``accounts/<feature>/api.py``."""

from django.urls import path

from accounts.audit_log import api as audit_api
from accounts.budgets import api as budgets_api
from accounts.tokens import api as tokens_api
from accounts.write_limits import api as write_limits_api

urlpatterns = [
    path("me", tokens_api.MeView.as_view(), name="api-me"),
    path("audit", audit_api.AuditEventListView.as_view(), name="api-audit"),
    path("projects", tokens_api.ProjectListView.as_view(), name="api-projects"),
    path("projects/<str:slug>", tokens_api.ProjectDetailView.as_view(), name="api-project"),
    path("llm/budget", budgets_api.BudgetView.as_view(), name="api-llm-budget"),
    path("llm/spend", budgets_api.SpendView.as_view(), name="api-llm-spend"),
    path("write-suspensions", write_limits_api.WriteSuspensionListView.as_view(), name="api-write-suspensions"),
    path("tokens/<str:token_id>/unsuspend", write_limits_api.TokenUnsuspendView.as_view(), name="api-token-unsuspend"),
    path(
        "connected-apps/<str:connection_id>/unsuspend",
        write_limits_api.ConnectedAppUnsuspendView.as_view(),
        name="api-connected-app-unsuspend",
    ),
]
