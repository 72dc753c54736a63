"""Public identifiers: a type prefix plus a ULID (time-ordered, URL-safe), e.g. ``mem_01jd...``.

Prefixed ids make logs and agent transcripts self-describing (``mem_…`` names a memory) and
sort by creation time, which keeps b-tree inserts local.
"""

from __future__ import annotations

import os
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def ulid() -> str:
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    return f"{prefix}_{ulid()}"
