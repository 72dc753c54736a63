"""The consolidation phases are one registry (consolidation/phases/registry.py): the run executes the
phases it holds in their order, and a run's counters, the run page, the metrics and the system page's
timeline all derive from it — a new phase is one new module, with no list to edit anywhere else."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from consolidation.models import ConsolidationRun, empty_counters
from consolidation.phases import registry
from consolidation.phases.registry import RegistryError, RunCounter, phase_names, phase_register, phase_unregister
from consolidation.runs import consolidation_execute, consolidation_request, run_options_validate
from reasoningbank.ai.llm import NoLLM
from tests.factories import MemoryFactory

PHASES_DIR = Path(__file__).resolve().parents[2] / "consolidation" / "phases"


@pytest.fixture
def extra_phase():
    """A phase registered the way a new module of consolidation/phases/ would, between two others."""
    calls: list[str] = []

    @phase_register(
        name="inspect",
        order=95,
        description="a phase a later change adds",
        counters=(RunCounter("inspected", "memories_inspected", "Memories a test phase looked at"),),
    )
    def inspect_step(state) -> None:
        calls.append(state.run.id)
        state.counters["inspected"] += len(state.memories)

    yield calls
    phase_unregister("inspect")


def test_the_cycle_runs_in_the_order_the_phases_registered():
    assert phase_names() == (
        "scan",
        "duplicates",
        "retention",
        "judge",
        "cluster",
        "synthesize",
        "summarize",
        "patterns",
        "ladder",
        "archive",
    )


def test_a_registered_phase_runs_in_its_place_with_its_own_counter_and_timing(cast, agent, extra_phase):
    MemoryFactory(
        principal=agent, title="Pin the base image digest", content="Pin the Docker base image by its digest."
    )
    run = consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())
    assert run.counters["inspected"] == 0  # a new run counts what every registered phase declares

    finished = consolidation_execute(run.id, llm=NoLLM())

    assert finished.status == ConsolidationRun.STATUS_COMPLETED, finished.errors
    assert extra_phase == [run.id]
    assert finished.counters["inspected"] == 1
    assert list(finished.phase_durations) == [*phase_names()]  # timed, between the ladder and archival


def test_every_counter_a_run_writes_is_declared_by_a_phase(cast, agent):
    for i in range(3):
        MemoryFactory(
            principal=agent, title=f"Retry flaky network calls {i}", content=f"Retry network calls with backoff ({i})."
        )
    run = consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())
    finished = consolidation_execute(run.id, llm=NoLLM())
    assert set(finished.counters) == set(empty_counters())


def test_two_phases_cannot_take_one_place_nor_declare_one_counter():
    with pytest.raises(RegistryError, match="both take place 10"):
        phase_register(name="rescan", order=10, description="clash")(lambda state: None)
    with pytest.raises(RegistryError, match="'archived' is declared by 'archive'"):
        phase_register(name="sweep", order=105, description="clash", counters=(RunCounter("archived"),))(
            lambda state: None
        )
    assert "rescan" not in phase_names() and "sweep" not in phase_names()


def test_the_phase_modules_do_not_number_themselves():
    """Their order is the registry's: a docstring saying "Phase 4" goes stale as soon as one is added."""
    numbered = []
    for path in sorted(PHASES_DIR.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        first = doc.split("\n\n")[0]
        if any(word in first for word in ("Phase 1", "Phase 2", "Phase 3", "Phase 4", "Phase 7", "Phase 8")):
            numbered.append(path.name)
        if "Phases " in first and any(ch.isdigit() for ch in first):
            numbered.append(path.name)
    assert numbered == []


def test_every_registered_phase_comes_from_a_module_of_the_phases_package():
    modules = {p.step.__module__ for p in registry.phases()}
    assert modules <= {f"consolidation.phases.{path.stem}" for path in PHASES_DIR.glob("*.py")}
