"""A loopback OpenAI-compatible LLM for the service under test: it answers ``POST /v1/chat/completions``
with a well-formed reply for each prompt the product sends (distillation, synthesis single and batched,
the judges, patterns, summaries), records every call, and can hold the calls of one kind to keep a worker
busy mid-run.

No Django here, like the rest of the e2e harness: the product is seen only from outside."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.http_thread import ServerThread

# Each distillation teaches a different lesson: the service (rightly) folds a distilled memory into
# an existing one of the project that says the same thing (≥ 0.95 alike with a semantic embedder),
# whatever marker it carries, and the e2e tests distil several sessions into one project.
_LESSONS = [
    ("a flaky checkout test", "Give each test its own copy of the shared fixture it mutates."),
    ("a slow CI pipeline", "Cache the dependency directory between jobs, keyed on the lockfile hash."),
    ("a failing database migration", "Make the migration reversible and test the rollback on a copy."),
    ("a memory leak in a worker", "Take two heap snapshots a minute apart and diff them."),
    ("an intermittent DNS error", "Pin the resolver timeout and retry once with jitter."),
    ("a broken frontend build", "Delete the bundler cache before bisecting the last dependency bump."),
    ("a race in a queue consumer", "Claim jobs with a conditional update so two workers never share one."),
    ("an expired TLS certificate", "Alert thirty days before expiry from the certificate's notAfter date."),
    ("a timezone bug in reports", "Store UTC and convert only when rendering for the user."),
    ("a deadlock in payments", "Lock rows in a fixed order (by id) in every transaction."),
    ("a noisy alert", "Alert on the symptom users feel, not on each internal retry."),
    ("an oversized docker image", "Build in a multi-stage Dockerfile and copy only the artefact."),
]
_lesson_turn = iter(range(1 << 30))
# a model fooled by what the session read: it carries a planted instruction from the trace (a tool's
# output, e.g. a README) into the memory it writes, as the persistent prompt-injection attacks do
_PLANTED = re.compile(r"IMPORTANT SYSTEM NOTE:[^\n\\\"]*")


def _distillation_reply(prompt: str) -> str:
    """The extraction format (memories/sessions/prompts.py): one memory per session, its title
    carrying the trace's marker so a test can find exactly the memory its session produced."""
    markers = re.findall(r"E2E-[A-Za-z0-9-]+", prompt.split("<session_trace>", 1)[-1])
    if not markers:
        return "NO_EXTRACTIONS"
    marker = markers[0]
    outcome = "failure" if "Session Outcome: failure" in prompt else "success"
    topic, lesson = _LESSONS[next(_lesson_turn) % len(_LESSONS)]
    planted = _PLANTED.search(prompt.split("<session_trace>", 1)[-1])
    if planted:
        lesson = f"{lesson} {planted.group().strip()}"
    return (
        "## Memory 1\n"
        f"**Title**: Distilled {marker}\n"
        f"**Description**: When {topic} comes up again (session {marker})\n"
        f"**Content**: {lesson} Learned in {marker}.\n"
        "**Tags**: e2e, distilled\n"
        f"**Outcome**: {outcome}\n"
    )


def _synthesis_reply(prompt: str) -> str:
    """The synthesis reply format (consolidation/prompts/synthesis.py)."""
    markers = re.findall(r"E2E-[A-Za-z0-9-]+", prompt)
    marker = markers[0] if markers else "cluster"
    return (
        f"TITLE: Consolidated {marker}\n"
        "CONTENT: Wrap every database call in a context with a timeout and handle the deadline error.\n"
        "TAGS: e2e, database, timeout\n"
        "OUTCOME: success\n"
        "SOURCE_ATTRIBUTION: synthesised from near-identical memories recorded by the e2e suite"
    )


_BATCH_PAIR = re.compile(r"^(P\d+): (M\d+) → (M\d+)$", re.MULTILINE)


def batch_reply(prompt: str, verdict: str = "compatible") -> str:
    """The batched judge's reply format (consolidation/prompts/judge_batch.py): one verdict per listed pair."""
    return json.dumps(
        [
            {"pair": pair, "older": older, "newer": newer, "reasoning": "the same advice", "verdict": verdict,
             "confidence": 0.9, "explanation": ""}
            for pair, older, newer in _BATCH_PAIR.findall(prompt)
        ]
    )  # fmt: skip


_CLUSTER = re.compile(r"^Cluster (C\d+) — members (.+):$", re.MULTILINE)


def synthesis_batch_reply(
    prompt: str,
    title: str = "",
    content: str = "Wrap every database call in a context with a timeout and handle the deadline error.",
) -> str:
    """The batched synthesis's reply format (consolidation/prompts/synthesis_batch.py): per listed cluster,
    its memory and its summary, naming the cluster and exactly its members. Without a ``title``, each
    cluster's is "Consolidated <marker>" from the first E2E marker among its memories, as the single reply."""
    answers = []
    blocks = _CLUSTER.split(prompt)[1:]  # label, members, that cluster's text, label, …
    for label, members, text in zip(blocks[0::3], blocks[1::3], blocks[2::3], strict=True):
        markers = re.findall(r"E2E-[A-Za-z0-9-]+", text)
        answers.append(
            {
                "cluster": label,
                "members": [m.strip() for m in members.split(",")],
                "title": title or f"Consolidated {markers[0] if markers else 'cluster'}",
                "content": content,
                "tags": ["e2e", "database", "timeout"],
                "outcome": "success",
                "source_attribution": "synthesised from near-identical memories recorded by the e2e suite",
                "summary": "Wrap every database call in a context with a timeout.",
                "key_facts": ["database calls need a deadline"],
                "decisions": [],
                "superseded_facts": [],
            }
        )
    return json.dumps(answers)


def llm_reply(system: str, prompt: str) -> tuple[str, str]:
    """(kind, reply) for one chat completion, dispatched on the product's own prompt texts."""
    if "You are analyzing a completed agent session" in prompt:
        return "distill", _distillation_reply(prompt)
    if prompt.startswith("You are consolidating similar memories"):
        return "synthesis", _synthesis_reply(prompt)
    if system.startswith("You are a memory reasoning assistant."):
        return "reason", (
            '{"answer": "From the memories: see the first one.", "confidence": 0.6, "reasoning": "It names it.", '
            '"temporal_resolutions": [], "source_memory_indices": [1], "requires_inference": false}'
        )
    if system.startswith("You turn a question into search queries"):
        return "search_rewrite", '{"queries": ["deploy keys rotated"]}'
    if system.startswith("You are a memory consolidation agent. Create a concise summary"):
        return "summary", (
            '{"summary": "Wrap every database call in a context with a timeout.", "key_facts": '
            '["database calls need a deadline"], "decisions": [], "superseded_facts": []}'
        )
    if "Pairs (OLDER → NEWER):" in prompt:
        return "judge_batch", batch_reply(prompt)
    if prompt.startswith("Consolidate each of these ") and "Cluster C1 — members" in prompt:
        return "synthesize_batch", synthesis_batch_reply(prompt)
    if "supersede" in system.lower() or "supersede" in prompt.lower():
        return "supersession", '{"supersedes": false, "confidence": "low", "reason": null}'
    if "contradict each other" in prompt:
        return "contradiction", (
            '{"reasoning": "the same advice", "contradicts": false, "confidence": 0.1, "explanation": ""}'
        )
    if "recurring patterns" in prompt:
        return "patterns", "[]"
    return "unknown", "NO_EXTRACTIONS"


@dataclass
class LLMCall:
    kind: str
    system: str
    prompt: str


HOLD_LIMIT = 120.0


@dataclass
class LLMStub:
    """A loopback OpenAI-compatible server answering ``POST /v1/chat/completions``."""

    calls: list[LLMCall] = field(default_factory=list)
    # calls of these kinds wait until their event is set (a test holds a worker busy mid-run)
    held: dict[str, threading.Event] = field(default_factory=dict)
    _served: ServerThread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def hold(self, kind: str) -> None:
        """Answer no call of ``kind`` until ``release(kind)`` (at most HOLD_LIMIT seconds each)."""
        with self._lock:
            self.held.setdefault(kind, threading.Event())

    def release(self, kind: str) -> None:
        with self._lock:
            gate = self.held.pop(kind, None)
        if gate is not None:
            gate.set()

    @property
    def port(self) -> int:
        assert self._served is not None
        return int(self._served.server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def calls_of(self, kind: str) -> list[LLMCall]:
        with self._lock:
            return [c for c in self.calls if c.kind == kind]

    def start(self) -> None:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                    return
                messages = request.get("messages") or []
                system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
                prompt = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
                kind, text = llm_reply(system, prompt)
                with stub._lock:
                    stub.calls.append(LLMCall(kind, system, prompt))
                    gate = stub.held.get(kind)
                if gate is not None:
                    gate.wait(HOLD_LIMIT)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a held caller was killed
                    self._send(
                        200,
                        {
                            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": request.get("model", "stub"),
                            "choices": [
                                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                            ],
                            "usage": {
                                "prompt_tokens": len(prompt) // 4,
                                "completion_tokens": len(text) // 4,
                                "total_tokens": (len(prompt) + len(text)) // 4,
                            },
                        },
                    )

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._served = ServerThread(server, name="llm-stub")
        self._served.start()

    def stop(self) -> None:
        if self._served is not None:
            self._served.stop()
