#!/usr/bin/env python3
"""The detached sender of every agent's captures (docs/claude-code.md#capture-hand-off): the capture hooks
start it as ``reasoningbank_spool.py send``; run by hand with the hooks' environment, it sends what waits
now. The queue and the sender are reasoningbank_hooks/spool.py."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))  # where the reasoningbank_hooks package is

from reasoningbank_hooks.spool import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
