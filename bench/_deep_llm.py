"""Deep search with an LLM under ``retrieval.py`` (docs/search.md#deep-search-rewriting-the-question):
the settings that point ``mode: deep``'s question rewrite at an OpenAI-compatible endpoint, the bench's
stub server in a thread (``_stub_llm.py``, whose mechanical rewrite proves the plumbing, not a model's
quality), and the summary of what the rewrites did.

    --deep-llm-base-url URL --deep-llm-model MODEL [--deep-llm-key-env VAR]   a real endpoint
    --deep-llm-stub                                                            the bench's stub
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DeepLLM:
    base_url: str
    model: str
    api_key: str | None
    timeout: float
    fusion: str
    stub: bool
    weight: float | None = None


def deep_llm_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("deep search with an LLM (also run mode deep with the question rewrite)")
    group.add_argument(
        "--deep-llm-base-url", metavar="URL", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1"
    )
    group.add_argument(
        "--deep-llm-model", metavar="MODEL", default="gpt-4o-mini", help="its model (default %(default)s)"
    )
    group.add_argument(
        "--deep-llm-key-env",
        metavar="VAR",
        default="OPENAI_API_KEY",
        help="the environment variable holding its key (default %(default)s; unset: no key, as a local server)",
    )
    group.add_argument("--deep-llm-stub", action="store_true", help="the bench's stub endpoint (plumbing only)")
    group.add_argument(
        "--deep-llm-timeout", type=float, default=30.0, help="seconds per rewrite call (default %(default)s)"
    )
    group.add_argument("--deep-fusion", choices=("max", "rrf"), default="max", help="SEARCH_DEEP_REWRITE_FUSION")
    group.add_argument(
        "--deep-weight", type=float, default=None, help="SEARCH_DEEP_REWRITE_WEIGHT (default: the setting)"
    )


def deep_llm_from(args: argparse.Namespace) -> DeepLLM | None:
    if not (args.deep_llm_base_url or args.deep_llm_stub):
        return None
    if args.deep_llm_base_url and args.deep_llm_stub:
        raise SystemExit("--deep-llm-base-url and --deep-llm-stub exclude each other")
    return DeepLLM(
        base_url=args.deep_llm_base_url or "",
        model="stub-model" if args.deep_llm_stub else args.deep_llm_model,
        api_key=None if args.deep_llm_stub else (os.environ.get(args.deep_llm_key_env) or None),
        timeout=args.deep_llm_timeout,
        fusion=args.deep_fusion,
        stub=args.deep_llm_stub,
        weight=args.deep_weight,
    )


@contextlib.contextmanager
def stub_serve() -> Iterator[str]:
    """The bench's stub OpenAI-compatible server on a free loopback port, in a thread of this process;
    yields its base URL."""
    import uvicorn
    from _stub_llm import build_app
    from common import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(0.0), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="stub-llm", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the stub LLM did not start in 30 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def deep_llm_settings(deep: DeepLLM) -> Iterator[DeepLLM]:
    """Settings as a service with ``SEARCH_DEEP_REWRITE`` on and the endpoint as its LLM (the stub
    started first when asked for)."""
    from django.conf import settings
    from django.test.utils import override_settings

    weight = settings.SEARCH_DEEP_REWRITE_WEIGHT if deep.weight is None else deep.weight
    with contextlib.ExitStack() as stack:
        base_url = stack.enter_context(stub_serve()) if deep.stub else deep.base_url
        stack.enter_context(
            override_settings(
                SEARCH_DEEP_REWRITE=True,
                SEARCH_DEEP_REWRITE_TIMEOUT=deep.timeout,
                SEARCH_DEEP_REWRITE_FUSION=deep.fusion,
                SEARCH_DEEP_REWRITE_WEIGHT=weight,
                LLM_PROVIDER="openai",
                LLM_BASE_URL=base_url,
                LLM_MODEL=deep.model,
                LLM_API_KEY=deep.api_key,
                OPENAI_API_KEY=None,
            )
        )
        yield DeepLLM(base_url, deep.model, deep.api_key, deep.timeout, deep.fusion, deep.stub, weight)


def rewrite_summary(rewrites: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
    """How many questions were rewritten (from the cache or not) or skipped and why, and how many
    queries a rewritten one searched."""
    statuses = Counter((r or {}).get("status", "absent") for r in rewrites)
    reasons = Counter(r["reason"] for r in rewrites if r and r.get("reason"))
    rewritten = [r for r in rewrites if r and r.get("status") == "rewritten"]
    queries = [len(r["queries"]) for r in rewritten]
    return {
        "questions": len(rewrites),
        "rewritten": statuses.get("rewritten", 0),
        "from_cache": sum(1 for r in rewritten if r.get("cached")),
        "skipped": dict(reasons),
        "mean_queries_searched": round(sum(queries) / len(queries), 2) if queries else 0.0,
        "examples": [r["queries"] for r in rewritten[:5]],
    }


def deep_llm_run(deep: DeepLLM, search: Callable[[], Sequence[Any]], metrics: Callable[..., dict[str, Any]]) -> dict:
    """``search()`` (every query in mode deep) with the endpoint as the LLM: its figures (``metrics``),
    what the rewrites did, and the per-query time (the LLM call included; the first 20 left out)."""
    from common import Latency, log

    with deep_llm_settings(deep) as endpoint:
        log(f"  deep search: question rewrite by {endpoint.model} at {endpoint.base_url}")
        results = search()
    return {
        "label": f"deep + {'stub rewrite' if endpoint.stub else endpoint.model}, {endpoint.fusion} w {endpoint.weight}",
        "endpoint": {
            "base_url": endpoint.base_url,
            "model": endpoint.model,
            "stub": endpoint.stub,
            "timeout": endpoint.timeout,
            "fusion": endpoint.fusion,
            "weight": endpoint.weight,
        },
        "product": metrics(results),
        "rewrite": rewrite_summary([r.rewrite for r in results]),
        "per_query_ms": Latency.of([r.ms for r in results[20:]]).as_dict(),
    }


def deep_llm_log(figures: dict[str, Any]) -> None:
    from common import log

    summary, timing = figures["rewrite"], figures["per_query_ms"]
    log(
        f"  deep search: {summary['rewritten']} of {summary['questions']} questions rewritten "
        f"({summary['from_cache']} from the cache), skipped {summary['skipped'] or 'none'}, "
        f"{summary['mean_queries_searched']} queries searched per rewritten question; per query p50 "
        f"{timing['p50']:.1f} ms, p99 {timing['p99']:.1f} ms (the LLM call included)"
    )
    for example in summary["examples"][:3]:
        log(f"    e.g. {example}")
