"""The block a session starts with (``memory_context``), and the consolidated summaries it is made of."""
