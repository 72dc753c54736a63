"""The tests' own HTTP servers go through ``serving`` (tests/http_thread.py), which stops them quickly."""

from __future__ import annotations

import socket
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from tests.http_thread import serving
from tests.repo_files import REPO, repo_files

# the helper, this check, and a program of its own (started and stopped as a process)
ALLOWED = {"tests/http_thread.py", "tests/test_http_thread.py", "tests/idp/saml_idp.py"}


class Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_served_server_answers_inside_the_block_and_is_closed_after_it():
    with serving(HTTPServer(("127.0.0.1", 0), Hello)) as server:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
            assert answer.read() == b"hello"
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_no_test_serves_a_server_on_a_thread_of_its_own():
    offenders = [
        str(path.relative_to(REPO))
        for path in repo_files()
        if path.suffix == ".py"
        and path.relative_to(REPO).parts[0] == "tests"
        and str(path.relative_to(REPO)) not in ALLOWED
        and ".serve_forever" in path.read_text()
    ]
    assert offenders == [], f"serve these with tests.http_thread.serving (a quick stop): {offenders}"
