"""The read replica's rules, without Django (docs/operations.md#a-read-replica): is the replica close
enough to read from, how long a principal's reads stay on the primary after it wrote, and which
tables a SQL statement writes."""

from __future__ import annotations

import re

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# the target of an INSERT, UPDATE or DELETE anywhere in a statement (a CTE may hold one), quoted or not
_WRITE = re.compile(
    r'\b(INSERT\s+INTO|DELETE\s+FROM|UPDATE|MERGE\s+INTO|TRUNCATE(?:\s+TABLE)?)\s+(?:ONLY\s+)?"?([A-Za-z_][\w$]*)"?',
    re.IGNORECASE,
)
# "UPDATE" that names no table: row locks (FOR UPDATE, FOR NO KEY UPDATE) and upserts (DO UPDATE SET)
_NOT_A_TARGET = re.compile(r"\b(?:FOR|KEY|DO)$", re.IGNORECASE)


def written_tables(sql: str) -> list[str]:
    """The tables ``sql`` writes, lower case, in order (empty for a read). A row lock
    (``SELECT … FOR UPDATE``) is no write: what follows it under the lock is."""
    tables = []
    for match in _WRITE.finditer(sql):
        if match.group(1).upper() == "UPDATE" and _NOT_A_TARGET.search(sql[: match.start()].rstrip()):
            continue
        tables.append(match.group(2).lower())
    return tables


def lag_verdict(
    *, in_recovery: bool, caught_up: bool, seconds_since_replay: float | None, max_lag: float
) -> tuple[bool, float | None, str]:
    """(usable, lag in seconds or None when unknown, reason) for a replica that

    * ``in_recovery``: is a standby at all (a promoted or misconfigured server is not read from:
      its rows may no longer be the primary's),
    * ``caught_up``: has replayed the primary's WAL position read just before; then its lag is 0
      however old its last replayed transaction (an idle primary commits nothing),
    * ``seconds_since_replay``: else, how long ago the last transaction it replayed committed (None:
      none replayed since it started, so how far behind it is cannot be told).
    """
    if not in_recovery:
        return False, None, "not_standby"
    if caught_up:
        return True, 0.0, "ok"
    if seconds_since_replay is None:
        return False, None, "lagging"
    lag = max(0.0, float(seconds_since_replay))
    return (lag <= max_lag), lag, ("ok" if lag <= max_lag else "lagging")


def sticky_seconds(*, max_lag: float, check_interval: float) -> float:
    """How long a principal's reads stay on the primary after it wrote: the most a replica in use can
    be behind — at most ``max_lag`` when last checked, and the lag grows at most by the time until the
    next check. After that the replica has the write (or is found lagging and not used)."""
    return max_lag + check_interval
