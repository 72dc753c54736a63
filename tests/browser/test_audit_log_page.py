"""Settings → Audit log in a real browser (docs/identity.md#the-audit-log): the owner signs in (which the log
records, with the browser's address and User-Agent), opens the page from the settings menu, pages through
the log with htmx, narrows it by category and by actor, and reaches the empty state of a filter that
matches nothing; it exports what it filtered."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from accounts.services import audit_record

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def log(cast):
    """Set up before the browser opens (ORM work under Playwright's loop leaves a connection behind)."""
    alice = cast.principal(cast.alice)
    start = timezone.now() - timedelta(hours=2)
    for minute in range(55):
        event = audit_record(organization=cast.org_a, actor=alice, verb="token.create", data={"label": f"ci-{minute}"})
        AuditEvent.objects.filter(pk=event.pk).update(created_at=start + timedelta(minutes=minute))
    for minute, verb in enumerate(("webhook.create", "webhook.update", "webhook.rotate_secret")):
        event = audit_record(organization=cast.org_a, actor=None, verb=verb)
        AuditEvent.objects.filter(pk=event.pk).update(created_at=start + timedelta(minutes=60 + minute))
    audit_record(organization=cast.org_b, actor=cast.principal(cast.charlie), verb="webhook.delete")


def body_rows(page) -> list[str]:
    return page.locator("#results table.audit tbody tr").all_inner_texts()


def test_the_owner_pages_and_filters_the_audit_log(log, live_server, page, shoot):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    page.goto(f"{base}/settings/")
    page.get_by_role("link", name="Audit log").click()
    page.wait_for_url(f"{base}/settings/audit/")
    rows = body_rows(page)
    assert len(rows) == 50
    assert "auth.sign_in" in rows[0] and "127.0.0.1" in rows[0] and "Mozilla/5.0" in rows[0]  # our own sign-in
    assert "charlie" not in page.locator("#results").inner_text()  # globex's row
    shoot("audit-log")

    page.get_by_role("link", name="Next →").click()
    page.wait_for_url("**/settings/audit/?page=2")
    assert len(body_rows(page)) == 59 - 50
    assert "Page 2 of 2" in page.locator("#results").inner_text()

    page.select_option("select[name=category]", "webhook")  # htmx: the results swap in place
    page.wait_for_url("**category=webhook**")
    page.wait_for_function("document.querySelectorAll('#results tbody tr').length === 3")
    verbs = [row.split()[2] for row in body_rows(page)]
    assert verbs == ["webhook.rotate_secret", "webhook.update", "webhook.create"]
    with page.expect_download() as download:  # the export takes the filters on the page
        page.get_by_role("button", name="CSV").click()
    exported = download.value.path().read_text()
    assert exported.splitlines()[0].startswith("id,created_at,verb") and len(exported.splitlines()) == 1 + 3

    page.fill("input[name=actor]", "nobody-by-that-name")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**actor=nobody-by-that-name**")
    empty = page.locator("#results .empty")
    empty.wait_for()
    assert "No rows match these filters" in empty.inner_text()
    shoot("audit-log-empty-filter")
