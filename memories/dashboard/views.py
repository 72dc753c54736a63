"""Dashboard pages for memories, disputes and sessions (server-rendered templates + htmx partials).

Every view is wrapped in ``@org_view``: the tenant comes from the signed-in user's membership
(``request.principal``), never from the URL. Rows are loaded only through selectors/services that
take that principal, so another org's id is a 404 exactly like a missing one. Write endpoints need
the member role (a viewer's POST is a 403 and changes nothing) and are POST-only; each is charged to
the member's and the organization's write limits first (``write_admit``,
docs/security/memory-poisoning.md#write-limits).

htmx: list pages render the whole page normally and only their results partial
(``template.html#results``) for an htmx request; writes answer an htmx request with the updated
partial and a plain request with a redirect + flash message. A ``ServiceError`` becomes a visible
message with status 400, never a 500.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.access import access_filter, reachable_projects
from accounts.models import SCOPE_MEMORIES_WRITE, Membership
from accounts.services import write_admit
from accounts.views_base import org_view
from memories.confidence.selectors import memory_signals
from memories.context.selectors import summaries_list, summaries_usable
from memories.core.selectors import MemoryFilters, memory_get, memory_lineage, memory_list
from memories.core.services import memory_update
from memories.dashboard.charts import bar_chart, confidence_chart
from memories.dashboard.selectors import activity_rows, memory_audit_trail, overview
from memories.embedding import query_embed
from memories.models import AgentSession, Memory, MemoryLink
from memories.moderation.selectors import disputed_list
from memories.moderation.services import contradiction_resolve, memory_archive, memory_restore, memory_unmerge
from memories.search.selectors import SearchHit, SearchQuery, memory_search
from memories.sessions.selectors import session_commits, session_get, session_list, session_memory_uses
from memories.sessions.services import session_retry
from memories.trust.provenance_selectors import memory_provenance_detail, memory_sources
from memories.validation import tags_clean
from reasoningbank.ai.llm import llm_health_get
from reasoningbank.db_replica import replica_reads
from reasoningbank.errors import NotFound, ServiceError

MEMBER = Membership.ROLE_MEMBER
PAGE_SIZE = 25
SEARCH_LIMIT = 20  # the search service's maximum; ranked hits are not paginated beyond it


# --- shared helpers --------------------------------------------------------------------------------


def _can_write(request: HttpRequest) -> bool:
    return request.principal.has_scope(SCOPE_MEMORIES_WRITE)  # type: ignore[attr-defined]


def _page_vars(request: HttpRequest, nav: str, **extra: Any) -> dict[str, Any]:
    """The template variables every page has (its nav entry, whether the viewer may write) and ``extra``."""
    return {"nav": nav, "can_write": _can_write(request), **extra}


def _is_partial(request: HttpRequest) -> bool:
    """An htmx request for a fragment (a history-restore request wants the whole page)."""
    htmx = getattr(request, "htmx", None)
    return htmx is not None and bool(htmx) and not htmx.history_restore_request


def _memory_or_404(request: HttpRequest, memory_id: str) -> Memory:
    try:
        return memory_get(request.principal, memory_id)  # type: ignore[attr-defined]
    except NotFound:
        raise Http404("Not found.") from None


def _session_or_404(request: HttpRequest, session_id: str) -> AgentSession:
    try:
        return session_get(request.principal, session_id)  # type: ignore[attr-defined]
    except NotFound:
        raise Http404("Not found.") from None


def _safe_next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return fallback


def _form_errors_text(form: forms.Form) -> list[str]:
    out = []
    for name, errors in form.errors.items():
        label = form.fields[name].label or name if name in form.fields else ""
        for error in errors:
            out.append(f"{label}: {error}" if label else str(error))
    return out


# --- overview ----------------------------------------------------------------------------------------


@org_view()
@require_GET
@replica_reads
def overview_page(request: HttpRequest) -> HttpResponse:
    data = overview(request.principal)  # type: ignore[attr-defined]
    page_vars = _page_vars(
        request,
        "overview",
        data=data,
        histogram=bar_chart(data["histogram"]) if data["histogram"] else None,
        weekly=bar_chart(data["weekly"], label_every=2) if data["weekly"] else None,
    )
    return render(request, "memories/overview.html", page_vars)


# --- memory list + search ---------------------------------------------------------------------------

SORT_CHOICES = [
    ("-created_at", "Newest first"),
    ("created_at", "Oldest first"),
    ("-confidence", "Highest confidence"),
    ("confidence", "Lowest confidence"),
    ("-usage_count", "Most used"),
    ("-last_used_at", "Recently used"),
    ("title", "Title A–Z"),
]
STATE_CHOICES = [("active", "Active"), ("archived", "Archived"), ("any", "Any state"), ("proposed", "Proposed")]
SCOPE_CHOICES = [("all", "All scopes"), ("project", "Project"), ("team", "Team"), ("org", "Org-wide")]


def _any(choices: list[tuple[str, str]], label: str) -> list[tuple[str, str]]:
    return [("", label), *choices]


class MemoryFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=2000, label="Search")
    project = forms.ChoiceField(required=False, label="Project")
    scope = forms.ChoiceField(required=False, choices=SCOPE_CHOICES, label="Scope")
    kind = forms.ChoiceField(required=False, choices=_any(Memory.KIND_CHOICES, "Any kind"), label="Kind")
    outcome = forms.ChoiceField(required=False, choices=_any(Memory.OUTCOME_CHOICES, "Any outcome"), label="Outcome")
    tier = forms.ChoiceField(required=False, choices=_any(Memory.TIER_CHOICES, "Any tier"), label="Tier")
    state = forms.ChoiceField(required=False, choices=STATE_CHOICES, label="State")
    min_confidence = forms.FloatField(required=False, min_value=0, max_value=1, label="Min confidence")
    max_confidence = forms.FloatField(required=False, min_value=0, max_value=1, label="Max confidence")
    tag = forms.CharField(required=False, max_length=50, label="Tag")
    sort = forms.ChoiceField(required=False, choices=SORT_CHOICES, label="Sort")

    def __init__(self, *args: Any, projects: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = _any(  # type: ignore[attr-defined]  # a ChoiceField
            [(slug, slug) for slug in projects], "All projects"
        )

    def clean_tag(self) -> str:
        return (self.cleaned_data.get("tag") or "").strip().lower()

    def clean_q(self) -> str:
        return (self.cleaned_data.get("q") or "").strip()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        low, high = data.get("min_confidence"), data.get("max_confidence")
        if low is not None and high is not None and low > high:
            self.add_error("max_confidence", "must be at least the min confidence")
        return data


@dataclass
class Row:
    memory: Memory
    hit: SearchHit | None = None
    source: dict[str, Any] | None = None  # who wrote it, how (its one-line label under the title)


def _memory_rows(request: HttpRequest, data: dict[str, Any]) -> tuple[Page, str, str, int | None]:
    """(page of Rows, mode, notice, matches found). mode "search" = ranked hybrid search, with the number of
    matches the search found (the API's ``total_found``); "list" = filtered listing, found None."""
    principal = request.principal  # type: ignore[attr-defined]
    state = data.get("state") or "active"
    q = data.get("q") or ""
    if q and state == "active":
        page, found = _search_rows(principal, data)
        return page, "search", "", found
    filters = MemoryFilters(
        project=data.get("project") or None,
        scope=data.get("scope") or "all",
        state=None if state == "any" else state,
        outcome=data.get("outcome") or None,
        kind=data.get("kind") or None,
        tier=data.get("tier") or None,
        tags=(data["tag"],) if data.get("tag") else (),
        min_confidence=data.get("min_confidence"),
        max_confidence=data.get("max_confidence"),
        text=q or None,
        ordering=data.get("sort") or "-created_at",
    )
    notice = "Ranked search covers active memories; archived ones are matched by title and description." if q else ""
    page = Paginator(memory_list(principal, filters), PAGE_SIZE).get_page(request.GET.get("page"))
    sources = memory_sources(page.object_list)  # one query for the page
    page.object_list = [Row(m, source=sources.get(m.id)) for m in page.object_list]  # type: ignore[misc]
    return page, "list", notice, None


def _search_rows(principal: Any, data: dict[str, Any]) -> tuple[Page, int]:
    """The real hybrid search (docs/search.md), through the ``memory_search`` selector with the query
    embedded here — deliberately NOT ``memory_search_use``: a moderator browsing the dashboard is not
    an agent using a memory, so the search must not record usage signals (they would raise
    confidence, usage_count and the project's learned weights for memories nobody applied)."""
    outcome = data.get("outcome") or ""
    # the form validated every value (its limits are the contract's): build the selector's query directly
    search = SearchQuery(
        query=data["q"],
        scope=data.get("scope") or "all",
        outcome=outcome if outcome in ("success", "failure") else "all",
        limit=SEARCH_LIMIT,
        min_confidence=float(data["min_confidence"]) if data.get("min_confidence") is not None else 0.0,
        project=data.get("project") or None,
        mode="deep",  # moderators see every active memory, whatever its tier
    )
    vector = query_embed(search.query)
    result = memory_search(principal, search, query_vector=vector)
    hits = result.hits
    # the search loads only the columns it ranks on; the table shows more, so load the rows in one go
    full = memory_list(principal, MemoryFilters(state=None)).in_bulk([h.memory.pk for h in hits])
    sources = memory_sources(list(full.values()))
    rows = [Row(full[h.memory.pk], h, sources.get(h.memory.pk)) for h in hits if h.memory.pk in full]
    # the search has no kind / tier / tag / max-confidence / "mixed" filters: apply them to its hits
    if outcome == Memory.OUTCOME_MIXED:
        rows = [r for r in rows if r.memory.outcome == outcome]
    if data.get("kind"):
        rows = [r for r in rows if r.memory.kind == data["kind"]]
    if data.get("tag"):
        rows = [r for r in rows if data["tag"] in r.memory.tags]
    if data.get("max_confidence") is not None:
        rows = [r for r in rows if r.memory.confidence <= data["max_confidence"]]
    if data.get("tier"):
        rows = [r for r in rows if r.memory.tier == data["tier"]]
    # the count the API answers (``total_found``: every match, near-identical ones folded into a row and those
    # past the limit included), not the rows shown: the two said 3 and 4 for one search
    return Paginator(rows, SEARCH_LIMIT).get_page(1), result.total_found


@org_view()
@require_GET
@replica_reads
def memory_list_page(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    projects = list(reachable_projects(principal).values_list("slug", flat=True))
    form = MemoryFilterForm(request.GET, projects=projects)
    errors: list[str] = []
    page, mode, notice, found = None, "list", "", None
    if form.is_valid():
        try:
            page, mode, notice, found = _memory_rows(request, form.cleaned_data)
        except ServiceError as exc:
            errors.append(exc.message)
    else:
        errors = _form_errors_text(form)
    page_vars = _page_vars(
        request, "memories", form=form, page=page, mode=mode, notice=notice, errors=errors, found=found
    )
    status = 400 if errors else 200
    template = "memories/list.html#results" if _is_partial(request) else "memories/list.html"
    return render(request, template, page_vars, status=status)


# --- memory detail + writes ------------------------------------------------------------------------

LINK_LABELS = {
    ("out", MemoryLink.KIND_CONSOLIDATES): "Merged sources (this memory consolidates them)",
    ("in", MemoryLink.KIND_CONSOLIDATES): "Consolidated into",
    ("out", MemoryLink.KIND_SUPERSEDES): "Supersedes",
    ("in", MemoryLink.KIND_SUPERSEDES): "Superseded by",
    ("out", MemoryLink.KIND_CONTRADICTS): "Contradicts",
    ("in", MemoryLink.KIND_CONTRADICTS): "Contradicted by",
    ("out", MemoryLink.KIND_DUPLICATES): "Kept over its duplicates",
    ("in", MemoryLink.KIND_DUPLICATES): "Duplicate of",
    ("out", MemoryLink.KIND_REFERENCES): "References",
    ("in", MemoryLink.KIND_REFERENCES): "Referenced by",
}


def _lineage_groups(lineage: dict[str, Any]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for direction, key in (("out", "outgoing"), ("in", "incoming")):
        for link in lineage[key]:
            groups.setdefault((direction, link["kind"]), []).append(link)
    order = list(LINK_LABELS)
    return [
        {"label": LINK_LABELS.get(key, f"{key[1]} ({key[0]})"), "kind": key[1], "links": links}
        for key, links in sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99)
    ]


@org_view()
@require_GET
@replica_reads
def memory_detail_page(request: HttpRequest, memory_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    memory = _memory_or_404(request, memory_id)
    signals = list(memory_signals(principal, memory))  # newest first, at most 200
    lineage = memory_lineage(principal, memory)
    # memories merged into this one that no "consolidates" link names (the links are shown anyway)
    linked = {link["memory"]["id"] for link in lineage["outgoing"] if link["kind"] == MemoryLink.KIND_CONSOLIDATES}
    sources = list(
        access_filter(Memory, principal)
        .filter(pk__in=[pk for pk in lineage["sources"] if pk not in linked])
        .only("id", "title", "state", "archived_reason", "confidence")
    )
    page_vars = _page_vars(
        request,
        "memories",
        memory=memory,
        signals=signals,
        chart=confidence_chart(memory, list(reversed(signals)), now=timezone.now()),
        lineage_groups=_lineage_groups(lineage),
        sources=sources,
        audit=activity_rows(principal, memory_audit_trail(principal, memory)),
        archive_reasons=Memory.ARCHIVED_REASON_CHOICES,
        summary=next(iter(summaries_usable(summaries_list(principal, memory=memory.id)[:1], read="dashboard")), None),
        provenance=memory_provenance_detail(memory),
    )
    return render(request, "memories/detail.html", page_vars)


class MemoryEditForm(forms.Form):
    title = forms.CharField(max_length=200)
    description = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 3}))
    content = forms.CharField(max_length=20000, widget=forms.Textarea(attrs={"rows": 12}))
    outcome = forms.ChoiceField(choices=Memory.OUTCOME_CHOICES)
    kind = forms.ChoiceField(choices=Memory.KIND_CHOICES)
    tags = forms.CharField(required=False, max_length=1100, help_text="comma-separated, e.g. testing, flaky")

    def clean_tags(self) -> list[str]:
        raw = self.cleaned_data.get("tags") or ""
        try:
            return tags_clean([t for t in raw.split(",")])
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None


EDITABLE = ("title", "description", "content", "outcome", "kind", "tags")


@org_view(min_role=MEMBER)
@require_http_methods(["GET", "POST"])
def memory_edit_page(request: HttpRequest, memory_id: str) -> HttpResponse:
    memory = _memory_or_404(request, memory_id)
    status = 200
    if request.method == "POST":
        form = MemoryEditForm(request.POST)
        if form.is_valid():
            changes = {k: form.cleaned_data[k] for k in EDITABLE if form.cleaned_data[k] != getattr(memory, k)}
            if not changes:
                messages.info(request, "Nothing changed.")
                return redirect("memory-detail", memory_id=memory.id)
            try:
                write_admit(request.principal)  # type: ignore[attr-defined]
                memory_update(principal=request.principal, memory=memory, changes=changes)  # type: ignore[attr-defined]
            except ServiceError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                messages.success(request, f"Saved changes to {', '.join(sorted(changes))}.")
                return redirect("memory-detail", memory_id=memory.id)
        status = 400
    else:
        form = MemoryEditForm(initial={**{k: getattr(memory, k) for k in EDITABLE}, "tags": ", ".join(memory.tags)})
    page_vars = _page_vars(request, "memories", memory=memory, form=form)
    return render(request, "memories/edit.html", page_vars, status=status)


def _status_response(request: HttpRequest, memory: Memory, *, message: str, error: bool) -> HttpResponse:
    """htmx: the status partial (400 on error); otherwise a flash message and a redirect."""
    if _is_partial(request):
        page_vars = _page_vars(
            request,
            "memories",
            memory=memory,
            status_message=message,
            status_error=error,
            archive_reasons=Memory.ARCHIVED_REASON_CHOICES,
        )
        return render(request, "memories/detail.html#status", page_vars, status=400 if error else 200)
    (messages.error if error else messages.success)(request, message)
    return HttpResponseRedirect(_safe_next(request, reverse("memory-detail", args=[memory.id])))


@org_view(min_role=MEMBER)
@require_POST
def memory_archive_action(request: HttpRequest, memory_id: str) -> HttpResponse:
    memory = _memory_or_404(request, memory_id)
    reason = request.POST.get("reason") or Memory.ARCHIVED_MANUAL
    try:
        write_admit(request.principal)  # type: ignore[attr-defined]
        memory = memory_archive(principal=request.principal, memory=memory, reason=reason)  # type: ignore[attr-defined]
    except ServiceError as exc:
        return _status_response(request, memory, message=exc.message, error=True)
    return _status_response(request, memory, message="Archived. It no longer appears in search.", error=False)


@org_view(min_role=MEMBER)
@require_POST
def memory_restore_action(request: HttpRequest, memory_id: str) -> HttpResponse:
    memory = _memory_or_404(request, memory_id)
    try:
        write_admit(request.principal)  # type: ignore[attr-defined]
        memory = memory_restore(principal=request.principal, memory=memory)  # type: ignore[attr-defined]
    except ServiceError as exc:
        return _status_response(request, memory, message=exc.message, error=True)
    return _status_response(request, memory, message="Restored: the memory is active again.", error=False)


@org_view(min_role=MEMBER)
@require_POST
def memory_unmerge_action(request: HttpRequest, memory_id: str) -> HttpResponse:
    memory = _memory_or_404(request, memory_id)
    try:
        write_admit(request.principal)  # type: ignore[attr-defined]
        restored = memory_unmerge(principal=request.principal, memory=memory)  # type: ignore[attr-defined]
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Un-merged: {len(restored)} source memories are active again; this one is archived.")
    return redirect("memory-detail", memory_id=memory.id)


# --- disputes ------------------------------------------------------------------------------------------


@org_view()
@require_GET
@replica_reads
def disputed_page(request: HttpRequest) -> HttpResponse:
    links = disputed_list(request.principal).select_related("target__project")  # type: ignore[attr-defined]
    page = Paginator(links, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "memories/disputed.html", _page_vars(request, "disputed", page=page))


RESOLUTION_MESSAGES = {
    "keep_first": "Kept “{first}”; “{second}” is archived as superseded.",
    "keep_second": "Kept “{second}”; “{first}” is archived as superseded.",
    "keep_both": "Kept both memories; the dispute is closed.",
}


@org_view(min_role=MEMBER)
@require_POST
def disputed_resolve_action(request: HttpRequest, link_id: int) -> HttpResponse:
    link = disputed_list(request.principal, include_resolved=True).filter(pk=link_id).first()  # type: ignore[attr-defined]
    if link is None:
        raise Http404("Not found.")
    resolution = request.POST.get("resolution", "")
    try:
        write_admit(request.principal)  # type: ignore[attr-defined]
        link = contradiction_resolve(principal=request.principal, link=link, resolution=resolution)  # type: ignore[attr-defined]
    except ServiceError as exc:
        message, error = exc.message, True
    else:
        message = RESOLUTION_MESSAGES[resolution].format(first=link.source.title, second=link.target.title)
        error = False
    if _is_partial(request):
        page_vars = _page_vars(request, "disputed", link=link, message=message, error=error)
        return render(request, "memories/disputed.html#resolved", page_vars, status=400 if error else 200)
    (messages.error if error else messages.success)(request, message)
    return redirect("disputed-list")


# --- sessions ------------------------------------------------------------------------------------------


@org_view()
@require_GET
@replica_reads
def session_list_page(request: HttpRequest) -> HttpResponse:
    status_filter = request.GET.get("status") or ""
    errors: list[str] = []
    page = None
    try:
        sessions = session_list(request.principal, status=status_filter or None)  # type: ignore[attr-defined]
        page = Paginator(sessions, PAGE_SIZE).get_page(request.GET.get("page"))
    except ServiceError as exc:
        errors.append(exc.message)
    page_vars = _page_vars(
        request,
        "sessions",
        page=page,
        errors=errors,
        status_filter=status_filter,
        statuses=AgentSession.STATUS_CHOICES,
        retryable=_retryable(),
    )
    template = "memories/sessions.html#results" if _is_partial(request) else "memories/sessions.html"
    return render(request, template, page_vars, status=400 if errors else 200)


RETRYABLE = (AgentSession.STATUS_FAILED, AgentSession.STATUS_WAITING, AgentSession.STATUS_WAITING_BUDGET)


def _retryable() -> tuple[str, ...]:
    """Statuses a Retry button can help: not "waiting for LLM" while no LLM is configured (the
    session would only wait again; the banner names the fix, and sessions resume by themselves)."""
    if llm_health_get().configured:
        return RETRYABLE
    return (AgentSession.STATUS_FAILED,)


@org_view()
@require_GET
@replica_reads
def session_detail_page(request: HttpRequest, session_id: str) -> HttpResponse:
    session = _session_or_404(request, session_id)
    uses = list(session_memory_uses(request.principal, session))  # type: ignore[attr-defined]
    commits = list(session_commits(request.principal, session))  # type: ignore[attr-defined]
    page_vars = _page_vars(request, "sessions", session=session, retryable=_retryable(), uses=uses, commits=commits)
    return render(request, "memories/session_detail.html", page_vars)


@org_view(min_role=MEMBER)
@require_POST
def session_retry_action(request: HttpRequest, session_id: str) -> HttpResponse:
    session = _session_or_404(request, session_id)
    try:
        write_admit(request.principal)  # type: ignore[attr-defined]
        session = session_retry(principal=request.principal, session=session)  # type: ignore[attr-defined]
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Session {session.external_id} is {session.get_status_display().lower()} again.")
    return HttpResponseRedirect(_safe_next(request, reverse("session-detail", args=[session.id])))
