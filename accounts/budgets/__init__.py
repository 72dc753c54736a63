"""LLM budgets and spend (docs/llm-spend.md): the caps an organization's admins set (``services``), the spend
they read (``selectors``), ``/api/v1/llm/budget`` and ``/llm/spend``, Settings → LLM spend.

The check itself — every LLM call reserving its likely cost against these caps before it is made, and
settling after — is ``reasoningbank/ai/budget.py``, in the kernel beside the metering it is part of: the one
metered path (``llm_complete``) reserves and settles in the same function that records the call, on the
kernel's own tables, so no call can be made without it; were it here, the kernel would call back into an
app through a registration that an unregistered process would skip (docs/architecture.md#accounts-by-feature)."""
