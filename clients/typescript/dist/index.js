import { ConnectionFailed, REQUEST_ID_HEADER, ReasoningBankError, errorFrom } from "./errors.js";
import { Paginator } from "./pagination.js";
import { DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, retryWaitMs, sleep, statusRetryable, } from "./retry.js";
import { connectionFailureDetail, fetchTransport, nodeTransport } from "./transport.js";
import { VERSION } from "./version.js";
export * from "./errors.js";
export { Paginator } from "./pagination.js";
export { DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, retryAfterParse, retryWaitMs } from "./retry.js";
export { VERSION } from "./version.js";
const USER_AGENT = `reasoningbank-client-typescript/${VERSION}`;
function env(name) {
    const proc = globalThis.process;
    return proc?.env?.[name];
}
function runsOnNode() {
    const proc = globalThis.process;
    return typeof proc?.versions?.node === "string";
}
/** The read timeout: it runs only while the client waits for the service (for the answer to begin, then for
 * each chunk), never while the caller works through what came, so a slowly consumed export is not cut. */
class ReadTimer {
    ms;
    controller;
    timer;
    expired = false;
    constructor(ms, controller) {
        this.ms = ms;
        this.controller = controller;
    }
    arm() {
        this.stop();
        this.timer = setTimeout(() => {
            this.expired = true;
            this.controller.abort(new Error(`no answer within ${this.ms} ms`));
        }, this.ms);
    }
    stop() {
        if (this.timer !== undefined)
            clearTimeout(this.timer);
        this.timer = undefined;
    }
}
function connectionFailed(error, opened) {
    const detail = connectionFailureDetail(error, opened.url, opened.timer.expired ? opened.timer.ms : null);
    return new ConnectionFailed(detail, 0, "connection_failed", {}, null, { requestId: opened.requestId, attempts: opened.attempts, cause: error });
}
/** The answer's body chunk by chunk, the read timeout running while each is awaited; a failure midway is a
 * `ConnectionFailed`. Leaving early cancels the rest (the connection is closed). */
async function* bodyChunks(opened) {
    if (!opened.response.body)
        return;
    const reader = opened.response.body.getReader();
    let finished = false;
    try {
        for (;;) {
            opened.timer.arm();
            let chunk;
            try {
                chunk = await reader.read();
            }
            catch (error) {
                throw connectionFailed(error, opened);
            }
            finally {
                opened.timer.stop();
            }
            if (chunk.done) {
                finished = true;
                return;
            }
            yield chunk.value;
        }
    }
    finally {
        if (!finished)
            await reader.cancel().catch(() => undefined);
    }
}
async function bodyText(opened) {
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of bodyChunks(opened))
        text += decoder.decode(chunk, { stream: true });
    return text + decoder.decode();
}
export class ReasoningBank {
    baseUrl;
    token;
    timeoutMs;
    connectTimeoutMs;
    policy;
    transport;
    constructor(options = {}) {
        const baseUrl = options.baseUrl ?? env("REASONINGBANK_URL");
        const token = options.token ?? env("REASONINGBANK_TOKEN");
        if (!baseUrl)
            throw new Error("no service URL: pass baseUrl or set REASONINGBANK_URL");
        if (!token)
            throw new Error("no token: pass token (an API token or an OAuth access token) or set REASONINGBANK_TOKEN");
        this.baseUrl = baseUrl.replace(/\/+$/, "");
        this.token = token;
        this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
        this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
        this.policy = {
            maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
            backoffBaseMs: options.backoffBaseMs ?? DEFAULT_BACKOFF_BASE_MS,
            backoffCapMs: options.backoffCapMs ?? DEFAULT_BACKOFF_CAP_MS,
        };
        if (Object.values(this.policy).some((value) => !(value >= 0)))
            throw new Error("maxRetries, backoffBaseMs and backoffCapMs must not be negative");
        const given = options.fetch;
        this.transport = given
            ? Promise.resolve(fetchTransport(given))
            : runsOnNode()
                ? nodeTransport()
                : Promise.resolve(fetchTransport(globalThis.fetch.bind(globalThis)));
    }
    url(path, query = {}) {
        const url = new URL(this.baseUrl + path);
        for (const [key, value] of Object.entries(query)) {
            if (value === undefined || value === null)
                continue;
            if (Array.isArray(value))
                for (const item of value)
                    url.searchParams.append(key, String(item));
            else
                url.searchParams.set(key, String(value));
        }
        return url;
    }
    /** One call, tried again while the policy allows; an error answer throws its typed error. The answer's
     * body is read already, unless `stream` (then it is the caller's to read, with `bodyChunks`). */
    async open(spec, options = {}, stream = false) {
        const transport = await this.transport;
        const retried = options.idempotent ?? spec.idempotent;
        const policy = { ...this.policy, maxRetries: retried ? (options.maxRetries ?? this.policy.maxRetries) : 0 };
        const readMs = options.timeoutMs ?? this.timeoutMs;
        const connectTimeoutMs = options.connectTimeoutMs ?? this.connectTimeoutMs;
        // one id for the call's attempts: the service logs it (and echoes it), so a failure can be found
        const requestId = globalThis.crypto.randomUUID().replace(/-/g, "");
        const url = this.url(spec.path, spec.query);
        let body = spec.body;
        const headers = { "User-Agent": USER_AGENT, Accept: "application/json", [REQUEST_ID_HEADER]: requestId };
        if (spec.json !== undefined) {
            headers["Content-Type"] = "application/json";
            body = JSON.stringify(spec.json);
        }
        else if (spec.contentType) {
            headers["Content-Type"] = spec.contentType;
        }
        for (let attempts = 1;; attempts++) {
            const token = typeof this.token === "function" ? await this.token() : this.token;
            const controller = new AbortController();
            const opened = { url, requestId, attempts, timer: new ReadTimer(readMs, controller) };
            let failure;
            let wait;
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
                if (response.ok)
                    return { ...answer, text: stream ? "" : await bodyText(answer) };
                failure = await errorFrom(response, await bodyText(answer), { requestId, attempts });
                wait = statusRetryable(failure.status, failure.code) ? retryWaitMs(policy, attempts, failure.retryAfter) : null;
            }
            catch (error) {
                opened.timer.stop();
                failure = error instanceof ReasoningBankError ? error : connectionFailed(error, opened);
                wait = failure instanceof ConnectionFailed ? retryWaitMs(policy, attempts, null) : null;
            }
            if (wait === null)
                throw failure;
            await sleep(wait);
        }
    }
    /** One request; an error answer throws its typed error. The answer's body is the caller's to read. */
    async request(method, path, init = {}, options = {}) {
        const { idempotent, ...rest } = init;
        const opened = await this.open({ method, path, ...rest, idempotent: idempotent ?? method === "GET" }, options);
        const { status, statusText, headers } = opened.response;
        return new Response([101, 204, 205, 304].includes(status) ? null : opened.text, { status, statusText, headers });
    }
    async json(spec, options) {
        return JSON.parse((await this.open(spec, options)).text);
    }
    search(body, options) {
        return this.json({ method: "POST", path: "/api/v1/memories/search", json: body, idempotent: true }, options);
    }
    /** Record a memory. Retried like a read: an identical active memory is never written twice, so a retry
     * whose first attempt was written answers with that memory's id (and `duplicate_of`). */
    record(body, options) {
        return this.json({ method: "POST", path: "/api/v1/memories", json: body, idempotent: true }, options);
    }
    /** One memory; with `query.session_id`, your session reading it for its task: a use of it (its confidence
     * moves, the session's ledger notes it). Without, a read that changes nothing. */
    get(memoryId, options, query = {}) {
        const path = `/api/v1/memories/${encodeURIComponent(memoryId)}`;
        return this.json({ method: "GET", path, query, idempotent: true }, options);
    }
    feedback(memoryId, body, options) {
        return this.json({ method: "POST", path: `/api/v1/memories/${encodeURIComponent(memoryId)}/feedback`, json: body, idempotent: false }, options);
    }
    outcome(memoryId, body, options) {
        return this.json({ method: "POST", path: `/api/v1/memories/${encodeURIComponent(memoryId)}/outcome`, json: body, idempotent: false }, options);
    }
    context(body = {}, options) {
        return this.json({ method: "POST", path: "/api/v1/memories/context", json: body, idempotent: true }, options);
    }
    ask(body, options) {
        return this.json({ method: "POST", path: "/api/v1/memories/ask", json: body, idempotent: true }, options);
    }
    /** The memories about a file about to be read or changed (`path`) or a failing command's error (`error`),
     * framed for injection (docs/code-memory.md#recall-at-the-moment-of-action). */
    recall(body, options) {
        return this.json({ method: "POST", path: "/api/v1/memories/recall", json: body, idempotent: true }, options);
    }
    sessionSubmit(body, options) {
        return this.json({ method: "POST", path: "/api/v1/sessions", json: body, idempotent: true }, options);
    }
    sessionGet(sessionId, options) {
        return this.json({ method: "GET", path: `/api/v1/sessions/${encodeURIComponent(sessionId)}`, idempotent: true }, options);
    }
    sessionCodeReport(body, options) {
        return this.json({ method: "POST", path: "/api/v1/sessions/code-report", json: body, idempotent: true }, options);
    }
    codeChangesReport(body, options) {
        return this.json({ method: "POST", path: "/api/v1/code/changes", json: body, idempotent: true }, options);
    }
    /** Seed the bank with commits read from a repository's git log (docs/code-memory.md#seeding-from-history). */
    historySeed(body, options) {
        return this.json({ method: "POST", path: "/api/v1/code/history", json: body, idempotent: true }, options);
    }
    /** How far a repository's seeding got: the last commit read, the batches by distillation status. */
    historyProgress(query, options) {
        return this.json({ method: "GET", path: "/api/v1/code/history", query, idempotent: true }, options);
    }
    consolidate(body = {}, options) {
        return this.json({ method: "POST", path: "/api/v1/consolidation/runs", json: body, idempotent: false }, options);
    }
    /** Import from text: a ReasoningBank export, a CLAUDE.md (`format: "claude-md"`) or a mem0 export. */
    importBank(body, options) {
        return this.json({ method: "POST", path: "/api/v1/import", json: body, idempotent: false }, options);
    }
    /** Import an export file as it is (JSON Lines). */
    importNdjson(content, query = {}, options) {
        return this.json({ method: "POST", path: "/api/v1/import", query, body: content, contentType: "application/x-ndjson", idempotent: false }, options);
    }
    /** The memories in reach, filtered (`project`, `tag`, `state`, `q`, …), page after page:
     * `for await (const memory of bank.memoryList({ project: "web-app" }))`; `.pages()` for the pages. */
    memoryList(query = {}, options) {
        return new Paginator((page) => this.json({ method: "GET", path: "/api/v1/memories", query: { ...query, page }, idempotent: true }, options), query.page ?? 1);
    }
    /** The submitted sessions (`status`, `project`), page after page. */
    sessionList(query = {}, options) {
        return new Paginator((page) => this.json({ method: "GET", path: "/api/v1/sessions", query: { ...query, page }, idempotent: true }, options), query.page ?? 1);
    }
    /** The bank as it streams, one JSON Lines record at a time (docs/export-import.md#the-format-version-2),
     * narrowed on `record.type`. Needs a token with the `admin` scope. Retried until the stream starts, never
     * in the middle of it. */
    async *export(query = {}, options) {
        const opened = await this.open({ method: "GET", path: "/api/v1/export", query, idempotent: true }, options, true);
        const decoder = new TextDecoder();
        let pending = "";
        for await (const chunk of bodyChunks(opened)) {
            pending += decoder.decode(chunk, { stream: true });
            const lines = pending.split("\n");
            pending = lines.pop() ?? "";
            for (const line of lines)
                if (line.trim())
                    yield JSON.parse(line);
        }
        pending += decoder.decode();
        if (pending.trim())
            yield JSON.parse(pending);
    }
}
