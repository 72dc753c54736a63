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
export declare function fetchTransport(fetchImpl: typeof fetch): Transport;
/** The error of a connection that did not open within the connect timeout (its `code` names it). */
export declare class ConnectTimeoutError extends Error {
    readonly code = "CONNECT_TIMEOUT";
}
export declare function nodeTransport(): Promise<Transport>;
/**
 * The sentence of a connection failure, naming the host and the reason: "cannot reach memory.example.com:443:
 * ECONNREFUSED (connect ECONNREFUSED 10.0.0.5:443)" rather than fetch's bare "fetch failed".
 */
export declare function connectionFailureDetail(error: unknown, url: URL, readTimedOutMs: number | null): string;
