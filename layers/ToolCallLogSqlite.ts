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
 * `tag` its `_tag`) and read back in `seq` order. Opening checks the filename and the layout of
 * an existing table; a stored row that cannot be read is reported by `contents` (with its `seq`)
 * and skipped by `records`. Every failure is a `ToolCallLogError`.
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
import type { CorruptRecord, LogContents, LogRecord, Service } from "../src/ToolCallLog.js"
import * as ToolCallLog from "../src/ToolCallLog.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * A database file path (created when missing; its directory must exist) or `":memory:"`. An
   * empty string (SQLite's anonymous temporary database) is refused.
   */
  readonly filename: string
}

/**
 * The log's table.
 *
 * @since 0.1.0
 * @category models
 */
export const table = "tool_call_log"

const CREATE = `CREATE TABLE IF NOT EXISTS ${table} (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  tag TEXT NOT NULL,
  payload TEXT NOT NULL
)`
const INSERT = `INSERT INTO ${table} (tag, payload) VALUES (?, ?)`
const SELECT = `SELECT seq AS seq, tag AS tag, payload AS payload FROM ${table} ORDER BY seq`
const SCHEMA = `SELECT type, sql FROM sqlite_master WHERE name = '${table}'`
const COLUMNS = `PRAGMA table_info(${table})`

interface Row {
  readonly seq: unknown
  readonly tag: unknown
  readonly payload: unknown
}

interface ColumnInfo {
  readonly name: unknown
  readonly type: unknown
  readonly pk: unknown
}

interface SchemaRow {
  readonly type: unknown
  readonly sql: unknown
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

const storageError = (prefix: string) => (error: SqlError): ToolCallLog.ToolCallLogError =>
  new ToolCallLog.ToolCallLogError({ message: `${prefix}: ${sqlMessage(error)}` })

const EXPECTED: ReadonlyArray<{ readonly name: string; readonly type: string; readonly pk: boolean }> = [
  { name: "seq", type: "INTEGER", pk: true },
  { name: "tag", type: "TEXT", pk: false },
  { name: "payload", type: "TEXT", pk: false }
]

const text = (value: unknown): string => (typeof value === "string" ? value : "")

/**
 * The differences between an existing table (its `sqlite_master` row and `PRAGMA table_info`)
 * and the log's layout. Column names compare case-insensitively, declared types exactly (up to
 * case); `NOT NULL` is not required (a NULL is reported per row by `contents`).
 */
const layoutDifferences = (
  schema: ReadonlyArray<SchemaRow>,
  columns: ReadonlyArray<ColumnInfo>
): ReadonlyArray<string> => {
  const kind = schema.length === 0 ? "table" : text(schema[0]!.type)
  if (kind !== "table") return [`it is a ${kind || "schema object"}, not a table`]
  const differences: Array<string> = []
  if (/\bWITHOUT\s+ROWID\b/i.test(text(schema[0]?.sql))) {
    differences.push("it is a WITHOUT ROWID table (seq is not assigned automatically)")
  }
  const found = new Map<string, ColumnInfo>()
  for (const column of columns) found.set(text(column.name).toLowerCase(), column)
  for (const expected of EXPECTED) {
    const column = found.get(expected.name)
    if (column === undefined) {
      differences.push(`missing column "${expected.name}"`)
      continue
    }
    const type = text(column.type)
    if (type.toUpperCase() !== expected.type) {
      const declared = type === "" ? "no type" : `type ${JSON.stringify(type)}`
      differences.push(`column "${expected.name}" has ${declared}, expected ${expected.type}`)
    }
    const pk = column.pk !== 0 && column.pk !== 0n
    if (pk && !expected.pk) differences.push(`column "${expected.name}" is part of the primary key`)
    if (!pk && expected.pk) differences.push(`column "${expected.name}" is not the primary key`)
  }
  for (const column of columns) {
    const name = text(column.name)
    if (!EXPECTED.some((expected) => expected.name === name.toLowerCase())) {
      differences.push(`unexpected column ${JSON.stringify(name)}`)
    }
  }
  return differences
}

const checkLayout = (sql: SqlClient.SqlClient): Effect.Effect<void, ToolCallLog.ToolCallLogError> =>
  Effect.gen(function*() {
    const schema = yield* sql.unsafe<SchemaRow>(SCHEMA)
    const columns = yield* sql.unsafe<ColumnInfo>(COLUMNS)
    const differences = layoutDifferences(schema, columns)
    if (differences.length === 0) return
    return yield* Effect.fail(
      new ToolCallLog.ToolCallLogError({
        message: `tool call log table "${table}" has a different layout: ${differences.join("; ")}`,
        reason: { _tag: "TableLayout", table, differences }
      })
    )
  }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(checkError(error))))

const checkError = storageError("tool call log could not check its table")

const kindOf = (value: unknown): string => {
  if (value === null) return "NULL"
  if (value instanceof Uint8Array) return "a blob"
  return typeof value === "number" || typeof value === "bigint" ? "a number" : `a ${typeof value}`
}

const quote = (value: string): string => JSON.stringify(value.length <= 60 ? value : `${value.slice(0, 60)}…`)

const sequenceOf = (seq: unknown): number => {
  if (typeof seq === "bigint") return Number(seq)
  return typeof seq === "number" ? seq : -1
}

type Decoded = { readonly _tag: "Record"; readonly record: LogRecord } | {
  readonly _tag: "Corrupt"
  readonly corrupt: CorruptRecord
}

const corrupt = (row: Row, reason: string): Effect.Effect<Decoded> =>
  Effect.succeed({ _tag: "Corrupt", corrupt: Object.freeze({ sequence: sequenceOf(row.seq), reason }) })

const decodeRow = (row: Row): Effect.Effect<Decoded> => {
  const tag = row.tag
  const payload = row.payload
  if (typeof tag !== "string") {
    return corrupt(row, `stored tool call log row has ${kindOf(tag)} tag, expected text`)
  }
  if (typeof payload !== "string") {
    return corrupt(row, `stored tool call log row has ${kindOf(payload)} payload, expected JSON text`)
  }
  return ToolCallLog.decodeJson(payload).pipe(
    Effect.matchEffect({
      onFailure: (error) => corrupt(row, error.message),
      onSuccess: (record) =>
        record._tag === tag
          ? Effect.succeed<Decoded>({ _tag: "Record", record })
          : corrupt(row, `stored tool call log record has tag ${quote(tag)} but a "${record._tag}" payload`)
    })
  )
}

const split = (decoded: ReadonlyArray<Decoded>): LogContents => {
  const records: Array<LogRecord> = []
  const bad: Array<CorruptRecord> = []
  for (const entry of decoded) {
    if (entry._tag === "Record") records.push(entry.record)
    else bad.push(entry.corrupt)
  }
  return { records, corrupt: bad }
}

/**
 * A log over the `SqlClient` in context (a SQLite dialect client): creates the table if needed,
 * checks the layout of an existing one and returns the service. Fails with
 * `tool call log could not create its table: <msg>` or, for an existing table of another layout,
 * `tool call log table "tool_call_log" has a different layout: <difference>; …` (reason
 * `TableLayout`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromClient: Effect.Effect<Service, ToolCallLog.ToolCallLogError, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(CREATE).pipe(Effect.mapError(storageError("tool call log could not create its table")))
    yield* checkLayout(sql)

    const appendError = storageError("tool call log append failed")
    const readError = storageError("tool call log read failed")

    const append = (record: LogRecord): Effect.Effect<void, ToolCallLog.ToolCallLogError> =>
      Effect.flatMap(
        ToolCallLog.encodeJson(record),
        (payload) =>
          sql.unsafe(INSERT, [record._tag, payload]).pipe(
            Effect.mapError(appendError),
            Effect.asVoid
          )
      )

    const contents: Effect.Effect<LogContents, ToolCallLog.ToolCallLogError> = sql.unsafe<Row>(SELECT).pipe(
      Effect.mapError(readError),
      Effect.flatMap((rows) =>
        Effect.forEach(rows, (row) =>
          decodeRow(row).pipe(
            Effect.catchAllDefect((defect) =>
              corrupt(row, `stored tool call log record could not be decoded: ${causeMessage(defect)}`)
            )
          ))
      ),
      Effect.map(split)
    )

    return ToolCallLog.make({ append, contents })
  }
)

const FILENAME_RULE = "tool call log filename must be a database file path or \":memory:\""

const invalidFilename = (message: string): ToolCallLog.ToolCallLogError =>
  new ToolCallLog.ToolCallLogError({ message, reason: { _tag: "InvalidOption", option: "filename" } })

const readFilename = (options: Options): Effect.Effect<string, ToolCallLog.ToolCallLogError> =>
  Effect.suspend(() => {
    let filename: unknown
    try {
      filename = (options as { readonly filename?: unknown }).filename
    } catch (error) {
      return Effect.fail(invalidFilename(`tool call log options could not be read: ${causeMessage(error)}`))
    }
    if (typeof filename !== "string") {
      return Effect.fail(invalidFilename(`${FILENAME_RULE}, not ${filename === null ? "null" : typeof filename}`))
    }
    if (filename === "") return Effect.fail(invalidFilename(`${FILENAME_RULE}, not an empty string`))
    if (filename.includes("\u0000")) {
      return Effect.fail(invalidFilename(`${FILENAME_RULE}, not a string containing a NUL character`))
    }
    return Effect.succeed(filename)
  })

/**
 * Opens (or creates) the database, creates the table if needed and returns the log. The
 * connection closes with the scope. Fails with `tool call log filename must be a database file
 * path or ":memory:", not an empty string` (or `not <type>`, reason `InvalidOption`), `tool call
 * log could not open "<filename>": <msg>`, or the errors of {@link fromClient}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<Service, ToolCallLog.ToolCallLogError, Scope.Scope> =>
  Effect.flatMap(readFilename(options), (filename) =>
    SqliteClient.make({ filename }).pipe(
      Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make),
      Effect.catchAllDefect((defect) =>
        Effect.fail(
          new ToolCallLog.ToolCallLogError({
            message: `tool call log could not open "${filename}": ${causeMessage(defect)}`
          })
        )
      ),
      Effect.flatMap((client) => Effect.provideService(fromClient, SqlClient.SqlClient, client))
    ))

/**
 * The SQLite log as a layer: the database is opened (and its filename and table layout checked)
 * when the layer is built and closed when it is released; reopening the same file reads every
 * record appended before.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<ToolCallLog.ToolCallLog, ToolCallLog.ToolCallLogError> =>
  Layer.scoped(ToolCallLog.ToolCallLog, make(options))

/**
 * The log over an existing `SqlClient` layer's client (SQLite dialect), e.g. a database the
 * application already uses.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromClient: Layer.Layer<ToolCallLog.ToolCallLog, ToolCallLog.ToolCallLogError, SqlClient.SqlClient> =
  Layer.effect(ToolCallLog.ToolCallLog, fromClient)
