/**
 * A SQLite-backed {@link ToolCallLog} (DECISIONS D-18) over `@effect/sql-sqlite-node`. One table,
 * created on first use:
 *
 * ```sql
 * CREATE TABLE IF NOT EXISTS tool_call_log (
 *   seq INTEGER PRIMARY KEY AUTOINCREMENT,
 *   tag TEXT NOT NULL,
 *   payload TEXT NOT NULL
 * )
 * ```
 *
 * Each record is checked and encoded with the `ToolCallLog` Schemas (`payload` is its JSON text,
 * `tag` its `_tag`) and read back in `seq` order. Every storage failure is a `ToolCallLogError`.
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { LogRecord, Service } from "../src/ToolCallLog.js"
import { decodeJson, encodeJson, ToolCallLog, ToolCallLogError } from "../src/ToolCallLog.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** A database file path (created when missing; its directory must exist) or `":memory:"`. */
  readonly filename: string
}

const INSERT = "INSERT INTO tool_call_log (tag, payload) VALUES (?, ?)"
const SELECT = "SELECT seq, tag, payload FROM tool_call_log ORDER BY seq"

interface Row {
  readonly seq: number
  readonly tag: string
  readonly payload: string
}

const causeMessage = (cause: unknown): string => {
  try {
    if (cause instanceof Error) return String(cause.message)
    return String(cause)
  } catch {
    return "unknown error"
  }
}

const sqlMessage = (error: SqlError): string =>
  error.cause === undefined ? causeMessage(error.message) : causeMessage(error.cause)

const storageError = (prefix: string) => (error: SqlError): ToolCallLogError =>
  new ToolCallLogError({ message: `${prefix}: ${sqlMessage(error)}` })

/**
 * A log over the `SqlClient` in context (a SQLite dialect client): creates the table if needed
 * and returns the service. Fails with `tool call log could not create its table: <msg>`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromClient: Effect.Effect<Service, ToolCallLogError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE IF NOT EXISTS tool_call_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tag TEXT NOT NULL,
    payload TEXT NOT NULL
  )`.pipe(Effect.mapError(storageError("tool call log could not create its table")))

  const appendError = storageError("tool call log append failed")
  const readError = storageError("tool call log read failed")

  const append = (record: LogRecord): Effect.Effect<void, ToolCallLogError> =>
    Effect.flatMap(
      encodeJson(record),
      (payload) =>
        sql.unsafe(INSERT, [record._tag, payload]).pipe(
          Effect.mapError(appendError),
          Effect.asVoid
        )
    )

  const decodeRow = (row: Row): Effect.Effect<LogRecord, ToolCallLogError> =>
    decodeJson(row.payload).pipe(
      Effect.mapError((error) => new ToolCallLogError({ message: `${error.message} (seq ${row.seq})` })),
      Effect.filterOrFail(
        (decoded) => decoded._tag === row.tag,
        (decoded) =>
          new ToolCallLogError({
            message: `stored tool call log record has tag "${row.tag}" but a "${decoded._tag}" payload (seq ${row.seq})`
          })
      )
    )

  const records: Effect.Effect<ReadonlyArray<LogRecord>, ToolCallLogError> = sql.unsafe<Row>(SELECT).pipe(
    Effect.mapError(readError),
    Effect.flatMap((rows) => Effect.forEach(rows, decodeRow))
  )

  return { append, records }
})

/**
 * Opens (or creates) the database, creates the table if needed and returns the log. The
 * connection closes with the scope. Fails with `tool call log could not open "<filename>": <msg>`
 * or `tool call log could not create its table: <msg>`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<Service, ToolCallLogError, Scope.Scope> =>
  SqliteClient.make({ filename: options.filename }).pipe(
    Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make),
    Effect.catchAllDefect((defect) =>
      Effect.fail(
        new ToolCallLogError({ message: `tool call log could not open "${options.filename}": ${causeMessage(defect)}` })
      )
    ),
    Effect.flatMap((client) => Effect.provideService(fromClient, SqlClient.SqlClient, client))
  )

/**
 * The SQLite log as a layer: the database is opened when the layer is built and closed when it
 * is released; reopening the same file reads every record appended before.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<ToolCallLog, ToolCallLogError> =>
  Layer.scoped(ToolCallLog, make(options))

/**
 * The log over an existing `SqlClient` layer's client (SQLite dialect), e.g. a database the
 * application already uses.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromClient: Layer.Layer<ToolCallLog, ToolCallLogError, SqlClient.SqlClient> = Layer.effect(
  ToolCallLog,
  fromClient
)
