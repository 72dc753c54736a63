"""The scrubber against the secret-format table (tests/reasoningbank/secret_table.py): every secret
is replaced by exactly its marker with everything around it kept, alone and inside a JSON-encoded
trace; every look-alike comes through untouched. ``bench/scrubbing.py`` scores the same rows for
docs/security/secret-scrubbing.md.
"""

from __future__ import annotations

import json

import pytest

from reasoningbank.scrubbing import OWN_TOKEN_KINDS, SECRET_KINDS, ScrubResult, scrub_secrets
from tests.reasoningbank.secret_table import LOOK_ALIKES, SECRETS, LookAlike, Secret


def test_the_table_has_at_least_80_formats_and_40_look_alikes_with_unique_names() -> None:
    assert len({row.name for row in SECRETS}) == len(SECRETS) >= 80
    assert len({row.name for row in LOOK_ALIKES}) == len(LOOK_ALIKES) >= 40


def test_every_kind_the_scrubber_reports_has_a_row() -> None:
    assert {row.kind for row in SECRETS} == set(SECRET_KINDS)


@pytest.mark.parametrize("row", SECRETS, ids=[row.name for row in SECRETS])
def test_each_secret_is_replaced_by_its_marker_and_nothing_else_changes(row: Secret) -> None:
    result = scrub_secrets(row.text)
    assert result == ScrubResult(text=row.expected, redactions=1, kinds=(row.kind,))
    assert result.own_tokens == ((row.secret,) if row.kind in OWN_TOKEN_KINDS else ())


@pytest.mark.parametrize("row", SECRETS, ids=[row.name for row in SECRETS])
def test_each_secret_is_found_inside_a_json_encoded_trace_too(row: Secret) -> None:
    encoded = json.dumps({"tool": "bash", "output": f"$ cat notes\n{row.text}\n"})
    scrubbed = scrub_secrets(encoded)
    assert row.secret not in scrubbed.text
    assert json.loads(scrubbed.text)["output"] == f"$ cat notes\n{row.expected}\n"


@pytest.mark.parametrize("row", LOOK_ALIKES, ids=[row.name for row in LOOK_ALIKES])
def test_each_look_alike_survives_untouched(row: LookAlike) -> None:
    assert scrub_secrets(row.text) == ScrubResult(text=row.text, redactions=0, kinds=())


def test_the_whole_table_scrubbed_twice_changes_nothing_more() -> None:
    once = scrub_secrets("\n".join(row.text for row in [*SECRETS, *LOOK_ALIKES]))
    assert once.redactions == len(SECRETS)
    assert scrub_secrets(once.text) == ScrubResult(text=once.text, redactions=0, kinds=())
