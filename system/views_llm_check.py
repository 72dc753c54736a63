"""The system page's LLM check (docs/llm.md#checking-a-provider): staff send one example of every prompt
kind to the configured LLM and see, per kind, whether the reply parsed, its latency and tokens.

It runs in the web process, one kind per request, not in the worker: the check must work when the worker
is down (the system page is where that is diagnosed), and one kind per request shows each result as it
arrives (htmx chains the requests: each answer carries the next kind's row, which posts itself on load).
Each kind gets a single attempt (no retries), so a request never waits longer than ``LLM_TIMEOUT_SECONDS``.
The calls are the operator's: no organization's budget is charged (nothing is metered).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_POST

from reasoningbank.ai.check import llm_check_kind
from reasoningbank.ai.llm import LLM, LLMPermanentError, llm_from_settings
from reasoningbank.ai.prompt_kinds import UnknownPromptKind, prompt_kind_get, prompt_kinds

TEMPLATE = "system/_llm_check.html"


@login_required
@require_POST
def system_llm_check(request: HttpRequest) -> HttpResponse:
    """Without ``kind``: the table, its first kind's row about to post itself. With ``kind``: that kind
    checked, its result row, and the next kind's row (or, after the last, the verdict)."""
    if not request.user.is_staff:
        # it spends the operator's tokens and shows the service's provider setup: staff only
        raise PermissionDenied("the LLM check is for the service's staff")
    names = [kind.name for kind in prompt_kinds()]
    llm, problem = _llm()
    kind_name = request.POST.get("kind", "")
    if not kind_name:
        context: dict[str, Any] = {"problem": problem, "next": names[0] if names else None, "total": len(names)}
        if llm is not None:
            context.update(provider=llm.provider, model=llm.model, position=1)
        return render(request, f"{TEMPLATE}#table", context)
    try:
        kind = prompt_kind_get(kind_name)
    except UnknownPromptKind as exc:
        return HttpResponseBadRequest(str(exc))
    if llm is None:
        return render(request, f"{TEMPLATE}#problem", {"problem": problem})
    failed = [name for name in request.POST.get("failed", "").split(",") if name in names]
    result = llm_check_kind(llm, kind)
    if not result.parsed:
        failed.append(kind.name)
    position = names.index(kind.name) + 1
    # a provider out of reach would refuse every kind the same way: the check stops here, naming where it looked
    following = names[position] if position < len(names) and not result.unreachable_url else None
    return render(
        request,
        f"{TEMPLATE}#result",
        {
            "result": result,
            "next": following,
            "position": position + 1,
            "total": len(names),
            "failed": failed,
            "failed_value": ",".join(failed),
            "not_sent": len(names) - position if result.unreachable_url else 0,
        },
    )


def _llm() -> tuple[LLM | None, str]:
    """The configured LLM with one attempt per call, or why there is none."""
    try:
        llm = llm_from_settings(max_retries=0)
    except LLMPermanentError as exc:
        return None, str(exc)
    if llm.provider == "none":
        return None, "No LLM is configured (LLM_PROVIDER=none): set LLM_PROVIDER and LLM_API_KEY, then restart."
    return llm, ""
