import { ConnectionFailed, errorFrom } from "./errors.js";
export * from "./errors.js";
const USER_AGENT = "reasoningbank-client-typescript/0.1.0";
function env(name) {
    const proc = globalThis.process;
    return proc?.env?.[name];
}
export class ReasoningBank {
    baseUrl;
    token;
    timeoutMs;
    fetchImpl;
    constructor(options = {}) {
        const baseUrl = options.baseUrl ?? env("REASONINGBANK_URL");
        const token = options.token ?? env("REASONINGBANK_TOKEN");
        if (!baseUrl)
            throw new Error("no service URL: pass baseUrl or set REASONINGBANK_URL");
        if (!token)
            throw new Error("no token: pass token (an API token or an OAuth access token) or set REASONINGBANK_TOKEN");
        this.baseUrl = baseUrl.replace(/\/+$/, "");
        this.token = token;
        this.timeoutMs = options.timeoutMs ?? 60_000;
        this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    }
    /** One request; an error answer throws its typed error. */
    async request(method, path, init = {}) {
        const url = new URL(this.baseUrl + path);
        for (const [key, value] of Object.entries(init.query ?? {})) {
            if (value !== undefined && value !== null)
                url.searchParams.set(key, String(value));
        }
        const token = typeof this.token === "function" ? await this.token() : this.token;
        const headers = { Authorization: `Bearer ${token}`, "User-Agent": USER_AGENT, Accept: "application/json" };
        let body = init.body;
        if (init.json !== undefined) {
            headers["Content-Type"] = "application/json";
            body = JSON.stringify(init.json);
        }
        else if (init.contentType) {
            headers["Content-Type"] = init.contentType;
        }
        let response;
        try {
            response = await this.fetchImpl(url, { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs) });
        }
        catch (error) {
            throw new ConnectionFailed(error instanceof Error ? error.message : String(error), 0, "connection_failed");
        }
        if (!response.ok)
            throw await errorFrom(response);
        return response;
    }
    async json(method, path, json) {
        return (await (await this.request(method, path, { json })).json());
    }
    search(body) {
        return this.json("POST", "/api/v1/memories/search", body);
    }
    record(body) {
        return this.json("POST", "/api/v1/memories", body);
    }
    get(memoryId) {
        return this.json("GET", `/api/v1/memories/${encodeURIComponent(memoryId)}`);
    }
    feedback(memoryId, body) {
        return this.json("POST", `/api/v1/memories/${encodeURIComponent(memoryId)}/feedback`, body);
    }
    outcome(memoryId, body) {
        return this.json("POST", `/api/v1/memories/${encodeURIComponent(memoryId)}/outcome`, body);
    }
    context(body = {}) {
        return this.json("POST", "/api/v1/memories/context", body);
    }
    ask(body) {
        return this.json("POST", "/api/v1/memories/ask", body);
    }
    sessionSubmit(body) {
        return this.json("POST", "/api/v1/sessions", body);
    }
    sessionGet(sessionId) {
        return this.json("GET", `/api/v1/sessions/${encodeURIComponent(sessionId)}`);
    }
    sessionCodeReport(body) {
        return this.json("POST", "/api/v1/sessions/code-report", body);
    }
    consolidate(body = {}) {
        return this.json("POST", "/api/v1/consolidation/runs", body);
    }
    /** Import from text: a ReasoningBank export, a CLAUDE.md (`format: "claude-md"`) or a mem0 export. */
    importBank(body) {
        return this.json("POST", "/api/v1/import", body);
    }
    /** Import an export file as it is (JSON Lines). */
    async importNdjson(content, options = {}) {
        const body = typeof content === "string" ? content : new Blob([content]);
        const response = await this.request("POST", "/api/v1/import", { query: options, body, contentType: "application/x-ndjson" });
        return (await response.json());
    }
    /** The bank as it streams, one JSON Lines record at a time (docs/export-import.md#the-format-version-2). */
    async *export(options = {}) {
        const response = await this.request("GET", "/api/v1/export", { query: options });
        if (!response.body)
            return;
        const decoder = new TextDecoder();
        let pending = "";
        for await (const chunk of response.body) {
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
