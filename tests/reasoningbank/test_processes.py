"""Which process a command line starts, as settings read it before Django is set up (pure)."""

from __future__ import annotations

import pytest

from reasoningbank.processes import process_role_from_argv


@pytest.mark.parametrize(
    ("argv", "role"),
    [
        (["manage.py", "qcluster"], "worker"),
        (["/app/.venv/bin/uvicorn", "reasoningbank.asgi:application"], "web"),
        (["/usr/bin/gunicorn", "reasoningbank.wsgi"], "web"),
        (["manage.py", "runserver"], "web"),
        (["manage.py", "migrate"], "command"),
        (["manage.py", "create_token", "acme"], "command"),
    ],
)
def test_a_command_line_names_the_process_it_starts(argv: list[str], role: str) -> None:
    assert process_role_from_argv(argv) == role
