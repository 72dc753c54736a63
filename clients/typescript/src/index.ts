// A thin, typed client for the ReasoningBank REST API (docs/sdks.md). Every body type comes from
// schema.d.ts, generated from the service's OpenAPI schema by openapi-typescript, through the
// operation's id: a renamed operation or a changed field fails `tsc`.
import type { components, operations } from "./schema.js";
import { ConnectionFailed, errorFrom } from "./errors.js";

export * from "./errors.js";
export type { components, operations, paths } from "./schema.js";

type JsonBody<Op extends keyof operations> =
  NonNullable<operations[Op] extends { requestBody?: infer R } ? R : never> extends { content: { "application/json": infer B } }
    ? B
    : never;
type Ok<Op extends keyof operations> = operations[Op] extends { responses: { 200: { content: { "application/json": infer R } } } }
  ? R
  : operations[Op] extends { responses: { 201: { content: { "application/json": infer R } } } }
    ? R
    : never;

export type SearchRequest = JsonBody<"memories_search">;
export type SearchResponse = Ok<"memories_search">;
export type RecordRequest = JsonBody<"memories_create">;
export type RecordResponse = Ok<"memories_create">;
/** `recorded`, `duplicate`, or — the instruction-smell detector flagged it — `quarantined` (held for an
 * admin's review, `quarantine` says why) or `flagged` (stored active with its `flags`). */
export type RecordStatus = RecordResponse["status"];
/** Why a memory was held for review, and what happens next (docs/security/memory-poisoning.md). */
export type QuarantineNote = components["schemas"]["QuarantineNote"];
/** One finding of the instruction-smell detector: rule, reason, field, excerpt. */
export type Finding = components["schemas"]["Finding"];
/** A held session's finding: the distilled memory it is in, with its span. */
export type HeldFinding = components["schemas"]["HeldFinding"];
export type Memory = Ok<"memories_retrieve">;
/** Who wrote a memory, how, through which client, when, and whether it is trusted for injection. */
export type MemorySource = Memory["source"];
export type FeedbackRequest = JsonBody<"memories_feedback">;
export type FeedbackResponse = Ok<"memories_feedback">;
export type OutcomeRequest = JsonBody<"memories_outcome">;
export type OutcomeResponse = Ok<"memories_outcome">;
export type ContextRequest = JsonBody<"memories_context">;
export type ContextResponse = Ok<"memories_context">;
export type AskRequest = JsonBody<"memories_ask">;
export type AskResponse = Ok<"memories_ask">;
export type SessionSubmitRequest = JsonBody<"sessions_submit">;
export type SessionSubmitResponse = Ok<"sessions_submit">;
export type SessionDetail = Ok<"sessions_retrieve">;
export type CodeReportRequest = JsonBody<"sessions_code_report">;
export type CodeReportResponse = Ok<"sessions_code_report">;
export type ConsolidateRequest = JsonBody<"consolidation_runs_create">;
export type ConsolidateResponse = Ok<"consolidation_runs_create">;
export type ImportRequest = JsonBody<"bank_import">;
export type ImportResult = Ok<"bank_import">;
export type ExportOptions = NonNullable<operations["bank_export"]["parameters"]["query"]>;
export type ImportOptions = NonNullable<operations["bank_import"]["parameters"]["query"]>;

export interface ClientOptions {
  /** The service, e.g. https://memory.example.com (default: REASONINGBANK_URL). */
  baseUrl?: string;
  /** An API token (rb_…), an OAuth access token, or a function returning the current one. */
  token?: string | (() => string | Promise<string>);
  /** Milliseconds before a request is abandoned (default 60 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const USER_AGENT = "reasoningbank-client-typescript/0.1.0";

function env(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env?.[name];
}

export class ReasoningBank {
  readonly baseUrl: string;
  private readonly token: NonNullable<ClientOptions["token"]>;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const baseUrl = options.baseUrl ?? env("REASONINGBANK_URL");
    const token = options.token ?? env("REASONINGBANK_TOKEN");
    if (!baseUrl) throw new Error("no service URL: pass baseUrl or set REASONINGBANK_URL");
    if (!token) throw new Error("no token: pass token (an API token or an OAuth access token) or set REASONINGBANK_TOKEN");
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** One request; an error answer throws its typed error. */
  async request(method: string, path: string, init: { json?: unknown; query?: Record<string, unknown>; body?: BodyInit; contentType?: string } = {}): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(init.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    const token = typeof this.token === "function" ? await this.token() : this.token;
    const headers: Record<string, string> = { Authorization: `Bearer ${token}`, "User-Agent": USER_AGENT, Accept: "application/json" };
    let body: BodyInit | undefined = init.body;
    if (init.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(init.json);
    } else if (init.contentType) {
      headers["Content-Type"] = init.contentType;
    }
    let response: Response;
    try {
      response = await this.fetchImpl(url, { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (error) {
      throw new ConnectionFailed(error instanceof Error ? error.message : String(error), 0, "connection_failed");
    }
    if (!response.ok) throw await errorFrom(response);
    return response;
  }

  private async json<T>(method: string, path: string, json?: unknown): Promise<T> {
    return (await (await this.request(method, path, { json })).json()) as T;
  }

  search(body: SearchRequest): Promise<SearchResponse> {
    return this.json("POST", "/api/v1/memories/search", body);
  }

  record(body: RecordRequest): Promise<RecordResponse> {
    return this.json("POST", "/api/v1/memories", body);
  }

  get(memoryId: string): Promise<Memory> {
    return this.json("GET", `/api/v1/memories/${encodeURIComponent(memoryId)}`);
  }

  feedback(memoryId: string, body: FeedbackRequest): Promise<FeedbackResponse> {
    return this.json("POST", `/api/v1/memories/${encodeURIComponent(memoryId)}/feedback`, body);
  }

  outcome(memoryId: string, body: OutcomeRequest): Promise<OutcomeResponse> {
    return this.json("POST", `/api/v1/memories/${encodeURIComponent(memoryId)}/outcome`, body);
  }

  context(body: ContextRequest = {}): Promise<ContextResponse> {
    return this.json("POST", "/api/v1/memories/context", body);
  }

  ask(body: AskRequest): Promise<AskResponse> {
    return this.json("POST", "/api/v1/memories/ask", body);
  }

  sessionSubmit(body: SessionSubmitRequest): Promise<SessionSubmitResponse> {
    return this.json("POST", "/api/v1/sessions", body);
  }

  sessionGet(sessionId: string): Promise<SessionDetail> {
    return this.json("GET", `/api/v1/sessions/${encodeURIComponent(sessionId)}`);
  }

  sessionCodeReport(body: CodeReportRequest): Promise<CodeReportResponse> {
    return this.json("POST", "/api/v1/sessions/code-report", body);
  }

  consolidate(body: ConsolidateRequest = {}): Promise<ConsolidateResponse> {
    return this.json("POST", "/api/v1/consolidation/runs", body);
  }

  /** Import from text: a ReasoningBank export, a CLAUDE.md (`format: "claude-md"`) or a mem0 export. */
  importBank(body: ImportRequest): Promise<ImportResult> {
    return this.json("POST", "/api/v1/import", body);
  }

  /** Import an export file as it is (JSON Lines). */
  async importNdjson(content: string | Uint8Array, options: Omit<ImportOptions, "format"> = {}): Promise<ImportResult> {
    const body = typeof content === "string" ? content : new Blob([content as BlobPart]);
    const response = await this.request("POST", "/api/v1/import", { query: options, body, contentType: "application/x-ndjson" });
    return (await response.json()) as ImportResult;
  }

  /** The bank as it streams, one JSON Lines record at a time (docs/export-import.md#the-format-version-2). */
  async *export(options: ExportOptions = {}): AsyncGenerator<Record<string, unknown>> {
    const response = await this.request("GET", "/api/v1/export", { query: options });
    if (!response.body) return;
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) yield JSON.parse(line) as Record<string, unknown>;
    }
    pending += decoder.decode();
    if (pending.trim()) yield JSON.parse(pending) as Record<string, unknown>;
  }
}
