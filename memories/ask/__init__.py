"""``memory_ask``: a question answered by the LLM over retrieved memories, its relative dates checked."""
