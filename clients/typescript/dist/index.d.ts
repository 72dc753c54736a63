import type { components, operations } from "./schema.js";
export * from "./errors.js";
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
export declare class ReasoningBank {
    readonly baseUrl: string;
    private readonly token;
    private readonly timeoutMs;
    private readonly fetchImpl;
    constructor(options?: ClientOptions);
    /** One request; an error answer throws its typed error. */
    request(method: string, path: string, init?: {
        json?: unknown;
        query?: Record<string, unknown>;
        body?: BodyInit;
        contentType?: string;
    }): Promise<Response>;
    private json;
    search(body: SearchRequest): Promise<SearchResponse>;
    record(body: RecordRequest): Promise<RecordResponse>;
    get(memoryId: string): Promise<Memory>;
    feedback(memoryId: string, body: FeedbackRequest): Promise<FeedbackResponse>;
    outcome(memoryId: string, body: OutcomeRequest): Promise<OutcomeResponse>;
    context(body?: ContextRequest): Promise<ContextResponse>;
    ask(body: AskRequest): Promise<AskResponse>;
    sessionSubmit(body: SessionSubmitRequest): Promise<SessionSubmitResponse>;
    sessionGet(sessionId: string): Promise<SessionDetail>;
    sessionCodeReport(body: CodeReportRequest): Promise<CodeReportResponse>;
    consolidate(body?: ConsolidateRequest): Promise<ConsolidateResponse>;
    /** Import from text: a ReasoningBank export, a CLAUDE.md (`format: "claude-md"`) or a mem0 export. */
    importBank(body: ImportRequest): Promise<ImportResult>;
    /** Import an export file as it is (JSON Lines). */
    importNdjson(content: string | Uint8Array, options?: Omit<ImportOptions, "format">): Promise<ImportResult>;
    /** The bank as it streams, one JSON Lines record at a time (docs/export-import.md#the-format-version-2). */
    export(options?: ExportOptions): AsyncGenerator<Record<string, unknown>>;
}
