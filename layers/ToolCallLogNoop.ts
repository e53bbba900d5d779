/**
 * The no-op {@link ToolCallLog}: every append succeeds and nothing is kept, so `records` is
 * always empty. For applications that do not need a log (nothing to replay, nothing to audit)
 * and long-running processes that must not grow: `Presets.layer` uses it unless a `log` is
 * given.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { LogContents, Service } from "../src/ToolCallLog.js"
import * as ToolCallLog from "../src/ToolCallLog.js"

const EMPTY: LogContents = Object.freeze({ records: Object.freeze([]), corrupt: Object.freeze([]) })

/**
 * The no-op log service. `append` never reads the record and never fails; `records` is `[]`
 * and `contents` is `{ records: [], corrupt: [] }`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const service: Service = ToolCallLog.make({
  append: () => Effect.void,
  contents: Effect.succeed(EMPTY)
})

/**
 * The no-op log as a Layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ToolCallLog.ToolCallLog> = Layer.succeed(ToolCallLog.ToolCallLog, service)
