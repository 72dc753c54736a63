"""Settings → Audit log: the organization's log with filters and pages, and its CSV or JSON export.
Organization admins and owners only; a viewer or member gets a 403 (docs/identity.md#the-audit-log).

Thin: read through selectors, write the export's own row through services, render or stream."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from accounts.audit_log.export import EXPORT_FORMATS, data_lines, export_csv, export_json
from accounts.audit_log.selectors import AuditFilter, audit_event_describe, audit_events_list, audit_filter_parse
from accounts.audit_log.services import audit_export_record
from accounts.audit_log.verbs import VERBS, verb_categories
from accounts.models import Membership
from accounts.views_base import org_view, settings_context
from reasoningbank.errors import ServiceError

ADMIN = Membership.ROLE_ADMIN
PER_PAGE = 50
EXPORT_CHUNK = 2_000  # rows fetched per round trip while an export streams


def _is_partial(request: HttpRequest) -> bool:
    """An htmx request for the results alone (a history-restore request wants the whole page)."""
    htmx = getattr(request, "htmx", None)
    return htmx is not None and bool(htmx) and not htmx.history_restore_request


@org_view(min_role=ADMIN)
@require_GET
def settings_audit(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    errors: dict[str, str] = {}
    page = None
    filters = AuditFilter()
    try:
        filters = audit_filter_parse(request.GET)
        page = Paginator(audit_events_list(principal, filters), PER_PAGE).get_page(request.GET.get("page"))
        for event in page.object_list:
            event.details = data_lines(event.data or {})  # type: ignore[attr-defined]
    except ServiceError as exc:
        errors[exc.field or "form"] = exc.message
    values = {
        name: request.GET.get(name, "")
        for name in ("verb", "category", "actor", "target_type", "target_id", "since", "until")
    }
    context = settings_context(
        request,
        "audit",
        page=page,
        filter_errors=errors,
        values=values,
        filtered=bool(filters.as_query()),
        verbs=sorted(VERBS),
        categories=verb_categories(),
    )
    template = "accounts/settings_audit.html#results" if _is_partial(request) else "accounts/settings_audit.html"
    return render(request, template, context, status=400 if errors else 200)


@org_view(min_role=ADMIN)
@require_POST  # it writes the export's own audit row: never on a GET a link or a prefetch could make
def settings_audit_export(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    file_format = request.POST.get("format", "csv")
    if file_format not in EXPORT_FORMATS:
        return HttpResponse(
            f"format must be one of {', '.join(EXPORT_FORMATS)}", status=400, content_type="text/plain; charset=utf-8"
        )
    try:
        filters = audit_filter_parse(request.POST)
        rows = audit_events_list(principal, filters)
    except ServiceError as exc:
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain; charset=utf-8")
    limit = int(settings.AUDIT_EXPORT_MAX_ROWS)
    truncated = rows[limit : limit + 1].exists()
    # recorded before the rows are read, and left out of them: the export shows the log as it was asked for
    own = audit_export_record(principal=principal, file_format=file_format, filters=filters, truncated=truncated)
    events = (audit_event_describe(row) for row in rows.filter(pk__lt=own.pk)[:limit].iterator(chunk_size=EXPORT_CHUNK))
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    name = f"audit-{principal.organization.slug}-{stamp}.{file_format}"
    chunks: Any
    if file_format == "csv":
        chunks, content_type = export_csv(events), "text/csv; charset=utf-8"
    else:
        chunks = export_json(
            events, organization=principal.organization.slug, filters=filters.as_query(), truncated=truncated
        )
        content_type = "application/json"
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["Cache-Control"] = "no-store"
    response["Audit-Export-Truncated"] = "true" if truncated else "false"
    return response  # type: ignore[return-value]  # org_view types its views as HttpResponse; Django serves both
