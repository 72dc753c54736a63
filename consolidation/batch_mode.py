"""Batch mode for scheduled consolidation runs (docs/llm-spend.md#batch-mode): with
``CONSOLIDATION_LLM_BATCH`` on, a scheduled run's LLM calls go through the provider's batch API, at
about half the price, and the run waits for them.

The phases do not know: a pass runs them as usual with a batch session in the run's state
(``reasoningbank.ai.batch_services``), which answers the calls its earlier batches answered and defers
the others (the phase leaves that work for the next pass, as it does for a call the budget refused).
At the end of the pass the deferred calls go out as one batch and the run ends ``waiting_for_batch``;
the poll schedule stores the batch's answers and queues the run again, and its next pass finds them.
A run an admin or an agent starts stays interactive, and so does a dry run: someone waits for them.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from consolidation.models import ConsolidationRun
from consolidation.run_state import RunState
from reasoningbank.ai.batch_services import BatchSession, batch_session, batch_submit
from reasoningbank.ai.budget import LLMBudgetExceeded

logger = logging.getLogger("consolidation")


def run_batch_session(run: ConsolidationRun, llm: Any) -> BatchSession | None:
    """The batch session of a scheduled, real run when batch mode is on and the provider has a batch API
    (an OpenAI-compatible local server has none: its calls stay direct); None otherwise."""
    if not settings.CONSOLIDATION_LLM_BATCH or run.trigger != ConsolidationRun.TRIGGER_SCHEDULED or run.dry_run:
        return None
    return batch_session(organization=run.organization, subject=run, llm=llm)


def run_batch_send(state: RunState, status: str) -> str:
    """After a pass: send the calls it deferred and make the run wait for them (``waiting_for_batch``).
    A pass that waits for the budget sends nothing (its next pass asks again), nor does a batch the
    budget refuses: the run then waits for the budget like any. Otherwise ``status`` is kept."""
    session = state.batch
    if session is None or not session.recorded or status != ConsolidationRun.STATUS_COMPLETED:
        return status
    count = len(session.recorded)
    try:
        batches = batch_submit(session)
    except LLMBudgetExceeded as exc:
        state.budget_refusals += count
        state.budget_refused = exc
        state.warnings.append(f"{count} LLM call(s) wait for the budget: {exc}; the run goes on then")
        return ConsolidationRun.STATUS_WAITING
    failed = [b for b in batches if b.error]
    state.warnings.append(
        f"{count} LLM call(s) were sent to the {session.api.provider} batch API ({len(batches)} batch(es)); "
        "the run goes on once the provider answered"
        + (
            f"; {len(failed)} batch(es) could not be sent, their calls are made directly: {failed[0].error}"
            if failed
            else ""
        )
    )
    return ConsolidationRun.STATUS_WAITING_BATCH
