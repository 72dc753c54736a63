"""A memory's provenance — who wrote it, how, through which client, when — built, checked and described
from plain facts, and the write-time ``trust`` decision (docs/security/memory-poisoning.md#provenance).

No Django here: the services gather the facts (``memories/trust/provenance_facts.py``: the principal,
the request's client, the session, the sources) and hand them in as plain values.

The stored form (``Memory.provenance``, written once at insert; a database trigger refuses a change)::

    {"v": 1, "how": "recorded", "at": "2026-11-30T09:12:00+00:00",
     "by": {"kind": "token", "token_id": 7, "token_prefix": "rb_ab12", "token_label": "laptop",
            "token_creator_email": "alice@acme.test", "role": "owner"},
     "client": {"transport": "mcp", "name": "claude-code", "version": "2.1.197", "user_agent": "…"},
     "session": {"id": "ses_…", "key": "the agent's id", "model": "…"},
     "run": "run_…", "sources": [{"id": "mem_…", "how": "recorded", "by": "alice@acme.test"}],
     "import": {"file": "bank.jsonl", "format": "reasoningbank", "claimed": {…the file's provenance…}}}

Only the keys that apply are present. Every string is cleaned (control and bidi characters dropped,
secrets redacted, cut to a length), so a provenance can be shown anywhere as it is. ``source_compact``
is the short form every API and MCP memory result carries; ``provenance_label`` its one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from reasoningbank.scrubbing import scrub_secrets
from reasoningbank.text_safety import text_neutralise

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

VERSION = 1

# how a memory came to be
HOW_RECORDED = "recorded"  # an agent or a person wrote it (memory_record, REST, the dashboard)
HOW_DISTILLED = "distilled"  # an LLM distilled it from a session an agent handed in
HOW_SYNTHESISED = "synthesised"  # consolidation merged a cluster of memories into it
HOW_PATTERN = "pattern"  # consolidation's pattern phase drew it from episodic memories
HOW_PROMOTED = "promoted"  # the promotion ladder (a new kind) or institutional promotion (a wider scope)
HOW_IMPORTED = "imported"  # an admin imported it from a file
HOW_EXTRACTED = "extracted"  # older memories of consolidation's extraction (described, never written now)
HOWS = (HOW_RECORDED, HOW_DISTILLED, HOW_SYNTHESISED, HOW_PATTERN, HOW_PROMOTED, HOW_IMPORTED, HOW_EXTRACTED)
# made by consolidation from other memories: trusted only as far as all of those are
DERIVED = (HOW_SYNTHESISED, HOW_PATTERN, HOW_PROMOTED, HOW_EXTRACTED)

BY_USER, BY_TOKEN, BY_OAUTH, BY_SYSTEM = "user", "token", "oauth", "system"
BY_KINDS = (BY_USER, BY_TOKEN, BY_OAUTH, BY_SYSTEM)
TRANSPORTS = ("mcp", "rest", "dashboard", "internal")
ROLES = ("owner", "admin", "member", "viewer")
WRITER_ROLES = ("owner", "admin", "member")  # a person whose writes need no review

TRUSTED, PENDING = "trusted", "pending"

TEXT_MAX = 100  # names, labels, versions, ids
EMAIL_MAX = 254
USER_AGENT_MAX = 200
MODEL_MAX = 100
SOURCES_MAX = 20  # a synthesis lists at most this many of its sources (and how many there were)
CLAIM_DEPTH_MAX = 3  # an import of an import of an import … keeps this many claims
LABEL_BY_MAX = 60
LABEL_MAX = 160

_SPACES = re.compile(r"\s+")
_PRODUCT = re.compile(r"([A-Za-z0-9][A-Za-z0-9._+-]{0,60})(?:/([A-Za-z0-9][A-Za-z0-9._+-]{0,30}))?")


# --- cleaning ----------------------------------------------------------------------------------------


def text_capped(value: Any, maximum: int = TEXT_MAX) -> str:
    """``value`` as one line of safe text: control, bidi and tag characters dropped, whitespace runs made
    one space, secrets redacted, at most ``maximum`` characters. Anything but a string is ""."""
    if not isinstance(value, str) or not value:
        return ""
    text = _SPACES.sub(" ", text_neutralise(value.replace("\x00", ""))).strip()
    if not text:
        return ""
    return scrub_secrets(text[: maximum * 2]).text[:maximum].strip()


def _id(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _choice(value: Any, allowed: Sequence[str]) -> str | None:
    return value if isinstance(value, str) and value in allowed else None


def _compact(values: Mapping[str, Any]) -> dict[str, Any]:
    """Only the keys that apply: no empty strings, no None."""
    return {key: value for key, value in values.items() if value not in ("", None)}


def version_short(version: str) -> str:
    """``2.1.197`` → ``2.1``: enough to tell clients apart in one line."""
    return ".".join(version.split(".")[:2])


def user_agent_product(user_agent: str) -> tuple[str, str]:
    """The first product of a User-Agent (``reasoningbank-client-python/0.4.1 (…)`` → name, version)."""
    match = _PRODUCT.match(user_agent.strip())
    if match is None:
        return "", ""
    return match.group(1), match.group(2) or ""


# --- the parts --------------------------------------------------------------------------------------


def by_facts(
    kind: str,
    *,
    user_id: int | None = None,
    email: str = "",
    role: str | None = None,
    token_id: int | None = None,
    token_prefix: str = "",
    token_label: str = "",
    token_creator_id: int | None = None,
    token_creator_email: str = "",
    oauth_client_id: str = "",
    oauth_app_name: str = "",
) -> dict[str, Any]:
    """Who wrote it. ``role`` is the role, at write time, of the person behind the write: the user, the
    token's creator, or the user who connected the OAuth app (None: no person, or no longer a member)."""
    if kind not in BY_KINDS:
        raise ValueError(f"unknown writer kind {kind!r}")
    return _compact(
        {
            "kind": kind,
            "user_id": _id(user_id),
            "email": text_capped(email, EMAIL_MAX),
            "role": _choice(role, ROLES),
            "token_id": _id(token_id),
            "token_prefix": text_capped(token_prefix, 16),
            "token_label": text_capped(token_label),
            "token_creator_id": _id(token_creator_id),
            "token_creator_email": text_capped(token_creator_email, EMAIL_MAX),
            "oauth_client_id": text_capped(oauth_client_id),
            "oauth_app_name": text_capped(oauth_app_name),
        }
    )


def client_facts(transport: str, *, name: str = "", version: str = "", user_agent: str = "") -> dict[str, Any]:
    """Through which client: the transport, the MCP client's ``clientInfo`` and the HTTP User-Agent."""
    return _compact(
        {
            "transport": _choice(transport, TRANSPORTS) or "internal",
            "name": text_capped(name),
            "version": text_capped(version, 40),
            "user_agent": text_capped(user_agent, USER_AGENT_MAX),
        }
    )


def session_facts(*, session_id: str, key: str = "", model: str = "") -> dict[str, Any]:
    """The session a memory was distilled from: our id, the agent's own id, the distilling model."""
    return _compact(
        {"id": text_capped(session_id), "key": text_capped(key, 200), "model": text_capped(model, MODEL_MAX)}
    )


def source_facts(*, memory_id: str, how: str, by: str) -> dict[str, Any]:
    """One memory a derived memory was made from: its id, how it came to be, who wrote it (a label)."""
    return _compact({"id": text_capped(memory_id), "how": _choice(how, HOWS), "by": text_capped(by, LABEL_BY_MAX)})


def provenance_build(
    *,
    how: str,
    at: datetime,
    by: Mapping[str, Any],
    client: Mapping[str, Any] | None = None,
    session: Mapping[str, Any] | None = None,
    run: str = "",
    sources: Sequence[Mapping[str, Any]] = (),
    imported: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The provenance of a new memory, from the parts above (each already cleaned)."""
    if how not in HOWS:
        raise ValueError(f"unknown way in {how!r}")
    if at.tzinfo is None:
        raise ValueError("the time of a provenance needs its UTC offset")
    out: dict[str, Any] = {"v": VERSION, "how": how, "at": at.isoformat(), "by": dict(by)}
    if client:
        out["client"] = dict(client)
    if session:
        out["session"] = dict(session)
    if run:
        out["run"] = text_capped(run)
    if sources:
        out["sources"] = [dict(source) for source in sources[:SOURCES_MAX]]
        if len(sources) > SOURCES_MAX:
            out["sources_total"] = len(sources)
    if imported:
        out["import"] = dict(imported)
    return out


def import_facts(
    *,
    file: str = "",
    fmt: str = "",
    organization: str = "",
    exported_at: str = "",
    claimed: Mapping[str, Any] | None = None,
    claimed_trust: str | None = None,
    claimed_review: Mapping[str, Any] | None = None,
    claimed_flags: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Where an imported memory came from: the file, its format, the organization and time its header
    names, and what the file claimed about the memory — its provenance (``provenance_validate``d), its trust,
    who reviewed it, what the detector found. Claims, kept for a reviewer to read, never trusted."""
    out = _compact(
        {
            "file": text_capped(file),
            "format": text_capped(fmt, 40),
            "organization": text_capped(organization, 50),
            "exported_at": text_capped(exported_at, 40),
            "claimed_trust": _choice(claimed_trust, (TRUSTED, PENDING)),
        }
    )
    if claimed:
        out["claimed"] = dict(claimed)
    review = _compact(dict(claimed_review or {}))
    if review:
        out["claimed_review"] = review
    if claimed_flags:
        out["claimed_flags"] = [dict(flag) for flag in claimed_flags]
    return out


# --- an imported provenance: a claim, cleaned --------------------------------------------------------

_BY_KEYS = {
    "kind": lambda v: _choice(v, BY_KINDS),
    "user_id": _id,
    "email": lambda v: text_capped(v, EMAIL_MAX),
    "role": lambda v: _choice(v, ROLES),
    "token_id": _id,
    "token_prefix": lambda v: text_capped(v, 16),
    "token_label": text_capped,
    "token_creator_id": _id,
    "token_creator_email": lambda v: text_capped(v, EMAIL_MAX),
    "oauth_client_id": text_capped,
    "oauth_app_name": text_capped,
}
_CLIENT_KEYS = {
    "transport": lambda v: _choice(v, TRANSPORTS),
    "name": text_capped,
    "version": lambda v: text_capped(v, 40),
    "user_agent": lambda v: text_capped(v, USER_AGENT_MAX),
}
_SESSION_KEYS = {"id": text_capped, "key": lambda v: text_capped(v, 200), "model": lambda v: text_capped(v, MODEL_MAX)}
_SOURCE_KEYS = {"id": text_capped, "how": lambda v: _choice(v, HOWS), "by": lambda v: text_capped(v, LABEL_BY_MAX)}
_FLAG_KEYS = {
    "rule": lambda v: text_capped(v, 60),
    "reason": lambda v: text_capped(v, 300),
    "field": lambda v: text_capped(v, 40),
    "start": _id,
    "end": _id,
    "excerpt": lambda v: text_capped(v, 300),
}


def _object_clean(value: Any, keys: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    return _compact({key: clean(value[key]) for key, clean in keys.items() if key in value})


def _time_text(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return ""
    return parsed.isoformat() if parsed.tzinfo is not None else ""


def provenance_validate(value: Any, *, depth: int = 0) -> dict[str, Any]:
    """A provenance read from outside (an import file) reduced to what this format knows, every string
    cleaned as ours are; unknown keys and ill-typed values are dropped, never trusted. An import's own
    claim is kept to ``CLAIM_DEPTH_MAX`` levels. ``{}`` when nothing usable is left."""
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, Any] = {}
    how = _choice(value.get("how"), HOWS)
    if how:
        out["v"] = VERSION
        out["how"] = how
    at = _time_text(value.get("at"))
    if at:
        out["at"] = at
    for key, keys in (("by", _BY_KEYS), ("client", _CLIENT_KEYS), ("session", _SESSION_KEYS)):
        part = _object_clean(value.get(key), keys)
        if part:
            out[key] = part
    run = text_capped(value.get("run"))
    if run:
        out["run"] = run
    sources = value.get("sources")
    if isinstance(sources, list):
        cleaned = [part for part in (_object_clean(s, _SOURCE_KEYS) for s in sources[:SOURCES_MAX]) if part]
        if cleaned:
            out["sources"] = cleaned
            total = _id(value.get("sources_total"))
            if total is not None and total > len(cleaned):
                out["sources_total"] = total
    imported = value.get("import")
    if isinstance(imported, Mapping):
        part = _object_clean(
            imported, {"file": text_capped, "format": lambda v: text_capped(v, 40),
                       "organization": lambda v: text_capped(v, 50), "exported_at": _time_text}
        )  # fmt: skip
        if depth + 1 < CLAIM_DEPTH_MAX:
            claimed = provenance_validate(imported.get("claimed"), depth=depth + 1)
            if claimed:
                part["claimed"] = claimed
        elif imported.get("claimed"):
            part["claims_dropped"] = True  # deeper claims than we keep
        trust = _choice(imported.get("claimed_trust"), (TRUSTED, PENDING))
        if trust:
            part["claimed_trust"] = trust
        review = _object_clean(imported.get("claimed_review"), {"by": lambda v: text_capped(v, EMAIL_MAX),
                                                                "at": _time_text})
        if review:
            part["claimed_review"] = review
        flags = flags_validate(imported.get("claimed_flags"))
        if flags:
            part["claimed_flags"] = flags
        if part:
            out["import"] = part
    if value.get("described") is True:  # told from older columns, not recorded at the time
        out["described"] = True
    return out if out.get("how") else {}


def flags_validate(value: Any, *, maximum: int = 20) -> list[dict[str, Any]]:
    """The detector's findings as a file claims them (``[{rule, reason, field, start, end, excerpt}]``),
    cleaned; at most ``maximum``."""
    if not isinstance(value, list):
        return []
    return [flag for flag in (_object_clean(item, _FLAG_KEYS) for item in value[:maximum]) if flag.get("rule")]


# --- older memories: described from their columns ------------------------------------------------------

_ORIGIN_HOW = {"recorded": HOW_RECORDED, "distilled": HOW_DISTILLED, "consolidated": HOW_SYNTHESISED,
               "extracted": HOW_EXTRACTED}  # fmt: skip


def provenance_described(
    *,
    origin: str,
    at: datetime,
    user_email: str = "",
    user_id: int | None = None,
    token_id: int | None = None,
    token_prefix: str = "",
    token_label: str = "",
    token_creator_email: str = "",
    session_id: str = "",
    session_key: str = "",
    promoted_from: str = "",
) -> dict[str, Any]:
    """What can be said of a memory written before provenance (``{}`` stored): its ``origin``, the user or
    token that wrote it, its session. Marked ``described`` — told from older columns, not recorded at the
    time — and never stored."""
    how = _ORIGIN_HOW.get(origin, HOW_RECORDED)
    if how == HOW_EXTRACTED and promoted_from:
        how = HOW_PROMOTED
    if token_id is not None or token_prefix:
        by = by_facts(BY_TOKEN, token_id=token_id, token_prefix=token_prefix, token_label=token_label,
                      token_creator_email=token_creator_email)  # fmt: skip
    elif user_email or user_id is not None:
        by = by_facts(BY_USER, user_id=user_id, email=user_email)
    else:
        by = by_facts(BY_SYSTEM)
    out = provenance_build(how=how, at=at, by=by)
    if session_id:
        out["session"] = session_facts(session_id=session_id, key=session_key)
    out["described"] = True
    return out


# --- describing ----------------------------------------------------------------------------------------


def by_label(by: Mapping[str, Any] | None, *, how: str = "") -> str:
    """Who, in a few words: ``alice@acme.test``, ``alice@acme.test (token laptop)``, ``token ci``,
    ``bob@acme.test (app Claude)``, ``consolidation`` / ``the operator`` for the service itself."""
    by = by or {}
    kind = by.get("kind")
    email = str(by.get("email") or "")
    if kind == BY_TOKEN:
        label = str(by.get("token_label") or by.get("token_prefix") or "")
        creator = str(by.get("token_creator_email") or "")
        text = f"{creator} (token {label})" if creator else f"token {label}"
    elif kind == BY_OAUTH:
        app = str(by.get("oauth_app_name") or by.get("oauth_client_id") or "an app")
        text = f"{email} (app {app})" if email else f"app {app}"
    elif kind == BY_USER:
        text = email or (f"user {by['user_id']}" if by.get("user_id") is not None else "a person")
    else:
        text = "the operator" if how == HOW_IMPORTED else "consolidation"
    return text[:LABEL_BY_MAX]


def via_label(client: Mapping[str, Any] | None) -> str | None:
    """Through which client, in a few words: ``claude-code 2.1``, ``reasoningbank-client-python 0.4``,
    ``the dashboard``; None for the service's own work."""
    client = client or {}
    name = str(client.get("name") or "")
    version = str(client.get("version") or "")
    if not name and client.get("user_agent"):
        name, version = user_agent_product(str(client["user_agent"]))
    if name:
        return f"{name} {version_short(version)}".strip()[:LABEL_BY_MAX]
    return {"dashboard": "the dashboard", "rest": "REST", "mcp": "MCP"}.get(str(client.get("transport") or ""))


_HOW_PHRASE = {
    HOW_RECORDED: "recorded by {by}",
    HOW_DISTILLED: "distilled from a session of {by}",
    HOW_SYNTHESISED: "synthesised{sources} by {by}",
    HOW_PATTERN: "pattern{sources} by {by}",
    HOW_PROMOTED: "promoted{sources} by {by}",
    HOW_EXTRACTED: "extracted by {by}",
    HOW_IMPORTED: "imported by {by}{file}",
}


def provenance_label(provenance: Mapping[str, Any]) -> str:
    """One short line: ``recorded by alice@acme.test via claude-code 2.1 · 2026-11-30``."""
    how = str(provenance.get("how") or HOW_RECORDED)
    sources = provenance.get("sources") or []
    total = provenance.get("sources_total") or len(sources)
    imported = provenance.get("import") or {}
    text = _HOW_PHRASE.get(how, "{by}").format(
        by=by_label(provenance.get("by"), how=how),
        sources=f" from {total} memor{'y' if total == 1 else 'ies'}" if total else "",
        file=f" from {imported['file']}" if imported.get("file") else "",
    )
    via = via_label(provenance.get("client"))
    if via:
        text += f" via {via}"
    at = str(provenance.get("at") or "")[:10]
    if at:
        text += f" · {at}"
    return text[:LABEL_MAX]


def source_compact(
    provenance: Mapping[str, Any], *, trust: str, reviewed_by: str | None = None
) -> dict[str, Any]:
    """The compact ``source`` of every API and MCP memory result: ``{how, by, via, at, trust, reviewed_by,
    label}`` (``by`` and ``via`` as labels, ``at`` ISO 8601)."""
    how = str(provenance.get("how") or HOW_RECORDED)
    return {
        "how": how,
        "by": by_label(provenance.get("by"), how=how),
        "via": via_label(provenance.get("client")),
        "at": str(provenance.get("at") or ""),
        "trust": trust,
        "reviewed_by": reviewed_by or None,
        "label": provenance_label(provenance),
    }


# --- trust at write ----------------------------------------------------------------------------------


def memory_trust_decide(
    *,
    how: str,
    by: Mapping[str, Any] | None,
    can_write: bool = True,
    trusted_oauth_clients: Iterable[str] = (),
    source_trusts: Iterable[str] = (),
    reviewed_import: bool = False,
) -> str:
    """May automatic injection include a new memory without a person's review (``trusted``), or does it
    wait (``pending``)? docs/security/memory-poisoning.md#trust-at-write has the table:

    * imported: pending, unless the importing admin stated that they reviewed the file;
    * made by consolidation from other memories: trusted only when every source is;
    * recorded, or distilled from a session (``by`` is then the submitter's): a person of role member or
      above, or their token (the creator's role now), or a token the operator created on the server (no
      creator); an OAuth app only when the org trusts its client and the user who connected it is a
      member or above; the service itself. A writer without the right to write memories (one that only
      hands in sessions) or a viewer's is pending.
    """
    if how == HOW_IMPORTED:
        return TRUSTED if reviewed_import else PENDING
    if how in DERIVED:
        trusts = list(source_trusts)
        return TRUSTED if trusts and all(trust == TRUSTED for trust in trusts) else PENDING
    if not can_write:
        return PENDING
    by = by or {}
    kind = by.get("kind")
    role = by.get("role")
    if kind == BY_SYSTEM:
        return TRUSTED
    if kind == BY_USER:
        return TRUSTED if role in WRITER_ROLES else PENDING
    if kind == BY_TOKEN:
        if by.get("token_creator_id") is None and not by.get("token_creator_email"):
            return TRUSTED  # made on the server by the operator (manage.py create_token)
        return TRUSTED if role in WRITER_ROLES else PENDING
    if kind == BY_OAUTH:
        trusted = by.get("oauth_client_id") in set(trusted_oauth_clients)
        return TRUSTED if trusted and role in WRITER_ROLES else PENDING
    return PENDING
