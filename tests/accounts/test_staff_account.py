"""The staff account as docs/commands.md#a-staff-account makes it: the page's own command, run as written
(without its prompt), gives an account that signs in with its email on the dashboard's sign-in page and
reaches what only staff reach — the system page's "Check the LLM" and the admin's LLM prices."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

DOCS = Path(__file__).resolve().parents[2] / "docs"
PASSWORD = "staff-pass-4821-long"


def documented_command() -> list[str]:
    """The ``manage.py`` line of the staff-account section, split as a shell would."""
    page = (DOCS / "commands.md").read_text()
    section = page.split("## A staff account", 1)[1].split("\n## ", 1)[0]
    line = next(line for line in section.splitlines() if "manage.py createsuperuser" in line)
    words = shlex.split(line)
    return words[words.index("manage.py") + 1 :]


def test_the_staff_account_section_gives_the_command_and_the_pages_that_need_it_link_there():
    assert documented_command()[0] == "createsuperuser"
    for page in ("llm.md", "llm-spend.md", "observability.md"):
        assert "commands.md#a-staff-account" in (DOCS / page).read_text(), page


@pytest.fixture
def staff_made_as_documented(db, monkeypatch):
    name, *options = documented_command()
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", PASSWORD)
    call_command(name, *options, "--noinput", verbosity=0)
    email = re.search(r"--email[= ](\S+)", " ".join(options)).group(1)  # type: ignore[union-attr]
    return get_user_model().objects.get(email=email)


def test_the_documented_command_makes_an_account_that_signs_in_with_its_email(client, staff_made_as_documented):
    response = client.post("/accounts/login/", {"login": staff_made_as_documented.email, "password": PASSWORD})

    assert response.status_code == 302 and "/accounts/login/" not in response["Location"]
    assert staff_made_as_documented.is_staff


def test_the_staff_account_sees_check_the_llm_and_the_price_table(client, staff_made_as_documented):
    client.post("/accounts/login/", {"login": staff_made_as_documented.email, "password": PASSWORD})

    system = client.get("/system/")
    prices = client.get("/admin/reasoningbank/llmprice/")

    assert system.status_code == 200 and 'id="llm-check-run"' in system.content.decode()
    assert prices.status_code == 200


def test_an_organization_owner_is_not_staff_and_reaches_neither(client, cast):
    client.force_login(cast.alice)

    assert 'id="llm-check-run"' not in client.get("/system/").content.decode()
    assert client.get("/admin/reasoningbank/llmprice/").status_code == 302  # to the admin's sign-in
