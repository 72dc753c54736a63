"""An OpenAI-compatible local LLM server as a respx side effect, with the quirks of Ollama, the llama.cpp
server and vLLM switched on one by one (docs/llm.md#local-models): it answers
``POST /v1/chat/completions`` through the real ``openai`` SDK (``tests/respx_httpx2.py``), and records
what it was sent.

- ``usage``: ``"full"`` (the OpenAI shape), ``"missing"`` (no ``usage`` key), ``"null"``, ``"partial"``
  (``prompt_tokens`` only), ``"zeros"`` (both counts 0, as some servers fill in what they did not count);
- ``response_format``: ``"ignore"`` (answers as usual, as Ollama's compatibility layer long did) or
  ``"reject"`` (400, as LM Studio does for ``json_object``);
- ``slots``: how many requests it serves at once; one more is a 503 "server busy" (Ollama past its queue,
  llama.cpp with every slot taken);
- ``busy_first``: the first this many requests are answered 503 whatever the load (a server still loading
  its model: llama.cpp's "Loading model");
- ``hold``: an event each reply waits for, so a test holds requests in flight (a slow model) without
  measuring time;
- ``reply``: the assistant's text for a (system, prompt).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

BASE_URL = "http://127.0.0.1:11434/v1"  # Ollama's default address; the others differ only in port
HOLD_LIMIT = 30.0  # seconds a held request waits at most: a broken test fails instead of hanging

Usage = Literal["full", "missing", "null", "partial", "zeros"]


@dataclass
class LocalServerStub:
    reply: Callable[[str, str], str] = lambda system, prompt: "ok"
    usage: Usage = "full"
    response_format: Literal["ignore", "reject"] = "ignore"
    slots: int | None = None
    busy_first: int = 0
    hold: threading.Event | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    busy_replies: int = 0  # 503s sent because every slot was taken
    in_flight: int = 0
    most_in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        with self._lock:
            self.requests.append(body)
            if len(self.requests) <= self.busy_first or (self.slots is not None and self.in_flight >= self.slots):
                self.busy_replies += 1
                # llama.cpp's and Ollama's own error shape: not OpenAI's {"error": {"message": ...}}
                return httpx.Response(
                    503, json={"error": "server busy, please try again.  maximum pending requests exceeded"}
                )
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.hold is not None:
                self.hold.wait(HOLD_LIMIT)
            return self._answer(body)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, body: dict[str, Any]) -> httpx.Response:
        if "response_format" in body and self.response_format == "reject":
            return httpx.Response(400, json={"error": "'response_format.type' must be 'json_schema' or 'text'"})
        messages = body.get("messages") or []
        system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        prompt = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        text = self.reply(system, prompt)
        answer: dict[str, Any] = {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", "llama3.2"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        }
        counted = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}
        if self.usage == "full":
            answer["usage"] = counted
        elif self.usage == "null":
            answer["usage"] = None
        elif self.usage == "partial":
            answer["usage"] = {"prompt_tokens": counted["prompt_tokens"]}
        elif self.usage == "zeros":
            answer["usage"] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        return httpx.Response(200, json=answer)
