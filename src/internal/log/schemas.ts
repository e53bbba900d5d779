/**
 * The durable log's records as Schemas: `tool/call`, `tool/result`, Code Mode's dispatch records
 * and the approval audit records, their union, the log's error, and the `tool/result` record of
 * a result. `ToolCallLog` re-exports each with its documentation.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { ContentBlockSchema } from "../../Content.js"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import type * as ToolCallLog from "../../ToolCallLog.js"
import type { ToolResult } from "../../ToolResult.js"
import { keepingUndeclaredKeys } from "./records.js"

/** @internal */
export const JsonValueSchema: Schema.Schema<JsonValue> = Schema.declare(
  (input: unknown): input is JsonValue => Json.isLossless(input),
  { identifier: "JsonValue", message: () => "Expected a lossless JSON value" }
)

const Content = keepingUndeclaredKeys(Schema.Array(ContentBlockSchema), "Content")

const ErrorInfo = keepingUndeclaredKeys(Schema.Struct({ name: Schema.String, code: Schema.String }), "ErrorInfo")

/** @internal */
export const ToolCallRecord = Schema.TaggedStruct("tool/call", {
  batchId: Schema.String,
  index: Schema.NonNegativeInt,
  callId: Schema.String,
  name: Schema.String,
  agent: Schema.optionalWith(Schema.String, { exact: true }),
  arguments: Schema.String
}).annotations({ identifier: "ToolCallRecord" })

/** @internal */
export const ToolResultRecord = Schema.TaggedStruct("tool/result", {
  batchId: Schema.String,
  index: Schema.NonNegativeInt,
  callId: Schema.String,
  content: Content,
  isError: Schema.Boolean,
  error: Schema.optionalWith(ErrorInfo, { exact: true }),
  meta: Schema.optionalWith(JsonValueSchema, { exact: true })
}).annotations({ identifier: "ToolResultRecord" })

/** @internal */
export const CodeDispatchStartRecord = Schema.TaggedStruct("tool/code-dispatch-start", {
  rootCallId: Schema.String,
  parentCallId: Schema.String,
  subCallId: Schema.String,
  name: Schema.String,
  arguments: JsonValueSchema
}).annotations({ identifier: "CodeDispatchStartRecord" })

/** @internal */
export const CodeDispatchRecord = Schema.TaggedStruct("tool/code-dispatch", {
  rootCallId: Schema.String,
  parentCallId: Schema.String,
  subCallId: Schema.String,
  name: Schema.String,
  arguments: JsonValueSchema,
  isError: Schema.Boolean,
  content: Content
}).annotations({ identifier: "CodeDispatchRecord" })

/** @internal */
export const ApprovalDecider = Schema.Union(
  Schema.Literal("answerer", "policy", "abort", "error", "expiry"),
  Schema.TemplateLiteral(Schema.Literal("grant:"), Schema.String).pipe(Schema.minLength(7))
).annotations({ identifier: "ApprovalDecider" })

const Outcome = Schema.Literal("allowed-once", "rejected", "cancelled", "unavailable")

/** @internal */
export const ApprovalAskedRecord = Schema.TaggedStruct("approval/asked", {
  id: Schema.String,
  toolName: Schema.String,
  callId: Schema.String,
  agent: Schema.String,
  reason: Schema.optionalWith(Schema.String, { exact: true }),
  argumentsDigest: Schema.String
}).annotations({ identifier: "ApprovalAskedRecord" })

/** @internal */
export const ApprovalDecidedRecord = Schema.TaggedStruct("approval/decided", {
  id: Schema.String,
  outcome: Outcome,
  by: ApprovalDecider,
  remembered: Schema.optionalWith(Schema.String, { exact: true })
}).annotations({ identifier: "ApprovalDecidedRecord" })

/** @internal */
export const ApprovalLateRecord = Schema.TaggedStruct("approval/late", {
  id: Schema.String,
  outcome: Outcome,
  by: Schema.Literal("answerer", "error")
}).annotations({ identifier: "ApprovalLateRecord" })

/** @internal */
export const isApprovalRecord = (record: ToolCallLog.LogRecord): record is ToolCallLog.ApprovalRecord =>
  record._tag === "approval/asked" || record._tag === "approval/decided" || record._tag === "approval/late"

/** @internal */
export const LogRecord: Schema.Schema<ToolCallLog.LogRecord> = Schema.Union(
  ToolCallRecord,
  ToolResultRecord,
  CodeDispatchStartRecord,
  CodeDispatchRecord,
  ApprovalAskedRecord,
  ApprovalDecidedRecord,
  ApprovalLateRecord
)

/** @internal */
export const ToolCallLogErrorReason = Schema.Union(
  Schema.TaggedStruct("InvalidOption", { option: Schema.String }),
  Schema.TaggedStruct("TableLayout", { table: Schema.String, differences: Schema.Array(Schema.String) })
).annotations({ identifier: "ToolCallLogErrorReason" })

/** @internal */
export class ToolCallLogError extends Schema.TaggedError<ToolCallLogError>("effect-tool-runtime/ToolCallLogError")(
  "ToolCallLogError",
  {
    message: Schema.String,
    reason: Schema.optionalWith(ToolCallLogErrorReason, { exact: true })
  }
) {}

/** @internal */
export const CorruptRecord = Schema.Struct({
  sequence: Schema.Number,
  reason: Schema.String
}).annotations({ identifier: "CorruptRecord" })

/** @internal */
export const resultRecord = (
  batchId: string,
  index: number,
  callId: string,
  result: ToolResult
): ToolCallLog.ToolResultRecord => {
  const info = result.isError ? result.error.info : undefined
  const meta = result.meta
  const base = {
    _tag: "tool/result" as const,
    batchId,
    index,
    callId,
    content: result.content,
    isError: result.isError
  }
  if (info === undefined) return meta === undefined ? base : { ...base, meta }
  const error = { name: info.name, code: info.code }
  return meta === undefined ? { ...base, error } : { ...base, error, meta }
}
