"""The hooks' one POST (reasoningbank_hooks/posting.py) against real sockets on loopback: the request it
writes, the replies a server or a proxy in front of it may send (Content-Length, chunked, until close,
1xx first, cut short), TLS with a certificate the machine trusts or does not, a proxy from the environment
(then urllib sends), and what a hook makes of a redirect."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.hook_modules import posting

JSON = {"Content-Type": "application/json", "Authorization": "Bearer rb_test"}


@contextmanager
def one_reply(reply: bytes, *, tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, list[bytes]]]:
    """A server on loopback that takes one connection, reads the request (head and Content-Length body),
    answers ``reply`` byte for byte and closes. Yields its base URL and the requests it read."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        if tls is not None:
            try:
                conn = tls.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                return  # the client refused the certificate
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            while len(body) < length:
                body += conn.recv(65536)
            seen.append(head + b"\r\n\r\n" + body)
            conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}", seen
    finally:
        thread.join(timeout=5)
        listener.close()


def test_a_post_sends_one_http_1_1_request_with_its_headers_and_body_and_reads_a_content_length_reply():
    body = b'{"memories": []}'
    with one_reply(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n" + body) as (
        url,
        seen,
    ):
        reply = posting.post(f"{url}/api/v1/memories/recall?x=1", b'{"path": "a.py"}', JSON, 5)

    assert (reply.status, reply.body, reply.headers["content-type"]) == (200, body, "application/json")
    head, _, sent = seen[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /api/v1/memories/recall?x=1 HTTP/1.1"
    assert {f"Host: {url.removeprefix('http://')}", "Authorization: Bearer rb_test", "Content-Length: 16"} <= set(lines)
    assert "Connection: close" in lines and sent == b'{"path": "a.py"}'


def test_a_chunked_reply_after_a_100_continue_is_read_whole():
    chunked = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked += b'5\r\n{"a":\r\n3;ext=1\r\n 1}\r\n0\r\nX-Trailer: t\r\n\r\n'
    with one_reply(chunked) as (url, _):
        reply = posting.post(url, b"{}", JSON, 5)
    assert (reply.status, reply.body) == (200, b'{"a": 1}')


def test_a_reply_without_a_length_is_read_until_the_server_closes_and_an_error_keeps_its_detail():
    with one_reply(b'HTTP/1.0 422 Unprocessable\r\n\r\n{"detail": "path is required"}') as (url, _):
        reply = posting.post(url, b"{}", JSON, 5)
    assert (reply.status, reply.detail) == (422, "path is required")


@pytest.mark.parametrize(
    "reply",
    [
        b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"short"',
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nabc",
    ],
    ids=["content-length", "chunked"],
)
def test_a_reply_cut_short_is_an_os_error_not_half_a_body(reply):
    with one_reply(reply) as (url, _), pytest.raises(OSError, match="ended"):
        posting.post(url, b"{}", JSON, 5)


def test_something_that_is_not_http_is_a_value_error():
    with one_reply(b"SSH-2.0-OpenSSH_9.2\r\n") as (url, _), pytest.raises(ValueError, match="not an HTTP reply"):
        posting.post(url, b"{}", JSON, 5)


def test_a_closed_port_and_a_silent_server_are_os_errors_the_second_a_timeout():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        closed = probe.getsockname()[1]
    with pytest.raises(OSError):
        posting.post(f"http://127.0.0.1:{closed}/", b"{}", JSON, 2)
    with socket.create_server(("127.0.0.1", 0)) as silent, pytest.raises(TimeoutError):
        posting.post(f"http://127.0.0.1:{silent.getsockname()[1]}/", b"{}", JSON, 0.3)


@pytest.mark.parametrize(
    ("url", "parts"),
    [
        ("http://127.0.0.1:8000", ("http", "127.0.0.1", 8000, "/")),
        ("HTTPS://rb.example.com/api/v1/x?y=1", ("https", "rb.example.com", 443, "/api/v1/x?y=1")),
        ("http://[::1]:9/p", ("http", "[::1]", 9, "/p")),
        ("http://[::1]/p", ("http", "[::1]", 80, "/p")),
    ],
)
def test_urls_split_into_scheme_host_port_and_target(url, parts):
    assert posting.url_split(url) == parts


@pytest.mark.parametrize("url", ["ftp://h/", "127.0.0.1:8000", "http://h:x/", "http://h:70000/", "http:///p"])
def test_a_url_that_is_not_http_is_refused_by_name(url):
    with pytest.raises(ValueError):
        posting.url_split(url)


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


def test_https_verifies_the_certificate_against_what_the_machine_trusts(tmp_path, monkeypatch):
    cert_file, key_file = _certificate(tmp_path)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    with one_reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", tls=server) as (url, _):
        with pytest.raises(ssl.SSLCertVerificationError):  # an OSError: "could not reach" to the hook
            posting.post(url, b"{}", JSON, 5)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # the machine now trusts it (OpenSSL's variable)
    with one_reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", tls=server) as (url, seen):
        reply = posting.post(f"{url}/api/v1/memories/recall", b"{}", JSON, 5)
    assert (reply.status, reply.body) == (200, b"{}")
    assert seen[0].startswith(b"POST /api/v1/memories/recall HTTP/1.1\r\n")


def test_a_proxy_in_the_environment_gets_the_request_through_urllib(monkeypatch):
    import urllib.request

    # urlopen's shared opener, built before the proxy is set (as any earlier request in the process would)
    monkeypatch.setattr(urllib.request, "_opener", None)
    with one_reply(b"HTTP/1.1 204 No Content\r\n\r\n") as (url, _):
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=5).close()
    with one_reply(b"HTTP/1.1 201 Created\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}") as (proxy, seen):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        reply = posting.post("http://rb.internal:8000/api/v1/sessions", b"{}", JSON, 5)
    assert (reply.status, reply.headers["retry-after"]) == (201, "3")
    assert seen[0].startswith(b"POST http://rb.internal:8000/api/v1/sessions HTTP/1.1\r\n")  # the proxy's form


def test_a_redirect_is_not_followed_and_the_hook_names_the_address_to_use(monkeypatch):
    from reasoningbank_hooks import budget, service
    from reasoningbank_hooks.errors import HookError

    moved = b"HTTP/1.1 308 Permanent Redirect\r\nLocation: https://rb.example.com/api/v1/memories/recall\r\n"
    moved += b"Content-Length: 0\r\n\r\n"
    with one_reply(moved) as (url, seen):
        monkeypatch.setenv("REASONINGBANK_URL", url)
        monkeypatch.setenv("REASONINGBANK_TOKEN", "rb_test")
        budget.clock_start()
        with pytest.raises(HookError, match="redirected to https://rb.example.com/api/v1/memories/recall"):
            service.call("/api/v1/memories/recall", {"path": "a.py"}, "test")
    assert len(seen) == 1  # asked once, never re-sent elsewhere
