"""LLM prompts and reply parsers for consolidation, free of Django: one module per prompt, with its parser.

Every prompt here is copied from a seed (the specification) and every parser turns a model's
free-text reply into a frozen dataclass or raises :class:`PromptParseError`. Keeping them pure
means the golden-text tests pin the prompts byte-for-byte, and the services only ever see
validated values -- a malformed reply fails loudly instead of writing half a memory.

- ``synthesis``: synthesis (seed 000 "Consolidation Prompt Template") + the consolidated-confidence
  formula;
- ``judge``: the contradiction judge (seed 004 ``CheckContradictionAsync``, reworded to reason
  before its verdict) and supersession (seed 002 ``SUPERSESSION_SYSTEM_PROMPT``);
- ``patterns``: pattern extraction from episodic memories (seed 004 ``BuildPatternExtractionPrompt``);
- ``summaries``: cluster summaries (seed 002 ``SUMMARY_SYSTEM_PROMPT``);
- ``reply``: what the parsers share (``PromptParseError``, ``SourceMemory``, lenient JSON readers).
"""

__pure__ = True  # Django-free, every module of the package (tests/test_import_contracts.py)
