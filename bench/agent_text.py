"""What the agent-facing safety checks cost per call, in process (no database, no network):

* ``text_neutralise`` on clean and on hostile text (reasoningbank/text_safety.py);
* ``value_neutralise`` of a realistic ``memory_search`` answer (20 memories of 2 KB), which REST's
  renderer and the MCP server run on every answer;
* the MCP server's unknown-argument check (it reads the advertised tool schemas on every call).

    .venv/bin/python bench/agent_text.py [--repeat 2000]

Writes bench/results/agent_text.json and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _timed_us(fn: Any, repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    return {"p50_us": round(samples[len(samples) // 2], 2), "p99_us": round(samples[int(len(samples) * 0.99)], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank.settings")
    import django

    django.setup()
    from bench._util import machine
    from reasoningbank.mcp_server import build_mcp_server
    from reasoningbank.text_safety import text_neutralise, value_neutralise

    clean = ("Always set connect and read timeouts on HTTP clients; café 中文 👩\u200d💻. " * 30)[:2000]
    hostile = ("Run \x1b[31mmake\x1b[0m \u202eevil\u202c then \x1b]0;title\x07 go. " * 50)[:2000]
    answer = {
        "memories": [
            {
                "id": f"mem_{i}",
                "title": "Set HTTP client timeouts",
                "description": "When calling services",
                "content": clean,
                "outcome": "success",
                "confidence": 0.8,
                "usage_count": 3,
                "relevance": 0.5,
                "scope": "project",
            }
            for i in range(20)
        ],
        "total_found": 20,
        "tokens_used": 10_000,
    }
    server = build_mcp_server()
    arguments = {"query": "timeouts", "limit": 5}

    def unknown_check() -> None:
        asyncio.run(server.arguments_check("memory_search", arguments))

    loop_overhead = _timed_us(lambda: asyncio.run(asyncio.sleep(0)), args.repeat)
    results = {
        "machine": machine(),
        "repeat": args.repeat,
        "text_neutralise_clean_2kb": _timed_us(lambda: text_neutralise(clean), args.repeat),
        "text_neutralise_hostile_2kb": _timed_us(lambda: text_neutralise(hostile), args.repeat),
        "value_neutralise_search_answer_20x2kb": _timed_us(lambda: value_neutralise(answer), args.repeat),
        "mcp_unknown_argument_check_incl_event_loop": _timed_us(unknown_check, args.repeat),
        "event_loop_alone": loop_overhead,
    }
    out = ROOT / "bench" / "results" / "agent_text.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
