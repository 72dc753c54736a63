#!/usr/bin/env python3
"""Install ReasoningBank into the Codex CLI (docs/codex.md#install): merge this folder's config.toml (the
MCP server, the hooks flag) into Codex's ``config.toml`` and its hooks.json into Codex's ``hooks.json``,
both in ``$CODEX_HOME`` (``~/.codex``).

    python3 "$REASONINGBANK_HOME/integrations/codex/install.py" [--url URL] [--codex-home DIR] [--dry-run]

A merge, never an append: a config that has a ``[features]`` table keeps its one table with ``hooks =
true`` added, ``[mcp_servers.reasoningbank]`` is updated where it is, and every other table, key and
comment stays as the user wrote it. The MCP ``url`` is ``$REASONINGBANK_URL/mcp`` (``--url`` wins):
Codex does not expand variables in a url, so it is written, and the script is run again when the
service moves. Running it twice changes nothing the second time.

The TOML is read with ``tomllib`` and edited as text, line by line, so the user's formatting survives;
every edit is then proved by reading the result back: it must parse, hold our values, and hold every
other value exactly as before. A config this script cannot edit that way (``features`` as an inline
table or as dotted keys, say) is left untouched, with a message saying what to add by hand.

Python 3.11 or later (``tomllib``), standard library only.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUR_SCRIPT = "integrations/codex/reasoningbank_codex.py"  # how our hooks are told from the user's
BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
MARK = "# ReasoningBank (integrations/codex/install.py, docs/codex.md)"  # above a table this script adds
TRUST_NOTE = (
    "Codex runs a new or changed hook only once it is trusted: start `codex`, open /hooks and trust the\n"
    "ReasoningBank hooks. `codex exec` skips untrusted hooks without a word; for automation that vets the\n"
    "hooks itself, `codex exec --dangerously-bypass-hook-trust` runs them for that one run (docs/codex.md)."
)

try:
    import tomllib
except ModuleNotFoundError:  # Python before 3.11
    tomllib = None  # type: ignore[assignment]


class InstallError(Exception):
    """Why a file was left as it was, in words that say what to do."""


# --- config.toml ------------------------------------------------------------------------------------------


def config_settings(url: str) -> dict[tuple[str, ...], dict[str, Any]]:
    """Our settings, table by table, from this folder's config.toml, with the service's url."""
    template = tomllib.loads((HERE / "config.toml").read_text())
    settings: dict[tuple[str, ...], dict[str, Any]] = {
        ("mcp_servers", "reasoningbank"): dict(template["mcp_servers"]["reasoningbank"])
    }
    settings[("mcp_servers", "reasoningbank")]["url"] = url.rstrip("/") + "/mcp"
    settings[("features",)] = dict(template["features"])
    return settings


def config_merge(text: str, settings: dict[tuple[str, ...], dict[str, Any]]) -> str:
    """``text`` (a config.toml) with ``settings`` in it, every other value and comment kept."""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"config.toml is not valid TOML ({exc}): fix it, then run this again") from None
    expected = copy.deepcopy(before)
    for table, keys in settings.items():
        node = expected
        for part in table:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise InstallError(f"config.toml's {'.'.join(table)} is not a table: fix it, then run this again")
        node.update(keys)
    try:
        for table, keys in settings.items():
            for key, value in keys.items():
                if table_get(tomllib.loads(text), table).get(key) != value:
                    text = key_set(text, table, key, value)
        after = tomllib.loads(text)
    except tomllib.TOMLDecodeError:  # an edit this config's form does not allow: said below
        after = None
    if after != expected:
        wanted = "\n".join(
            f"[{header(table)}] {key} = {literal(v)}" for table, ks in settings.items() for key, v in ks.items()
        )
        raise InstallError(
            "config.toml defines these tables in a form this script does not edit (an inline table or dotted\n"
            f"keys): set these by hand, then run this again to check.\n{wanted}"
        )
    return text


def table_get(data: dict[str, Any], table: tuple[str, ...]) -> dict[str, Any]:
    for part in table:
        found = data.get(part)
        data = found if isinstance(found, dict) else {}
    return data


def key_set(text: str, table: tuple[str, ...], key: str, value: Any) -> str:
    """``text`` with ``key = value`` in ``table``: the key's line rewritten where it is (its comment
    kept), else a line added at the end of the table, else the table added at the end of the file."""
    lines = text.splitlines(keepends=True)
    headers = header_lines(lines)
    found = [i for i, path in headers if path == table]
    if not found:
        gap = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        return f"{text}{gap}{MARK}\n[{header(table)}]\n{key} = {literal(value)}\n"
    start = found[0]
    end = next((i for i, _ in headers if i > start), len(lines))
    assignment = re.compile(
        rf"^(\s*)({re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')(\s*=\s*)"
        r"(\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|true|false|[^\s#]+)(.*)$",
        re.DOTALL,
    )
    for i in range(start + 1, end):
        match = assignment.match(lines[i])
        if match:
            indent, name, equals, _, rest = match.groups()
            lines[i] = f"{indent}{name}{equals}{literal(value)}{rest}"
            return "".join(lines)
    last = max(
        (i for i in range(start, end) if lines[i].strip() and not lines[i].lstrip().startswith("#")), default=start
    )
    if not lines[last].endswith("\n"):
        lines[last] += "\n"
    lines.insert(last + 1, f"{key} = {literal(value)}\n")
    return "".join(lines)


def header_lines(lines: list[str]) -> list[tuple[int, tuple[str, ...] | None]]:
    """The table headers: (line index, the table's path, or None for an array of tables). A line that
    looks like one inside a multi-line string or array is not one: the text before a header always
    parses on its own."""
    found: list[tuple[int, tuple[str, ...] | None]] = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("["):
            continue
        try:
            tomllib.loads("".join(lines[:i]))
            parsed = tomllib.loads(stripped + "\n")
        except tomllib.TOMLDecodeError:
            continue
        if stripped.startswith("[["):
            found.append((i, None))
            continue
        path: list[str] = []
        node: Any = parsed
        while isinstance(node, dict) and len(node) == 1:
            part, node = next(iter(node.items()))
            path.append(part)
        found.append((i, tuple(path)))
    return found


def header(table: tuple[str, ...]) -> str:
    return ".".join(part if BARE_KEY.match(part) else json.dumps(part, ensure_ascii=False) for part in table)


def literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string: the same escapes


# --- hooks.json -------------------------------------------------------------------------------------------


def hooks_merge(current: dict[str, Any]) -> dict[str, Any]:
    """``current`` (a hooks.json) with our hooks in it: each of our groups replaces the one it updates,
    where it stands (Codex keys a hook's trust by its place), or is added at the end of its event."""
    ours = json.loads((HERE / "hooks.json").read_text())["hooks"]
    merged = copy.deepcopy(current)
    events = merged.setdefault("hooks", {})
    if not isinstance(events, dict):
        raise InstallError('hooks.json\'s "hooks" is not an object: fix it, then run this again')
    for event, groups in ours.items():
        existing = events.setdefault(event, [])
        if not isinstance(existing, list):
            raise InstallError(f'hooks.json\'s "{event}" is not a list: fix it, then run this again')
        kept: list[Any] = []
        place = None
        for group in existing:
            hooks = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(hooks, list) and hooks and all(is_ours(hook) for hook in hooks):
                place = len(kept) if place is None else place
                continue
            if isinstance(hooks, list):  # the user's group: any hook of ours slipped into it goes
                group["hooks"] = [hook for hook in hooks if not is_ours(hook)]
            kept.append(group)
        place = len(kept) if place is None else place
        events[event] = kept[:place] + copy.deepcopy(groups) + kept[place:]
    return merged


def is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and OUR_SCRIPT in str(hook.get("command", ""))


# --- files ------------------------------------------------------------------------------------------------


def file_write(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all, the old file kept beside it, its mode kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    if path.exists():
        path.with_name(path.name + ".before-reasoningbank").write_bytes(path.read_bytes())
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def install(codex_home: Path, url: str, *, dry_run: bool = False) -> list[str]:
    """What was changed (or would be), one line a file; nothing when both were up to date."""
    config, hooks = codex_home / "config.toml", codex_home / "hooks.json"
    config_before = config.read_text() if config.exists() else ""
    config_after = config_merge(config_before, config_settings(url))
    try:
        hooks_before = json.loads(hooks.read_text()) if hooks.exists() else {}
    except ValueError as exc:
        raise InstallError(f"{hooks} is not valid JSON ({exc}): fix it, then run this again") from None
    if not isinstance(hooks_before, dict):
        raise InstallError(f"{hooks} is not a JSON object: fix it, then run this again")
    hooks_after = hooks_merge(hooks_before)
    changed = []
    if config_after != config_before:
        changed.append(f"{config}: the reasoningbank MCP server at {url.rstrip('/')}/mcp and hooks = true")
        if not dry_run:
            file_write(config, config_after)
    if hooks_after != hooks_before:
        changed.append(f"{hooks}: the ReasoningBank hooks (SessionStart, UserPromptSubmit, Stop, SessionEnd)")
        if not dry_run:
            file_write(hooks, json.dumps(hooks_after, indent=2, ensure_ascii=False) + "\n")
    return changed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Install ReasoningBank into the Codex CLI (docs/codex.md).")
    parser.add_argument("--url", default=os.environ.get("REASONINGBANK_URL") or "http://127.0.0.1:8000")
    parser.add_argument("--codex-home", default=os.environ.get("CODEX_HOME") or str(Path.home() / ".codex"))
    parser.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    args = parser.parse_args(argv)
    if tomllib is None:
        print("install.py needs Python 3.11 or later (tomllib)", file=sys.stderr)
        return 2
    try:
        changed = install(Path(args.codex_home).expanduser(), args.url, dry_run=args.dry_run)
    except InstallError as exc:
        print(f"nothing changed: {exc}", file=sys.stderr)
        return 1
    verb = "would update" if args.dry_run else "updated"
    for line in changed:
        print(f"{verb} {line}")
    if not changed:
        print(f"{args.codex_home}: up to date, nothing changed")
    elif not args.dry_run:
        print(TRUST_NOTE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
