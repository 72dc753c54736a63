"""A stub OpenAI-compatible chat server for benchmarks (loopback only).

    python bench/_stub_llm.py --port 18080 --latency 1.0

Answers ``POST /v1/chat/completions`` after a fixed ``--latency`` (asyncio sleep, so concurrent
requests overlap like a real provider) with a reply from ``bench/_fake_replies.py`` and a usage
object; ``GET /healthz`` for readiness, ``GET /stats`` for request counts.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fake_replies import reply_for
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route


def build_app(latency: float) -> Starlette:
    counter = itertools.count(1)
    stats = {"requests": 0, "in_flight": 0, "max_in_flight": 0}

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        stats["requests"] += 1
        stats["in_flight"] += 1
        stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
        try:
            messages = body.get("messages") or []
            system = "\n".join(m.get("content", "") for m in messages if m.get("role") == "system")
            prompt = "\n".join(m.get("content", "") for m in messages if m.get("role") == "user")
            text = reply_for(system, prompt)
            await asyncio.sleep(latency)
        finally:
            stats["in_flight"] -= 1
        return JSONResponse(
            {
                "id": f"chatcmpl-stub-{next(counter)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "stub"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": (len(system) + len(prompt)) // 4,
                    "completion_tokens": len(text) // 4,
                    "total_tokens": (len(system) + len(prompt) + len(text)) // 4,
                },
            }
        )

    async def healthz(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def get_stats(request: Request) -> JSONResponse:
        return JSONResponse(stats)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/healthz", healthz),
            Route("/stats", get_stats),
        ]
    )


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    uvicorn.run(build_app(args.latency), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
