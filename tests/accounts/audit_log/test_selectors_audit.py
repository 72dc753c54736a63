"""The audit log's reads that other pages use (accounts/audit_log/selectors.py, through ``accounts.selectors``)."""

from __future__ import annotations


def test_the_overview_lists_changes_but_no_sign_in_nor_export_of_the_log(cast) -> None:
    from accounts.models import AuditEvent
    from accounts.selectors import audit_changes_only
    from accounts.services import audit_record

    for verb in ("auth.sign_in", "auth.sign_in_failed", "auth.sign_out", "audit.export", "token.create"):
        audit_record(organization=cast.org_a, actor=None, verb=verb)
    kept = audit_changes_only(AuditEvent.objects.filter(organization=cast.org_a))
    assert sorted(kept.values_list("verb", flat=True)) == ["token.create"]
