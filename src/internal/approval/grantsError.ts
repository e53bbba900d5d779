/**
 * The grants' error: a bad argument or option, or the storage (`reason` absent). `ApprovalGrants`
 * re-exports it with its documentation.
 *
 * @internal
 */
import * as Schema from "effect/Schema"

/** @internal */
export const ApprovalGrantsErrorReason = Schema.Union(
  Schema.TaggedStruct("InvalidInput", { field: Schema.String }),
  Schema.TaggedStruct("InvalidOption", { option: Schema.String }),
  Schema.TaggedStruct("TableLayout", { table: Schema.String, differences: Schema.Array(Schema.String) })
).annotations({ identifier: "ApprovalGrantsErrorReason" })

/** @internal */
export class ApprovalGrantsError
  extends Schema.TaggedError<ApprovalGrantsError>("effect-tool-runtime/ApprovalGrantsError")("ApprovalGrantsError", {
    message: Schema.String,
    reason: Schema.optionalWith(ApprovalGrantsErrorReason, { exact: true })
  })
{}
