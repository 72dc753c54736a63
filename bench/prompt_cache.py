"""Could the providers' prompt caches serve our prompts? The size of each prompt kind's request against
the smallest prefix each provider caches (docs/llm.md#prompt-caching). In process: no database, no
network, no LLM.

    .venv/bin/python bench/prompt_cache.py

For every registered prompt kind (``reasoningbank/ai/prompt_kinds.py``: the example ``manage.py
llm_check`` sends), the estimated tokens of its system prompt (the part Anthropic's ``cache_control``
marker covers and OpenAI's cached prefix starts with) and of its whole example request (system and user
message). Tokens are estimated at 3 characters each — more tokens than the product's 4-character rule
(``reasoningbank/ai/llm.py``) would count, so that a "below the minimum" here holds for denser text too.
A prompt's fixed text is a part of its whole request, so when the whole request is below a provider's
minimum no ordering of its fixed text can make a cacheable prefix.

Writes bench/results/prompt_cache.json and prints a table.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHARS_PER_TOKEN = 3  # deliberately fewer than the product's 4: an overestimate of the tokens
# the smallest cacheable prefix, in tokens: OpenAI's automatic caching; Anthropic's per model (its
# prompt-caching documentation; a shorter marked prefix is processed uncached, at the normal price)
MINIMUMS = {
    "openai (automatic)": 1024,
    "anthropic claude-sonnet-4-5": 1024,
    "anthropic claude-sonnet-4-6": 2048,
    "anthropic claude-haiku-4-5 (our default)": 4096,
}


def tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()  # the apps register their prompt kinds when they load
    from reasoningbank.ai.prompt_kinds import prompt_kinds

    rows: list[dict[str, Any]] = []
    for kind in prompt_kinds():
        example = kind.example()
        rows.append(
            {
                "kind": kind.name,
                "system_tokens": tokens(example.system),
                "request_tokens": tokens(example.system) + tokens(example.prompt),
            }
        )
    smallest = min(MINIMUMS.values())
    result = {
        "chars_per_token": CHARS_PER_TOKEN,
        "minimums": MINIMUMS,
        "kinds": rows,
        "largest_request_tokens": max(row["request_tokens"] for row in rows),
        "kinds_reaching_the_smallest_minimum": [row["kind"] for row in rows if row["request_tokens"] >= smallest],
    }
    print(f"{'kind':<16}{'system':>8}{'request':>9}")
    for row in rows:
        print(f"{row['kind']:<16}{row['system_tokens']:>8}{row['request_tokens']:>9}")
    print(f"smallest cacheable prefix: {smallest} tokens ({', '.join(f'{k}: {v}' for k, v in MINIMUMS.items())})")
    out = ROOT / "bench" / "results" / "prompt_cache.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
