"""LLM prompts and reply parsers for consolidation, free of Django: one module per prompt, with its parser.

Every prompt here is a fixed text (docs/consolidation.md#the-prompts) and every parser turns a model's
free-text reply into a frozen dataclass or raises :class:`PromptParseError`. Keeping them pure
means the golden-text tests pin the prompts byte-for-byte, and the services only ever see
validated values -- a malformed reply fails loudly instead of writing half a memory.

- ``synthesis``: synthesis of a cluster into one memory + the consolidated-confidence formula;
- ``judge``: the contradiction judge (asked to reason before its verdict) and the supersession check;
- ``patterns``: pattern extraction from episodic memories;
- ``summaries``: cluster summaries;
- ``reply``: what the parsers share (``PromptParseError``, ``SourceMemory``, lenient JSON readers).
"""

__pure__ = True  # Django-free, every module of the package (tests/test_import_contracts.py)
