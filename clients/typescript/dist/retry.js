// When a call is tried again, and after how long (docs/sdks.md#retries-and-timeouts): the same policy as
// the Python client's reasoningbank_client/retrying.py, with the same defaults. No I/O here.
export const DEFAULT_MAX_RETRIES = 2;
/** Milliseconds before the first retry (before jitter); doubled for each further one. */
export const DEFAULT_BACKOFF_BASE_MS = 500;
/** No wait is longer: a Retry-After beyond it is not waited out but thrown. */
export const DEFAULT_BACKOFF_CAP_MS = 30_000;
/** Milliseconds without a byte from the service (read). */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** Milliseconds to open the connection (DNS, TCP, TLS). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
// "Not now, later": the service throttles (429) or a part it needs is out of reach (503 database_unavailable,
// with Retry-After). Nothing was done, so waiting and asking again is the fix.
const RETRY_STATUSES = new Set([429, 503]);
// 503s that waiting does not fix: no LLM is configured, or the service has already retried its provider
const NOT_RETRIED_CODES = new Set(["llm_not_configured", "llm_unavailable"]);
/**
 * Milliseconds to wait before retry number `retry` (1 for the first), or null: do not retry (past
 * `maxRetries`, or the service asked for a longer wait than `backoffCapMs`). Exponential backoff with
 * "equal jitter" (half fixed, half random), never sooner than a Retry-After the service sent.
 */
export function retryWaitMs(policy, retry, retryAfterSeconds, random = Math.random) {
    if (retry > policy.maxRetries)
        return null;
    const backoff = Math.min(policy.backoffCapMs, policy.backoffBaseMs * 2 ** (retry - 1));
    const jittered = backoff / 2 + (random() * backoff) / 2;
    if (retryAfterSeconds === null)
        return jittered;
    const askedMs = retryAfterSeconds * 1000;
    if (askedMs > policy.backoffCapMs)
        return null;
    return Math.max(askedMs, jittered);
}
/** Retry-After in seconds: a number of seconds (what the service sends) or an HTTP date (a proxy's). */
export function retryAfterParse(value, now = Date.now()) {
    if (value === null || !value.trim())
        return null;
    const text = value.trim();
    let seconds = /^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(text) ? Number(text) : (Date.parse(text) - now) / 1000;
    if (!Number.isFinite(seconds))
        return null;
    seconds = Math.max(0, seconds);
    return seconds;
}
/** Whether an error answer is one that waiting may fix (the call decides whether it may be repeated). */
export function statusRetryable(status, code) {
    return RETRY_STATUSES.has(status) && !NOT_RETRIED_CODES.has(code);
}
export function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}
