"""What the scrubber reads before its rules (docs/security/secret-scrubbing.md#how-a-text-is-read): splits
joined (zero-width characters, shell line continuations, raw and JSON-escaped) while the rest of the text
keeps them; base64 runs decoded and read; and the new context rules (passwords in prose, Discord bot
tokens, Twilio key pairs) on their own, with the adversarial inputs that must stay linear.

The secrets are assembled from pieces so that secret scanners do not flag this file.
"""

from __future__ import annotations

import base64
import json
import time

import pytest

from reasoningbank.scrubbing import ScrubResult, scrub_secrets

OWN = "rb_" + "Q8zK3vD9lMpWxY2tNb4CrF6hSj0AeUgIkOnPq1Vw7Ea"
GITHUB = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# --- splits --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "split",
    ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\\\n", "\\\r\n"],
    ids=["zwsp", "zwnj", "zwj", "word joiner", "bom", "soft hyphen", "continuation", "crlf continuation"],
)
def test_a_token_split_anywhere_is_found_whole_and_handed_back_for_revocation(split):
    text = f"export RB_TOKEN={OWN[:9]}{split}{OWN[9:]} # from the wiki"

    result = scrub_secrets(text)

    expected = "export RB_TOKEN=[REDACTED:reasoningbank_token] # from the wiki"
    assert result == ScrubResult(expected, 1, ("reasoningbank_token",))
    assert result.own_tokens == (OWN,)


def test_splits_in_a_json_encoded_trace_are_joined_too():
    for split in ("\u200b", "\\\n"):
        trace = json.dumps({"output": f"$ cat .env\nGH_TOKEN={GITHUB[:12]}{split}{GITHUB[12:]}\n"})
        scrubbed = scrub_secrets(trace)
        assert json.loads(scrubbed.text)["output"] == "$ cat .env\nGH_TOKEN=[REDACTED:github_token]\n"


def test_the_text_outside_a_secret_keeps_its_zero_width_characters_and_continuations():
    text = f"a\u200bb \\\n  --flag {GITHUB[:10]}\u200b{GITHUB[10:]} c\u200dd"

    assert scrub_secrets(text).text == "a\u200bb \\\n  --flag [REDACTED:github_token] c\u200dd"


def test_an_escaped_backslash_before_a_line_break_is_no_continuation():
    # in a shell, "\\" + newline is a literal backslash and a new command: the two halves stay apart
    text = f"echo {GITHUB[:10]}\\\\\n{GITHUB[10:]}"

    assert GITHUB[10:] in scrub_secrets(text).text


# --- base64 --------------------------------------------------------------------------------------------------


def test_a_base64_wrapped_token_of_ours_is_redacted_whole_and_handed_back():
    text = f"echo {b64('RB_TOKEN=' + OWN)} | base64 -d >> .env"

    result = scrub_secrets(text)

    assert result.text == "echo [REDACTED:base64_encoded_secret] | base64 -d >> .env"
    assert result.own_tokens == (OWN,)


@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode], ids=["standard", "url-safe"])
def test_base64_of_a_secret_is_found_padded_or_not(encode):
    for padded in (True, False):
        run = encode(f"GH_TOKEN={GITHUB}?".encode()).decode()
        run = run if padded else run.rstrip("=")
        assert scrub_secrets(f"value {run} end").text == "value [REDACTED:base64_encoded_secret] end"


def test_base64_of_ordinary_text_data_and_placeholders_is_kept():
    for text in ("Configure the cache before the server starts", "password=${DB_PASSWORD}", '{"user": "bob"}'):
        assert scrub_secrets(f"blob {b64(text)} end").redactions == 0


def test_many_base64_runs_cost_one_pass_of_the_rules():
    runs = " ".join(b64(f"note number {n} is about caching") for n in range(20_000))  # ~1 MB of base64 text
    started = time.perf_counter()
    assert scrub_secrets(runs).redactions == 0
    assert time.perf_counter() - started < 20  # generous: the point is no per-run pass of every rule


def test_a_megabyte_of_image_data_is_not_decoded():
    image = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4000).decode()
    started = time.perf_counter()
    assert scrub_secrets(image).redactions == 0
    assert time.perf_counter() - started < 10


# --- the new context rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the password is Tr0ub4dor&3", "the password is [REDACTED:password_in_prose]"),
        ("passcode: 48151623 for the door", "passcode: [REDACTED:password_in_prose] for the door"),
        ("log in as root, pwd: S3cure!pw, then sudo", "log in as root, pwd: [REDACTED:password_in_prose], then sudo"),
        (
            'the password of the admin account is "letmein"',
            'the password of the admin account is "[REDACTED:password_in_prose]"',
        ),
        ("the password is now H4ppy-days. Log in.", "the password is now [REDACTED:password_in_prose]. Log in."),
    ],
)
def test_a_password_stated_in_prose_is_redacted_and_the_sentence_kept(text, expected):
    assert scrub_secrets(text).text == expected


@pytest.mark.parametrize(
    "text",
    [
        "the password is required",
        "the password is well-known",
        "for the vault, password: see 1Password",
        "the password was reset by the admin",
        "the password is v2.1.0 compatible",
        "pw: ${PW}",
        "the password is sha256-hashed",
        "pwd: /home/bob/project",
        "the password is 8 characters",
        "the password is os.environ.get",
        "the password is DB_PASSWORD_FILE",
    ],
)
def test_a_sentence_about_a_password_is_kept(text):
    assert scrub_secrets(text).redactions == 0


def test_a_twilio_api_key_and_its_secret_are_both_redacted():
    sid = "SK" + "0123456789abcdef" * 2
    text = f'client = Client("{sid}", "{"AbcdEfghIjklMnopQrstUvwxYz012345"}", account_sid)'

    result = scrub_secrets(text)

    assert result.text == 'client = Client("[REDACTED:twilio_api_key]", "[REDACTED:twilio_auth_token]", account_sid)'


def test_a_discord_token_is_told_apart_by_its_decimal_id():
    token = base64.urlsafe_b64encode(b"1234567890123456789").decode().rstrip("=") + ".GhJ3kL." + "a1B2c3D4" * 4
    not_an_id = base64.urlsafe_b64encode(b"12345678901234567x9").decode().rstrip("=") + ".GhJ3kL." + "a1B2c3D4" * 4

    assert scrub_secrets(f"bot {token} ok").text == "bot [REDACTED:discord_bot_token] ok"
    assert scrub_secrets(f"bot {not_an_id} ok").redactions == 0


# --- adversarial inputs stay linear ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "the password is " * 100_000,
        "pw: x" * 200_000,
        ("-us1" + "a" * 28) * 30_000,
        (".atlasv1." + "A" * 10) * 50_000,
        ":APA91b" * 150_000,
        "Q~" * 500_000,
        ("M" + "a" * 30 + ".") * 30_000,
        "\u200b" * 500_000 + "x",
        "\\\n" * 400_000,
        "A" * 1_000_000,
        ("sig=" + "x" * 20 + "&") * 40_000,
        "docker login " * 80_000,
    ],
    ids=[
        "password is",
        "pw",
        "mailchimp anchors",
        "terraform anchors",
        "firebase anchors",
        "azure anchors",
        "discord candidates",
        "zero-width",
        "continuations",
        "one long run",
        "signatures",
        "docker logins",
    ],
)
def test_adversarial_inputs_are_scrubbed_in_linear_time(text):
    started = time.perf_counter()
    scrub_secrets(text)
    assert time.perf_counter() - started < 20  # generous: a quadratic blow-up on ~1 MB takes minutes
