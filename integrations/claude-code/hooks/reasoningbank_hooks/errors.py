"""What goes wrong in a hook, said in one line."""

from __future__ import annotations


class HookError(Exception):
    """What went wrong, in one line for stderr; ``notice`` when it means memory is off for the session
    (the token refused or missing, the service out of reach): what the user is told, once a session."""

    def __init__(self, message: str, notice: str = "") -> None:
        super().__init__(message)
        self.notice = notice
