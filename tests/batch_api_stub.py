"""Anthropic's Message Batches API and OpenAI's Batch API (files and batches) as respx routes, served to
the real SDKs through ``tests/respx_httpx2.py`` (docs/llm-spend.md#batch-mode). A batch stays in progress
until the test calls ``end()``; then each request is answered by ``reply(system, prompt)``, or meets
the ``fate`` the test chose (expired, cancelled, errored). The direct endpoints (``/v1/messages``,
``/v1/chat/completions``) answer too, counted apart, for the calls a run makes without a batch.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import respx

from tests.reasoningbank.test_llm import anthropic_message, anthropic_system
from tests.respx_httpx2 import serve_httpx2_from

ANTHROPIC = "https://api.anthropic.com"
OPENAI = "https://api.openai.com/v1"
Fate = Literal["succeeded", "expired", "canceled", "errored"]
WHEN = "2026-11-27T02:00:00Z"


@dataclass
class BatchApiStub:
    reply: Callable[[str, str], str] = lambda system, prompt: "ok"
    fate: Fate = "succeeded"
    # every batch the SDKs created: id -> its requests as (custom_id, system, prompt, max_tokens)
    batches: dict[str, list[tuple[str, str, str, int]]] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    direct: list[tuple[str, str]] = field(default_factory=list)  # (system, prompt) of the calls made directly
    polls: int = 0
    downloads: int = 0
    created: list[dict[str, Any]] = field(default_factory=list)  # the bodies of the batch creations
    uploads: list[str] = field(default_factory=list)  # OpenAI's multipart uploads, raw
    refuse_create: int | None = None  # a status to answer batch creation with (e.g. 404: no batch API)
    _ids: Iterator[int] = field(default_factory=itertools.count)
    _files: dict[str, str] = field(default_factory=dict)

    def end(self) -> None:
        """Every batch created so far ends (the provider processed it)."""
        self.ended.update(self.batches)

    def requests(self) -> list[tuple[str, str, str, int]]:
        return [request for batch in self.batches.values() for request in batch]

    def _answer(self, custom_id: str, system: str, prompt: str) -> tuple[Fate, str]:
        return (self.fate, "") if self.fate != "succeeded" else ("succeeded", self.reply(system, prompt))

    # --- Anthropic -------------------------------------------------------------------------------------

    def _anthropic_batch(self, batch_id: str) -> dict[str, Any]:
        ended = batch_id in self.ended
        count = len(self.batches[batch_id])
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else count,
                "succeeded": count if ended and self.fate == "succeeded" else 0,
                "errored": count if ended and self.fate == "errored" else 0,
                "canceled": count if ended and self.fate == "canceled" else 0,
                "expired": count if ended and self.fate == "expired" else 0,
            },
            "created_at": WHEN,
            "expires_at": "2026-11-28T02:00:00Z",
            "ended_at": WHEN if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{ANTHROPIC}/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def anthropic_create(self, request: httpx.Request) -> httpx.Response:
        if self.refuse_create:
            return httpx.Response(self.refuse_create, json={"type": "error", "error": {"type": "not_found_error"}})
        body = json.loads(request.content)
        self.created.append(body)
        batch_id = f"msgbatch_{next(self._ids)}"
        self.batches[batch_id] = [
            (
                r["custom_id"],
                anthropic_system(r["params"]),
                r["params"]["messages"][0]["content"],
                r["params"]["max_tokens"],
            )
            for r in body["requests"]
        ]
        return httpx.Response(200, json=self._anthropic_batch(batch_id))

    def anthropic_retrieve(self, request: httpx.Request, batch_id: str) -> httpx.Response:
        self.polls += 1
        return httpx.Response(200, json=self._anthropic_batch(batch_id))

    def anthropic_results(self, request: httpx.Request, batch_id: str) -> httpx.Response:
        self.downloads += 1
        lines = []
        for custom_id, system, prompt, _ in self.batches[batch_id]:
            fate, text = self._answer(custom_id, system, prompt)
            result: dict[str, Any] = {"type": fate}
            if fate == "succeeded":
                result["message"] = anthropic_message(text, input_tokens=len(prompt) // 4, output_tokens=len(text) // 4)
            elif fate == "errored":
                result["error"] = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        return httpx.Response(200, content="\n".join(lines).encode())

    def anthropic_direct(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        system, prompt = anthropic_system(body), body["messages"][0]["content"]
        self.direct.append((system, prompt))
        text = self.reply(system, prompt)
        return httpx.Response(200, json=anthropic_message(text, input_tokens=len(prompt) // 4, output_tokens=9))

    # --- OpenAI ----------------------------------------------------------------------------------------

    def _openai_batch(self, batch_id: str) -> dict[str, Any]:
        ended = batch_id in self.ended
        status = {"succeeded": "completed", "errored": "completed", "expired": "expired", "canceled": "cancelled"}
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "created_at": 1_795_000_000,
            "input_file_id": f"file-in-{batch_id}",
            "status": status[self.fate] if ended else "in_progress",
            "output_file_id": f"file-out-{batch_id}" if ended and self.fate in ("succeeded", "errored") else None,
            "error_file_id": f"file-err-{batch_id}" if ended and self.fate == "errored" else None,
        }

    def openai_upload(self, request: httpx.Request) -> httpx.Response:
        # the multipart body holds the JSONL file: its lines are the ones that start a request object
        self.uploads.append(request.content.decode())
        lines = [line for line in request.content.decode().splitlines() if line.startswith('{"custom_id"')]
        file_id = f"file-{next(self._ids)}"
        self._files[file_id] = "\n".join(lines)
        return httpx.Response(
            200,
            json={"id": file_id, "object": "file", "bytes": len(request.content), "created_at": 1_795_000_000,
                  "filename": "batch.jsonl", "purpose": "batch", "status": "processed"},
        )  # fmt: skip

    def openai_create(self, request: httpx.Request) -> httpx.Response:
        if self.refuse_create:
            return httpx.Response(self.refuse_create, json={"error": {"message": "no batches here", "code": None}})
        body = json.loads(request.content)
        self.created.append(body)
        batch_id = f"batch_{next(self._ids)}"
        requests = []
        for line in self._files[body["input_file_id"]].splitlines():
            r = json.loads(line)
            messages = r["body"]["messages"]
            system = next((m["content"] for m in messages if m["role"] == "system"), "")
            prompt = next(m["content"] for m in messages if m["role"] == "user")
            requests.append((r["custom_id"], system, prompt, r["body"]["max_tokens"]))
        self.batches[batch_id] = requests
        return httpx.Response(200, json=self._openai_batch(batch_id))

    def openai_retrieve(self, request: httpx.Request, batch_id: str) -> httpx.Response:
        self.polls += 1
        return httpx.Response(200, json=self._openai_batch(batch_id))

    def openai_content(self, request: httpx.Request, file_id: str) -> httpx.Response:
        self.downloads += 1
        kind, batch_id = file_id.split("-", 2)[1], file_id.split("-", 2)[2]
        lines = []
        for custom_id, system, prompt, _ in self.batches[batch_id]:
            fate, text = self._answer(custom_id, system, prompt)
            if kind == "out" and fate == "succeeded":
                body = openai_completion(text, input_tokens=len(prompt) // 4, output_tokens=len(text) // 4)
                lines.append({"id": "r", "custom_id": custom_id, "response": {"status_code": 200, "body": body}})
            elif kind == "err" and fate == "errored":
                error = {"error": {"message": "bad request", "code": "invalid_request"}}
                lines.append({"id": "r", "custom_id": custom_id, "response": {"status_code": 400, "body": error}})
        return httpx.Response(200, content="\n".join(json.dumps(line) for line in lines).encode())

    def openai_direct(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        messages = body["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        self.direct.append((system, prompt))
        return httpx.Response(200, json=openai_completion(self.reply(system, prompt), input_tokens=10, output_tokens=9))

    # --- wiring ----------------------------------------------------------------------------------------

    def install(self, router: respx.MockRouter) -> None:
        router.post(f"{ANTHROPIC}/v1/messages/batches").mock(side_effect=self.anthropic_create)
        router.get(url__regex=rf"{ANTHROPIC}/v1/messages/batches/(?P<batch_id>[^/]+)/results").mock(
            side_effect=self.anthropic_results
        )
        router.get(url__regex=rf"{ANTHROPIC}/v1/messages/batches/(?P<batch_id>[^/]+)$").mock(
            side_effect=self.anthropic_retrieve
        )
        router.post(f"{ANTHROPIC}/v1/messages").mock(side_effect=self.anthropic_direct)
        router.post(f"{OPENAI}/files").mock(side_effect=self.openai_upload)
        router.get(url__regex=rf"{OPENAI}/files/(?P<file_id>[^/]+)/content").mock(side_effect=self.openai_content)
        router.post(f"{OPENAI}/batches").mock(side_effect=self.openai_create)
        router.get(url__regex=rf"{OPENAI}/batches/(?P<batch_id>[^/]+)$").mock(side_effect=self.openai_retrieve)
        router.post(f"{OPENAI}/chat/completions").mock(side_effect=self.openai_direct)


@contextmanager
def batch_api_served(stub: BatchApiStub) -> Iterator[BatchApiStub]:
    with respx.mock(assert_all_called=False) as router, serve_httpx2_from(router):
        stub.install(router)
        yield stub


def openai_completion(text: str, *, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_795_000_000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                  "total_tokens": input_tokens + output_tokens},
    }  # fmt: skip
