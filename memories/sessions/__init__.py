"""Agent sessions: submit, distillation into memories by the LLM, retries, and the injection ledger."""
