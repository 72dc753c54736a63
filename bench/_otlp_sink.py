"""An OTLP/HTTP trace receiver that accepts and discards (loopback only): what ``bench/search.py
--tracing`` exports to, so the figures include the SDK's real export work (protobuf encoding, an HTTP
POST per batch) without a collector on the machine.

    python bench/_otlp_sink.py --port 4318 [--dump spans.jsonl]

Answers ``POST /v1/traces`` with an empty ``ExportTraceServiceResponse`` after decoding the request
(to count spans and, with ``--dump``, write one JSON line per span: name, ids, parent, service and
attributes, for looking at a trace without a viewer); ``GET /stats`` returns the counts.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

_EMPTY = ExportTraceServiceResponse().SerializeToString()


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


class Sink:
    def __init__(self, dump: Path | None = None) -> None:
        self.lock = threading.Lock()
        self.stats: dict[str, Any] = {"requests": 0, "spans": 0, "bytes": 0, "services": {}}
        self.dump = dump.open("a", encoding="utf-8") if dump else None

    def receive(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        count = 0
        nanos_per_ms = 1e6
        services: dict[str, int] = {}
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            service = f"{resource.get('service.name')}/{resource.get('reasoningbank.process.role', '-')}"
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    count += 1
                    services[service] = services.get(service, 0) + 1
                    if self.dump:
                        lines.append(
                            json.dumps(
                                {
                                    "name": span.name,
                                    "trace_id": span.trace_id.hex(),
                                    "span_id": span.span_id.hex(),
                                    "parent_id": span.parent_span_id.hex() or None,
                                    "service": service,
                                    "pid": resource.get("process.pid"),
                                    "instance": resource.get("service.instance.id"),
                                    "duration_ms": round(
                                        (span.end_time_unix_nano - span.start_time_unix_nano) / nanos_per_ms, 3
                                    ),
                                    "attributes": {a.key: _value(a.value) for a in span.attributes},
                                }
                            )
                        )
        with self.lock:
            self.stats["requests"] += 1
            self.stats["spans"] += count
            self.stats["bytes"] += len(body)
            for service, n in services.items():
                self.stats["services"][service] = self.stats["services"].get(service, 0) + n
            if self.dump and lines:
                self.dump.write("\n".join(lines) + "\n")
                self.dump.flush()


def _handler(sink: Sink) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            sink.receive(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(_EMPTY)))
            self.end_headers()
            self.wfile.write(_EMPTY)

        def do_GET(self) -> None:
            with sink.lock:
                body = json.dumps(sink.stats).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # quiet
            pass

    return Handler


@contextmanager
def otlp_sink(port: int = 0, dump: Path | None = None) -> Iterator[tuple[str, Sink]]:
    """A sink on 127.0.0.1 in a thread of this process; yields (traces endpoint URL, sink)."""
    sink = Sink(dump)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(sink))
    thread = threading.Thread(target=server.serve_forever, name="otlp-sink", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", sink
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--dump", type=Path, help="append one JSON line per received span here")
    args = parser.parse_args()
    sink = Sink(args.dump)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _handler(sink))
    print(f"OTLP sink on http://127.0.0.1:{args.port}/v1/traces", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
