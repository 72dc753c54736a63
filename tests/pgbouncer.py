"""Debian's PgBouncer in transaction pooling in front of a test PostgreSQL (``tests/pg_servers.py``), for
the tests of running behind a pooler (docs/operations.md#pgbouncer-in-transaction-pooling).
``scripts/ensure-pgbouncer.sh`` installs it; PgBouncer refuses to run as root, so as root it runs as the
test servers' own system user."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.pg_servers import PgServer, free_port

PGBOUNCER = Path(os.environ.get("PGBOUNCER_PATH", "/usr/sbin/pgbouncer"))
_SYSTEM_USER = "embedded_postgres"  # the user tests/pg_servers.py runs its servers as under root


@dataclass
class PgBouncer:
    work_dir: Path
    port: int
    proc: subprocess.Popen[bytes]

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def log_tail(self, lines: int = 40) -> str:
        log = self.work_dir / "pgbouncer.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def pgbouncer_start(server: PgServer, work_dir: Path, *, pool_size: int, port: int | None = None) -> PgBouncer:
    """PgBouncer on 127.0.0.1 in ``pool_mode = transaction``: every database of ``server``, at most
    ``pool_size`` server connections per database, shared by all its clients."""
    if not PGBOUNCER.exists():
        raise RuntimeError(f"PgBouncer not found at {PGBOUNCER}; run scripts/ensure-pgbouncer.sh")
    port = port or free_port()
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "userlist.txt").write_text('"postgres" ""\n')
    (work_dir / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host=127.0.0.1 port={server.port}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {work_dir / 'userlist.txt'}\n"
        "pool_mode = transaction\n"
        f"default_pool_size = {pool_size}\n"
        "max_client_conn = 500\n"
        f"logfile = {work_dir / 'pgbouncer.log'}\n"
        f"pidfile = {work_dir / 'pgbouncer.pid'}\n"
    )
    command = [str(PGBOUNCER)]
    if os.geteuid() == 0:
        for path in [work_dir, *work_dir.iterdir()]:
            shutil.chown(path, user=_SYSTEM_USER)
        command += ["-u", _SYSTEM_USER]
    proc = subprocess.Popen(
        [*command, str(work_dir / "pgbouncer.ini")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    bouncer = PgBouncer(work_dir, port, proc)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            error = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"pgbouncer exited with {proc.returncode}: {error}\n{bouncer.log_tail()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return bouncer
        except OSError:
            time.sleep(0.1)
    bouncer.stop()
    raise RuntimeError(f"pgbouncer did not listen on {port} within 30 s\n{bouncer.log_tail()}")
