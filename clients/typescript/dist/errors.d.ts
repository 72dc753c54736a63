import type { components } from "./schema.js";
export type ErrorBody = components["schemas"]["Error"];
export declare const REQUEST_ID_HEADER = "X-Request-ID";
export interface ErrorInit {
    /** The service's id of the request; for a request that got no answer, the id the client sent. */
    requestId?: string | null;
    /** How many times the call was sent (retries included). */
    attempts?: number;
    /** What went wrong underneath: for `ConnectionFailed`, the transport's own error. */
    cause?: unknown;
}
export declare class ReasoningBankError extends Error {
    readonly status: number;
    readonly code: string;
    readonly detail: string;
    readonly errors: Record<string, string[]>;
    readonly retryAfter: number | null;
    readonly requestId: string | null;
    readonly attempts: number;
    constructor(detail: string, status: number, code: string, errors?: Record<string, string[]>, retryAfter?: number | null, init?: ErrorInit);
}
/** 400 or 422: a field is missing, unknown or invalid (`errors` names it), or the write gate refused a memory. */
export declare class ValidationError extends ReasoningBankError {
}
/** 401: no token, or one that is unknown, expired or revoked. */
export declare class AuthenticationError extends ReasoningBankError {
}
/** 403: missing scope, plan (`plan_required`) or a used-up limit (`limit_exceeded`). */
export declare class PermissionDenied extends ReasoningBankError {
}
/** 404: nothing in reach of the token (another organization's object is a 404 too). */
export declare class NotFound extends ReasoningBankError {
}
/** 409: the object's state forbids the request; `detail` says what to do. */
export declare class Conflict extends ReasoningBankError {
}
/** 413: the body is larger than the service accepts. */
export declare class PayloadTooLarge extends ReasoningBankError {
}
/** 415: a content type the operation does not take. */
export declare class UnsupportedMediaType extends ReasoningBankError {
}
/** 429: too many requests or failed tokens; wait `retryAfter` seconds. */
export declare class RateLimited extends ReasoningBankError {
}
/** 5xx: the service failed or a part it needs is down. */
export declare class ServerError extends ReasoningBankError {
}
/** 503: the database or the LLM is unavailable or not configured. */
export declare class ServiceUnavailable extends ServerError {
}
/** The service did not answer (refused, timed out); `status` is 0. The message names the host and the
 * reason (`ECONNREFUSED`, a timeout); `cause` is the transport's own error. */
export declare class ConnectionFailed extends ReasoningBankError {
}
export declare function errorClassFor(status: number): typeof ReasoningBankError;
/**
 * The typed error for an error answer; a body not in the API's shape keeps its text as `detail`. `text` is
 * the body when the caller has read it already; the request id is the answer's, else `init.requestId` (the
 * one sent: a proxy's answer may not echo it).
 */
export declare function errorFrom(response: Response, text?: string, init?: ErrorInit): Promise<ReasoningBankError>;
