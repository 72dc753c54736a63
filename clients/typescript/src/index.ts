// A thin, typed client for the ReasoningBank REST API (docs/sdks.md). Every body type comes from
// schema.d.ts, generated from the service's OpenAPI schema by openapi-typescript, through the
// operation's id: a renamed operation or a changed field fails `tsc`. Calls that may be repeated are retried
// on 429, 503 and connection failures, with backoff and the service's Retry-After (retry.ts).
import type { components, operations } from "./schema.js";
import { ConnectionFailed, REQUEST_ID_HEADER, ReasoningBankError, errorFrom } from "./errors.js";
import type { ExportRecord } from "./export.js";
import { Paginator } from "./pagination.js";
import {
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  type RetryPolicy,
  retryWaitMs,
  sleep,
  statusRetryable,
} from "./retry.js";
import { type Transport, connectionFailureDetail, fetchTransport, nodeTransport } from "./transport.js";
import { VERSION } from "./version.js";

export * from "./errors.js";
export type * from "./export.js";
export { Paginator, type Page } from "./pagination.js";
export { DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, retryAfterParse, retryWaitMs } from "./retry.js";
export type { RetryPolicy } from "./retry.js";
export { VERSION } from "./version.js";
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
type Query<Op extends keyof operations> = NonNullable<operations[Op] extends { parameters: { query?: infer Q } } ? Q : never>;

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
export type RecallRequest = JsonBody<"memories_recall">;
export type RecallResponse = Ok<"memories_recall">;
export type SessionSubmitRequest = JsonBody<"sessions_submit">;
export type SessionSubmitResponse = Ok<"sessions_submit">;
export type SessionDetail = Ok<"sessions_retrieve">;
export type CodeReportRequest = JsonBody<"sessions_code_report">;
export type CodeReportResponse = Ok<"sessions_code_report">;
export type CodeChangesRequest = JsonBody<"code_changes_report">;
export type CodeChangesResponse = Ok<"code_changes_report">;
export type HistorySeedRequest = JsonBody<"code_history_seed">;
export type HistorySeedResponse = components["schemas"]["HistorySeedResponse"];
export type HistoryProgressResponse = Ok<"code_history_progress">;
export type HistoryProgressQuery = Query<"code_history_progress">;
export type MemoryGetQuery = Query<"memories_retrieve">;
export type ConsolidateRequest = JsonBody<"consolidation_runs_create">;
export type ConsolidateResponse = Ok<"consolidation_runs_create">;
export type ImportRequest = JsonBody<"bank_import">;
export type ImportResult = Ok<"bank_import">;
export type ExportOptions = NonNullable<operations["bank_export"]["parameters"]["query"]>;
export type ImportOptions = NonNullable<operations["bank_import"]["parameters"]["query"]>;

export type MemoryListQuery = Query<"memories_list">;
export type MemoryPage = Ok<"memories_list">;
export type SessionListQuery = Query<"sessions_list">;
export type SessionPage = Ok<"sessions_list">;

export interface ClientOptions {
  /** The service, e.g. https://memory.example.com (default: REASONINGBANK_URL). */
  baseUrl?: string;
  /** An API token (rb_…), an OAuth access token, or a function returning the current one. */
  token?: string | (() => string | Promise<string>);
  /** Milliseconds without a byte from the service before a request is abandoned (default 60 000, like the
   * Python client's `timeout`); a long export is never cut while it streams. */
  timeoutMs?: number;
  /** Milliseconds to open the connection (default 10 000, like the Python client's `connect_timeout`). */
  connectTimeoutMs?: number;
  /** Retries of a call that may be repeated (default 2; 0 turns retrying off). */
  maxRetries?: number;
  /** The wait before the first retry, doubled for each further one, with jitter (default 500). */
  backoffBaseMs?: number;
  /** The longest wait; a Retry-After beyond it is thrown at once instead (default 30 000). */
  backoffCapMs?: number;
  /** A fetch to send requests with (a test double, a proxy agent); it then owns its connections, and only
   * the read timeout is the client's. Default: Node.js's http/https modules (fetch elsewhere). */
  fetch?: typeof fetch;
}

/** Per-call overrides, the last argument of every method. */
export interface RequestOptions {
  timeoutMs?: number;
  connectTimeoutMs?: number;
  maxRetries?: number;
  /** `true` lets a call the client does not repeat (feedback, outcome, consolidate, import) be retried, when
   * the caller knows repeating it is harmless; `false` never retries this call. */
  idempotent?: boolean;
}

const USER_AGENT = `reasoningbank-client-typescript/${VERSION}`;

type QueryValue = string | number | boolean | readonly (string | number | boolean)[] | null | undefined;

interface CallSpec {
  method: string;
  path: string;
  query?: Record<string, QueryValue>;
  json?: unknown;
  body?: string | Uint8Array;
  contentType?: string;
  /** repeating it does no more than doing it once (docs/sdks.md#retries-and-timeouts) */
  idempotent: boolean;
}

/** An answer whose body is still to be read, with what reading it needs. */
interface Opened {
  response: Response;
  timer: ReadTimer;
  url: URL;
  requestId: string;
  attempts: number;
}

function env(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env?.[name];
}

function runsOnNode(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof proc?.versions?.node === "string";
}

/** The read timeout: it runs only while the client waits for the service (for the answer to begin, then for
 * each chunk), never while the caller works through what came, so a slowly consumed export is not cut. */
class ReadTimer {
  private timer: ReturnType<typeof setTimeout> | undefined;
  expired = false;

  constructor(
    readonly ms: number,
    private readonly controller: AbortController,
  ) {}

  arm(): void {
    this.stop();
    this.timer = setTimeout(() => {
      this.expired = true;
      this.controller.abort(new Error(`no answer within ${this.ms} ms`));
    }, this.ms);
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function connectionFailed(error: unknown, opened: { url: URL; timer: ReadTimer; requestId: string; attempts: number }): ConnectionFailed {
  const detail = connectionFailureDetail(error, opened.url, opened.timer.expired ? opened.timer.ms : null);
  return new ConnectionFailed(detail, 0, "connection_failed", {}, null, { requestId: opened.requestId, attempts: opened.attempts, cause: error });
}

/** The answer's body chunk by chunk, the read timeout running while each is awaited; a failure midway is a
 * `ConnectionFailed`. Leaving early cancels the rest (the connection is closed). */
async function* bodyChunks(opened: Opened): AsyncGenerator<Uint8Array, void, undefined> {
  if (!opened.response.body) return;
  const reader = opened.response.body.getReader();
  let finished = false;
  try {
    for (;;) {
      opened.timer.arm();
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw connectionFailed(error, opened);
      } finally {
        opened.timer.stop();
      }
      if (chunk.done) {
        finished = true;
        return;
      }
      yield chunk.value;
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}

async function bodyText(opened: Opened): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of bodyChunks(opened)) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

export class ReasoningBank {
  readonly baseUrl: string;
  private readonly token: NonNullable<ClientOptions["token"]>;
  private readonly timeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly policy: RetryPolicy;
  private readonly transport: Promise<Transport>;

  constructor(options: ClientOptions = {}) {
    const baseUrl = options.baseUrl ?? env("REASONINGBANK_URL");
    const token = options.token ?? env("REASONINGBANK_TOKEN");
    if (!baseUrl) throw new Error("no service URL: pass baseUrl or set REASONINGBANK_URL");
    if (!token) throw new Error("no token: pass token (an API token or an OAuth access token) or set REASONINGBANK_TOKEN");
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.policy = {
      maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      backoffBaseMs: options.backoffBaseMs ?? DEFAULT_BACKOFF_BASE_MS,
      backoffCapMs: options.backoffCapMs ?? DEFAULT_BACKOFF_CAP_MS,
    };
    if (Object.values(this.policy).some((value) => !(value >= 0))) throw new Error("maxRetries, backoffBaseMs and backoffCapMs must not be negative");
    const given = options.fetch;
    this.transport = given
      ? Promise.resolve(fetchTransport(given))
      : runsOnNode()
        ? nodeTransport()
        : Promise.resolve(fetchTransport(globalThis.fetch.bind(globalThis)));
  }

  private url(path: string, query: Record<string, QueryValue> = {}): URL {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) for (const item of value) url.searchParams.append(key, String(item));
      else url.searchParams.set(key, String(value));
    }
    return url;
  }

  /** One call, tried again while the policy allows; an error answer throws its typed error. The answer's
   * body is read already, unless `stream` (then it is the caller's to read, with `bodyChunks`). */
  private async open(spec: CallSpec, options: RequestOptions = {}, stream = false): Promise<Opened & { text: string }> {
    const transport = await this.transport;
    const retried = options.idempotent ?? spec.idempotent;
    const policy: RetryPolicy = { ...this.policy, maxRetries: retried ? (options.maxRetries ?? this.policy.maxRetries) : 0 };
    const readMs = options.timeoutMs ?? this.timeoutMs;
    const connectTimeoutMs = options.connectTimeoutMs ?? this.connectTimeoutMs;
    // one id for the call's attempts: the service logs it (and echoes it), so a failure can be found
    const requestId = globalThis.crypto.randomUUID().replace(/-/g, "");
    const url = this.url(spec.path, spec.query);
    let body = spec.body;
    const headers: Record<string, string> = { "User-Agent": USER_AGENT, Accept: "application/json", [REQUEST_ID_HEADER]: requestId };
    if (spec.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(spec.json);
    } else if (spec.contentType) {
      headers["Content-Type"] = spec.contentType;
    }
    for (let attempts = 1; ; attempts++) {
      const token = typeof this.token === "function" ? await this.token() : this.token;
      const controller = new AbortController();
      const opened = { url, requestId, attempts, timer: new ReadTimer(readMs, controller) };
      let failure: ReasoningBankError;
      let wait: number | null;
      try {
        const response = await transport(url, {
          method: spec.method,
          headers: { ...headers, Authorization: `Bearer ${token}` },
          body,
          signal: controller.signal,
          connectTimeoutMs,
          onConnect: () => opened.timer.arm(),
        });
        opened.timer.stop();
        const answer = { ...opened, response };
        if (response.ok) return { ...answer, text: stream ? "" : await bodyText(answer) };
        failure = await errorFrom(response, await bodyText(answer), { requestId, attempts });
        wait = statusRetryable(failure.status, failure.code) ? retryWaitMs(policy, attempts, failure.retryAfter) : null;
      } catch (error) {
        opened.timer.stop();
        failure = error instanceof ReasoningBankError ? error : connectionFailed(error, opened);
        wait = failure instanceof ConnectionFailed ? retryWaitMs(policy, attempts, null) : null;
      }
      if (wait === null) throw failure;
      await sleep(wait);
    }
  }

  /** One request; an error answer throws its typed error. The answer's body is the caller's to read. */
  async request(
    method: string,
    path: string,
    init: { json?: unknown; query?: Record<string, QueryValue>; body?: string | Uint8Array; contentType?: string; idempotent?: boolean } = {},
    options: RequestOptions = {},
  ): Promise<Response> {
    const { idempotent, ...rest } = init;
    const opened = await this.open({ method, path, ...rest, idempotent: idempotent ?? method === "GET" }, options);
    const { status, statusText, headers } = opened.response;
    return new Response([101, 204, 205, 304].includes(status) ? null : opened.text, { status, statusText, headers });
  }

  private async json<T>(spec: CallSpec, options?: RequestOptions): Promise<T> {
    return JSON.parse((await this.open(spec, options)).text) as T;
  }

  search(body: SearchRequest, options?: RequestOptions): Promise<SearchResponse> {
    return this.json({ method: "POST", path: "/api/v1/memories/search", json: body, idempotent: true }, options);
  }

  /** Record a memory. Retried like a read: an identical active memory is never written twice, so a retry
   * whose first attempt was written answers with that memory's id (and `duplicate_of`). */
  record(body: RecordRequest, options?: RequestOptions): Promise<RecordResponse> {
    return this.json({ method: "POST", path: "/api/v1/memories", json: body, idempotent: true }, options);
  }

  /** One memory; with `query.session_id`, your session reading it for its task: a use of it (its confidence
   * moves, the session's ledger notes it). Without, a read that changes nothing. */
  get(memoryId: string, options?: RequestOptions, query: MemoryGetQuery = {}): Promise<Memory> {
    const path = `/api/v1/memories/${encodeURIComponent(memoryId)}`;
    return this.json({ method: "GET", path, query, idempotent: true }, options);
  }

  feedback(memoryId: string, body: FeedbackRequest, options?: RequestOptions): Promise<FeedbackResponse> {
    return this.json({ method: "POST", path: `/api/v1/memories/${encodeURIComponent(memoryId)}/feedback`, json: body, idempotent: false }, options);
  }

  outcome(memoryId: string, body: OutcomeRequest, options?: RequestOptions): Promise<OutcomeResponse> {
    return this.json({ method: "POST", path: `/api/v1/memories/${encodeURIComponent(memoryId)}/outcome`, json: body, idempotent: false }, options);
  }

  context(body: ContextRequest = {}, options?: RequestOptions): Promise<ContextResponse> {
    return this.json({ method: "POST", path: "/api/v1/memories/context", json: body, idempotent: true }, options);
  }

  ask(body: AskRequest, options?: RequestOptions): Promise<AskResponse> {
    return this.json({ method: "POST", path: "/api/v1/memories/ask", json: body, idempotent: true }, options);
  }

  /** The memories about a file about to be read or changed (`path`) or a failing command's error (`error`),
   * framed for injection (docs/code-memory.md#recall-at-the-moment-of-action). */
  recall(body: RecallRequest, options?: RequestOptions): Promise<RecallResponse> {
    return this.json({ method: "POST", path: "/api/v1/memories/recall", json: body, idempotent: true }, options);
  }

  sessionSubmit(body: SessionSubmitRequest, options?: RequestOptions): Promise<SessionSubmitResponse> {
    return this.json({ method: "POST", path: "/api/v1/sessions", json: body, idempotent: true }, options);
  }

  sessionGet(sessionId: string, options?: RequestOptions): Promise<SessionDetail> {
    return this.json({ method: "GET", path: `/api/v1/sessions/${encodeURIComponent(sessionId)}`, idempotent: true }, options);
  }

  sessionCodeReport(body: CodeReportRequest, options?: RequestOptions): Promise<CodeReportResponse> {
    return this.json({ method: "POST", path: "/api/v1/sessions/code-report", json: body, idempotent: true }, options);
  }

  codeChangesReport(body: CodeChangesRequest, options?: RequestOptions): Promise<CodeChangesResponse> {
    return this.json({ method: "POST", path: "/api/v1/code/changes", json: body, idempotent: true }, options);
  }

  /** Seed the bank with commits read from a repository's git log (docs/code-memory.md#seeding-from-history). */
  historySeed(body: HistorySeedRequest, options?: RequestOptions): Promise<HistorySeedResponse> {
    return this.json({ method: "POST", path: "/api/v1/code/history", json: body, idempotent: true }, options);
  }

  /** How far a repository's seeding got: the last commit read, the batches by distillation status. */
  historyProgress(query: HistoryProgressQuery, options?: RequestOptions): Promise<HistoryProgressResponse> {
    return this.json({ method: "GET", path: "/api/v1/code/history", query, idempotent: true }, options);
  }

  consolidate(body: ConsolidateRequest = {}, options?: RequestOptions): Promise<ConsolidateResponse> {
    return this.json({ method: "POST", path: "/api/v1/consolidation/runs", json: body, idempotent: false }, options);
  }

  /** Import from text: a ReasoningBank export, a CLAUDE.md (`format: "claude-md"`) or a mem0 export. */
  importBank(body: ImportRequest, options?: RequestOptions): Promise<ImportResult> {
    return this.json({ method: "POST", path: "/api/v1/import", json: body, idempotent: false }, options);
  }

  /** Import an export file as it is (JSON Lines). */
  importNdjson(content: string | Uint8Array, query: Omit<ImportOptions, "format"> = {}, options?: RequestOptions): Promise<ImportResult> {
    return this.json({ method: "POST", path: "/api/v1/import", query, body: content, contentType: "application/x-ndjson", idempotent: false }, options);
  }

  /** The memories in reach, filtered (`project`, `tag`, `state`, `q`, …), page after page:
   * `for await (const memory of bank.memoryList({ project: "web-app" }))`; `.pages()` for the pages. */
  memoryList(query: MemoryListQuery = {}, options?: RequestOptions): Paginator<MemoryPage["results"][number], MemoryPage> {
    return new Paginator(
      (page) => this.json<MemoryPage>({ method: "GET", path: "/api/v1/memories", query: { ...query, page }, idempotent: true }, options),
      query.page ?? 1,
    );
  }

  /** The submitted sessions (`status`, `project`), page after page. */
  sessionList(query: SessionListQuery = {}, options?: RequestOptions): Paginator<SessionPage["results"][number], SessionPage> {
    return new Paginator(
      (page) => this.json<SessionPage>({ method: "GET", path: "/api/v1/sessions", query: { ...query, page }, idempotent: true }, options),
      query.page ?? 1,
    );
  }

  /** The bank as it streams, one JSON Lines record at a time (docs/export-import.md#the-format-version-2),
   * narrowed on `record.type`. Needs a token with the `admin` scope. Retried until the stream starts, never
   * in the middle of it. */
  async *export(query: ExportOptions = {}, options?: RequestOptions): AsyncGenerator<ExportRecord, void, undefined> {
    const opened = await this.open({ method: "GET", path: "/api/v1/export", query, idempotent: true }, options, true);
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of bodyChunks(opened)) {
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) yield JSON.parse(line) as ExportRecord;
    }
    pending += decoder.decode();
    if (pending.trim()) yield JSON.parse(pending) as ExportRecord;
  }
}
