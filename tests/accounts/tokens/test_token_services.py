from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.access import principal_for_token
from accounts.models import ApiToken, AuditEvent
from accounts.tokens.services import token_authenticate, token_create, token_digest, token_revoke
from reasoningbank.errors import InvalidInput
from tests.factories import ProjectFactory, TeamFactory


def test_a_new_token_is_shown_once_and_only_its_digest_is_stored(cast):
    token, raw = token_create(organization=cast.org_a, label="ci")
    assert raw.startswith("rb_") and len(raw) >= 3 + 43
    stored = ApiToken.objects.get(pk=token.pk)
    assert stored.digest == token_digest(raw)
    assert raw not in {stored.digest, stored.prefix, stored.label}
    assert stored.prefix == raw[:10]
    assert sorted(stored.scopes) == ["consolidation:run", "memories:read", "memories:write"]


def test_a_token_authenticates_until_it_is_revoked(cast):
    token, raw = token_create(organization=cast.org_a, label="agent")
    assert token_authenticate(raw) == token
    token_revoke(token=token, actor=None)
    assert token_authenticate(raw) is None
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="token.revoke").count() == 1


def test_an_expired_token_no_longer_authenticates(cast):
    token, raw = token_create(organization=cast.org_a, label="short", expires_at=timezone.now() + timedelta(hours=1))
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert token_authenticate(raw) is None


def test_unknown_or_malformed_tokens_do_not_authenticate(cast):
    token_create(organization=cast.org_a, label="x")
    assert token_authenticate("rb_" + "a" * 43) is None
    assert token_authenticate("not-a-token") is None
    assert token_authenticate("") is None


def test_last_used_is_written_at_most_once_per_interval(cast, settings):
    settings.TOKEN_LAST_USED_INTERVAL_SECONDS = 300
    token, raw = token_create(organization=cast.org_a, label="busy")
    token_authenticate(raw)
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    token_authenticate(raw)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=10))
    token_authenticate(raw)
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first - timedelta(minutes=10)


def test_unknown_scopes_are_rejected_with_the_allowed_list(cast):
    with pytest.raises(InvalidInput, match="unknown scope"):
        token_create(organization=cast.org_a, label="bad", scopes=["memories:delete"])
    assert not ApiToken.objects.filter(label="bad").exists()


def test_a_token_cannot_be_restricted_to_another_orgs_project(cast):
    with pytest.raises(InvalidInput, match="this organization"):
        token_create(organization=cast.org_a, label="x", projects=[cast.project_b])


def test_creating_a_token_writes_an_audit_event_without_the_secret(cast):
    _, raw = token_create(organization=cast.org_a, label="audited")
    event = AuditEvent.objects.get(organization=cast.org_a, verb="token.create")
    assert event.data["label"] == "audited"
    assert raw not in str(event.data)


def test_authenticating_loads_the_org_and_restriction_in_one_query(cast, django_assert_num_queries):
    token, raw = token_create(organization=cast.org_a, label="agent", projects=[cast.project_a])
    token_authenticate(raw)  # first use writes last_used_at
    with django_assert_num_queries(1):
        principal = principal_for_token(token_authenticate(raw))
        assert principal.organization == cast.org_a and principal.token == token
        assert principal.project_ids == frozenset({cast.project_a.id}) and principal.team_ids == frozenset()
        assert principal.only_project == cast.project_a and principal.only_project.slug == "web-app"


def test_only_a_single_project_token_carries_its_project(cast):
    team = TeamFactory(organization=cast.org_a, slug="platform")
    second = ProjectFactory(organization=cast.org_a, slug="api", team=team)
    cases = {
        "unrestricted": ({}, None, None),
        "two projects": ({"projects": [cast.project_a, second]}, {cast.project_a.id, second.id}, None),
        "project and team": ({"projects": [cast.project_a], "teams": [team]}, {cast.project_a.id}, None),
        "one project": ({"projects": [second]}, {second.id}, second),
    }
    for label, (restriction, project_ids, only) in cases.items():
        _, raw = token_create(organization=cast.org_a, label=label, **restriction)
        principal = principal_for_token(token_authenticate(raw))
        assert principal.project_ids == (None if project_ids is None else frozenset(project_ids)), label
        assert principal.only_project == only, label
