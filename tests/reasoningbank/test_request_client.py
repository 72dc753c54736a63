"""The calling client in the request context (reasoningbank/request_context.py): the MCP ``clientInfo`` of
either protocol era read from a JSON-RPC message, and the client facts the services read, cleaned."""

from __future__ import annotations

from mcp_types import CLIENT_INFO_META_KEY

from reasoningbank.request_context import (
    CLIENT_INFO_META_KEY as OURS,
)
from reasoningbank.request_context import (
    mcp_client_info,
    request_client,
    request_client_note,
    request_context_end,
    request_context_start,
)


def test_our_meta_key_is_the_sdks():
    assert OURS == CLIENT_INFO_META_KEY


def test_an_initialize_request_names_its_client_in_its_params():
    params = {"protocolVersion": "2025-11-25", "clientInfo": {"name": "claude-code", "version": "2.1.1"}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}

    assert mcp_client_info(message) == ("claude-code", "2.1.1", True)


def test_a_2026_request_names_its_client_in_its_meta_envelope():
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "memory_search", "_meta": {CLIENT_INFO_META_KEY: {"name": "cursor"}}}}  # fmt: skip

    assert mcp_client_info(message) == ("cursor", "", False)


def test_a_call_outside_initialize_does_not_name_its_client_by_a_clientinfo_param():
    message = {"method": "tools/call", "params": {"clientInfo": {"name": "spoofed", "version": "1"}}}

    assert mcp_client_info(message) is None


def test_anything_of_the_wrong_shape_names_no_client():
    for message in (None, [], {"params": []}, {"method": "initialize", "params": {"clientInfo": "x"}},
                    {"method": "initialize", "params": {"clientInfo": {"name": "  "}}},
                    {"params": {"_meta": {CLIENT_INFO_META_KEY: {"name": 3}}}}):  # fmt: skip
        assert mcp_client_info(message) is None


def test_the_client_facts_are_cleaned_when_read():
    token = request_context_start(
        request_id="r1", transport="mcp", user_agent="agent/1 \x1b[31mred\u202e api_key=sk-" + "a" * 48
    )
    try:
        request_client_note("claude\x07code " + "x" * 300, "2.1\n.0", initialize=True)
        client = request_client()
    finally:
        request_context_end(token)

    assert client.transport == "mcp" and client.from_initialize
    assert client.name.startswith("claudecode ") and len(client.name) <= 100
    assert client.version == "2.1 .0"
    assert client.user_agent.startswith("agent/1 red") and "sk-" + "a" * 10 not in client.user_agent


def test_outside_a_request_the_client_is_internal():
    assert request_client().transport == "internal" and request_client().name == ""
