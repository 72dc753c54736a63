"""A transactional test's teardown empties what the test wrote and keeps what ``post_migrate`` made, or
falls back to Django's flush (tests/transactional_reset.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from accounts.models import Organization
from tests.factories import OrganizationFactory
from tests.transactional_reset import flushed, tables_clear


def table_counts() -> dict[str, int]:
    return {
        "organizations": Organization.objects.count(),
        "content types": ContentType.objects.count(),
        "permissions": Permission.objects.count(),
    }


@pytest.mark.django_db(transaction=True)
def test_the_rows_a_test_left_are_deleted_and_the_content_types_and_permissions_kept() -> None:
    flushed(connection)
    before = table_counts()
    OrganizationFactory(slug="left-behind")
    assert tables_clear(connection)
    assert table_counts() == {**before, "organizations": 0}
    assert before["content types"] > 0 and before["permissions"] > 0


@pytest.mark.django_db(transaction=True)
def test_a_test_that_changed_the_permissions_gets_djangos_full_flush_instead() -> None:
    flushed(connection)
    OrganizationFactory(slug="left-behind")
    content_type = ContentType.objects.get_for_model(Organization)
    Permission.objects.create(name="Can audit", codename="audit_organization", content_type=content_type)
    assert not tables_clear(connection)
    assert Organization.objects.filter(slug="left-behind").exists()  # nothing deleted: the flush does it


@pytest.mark.django_db(transaction=True)
def test_without_a_full_flush_on_record_nothing_is_cleared() -> None:
    from tests import transactional_reset

    OrganizationFactory(slug="left-behind")
    transactional_reset.after_flush.clear()  # a process's first transactional test
    assert not tables_clear(connection)
    assert Organization.objects.filter(slug="left-behind").exists()


@pytest.mark.django_db(transaction=True)
def test_every_transactional_test_ends_through_the_quick_teardown() -> None:
    from django.test.testcases import TransactionTestCase

    assert getattr(TransactionTestCase._fixture_teardown, "fast", False)
