"""The write gate (docs/memory-model.md#how-a-memory-enters-the-bank) on consolidation's own writes: a
synthesis or an extracted pattern that carries no reusable value is kept out — the run completes, says
why in its warnings, and the sources stay as they were; never a failed run."""

from __future__ import annotations

from accounts.models import AuditEvent
from consolidation.models import ConsolidationRun
from memories.core.services import REJECTED_VERB
from memories.models import Memory
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke, synthesis_reply, vec

TITLES = ["Database timeouts in the API", "Query timeouts for reports", "Timeouts on the job runner"]


def cluster(agent) -> list[Memory]:
    return [remember(agent, title, spoke(0, n, 0.87)) for n, title in enumerate(TITLES, 1)]


def test_a_synthesis_that_echoes_the_template_is_kept_out_and_the_sources_stay(cast, agent):
    sources = cluster(agent)
    echo = synthesis_reply("<concise title>", "<synthesized strategy with specific steps>")

    run = run_cycle(agent, cast.project_a, cycle_llm(synthesis=echo))

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert not Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED).exists()
    assert all(m.state == Memory.STATE_ACTIVE for m in Memory.objects.filter(pk__in=[s.pk for s in sources]))
    assert any("synthesis: the write gate kept out" in w and "placeholder" in w for w in run.warnings)
    assert run.counters["created"] == 0 and run.counters["skipped"] >= len(sources)
    event = AuditEvent.objects.get(verb=REJECTED_VERB)
    assert (event.data["source"], event.data["run"], event.data["project"]) == ("synthesis", run.id, cast.project_a.id)


def test_a_synthesis_too_short_to_be_reusable_is_kept_out(cast, agent, settings):
    cluster(agent)
    run = run_cycle(agent, cast.project_a, cycle_llm(synthesis=synthesis_reply("Timeouts", "Set them.")))
    assert run.status == ConsolidationRun.STATUS_COMPLETED and run.counters["created"] == 0
    assert any("too short" in w for w in run.warnings)

    settings.WRITE_GATE_MIN_CONTENT_CHARS = 5
    again = run_cycle(agent, cast.project_a, cycle_llm(synthesis=synthesis_reply("Timeouts", "Set them.")))
    assert again.counters["created"] == 1


def test_a_pattern_that_echoes_the_prompts_example_is_kept_out_and_a_real_one_is_stored(cast, agent):
    for n in range(5):
        remember(
            agent,
            f"Deploy number {n}",
            vec({100 + n: 1.0}),
            content=f"Deployed release {n} on a Tuesday after the standup.",
            kind=Memory.KIND_EPISODIC,
        )
    replies = '["Project uses PostgreSQL", "Releases go out on Tuesdays after the standup"]'

    run = run_cycle(agent, cast.project_a, cycle_llm(patterns=replies))

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    patterns = Memory.objects.filter(origin=Memory.ORIGIN_EXTRACTED)
    assert [p.title for p in patterns] == ["Releases go out on Tuesdays after the standup"]
    assert run.counters["patterns"] == 1
    assert any("patterns: the write gate kept out" in w and "PostgreSQL" in w for w in run.warnings)
