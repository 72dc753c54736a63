"""The hooks' side of the service: one POST within the hook's budget, the submission handed to the local
queue, and what the user is told when memory is off (docs/claude-code.md#when-memory-is-off).

Configuration comes from the environment: ``REASONINGBANK_URL`` (default http://127.0.0.1:8000),
``REASONINGBANK_TOKEN`` (an API token) and ``REASONINGBANK_PROJECT`` (when the token reaches several
projects)."""

from __future__ import annotations

import json
import os
from typing import Any

from .budget import budget_left
from .credential import Credential, credential
from .errors import HookError

# The queue (spool.py: pathlib, subprocess, random, hashlib) is imported where it is used, not here: the tool
# hook runs before every file a client reads and only asks the service, and each module it imports is
# time its client waits (bench/README.md: recall at the moment of action).

NOTICE_HEAD = "ReasoningBank memory is off for this session: "
FIX_TOKEN = (
    "Check REASONINGBANK_TOKEN (an API token with the memories:read and memories:write scopes) and, when the "
    "token reaches several projects, REASONINGBANK_PROJECT."
)
FIX_URL = "Check that the service runs and that REASONINGBANK_URL points at it; captured sessions wait on this machine"
GATEWAY_DOWN = (502, 503, 504)  # a proxy in front of a service that is not there


def call(path: str, body: dict[str, Any], user_agent: str) -> dict[str, Any]:
    """POST ``body`` to the service; the answer's JSON, or a HookError saying why not (with the notice
    for the user when it means memory is off)."""
    from .posting import post  # here, not at the top: a capture never posts

    who = credential_checked()
    url, token = who.url, who.token
    if os.environ.get("REASONINGBANK_PROJECT"):
        body["project"] = os.environ["REASONINGBANK_PROJECT"]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "User-Agent": user_agent}
    try:
        reply = post(f"{url}{path}", json.dumps(body).encode(), headers, budget_left())
    except (OSError, ValueError) as exc:
        notice = ""  # a slow answer is not memory off: the next prompt may get one
        if not isinstance(exc, TimeoutError):
            notice = f"{NOTICE_HEAD}could not reach {url} ({exc}). {FIX_URL} ({spool_state()})."
        raise HookError(f"could not reach {url}: {exc}", notice) from None
    if reply.status >= 300:
        said = f"{reply.status}: {reply.detail}"
        if 300 <= reply.status < 400:
            said += (
                f" (redirected to {reply.headers.get('location', '?')[:200]}: set REASONINGBANK_URL to that address)"
            )
        notice = ""
        if reply.status in (401, 403):
            notice = f"{NOTICE_HEAD}{url} refused the token ({said.rstrip(': ')}). {FIX_TOKEN}"
        elif reply.status in GATEWAY_DOWN:
            notice = f"{NOTICE_HEAD}{url} answered {reply.status}. {FIX_URL} ({spool_state()})."
        raise HookError(f"{url}{path} answered {said}", notice)
    try:
        answer = json.loads(reply.body)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise HookError(f"{url}{path} answered something else than a JSON object")
    return answer


def credential_checked() -> Credential:
    """The service's URL and the token, or a HookError (with its notice) when no token is set."""
    who = credential()
    if not who.token:
        notice = (
            f"{NOTICE_HEAD}REASONINGBANK_TOKEN is not set. Set it to an API token (the dashboard's "
            '"Connect an agent" page) in the environment the agent starts from.'
        )
        raise HookError("set REASONINGBANK_TOKEN to an API token (docs/connecting-agents.md)", notice)
    return who


def hand_off(body: dict[str, Any], client: str, user_agent: str) -> None:
    """Queue a ``session_submit`` for the detached sender and start it (spool.py): the hook returns at
    once, whatever the service's speed, and a submission the service cannot take now is posted later."""
    from . import spool

    who = credential_checked()
    if os.environ.get("REASONINGBANK_PROJECT"):
        body["project"] = os.environ["REASONINGBANK_PROJECT"]
    try:
        dropped = spool.spool_write("/api/v1/sessions", body, str(body["session_id"]), who, client)
    except OSError as exc:
        # no queue on this machine (a state directory that cannot be written): posted within the hook's
        # budget instead, rather than lost
        call("/api/v1/sessions", body, user_agent)
        raise HookError(f"cannot queue in {spool.state_dir()} ({exc.strerror or exc}): sent directly") from None
    try:
        spool.sender_start(who)
    except OSError as exc:
        raise HookError(
            f"queued, but the sender did not start ({exc.strerror or exc}): the next hook starts it"
        ) from None
    if dropped:
        raise HookError(f"the local queue was full: dropped the oldest {dropped} submission(s) to queue this one")


def sender_kick() -> None:
    """Start the sender if captures of this credential still wait (a sender that gave up, a client that
    quit): the service answered this hook, so it may take them now."""
    from . import spool

    try:
        spool.sender_start(credential())
    except OSError:
        pass  # the queue is the capture hook's business; a start or prompt hook still answers


# --- what the user is told -----------------------------------------------------------------------------------


def spool_state() -> str:
    """Where captured sessions wait and how many do, for a notice."""
    from . import spool

    waiting = len(spool.pending(credential()))
    said = f"{waiting} in {spool.state_dir() / 'spool'}, sent once it answers"
    dropped = spool.dropped_count()
    return f"{said}; {dropped} dropped from a full queue so far" if dropped else said


def refusal_notice() -> str:
    """What the sender last heard when the service refused a capture's token (a token that can read but
    not write still gets its memories at start and per prompt, and never learns its sessions are lost)."""
    from . import spool

    who = credential()
    refused = spool.refusal(who)
    if not refused:
        return ""
    return (
        f"ReasoningBank is not saving your sessions: {who.url} refused the last one "
        f"({str(refused.get('reason', ''))[:300].strip()}). {FIX_TOKEN}"
    )


def notice_due(session: str, notice: str) -> str:
    """``notice`` if this session has not been told that memory is off yet (it is remembered in the
    state directory), else "". A session without an id is never told: it could not be told only once."""
    from . import spool

    if not notice or not session:
        return ""
    try:
        return "" if spool.told_before(session) else notice
    except OSError:
        return ""  # no state directory: better silent than told on every prompt
