import { retryAfterParse } from "./retry.js";
export const REQUEST_ID_HEADER = "X-Request-ID";
export class ReasoningBankError extends Error {
    status;
    code;
    detail;
    errors;
    retryAfter;
    requestId;
    attempts;
    constructor(detail, status, code, errors = {}, retryAfter = null, init = {}) {
        const said = status ? `${status} ${code}: ${detail}` : `${code}: ${detail}`;
        const about = [init.requestId ? `request id ${init.requestId}` : "", (init.attempts ?? 1) > 1 ? `after ${init.attempts} attempts` : ""].filter(Boolean);
        super(about.length ? `${said} (${about.join(", ")})` : said, init.cause === undefined ? undefined : { cause: init.cause });
        this.name = new.target.name;
        this.status = status;
        this.code = code;
        this.detail = detail;
        this.errors = errors;
        this.retryAfter = retryAfter;
        this.requestId = init.requestId ?? null;
        this.attempts = init.attempts ?? 1;
    }
}
/** 400 or 422: a field is missing, unknown or invalid (`errors` names it), or the write gate refused a memory. */
export class ValidationError extends ReasoningBankError {
}
/** 401: no token, or one that is unknown, expired or revoked. */
export class AuthenticationError extends ReasoningBankError {
}
/** 403: missing scope, plan (`plan_required`) or a used-up limit (`limit_exceeded`). */
export class PermissionDenied extends ReasoningBankError {
}
/** 404: nothing in reach of the token (another organization's object is a 404 too). */
export class NotFound extends ReasoningBankError {
}
/** 409: the object's state forbids the request; `detail` says what to do. */
export class Conflict extends ReasoningBankError {
}
/** 413: the body is larger than the service accepts. */
export class PayloadTooLarge extends ReasoningBankError {
}
/** 415: a content type the operation does not take. */
export class UnsupportedMediaType extends ReasoningBankError {
}
/** 429: too many requests or failed tokens; wait `retryAfter` seconds. */
export class RateLimited extends ReasoningBankError {
}
/** 5xx: the service failed or a part it needs is down. */
export class ServerError extends ReasoningBankError {
}
/** 503: the database or the LLM is unavailable or not configured. */
export class ServiceUnavailable extends ServerError {
}
/** The service did not answer (refused, timed out); `status` is 0. The message names the host and the
 * reason (`ECONNREFUSED`, a timeout); `cause` is the transport's own error. */
export class ConnectionFailed extends ReasoningBankError {
}
const BY_STATUS = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: ValidationError,
    429: RateLimited,
    503: ServiceUnavailable,
};
export function errorClassFor(status) {
    return BY_STATUS[status] ?? (status >= 500 ? ServerError : ReasoningBankError);
}
/**
 * The typed error for an error answer; a body not in the API's shape keeps its text as `detail`. `text` is
 * the body when the caller has read it already; the request id is the answer's, else `init.requestId` (the
 * one sent: a proxy's answer may not echo it).
 */
export async function errorFrom(response, text, init = {}) {
    const body = text ?? (await response.text());
    let parsed = null;
    try {
        parsed = JSON.parse(body);
    }
    catch {
        parsed = null;
    }
    const retryAfter = retryAfterParse(response.headers.get("Retry-After"));
    const Class = errorClassFor(response.status);
    const context = { ...init, requestId: response.headers.get(REQUEST_ID_HEADER) ?? init.requestId ?? null };
    if (parsed !== null && typeof parsed === "object" && typeof parsed.detail === "string") {
        const { detail, code, errors } = parsed;
        return new Class(detail, response.status, code || `http_${response.status}`, errors ?? {}, retryAfter, context);
    }
    return new Class(body.slice(0, 500) || response.statusText, response.status, `http_${response.status}`, {}, retryAfter, context);
}
