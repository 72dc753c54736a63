"""The review queue's dashboard page (docs/consolidation.md#the-review-queue-and-disputes): a moderator
decides in one click whether two memories consolidation set aside contradict or agree, and accepts or
rejects promotion proposals (a lesson that holds in several projects proposed for its team or the org);
an org admin can look for promotions at once, and decides what the instruction-smell detector held in
quarantine (``memories.trust.views_quarantine``: docs/security/memory-poisoning.md#quarantine).

Everyone in the org reads; deciding needs the member role (a viewer's POST is a 403 and changes
nothing). Rows come only through selectors taking ``request.principal``, so another organization's
project or review item is a 404. Deciding answers an htmx request with the decided card, a plain one
with a redirect and a flash message; a service error is a message with status 400, never a 500.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from accounts.access import access_project, reachable_projects
from accounts.models import SCOPE_ADMIN, SCOPE_MEMORIES_WRITE, Membership
from accounts.plans.catalogue import FEATURE_INSTITUTIONAL_PROMOTION, minimum_plan_for, plan_get
from accounts.services import write_admit
from accounts.views_base import org_view
from consolidation.models import ReviewItem
from consolidation.promotion.selectors import promotions_attach
from consolidation.promotion.services import promotions_propose
from consolidation.review.selectors import pairs_waiting_for_llm, promotion_list, review_get, review_list
from consolidation.review.services import review_decide
from memories.pages import injection_review_context, quarantine_context
from reasoningbank.errors import NotFound, ServiceError

MEMBER = Membership.ROLE_MEMBER
ADMIN = Membership.ROLE_ADMIN
PAGE_SIZE = 25
DECIDED_MESSAGES = {
    ReviewItem.STATUS_CONTRADICTS: "Marked as contradicting: the pair is now listed with the disputes.",
    ReviewItem.STATUS_COMPATIBLE: "Marked as agreeing: a later consolidation run may merge them.",
    ReviewItem.STATUS_ACCEPTED: "Promoted: the memory now serves every project in its scope; its sources stay.",
    ReviewItem.STATUS_REJECTED: "Not promoted: these sources will not be proposed again.",
}
PROMOTIONS_SHOWN = 50


@org_view()
@require_GET
def review_queue_page(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    projects = list(reachable_projects(principal).order_by("slug"))
    slug = request.GET.get("project", "").strip()
    project = access_project(principal, slug) if slug else None
    items = review_list(principal, project=project, kinds=ReviewItem.PAIR_KINDS)
    page = Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))
    promotions = promotion_list(principal)
    # what runs said waits for an LLM: listed here too, so the queue never says "nothing waits" beside them
    waiting = pairs_waiting_for_llm(principal, project=project)
    context = {
        "llm_waiting": waiting,
        "llm_waiting_total": sum(w.count for w in waiting),
        "nav": "quality",
        "projects": projects,
        "project": project,
        "page": page,
        "promotions": promotions_attach(principal, promotions[:PROMOTIONS_SHOWN]),
        "promotions_total": promotions.count(),
        "promotion_enabled": principal.organization.has_feature(FEATURE_INSTITUTIONAL_PROMOTION),
        "promotion_min_projects": settings.PROMOTION_MIN_PROJECTS,
        "promotion_plan": plan_get(minimum_plan_for(FEATURE_INSTITUTIONAL_PROMOTION) or "teams").label,
        "can_write": principal.has_scope(SCOPE_MEMORIES_WRITE),
        "can_admin": principal.has_scope(SCOPE_ADMIN),
        # memories waiting for review before injection (docs/security/memory-poisoning.md#injection-policy)
        **injection_review_context(principal),
    }
    if context["can_admin"]:  # what the instruction-smell detector held: an admin's to decide
        context |= quarantine_context(principal)
    return render(request, "consolidation/reviews.html", context)


@org_view(min_role=MEMBER)
@require_POST
def review_decide_action(request: HttpRequest, review_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    try:
        item = review_get(principal, review_id)
    except NotFound:
        raise Http404("Not found.") from None
    decision = request.POST.get("decision", "")
    try:
        write_admit(principal)
        item = review_decide(principal=principal, item=item, decision=decision, note=request.POST.get("note", ""))
    except ServiceError as exc:
        message, error = exc.message, True
    else:
        message, error = DECIDED_MESSAGES[item.status], False
    if request.htmx:  # type: ignore[attr-defined]
        context = {"item": item, "message": message, "error": error}
        return render(request, "consolidation/reviews.html#decided", context, status=400 if error else 200)
    (messages.error if error else messages.success)(request, message)
    return _back(request)


def _back(request: HttpRequest) -> HttpResponse:
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        target = reverse("consolidation-reviews")
    return HttpResponseRedirect(target)


@org_view(min_role=ADMIN)
@require_POST
def promotions_run_action(request: HttpRequest) -> HttpResponse:
    """The review queue's "Look for promotions now" (org admins): the same pass as the daily job."""
    try:
        report = promotions_propose(principal=request.principal)  # type: ignore[attr-defined]
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        found = len(report.proposed)
        text = f"{found} promotion{'' if found == 1 else 's'} proposed" if found else "No new promotion found"
        if report.accepted:
            text += f", {report.accepted} accepted automatically"
        skipped = sum(report.skipped.values())
        messages.success(
            request,
            f"{text} among {report.candidates} trusted procedural memories"
            + (f" ({skipped} already proposed or known)." if skipped else "."),
        )
    return _back(request)
