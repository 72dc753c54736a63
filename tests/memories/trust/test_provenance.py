"""The pure provenance module (memories/trust/provenance.py): building, checking and describing a memory's
provenance, and the write-time trust decision — no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memories.trust import provenance as p

AT = datetime(2026, 11, 30, 9, 12, tzinfo=UTC)
ALICE = p.by_facts(p.BY_USER, user_id=1, email="alice@acme.test", role="owner")
LAPTOP = p.by_facts(
    p.BY_TOKEN, token_id=7, token_prefix="rb_ab12", token_label="laptop", token_creator_id=1,
    token_creator_email="alice@acme.test", role="member",
)  # fmt: skip
CLAUDE = p.client_facts("mcp", name="claude-code", version="2.1.197", user_agent="claude-code/2.1.197 (cli)")


# --- building ----------------------------------------------------------------------------------------


def test_a_recorded_provenance_holds_only_the_keys_that_apply():
    built = p.provenance_build(how=p.HOW_RECORDED, at=AT, by=LAPTOP, client=CLAUDE)

    assert built == {
        "v": 1,
        "how": "recorded",
        "at": "2026-11-30T09:12:00+00:00",
        "by": {"kind": "token", "token_id": 7, "token_prefix": "rb_ab12", "token_label": "laptop",
               "token_creator_id": 1, "token_creator_email": "alice@acme.test", "role": "member"},
        "client": {"transport": "mcp", "name": "claude-code", "version": "2.1.197",
                   "user_agent": "claude-code/2.1.197 (cli)"},
    }  # fmt: skip


def test_a_synthesis_lists_at_most_twenty_sources_and_how_many_there_were():
    sources = [p.source_facts(memory_id=f"mem_{n}", how="recorded", by="alice@acme.test") for n in range(25)]

    built = p.provenance_build(how=p.HOW_SYNTHESISED, at=AT, by=p.by_facts(p.BY_SYSTEM), run="run_1", sources=sources)

    assert len(built["sources"]) == p.SOURCES_MAX and built["sources_total"] == 25
    assert built["run"] == "run_1"
    assert built["sources"][0] == {"id": "mem_0", "how": "recorded", "by": "alice@acme.test"}


def test_strings_lose_control_and_bidi_characters_and_secrets_and_are_cut_short():
    client = p.client_facts(
        "rest",
        name="evil\x1b[31mred\u202eclient\x00",
        user_agent="curl/8 token=ghp_" + "a" * 36 + " " + "x" * 400,
    )

    assert client["name"] == "evil" + "red" + "client"
    assert "ghp_" not in client["user_agent"] and "[REDACTED" in client["user_agent"]
    assert len(client["user_agent"]) <= p.USER_AGENT_MAX


def test_a_provenance_time_needs_its_offset_and_a_way_in_must_be_known():
    with pytest.raises(ValueError, match="UTC offset"):
        p.provenance_build(how=p.HOW_RECORDED, at=datetime(2026, 1, 1), by=ALICE)
    with pytest.raises(ValueError, match="unknown way in"):
        p.provenance_build(how="restored", at=AT, by=ALICE)
    with pytest.raises(ValueError, match="unknown writer kind"):
        p.by_facts("robot")


# --- a claim from a file -------------------------------------------------------------------------------


def test_a_claimed_provenance_keeps_what_the_format_knows_and_drops_the_rest():
    claimed = {
        "v": 1, "how": "recorded", "at": "2026-01-02T03:04:05+00:00", "admin": True,
        "by": {"kind": "user", "email": "mallory@evil.test\u202e", "role": "superuser", "is_staff": True},
        "client": {"transport": "carrier-pigeon", "name": "x" * 500},
        "sources": [{"id": "mem_1", "how": "recorded", "by": "a", "extra": 1}, "not an object"],
        "trust": "trusted",
    }  # fmt: skip

    cleaned = p.provenance_validate(claimed)

    assert cleaned == {
        "v": 1,
        "how": "recorded",
        "at": "2026-01-02T03:04:05+00:00",
        "by": {"kind": "user", "email": "mallory@evil.test"},  # an unknown role is no role
        "client": {"name": "x" * p.TEXT_MAX},
        "sources": [{"id": "mem_1", "how": "recorded", "by": "a"}],
    }


@pytest.mark.parametrize("value", [None, "recorded", [], {"how": "teleported"}, {"by": {"kind": "user"}}])
def test_a_claim_without_a_known_way_in_is_no_claim(value):
    assert p.provenance_validate(value) == {}


def test_claims_of_claims_are_kept_three_deep_then_marked_dropped():
    claim: dict = {"v": 1, "how": "recorded", "at": AT.isoformat(), "by": ALICE}
    for _ in range(5):
        imported = {"file": "f", "claimed": claim}
        claim = {"v": 1, "how": "imported", "at": AT.isoformat(), "by": ALICE, "import": imported}

    cleaned = p.provenance_validate(claim)

    depth, level = 0, cleaned
    while "claimed" in level.get("import", {}):
        level, depth = level["import"]["claimed"], depth + 1
    assert depth == p.CLAIM_DEPTH_MAX - 1 and level["import"]["claims_dropped"] is True


def test_claimed_flags_keep_their_rule_and_span_only():
    flags = [{"rule": "remote_script", "reason": "pipes to sh", "field": "content", "start": 3, "end": 30,
              "excerpt": "curl x | sh", "score": 9}, {"reason": "no rule"}]  # fmt: skip

    assert p.flags_validate(flags) == [
        {"rule": "remote_script", "reason": "pipes to sh", "field": "content", "start": 3, "end": 30,
         "excerpt": "curl x | sh"}
    ]  # fmt: skip


# --- describing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provenance", "label"),
    [
        (p.provenance_build(how="recorded", at=AT, by=LAPTOP, client=CLAUDE),
         "recorded by alice@acme.test (token laptop) via claude-code 2.1 · 2026-11-30"),
        (p.provenance_build(how="recorded", at=AT, by=ALICE, client=p.client_facts("dashboard")),
         "recorded by alice@acme.test via the dashboard · 2026-11-30"),
        (p.provenance_build(how="recorded", at=AT, by=p.by_facts(p.BY_TOKEN, token_label="ci"),
                            client=p.client_facts("rest", user_agent="reasoningbank-client-python/0.4.1 (x)")),
         "recorded by token ci via reasoningbank-client-python 0.4 · 2026-11-30"),
        (p.provenance_build(how="distilled", at=AT, by=p.by_facts(p.BY_OAUTH, email="bob@acme.test",
                                                                  oauth_client_id="c1", oauth_app_name="Claude")),
         "distilled from a session of bob@acme.test (app Claude) · 2026-11-30"),
        (p.provenance_build(how="synthesised", at=AT, by=p.by_facts(p.BY_SYSTEM), client=p.client_facts("internal"),
                            sources=[p.source_facts(memory_id="m", how="recorded", by="x")] * 3),
         "synthesised from 3 memories by consolidation · 2026-11-30"),
        (p.provenance_build(how="imported", at=AT, by=ALICE, imported=p.import_facts(file="bank.jsonl")),
         "imported by alice@acme.test from bank.jsonl · 2026-11-30"),
        (p.provenance_build(how="imported", at=AT, by=p.by_facts(p.BY_SYSTEM)),
         "imported by the operator · 2026-11-30"),
    ],
    ids=["token via mcp", "dashboard", "user agent", "distilled", "synthesised", "imported", "operator import"],
)  # fmt: skip
def test_the_label_says_who_how_through_what_and_when_in_one_line(provenance, label):
    assert p.provenance_label(provenance) == label


def test_the_compact_source_is_the_labels_with_trust_and_reviewer():
    provenance = p.provenance_build(how="recorded", at=AT, by=LAPTOP, client=CLAUDE)

    assert p.source_compact(provenance, trust="pending", reviewed_by="carol@acme.test") == {
        "how": "recorded",
        "by": "alice@acme.test (token laptop)",
        "via": "claude-code 2.1",
        "at": "2026-11-30T09:12:00+00:00",
        "trust": "pending",
        "reviewed_by": "carol@acme.test",
        "label": "recorded by alice@acme.test (token laptop) via claude-code 2.1 · 2026-11-30",
    }


def test_an_older_memory_is_described_from_its_columns_and_says_so():
    described = p.provenance_described(
        origin="distilled", at=AT - timedelta(days=300), token_id=3, token_prefix="rb_x", token_label="ci",
        session_id="ses_1", session_key="agent-42",
    )  # fmt: skip

    assert described["described"] is True and described["how"] == "distilled"
    assert described["by"] == {"kind": "token", "token_id": 3, "token_prefix": "rb_x", "token_label": "ci"}
    assert described["session"] == {"id": "ses_1", "key": "agent-42"}
    assert p.provenance_described(origin="consolidated", at=AT)["by"] == {"kind": "system"}
    assert p.provenance_described(origin="extracted", at=AT, promoted_from="semantic")["how"] == "promoted"


def test_a_time_in_another_zone_keeps_its_offset():
    at = datetime(2026, 11, 30, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert p.provenance_build(how="recorded", at=at, by=ALICE)["at"] == "2026-11-30T23:30:00-05:00"


# --- the trust decision ---------------------------------------------------------------------------------

OPERATOR_TOKEN = p.by_facts(p.BY_TOKEN, token_id=9, token_label="server")
GONE_CREATOR_TOKEN = p.by_facts(p.BY_TOKEN, token_id=9, token_creator_id=5, token_creator_email="ex@acme.test")
VIEWER_TOKEN = p.by_facts(
    p.BY_TOKEN, token_id=9, token_creator_id=2, token_creator_email="bob@acme.test", role="viewer"
)


def app(role: str | None) -> dict:
    return p.by_facts(p.BY_OAUTH, user_id=1, email="alice@acme.test", role=role, oauth_client_id="claude-web")


TRUST_TABLE = [
    # (case, how, by, extra, expected)
    ("a member recording", "recorded", p.by_facts(p.BY_USER, email="m@acme.test", role="member"), {}, "trusted"),
    ("an owner recording", "recorded", ALICE, {}, "trusted"),
    ("a viewer recording", "recorded", p.by_facts(p.BY_USER, email="v@acme.test", role="viewer"), {}, "pending"),
    ("a person no longer a member", "recorded", p.by_facts(p.BY_USER, email="x@acme.test"), {}, "pending"),
    ("a member's token", "recorded", LAPTOP, {}, "trusted"),
    ("a token the operator made on the server", "recorded", OPERATOR_TOKEN, {}, "trusted"),
    ("a token whose creator left", "recorded", GONE_CREATOR_TOKEN, {}, "pending"),
    ("a token whose creator is a viewer now", "recorded", VIEWER_TOKEN, {}, "pending"),
    ("a token that may not write memories", "recorded", LAPTOP, {"can_write": False}, "pending"),
    ("an app nobody trusted", "recorded", app("member"), {}, "pending"),
    ("a trusted app of a member", "recorded", app("member"), {"trusted_oauth_clients": ["claude-web"]}, "trusted"),
    ("a trusted app of a viewer", "recorded", app("viewer"), {"trusted_oauth_clients": ["claude-web"]}, "pending"),
    ("another app trusted", "recorded", app("owner"), {"trusted_oauth_clients": ["other"]}, "pending"),
    ("the service itself", "recorded", p.by_facts(p.BY_SYSTEM), {}, "trusted"),
    ("an unknown kind of writer", "recorded", {"kind": "robot"}, {}, "pending"),
    ("distilled from a member's session", "distilled", LAPTOP, {}, "trusted"),
    ("distilled from an untrusted app's session", "distilled", app("owner"), {}, "pending"),
    ("synthesised from trusted sources", "synthesised", p.by_facts(p.BY_SYSTEM),
     {"source_trusts": ["trusted", "trusted"]}, "trusted"),
    ("synthesised with one pending source", "synthesised", p.by_facts(p.BY_SYSTEM),
     {"source_trusts": ["trusted", "pending"]}, "pending"),
    ("a pattern of no sources", "pattern", p.by_facts(p.BY_SYSTEM), {"source_trusts": []}, "pending"),
    ("promoted from trusted sources", "promoted", p.by_facts(p.BY_SYSTEM), {"source_trusts": ["trusted"]}, "trusted"),
    ("imported by an owner", "imported", ALICE, {}, "pending"),
    ("imported, the file reviewed", "imported", ALICE, {"reviewed_import": True}, "trusted"),
    ("imported by the operator", "imported", p.by_facts(p.BY_SYSTEM), {}, "pending"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("how", "by", "extra", "expected"), [case[1:] for case in TRUST_TABLE], ids=[case[0] for case in TRUST_TABLE]
)
def test_trust_at_write_follows_the_table(how, by, extra, expected):
    assert p.memory_trust_decide(how=how, by=by, **extra) == expected
