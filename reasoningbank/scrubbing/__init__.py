"""Secret scrubbing for every text that enters the bank: session traces (before they are stored
and before any LLM sees them) and memories (recorded, updated, distilled, synthesized).

Agents hand in raw transcripts: shell output, config files, HTTP logs. Those routinely contain
credentials, and a credential that reaches the database or a third-party LLM has leaked. Every
trace therefore passes through ``scrub_secrets`` first, which replaces each secret with
``[REDACTED:<kind>]`` so the trace stays readable ("the deploy failed because the
AWS key [REDACTED:aws_access_key_id] was expired") while the value is gone.

Design rules, each with a reason:

* Precision over cleverness: every pattern is anchored on a well-known token format or on an
  explicit key name, or (keys in prose, Twilio tokens) on a context word plus the value's shape,
  and has negative tests (the look-alikes of the format table). Scrubbing that mangles ordinary
  code makes the distilled memories worse, and people then turn it off.
* Linear time: traces are large (MBs) and partly attacker-controlled, so no pattern may
  backtrack catastrophically. Quantifiers are bounded or possessive, character classes do not
  overlap the text that follows them, and the constructs that span lines (PEM blocks, PuTTY key
  files) are matched with hand-written scans instead of a lazy ``.*?``; a context rule searches
  each stretch of text once however many context words it holds.
* Idempotent: ``[REDACTED:...]`` never matches any pattern, so scrubbing an already scrubbed
  trace changes nothing and counts nothing.
* Stdlib only, no Django, so it can run anywhere (API view, worker, a CLI).
* Hand-written rules rather than a detector library: detect-secrets (its maintained fork) caught
  71 of the 117 formats of the format table and left 46 of its 58 look-alikes alone, at ~20 times
  the time per MB; it reports findings per line for repository scans, not spans to redact inside
  MB-long single-line JSON traces (docs/security/secret-scrubbing.md has the figures and the
  command). New formats are one ``Rule`` each (``tokens.py`` for a prefixed token,
  ``assignments.py`` for a key name), with a row in the format table
  (tests/reasoningbank/secret_table.py).
* Our own tokens first, and handed back (``ScrubResult.own_tokens``) so that the service that
  scrubbed a text can revoke them: a token of ours that reached the bank has leaked.

The modules, in the order ``engine.scrub_secrets`` runs them: ``key_files`` (PEM, PuTTY),
``tokens`` (ours, then prefixed formats), ``assignments`` (key names, headers, URL passwords, flags,
.netrc), ``contextual`` (Telegram, Twilio), ``command_lines`` (mysql -p…, curl -u…) and
``contextual``'s keys in prose last; ``primitives`` and ``placeholders`` are what the rules share.
"""

from reasoningbank.scrubbing.engine import SECRET_KINDS, ScrubResult, scrub_secrets
from reasoningbank.scrubbing.primitives import redaction_marker
from reasoningbank.scrubbing.tokens import OWN_TOKEN_KINDS

__all__ = ["OWN_TOKEN_KINDS", "SECRET_KINDS", "ScrubResult", "redaction_marker", "scrub_secrets"]

__pure__ = True  # Django-free, every module of the package (tests/test_import_contracts.py)
