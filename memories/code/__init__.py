"""Code-aware memory: anchors from a memory to the code it is about, recall when an agent opens a file or
hits an error, staleness when that code changes, a bank seeded from the repository's history
(docs/code-memory.md)."""
