#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank.settings")
    from django.core.management import execute_from_command_line
    from django.db import DatabaseError

    from reasoningbank.env import settings_load_or_exit

    settings_load_or_exit()  # a refused setting: one line naming the valid values, not a traceback

    try:
        execute_from_command_line(sys.argv)
    except DatabaseError as exc:
        # the wrong RB_DATA_DIR, a database without tables, a server out of reach: one line with the
        # fix instead of a traceback (docs/commands.md#the-wrong-data-directory)
        from reasoningbank.management.database_errors import database_error_explain

        message = database_error_explain(exc)
        if message is None:
            raise
        sys.exit(message)


if __name__ == "__main__":
    main()
