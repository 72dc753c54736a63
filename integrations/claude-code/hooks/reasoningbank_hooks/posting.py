"""One POST to the service: HTTP/1.1 on a socket of its own (TLS for ``https://``), ``Connection: close``.

Why not urllib: the tool hook runs before every file an agent reads, and on the 2-vCPU machine importing
``urllib.request`` (``http.client`` → ``email.parser``, ``ssl``, ``hashlib``, ``tempfile``) took ~50 ms of a
hook whose whole budget is 150 ms (bench/README.md, recall at the moment of action). A hook sends one
request and reads one reply, so what it needs of HTTP is small: a request line and headers, then a reply's
status, headers and body (``Content-Length``, chunked, or until the server closes). What it does not need
stays urllib's: a proxy named in the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, in either
case) or credentials in the URL send the request through ``urllib.request``, which speaks to proxies and
honours ``NO_PROXY``. Redirects are not followed (a POST that is redirected loses its body): a 3xx is a reply
like any other, and the caller names its ``Location``.
"""

from __future__ import annotations

import json
import os
import socket
from typing import BinaryIO, NamedTuple

LINE_MAX = 65536  # a status or header line longer than this is no reply of ours
HEADERS_MAX = 100


class Reply(NamedTuple):
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    @property
    def detail(self) -> str:
        """The ``detail`` of an error reply's JSON, at most 300 characters; "" when it has none."""
        try:
            answer = json.loads(self.body)
        except ValueError:
            return ""
        return str(answer.get("detail", ""))[:300] if isinstance(answer, dict) else ""


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Reply:
    """POST ``body`` to ``url``; the reply whatever its status. OSError when no complete reply came (refused,
    reset, timed out: ``TimeoutError``), ValueError for a URL or a reply that is not HTTP."""
    scheme, host, port, target = url_split(url)
    if proxied(scheme) or "@" in host:
        return _post_urllib(url, body, headers, timeout)
    head = [f"POST {target} HTTP/1.1", f"Host: {_host_header(host, port, scheme)}"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    head += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    with socket.create_connection((host.strip("[]"), port), timeout=timeout) as raw:
        sock = raw
        if scheme == "https":
            import ssl  # only for https: a local service on http:// never pays for it

            sock = ssl.create_default_context().wrap_socket(raw, server_hostname=host.strip("[]"))
        with sock:
            sock.sendall("\r\n".join(head).encode("latin-1") + body)
            with sock.makefile("rb") as reply:
                return reply_read(reply)


def url_split(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path and query)`` of an http(s) URL; ValueError for anything else."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise ValueError(f"not an http:// or https:// URL: {url[:200]!r}")
    authority, slash, path = rest.partition("/")
    authority, _, _ = authority.partition("?")
    target = f"/{path}" if slash else "/"
    host, port = authority, 443 if scheme == "https" else 80
    closing = authority.rfind("]")
    colon = authority.rfind(":")
    if colon > closing:
        host, digits = authority[:colon], authority[colon + 1 :]
        if not digits.isdigit() or not 0 < int(digits) < 65536:
            raise ValueError(f"not a port: {digits[:20]!r} in {url[:200]!r}")
        port = int(digits)
    if not host:
        raise ValueError(f"no host in {url[:200]!r}")
    return scheme, host, port, target


def proxied(scheme: str) -> bool:
    """Whether the environment names a proxy for ``scheme`` (then urllib sends, honouring NO_PROXY)."""
    names = (f"{scheme}_proxy", "all_proxy")
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in names)


def _host_header(host: str, port: int, scheme: str) -> str:
    default = 443 if scheme == "https" else 80
    return host if port == default else f"{host}:{port}"


def reply_read(reply: BinaryIO) -> Reply:
    """A reply from a binary file on the connection: its status line (1xx replies skipped), headers and body."""
    while True:
        status_line = reply.readline(LINE_MAX + 1)
        parts = status_line.split(None, 2)
        if len(status_line) > LINE_MAX or len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise ValueError(f"not an HTTP reply: {status_line[:80]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        for _ in range(HEADERS_MAX + 1):
            line = reply.readline(LINE_MAX + 1)
            if line in (b"\r\n", b"\n", b""):
                break
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon:
                raise ValueError(f"not an HTTP header: {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        else:
            raise ValueError(f"more than {HEADERS_MAX} headers in the reply")
        if not 100 <= status < 200:
            break
    if status in (204, 304):
        return Reply(status, headers, b"")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Reply(status, headers, _chunks_read(reply))
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise ValueError(f"not a Content-Length: {length[:20]!r}")
        body = reply.read(int(length))
        if len(body) < int(length):
            raise OSError(f"the reply ended after {len(body)} of {length} bytes")
        return Reply(status, headers, body)
    return Reply(status, headers, reply.read())


def _chunks_read(reply: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = reply.readline(LINE_MAX + 1)
        if not size_line:
            raise OSError("the reply ended inside its chunks")
        size = int(size_line.split(b";", 1)[0].strip() or b"x", 16)  # ValueError when it is no hex number
        if size == 0:
            while reply.readline(LINE_MAX + 1) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        chunk = reply.read(size)
        if len(chunk) < size:
            raise OSError("the reply ended inside a chunk")
        parts.append(chunk)
        reply.readline(LINE_MAX + 1)  # the CRLF after the chunk


def _post_urllib(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Reply:
    import http.client
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    # an opener of its own: ``urlopen``'s shared one keeps the proxies of the environment it first saw
    opener = urllib.request.build_opener()
    try:
        with opener.open(request, timeout=timeout) as answer:
            return Reply(answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())
    except urllib.error.URLError as exc:
        reason = exc.reason
        raise reason if isinstance(reason, OSError) else OSError(str(reason)) from None
    except http.client.HTTPException as exc:
        raise OSError(f"{type(exc).__name__}: {exc}") from None
