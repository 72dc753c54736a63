"""Export and import of a memory bank (the ReasoningBank format; CLAUDE.md and mem0 files in)."""
