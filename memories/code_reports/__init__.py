"""What became of a session's code (committed, kept, reverted), as stability signals on its memories."""
