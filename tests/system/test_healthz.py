"""/healthz: liveness only — the process answers, whatever the database, worker or queue do
(docs/observability.md#health; readiness is /readyz, tests/system/test_readyz.py)."""

from unittest import mock

from django.db import OperationalError


def test_healthz_answers_200_ok(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert "no-store" in response["Cache-Control"]


def test_healthz_stays_200_with_the_database_down_and_touches_no_table(client, db, django_assert_num_queries):
    with mock.patch("django.db.backends.utils.CursorWrapper.execute", side_effect=OperationalError("down")):
        with django_assert_num_queries(0):
            response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
