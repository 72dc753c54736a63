"""Every error answer under ``/api/``, ``/oauth/``, ``/.well-known/`` and ``/mcp`` is JSON in the one error
shape (docs/security/http-hardening.md#one-error-shape), whoever answered it.

The views, guards and handlers of this service answer their own errors in the shape
(``http_errors.refusal_body``), with words that say what to fix. But several libraries answer under
those paths too — Django (a 404 page when ``DEBUG`` is on, the CSRF page, a bare 405), the MCP SDK
(a plain-text 400, JSON-RPC errors without ``detail``), drf-spectacular (a YAML 405), uvicorn (a
plain-text 500 when an app raises before answering) — and a new route or an upgrade could add
another. ``JsonErrorsASGI`` sits in front of the whole application and makes the guarantee hold by
construction: an answer of 400 or more to a machine path is held until its body is complete, then

* a JSON object that already has the shape's keys and its area's protocol members (RFC 6749's
  ``error`` under ``/oauth/`` and ``/.well-known/``; a JSON-RPC ``error`` or an RFC 6750 one under
  ``/mcp``) goes out byte for byte;
* a JSON object missing some of them gets them, from what it says (a JSON-RPC ``message`` becomes
  the ``detail``, an OAuth ``error_description`` too);
* anything else is replaced by a body in the area's flavour saying what the status means, every
  other header kept (``Allow``, ``Retry-After``, ``WWW-Authenticate``, ``X-Request-ID``).

Successful answers, redirects, answers to ``HEAD`` and every dashboard page pass untouched: only the
status line of a response is looked at until it says "error". No Django here.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from reasoningbank.http_errors import (
    JSONRPC_INTERNAL_ERROR,
    JSONRPC_INVALID_REQUEST,
    JSONRPC_PARSE_ERROR,
    area_for_path,
    error_body,
    refusal_body,
)
from reasoningbank.request_context import ASGIApp, Message, Receive, Scope, Send

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# an error body larger than this is a JSON answer of our own (a long list of field errors): sent on
# as it is rather than held in memory; a non-JSON one is replaced all the same
HELD_BODY_MAX = 256 * 1024

# status → (the shape's ``code``, RFC 6749's ``error`` for /oauth/ and /.well-known/, a sentence)
_STATUS_WORDS: dict[int, tuple[str, str, str]] = {
    400: ("bad_request", "invalid_request", "Bad request."),
    401: ("not_authenticated", "invalid_client", "Authentication is required."),
    403: ("permission_denied", "access_denied", "Forbidden."),
    404: ("not_found", "not_found", "No endpoint at {path}."),
    405: ("method_not_allowed", "invalid_request", "Method {method} is not allowed at {path}{allowed}."),
    406: ("not_acceptable", "invalid_request", "Not acceptable: send 'Accept: application/json'."),
    408: ("timeout", "invalid_request", "The request took too long to arrive."),
    409: ("conflict", "invalid_request", "The request conflicts with the current state."),
    411: ("length_required", "invalid_request", "A request body needs a Content-Length header here."),
    413: ("too_large", "invalid_request", "The request body is larger than this endpoint accepts."),
    415: ("unsupported_media_type", "invalid_request", "Unsupported Content-Type {content_type}."),
    421: ("invalid_host", "invalid_request", "Invalid Host header."),
    429: ("throttled", "too_many_requests", "Too many requests: wait Retry-After seconds."),
    500: ("server_error", "server_error", "Internal server error."),
    503: ("unavailable", "temporarily_unavailable", "The service is unavailable right now; retry shortly."),
}
_JSONRPC_CODES = {JSONRPC_PARSE_ERROR: "parse_error", JSONRPC_INVALID_REQUEST: "invalid"}
_DROPPED_HEADERS = frozenset({b"content-type", b"content-length", b"content-encoding", b"transfer-encoding"})


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str:
    return next((value.decode("latin-1") for key, value in headers if key.lower() == name), "")


def _status_words(status: int, *, path: str, method: str, allowed: str, content_type: str) -> tuple[str, str, str]:
    code, oauth_error, sentence = _STATUS_WORDS.get(
        status,
        ("server_error", "server_error", "") if status >= 500 else ("error", "invalid_request", ""),
    )
    sentence = sentence.format(
        path=repr(path),
        method=method,
        allowed=f" (allowed: {allowed})" if allowed else "",
        content_type=repr(content_type.split(";", 1)[0].strip() or "(none)"),
    )
    return code, oauth_error, sentence or _phrase(status)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase + "."
    except ValueError:
        return f"Error {status}."


def _plain_text(body: bytes, content_type: str) -> str | None:
    """A short one-line text answer (the MCP SDK's "Invalid Content-Type header"), kept as the detail."""
    if not content_type.lower().startswith("text/plain"):
        return None
    try:
        text = body.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    return text if text and len(text) <= 300 and text.isprintable() else None


def error_body_for(
    status: int, body: bytes, *, path: str, method: str, content_type: str, allowed: str = "", request_type: str = ""
) -> dict[str, Any] | None:
    """The body an error answer to ``path`` should carry, or None when ``body`` already is one
    (``request_type``: the request's own Content-Type, for a 415's sentence)."""
    area = area_for_path(path)
    code, oauth_error, sentence = _status_words(
        status, path=path, method=method, allowed=allowed, content_type=request_type
    )
    data: Any = None
    if _is_json(content_type):
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            data = None
    if not isinstance(data, dict):
        detail = _plain_text(body, content_type) or sentence
        jsonrpc_code = JSONRPC_INTERNAL_ERROR if status >= 500 else JSONRPC_INVALID_REQUEST
        return refusal_body(path, detail, code, oauth_error=oauth_error, jsonrpc_code=jsonrpc_code)
    completed = _completed(data, area, status=status, code=code, oauth_error=oauth_error, sentence=sentence)
    return None if completed == data else completed


def _completed(
    data: dict[str, Any], area: str, *, status: int, code: str, oauth_error: str, sentence: str
) -> dict[str, Any]:
    """``data`` with whatever the shape and its area's protocol lack, taken from what it does say."""
    rpc = data["error"] if isinstance(data.get("error"), dict) else None
    oauth = data["error"] if isinstance(data.get("error"), str) else None
    detail = _first_text(data.get("detail"), data.get("error_description"), (rpc or {}).get("message")) or sentence
    if isinstance(data.get("code"), str):
        code = data["code"]
    elif oauth:
        code = oauth
    elif rpc is not None and status < 405 and rpc.get("code") in _JSONRPC_CODES:
        code = _JSONRPC_CODES[rpc["code"]]  # a malformed message: parse_error or invalid
    out = {**data, **error_body(detail, code, data["errors"] if isinstance(data.get("errors"), dict) else None)}
    if area == "oauth":
        out["error"] = oauth or oauth_error
        out.setdefault("error_description", detail)
    elif area == "mcp" and rpc is None and oauth is None:
        jsonrpc_code = JSONRPC_INTERNAL_ERROR if status >= 500 else JSONRPC_INVALID_REQUEST
        out.update({"jsonrpc": "2.0", "id": None, "error": {"code": jsonrpc_code, "message": detail}})
    return out


def _first_text(*values: Any) -> str | None:
    return next((value for value in values if isinstance(value, str) and value.strip()), None)


class JsonErrorsASGI:
    """Outermost around the whole application (``reasoningbank/asgi.py``): see the module's docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") == "HEAD":
            await self.app(scope, receive, send)
            return
        path = _route_path(scope)
        if area_for_path(path) == "page":
            await self.app(scope, receive, send)
            return
        answer = _HeldAnswer(scope, path, send)
        try:
            await self.app(scope, receive, answer.send)
        except Exception:
            await answer.app_failed()  # a JSON 500, unless an answer is already on its way; then raise
            raise
        await answer.app_finished()


class _HeldAnswer:
    """One response on its way out: passed through until its status says "error", then held."""

    def __init__(self, scope: Scope, path: str, send: Send) -> None:
        self.scope, self.path, self.downstream = scope, path, send
        self.start: Message | None = None  # the held status line
        self.chunks: list[bytes] = []
        self.size = 0
        self.state = "waiting"  # → "passing" (not an error, or ours and long) | "holding" → "done" (answered)

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if self.state == "waiting" and kind == "http.response.start":
            if int(message["status"]) < 400 or message.get("trailers"):
                self.state = "passing"
                await self.downstream(message)
                return
            self.start, self.state = message, "holding"
            return
        if self.state == "holding" and kind == "http.response.body":
            self.chunks.append(message.get("body", b""))
            self.size += len(message.get("body", b""))
            if not message.get("more_body", False):
                await self._answer()
            elif self.size > HELD_BODY_MAX:
                await self._overflow()
            return
        if self.state == "done":
            return  # the rest of an original body already answered for
        await self.downstream(message)

    async def _answer(self) -> None:
        assert self.start is not None
        status, headers = int(self.start["status"]), list(self.start.get("headers", ()))
        body = b"".join(self.chunks)
        request_headers = list(self.scope.get("headers", ()))
        shaped = error_body_for(
            status,
            body,
            path=self.path,
            method=str(self.scope.get("method", "")),
            content_type=_header(headers, b"content-type"),
            allowed=_header(headers, b"allow"),
            request_type=_header(request_headers, b"content-type"),
        )
        self.state = "done"
        if shaped is None:
            await self.downstream(self.start)
            await self.downstream({"type": "http.response.body", "body": body})
            return
        await self._send_json(status, headers, shaped)

    async def _overflow(self) -> None:
        """A long error body: JSON goes on as it is (it is ours), anything else is replaced."""
        assert self.start is not None
        headers = list(self.start.get("headers", ()))
        if _is_json(_header(headers, b"content-type")):
            self.state = "passing"
            await self.downstream(self.start)
            await self.downstream({"type": "http.response.body", "body": b"".join(self.chunks), "more_body": True})
            return
        self.chunks = []  # only the status matters now
        await self._answer()

    async def app_failed(self) -> None:
        """The app raised. Before anything went out, the server would answer a plain-text 500 (and
        a half-sent error body is no answer either): a JSON 500 instead."""
        if self.state in ("waiting", "holding"):
            self.state = "done"
            await self._send_json(500, [], self._server_error())

    async def app_finished(self) -> None:
        if self.state == "holding":  # the app ended without finishing its body: answer what we have
            await self._answer()

    def _server_error(self) -> dict[str, Any]:
        body = refusal_body(
            self.path, "Internal server error.", "server_error", oauth_error="server_error",
            jsonrpc_code=JSONRPC_INTERNAL_ERROR,
        )  # fmt: skip
        assert body is not None
        return body

    async def _send_json(self, status: int, headers: list[tuple[bytes, bytes]], body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        kept = [(key, value) for key, value in headers if key.lower() not in _DROPPED_HEADERS]
        await self.downstream(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    *kept,
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode()),
                ],
            }
        )
        await self.downstream({"type": "http.response.body", "body": data})


def _route_path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    root = scope.get("root_path", "")
    return path[len(root) :] or "/" if root and path.startswith(root) else path
