"""memory_record / memory_update / memory_archive / memory_restore against the real database."""

from __future__ import annotations

import dataclasses

import pytest
from django.conf import settings

from accounts.models import AuditEvent
from accounts.plans import catalogue as plans
from memories.core.selectors import memory_get
from memories.core.services import memory_record, memory_update
from memories.models import Memory
from memories.moderation.services import memory_archive, memory_restore
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, LimitExceeded, NotFound
from tests.factories import ProjectFactory, TeamFactory

GOOD = {
    "title": "Wrap errors with context",
    "description": "When a service call fails deep in a handler",
    "content": "Use fmt.Errorf with %w so callers can unwrap and log the chain.",
    "outcome": "success",
}


def record(principal, **overrides):
    return memory_record(principal=principal, **{**GOOD, **overrides})


def counts():
    return Memory.objects.count(), AuditEvent.objects.count()


# --- the recorded memory -----------------------------------------------------------------------


def test_a_recorded_memory_starts_at_confidence_0_8_encoded_as_its_prior(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    memory.refresh_from_db()
    assert memory.confidence == pytest.approx(0.8)
    assert (memory.prior_alpha, memory.prior_beta) == (pytest.approx(1.6), pytest.approx(0.4))
    assert (memory.alpha, memory.beta) == (pytest.approx(1.6), pytest.approx(0.4))
    assert memory.origin == Memory.ORIGIN_RECORDED
    assert memory.state == Memory.STATE_ACTIVE
    assert memory.created_by_token == principal.token


def test_a_recorded_memory_stores_its_embedding_and_the_model_that_made_it(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    memory.refresh_from_db()
    assert memory.embedding is not None
    assert len(memory.embedding) == settings.EMBEDDING_DIMENSIONS
    assert any(abs(x) > 0 for x in memory.embedding)
    assert memory.embedding_model


def test_recording_writes_a_memory_record_audit_event(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    event = AuditEvent.objects.get(verb="memory.record", target_id=memory.id)
    assert event.organization == cast.org_a
    assert event.actor_token == principal.token
    assert event.data["scope"] == "project"
    assert event.data["title"] == GOOD["title"]


def test_tags_are_lower_cased_stripped_and_de_duplicated_in_order(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal, tags=["Go", " errors ", "go", "ERRORS", "", "Logging"])
    memory.refresh_from_db()
    assert memory.tags == ["go", "errors", "logging"]


# --- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"description": ""}, "description"),
        ({"content": None}, "content"),
        ({"outcome": "maybe"}, "outcome"),
        ({"outcome": None}, "outcome"),
        ({"tags": "go,errors"}, "tags"),
        ({"tags": ["go", 3]}, "tags"),
        ({"tags": ["x" * 51]}, "tags"),
        ({"tags": [f"tag{i}" for i in range(21)]}, "tags"),
        ({"tags": ["nul\x00tag"]}, "tags"),
        ({"content": "nul\x00content"}, "content"),
        ({"kind": "dream"}, "kind"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(cast, make_token, overrides, field):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    before = counts()
    with pytest.raises(InvalidInput) as excinfo:
        record(principal, **overrides)
    assert excinfo.value.field == field
    assert counts() == before


def test_a_title_of_exactly_200_characters_and_20_tags_of_50_characters_are_accepted(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    tags = [f"{i:02d}" + "t" * 48 for i in range(20)]
    memory = record(principal, title="Wrap errors " + "x" * 188, tags=tags)
    memory.refresh_from_db()
    assert len(memory.title) == 200
    assert memory.tags == tags


def test_duplicate_tags_do_not_count_towards_the_limit_of_20(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal, tags=[f"tag{i % 20}" for i in range(40)])
    assert len(memory.tags) == 20


# --- placement -----------------------------------------------------------------------------------


def test_a_project_restricted_token_writes_to_its_project(cast, make_token):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    assert memory.project == cast.project_a
    assert memory.team is None
    assert memory.scope == "project"


def test_an_unrestricted_token_reaching_several_projects_must_name_one(cast, make_token):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    _, principal = make_token(cast.org_a)
    before = counts()
    with pytest.raises(InvalidInput) as excinfo:
        record(principal)
    assert excinfo.value.field == "project"
    assert counts() == before
    assert record(principal, project="mobile").project.slug == "mobile"


def test_the_error_for_several_projects_lists_the_slugs_to_choose_from(cast, make_token):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    _, principal = make_token(cast.org_a)
    with pytest.raises(InvalidInput, match=r"\(mobile, web-app\)"):
        record(principal)


def test_an_org_wide_token_in_an_org_with_one_project_writes_to_that_project(cast, make_token):
    _, principal = make_token(cast.org_a)
    assert principal.project_ids is None
    memory = record(principal)
    assert memory.project == cast.project_a
    assert memory.organization == cast.org_a


def test_an_org_wide_token_in_an_org_with_no_project_is_told_to_create_one(cast, make_token):
    cast.project_a.delete()
    _, principal = make_token(cast.org_a)
    with pytest.raises(InvalidInput, match="no project") as excinfo:
        record(principal)
    assert excinfo.value.field == "project"


def test_naming_a_project_of_another_org_is_not_found(cast, make_token):
    _, principal = make_token(cast.org_a)
    before = counts()
    with pytest.raises(NotFound) as excinfo:
        record(principal, project=cast.project_b.slug)
    assert excinfo.value.field == "project"
    assert counts() == before


def test_a_project_restricted_token_cannot_write_to_another_project_of_its_org(cast, make_token):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    with pytest.raises(NotFound):
        record(principal, project="mobile")
    assert not Memory.objects.filter(project__slug="mobile").exists()


def test_a_project_slug_with_a_nul_byte_is_a_clear_error_not_a_database_error(cast, make_token):
    _, principal = make_token(cast.org_a)
    before = counts()
    with pytest.raises((InvalidInput, NotFound)) as excinfo:
        record(principal, project="web\x00app")
    assert excinfo.value.field == "project"
    assert counts() == before


def test_org_scope_with_an_unrestricted_token_makes_an_org_memory(cast, make_token):
    _, principal = make_token(cast.org_a)
    memory = record(principal, scope="org")
    memory.refresh_from_db()
    assert memory.project is None
    assert memory.team is None
    assert memory.scope == "org"
    assert AuditEvent.objects.get(verb="memory.record", target_id=memory.id).data["scope"] == "org"


def test_org_scope_with_a_project_restricted_token_is_forbidden(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    before = counts()
    with pytest.raises(Forbidden):
        record(principal, scope="org")
    assert counts() == before


def test_an_unknown_scope_is_invalid_and_names_scope(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    with pytest.raises(InvalidInput) as excinfo:
        record(principal, scope="galaxy")
    assert excinfo.value.field == "scope"


@pytest.fixture
def teams_org(cast):
    cast.org_a.plan = "teams"
    cast.org_a.save()
    team = TeamFactory(organization=cast.org_a, slug="platform")
    cast.project_a.team = team
    cast.project_a.save()
    return team


def test_team_scope_with_a_team_restricted_token_makes_a_team_memory(cast, make_token, teams_org):
    _, principal = make_token(cast.org_a, teams=[teams_org])
    memory = record(principal, scope="team", project="web-app")
    memory.refresh_from_db()
    assert memory.team == teams_org
    assert memory.project is None
    assert memory.scope == "team"


def test_team_scope_with_a_project_restricted_token_is_forbidden(cast, make_token, teams_org):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    before = counts()
    with pytest.raises(Forbidden):
        record(principal, scope="team")
    assert counts() == before


def test_team_scope_for_a_project_without_a_team_is_a_conflict_naming_the_project(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    with pytest.raises(Conflict) as excinfo:
        record(principal, scope="team")
    assert excinfo.value.field == "scope" and "'web-app' is in none" in excinfo.value.message


def test_a_viewer_cannot_record(cast):
    viewer = cast.principal(cast.bob)
    before = counts()
    with pytest.raises(Forbidden):
        record(viewer, project="web-app")
    assert counts() == before


def test_an_owner_on_the_dashboard_can_record_into_a_named_project(cast):
    memory = record(cast.principal(cast.alice), project="web-app")
    assert memory.project == cast.project_a
    assert memory.created_by_user == cast.alice
    assert AuditEvent.objects.get(verb="memory.record", target_id=memory.id).actor_user == cast.alice


# --- plan limits ---------------------------------------------------------------------------------


@pytest.fixture
def free_limit_two(cast, monkeypatch):
    free = plans.PLANS[plans.PLAN_FREE]
    monkeypatch.setitem(plans.PLANS, plans.PLAN_FREE, dataclasses.replace(free, limits={**free.limits, "memories": 2}))
    cast.org_a.plan = plans.PLAN_FREE
    cast.org_a.save()


def test_the_free_plans_memory_limit_refuses_one_more_memory(cast, make_token, free_limit_two):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    record(principal, title="one")
    record(principal, title="two")
    before = counts()
    with pytest.raises(LimitExceeded):
        record(principal, title="three")
    assert counts() == before


def test_archived_memories_do_not_count_towards_the_memory_limit(cast, make_token, free_limit_two):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    first = record(principal, title="one")
    record(principal, title="two")
    memory_archive(principal=principal, memory=first)
    assert record(principal, title="three").state == Memory.STATE_ACTIVE


def test_restoring_a_memory_cannot_push_the_org_past_its_memory_limit(cast, make_token, free_limit_two):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    first = record(principal, title="one")
    record(principal, title="two")
    memory_archive(principal=principal, memory=first)
    record(principal, title="three")
    with pytest.raises(LimitExceeded):
        memory_restore(principal=principal, memory=first)
    assert Memory.objects.get(pk=first.pk).state == Memory.STATE_ARCHIVED
    assert Memory.objects.filter(organization=cast.org_a, state=Memory.STATE_ACTIVE).count() == 2


def test_the_memory_limit_counts_only_the_callers_org(cast, make_token, free_limit_two):
    _, principal_b = make_token(cast.org_b, projects=[cast.project_b])
    cast.org_b.plan = plans.PLAN_FREE
    cast.org_b.save()
    record(principal_b, title="b-one")
    record(principal_b, title="b-two")
    _, principal_a = make_token(cast.org_a, projects=[cast.project_a])
    record(principal_a, title="a-one")
    record(principal_a, title="a-two")
    assert Memory.objects.filter(organization=cast.org_a).count() == 2


# --- update --------------------------------------------------------------------------------------


def test_updating_the_text_re_embeds_and_audits_the_old_values(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    old_embedding = list(Memory.objects.get(pk=memory.pk).embedding)
    updated = memory_update(
        principal=principal, memory=memory, changes={"content": "Prefer errors.Join when collecting many failures."}
    )
    stored = Memory.objects.get(pk=memory.pk)
    assert stored.content == "Prefer errors.Join when collecting many failures."
    assert list(stored.embedding) != old_embedding
    assert len(stored.embedding) == settings.EMBEDDING_DIMENSIONS
    assert stored.embedding_model
    assert updated.updated_at > memory.created_at
    event = AuditEvent.objects.get(verb="memory.update", target_id=memory.id)
    assert event.data["fields"] == ["content"]
    assert "content" not in event.data["before"]


def test_updating_only_tags_keeps_the_embedding_and_normalises_the_tags(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal, tags=["go"])
    old_embedding = list(Memory.objects.get(pk=memory.pk).embedding)
    memory_update(principal=principal, memory=memory, changes={"tags": ["Errors", "errors", "GO"]})
    stored = Memory.objects.get(pk=memory.pk)
    assert stored.tags == ["errors", "go"]
    assert list(stored.embedding) == old_embedding
    event = AuditEvent.objects.get(verb="memory.update", target_id=memory.id)
    assert event.data["before"] == {"tags": ["go"]}


def test_an_invalid_update_names_the_field_and_changes_nothing(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    with pytest.raises(InvalidInput) as excinfo:
        memory_update(principal=principal, memory=memory, changes={"title": "", "content": "new"})
    assert excinfo.value.field == "title"
    with pytest.raises(InvalidInput) as excinfo:
        memory_update(principal=principal, memory=memory, changes={"confidence": 1.0})
    assert excinfo.value.field == "confidence"
    stored = Memory.objects.get(pk=memory.pk)
    assert (stored.title, stored.content, stored.confidence) == (GOOD["title"], GOOD["content"], pytest.approx(0.8))
    assert not AuditEvent.objects.filter(verb="memory.update").exists()


def test_a_viewer_cannot_update(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    with pytest.raises(Forbidden):
        memory_update(principal=cast.principal(cast.bob), memory=memory, changes={"title": "hijacked"})
    assert Memory.objects.get(pk=memory.pk).title == GOOD["title"]


# --- archive / restore ---------------------------------------------------------------------------


def test_archive_and_restore_round_trip(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)

    archived = memory_archive(principal=principal, memory=memory, reason=Memory.ARCHIVED_STALE)
    stored = Memory.objects.get(pk=memory.pk)
    assert (stored.state, stored.archived_reason, stored.tier) == ("archived", "stale", "archived")
    assert stored.archived_at is not None
    assert archived.state == "archived"
    assert AuditEvent.objects.get(verb="memory.archive", target_id=memory.id).data == {"reason": "stale"}

    restored = memory_restore(principal=principal, memory=stored)
    stored = Memory.objects.get(pk=memory.pk)
    assert (stored.state, stored.archived_reason, stored.tier) == ("active", "", "warm")
    assert stored.archived_at is None
    assert restored.is_active
    assert AuditEvent.objects.get(verb="memory.restore", target_id=memory.id).data == {"was": "stale"}


def test_archiving_twice_writes_one_audit_event(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    memory_archive(principal=principal, memory=memory)
    memory_archive(principal=principal, memory=memory)
    assert AuditEvent.objects.filter(verb="memory.archive", target_id=memory.id).count() == 1
    assert Memory.objects.get(pk=memory.pk).archived_reason == Memory.ARCHIVED_MANUAL


def test_an_unknown_archive_reason_is_invalid(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    with pytest.raises(InvalidInput) as excinfo:
        memory_archive(principal=principal, memory=memory, reason="bored")
    assert excinfo.value.field == "reason"
    assert Memory.objects.get(pk=memory.pk).state == Memory.STATE_ACTIVE


def test_an_archived_memory_is_still_readable_through_memory_get(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    memory_archive(principal=principal, memory=memory)
    assert memory_get(principal, memory.id).state == Memory.STATE_ARCHIVED


def test_another_orgs_memory_is_not_found_through_memory_get_so_it_cannot_be_archived(cast, make_token):
    _, principal_a = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal_a)
    _, principal_b = make_token(cast.org_b)
    with pytest.raises(NotFound) as excinfo:
        memory_get(principal_b, memory.id)
    assert excinfo.value.field == "memory_id"
    with pytest.raises((NotFound, Forbidden)):
        memory_archive(principal=principal_b, memory=memory)
    assert Memory.objects.get(pk=memory.pk).state == Memory.STATE_ACTIVE
    assert not AuditEvent.objects.filter(verb="memory.archive").exists()


def test_memory_get_hides_another_projects_memory_from_a_project_restricted_token(cast, make_token):
    mobile = ProjectFactory(organization=cast.org_a, slug="mobile")
    _, owner_token = make_token(cast.org_a)
    memory = record(owner_token, project=mobile.slug)
    _, restricted = make_token(cast.org_a, projects=[cast.project_a])
    with pytest.raises(NotFound):
        memory_get(restricted, memory.id)
    with pytest.raises(Forbidden):
        memory_archive(principal=restricted, memory=memory)
    assert Memory.objects.get(pk=memory.pk).state == Memory.STATE_ACTIVE


@pytest.mark.parametrize("bad_id", ["mem_does_not_exist", "", "x" * 500, 42, None, "mem_\x00x"])
def test_memory_get_treats_missing_and_malformed_ids_as_not_found(cast, make_token, bad_id):
    _, principal = make_token(cast.org_a)
    with pytest.raises(NotFound):
        memory_get(principal, bad_id)
