/**
 * The in-memory {@link ToolCallLog} (DECISIONS D-18): the default log. Records are checked
 * against their Schemas exactly like the SQLite layer does, and kept as detached, deep-frozen
 * copies in append order. Nothing survives the layer.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { LogContents, LogRecord, Service } from "../src/ToolCallLog.js"
import * as ToolCallLog from "../src/ToolCallLog.js"

/**
 * A fresh, empty in-memory log. `append` fails with a `ToolCallLogError` only for a record that
 * does not match its schema (see `ToolCallLog.validate`); `records` and `contents` never fail,
 * and `contents` never reports a corrupt record (only validated copies are held).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Service> = Effect.sync(() => {
  const stored: Array<LogRecord> = []
  return ToolCallLog.make({
    append: (record) =>
      Effect.map(ToolCallLog.validate(record), (checked) => {
        stored.push(checked)
      }),
    contents: Effect.sync((): LogContents => ({ records: stored.slice(), corrupt: [] }))
  })
})

/**
 * A fresh in-memory log per layer build.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ToolCallLog.ToolCallLog> = Layer.effect(ToolCallLog.ToolCallLog, make)
