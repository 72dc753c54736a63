"""The pure rules of single sign-on: domains, the TXT proof, group claims and the role they give."""

from __future__ import annotations

import pytest

from accounts.sso.rules import (
    claim_values,
    domain_normalise,
    email_domain,
    role_for_groups,
    role_map_parse,
    role_map_text,
    verification_found,
    verification_record_name,
    verification_record_value,
)


@pytest.mark.parametrize(
    ("typed", "domain"),
    [
        ("Acme.COM", "acme.com"),
        ("@acme.com", "acme.com"),
        (" acme.com. ", "acme.com"),
        ("bücher.de", "xn--bcher-kva.de"),
    ],
)
def test_a_typed_domain_is_kept_in_one_spelling(typed: str, domain: str) -> None:
    assert domain_normalise(typed) == domain


@pytest.mark.parametrize("typed", ["", "localhost", "https://acme.com", "acme .com", "-acme.com", "a" * 64 + ".com"])
def test_what_is_no_domain_is_refused_with_an_example(typed: str) -> None:
    with pytest.raises(ValueError, match=r"example\.com"):
        domain_normalise(typed)


def test_an_address_domain_is_lower_case_and_empty_without_an_at() -> None:
    assert email_domain("Dana@ACME.test") == "acme.test"
    assert email_domain("nobody") == ""


def test_the_proof_is_one_of_the_names_txt_records_exactly() -> None:
    assert verification_record_name("acme.com") == "_reasoningbank-challenge.acme.com"
    value = verification_record_value("tok")
    assert verification_found(["v=spf1 -all", value], "tok")
    assert not verification_found([value + "x", "tok"], "tok")
    assert not verification_found([], "tok")


def test_groups_are_read_from_userinfo_the_id_token_or_saml_attributes() -> None:
    assert claim_values({"userinfo": {"groups": ["a", "b"]}, "id_token": {"groups": ["c"]}}, "groups") == ["a", "b"]
    assert claim_values({"id_token": {"roles": "admins"}}, "roles") == ["admins"]
    assert claim_values(
        {"http://schemas.microsoft.com/ws/2008/06/identity/claims/groups": ["g1"]},
        "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups",
    ) == ["g1"]
    assert claim_values({"userinfo": {}}, "groups") == []
    assert claim_values({"groups": ["a"]}, "") == []


def test_the_strongest_mapped_role_wins_and_owner_is_never_given() -> None:
    mapping = {"eng": "member", "leads": "admin", "all": "viewer", "boss": "owner"}
    assert role_for_groups(["all", "eng", "leads"], mapping) == "admin"
    assert role_for_groups(["all"], mapping) == "viewer"
    assert role_for_groups(["boss"], mapping) is None
    assert role_for_groups(["unknown"], mapping) is None


def test_the_mapping_table_round_trips_and_a_bad_line_is_named() -> None:
    mapping = role_map_parse("# comment\nEngineering = member\n\nCN=Admins,OU=Groups = admin\n")
    assert mapping == {"Engineering": "member", "CN=Admins,OU=Groups": "admin"}
    assert role_map_parse(role_map_text(mapping)) == mapping
    with pytest.raises(ValueError, match="line 2: the role must be viewer, member or admin"):
        role_map_parse("a = member\nb = owner")
    with pytest.raises(ValueError, match="line 1: write one mapping a line"):
        role_map_parse("just-a-group")
