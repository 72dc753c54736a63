"""Secret scrubbing of session traces (pure text, no Django, no DB).

The secrets below are fake but have the real formats; they are assembled from pieces so that
secret scanners on this repository do not flag the test file itself.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoningbank.scrubbing import SECRET_KINDS, ScrubResult, scrub_secrets

ALNUM40 = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789aBcD"


def redacted(text: str) -> str:
    return scrub_secrets(text).text


def assert_scrubbed(text: str, expected: str, kind: str, count: int = 1) -> None:
    result = scrub_secrets(text)
    assert result == ScrubResult(text=expected, redactions=count, kinds=(kind,))


# --- one test per kind ------------------------------------------------------------------------


def test_pem_private_key_block_is_redacted_across_lines() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nAbCd+/==\n-----END RSA PRIVATE KEY-----"
    assert_scrubbed(f"cat id_rsa\n{key}\ndone", "cat id_rsa\n[REDACTED:private_key]\ndone", "private_key")


def test_pem_key_inside_a_json_escaped_trace_is_redacted() -> None:
    text = '{"output": "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXk\\n-----END OPENSSH PRIVATE KEY-----\\n"}'
    assert redacted(text) == '{"output": "[REDACTED:private_key]\\n"}'


def test_truncated_pem_key_without_end_marker_is_still_redacted() -> None:
    text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nAbCdEf==\nThe output was cut here"
    assert redacted(text) == "[REDACTED:private_key]\nThe output was cut here"


def test_public_keys_and_certificates_are_not_redacted() -> None:
    text = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----"
    assert redacted(text) == text


def test_anthropic_key_is_redacted() -> None:
    key = "sk-ant-" + "api03-" + ALNUM40 + "_-xyz"
    assert_scrubbed(
        f"export ANTHROPIC_API_KEY={key}", "export ANTHROPIC_API_KEY=[REDACTED:anthropic_key]", "anthropic_key"
    )


@pytest.mark.parametrize("prefix", ["sk-", "sk-proj-", "sk-svcacct-"])
def test_openai_keys_are_redacted(prefix: str) -> None:
    assert_scrubbed(f"key: {prefix}{ALNUM40} ok", "key: [REDACTED:openai_key] ok", "openai_key")


def test_reasoningbank_token_is_redacted() -> None:
    token = "rb_" + "q8Zk3_Vd-9LmPwXy2TnB4cRf6HsJ0aEuGiKoNpQ1vW"
    assert_scrubbed(
        f"Authorization header was set from {token}.",
        "Authorization header was set from [REDACTED:reasoningbank_token].",
        "reasoningbank_token",
    )


@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])
def test_github_classic_tokens_are_redacted(prefix: str) -> None:
    token = prefix + ALNUM40[:36]
    assert_scrubbed(f"git push https://{token}", "git push https://[REDACTED:github_token]", "github_token")


def test_github_fine_grained_token_is_redacted() -> None:
    token = "github_pat_" + "11ABCDEFG0" + ALNUM40 + "_" + ALNUM40
    assert_scrubbed(f"GH_TOKEN={token}", "GH_TOKEN=[REDACTED:github_token]", "github_token")


@pytest.mark.parametrize("prefix", ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"])
def test_slack_tokens_are_redacted(prefix: str) -> None:
    assert_scrubbed(f"slack {prefix}1234567890-98765-AbCdEf", "slack [REDACTED:slack_token]", "slack_token")


@pytest.mark.parametrize("prefix", ["AKIA", "ASIA"])
def test_aws_access_key_ids_are_redacted(prefix: str) -> None:
    assert_scrubbed(f"id={prefix}IOSFODNN7EXAMPLE", "id=[REDACTED:aws_access_key_id]", "aws_access_key_id")


def test_aws_secret_access_key_value_is_redacted_and_its_name_kept() -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
    assert_scrubbed(
        f"aws_secret_access_key = {secret}\n",
        "aws_secret_access_key = [REDACTED:aws_secret_access_key]\n",
        "aws_secret_access_key",
    )
    assert redacted(f'AWS_SECRET_ACCESS_KEY="{secret}"') == 'AWS_SECRET_ACCESS_KEY="[REDACTED:aws_secret_access_key]"'


def test_google_api_key_is_redacted() -> None:
    key = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
    assert_scrubbed(f"?key={key}&q=1", "?key=[REDACTED:google_api_key]&q=1", "google_api_key")


@pytest.mark.parametrize("prefix", ["sk_live_", "rk_live_"])
def test_stripe_live_keys_are_redacted(prefix: str) -> None:
    key = prefix + "4eC39HqLyjWDarjtT1zdp7dc"
    assert_scrubbed(f"stripe.api_key = {key}", "stripe.api_key = [REDACTED:stripe_key]", "stripe_key")


def test_jwt_is_redacted() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    assert_scrubbed(f"token {jwt} expired", "token [REDACTED:jwt] expired", "jwt")


def test_bearer_authorization_header_is_redacted_and_the_header_kept() -> None:
    assert_scrubbed(
        "curl -H 'Authorization: Bearer abcdef1234567890' https://api.example.com",
        "curl -H 'Authorization: Bearer [REDACTED:authorization]' https://api.example.com",
        "authorization",
    )


def test_basic_authorization_header_in_json_is_redacted() -> None:
    assert_scrubbed(
        '{"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}',
        '{"Authorization": "Basic [REDACTED:authorization]"}',
        "authorization",
    )


def test_bare_bearer_token_is_redacted() -> None:
    assert redacted("sent Bearer 0123456789abcdefABCDEF.xyz") == "sent Bearer [REDACTED:authorization]"


def test_password_in_a_url_is_redacted_but_scheme_user_and_host_are_kept() -> None:
    assert_scrubbed(
        "DATABASE_URL=postgres://admin:s3cr3t@db.example.com:5432/app",
        "DATABASE_URL=postgres://admin:[REDACTED:url_password]@db.example.com:5432/app",
        "url_password",
    )
    assert redacted("redis://:hunter2@localhost:6379/0") == "redis://:[REDACTED:url_password]@localhost:6379/0"
    assert redacted("https://bob:p@ss@git.example.com/x") == "https://bob:[REDACTED:url_password]@git.example.com/x"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('password = "hunter2"', 'password = "[REDACTED:secret_assignment]"'),
        ("DB_PASSWORD=s3cr3t", "DB_PASSWORD=[REDACTED:secret_assignment]"),
        ("passwd: 'p@ss w0rd!'", "passwd: '[REDACTED:secret_assignment]'"),
        ("pwd=abc123", "pwd=[REDACTED:secret_assignment]"),
        ('SECRET_KEY = "django-insecure-x1"', 'SECRET_KEY = "[REDACTED:secret_assignment]"'),
        ('{"api_key": "abc123xyz"}', '{"api_key": "[REDACTED:secret_assignment]"}'),
        ("apikey=abc123xyz", "apikey=[REDACTED:secret_assignment]"),
        ('{\\"access_token\\": \\"tok123\\"}', '{\\"access_token\\": \\"[REDACTED:secret_assignment]\\"}'),
        ("auth_token := t0k3n", "auth_token := [REDACTED:secret_assignment]"),
        ("'client_secret' => 'abc'", "'client_secret' => '[REDACTED:secret_assignment]'"),
        ("db:\n  password: hunter2\n", "db:\n  password: [REDACTED:secret_assignment]\n"),
        ("login?user=bob&password=hunter2&next=/", "login?user=bob&password=[REDACTED:secret_assignment]&next=/"),
        ("mysql --password hunter2 -e 'select 1'", "mysql --password [REDACTED:secret_assignment] -e 'select 1'"),
    ],
)
def test_generic_secret_assignments_redact_the_value_and_keep_the_key(text: str, expected: str) -> None:
    assert_scrubbed(text, expected, "secret_assignment")


def test_specific_token_kind_wins_over_the_generic_assignment() -> None:
    result = scrub_secrets("OPENAI_API_KEY=sk-proj-" + ALNUM40)
    assert result == ScrubResult("OPENAI_API_KEY=[REDACTED:openai_key]", 1, ("openai_key",))


def test_several_secrets_are_counted_and_their_kinds_listed_sorted_once() -> None:
    text = f"a sk-{ALNUM40} b sk-{ALNUM40}x c AKIAIOSFODNN7EXAMPLE d password=hunter2"
    result = scrub_secrets(text)
    assert result.redactions == 4
    assert result.kinds == ("aws_access_key_id", "openai_key", "secret_assignment")


def test_every_reported_kind_is_a_known_kind() -> None:
    assert set(SECRET_KINDS) >= {
        "private_key", "anthropic_key", "openai_key", "reasoningbank_token", "github_token",
        "slack_token", "aws_access_key_id", "aws_secret_access_key", "google_api_key", "stripe_key",
        "jwt", "authorization", "url_password", "secret_assignment",
    }  # fmt: skip


# --- what must not change ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "the skeleton of the task-runner asks ask-ant for a sk- prefix",
        "short fragments: sk-123, sk-test, sk-ant-short, rb_cache, ghp_x",
        "kebab-case-identifier sk-learn-the-basics-of-the-library-here",
        "see https://example.com/docs?page=2#intro and http://localhost:8000/api/v1/",
        "clone ssh://git@github.com:22/org/repo.git or git@github.com:org/repo.git",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
        "request 123e4567-e89b-12d3-a456-426614174000 failed",
        "rb_connection_pool_manager = RB_MAX_CONNECTIONS_PER_HOST",
        "def login(password: str, api_key: Optional[str] = None) -> bool:",
        "    password: str = ''",
        "password = os.environ['DB_PASSWORD']",
        "password = getpass.getpass('Password: ')",
        "api_key = settings.OPENAI_API_KEY",
        "login(username=username, password=password)",
        "if password == confirm_password: ok",
        "error: password: too short, must be 12 characters",
        "password = None",
        'password = ""',
        "DB_PASSWORD=${DB_PASSWORD}",
        "postgres://app:${PGPASSWORD}@db/app",
        "PWD=/home/user/project",
        "--password PASSWORD   the password to use",
        "Authorization: Bearer tokens expire after an hour",
        "The authorization: header is missing",
        "base64 of a PNG: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA",
    ],
)
def test_ordinary_code_and_text_are_left_unchanged(text: str) -> None:
    assert scrub_secrets(text) == ScrubResult(text=text, redactions=0, kinds=())


def test_text_around_a_secret_is_untouched() -> None:
    text = "before\n  password = 'x1'  # comment\nafter"
    assert redacted(text) == "before\n  password = '[REDACTED:secret_assignment]'  # comment\nafter"


# --- idempotence and properties ---------------------------------------------------------------

EVERY_KIND_SAMPLE = "\n".join(
    [
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----",
        "sk-ant-api03-" + ALNUM40,
        "sk-proj-" + ALNUM40,
        "rb_q8Zk3_Vd-9LmPwXy2TnB4cRf6HsJ0aEuGiKoNpQ1vW",
        "ghp_" + ALNUM40[:36],
        "xoxb-1234567890-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key=" + ALNUM40,
        "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N",
        "Authorization: Bearer abcdef1234567890",
        "Authorization: Basic dXNlcjpwYXNz",
        "mysql://root:toor@127.0.0.1/db",
        'password = "hunter2"',
        "client_secret: abc",
        "--api-key zzz999",
        "glpat-xK9mP2qR7sT4vW8yZ1aB",
        "npm_" + ALNUM40[:36],
        "pypi-AgEIcHlwaS5vcmc" + ALNUM40 + ALNUM40[:20],
        "SG." + ALNUM40[:22] + "." + ALNUM40 + "xyz",
        "dop_v1_" + "0123456789abcdef" * 4,
        "shpat_" + "0123456789abcdef" * 2,
        "hvs." + ALNUM40[:24],
        "dckr_pat_" + ALNUM40[:27],
        "dapi" + "0123456789abcdef" * 2,
        "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/" + ALNUM40[:24],
        "mysql -u root -pS3cr3t db",
        "rbo_" + "Q8zK3vD9lMpWxY2tNb4CrF6hSj0AeUgIkOnPq1Vw7Ea",
        "xoxe-1-" + ALNUM40,
        "GOCSPX-" + ALNUM40[:28],
        "ya29." + ALNUM40,
        "bot 123456789:AAH" + ALNUM40[:32] + " is live",
        'Client("AC' + "0123456789abcdef" * 2 + '", "' + "fedcba9876543210" * 2 + '")',
        '{"auth": "Ym9iOlMzY3JldFBhc3M="}',
        "the AWS secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY, use it",
    ]
)


def test_sample_with_every_kind_is_fully_redacted() -> None:
    result = scrub_secrets(EVERY_KIND_SAMPLE)
    assert result.redactions == 36
    # every kind has its row in the format table (tests/reasoningbank/secret_table.py); this sample
    # mixes the common ones in one text
    assert len(result.kinds) == 32 and set(result.kinds) <= set(SECRET_KINDS)
    for secret in ("MHcCAQEE", ALNUM40, "hunter2", "toor", "dXNlcjpwYXNz", "zzz999", "4eC39Hq"):
        assert secret not in result.text


def test_scrubbing_twice_changes_nothing_more() -> None:
    once = scrub_secrets(EVERY_KIND_SAMPLE)
    twice = scrub_secrets(once.text)
    assert twice == ScrubResult(text=once.text, redactions=0, kinds=())


@given(st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12), max_size=40))
def test_plain_lowercase_words_are_never_changed(words: list[str]) -> None:
    text = " ".join(words)
    assert scrub_secrets(text) == ScrubResult(text=text, redactions=0, kinds=())


@given(st.text(max_size=300))
def test_scrubbing_is_idempotent_on_arbitrary_text(text: str) -> None:
    once = scrub_secrets(text).text
    assert scrub_secrets(once).text == once
