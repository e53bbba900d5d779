/**
 * Why an answer given to the interactive channel was refused, and the error that says so: the id
 * was never issued, already answered, cancelled by its call, or the channel closed.
 * `ApprovalLayers` re-exports the error and its reasons with their documentation.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import type { ApprovalAnswerErrorReason as Reason } from "../../ApprovalLayers.js"

/** @internal */
export const ApprovalAnswerErrorReason = Schema.Literal("unknown", "answered", "cancelled", "closed")

/** @internal */
export class ApprovalAnswerError extends Schema.TaggedError<ApprovalAnswerError>(
  "effect-tool-runtime/layers/ApprovalAnswerError"
)("ApprovalAnswerError", { id: Schema.String, reason: ApprovalAnswerErrorReason, message: Schema.String }) {}

const quoteId = (id: unknown): string => {
  if (typeof id !== "string") return "with a non-string id"
  return JSON.stringify(id.length <= 60 ? id : `${id.slice(0, 60)}…`)
}

/**
 * The error refusing an answer to `id`, with a message naming it (quoted, at most 60 characters).
 *
 * @internal
 */
export const answerError = (id: unknown, reason: Reason): ApprovalAnswerError => {
  const q = quoteId(id)
  const message = reason === "unknown"
    ? `approval request ${q} is unknown: no request with this id was ever pending`
    : reason === "answered"
    ? `approval request ${q} was already answered`
    : reason === "cancelled"
    ? `approval request ${q} was cancelled: its call stopped waiting before an answer`
    : `approval request ${q} is no longer pending: the approval channel closed`
  return new ApprovalAnswerError({ id: typeof id === "string" ? id : "", reason, message })
}
