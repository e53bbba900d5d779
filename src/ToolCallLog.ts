/**
 * The durable tool-call log (SCHED-7, PTC-13, DECISIONS D-16/D-18): `tool/call` and
 * `tool/result` records (and Code Mode's dispatch records), appended in model order, and the
 * approval service's audit records (`approval/asked`, `approval/decided`, `approval/late`).
 * Records are described by Schemas, so every backend stores and reads them the same way.
 * Canonical values and argument values are never persisted.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type { JsonValue } from "./Json.js"
import * as codec from "./internal/log/codec.js"
import * as schemas from "./internal/log/schemas.js"
import { ToolCallLogError } from "./internal/log/schemas.js"
import * as internal from "./internal/log/service.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * Schema of a lossless JSON value (JSON-1/2). The check is iterative, so nesting depth is bounded
 * only by memory.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonValueSchema: Schema.Schema<JsonValue> = schemas.JsonValueSchema

/**
 * `tool/call` (SCHED-7): the model's raw argument text, appended immediately before the call's
 * pre-execute. `index` is the call's position in the model message (`batchId`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCallRecord = schemas.ToolCallRecord

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolCallRecord extends Schema.Schema.Type<typeof ToolCallRecord> {}

/**
 * `tool/result` (SCHED-7, PRES-3): what the model and UIs see of one result — content,
 * `isError`, the error's `info` (only when present) and the presentation `meta` (only when
 * present). Never the canonical value: build it with {@link resultRecord}. Content blocks and
 * `error` keep their undeclared keys as own data properties (`__proto__` included, JSON-5).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolResultRecord = schemas.ToolResultRecord

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolResultRecord extends Schema.Schema.Type<typeof ToolResultRecord> {}

/**
 * `tool/code-dispatch-start` (PTC-13): a Code Mode sub-call started (before its pre-execute).
 * `arguments` is the logged snapshot of the program's binding arguments.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CodeDispatchStartRecord = schemas.CodeDispatchStartRecord

/**
 * @since 0.1.0
 * @category models
 */
export interface CodeDispatchStartRecord extends Schema.Schema.Type<typeof CodeDispatchStartRecord> {}

/**
 * `tool/code-dispatch` (PTC-13): a Code Mode sub-call settled; carries only `isError` and the
 * (possibly shaped) content, never a value or meta.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CodeDispatchRecord = schemas.CodeDispatchRecord

/**
 * @since 0.1.0
 * @category models
 */
export interface CodeDispatchRecord extends Schema.Schema.Type<typeof CodeDispatchRecord> {}

/**
 * Who decided an approval: an `answerer`, the `policy` (the `never` policy, or no answerer
 * answered), a remembered grant (`grant:<id>`), the call's `abort`, an answerer's `error`
 * (it failed, died or answered something outside the vocabulary), or `expiry` (a durable
 * approval nobody answered in time, D-22).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApprovalDecider = schemas.ApprovalDecider

/**
 * @since 0.1.0
 * @category models
 */
export type ApprovalDecider = Schema.Schema.Type<typeof ApprovalDecider>

/**
 * `approval/asked`: the approval service received a request. `id` pairs it with its one
 * `approval/decided`. Only the digest of the arguments is kept (D-18), never their values.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApprovalAskedRecord = schemas.ApprovalAskedRecord

/**
 * @since 0.1.0
 * @category models
 */
export interface ApprovalAskedRecord extends Schema.Schema.Type<typeof ApprovalAskedRecord> {}

/**
 * `approval/decided`: the one decision of the request `id` and who made it. `remembered` is the
 * id of the grant an "always allow" answer stored.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApprovalDecidedRecord = schemas.ApprovalDecidedRecord

/**
 * @since 0.1.0
 * @category models
 */
export interface ApprovalDecidedRecord extends Schema.Schema.Type<typeof ApprovalDecidedRecord> {}

/**
 * `approval/late`: an answer (or an answerer's failure, `by: "error"`) that arrived after the
 * request `id` was already decided `cancelled` by its call's abort. It was discarded: it decided
 * nothing and stored no grant.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApprovalLateRecord = schemas.ApprovalLateRecord

/**
 * @since 0.1.0
 * @category models
 */
export interface ApprovalLateRecord extends Schema.Schema.Type<typeof ApprovalLateRecord> {}

/**
 * The approval audit records.
 *
 * @since 0.1.0
 * @category models
 */
export type ApprovalRecord = ApprovalAskedRecord | ApprovalDecidedRecord | ApprovalLateRecord

/**
 * The `_tag`s of the approval audit records.
 *
 * @since 0.1.0
 * @category models
 */
export const approvalTags: ReadonlyArray<ApprovalRecord["_tag"]> = ["approval/asked", "approval/decided", "approval/late"]

/**
 * @since 0.1.0
 * @category guards
 */
export const isApprovalRecord: (record: LogRecord) => record is ApprovalRecord = schemas.isApprovalRecord

/**
 * Any durable record, discriminated by `_tag`. Decoding drops undeclared top-level keys (so a
 * stray `value` is never stored) and keeps undeclared keys of content blocks and `error` as own
 * data properties (a key named `__proto__` included, JSON-5).
 *
 * @since 0.1.0
 * @category schemas
 */
export const LogRecord: Schema.Schema<LogRecord> = schemas.LogRecord

/**
 * @since 0.1.0
 * @category models
 */
export type LogRecord =
  | ToolCallRecord
  | ToolResultRecord
  | CodeDispatchStartRecord
  | CodeDispatchRecord
  | ApprovalRecord

/**
 * Why a log backend refused to open, when it is a configuration problem rather than a storage
 * failure: an option it cannot use (`InvalidOption`, e.g. an empty SQLite `filename`), or an
 * existing table whose layout differs from the log's (`TableLayout`, one entry per difference).
 *
 * @since 0.1.0
 * @category errors
 */
export const ToolCallLogErrorReason = schemas.ToolCallLogErrorReason

/**
 * @since 0.1.0
 * @category errors
 */
export type ToolCallLogErrorReason = Schema.Schema.Type<typeof ToolCallLogErrorReason>

export {
  /**
   * The log itself failed (storage error, a record that does not match its schema, or a backend
   * that cannot open). The scheduler drains and reports it (D-16). `reason` is present only for
   * configuration problems found when a backend opens (see {@link ToolCallLogErrorReason}).
   *
   * @since 0.1.0
   * @category errors
   */
  ToolCallLogError
}

/**
 * A stored entry that could not be read back as a record (D-18): its sequence number in the
 * backend (SQLite's `seq`) and why, e.g. `stored tool call log record is not JSON: <msg>`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CorruptRecord = schemas.CorruptRecord

/**
 * @since 0.1.0
 * @category models
 */
export interface CorruptRecord extends Schema.Schema.Type<typeof CorruptRecord> {}

/**
 * Everything a log holds: every readable record in append order, and one {@link CorruptRecord}
 * per stored entry that could not be read (in sequence order). A log that cannot hold corrupt
 * entries (the memory log) always reports `corrupt: []`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LogContents {
  readonly records: ReadonlyArray<LogRecord>
  readonly corrupt: ReadonlyArray<CorruptRecord>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Appends one record durably; the effect succeeds once the record is stored. */
  readonly append: (record: LogRecord) => Effect.Effect<void, ToolCallLogError>
  /**
   * Every readable record in append order. A stored entry that cannot be read is skipped and
   * logged as a warning; {@link contents} reports it. Fails only when the log cannot be read at
   * all.
   */
  readonly records: Effect.Effect<ReadonlyArray<LogRecord>, ToolCallLogError>
  /**
   * The readable records and a report of the unreadable ones. Backends built with {@link make}
   * always have it; use {@link readContents} to read any service (it falls back to `records`).
   */
  readonly contents?: Effect.Effect<LogContents, ToolCallLogError> | undefined
  /**
   * Only the approval audit records, in append order (corrupt entries among them skipped and
   * logged, as `records` does). Backends that can read them without reading the rest (the SQL
   * log, through its index on `tag`) have it; {@link approvals} falls back to `records`.
   */
  readonly approvalRecords?: Effect.Effect<ReadonlyArray<ApprovalRecord>, ToolCallLogError> | undefined
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ToolCallLog extends Context.Tag("effect-tool-runtime/ToolCallLog")<ToolCallLog, Service>() {}

/**
 * A log service from its `append` and `contents`: `records` is `contents`' records, and each
 * corrupt entry is logged as a warning (`tool call log skipped a corrupt record (seq <n>): <reason>`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (implementation: {
  readonly append: (record: LogRecord) => Effect.Effect<void, ToolCallLogError>
  readonly contents: Effect.Effect<LogContents, ToolCallLogError>
  /** The approval audit records only (and the corrupt entries among them), when cheaper than `contents`. */
  readonly approvalContents?: Effect.Effect<LogContents, ToolCallLogError> | undefined
}) => Service = internal.make

/**
 * The {@link LogContents} of any log service: its `contents`, or its `records` with no corrupt
 * entries when it has none.
 *
 * @since 0.1.0
 * @category combinators
 */
export const readContents: (service: Service) => Effect.Effect<LogContents, ToolCallLogError> = internal.readContents

/**
 * The {@link LogContents} of the log in context (see {@link readContents}).
 *
 * @since 0.1.0
 * @category combinators
 */
export const contents: Effect.Effect<LogContents, ToolCallLogError, ToolCallLog> = Effect.flatMap(
  ToolCallLog,
  readContents
)

/**
 * One approval as the audit log tells it: its `approval/asked` record, its one
 * `approval/decided` record (absent while it is undecided, or when an append failed), and any
 * discarded `approval/late` answers. `asked` is absent only when its append failed.
 *
 * @since 0.1.0
 * @category models
 */
export interface ApprovalAudit {
  readonly id: string
  readonly asked?: ApprovalAskedRecord
  readonly decided?: ApprovalDecidedRecord
  readonly late: ReadonlyArray<ApprovalLateRecord>
}

/**
 * Groups the approval records among `records` by approval id, in the order each id first
 * appears; every other record is ignored (the audit query). Ids are unique per approval service;
 * should one repeat, the first record of each kind is kept.
 *
 * @since 0.1.0
 * @category combinators
 */
export const approvalAudit: (records: ReadonlyArray<LogRecord>) => Array<ApprovalAudit> = internal.approvalAudit

/**
 * The approval audit of the log in context ({@link approvalAudit} over its approval records;
 * the SQL log reads only those rows).
 *
 * @since 0.1.0
 * @category combinators
 */
export const approvals: Effect.Effect<ReadonlyArray<ApprovalAudit>, ToolCallLogError, ToolCallLog> = Effect.flatMap(
  ToolCallLog,
  (service) =>
    Effect.map(
      service.approvalRecords ?? Effect.map(service.records, (records) => records.filter(isApprovalRecord)),
      approvalAudit
    )
)

/**
 * Builds the `tool/result` record of `result` (SCHED-7): `content` and `isError`, `error` =
 * `result.error.info` only when present, `meta` only when present. The canonical `value`, the
 * error message and the contexts are never copied.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resultRecord: (batchId: string, index: number, callId: string, result: ToolResult) => ToolResultRecord =
  schemas.resultRecord

/**
 * Checks a record against {@link LogRecord} and returns a detached, deep-frozen copy without
 * undeclared top-level keys. Fails with `tool call log record must be lossless JSON`,
 * `tool call log record could not be read: <msg>` (a throwing getter) or
 * `invalid tool call log record: <path>: <issue>`. Every backend stores exactly this copy.
 *
 * @since 0.1.0
 * @category constructors
 */
export const validate: (record: unknown) => Effect.Effect<LogRecord, ToolCallLogError> = codec.validate

/**
 * {@link validate} followed by JSON text (the storage form of SQL backends). Deeply nested
 * values are written iteratively.
 *
 * @since 0.1.0
 * @category constructors
 */
export const encodeJson: (record: unknown) => Effect.Effect<string, ToolCallLogError> = codec.encodeJson

/**
 * Parses JSON text written by {@link encodeJson} back into a deep-frozen record. Fails with
 * `stored tool call log record is not JSON: <msg>` or
 * `invalid stored tool call log record: <path>: <issue>`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const decodeJson: (text: string) => Effect.Effect<LogRecord, ToolCallLogError> = codec.decodeJson
