"""factory-boy factories for the fixed cast and its data.

Tenant rows are created directly where that keeps every invariant (organizations, projects,
sessions, runs, links: each takes its organization from its project or memory). Memories go
through the real service (``memories.core.services.memory_record``), which computes what a row alone
would get wrong: the embedding, the content fingerprint and the confidence prior.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import factory
from django.contrib.auth import get_user_model

from accounts.access import Principal
from accounts.models import Membership, Organization, Project, Team
from consolidation.models import ConsolidationRun
from memories.context.services import summary_store
from memories.core.services import memory_record
from memories.models import AgentSession, Memory, MemoryLink, MemorySummary


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.LazyAttribute(lambda o: o.email)
    email = factory.Sequence(lambda n: f"user{n}@example.com")
    password = factory.django.Password("correct-horse-battery")


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"org-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    plan = "free"


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    organization = factory.SubFactory(OrganizationFactory)
    slug = factory.Sequence(lambda n: f"team-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    organization = factory.SubFactory(OrganizationFactory)
    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    organization = factory.SubFactory(OrganizationFactory)
    role = Membership.ROLE_MEMBER


# --- memories and what hangs off them ----------------------------------------------------------------

# what memory_record takes; any other field given to MemoryFactory is written to the row afterwards
_RECORD_ARGUMENTS = ("title", "description", "content", "outcome", "tags", "kind", "project", "scope")


class MemoryFactory(factory.Factory):
    """``MemoryFactory(principal=p, **fields)``: a memory recorded by ``p`` through
    ``memories.core.services.memory_record`` (embedding, fingerprint, confidence prior, audit event).

    Titles are unique by sequence, so the identical-record check never collapses two of them;
    give a fixed title (and text) to get the same memory back. Fields memory_record does not take
    (confidence, usage_count, created_at, embedding, ...) are written to the row afterwards."""

    class Meta:
        model = Memory
        inline_args = ("principal",)

    title = factory.Sequence(lambda n: f"Lesson {n}: pin flaky test seeds")
    description = "When a test fails only sometimes"
    content = "Seed the random generator in the test setup so failures reproduce."
    outcome = Memory.OUTCOME_SUCCESS
    tags = None
    kind = None
    project = None
    scope = None

    @classmethod
    def _build(cls, model_class: type[Memory], *args: Any, **kwargs: Any) -> Memory:
        raise TypeError("MemoryFactory records through the service; there is no unsaved memory to build")

    @classmethod
    def _create(cls, model_class: type[Memory], principal: Principal, **kwargs: Any) -> Memory:
        record = {name: kwargs.pop(name) for name in _RECORD_ARGUMENTS}
        memory = memory_record(principal=principal, **record)
        if kwargs:
            model_class.objects.filter(pk=memory.pk).update(**kwargs)
            memory.refresh_from_db()
        return memory


def memory_recorder(**defaults: Any) -> Callable[..., Memory]:
    """``record(principal, **overrides)``: MemoryFactory with a test module's own default fields."""

    def record(principal: Principal, **overrides: Any) -> Memory:
        return MemoryFactory(principal=principal, **{**defaults, **overrides})

    return record


class AgentSessionFactory(factory.django.DjangoModelFactory):
    """A session row as ``session_submit`` leaves it (queued), without scrubbing or enqueueing."""

    class Meta:
        model = AgentSession

    project = factory.SubFactory(ProjectFactory)
    organization = factory.LazyAttribute(lambda o: o.project.organization)
    external_id = factory.Sequence(lambda n: f"session-{n}")
    outcome = "success"
    trace = "agent: fixed the flaky test by seeding the RNG"


class ConsolidationRunFactory(factory.django.DjangoModelFactory):
    """A run row (queued, manual by default, as the model has it); one queued or running run per project."""

    class Meta:
        model = ConsolidationRun

    project = factory.SubFactory(ProjectFactory)
    organization = factory.LazyAttribute(lambda o: o.project.organization)


def _link_organization(link: Any) -> Organization:
    source = getattr(link, "source", None)
    return source.organization if source is not None else Memory.objects.get(pk=link.source_id).organization


class MemoryLinkFactory(factory.django.DjangoModelFactory):
    """A link between two given memories (``source`` and ``target``, or their ids), in the source's org."""

    class Meta:
        model = MemoryLink

    organization = factory.LazyAttribute(_link_organization)
    kind = MemoryLink.KIND_REFERENCES


def summary_make(
    principal: Principal,
    *,
    memory: Memory | None = None,
    sources: list[Memory] | None = None,
    summary: str = "Timeouts on every database call keep requests from piling up.",
    key_facts: tuple[str, ...] = ("Every database call gets a deadline",),
    decisions: tuple[dict[str, Any], ...] = (
        {"decision": "Use context.WithTimeout", "rationale": "bounded latency", "outcome": None, "confidence": "high"},
    ),
    superseded_facts: tuple[dict[str, Any], ...] = (),
    **memory_fields: Any,
) -> MemorySummary:
    """A ready summary through the real service (embedding, scrubbing), as consolidation's summarize
    phase writes it: of ``memory`` (by default a new consolidated-looking memory of ``principal``)."""
    memory = memory or MemoryFactory(principal=principal, **memory_fields)
    return summary_store(
        memory=memory,
        sources=sources or [memory],
        run_id="run_test",
        summary=summary,
        key_facts=key_facts,
        decisions=decisions,
        superseded_facts=superseded_facts,
    )
