"""Passwords on a command line: "mysql -pSECRET", "sshpass -p SECRET", "redis-cli -a SECRET",
"curl -u user:SECRET", "docker login -u bob -p SECRET" (and the other registry clients' login)."""

from __future__ import annotations

import re

from reasoningbank.scrubbing.placeholders import is_placeholder
from reasoningbank.scrubbing.primitives import Finding, anchor_positions, not_after

# Their flags mean a password only after these commands ("-p" is a port, a path or a patch
# elsewhere), so each command is found first and its flags are read up to the end of that
# command: a line break (real or JSON-escaped), a pipe, ";" or "&", at most 1,024 characters on.
# Every character is read once by the command search and at most once more by one flag search.
# Registry clients take "-p" as the password of their "login" subcommand only ("docker run -p 8080:80" is a
# port): the flag is read after the word "login".
_LOGIN_COMMANDS = ("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "finch")
_CLI_ANCHORS = ("mysql", "mariadb", "sshpass", "redis-cli", "curl", *_LOGIN_COMMANDS)
_CLI_COMMAND_RE = re.compile(
    not_after("A-Za-z0-9_.-") + r"(?P<command>mysql(?:dump|admin|import|check|show|slap)?|mariadb(?:-dump|-admin)?"
    r"|sshpass|redis-cli|curl|" + "|".join(_LOGIN_COMMANDS) + r")(?=[ \t])"
)
_LOGIN_RE = re.compile(r"[ \t]login(?=[ \t])")
_CLI_COMMAND_END_RE = re.compile(r"[\r\n|;&]|\\n")
_CLI_COMMAND_SPAN = 1024
_CLI_VALUE = r"(?:(?P<q>['\"])(?P<qval>[^'\"\r\n\\]{1,256})(?P=q)|(?P<uval>[^\s'\"\\|;&]{1,256}+))"
_CLI_PASSWORD_FLAGS: dict[str, re.Pattern[str]] = {
    # glued only: "mysql -p dbname" prompts for the password and names a database
    "mysql": re.compile(r"[ \t]-p" + _CLI_VALUE),
    "sshpass": re.compile(r"[ \t]-p[ \t]{0,16}" + _CLI_VALUE),
    "redis-cli": re.compile(r"[ \t]-a[ \t]{1,16}" + _CLI_VALUE),
    "curl": re.compile(r"[ \t](?:-u|--user)(?:[ \t]{1,16}|=)['\"]?[^\s:'\"\\]{0,128}:(?P<uval>[^\s'\"\\]{1,256}+)"),
    # glued, separated or after "=": "-pS3cret", "-p S3cret", "-p=S3cret"
    "login": re.compile(r"[ \t]-p(?:[ \t]{1,16}|=)?" + _CLI_VALUE),
}


def command_lines_find(text: str, lowered: str) -> list[Finding]:
    positions = anchor_positions(lowered, _CLI_ANCHORS)
    found: list[Finding] = []
    scanned = 0  # commands before ``scanned`` were read
    for position in positions:
        if position < scanned:
            continue
        command = _CLI_COMMAND_RE.match(text, position)
        if command is None:
            continue
        name = command.group("command")
        family = "mysql" if name.startswith(("mysql", "mariadb")) else "login" if name in _LOGIN_COMMANDS else name
        limit = min(len(text), command.end() + _CLI_COMMAND_SPAN)
        stop = _CLI_COMMAND_END_RE.search(text, command.end(), limit)
        scanned = stop.start() if stop else limit
        flags_from = command.end()
        if family == "login":
            login = _LOGIN_RE.search(text, command.end(), scanned)
            if login is None:
                continue
            flags_from = login.end()
        for flag in _CLI_PASSWORD_FLAGS[family].finditer(text, flags_from, scanned):
            group = "qval" if flag.groupdict().get("qval") is not None else "uval"
            if is_placeholder(flag.group(group)):
                continue
            found.append(Finding(flag.start(group), flag.end(group), "cli_password"))
    return found
