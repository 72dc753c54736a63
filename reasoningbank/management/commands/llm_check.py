"""``manage.py llm_check``: one example of every prompt kind sent to the configured LLM, and per kind
whether the reply parsed, its latency and tokens (docs/llm.md#checking-a-provider). Exit 0 when every kind
parsed, 1 naming those that did not (or, when the provider cannot be reached, naming where it was looked for:
the other kinds are then not sent), 2 when no LLM is configured or its configuration is incomplete."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reasoningbank.ai.check import KindCheck, llm_check
from reasoningbank.ai.llm import LLMPermanentError, llm_from_settings
from reasoningbank.ai.prompt_kinds import UnknownPromptKind, prompt_kind_get, prompt_kinds

EXIT_FAILED = 1
EXIT_NOT_CONFIGURED = 2
NOT_CONFIGURED = (
    "No LLM is configured (LLM_PROVIDER=none): set LLM_PROVIDER to anthropic or openai and LLM_API_KEY "
    "(or LLM_BASE_URL for a local OpenAI-compatible server), then run llm_check again (docs/llm.md)."
)


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = "Send one example of every prompt kind to the configured LLM; report per kind: parsed, latency, tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--kind", action="append", default=[], help="only this prompt kind (repeatable); default: all"
        )
        parser.add_argument("--json", action="store_true", help="the results as JSON, one object per kind")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            kinds = [prompt_kind_get(name) for name in options["kind"]] or list(prompt_kinds())
        except UnknownPromptKind as exc:
            raise CommandError(str(exc), returncode=EXIT_FAILED) from None
        try:
            # a server out of reach is said after one attempt, not after every kind's retries (85 s for ten)
            llm = llm_from_settings(retry_unreachable=False)
        except LLMPermanentError as exc:  # a provider without its key, an unknown provider
            raise CommandError(str(exc), returncode=EXIT_NOT_CONFIGURED) from None
        if llm.provider == "none":
            raise CommandError(NOT_CONFIGURED, returncode=EXIT_NOT_CONFIGURED)
        where = getattr(llm, "base_url", None)
        if not options["json"]:
            self.stdout.write(
                f"Checking {llm.provider} {llm.model}{f' at {where}' if where else ''}: "
                f"{len(kinds)} prompt kinds, one call each"
            )
        with _quiet(options["verbosity"] < 2):
            results = llm_check(llm, kinds)
        if options["json"]:
            self.stdout.write(json.dumps([{**asdict(r), "parsed": r.parsed} for r in results], indent=2))
        else:
            for result in results:
                if result.stage != "skipped":
                    self.stdout.write(_line(result))
        unreachable = next((r for r in results if r.unreachable_url), None)
        if unreachable is not None:
            raise CommandError(_unreachable(unreachable, results), returncode=EXIT_FAILED)
        failed = [r.kind for r in results if not r.parsed]
        if failed:
            raise CommandError(
                f"{len(failed)} of {len(results)} prompt kinds failed: {', '.join(failed)}", returncode=EXIT_FAILED
            )
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"All {len(results)} prompt kinds parsed."))


@contextmanager
def _quiet(quiet: bool) -> Iterator[None]:
    """One INFO line per HTTP request and per kind would bury the table (``-v 2`` shows them)."""
    loggers = [logging.getLogger(name) for name in ("httpx2", "reasoningbank.llm")] if quiet else []
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _unreachable(result: KindCheck, results: list[KindCheck]) -> str:
    """One line: where the provider was looked for, what came back, and what to change."""
    from django.conf import settings

    skipped = sum(1 for r in results if r.stage == "skipped")
    if settings.LLM_BASE_URL:
        fix = "start the server LLM_BASE_URL names, or correct LLM_BASE_URL"
    else:
        fix = "check that this machine can reach it, or set LLM_BASE_URL to a local OpenAI-compatible server"
    return (
        f"The LLM provider cannot be reached: {result.error}; "
        f"{skipped} other prompt kind{'s were' if skipped != 1 else ' was'} not sent. "
        f"Fix: {fix}, then run llm_check again (docs/llm.md#checking-a-provider)."
    )


def _line(result: KindCheck) -> str:
    verdict = {"ok": "parsed", "call": "CALL FAILED", "parse": "NOT PARSED"}[result.stage]
    line = f"  {result.kind:<12} {verdict:<12} {result.latency_ms:8.0f} ms"
    if result.input_tokens is not None:
        # ≈: the server did not count (all of) them, they are estimated (docs/llm.md#local-models)
        approx = "≈" if result.tokens_estimated else ""
        line += f"  {approx}{result.input_tokens}+{result.output_tokens} tokens"
    if result.attempts > 1:
        line += f"  ({result.attempts} attempts)"
    if result.error:
        line += f"\n      {result.error}"
    if result.reply:
        line += f"\n      the reply began: {result.reply[:200]!r}"
    return line
