import type { components, operations } from "./schema.js";
import type { ExportRecord } from "./export.js";
import { Paginator } from "./pagination.js";
export * from "./errors.js";
export type * from "./export.js";
export { Paginator, type Page } from "./pagination.js";
export { DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, retryAfterParse, retryWaitMs } from "./retry.js";
export type { RetryPolicy } from "./retry.js";
export { VERSION } from "./version.js";
export type { components, operations, paths } from "./schema.js";
type JsonBody<Op extends keyof operations> = NonNullable<operations[Op] extends {
    requestBody?: infer R;
} ? R : never> extends {
    content: {
        "application/json": infer B;
    };
} ? B : never;
type Ok<Op extends keyof operations> = operations[Op] extends {
    responses: {
        200: {
            content: {
                "application/json": infer R;
            };
        };
    };
} ? R : operations[Op] extends {
    responses: {
        201: {
            content: {
                "application/json": infer R;
            };
        };
    };
} ? R : never;
type Query<Op extends keyof operations> = NonNullable<operations[Op] extends {
    parameters: {
        query?: infer Q;
    };
} ? Q : never>;
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
type QueryValue = string | number | boolean | readonly (string | number | boolean)[] | null | undefined;
export declare class ReasoningBank {
    readonly baseUrl: string;
    private readonly token;
    private readonly timeoutMs;
    private readonly connectTimeoutMs;
    private readonly policy;
    private readonly transport;
    constructor(options?: ClientOptions);
    private url;
    /** One call, tried again while the policy allows; an error answer throws its typed error. The answer's
     * body is read already, unless `stream` (then it is the caller's to read, with `bodyChunks`). */
    private open;
    /** One request; an error answer throws its typed error. The answer's body is the caller's to read. */
    request(method: string, path: string, init?: {
        json?: unknown;
        query?: Record<string, QueryValue>;
        body?: string | Uint8Array;
        contentType?: string;
        idempotent?: boolean;
    }, options?: RequestOptions): Promise<Response>;
    private json;
    search(body: SearchRequest, options?: RequestOptions): Promise<SearchResponse>;
    /** Record a memory. Retried like a read: an identical active memory is never written twice, so a retry
     * whose first attempt was written answers with that memory's id (and `duplicate_of`). */
    record(body: RecordRequest, options?: RequestOptions): Promise<RecordResponse>;
    /** One memory; with `query.session_id`, your session reading it for its task: a use of it (its confidence
     * moves, the session's ledger notes it). Without, a read that changes nothing. */
    get(memoryId: string, options?: RequestOptions, query?: MemoryGetQuery): Promise<Memory>;
    feedback(memoryId: string, body: FeedbackRequest, options?: RequestOptions): Promise<FeedbackResponse>;
    outcome(memoryId: string, body: OutcomeRequest, options?: RequestOptions): Promise<OutcomeResponse>;
    context(body?: ContextRequest, options?: RequestOptions): Promise<ContextResponse>;
    ask(body: AskRequest, options?: RequestOptions): Promise<AskResponse>;
    /** The memories about a file about to be read or changed (`path`) or a failing command's error (`error`),
     * framed for injection (docs/code-memory.md#recall-at-the-moment-of-action). */
    recall(body: RecallRequest, options?: RequestOptions): Promise<RecallResponse>;
    sessionSubmit(body: SessionSubmitRequest, options?: RequestOptions): Promise<SessionSubmitResponse>;
    sessionGet(sessionId: string, options?: RequestOptions): Promise<SessionDetail>;
    sessionCodeReport(body: CodeReportRequest, options?: RequestOptions): Promise<CodeReportResponse>;
    codeChangesReport(body: CodeChangesRequest, options?: RequestOptions): Promise<CodeChangesResponse>;
    /** Seed the bank with commits read from a repository's git log (docs/code-memory.md#seeding-from-history). */
    historySeed(body: HistorySeedRequest, options?: RequestOptions): Promise<HistorySeedResponse>;
    /** How far a repository's seeding got: the last commit read, the batches by distillation status. */
    historyProgress(query: HistoryProgressQuery, options?: RequestOptions): Promise<HistoryProgressResponse>;
    consolidate(body?: ConsolidateRequest, options?: RequestOptions): Promise<ConsolidateResponse>;
    /** Import from text: a ReasoningBank export, a CLAUDE.md (`format: "claude-md"`) or a mem0 export. */
    importBank(body: ImportRequest, options?: RequestOptions): Promise<ImportResult>;
    /** Import an export file as it is (JSON Lines). */
    importNdjson(content: string | Uint8Array, query?: Omit<ImportOptions, "format">, options?: RequestOptions): Promise<ImportResult>;
    /** The memories in reach, filtered (`project`, `tag`, `state`, `q`, …), page after page:
     * `for await (const memory of bank.memoryList({ project: "web-app" }))`; `.pages()` for the pages. */
    memoryList(query?: MemoryListQuery, options?: RequestOptions): Paginator<MemoryPage["results"][number], MemoryPage>;
    /** The submitted sessions (`status`, `project`), page after page. */
    sessionList(query?: SessionListQuery, options?: RequestOptions): Paginator<SessionPage["results"][number], SessionPage>;
    /** The bank as it streams, one JSON Lines record at a time (docs/export-import.md#the-format-version-2),
     * narrowed on `record.type`. Needs a token with the `admin` scope. Retried until the stream starts, never
     * in the middle of it. */
    export(query?: ExportOptions, options?: RequestOptions): AsyncGenerator<ExportRecord, void, undefined>;
}
