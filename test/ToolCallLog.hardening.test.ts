/**
 * Issue 8, the log's items: `__proto__` keys stay own keys through the codec and the record
 * Schemas (item 8, JSON-5); every service has `contents`, and the libSQL layer refuses bad URLs
 * and reports open failures at layer build (item 14, D-18). The per-backend halves of both items
 * run in the shared suite, `ToolCallLog.backends.test.ts`.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Exit, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogSql from "../layers/ToolCallLogSql.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import { assertOwnProto, protoRecords } from "./fixtures/toolCallLog.js"

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tool-call-log-hardening-"))
let fileCount = 0
const freshFile = (): string => path.join(tmp, `log-${++fileCount}.db`)

afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
})

const readAll = Effect.flatMap(ToolCallLog.ToolCallLog, (log) => log.records)
const appendAll = (records: ReadonlyArray<unknown>) =>
  Effect.flatMap(
    ToolCallLog.ToolCallLog,
    (log) => Effect.forEach(records, (record) => log.append(record as LogRecord), { discard: true })
  )

/** The typed failure of building `layer` (a defect fails the test). */
const buildError = <A, E>(layer: Layer.Layer<A, E>) =>
  Effect.map(Effect.flip(Layer.build(layer).pipe(Effect.scoped)), (error) => {
    assert.instanceOf(error, ToolCallLog.ToolCallLogError)
    const typed = error as ToolCallLog.ToolCallLogError
    assert.strictEqual(typed._tag, "ToolCallLogError")
    return typed
  })


// ---------------------------------------------------------------------------------------------
// item 8
// ---------------------------------------------------------------------------------------------


describe("issue 8 item 8: __proto__ keys stay own keys in the log", () => {
  it.effect("issue 8 item 8 / JSON-5: validate, encodeJson and decodeJson keep own __proto__ keys", () =>
    Effect.gen(function*() {
      const [record] = protoRecords()
      const validated = yield* ToolCallLog.validate(record)
      assertOwnProto((validated as ToolCallLog.ToolResultRecord).content[0], { polluted: true })
      assertOwnProto((validated as ToolCallLog.ToolResultRecord).error, { admin: true })
      const text = yield* ToolCallLog.encodeJson(record)
      assert.strictEqual(text, JSON.stringify(record))
      assert.include(text, "{\"type\":\"text\",\"text\":\"a\",\"__proto__\":{\"polluted\":true}}")
      assert.include(text, "\"error\":{\"name\":\"Denied\",\"code\":\"DENIED\",\"__proto__\":{\"admin\":true}}")
      const decoded = yield* ToolCallLog.decodeJson(text)
      assertOwnProto((decoded as ToolCallLog.ToolResultRecord).content[0], { polluted: true })
      assertOwnProto((decoded as ToolCallLog.ToolResultRecord).error, { admin: true })
      assert.deepStrictEqual(decoded, record)
    }))

  it("issue 8 item 8 / JSON-5: the record Schemas decode an own __proto__ key as an own key", () => {
    const input = JSON.parse(
      "{\"_tag\":\"tool/result\",\"batchId\":\"b\",\"index\":0,\"callId\":\"c\",\"isError\":false," +
        "\"content\":[{\"type\":\"text\",\"text\":\"a\",\"__proto__\":{\"polluted\":true}}]}"
    )
    const decoded = Schema.decodeUnknownSync(ToolCallLog.LogRecord)(input) as ToolCallLog.ToolResultRecord
    assertOwnProto(decoded.content[0], { polluted: true })
    const validated = Schema.validateSync(ToolCallLog.ToolResultRecord)(input)
    assertOwnProto(validated.content[0], { polluted: true })
    assert.isTrue(Schema.is(ToolCallLog.ToolResultRecord)(input))
    assert.isFalse(
      Schema.is(ToolCallLog.ToolResultRecord.fields.content)([{ type: "text", text: "a", extra: () => 1 }]),
      "undeclared keys must still be lossless JSON"
    )
  })
})

// ---------------------------------------------------------------------------------------------
// item 14 (the SQL backends' corrupt-row and layout tests run in ToolCallLog.backends.test.ts)
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

describe("issue 8 item 14: contents on every service", () => {
  it.effect("issue 8 item 14 / D-18: the memory log exposes the same contents shape, never with corrupt entries", () =>
    Effect.gen(function*() {
      yield* appendAll([good0, good1])
      const log = yield* ToolCallLog.ToolCallLog
      assert.isDefined(log.contents)
      assert.deepStrictEqual(yield* ToolCallLog.contents, { records: [good0, good1], corrupt: [] })
      assert.deepStrictEqual(yield* ToolCallLog.readContents(log), { records: [good0, good1], corrupt: [] })
    }).pipe(Effect.provide(ToolCallLogMemory.layer)))

  it.effect("issue 8 item 14 / D-18: readContents reads a service that has only append and records", () =>
    Effect.gen(function*() {
      const bare: ToolCallLog.Service = { append: () => Effect.void, records: Effect.succeed([good0]) }
      assert.deepStrictEqual(yield* ToolCallLog.readContents(bare), { records: [good0], corrupt: [] })
    }))
})

describe("issue 8 item 14 / issue 11 item 3: layerLibsql options and opening", () => {
  const rule = "tool call log url must be a libSQL URL (\"file:<path>\", \":memory:\" or a server URL)"
  const cases: ReadonlyArray<readonly [string, unknown, string]> = [
    ["an empty string", "", `${rule}, not an empty string`],
    ["a file: URL without a path", "file:", `${rule}, not a file: URL without a path`],
    ["file:// without a path", "file://", `${rule}, not a file: URL without a path`],
    ["file:?mode=ro without a path", "file:?mode=ro", `${rule}, not a file: URL without a path`],
    ["undefined", undefined, `${rule}, not undefined`],
    ["null", null, `${rule}, not null`],
    ["a number", 5, `${rule}, not number`],
    ["a NUL character", `file:${path.join(tmp, "log\u0000.db")}`, `${rule}, not a string containing a NUL character`]
  ]
  for (const [name, url, message] of cases) {
    it.effect(`issue 8 item 14 / D-18: a url that is ${name} is refused at layer build`, () =>
      Effect.gen(function*() {
        const before = fs.readdirSync(tmp).length
        const error = yield* buildError(ToolCallLogSql.layerLibsql({ url } as ToolCallLogSql.LibsqlOptions))
        assert.strictEqual(error.message, message)
        assert.deepStrictEqual(error.reason, { _tag: "InvalidOption", option: "url" })
        assert.strictEqual(fs.readdirSync(tmp).length, before, "no file was created")
        const client = yield* buildError(ToolCallLogSql.layerLibsqlClient({ url } as ToolCallLogSql.LibsqlOptions))
        assert.strictEqual(client.message, message)
      }))
  }

  it.effect("issue 8 item 14 / D-18: options that cannot be read, and a non-string authToken, are refused", () =>
    Effect.gen(function*() {
      const hostile = Object.defineProperty({}, "url", {
        get: () => {
          throw new Error("no url")
        }
      }) as ToolCallLogSql.LibsqlOptions
      const error = yield* buildError(ToolCallLogSql.layerLibsql(hostile))
      assert.strictEqual(error.message, "tool call log options could not be read: no url")
      assert.deepStrictEqual(error.reason, { _tag: "InvalidOption", option: "url" })
      const missing = yield* buildError(ToolCallLogSql.layerLibsql(null as unknown as ToolCallLogSql.LibsqlOptions))
      assert.isTrue(missing.message.startsWith("tool call log options could not be read: "), missing.message)
      const token = yield* buildError(
        ToolCallLogSql.layerLibsql({ url: ":memory:", authToken: 5 } as unknown as ToolCallLogSql.LibsqlOptions)
      )
      assert.strictEqual(token.message, "tool call log authToken must be a string, not number")
      assert.deepStrictEqual(token.reason, { _tag: "InvalidOption", option: "authToken" })
    }))

  it.effect("issue 8 item 14 / D-18: the refusal is a failure of the layer, not a defect, through Effect.provide", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(readAll.pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url: "" }))))
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(readAll.pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url: "" }))))
      assert.strictEqual(error._tag, "ToolCallLogError")
      assert.deepStrictEqual(error.reason, { _tag: "InvalidOption", option: "url" })
    }))

  it.effect("D-16: a directory that does not exist is a ToolCallLogError at layer build", () =>
    Effect.gen(function*() {
      const file = path.join(tmp, "missing-dir", "log.db")
      const error = yield* buildError(ToolCallLogSql.layerLibsql({ url: `file:${file}?authToken=secret` }))
      assert.strictEqual(
        error.message,
        `tool call log could not open "file:${file}": ` +
          `ConnectionFailed("Unable to open connection to local database ${file}: 14")`
      )
      assert.isFalse(error.message.includes("secret"), "the URL's query is not printed")
    }))

  it.effect("D-16: a file that is not a database is a ToolCallLogError at layer build", () =>
    Effect.gen(function*() {
      const file = freshFile()
      fs.writeFileSync(file, "not a database ".repeat(100))
      const error = yield* buildError(ToolCallLogSql.layerLibsql({ url: `file:${file}` }))
      assert.strictEqual(error.message, `tool call log could not open "file:${file}": SQLITE_NOTADB: file is not a database`)
    }))

  it.effect("issue 11 item 3 / D-18: a libSQL :memory: log keeps its table across the migration's transaction", () =>
    Effect.gen(function*() {
      yield* appendAll([good0, good1])
      assert.deepStrictEqual(yield* readAll, [good0, good1])
    }).pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url: ":memory:" }))))

  it.effect("issue 11 item 3 / D-18: two libSQL :memory: logs are separate databases", () =>
    Effect.gen(function*() {
      yield* appendAll([good0]).pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url: ":memory:" })))
      assert.deepStrictEqual(yield* readAll.pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url: ":memory:" }))), [])
    }))

  it.effect("D-18: a libSQL file log is in WAL mode, and releasing the layer closes the database", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const url = `file:${file}`
      const mode = yield* Effect.gen(function*() {
        yield* appendAll([good0])
        assert.isTrue(fs.existsSync(`${file}-wal`), "the write-ahead log exists while the database is open")
        const sql = yield* SqlClient.SqlClient
        return yield* sql.unsafe<{ readonly journal_mode: unknown }>("PRAGMA journal_mode")
      }).pipe(Effect.provide(ToolCallLogSql.layer.pipe(Layer.provideMerge(ToolCallLogSql.layerLibsqlClient({ url })))))
      assert.deepStrictEqual(mode, [{ journal_mode: "wal" }])
      assert.isFalse(fs.existsSync(`${file}-wal`), "closing the layer closed (and checkpointed) the database")
      assert.deepStrictEqual(yield* readAll.pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url }))), [good0])
    }))

  it.effect("issue 11 item 3 / D-18: a file log reopened through layerLibsql reads every record, in seq order", () =>
    Effect.gen(function*() {
      const url = `file:${freshFile()}`
      yield* appendAll([good0]).pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url })))
      yield* appendAll([good1]).pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url })))
      assert.deepStrictEqual(yield* readAll.pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url }))), [good0, good1])
    }))
})
