"""The local queue the capture hooks hand their submissions to, and the detached sender that posts it
(docs/claude-code.md#capture-hand-off). Every agent's capture hook ends here.

A client gives a hook little time — Claude Code cancels a SessionEnd hook after about 1.5 s — while a
long transcript on a busy service can take longer than that to submit. So a capture hook never talks to
the service: it writes the submission to the user's queue directory (atomically, mode 0600, the queue
bounded in files and bytes, the oldest dropped and counted) and starts the sender, a process of its own
session that outlives the hook and the client. The sender posts the queue oldest first with retries and
exponential backoff that honours ``Retry-After``, deletes what was accepted (2xx) or refused for good
(4xx but 408 and 429), keeps the rest, and gives up after ``REASONINGBANK_SEND_SECONDS``: the next hook
starts it again. One sender at a time per user and credential, through a lock file.

The token is never written to disk: a queued file names its service and a fingerprint of the URL and the
token, and only a sender started with the same URL and token posts it.

The directory also keeps what the hooks tell the user once per session (docs/claude-code.md#when-memory-is-off):
the sender's last refusal, the count of submissions dropped from a full queue, and which sessions were
told.

    python3 reasoningbank_spool.py send     the sender (the hooks start it; by hand it sends now)

Python's standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from .budget import env_number
from .credential import Credential, credential

SUFFIX = ".json"
TEMP_PREFIX = ".tmp-"
REQUEST_TIMEOUT = 60.0  # one POST: a long trace on a busy service takes seconds, never a minute
BACKOFF_FIRST = 1.0
BACKOFF_MOST = 60.0
TOLD_KEPT_SECONDS = 30 * 86400  # a session told more than a month ago will not come back
TEMP_KEPT_SECONDS = 3600  # a temporary file this old was left by a hook that died mid-write
LOG_MAX_BYTES = 256 * 1024
USER_AGENT = "reasoningbank-hook-sender"
SENDER = Path(__file__).resolve().parent.parent / "reasoningbank_spool.py"  # the sender's entry script


class Attempt(NamedTuple):
    """A POST's outcome: the status (None when no answer came), its ``Retry-After`` in seconds, a reason."""

    status: int | None
    retry_after: float | None
    reason: str

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def refused(self) -> bool:
        """Refused for good: sending it again would be refused again."""
        return self.status is not None and 400 <= self.status < 500 and self.status not in (408, 429)


def state_dir() -> Path:
    """The user's state directory: ``REASONINGBANK_STATE_DIR``, else ``$XDG_STATE_HOME/reasoningbank``,
    else ``~/.local/state/reasoningbank``."""
    if os.environ.get("REASONINGBANK_STATE_DIR", "").strip():
        return Path(os.environ["REASONINGBANK_STATE_DIR"]).expanduser()
    base = os.environ.get("XDG_STATE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "reasoningbank"


def private_dir(path: Path) -> Path:
    """``path`` (the state directory or one in it), made if missing, both readable by their owner only:
    the queue holds transcripts."""
    root = state_dir()
    root.parent.mkdir(parents=True, exist_ok=True)
    for folder in (root, path):
        folder.mkdir(mode=0o700, exist_ok=True)
    return path


def spool_dir() -> Path:
    return private_dir(state_dir() / "spool")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_write_atomic(path: Path, data: bytes) -> None:
    """``data`` at ``path`` whole or not at all, mode 0600: written under a temporary name, then renamed."""
    temp = path.with_name(f"{TEMP_PREFIX}{os.getpid()}-{random.getrandbits(32):08x}-{path.name}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temp, path)
    except BaseException:
        with _quietly():
            os.unlink(temp)
        raise


@contextmanager
def _quietly() -> Iterator[None]:
    try:
        yield
    except OSError:
        pass


# --- the queue -----------------------------------------------------------------------------------------


class Queued(NamedTuple):
    """A queued file, from its name: ``<queued at, ns>-<credential>-<session>-<pid>.json``."""

    path: Path
    queued_ns: int
    fingerprint: str
    session: str


def queued_of(path: Path) -> Queued | None:
    parts = path.name[: -len(SUFFIX)].split("-")
    if not path.name.endswith(SUFFIX) or len(parts) != 4 or not parts[0].isdigit():
        return None
    return Queued(path, int(parts[0]), parts[1], parts[2])


def queued(folder: Path) -> list[Queued]:
    """The queued files, oldest first."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = [entry for name in names if (entry := queued_of(folder / name))]
    return sorted(found, key=lambda entry: (entry.queued_ns, entry.path.name))


def spool_write(path: str, body: dict[str, Any], session: str, who: Credential, client: str = "") -> int:
    """Queue ``body`` for a POST to ``path`` (``client``: the agent whose hook queued it, named in the
    sender's User-Agent); how many older submissions were dropped to keep the queue within its bounds. An
    older submission of the same session is superseded: the newer trace holds it."""
    folder = spool_dir()
    now = time.time_ns()
    name = f"{now:020d}-{who.fingerprint}-{digest(session)}-{os.getpid()}{SUFFIX}"
    record = {"url": who.url, "path": path, "body": body, "queued_at": now / 1e9, "client": client}
    file_write_atomic(folder / name, json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode())
    for entry in queued(folder):
        if entry.session == digest(session) and entry.fingerprint == who.fingerprint and entry.path.name != name:
            with _quietly():
                os.unlink(entry.path)
    temporary_files_sweep(folder)
    return spool_bound(folder)


def spool_bound(folder: Path) -> int:
    """Drop the oldest files until the queue holds at most ``REASONINGBANK_SPOOL_MAX_FILES`` files and
    ``REASONINGBANK_SPOOL_MAX_MB`` megabytes; how many were dropped (also added to the count kept in the
    state directory)."""
    most_files = int(env_number("REASONINGBANK_SPOOL_MAX_FILES", 100, low=1, high=100_000, strict=False))
    most_bytes = int(env_number("REASONINGBANK_SPOOL_MAX_MB", 64, low=1, high=100_000, strict=False) * 1_000_000)
    sized: list[tuple[Queued, int]] = []
    for entry in queued(folder):
        with _quietly():
            sized.append((entry, entry.path.stat().st_size))
    total = sum(size for _, size in sized)
    dropped = 0
    while sized and (len(sized) > most_files or total > most_bytes):
        entry, size = sized.pop(0)
        with _quietly():
            os.unlink(entry.path)
            dropped += 1
        total -= size
    if dropped:
        dropped_add(dropped)
    return dropped


def temporary_files_sweep(folder: Path) -> None:
    """Temporary files left by a hook that died mid-write (an atomic write's other half)."""
    with _quietly():
        for name in os.listdir(folder):
            if name.startswith(TEMP_PREFIX):
                path = folder / name
                with _quietly():
                    if time.time() - path.stat().st_mtime > TEMP_KEPT_SECONDS:
                        os.unlink(path)


def pending(who: Credential) -> list[Queued]:
    return [entry for entry in queued(state_dir() / "spool") if entry.fingerprint == who.fingerprint]


# --- what the hooks remember between runs ------------------------------------------------------------------


def json_read(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def dropped_add(count: int) -> None:
    path = private_dir(state_dir()) / "dropped.json"
    total = int(json_read(path).get("dropped", 0)) + count
    file_write_atomic(path, json.dumps({"dropped": total, "at": time.time()}).encode())


def dropped_count() -> int:
    return int(json_read(state_dir() / "dropped.json").get("dropped", 0))


def refusal_path(who: Credential) -> Path:
    return state_dir() / f"refused-{who.fingerprint}.json"


def refusal_note(who: Credential, status: int | None, reason: str) -> None:
    """The sender's last word on this credential: a refusal of the token (401, 403) is kept for the next
    hook to tell the user; an accepted submission clears it."""
    path = refusal_path(who)
    if status in (401, 403):
        file_write_atomic(path, json.dumps({"status": status, "reason": reason, "at": time.time()}).encode())
    elif status is not None and 200 <= status < 300:
        with _quietly():
            os.unlink(path)


def refusal(who: Credential) -> dict[str, Any]:
    return json_read(refusal_path(who))


def told_before(session: str) -> bool:
    """True if this session was already told that memory is off; else remembers that it now is."""
    folder = private_dir(state_dir() / "told")
    try:
        os.close(os.open(folder / digest(session), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return True
    with _quietly():
        for name in os.listdir(folder):
            path = folder / name
            with _quietly():
                if time.time() - path.stat().st_mtime > TOLD_KEPT_SECONDS:
                    os.unlink(path)
    return False


def log(line: str) -> None:
    """One line in the sender's log (``sender.log`` in the state directory; its predecessor ``.1``)."""
    with _quietly():
        path = private_dir(state_dir()) / "sender.log"
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_suffix(".log.1"))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as file:
            file.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {line}\n")


# --- one sender at a time ------------------------------------------------------------------------------------


def lock_path(who: Credential) -> Path:
    return state_dir() / f"sender-{who.fingerprint}.lock"


def lock_take(fd: int) -> bool:
    """An exclusive, non-blocking lock on ``fd``: released by the system when the process ends, however."""
    try:
        if sys.platform == "win32":  # pragma: no cover - the hooks' tests run on POSIX
            import msvcrt

            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def lock_give(fd: int) -> None:
    if sys.platform == "win32":  # pragma: no cover
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)


def lock_open(who: Credential) -> int:
    return os.open(private_dir(state_dir()) / lock_path(who).name, os.O_RDWR | os.O_CREAT, 0o600)


def pid_write(fd: int) -> None:
    """The sender's process id in its lock file: whoever wonders which process sends can look."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()}\n".encode())


def sender_running(who: Credential) -> bool:
    fd = lock_open(who)
    try:
        if lock_take(fd):
            lock_give(fd)
            return False
        return True
    finally:
        os.close(fd)


def sender_start(who: Credential) -> bool:
    """Start the sender when something of this credential waits and no sender holds the lock; True if
    one was started. It runs in a session of its own, its standard streams on the null device: the client
    waits for the hook's output to close and kills the hook's process group, neither of which is its."""
    if not who.token or not pending(who) or sender_running(who):
        return False
    detached: dict[str, Any] = {"start_new_session": True}
    if sys.platform == "win32":  # pragma: no cover
        flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        detached = {"creationflags": flags}
    subprocess.Popen(
        [sys.executable, str(SENDER), "send"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        cwd=str(state_dir()),
        **detached,
    )
    return True


# --- the sender ------------------------------------------------------------------------------------------------


def post(record: dict[str, Any], who: Credential, timeout: float) -> Attempt:
    from .posting import post as http_post

    client = record.get("client")
    headers = {
        "Authorization": f"Bearer {who.token}",
        "Content-Type": "application/json",
        "User-Agent": f"{USER_AGENT} ({client})" if isinstance(client, str) and client else USER_AGENT,
    }
    try:
        reply = http_post(f"{who.url}{record['path']}", json.dumps(record["body"]).encode(), headers, timeout)
    except (OSError, ValueError) as exc:
        # no answer, or half of one (a connection cut mid-reply): the service may not have it
        return Attempt(None, None, f"could not reach {who.url}: {exc or type(exc).__name__}")
    if reply.status < 300:
        return Attempt(reply.status, None, f"answered {reply.status}")
    retry_after = retry_after_seconds(reply.headers.get("retry-after"))
    return Attempt(reply.status, retry_after, f"answered {reply.status} {reply.detail}")


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` in seconds: a number of seconds, or an HTTP date."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def send_round(who: Credential, deadline: float) -> bool:
    """Post what waits until the queue is empty (True) or the deadline has come (False). A submission
    that fails goes behind the others, so that one the service cannot take does not hold up the rest."""
    failures: dict[str, int] = {}
    backoff = BACKOFF_FIRST
    while True:
        waiting = sorted(pending(who), key=lambda entry: (failures.get(entry.path.name, 0), entry.queued_ns))
        if not waiting:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        entry = waiting[0]
        try:
            record = json.loads(entry.path.read_bytes())
            if not isinstance(record, dict) or not isinstance(record.get("path"), str):
                raise ValueError("not a queued submission")
        except FileNotFoundError:
            continue  # superseded by a newer submission of its session meanwhile
        except (OSError, ValueError) as exc:
            log(f"{entry.path.name}: unreadable ({exc}): dropped")
            with _quietly():
                os.unlink(entry.path)
            continue
        attempt = post(record, who, min(REQUEST_TIMEOUT, left))
        log(f"{entry.path.name}: {attempt.reason}")
        refusal_note(who, attempt.status, attempt.reason)
        if attempt.accepted or attempt.refused:
            with _quietly():
                os.unlink(entry.path)
            backoff = BACKOFF_FIRST
            continue
        failures[entry.path.name] = failures.get(entry.path.name, 0) + 1
        pause = attempt.retry_after if attempt.retry_after is not None else backoff * random.uniform(0.5, 1.0)
        backoff = min(backoff * 2, BACKOFF_MOST)
        if time.monotonic() + pause >= deadline:
            return False
        time.sleep(pause)


def sender_run() -> int:
    """The sender: holds the credential's lock while it posts the queue, for at most
    ``REASONINGBANK_SEND_SECONDS``; exits at once if another sender holds it. After the queue empties
    it lets the lock go and looks again, so a file queued meanwhile by a hook that found the lock taken
    is not left behind."""
    who = credential()
    if not who.token:
        return 0
    deadline = time.monotonic() + env_number("REASONINGBANK_SEND_SECONDS", 300, low=1, high=86400, strict=False)
    fd = lock_open(who)
    try:
        while lock_take(fd):
            pid_write(fd)
            emptied = send_round(who, deadline)
            lock_give(fd)
            if not emptied:
                log(f"gave up for now: {len(pending(who))} submission(s) left for the next hook")
                break
            if not pending(who):
                break
    finally:
        os.close(fd)
    return 0


def main(argv: list[str]) -> int:
    """The sender's entry point (``reasoningbank_spool.py send``): its output goes nowhere, so what ends
    it unexpectedly goes to its log."""
    if argv[1:] != ["send"]:
        print("usage: reasoningbank_spool.py send", file=sys.stderr)
        return 2
    try:
        return sender_run()
    except Exception as exc:  # the files stay queued: the next hook starts another sender
        log(f"the sender stopped: unexpected {type(exc).__name__}: {exc}")
        return 1
