"""Settings → Trust (docs/security/memory-poisoning.md#the-trust-policy): the organization's trust policy
— what the detector does with a flagged write, what is injected automatically, and the hosts a fetched
script may be piped into a shell from — in one form. Every member reads it; admins and owners change it.
Thin: the selector to read, ``trust_policy_set`` to write, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from accounts.models import SCOPE_ADMIN, Organization
from accounts.views_base import org_view, settings_context
from memories.trust.selectors_injection import injection_pending_list
from memories.trust.selectors_policy import trust_policy_get
from memories.trust.services_policy import trust_policy_set
from reasoningbank.errors import ServiceError
from reasoningbank.poisoning.remote_code import TRUSTED_HOSTS_MAX

SAVED_MESSAGE = "Trust policy saved."
# each choice in plain words: what a team sees happen (the API's help texts say the same, shorter)
POISONING_CHOICES = [
    (Organization.POISONING_QUARANTINE, "Quarantine (recommended)",
     "A memory the detector flags is stored but held back: no search, session or hook sees it until an admin "
     "approves it in the review queue."),
    (Organization.POISONING_FLAG, "Flag",
     "A flagged memory is stored and served like any other, with a visible warning naming what the detector "
     "found."),
    (Organization.POISONING_OFF, "Off",
     "Nothing is checked: every memory is stored and served as written."),
]  # fmt: skip
INJECTION_CHOICES = [
    (Organization.INJECTION_TRUSTED, "Trusted (recommended)",
     "Memories written by a member, admin or owner (or their tokens), by a connected app an admin trusts, or "
     "cleared by an admin. The others wait for review before they are injected."),
    (Organization.INJECTION_REVIEWED, "Reviewed only",
     "Only memories a person reviewed: approved out of quarantine or cleared for injection."),
    (Organization.INJECTION_ALL, "All",
     "Every active memory, whoever wrote it."),
]  # fmt: skip


def _submitted(request: HttpRequest) -> dict[str, Any]:
    """The form's three fields as the service takes them: the hosts one a line."""
    return {
        "poisoning_policy": request.POST.get("poisoning_policy", ""),
        "injection_policy": request.POST.get("injection_policy", ""),
        "trusted_hosts": request.POST.get("trusted_hosts", "").splitlines(),
    }


@org_view()
def settings_trust(request: HttpRequest) -> HttpResponse:
    """Settings → Trust: the trust policy (everyone reads it; admins and owners change it)."""
    principal = request.principal  # type: ignore[attr-defined]
    status, errors = 200, {}
    values = trust_policy_get(principal.organization)
    hosts_text = "\n".join(values["trusted_hosts"])
    if request.method == "POST":
        submitted = _submitted(request)
        try:
            trust_policy_set(principal=principal, changes=submitted)
        except ServiceError as exc:
            status, errors = exc.status, {exc.field or "form": exc.message}
            values = {**values, **{k: v for k, v in submitted.items() if k != "trusted_hosts"}}
            hosts_text = request.POST.get("trusted_hosts", "")
        else:
            messages.success(request, SAVED_MESSAGE)
            return HttpResponseRedirect(reverse("settings-trust"))
    context = settings_context(
        request,
        "trust",
        errors=errors,
        policy=values,
        hosts_text=hosts_text,
        hosts_max=TRUSTED_HOSTS_MAX,
        poisoning_choices=POISONING_CHOICES,
        injection_choices=INJECTION_CHOICES,
        injection_pending_total=injection_pending_list(principal).count() if principal.has_scope(SCOPE_ADMIN) else None,
    )
    return render(request, "memories/trust/settings_trust.html", context, status=status)
