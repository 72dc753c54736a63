"""A scope is explained in the same words wherever a person grants it: the token form of the settings
and the OAuth consent page (accounts.models.SCOPE_HELP)."""

from __future__ import annotations

import html

import pytest
from django.test import Client

from tests.accounts.oauth.oauth_flow import Flow, dcr_client

pytestmark = pytest.mark.django_db

WRITE_HELP = "record memories, feedback, outcomes and sessions"


def test_the_token_form_and_the_consent_page_explain_memories_write_alike(cast):
    web = Client()
    web.force_login(cast.alice)
    tokens_page = html.unescape(web.get("/settings/tokens/").content.decode())
    consent_page = html.unescape(web.get(Flow(dcr_client(Client())).authorize_url()).content.decode())
    assert WRITE_HELP in tokens_page
    assert WRITE_HELP in consent_page
