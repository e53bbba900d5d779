/**
 * The in-memory {@link ToolCallLog} (DECISIONS D-18): the default log. Records are checked
 * against their Schemas exactly like the SQLite layer does, and kept as detached, deep-frozen
 * copies in append order. Nothing survives the layer.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { LogRecord, Service } from "../src/ToolCallLog.js"
import { ToolCallLog, validate } from "../src/ToolCallLog.js"

/**
 * A fresh, empty in-memory log. `append` fails with a `ToolCallLogError` only for a record that
 * does not match its schema (see `ToolCallLog.validate`); `records` never fails.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Service> = Effect.sync(() => {
  const stored: Array<LogRecord> = []
  return {
    append: (record) =>
      Effect.map(validate(record), (checked) => {
        stored.push(checked)
      }),
    records: Effect.sync(() => stored.slice())
  }
})

/**
 * A fresh in-memory log per layer build.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ToolCallLog> = Layer.effect(ToolCallLog, make)
