"""The dashboard's memories pages (overview, memories, disputes, sessions) and their charts."""
