// How a request leaves: under Node.js through its own http/https modules, which let the client bound the
// connection (DNS, TCP, TLS) apart from the wait for the answer — the built-in fetch cannot be given a
// connect timeout without a dispatcher of the undici package, and would cut a long export at a total
// deadline; elsewhere, or when the caller hands in a `fetch`, through fetch. Both give back a fetch
// `Response`, so the client above reads answers one way (docs/sdks.md#retries-and-timeouts).

export interface TransportRequest {
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** aborted by the client's read timeout */
  signal: AbortSignal;
  connectTimeoutMs: number;
  /** called once the connection is open: the read timeout runs from there */
  onConnect: () => void;
}

export type Transport = (url: URL, request: TransportRequest) => Promise<Response>;

/** A caller's fetch (or the runtime's, outside Node.js): its connection is its own business, so the read
 * timeout runs from the start. */
export function fetchTransport(fetchImpl: typeof fetch): Transport {
  return (url, request) => {
    request.onConnect();
    return fetchImpl(url, { method: request.method, headers: request.headers, body: request.body as BodyInit | undefined, signal: request.signal });
  };
}

/** The error of a connection that did not open within the connect timeout (its `code` names it). */
export class ConnectTimeoutError extends Error {
  readonly code = "CONNECT_TIMEOUT";
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

export async function nodeTransport(): Promise<Transport> {
  const [http, https, { Readable }] = await Promise.all([import("node:http"), import("node:https"), import("node:stream")]);
  return (url, request) =>
    new Promise<Response>((resolve, reject) => {
      const secure = url.protocol === "https:";
      const outgoing = (secure ? https : http).request(url, { method: request.method, headers: request.headers, signal: request.signal });
      let connectTimer: ReturnType<typeof setTimeout> | undefined;
      outgoing.on("socket", (socket) => {
        const connected = (): void => {
          clearTimeout(connectTimer);
          request.onConnect();
        };
        if (!socket.connecting) {
          connected(); // a kept-alive connection, open already
          return;
        }
        connectTimer = setTimeout(() => {
          outgoing.destroy(new ConnectTimeoutError(`no connection to ${url.host} within ${request.connectTimeoutMs} ms`));
        }, request.connectTimeoutMs);
        socket.once(secure ? "secureConnect" : "connect", connected);
      });
      outgoing.on("error", (error) => {
        clearTimeout(connectTimer);
        reject(error);
      });
      outgoing.on("response", (incoming) => {
        const status = incoming.statusCode ?? 0;
        const headers = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) {
          if (Array.isArray(value)) for (const item of value) headers.append(name, item);
          else if (value !== undefined) headers.set(name, value);
        }
        const empty = NULL_BODY_STATUSES.has(status) || request.method === "HEAD";
        if (empty) incoming.resume();
        const body = empty ? null : (Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>);
        resolve(new Response(body, { status, statusText: incoming.statusMessage ?? "", headers }));
      });
      outgoing.end(request.body);
    });
}

interface SystemError {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

// the codes of a connection that never opened (Node's and undici's), as opposed to one that broke later
const NOT_OPENED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "CONNECT_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

/** The innermost error of a cause chain that has a `code` (fetch's "fetch failed" wraps the system error). */
function systemError(error: unknown): SystemError | null {
  let found: SystemError | null = null;
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== null && typeof current === "object"; depth++) {
    const candidate = current as SystemError;
    if (typeof candidate.code === "string") found = candidate;
    current = candidate.cause;
  }
  return found;
}

/**
 * The sentence of a connection failure, naming the host and the reason: "cannot reach memory.example.com:443:
 * ECONNREFUSED (connect ECONNREFUSED 10.0.0.5:443)" rather than fetch's bare "fetch failed".
 */
export function connectionFailureDetail(error: unknown, url: URL, readTimedOutMs: number | null): string {
  const host = `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
  if (readTimedOutMs !== null) return `no answer from ${host} within ${readTimedOutMs} ms (read timeout)`;
  const system = systemError(error);
  const code = typeof system?.code === "string" ? system.code : null;
  const said = typeof system?.message === "string" ? system.message : error instanceof Error ? error.message : String(error);
  if (code === null) return `the connection to ${host} failed (${said})`;
  return NOT_OPENED.has(code) ? `cannot reach ${host}: ${code} (${said})` : `the connection to ${host} failed: ${code} (${said})`;
}
