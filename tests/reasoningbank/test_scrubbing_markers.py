"""``redaction_markers_remove`` (reasoningbank/scrubbing/markers.py): a text written from a scrubbed trace
loses its ``[REDACTED:…]`` markers and stays readable — ``<secret>`` where a value stands, nothing in prose."""

from __future__ import annotations

import pytest

from reasoningbank.scrubbing import scrub_secrets
from reasoningbank.scrubbing.markers import SECRET_PLACEHOLDER, redaction_markers_remove


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("export API_KEY=[REDACTED:secret_assignment] before the deploy", "export API_KEY=<secret> before the deploy"),
        ('password = "[REDACTED:secret_assignment]"', 'password = "<secret>"'),
        ("postgres://app:[REDACTED:url_password]@db:5432/app", "postgres://app:<secret>@db:5432/app"),
        ('curl -H "Authorization: Bearer [REDACTED:github_token]" https://api',
         'curl -H "Authorization: Bearer <secret>" https://api'),
        ("mysql -p[REDACTED:mysql_password] -u root", "mysql -p<secret> -u root"),
        ("Run `gh auth login --with-token [REDACTED:github_token]` once",
         "Run `gh auth login --with-token <secret>` once"),
    ],
)  # fmt: skip
def test_where_a_value_stands_the_marker_becomes_a_value_to_fill_in(written, kept):
    assert redaction_markers_remove(written) == kept


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("The deploy failed because the AWS key [REDACTED:aws_access_key_id] was expired.",
         "The deploy failed because the AWS key was expired."),
        ("Rotate the token [REDACTED:github_token].", "Rotate the token."),
        ("The token ([REDACTED:github_token]) had expired", "The token had expired"),
        ("[REDACTED:pem_private_key]\nKeep private keys out of the repository.",
         "Keep private keys out of the repository."),
    ],
)  # fmt: skip
def test_in_prose_the_marker_goes_with_the_space_and_brackets_it_leaves(written, kept):
    assert redaction_markers_remove(written) == kept


def test_a_text_without_markers_is_returned_as_it_is():
    text = "  Keep [the brackets] and <placeholders> as written.\n"
    assert redaction_markers_remove(text) is text


def test_no_marker_the_scrubber_writes_survives():
    scrubbed = scrub_secrets(
        "export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4 + " and the AWS key AKIAIOSFODNN7EXAMPLE"
    ).text
    assert "[REDACTED:" in scrubbed

    cleaned = redaction_markers_remove(scrubbed)

    assert "[REDACTED" not in cleaned and SECRET_PLACEHOLDER in cleaned
