export declare const DEFAULT_MAX_RETRIES = 2;
/** Milliseconds before the first retry (before jitter); doubled for each further one. */
export declare const DEFAULT_BACKOFF_BASE_MS = 500;
/** No wait is longer: a Retry-After beyond it is not waited out but thrown. */
export declare const DEFAULT_BACKOFF_CAP_MS = 30000;
/** Milliseconds without a byte from the service (read). */
export declare const DEFAULT_TIMEOUT_MS = 60000;
/** Milliseconds to open the connection (DNS, TCP, TLS). */
export declare const DEFAULT_CONNECT_TIMEOUT_MS = 10000;
export interface RetryPolicy {
    maxRetries: number;
    backoffBaseMs: number;
    backoffCapMs: number;
}
/**
 * Milliseconds to wait before retry number `retry` (1 for the first), or null: do not retry (past
 * `maxRetries`, or the service asked for a longer wait than `backoffCapMs`). Exponential backoff with
 * "equal jitter" (half fixed, half random), never sooner than a Retry-After the service sent.
 */
export declare function retryWaitMs(policy: RetryPolicy, retry: number, retryAfterSeconds: number | null, random?: () => number): number | null;
/** Retry-After in seconds: a number of seconds (what the service sends) or an HTTP date (a proxy's). */
export declare function retryAfterParse(value: string | null, now?: number): number | null;
/** Whether an error answer is one that waiting may fix (the call decides whether it may be repeated). */
export declare function statusRetryable(status: number, code: string): boolean;
export declare function sleep(ms: number): Promise<void>;
