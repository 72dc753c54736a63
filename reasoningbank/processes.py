"""Processes of this machine, as the supervision of work in progress sees them (no Django here: the
embedded database's helpers use it before settings exist). docs/operations.md
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract


def worker_identity() -> str:
    """This process, as a running row records it."""
    return f"{socket.gethostname()}/{os.getpid()}"


def process_exists(pid: int) -> bool:
    """Whether ``pid`` is a live process on this machine (an exited one nobody reaped does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        pass
    return not process_is_zombie(pid)


def process_is_zombie(pid: int) -> bool:
    """An exited process nobody has reaped yet (in containers whose init does not reap orphans, a
    killed process stays one); only Linux's /proc tells."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].startswith("Z")


def worker_is_gone(identity: str) -> bool:
    """True when ``identity`` names a process of this host that no longer exists. A process of another
    host (another container, another machine) is never judged from here: its heartbeat is."""
    host, _, pid = identity.rpartition("/")
    if not host or host != socket.gethostname() or not pid.isdigit():
        return False
    return not process_exists(int(pid))


def process_role_from_argv(argv: list[str]) -> str:
    """Which of the service's processes a command line starts: ``worker`` (django-q2's qcluster, which
    forks its sentinel, pusher, monitor and workers from one process), ``web`` (uvicorn's or gunicorn's
    workers, runserver) or ``command`` (any other manage.py command). Settings read it before Django is
    set up: the worker gets plain database connections, and every span names its process."""
    if argv[1:2] == ["qcluster"]:
        return "worker"
    if any(server in argv[0] for server in ("uvicorn", "gunicorn")) or argv[1:2] == ["runserver"]:
        return "web"
    return "command"
