"""Passwords on a command line: "mysql -pSECRET", "sshpass -p SECRET", "redis-cli -a SECRET",
"curl -u user:SECRET"."""

from __future__ import annotations

import re

from reasoningbank.scrubbing.placeholders import is_placeholder
from reasoningbank.scrubbing.primitives import anchor_positions, lower_same_length, not_after, redaction_marker

# Their flags mean a password only after these commands ("-p" is a port, a path or a patch
# elsewhere), so each command is found first and its flags are read up to the end of that
# command: a line break (real or JSON-escaped), a pipe, ";" or "&", at most 1,024 characters on.
# Every character is read once by the command search and at most once more by one flag search.
_CLI_ANCHORS = ("mysql", "mariadb", "sshpass", "redis-cli", "curl")
_CLI_COMMAND_RE = re.compile(
    not_after("A-Za-z0-9_.-") + r"(?P<command>mysql(?:dump|admin|import|check|show|slap)?|mariadb(?:-dump|-admin)?"
    r"|sshpass|redis-cli|curl)(?=[ \t])"
)
_CLI_COMMAND_END_RE = re.compile(r"[\r\n|;&]|\\n")
_CLI_COMMAND_SPAN = 1024
_CLI_VALUE = r"(?:(?P<q>['\"])(?P<qval>[^'\"\r\n\\]{1,256})(?P=q)|(?P<uval>[^\s'\"\\|;&]{1,256}+))"
_CLI_PASSWORD_FLAGS: dict[str, re.Pattern[str]] = {
    # glued only: "mysql -p dbname" prompts for the password and names a database
    "mysql": re.compile(r"[ \t]-p" + _CLI_VALUE),
    "sshpass": re.compile(r"[ \t]-p[ \t]{0,16}" + _CLI_VALUE),
    "redis-cli": re.compile(r"[ \t]-a[ \t]{1,16}" + _CLI_VALUE),
    "curl": re.compile(r"[ \t](?:-u|--user)(?:[ \t]{1,16}|=)['\"]?[^\s:'\"\\]{0,128}:(?P<uval>[^\s'\"\\]{1,256}+)"),
}


def scrub_command_lines(text: str) -> tuple[str, int]:
    lowered = lower_same_length(text)
    positions = anchor_positions(lowered, _CLI_ANCHORS)
    if not positions:
        return text, 0
    marker = redaction_marker("cli_password")
    out: list[str] = []
    done = scanned = count = 0  # text[:done] is in out; commands before ``scanned`` were read
    for position in positions:
        if position < scanned:
            continue
        command = _CLI_COMMAND_RE.match(text, position)
        if command is None:
            continue
        name = command.group("command")
        family = "mysql" if name.startswith(("mysql", "mariadb")) else name
        limit = min(len(text), command.end() + _CLI_COMMAND_SPAN)
        stop = _CLI_COMMAND_END_RE.search(text, command.end(), limit)
        scanned = stop.start() if stop else limit
        for flag in _CLI_PASSWORD_FLAGS[family].finditer(text, command.end(), scanned):
            group = "qval" if flag.groupdict().get("qval") is not None else "uval"
            if is_placeholder(flag.group(group)):
                continue
            out.append(text[done : flag.start(group)])
            out.append(marker)
            done = flag.end(group)
            count += 1
    if not count:
        return text, 0
    out.append(text[done:])
    return "".join(out), count
