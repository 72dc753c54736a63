from unittest import mock

from django.db import OperationalError


def test_healthz_reports_ok_when_the_database_answers(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["database"] == "ok"


def test_healthz_is_503_when_the_database_is_down(client, db):
    with mock.patch("reasoningbank.views.connection.cursor", side_effect=OperationalError("down")):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "unavailable"
