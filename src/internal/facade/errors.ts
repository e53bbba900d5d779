/**
 * The facade's refusals: the message of a disposed runtime and of a late `next()`, and the error
 * a disposed runtime rejects with. `PromiseApi` re-exports them with their documentation.
 *
 * @internal
 */
import * as Schema from "effect/Schema"

/** @internal */
export const DISPOSED_MESSAGE = "the Promise runtime was disposed"

/** @internal */
export const LATE_NEXT_MESSAGE = "next() was called after the callback it was given to had settled"

/** @internal */
export class RuntimeDisposedError extends Schema.TaggedError<RuntimeDisposedError>(
  "effect-tool-runtime/RuntimeDisposedError"
)("RuntimeDisposedError", {}) {
  override get message(): string {
    return DISPOSED_MESSAGE
  }
}
