"""Every text bound for a model provider leaves through ``outbound_text``: an LLM's system prompt and
prompt (each direct call, in ``reasoningbank.ai.llm``; each batched call, in
``reasoningbank.ai.batch_services``) and a remote embedder's inputs (``reasoningbank.ai.embedders``).
So no prompt kind, present or future, can forget it: ``memory_ask``'s question, deep search's rewrite,
distillation, consolidation and the provider check all pass the same place
(docs/security/secret-scrubbing.md#what-is-scrubbed).

The text is scrubbed of secrets (``reasoningbank.scrubbing``), and our own credentials found in it are
revoked through the apps' registered revokers (``reasoningbank.leaks``): a token that was about to be
sent to a provider has leaked like one sent to the bank. Texts read from the bank were scrubbed when
they entered, so for them this finds nothing new; it is there for what was not (a question, a text a
new prompt kind builds), and costs ~0.15 ms per KB.
"""

from __future__ import annotations

from reasoningbank.leaks import leaked_credentials_revoke
from reasoningbank.scrubbing import scrub_secrets

__pure__ = True  # Django-free (the revokers the apps register do the database work)

PROMPT = "llm.prompt"  # the audit rows' ``seen_in`` for a credential found in a prompt
EMBEDDING = "embedding.input"  # and in a text sent to a remote embedder


def outbound_text(text: str, *, seen_in: str = PROMPT) -> str:
    """``text`` as it may leave for a provider: secrets redacted, our credentials in it revoked."""
    if not text:
        return text
    result = scrub_secrets(text)
    if result.own_tokens:
        leaked_credentials_revoke(result.own_tokens, seen_in=seen_in)
    return result.text
