export type ExportKind = "working" | "episodic" | "semantic" | "procedural";
export type ExportOutcome = "success" | "failure" | "mixed";
export type ExportState = "active" | "archived" | "proposed" | "quarantined";
export type ExportArchivedReason = "consolidated" | "superseded" | "duplicate" | "stale" | "manual" | "low_confidence" | "code_deleted";
export type ExportTier = "hot" | "warm" | "cold" | "archived";
export type ExportOrigin = "recorded" | "distilled" | "consolidated" | "extracted";
export type ExportLinkKind = "consolidates" | "supersedes" | "contradicts" | "duplicates" | "references";
export type ExportSignalType = "explicit" | "usage" | "outcome" | "stability";
export type ExportSummaryStatus = "ready" | "rejected" | "held";
export type ExportSessionVia = "search" | "context" | "recall" | "get";
export type ExportScope = "project" | "team" | "org";
export type ExportCountedType = "weights" | "memory" | "link" | "signal" | "summary" | "session_use";
/** What the instruction-smell detector found in a text (docs/security/memory-poisoning.md). */
export interface ExportFinding {
    rule: string;
    reason: string;
    field: string;
    start: number;
    end: number;
    excerpt: string;
    fingerprint: string;
}
/** ISO 8601 with its UTC offset, e.g. "2026-01-31T09:30:00+00:00". */
export type ExportTime = string;
export interface ExportHeader {
    type: "header";
    format: "reasoningbank-export";
    version: number;
    exported_at: ExportTime | null;
    organization: string | null;
    /** a project's export: its slug; an organization's: null */
    project: string | null;
    embedder: string;
    /** whether memory lines carry `embedding` */
    embeddings: boolean;
    teams: {
        slug: string;
        name: string;
    }[];
    projects: {
        slug: string;
        name: string;
        team: string | null;
    }[];
}
/** A project's (or, with `project` null, the organization's) learned Beta weights per signal type. */
export interface ExportWeights {
    type: "weights";
    project: string | null;
    explicit_alpha: number;
    explicit_beta: number;
    usage_alpha: number;
    usage_beta: number;
    outcome_alpha: number;
    outcome_beta: number;
    stability_alpha: number;
    stability_beta: number;
    updated_at: ExportTime;
}
/** The rolled-up signal counts of a memory, and after time decay the evidence each still carries. */
export interface ExportSignalAggregate {
    explicit_pos: number;
    explicit_neg: number;
    usage_pos: number;
    usage_neg: number;
    outcome_pos: number;
    outcome_neg: number;
    stability_pos: number;
    stability_neg: number;
    last_rollup: ExportTime;
    explicit_pos_kept: number | null;
    explicit_neg_kept: number | null;
    usage_pos_kept: number | null;
    usage_neg_kept: number | null;
    outcome_pos_kept: number | null;
    outcome_neg_kept: number | null;
    stability_pos_kept: number | null;
    stability_neg_kept: number | null;
    decayed_at: ExportTime | null;
}
export interface ExportMemory {
    type: "memory";
    id: string;
    scope: ExportScope;
    project: string | null;
    team: string | null;
    title: string;
    description: string;
    content: string;
    outcome: ExportOutcome;
    tags: string[];
    kind: ExportKind;
    state: ExportState;
    archived_reason: ExportArchivedReason | "";
    archived_at: ExportTime | null;
    /** a memory id of the same file */
    consolidated_into: string | null;
    tier: ExportTier;
    retention: number;
    importance: number;
    expires_at: ExportTime | null;
    prior_alpha: number;
    prior_beta: number;
    alpha: number;
    beta: number;
    confidence: number;
    usage_count: number;
    last_used_at: ExportTime | null;
    last_signal_at: ExportTime | null;
    origin: ExportOrigin;
    promoted_from: ExportKind | "";
    promoted_at: ExportTime | null;
    promotion_reason: string;
    /** what the detector found when it was written (informative: an import screens the text itself) */
    flags: ExportFinding[];
    /** an e-mail */
    created_by_user: string | null;
    /** who wrote it, how, through which client ({} for a memory older than provenance); a claim on import */
    provenance: Record<string, unknown>;
    trust: "trusted" | "pending" | null;
    /** an e-mail */
    reviewed_by: string | null;
    reviewed_at: ExportTime | null;
    created_at: ExportTime;
    updated_at: ExportTime | null;
    signal_aggregate: ExportSignalAggregate | null;
    embedding_model: string;
    /** only in an export made with `embeddings: true` */
    embedding?: number[] | null;
}
export interface ExportLink {
    type: "link";
    source: string;
    target: string;
    kind: ExportLinkKind;
    weight: number;
    reason: string;
    resolved_at: ExportTime | null;
    created_at: ExportTime;
}
/** One event of the signal log (the last 30 days; older ones are in `signal_aggregate`). */
export interface ExportSignal {
    type: "signal";
    memory: string;
    project: string | null;
    signal: ExportSignalType;
    positive: boolean;
    session_id: string;
    comment: string;
    actor: string;
    confidence_after: number | null;
    created_at: ExportTime;
}
export interface ExportDecision {
    decision: string;
    rationale: string | null;
    outcome: string | null;
    confidence: "high" | "medium" | "low";
}
export interface ExportSupersededFact {
    original_fact: string;
    superseded_by: string;
    source_memory_id: string;
}
/** A consolidated summary. */
export interface ExportSummary {
    type: "summary";
    id: string;
    memory: string;
    source_memory_ids: string[];
    status: ExportSummaryStatus;
    summary: string;
    key_facts: string[];
    decisions: ExportDecision[];
    superseded_facts: ExportSupersededFact[];
    confidence: number;
    temporal_start: ExportTime;
    temporal_end: ExportTime;
    error: string;
    raw_reply: string;
    activation_count: number;
    last_activated_at: ExportTime | null;
    /** a held summary's findings */
    flags: ExportFinding[];
    created_at: ExportTime;
}
/** The session ledger: which memory an agent session was given. */
export interface ExportSessionUse {
    type: "session_use";
    memory: string;
    session_key: string;
    via: ExportSessionVia;
    created_at: ExportTime;
    outcome: "" | "success" | "failure";
    outcome_at: ExportTime | null;
    stability: "" | "kept" | "reverted";
    stability_at: ExportTime | null;
}
/** The last line: a file without it was cut short. */
export interface ExportEnd {
    type: "end";
    counts: Record<ExportCountedType, number>;
    /** references a project's export left out, by what they were (only the ones that happened) */
    dropped: Partial<Record<string, number>>;
}
/** One line of an export; narrow it on `type`. */
export type ExportRecord = ExportHeader | ExportWeights | ExportMemory | ExportLink | ExportSignal | ExportSummary | ExportSessionUse | ExportEnd;
