/**
 * The shared log suite (issue 11 item 3, D-18): every guarantee of the durable log, run against
 * every backend — the memory log, libSQL on `:memory:` and on a file, and a real PostgreSQL
 * (PGlite behind its socket server, through `@effect/sql-pg`). Issue 8's items 8 (own
 * `__proto__` keys) and 14 (corrupt rows reported per row, a foreign table refused at open)
 * hold on each SQL backend.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, HashMap, Layer, Logger, Option } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogSql from "../layers/ToolCallLogSql.js"
import type { JsonValue } from "../src/Json.js"
import type { CallPresentation, LiveCall } from "../src/Presentation.js"
import * as Presentation from "../src/Presentation.js"
import * as Scheduler from "../src/Scheduler.js"
import { defineTool } from "../src/Tool.js"
import type * as Tool from "../src/Tool.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import { nullProto, ownProtoKey } from "./fixtures/hostile.js"
import { exec, sqlSuite } from "./fixtures/sqlSuite.js"
import type { SqlBackend } from "./fixtures/toolCallLog.js"
import {
  approvalSample,
  asked1,
  asked2,
  assertOwnProto,
  call0,
  call1,
  depthOf,
  libsqlFile,
  libsqlMemory,
  nest,
  postgres,
  protoRecords,
  decided1,
  decided2,
  late2,
  result0,
  result1,
  sample
} from "./fixtures/toolCallLog.js"

const { pgServer, tmp } = sqlSuite("tool-call-log-backends-")

const sqlBackends: ReadonlyArray<SqlBackend> = [libsqlMemory, libsqlFile(() => tmp), postgres(pgServer)]

interface AnyBackend {
  readonly name: string
  readonly log: Effect.Effect<Layer.Layer<ToolCallLog.ToolCallLog, unknown>>
}

const backends: ReadonlyArray<AnyBackend> = [
  { name: "memory", log: Effect.succeed(ToolCallLogMemory.layer) },
  ...sqlBackends
]

/** Runs `program` with a fresh log of `backend` in context. */
const withLog = <A, E>(backend: AnyBackend, program: Effect.Effect<A, E, ToolCallLog.ToolCallLog>) =>
  Effect.flatMap(backend.log, (layer) => Effect.provide(program, layer))

/** Runs `program` with a `SqlClient` on a fresh database of `backend` in context (one build). */
const onFreshDatabase = <A, E>(backend: SqlBackend, program: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.flatMap(backend.fresh, (client) => Effect.provide(program, client))

/** Opens the log over the `SqlClient` in context and runs `program` with it. */
const openLog = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.flatMap(ToolCallLogSql.make, (log) => Effect.provideService(program, ToolCallLog.ToolCallLog, log))

const exec1 = <A extends object>(statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(statement))

const appendAll = (records: ReadonlyArray<unknown>) =>
  Effect.flatMap(
    ToolCallLog.ToolCallLog,
    (log) => Effect.forEach(records, (record) => log.append(record as LogRecord), { discard: true })
  )

const readAll = Effect.flatMap(ToolCallLog.ToolCallLog, (log) => log.records)

const failMessage = <A, R>(effect: Effect.Effect<A, ToolCallLog.ToolCallLogError, R>) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.instanceOf(error, ToolCallLog.ToolCallLogError)
    assert.strictEqual(error._tag, "ToolCallLogError")
    return error.message
  })

/** The driver's message for a statement on a table that is gone. */
const noSuchTable: Record<SqlBackend["dialect"], string> = {
  sqlite: "SQLITE_ERROR: no such table: tool_call_log",
  pg: "relation \"tool_call_log\" does not exist"
}

// ---------------------------------------------------------------------------------------------
// records
// ---------------------------------------------------------------------------------------------




const assertProtoRecords = (records: ReadonlyArray<LogRecord>) => {
  assert.strictEqual(records.length, 3)
  const [result, dispatched, start] = records as ReadonlyArray<Record<string, any>>
  assertOwnProto(result!.content[0], { polluted: true })
  assertOwnProto(result!.content[1], { role: "admin" })
  assertOwnProto(result!.error, { admin: true })
  assertOwnProto(result!.meta, { top: "x" })
  assertOwnProto(result!.meta.nested, { deep: [1] })
  assertOwnProto(dispatched!.content[0], { cache: { ttl: 1 } })
  assertOwnProto(dispatched!.arguments, { path: "/etc" })
  assertOwnProto(start!.arguments[0], { path: "/etc" })
  assert.deepStrictEqual(records, protoRecords())
  assert.strictEqual(({} as Record<string, unknown>).polluted, undefined)
}

for (const backend of backends) {
  describe(`ToolCallLog (${backend.name})`, () => {
    it.effect("SCHED-7: records come back in append order, exactly", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          yield* appendAll(sample)
          assert.deepStrictEqual(yield* readAll, sample)
          assert.deepStrictEqual(yield* ToolCallLog.contents, { records: sample, corrupt: [] })
        })
      ))

    it.effect("issue 10 / D-18: approval audit records round-trip among the others; the audit query pairs them", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          yield* appendAll(approvalSample)
          assert.deepStrictEqual(yield* readAll, approvalSample)
          assert.deepStrictEqual(yield* ToolCallLog.approvals, [
            { id: "ap-1", asked: asked1, decided: decided1, late: [] },
            { id: "ap-2", asked: asked2, decided: decided2, late: [late2] }
          ])
        })
      ))

    it.effect("SCHED-7: an empty log has no records", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* readAll, [])
        })
      ))

    it.effect("SCHED-7 / PRES-3: the canonical value is never persisted, even when a record carries one", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          const smuggled = { ...result0, value: { secret: "canonical-value-xyz" } }
          yield* appendAll([result0, smuggled])
          const records = yield* readAll
          assert.deepStrictEqual(records, [result0, result0])
          for (const record of records) assert.isFalse("value" in record)
          assert.isFalse(JSON.stringify(records).includes("canonical-value-xyz"))
        })
      ))

    it.effect("D-18: undeclared content-block keys survive; a __proto__ key of meta stays an own key", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          const meta = JSON.parse("{\"__proto__\":{\"polluted\":true},\"x\":1}") as JsonValue
          const content = [{ type: "text", text: "a", cacheControl: "ephemeral" }] as unknown as ToolResult["content"]
          const record = ToolCallLog.resultRecord("b", 0, "c", { isError: false, value: 1, content, meta })
          yield* appendAll([record])
          const [stored] = yield* readAll
          const storedMeta = (stored as ToolCallLog.ToolResultRecord).meta as object
          assert.deepStrictEqual(Object.keys(storedMeta), ["__proto__", "x"])
          assert.strictEqual(Object.getPrototypeOf(storedMeta), Object.prototype)
          assert.deepStrictEqual((stored as ToolCallLog.ToolResultRecord).content, content)
        })
      ))

    it.effect("issue 8 item 8 / JSON-5: content blocks, error, meta and arguments keep own __proto__ keys", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          yield* appendAll(protoRecords())
          assertProtoRecords(yield* readAll)
          assertProtoRecords((yield* ToolCallLog.contents).records)
        })
      ))

    it.effect("issue 8 item 8 / JSON-5: a null-prototype block is stored with Object.prototype and its own keys", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          const block = nullProto({ type: "text", text: "a", ...ownProtoKey({ polluted: true }) })
          yield* appendAll([{ _tag: "tool/result", batchId: "b", index: 0, callId: "c", content: [block], isError: false }])
          const [stored] = yield* readAll
          assertOwnProto((stored as ToolCallLog.ToolResultRecord).content[0], { polluted: true })
        })
      ))

    it.effect("D-18: stored records are detached and deep-frozen", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          const meta = { list: [1, 2] }
          const record = ToolCallLog.resultRecord("b", 0, "c", { isError: false, value: 1, content: [], meta })
          yield* appendAll([record])
          meta.list.push(3)
          const [stored] = yield* readAll
          const storedMeta = (stored as ToolCallLog.ToolResultRecord).meta as { readonly list: ReadonlyArray<number> }
          assert.deepStrictEqual(storedMeta, { list: [1, 2] })
          assert.isTrue(Object.isFrozen(stored))
          assert.isTrue(Object.isFrozen(storedMeta.list))
        })
      ))

    it.effect("D-18: an invalid record fails with ToolCallLogError and is not stored", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          const log = yield* ToolCallLog.ToolCallLog
          yield* log.append(call0)
          const bad = { ...call1, arguments: { not: "a string" } } as unknown as LogRecord
          assert.strictEqual(
            yield* failMessage(log.append(bad)),
            "invalid tool call log record: arguments: Expected string, actual {\"not\":\"a string\"}"
          )
          assert.deepStrictEqual(yield* log.records, [call0])
        })
      ))

    it.effect("JSON-6: a 100,000-deep meta round-trips", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          yield* appendAll([{ ...result0, meta: nest(100_000) }])
          const [stored] = yield* readAll
          assert.strictEqual(depthOf((stored as ToolCallLog.ToolResultRecord).meta), 100_000)
        })
      ))

    it.effect("SCHED-5: concurrent appends all land, each exactly once", () =>
      withLog(
        backend,
        Effect.gen(function*() {
          const log = yield* ToolCallLog.ToolCallLog
          const calls = Array.from({ length: 40 }, (_, i): LogRecord => ({ ...call1, index: i, callId: `c${i}` }))
          yield* Effect.forEach(calls, (record) => log.append(record), { concurrency: "unbounded" })
          const records = yield* log.records
          assert.deepStrictEqual(
            records.map((record) => (record as ToolCallLog.ToolCallRecord).callId).sort(),
            calls.map((record) => (record as ToolCallLog.ToolCallRecord).callId).sort()
          )
        })
      ))
  })
}

// ---------------------------------------------------------------------------------------------
// SQL backends: storage, migrations, reopening
// ---------------------------------------------------------------------------------------------

const rows = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe<{ readonly seq: unknown; readonly tag: unknown; readonly payload: unknown }>(
    "SELECT seq, tag, payload FROM tool_call_log ORDER BY seq"
  ))

for (const backend of sqlBackends) {
  describe(`ToolCallLogSql (${backend.name})`, () => {
    it.effect("issue 11 item 3 / D-18: rows hold seq, tag and the record's JSON text; no value anywhere", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openLog(appendAll(sample))
          const stored = yield* rows
          assert.deepStrictEqual(
            stored.map((row) => [Number(row.seq), row.tag, row.payload]),
            sample.map((record, i) => [i + 1, record._tag, JSON.stringify(record)])
          )
          assert.isFalse(stored.some((row) => String(row.payload).includes("canonical-value-xyz")))
        })
      ))

    it.effect("issue 11 item 3 / D-18: opening the log again on the same database reads every record and continues seq", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openLog(appendAll([call0, call1]))
          assert.deepStrictEqual(yield* openLog(readAll), [call0, call1])
          yield* openLog(appendAll([result0]))
          assert.deepStrictEqual(yield* openLog(readAll), [call0, call1, result0])
          assert.deepStrictEqual((yield* rows).map((row) => Number(row.seq)), [1, 2, 3])
        })
      ))

    it.effect("issue 11 item 3: the migration runs once, recorded in the log's own migrations table", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openLog(Effect.void)
          yield* openLog(Effect.void)
          const sql = yield* SqlClient.SqlClient
          const migrations = yield* sql.unsafe<{ readonly migration_id: unknown; readonly name: unknown }>(
            "SELECT migration_id, name FROM tool_call_log_migrations ORDER BY migration_id"
          )
          assert.deepStrictEqual(migrations.map((row) => [Number(row.migration_id), row.name]), [
            [1, "create_tool_call_log"],
            [2, "index_tool_call_log_tag"]
          ])
          assert.strictEqual(ToolCallLogSql.migrationsTable, "tool_call_log_migrations")
          assert.strictEqual(ToolCallLogSql.table, "tool_call_log")
        })
      ))

    it.effect("issue 10: the audit query reads only approval rows (through the tag index); other corrupt rows are not its business", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openLog(appendAll(approvalSample))
          yield* exec("INSERT INTO tool_call_log (tag, payload) VALUES ('tool/call', 'not json')")
          const service = yield* ToolCallLogSql.make
          assert.isDefined(service.approvalRecords)
          assert.deepStrictEqual(yield* service.approvalRecords!, [asked1, decided1, asked2, decided2, late2])
          const audit = yield* Effect.provideService(ToolCallLog.approvals, ToolCallLog.ToolCallLog, service)
          assert.deepStrictEqual(audit.map((entry) => entry.id), ["ap-1", "ap-2"])
          assert.strictEqual((yield* service.contents!).corrupt.length, 1)
          const indexes = backend.dialect === "pg"
            ? yield* exec1<{ readonly name: unknown }>("SELECT indexname AS name FROM pg_indexes WHERE tablename = 'tool_call_log'")
            : yield* exec1<{ readonly name: unknown }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tool_call_log'")
          assert.include(indexes.map((row) => row.name), ToolCallLogSql.tagIndex)
        })
      ))

    it.effect("issue 10: a database of the previous layout (migration 1 only) gets the index on open and keeps its records", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const create = backend.dialect === "pg"
            ? "CREATE TABLE IF NOT EXISTS tool_call_log (seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, tag TEXT NOT NULL, payload TEXT NOT NULL)"
            : "CREATE TABLE IF NOT EXISTS tool_call_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, payload TEXT NOT NULL)"
          const previous = Migrator.make({})({
            table: ToolCallLogSql.migrationsTable,
            loader: Effect.succeed<ReadonlyArray<Migrator.ResolvedMigration>>([
              [1, "create_tool_call_log", Effect.succeed(sql.unsafe(create))]
            ])
          })
          assert.deepStrictEqual(yield* previous, [[1, "create_tool_call_log"]])
          yield* exec(`INSERT INTO tool_call_log (tag, payload) VALUES ('tool/call', '${JSON.stringify(call0)}')`)
          yield* openLog(appendAll([asked1, decided1]))
          assert.deepStrictEqual(yield* openLog(readAll), [call0, asked1, decided1])
          const migrations = yield* exec1<{ readonly migration_id: unknown }>(
            "SELECT migration_id FROM tool_call_log_migrations ORDER BY migration_id"
          )
          assert.deepStrictEqual(migrations.map((row) => Number(row.migration_id)), [1, 2])
          assert.deepStrictEqual(yield* previous, [], "the previous version opens the new database unchanged")
        })
      ))

    it.effect("issue 11 item 3: the application's own migrations (effect_sql_migrations) do not clash with the log's", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const appMigrations = Migrator.make({})({
            loader: Effect.succeed<ReadonlyArray<Migrator.ResolvedMigration>>([
              [1, "create_users", Effect.succeed(sql.unsafe("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)"))]
            ])
          })
          assert.deepStrictEqual(yield* appMigrations, [[1, "create_users"]])
          yield* openLog(appendAll([call0]))
          assert.deepStrictEqual(yield* appMigrations, [])
          yield* sql.unsafe("INSERT INTO users (id, name) VALUES (1, 'ada')")
          assert.deepStrictEqual(yield* openLog(readAll), [call0])
          const app = yield* sql.unsafe<{ readonly name: unknown }>("SELECT name FROM effect_sql_migrations")
          assert.deepStrictEqual(app.map((row) => row.name), ["create_users"])
        })
      ))

    it.effect("issue 11 item 3 / D-18: ToolCallLogSql.layer logs through the application's own SqlClient", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          const context = yield* Layer.build(ToolCallLogSql.layer)
          yield* appendAll([call0, result0]).pipe(Effect.provide(context))
          assert.deepStrictEqual(yield* openLog(readAll), [call0, result0])
        }).pipe(Effect.scoped)
      ))

    it.effect("D-18: a table created before migrations existed (same layout) is adopted with its records", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* exec(
            backend.dialect === "pg"
              ? "CREATE TABLE tool_call_log (seq BIGSERIAL PRIMARY KEY, tag TEXT NOT NULL, payload TEXT NOT NULL)"
              : "CREATE TABLE tool_call_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, payload TEXT NOT NULL)",
            `INSERT INTO tool_call_log (tag, payload) VALUES ('tool/call', '${JSON.stringify(call0)}')`
          )
          yield* openLog(appendAll([call1]))
          assert.deepStrictEqual(yield* openLog(readAll), [call0, call1])
        })
      ))

    it.effect("D-16: a storage failure during append and read is a ToolCallLogError with the driver's message", () =>
      onFreshDatabase(
        backend,
        openLog(Effect.gen(function*() {
          const log = yield* ToolCallLog.ToolCallLog
          yield* log.append(call0)
          yield* exec("DROP TABLE tool_call_log")
          const missing = noSuchTable[backend.dialect]
          assert.strictEqual(yield* failMessage(log.append(call1)), `tool call log append failed: ${missing}`)
          assert.strictEqual(yield* failMessage(log.records), `tool call log read failed: ${missing}`)
          assert.strictEqual(yield* failMessage(ToolCallLog.contents), `tool call log read failed: ${missing}`)
        }))
      ))

    it.effect("D-16: a table dropped after its migration ran fails the next open with a clear error", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openLog(Effect.void)
          yield* exec("DROP TABLE tool_call_log")
          const error = yield* Effect.flip(ToolCallLogSql.make)
          const difference =
            "it does not exist, although the migrations table \"tool_call_log_migrations\" records it as created"
          assert.strictEqual(error.message, `tool call log table "tool_call_log" has a different layout: ${difference}`)
          assert.deepStrictEqual(error.reason, { _tag: "TableLayout", table: "tool_call_log", differences: [difference] })
        })
      ))

    if (backend.persistent) {
      it.effect("D-18: the log survives closing and reopening its connection (a new client on the same database)", () =>
        Effect.gen(function*() {
          const client = yield* backend.fresh
          const log = ToolCallLogSql.layer.pipe(Layer.provide(client))
          yield* appendAll([call0, call1]).pipe(Effect.provide(log))
          assert.deepStrictEqual(yield* readAll.pipe(Effect.provide(log)), [call0, call1])
          yield* appendAll([result0, result1]).pipe(Effect.provide(log))
          assert.deepStrictEqual(yield* readAll.pipe(Effect.provide(log)), [call0, call1, result0, result1])
          yield* exec("DELETE FROM tool_call_log").pipe(Effect.provide(client))
          yield* appendAll(protoRecords()).pipe(Effect.provide(log))
          assertProtoRecords(yield* readAll.pipe(Effect.provide(log)))
        }))
    }
  })
}

// ---------------------------------------------------------------------------------------------
// issue 8 item 14: corrupt rows
// ---------------------------------------------------------------------------------------------

const good0: LogRecord = { _tag: "tool/call", batchId: "b", index: 0, callId: "c0", name: "read", arguments: "{}" }
const good1: LogRecord = {
  _tag: "tool/result",
  batchId: "b",
  index: 0,
  callId: "c0",
  content: [{ type: "text", text: "ok" }],
  isError: false
}
const good2: LogRecord = { _tag: "tool/call", batchId: "b", index: 1, callId: "c1", name: "rm", arguments: "" }

const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`
const insert = (tag: string | null, payload: string | null): string =>
  `INSERT INTO tool_call_log (tag, payload) VALUES (${tag === null ? "NULL" : sqlString(tag)}, ${
    payload === null ? "NULL" : sqlString(payload)
  })`

const UNION = "\"tool/call\" | \"tool/result\" | \"tool/code-dispatch-start\" | \"tool/code-dispatch\" | " +
  "\"approval/asked\" | \"approval/decided\" | \"approval/late\""

const collectWarnings = () => {
  const warnings: Array<{ readonly level: string; readonly message: unknown; readonly sequence: unknown }> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    warnings.push({
      level: logLevel.label,
      message: Array.isArray(message) ? message[0] : message,
      sequence: Option.getOrUndefined(HashMap.get(annotations, "sequence"))
    })
  })
  return { warnings, layer: Logger.replace(Logger.defaultLogger, logger) }
}

for (const backend of sqlBackends) {
  describe(`issue 8 item 14: corrupt rows (${backend.name})`, () => {
    it.effect("issue 8 item 14 / D-18: contents returns the good records and one { sequence, reason } per bad row", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openLog(appendAll([good0]))
          yield* exec(
            insert("tool/call", "{oops"),
            insert("tool/call", "{\"_tag\":\"tool/call\"}"),
            insert("tool/result", JSON.stringify(good2)),
            insert("nope", "{\"_tag\":\"nope\"}"),
            insert("tool/call", "{\"__proto__\":" + JSON.stringify(good2) + "}"),
            insert("tool/call", "[1,2]"),
            insert("tool/call", "5"),
            insert(
              "tool/result",
              "{\"_tag\":\"tool/result\",\"batchId\":\"b\",\"index\":0,\"callId\":\"c0\",\"isError\":false," +
                "\"content\":[{\"type\":\"text\",\"text\":\"x\",\"n\":-0}]}"
            )
          )
          yield* openLog(appendAll([good1]))
          yield* exec(insert("tool/call", "{\"_tag\":\"tool/call\",\"batchId\":7}"))
          yield* openLog(appendAll([good2]))

          const contents = yield* openLog(ToolCallLog.contents)
          assert.deepStrictEqual(contents.records, [good0, good1, good2])
          const notJson = contents.corrupt[0]!
          assert.strictEqual(notJson.sequence, 2)
          assert.isTrue(notJson.reason.startsWith("stored tool call log record is not JSON: "), notJson.reason)
          assert.deepStrictEqual(contents.corrupt.slice(1), [
            { sequence: 3, reason: "invalid stored tool call log record: batchId is missing" },
            { sequence: 4, reason: "stored tool call log record has tag \"tool/result\" but a \"tool/call\" payload" },
            { sequence: 5, reason: `invalid stored tool call log record: _tag: Expected ${UNION}, actual "nope"` },
            { sequence: 6, reason: "invalid stored tool call log record: _tag is missing" },
            { sequence: 7, reason: "invalid stored tool call log record: _tag is missing" },
            {
              sequence: 8,
              reason: "invalid stored tool call log record: Expected ToolCallRecord | ToolResultRecord | " +
                "CodeDispatchStartRecord | CodeDispatchRecord | ApprovalAskedRecord | ApprovalDecidedRecord | " +
                "ApprovalLateRecord, actual 5"
            },
            { sequence: 9, reason: "invalid stored tool call log record: content: Expected lossless JSON" },
            { sequence: 11, reason: "invalid stored tool call log record: batchId: Expected string, actual 7" }
          ])
          assert.strictEqual(Object.getPrototypeOf(contents.records[2]), Object.prototype)
          assert.strictEqual(({} as Record<string, unknown>).batchId, undefined)
        })
      ))

    it.effect("issue 8 item 14 / D-18: records returns the good records and logs one warning per bad row", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openLog(appendAll([good0]))
          yield* exec(insert("tool/call", "{oops"), insert("nope", "{\"_tag\":\"nope\"}"))
          yield* openLog(appendAll([good1]))
          const { layer, warnings } = collectWarnings()
          const records = yield* openLog(readAll).pipe(Effect.provide(layer))
          assert.deepStrictEqual(records, [good0, good1])
          assert.deepStrictEqual(warnings.map((w) => [w.level, w.sequence]), [["WARN", 2], ["WARN", 3]])
          assert.isTrue(
            String(warnings[0]!.message).startsWith(
              "tool call log skipped a corrupt record (seq 2): stored tool call log record is not JSON: "
            )
          )
          assert.strictEqual(
            warnings[1]!.message,
            "tool call log skipped a corrupt record (seq 3): " +
              `invalid stored tool call log record: _tag: Expected ${UNION}, actual "nope"`
          )
        })
      ))

    it.effect("issue 8 item 14 / D-18: NULL tags and payloads of a table without NOT NULL are reported per row", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* exec(
            backend.dialect === "pg"
              ? "CREATE TABLE tool_call_log (seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, payload text, tag TEXT)"
              : "CREATE TABLE tool_call_log (SEQ integer PRIMARY KEY, payload text, Tag Text)",
            insert("tool/call", JSON.stringify(good0)),
            insert("tool/call", null),
            insert(null, JSON.stringify(good2)),
            insert(null, null)
          )
          const { corrupt, records } = yield* openLog(Effect.zipLeft(ToolCallLog.contents, appendAll([good2])))
          assert.deepStrictEqual(records, [good0])
          assert.deepStrictEqual(corrupt, [
            { sequence: 2, reason: "stored tool call log row has NULL payload, expected JSON text" },
            { sequence: 3, reason: "stored tool call log row has NULL tag, expected text" },
            { sequence: 4, reason: "stored tool call log row has NULL tag, expected text" }
          ])
          assert.deepStrictEqual(yield* openLog(readAll), [good0, good2])
        })
      ))

    if (backend.dialect === "sqlite") {
      it.effect("issue 8 item 14 / D-18: a blob payload is reported as a blob", () =>
        onFreshDatabase(
          backend,
          Effect.gen(function*() {
            yield* openLog(appendAll([good0]))
            yield* exec("INSERT INTO tool_call_log (tag, payload) VALUES ('tool/call', x'7b7d')")
            assert.deepStrictEqual(yield* openLog(ToolCallLog.contents), {
              records: [good0],
              corrupt: [{ sequence: 2, reason: "stored tool call log row has a blob payload, expected JSON text" }]
            })
          })
        ))
    }
  })
}

// ---------------------------------------------------------------------------------------------
// issue 8 item 14: a table of a different layout fails at open
// ---------------------------------------------------------------------------------------------

type LayoutCase = readonly [name: string, setup: ReadonlyArray<string>, differences: ReadonlyArray<string>]

const layoutCases: Record<SqlBackend["dialect"], ReadonlyArray<LayoutCase>> = {
  sqlite: [
    [
      "a missing column",
      ["CREATE TABLE tool_call_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL)"],
      ["missing column \"payload\""]
    ],
    [
      "renamed and extra columns",
      ["CREATE TABLE tool_call_log (id INTEGER PRIMARY KEY, tag TEXT, body TEXT, extra INTEGER NOT NULL)"],
      [
        "missing column \"seq\"",
        "missing column \"payload\"",
        "unexpected column \"id\"",
        "unexpected column \"body\"",
        "unexpected column \"extra\""
      ]
    ],
    [
      "wrong column types",
      ["CREATE TABLE tool_call_log (seq TEXT PRIMARY KEY, tag TEXT NOT NULL, payload BLOB NOT NULL)"],
      ["column \"seq\" has type \"TEXT\", expected INTEGER", "column \"payload\" has type \"BLOB\", expected TEXT"]
    ],
    [
      "no primary key",
      ["CREATE TABLE tool_call_log (seq INTEGER, tag TEXT NOT NULL, payload)"],
      ["column \"seq\" is not the primary key", "column \"payload\" has no type, expected TEXT"]
    ],
    [
      "a composite primary key",
      ["CREATE TABLE tool_call_log (seq INTEGER, tag TEXT, payload TEXT, PRIMARY KEY (seq, tag))"],
      ["column \"tag\" is part of the primary key"]
    ],
    [
      "a WITHOUT ROWID table",
      ["CREATE TABLE tool_call_log (seq INTEGER PRIMARY KEY, tag TEXT NOT NULL, payload TEXT NOT NULL) WITHOUT ROWID"],
      ["it is a WITHOUT ROWID table (seq is not assigned automatically)"]
    ],
    [
      "a view",
      ["CREATE VIEW tool_call_log AS SELECT 1 AS seq, 'tool/call' AS tag, '{}' AS payload"],
      ["it is a view, not a table"]
    ]
  ],
  pg: [
    [
      "a missing column",
      ["CREATE TABLE tool_call_log (seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, tag TEXT NOT NULL)"],
      ["missing column \"payload\""]
    ],
    [
      "renamed and extra columns",
      ["CREATE TABLE tool_call_log (id BIGSERIAL PRIMARY KEY, tag TEXT, body TEXT, extra INTEGER NOT NULL)"],
      [
        "missing column \"seq\"",
        "missing column \"payload\"",
        "unexpected column \"id\"",
        "unexpected column \"body\"",
        "unexpected column \"extra\""
      ]
    ],
    [
      "wrong column types",
      ["CREATE TABLE tool_call_log (seq TEXT PRIMARY KEY, tag TEXT NOT NULL, payload BYTEA NOT NULL)"],
      [
        "column \"seq\" has type \"text\", expected bigint",
        "column \"seq\" is not numbered by the database (no identity or sequence)",
        "column \"payload\" has type \"bytea\", expected text"
      ]
    ],
    [
      "no primary key",
      ["CREATE TABLE tool_call_log (seq BIGINT GENERATED BY DEFAULT AS IDENTITY, tag TEXT NOT NULL, payload TEXT)"],
      ["column \"seq\" is not the primary key"]
    ],
    [
      "a composite primary key",
      ["CREATE TABLE tool_call_log (seq BIGSERIAL, tag TEXT, payload TEXT, PRIMARY KEY (seq, tag))"],
      ["column \"tag\" is part of the primary key"]
    ],
    [
      "a seq the database does not number",
      ["CREATE TABLE tool_call_log (seq BIGINT PRIMARY KEY, tag TEXT NOT NULL, payload TEXT NOT NULL)"],
      ["column \"seq\" is not numbered by the database (no identity or sequence)"]
    ],
    [
      "upper-case quoted column names",
      ["CREATE TABLE tool_call_log (\"SEQ\" BIGSERIAL PRIMARY KEY, tag TEXT NOT NULL, payload TEXT NOT NULL)"],
      ["missing column \"seq\"", "unexpected column \"SEQ\""]
    ],
    [
      "a view",
      ["CREATE VIEW tool_call_log AS SELECT 1::bigint AS seq, 'tool/call'::text AS tag, '{}'::text AS payload"],
      ["it is a view, not a table"]
    ],
    [
      "a materialized view",
      ["CREATE MATERIALIZED VIEW tool_call_log AS SELECT 1::bigint AS seq, 'x'::text AS tag, '{}'::text AS payload"],
      ["it is a materialized view, not a table"]
    ]
  ]
}

for (const backend of sqlBackends) {
  describe(`issue 8 item 14: a table of a different layout fails at open (${backend.name})`, () => {
    for (const [name, setup, differences] of layoutCases[backend.dialect]) {
      it.effect(`issue 8 item 14 / D-18: ${name} is a ToolCallLogError naming the table and each difference`, () =>
        onFreshDatabase(
          backend,
          Effect.gen(function*() {
            yield* exec(...setup)
            const expected = `tool call log table "tool_call_log" has a different layout: ${differences.join("; ")}`
            const opened = yield* Effect.flip(ToolCallLogSql.make)
            assert.strictEqual(opened._tag, "ToolCallLogError")
            assert.strictEqual(opened.message, expected)
            assert.deepStrictEqual(opened.reason, { _tag: "TableLayout", table: "tool_call_log", differences })
            const built = yield* Effect.flip(Layer.build(ToolCallLogSql.layer).pipe(Effect.scoped))
            assert.strictEqual(built.message, expected)
          })
        ))
    }
  })
}

// ---------------------------------------------------------------------------------------------
// replay from every backend
// ---------------------------------------------------------------------------------------------

const readFile = defineTool({
  name: "read_file",
  description: "Read a file.",
  parameters: { path: { type: "string", required: true } },
  output: {
    schema: {
      type: "object",
      additionalProperties: false,
      properties: { path: { type: "string", required: true }, lines: { type: "integer", required: true } }
    },
    render: (_args, value) => [{ type: "text", text: `${value.path}: ${value.lines} lines` }],
    presentationMeta: (_args, value) => ({ lines: value.lines, ...ownProtoKey({ role: "admin" }) })
  },
  isConcurrencySafe: () => true,
  presentCall: (args) => ({ card: "generic", title: `Read ${args.path}`, kind: "read" }),
  presentResult: (args, result) =>
    result.isError ? undefined : { card: "generic", title: `Read ${args.path}`, content: result.content },
  execute: (args) => Effect.succeed({ path: args.path, lines: args.path.length })
})

const tools: ReadonlyArray<Tool.ToolDefinition<never>> = [readFile]
const lookup = (name: string) => tools.find((tool) => tool.name === name)
const calls: ReadonlyArray<Scheduler.ModelToolCall> = [
  { callId: "c1", name: "read_file", arguments: "{\"path\":\"/etc/hosts\"}" },
  { callId: "c2", name: "read_file", arguments: "not json" },
  { callId: "c3", name: "missing_tool", arguments: "{}" },
  { callId: "c4", name: "read_file", arguments: "{\"path\":\"/tmp/a\"}" }
]

const registry = Layer.scopedDiscard(
  Effect.flatMap(ToolRegistry, (registry) => Effect.forEach(tools, (tool) => registry.register(tool)))
).pipe(Layer.provideMerge(InMemoryToolRegistry.layer))

const runBatch = Effect.gen(function*() {
  const live: Array<LiveCall> = []
  yield* Scheduler.runBatch(calls, {
    agent: "main",
    maxParallel: 2,
    onCommit: (event) =>
      Effect.sync(() => {
        const call = calls[event.index]!
        live.push({
          callId: call.callId,
          name: call.name,
          agent: "main",
          arguments: Presentation.parseArguments(call.arguments),
          result: event.result
        })
      })
  })
  return Presentation.livePresentation(live, lookup)
})

for (const backend of sqlBackends) {
  it.live(`D-18 / issue 11 item 3: a scheduled batch replays from the reopened log into the live cards (${backend.name})`, () =>
    onFreshDatabase(
      backend,
      Effect.gen(function*() {
        const livePresentation = yield* Effect.flatMap(ToolCallLogSql.make, (log) =>
          runBatch.pipe(
            Effect.provide(ToolRuntime.layer.pipe(
              Layer.provideMerge(registry),
              Layer.provideMerge(Layer.succeed(ToolCallLog.ToolCallLog, log))
            ))
          ))
        const records = yield* openLog(readAll)
        const replayed: Array<CallPresentation> = Presentation.replay(records, lookup)
        assert.deepStrictEqual(replayed, livePresentation)
        assert.strictEqual(replayed.length, 4)
        const card = replayed[0]!.result as { readonly content?: ReadonlyArray<object> }
        assert.deepStrictEqual(card.content, [{ type: "text", text: "/etc/hosts: 10 lines" }])
        const meta = (records.find((record) => record._tag === "tool/result") as ToolCallLog.ToolResultRecord).meta
        assertOwnProto(meta, { role: "admin" })
        assert.isFalse(JSON.stringify(records).includes("\"value\""), "canonical values are never persisted")
      })
    ))
}
