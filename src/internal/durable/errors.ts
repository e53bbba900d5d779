/**
 * The public error of durable turns (re-exported by `DurableTurn`), and the constructors the
 * service fails with.
 *
 * @internal
 */
import * as Schema from "effect/Schema"

/** @internal */
export class DurableTurnError extends Schema.TaggedError<DurableTurnError>("effect-tool-runtime/DurableTurnError")(
  "DurableTurnError",
  {
    message: Schema.String,
    reason: Schema.Literal("InvalidOption", "NotFound", "Mismatch", "Storage", "Answered", "InvalidAnswer")
  }
) {}

/** @internal */
export type Reason = DurableTurnError["reason"]

/** @internal */
export const turnError = (reason: Reason, message: string): DurableTurnError => new DurableTurnError({ reason, message })
