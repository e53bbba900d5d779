import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogSqlite from "../layers/ToolCallLogSqlite.js"
import type { JsonValue } from "../src/Json.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolResultModule from "../src/ToolResult.js"
import { layerFailingFrom } from "./fixtures/toolCallLog.js"

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tool-call-log-test-"))
let fileCount = 0
const freshFile = (): string => path.join(tmp, `log-${++fileCount}.db`)

afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
})

const success: ToolResult = {
  isError: false,
  value: { secret: "canonical-value-xyz" },
  content: [{ type: "text", text: "read 3 lines" }],
  meta: { path: "a.ts", lines: [1, 2, 3], nested: { ok: true, none: null } }
}

const denied: ToolResult = ToolResultModule.denial("the user rejected tool \"rm\"", {
  name: "ToolDeniedError",
  code: "DENIED"
})

const call0: LogRecord = {
  _tag: "tool/call",
  batchId: "b1",
  index: 0,
  callId: "c0",
  name: "read",
  agent: "main",
  arguments: "{\"path\":\"a.ts\"}"
}
const call1: LogRecord = { _tag: "tool/call", batchId: "b1", index: 1, callId: "c1", name: "rm", arguments: "" }
const result0 = ToolCallLog.resultRecord("b1", 0, "c0", success)
const result1 = ToolCallLog.resultRecord("b1", 1, "c1", denied)
const dispatchStart: LogRecord = {
  _tag: "tool/code-dispatch-start",
  rootCallId: "c2",
  parentCallId: "c2",
  subCallId: "c2:code:1",
  name: "read",
  arguments: { path: "b.ts", n: [1, "x", null, false] }
}
const dispatch: LogRecord = {
  _tag: "tool/code-dispatch",
  rootCallId: "c2",
  parentCallId: "c2",
  subCallId: "c2:code:1",
  name: "read",
  arguments: { path: "b.ts", n: [1, "x", null, false] },
  isError: false,
  content: [{ type: "image", data: "aGVsbG8=", mimeType: "image/png" }, { type: "reasoning", text: "hm" }]
}
const sample: ReadonlyArray<LogRecord> = [call0, call1, dispatchStart, dispatch, result0, result1]

const appendAll = (records: ReadonlyArray<LogRecord>) =>
  Effect.flatMap(ToolCallLog.ToolCallLog, (log) => Effect.forEach(records, (record) => log.append(record)))

const readAll = Effect.flatMap(ToolCallLog.ToolCallLog, (log) => log.records)

const nest = (depth: number): JsonValue => {
  let value: JsonValue = "leaf"
  for (let i = 0; i < depth; i++) value = { k: value }
  return value
}

const depthOf = (value: unknown): number => {
  let depth = 0
  let current = value
  while (typeof current === "object" && current !== null && "k" in current) {
    current = (current as { readonly k: unknown }).k
    depth++
  }
  return current === "leaf" ? depth : -1
}

const failMessage = <A, R>(effect: Effect.Effect<A, ToolCallLog.ToolCallLogError, R>) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.instanceOf(error, ToolCallLog.ToolCallLogError)
    assert.strictEqual(error._tag, "ToolCallLogError")
    return error.message
  })

describe("ToolCallLog records", () => {
  it("SCHED-7: resultRecord keeps content, isError, error info and meta, never the value", () => {
    assert.deepStrictEqual(result0, {
      _tag: "tool/result",
      batchId: "b1",
      index: 0,
      callId: "c0",
      content: [{ type: "text", text: "read 3 lines" }],
      isError: false,
      meta: { path: "a.ts", lines: [1, 2, 3], nested: { ok: true, none: null } }
    })
    assert.deepStrictEqual(result1, {
      _tag: "tool/result",
      batchId: "b1",
      index: 1,
      callId: "c1",
      content: [{ type: "text", text: "Error: the user rejected tool \"rm\"" }],
      isError: true,
      error: { name: "ToolDeniedError", code: "DENIED" }
    })
  })

  it("SCHED-7: error only when the result has error.info, meta only when present", () => {
    const plain = ToolCallLog.resultRecord("b", 2, "c", ToolResultModule.failure({ message: "boom" }))
    assert.deepStrictEqual(Object.keys(plain), ["_tag", "batchId", "index", "callId", "content", "isError"])
    const withMeta = ToolCallLog.resultRecord("b", 3, "c", { ...ToolResultModule.failure({ message: "x" }), meta: 0 })
    assert.deepStrictEqual(withMeta.meta, 0)
    assert.isFalse("error" in withMeta)
    const noMeta = ToolCallLog.resultRecord("b", 4, "c", { isError: false, value: 1, content: [] })
    assert.isFalse("meta" in noMeta)
    assert.isFalse("value" in noMeta)
  })

  it("JSON-2: JsonValueSchema accepts lossless JSON only", () => {
    const is = Schema.is(ToolCallLog.JsonValueSchema)
    assert.isTrue(is({ a: [1, "x", null, true] }))
    assert.isFalse(is(-0))
    assert.isFalse(is(Number.NaN))
    assert.isFalse(is({ a: undefined }))
    assert.isFalse(is(new Date(0)))
  })

  it("D-3: ContentSchema decodes text, image and reasoning blocks only", () => {
    const is = Schema.is(ToolCallLog.ToolResultRecord.fields.content)
    assert.isTrue(is([{ type: "text", text: "a" }, { type: "image", data: "x", mimeType: "image/png" }]))
    assert.isFalse(is([{ type: "audio", data: "x" }]))
    assert.isFalse(is([{ type: "image", data: "x" }]))
  })

  it.effect("D-18: validate reports the first problem with an exact message", () =>
    Effect.gen(function*() {
      const base = { _tag: "tool/result", batchId: "b", index: 0, callId: "c", content: [], isError: false }
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...base, content: [{ type: "tex", text: "a" }] })),
        "invalid tool call log record: content[0].type: Expected \"text\" | \"image\" | \"reasoning\", actual \"tex\""
      )
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...base, content: [{ type: "image", data: "a" }] })),
        "invalid tool call log record: content[0].mimeType is missing"
      )
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...base, index: -1 })),
        "invalid tool call log record: index: Expected a non-negative number, actual -1"
      )
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...base, index: 1.5 })),
        "invalid tool call log record: index: Expected an integer, actual 1.5"
      )
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...base, error: { name: "X" } })),
        "invalid tool call log record: error.code is missing"
      )
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ _tag: "nope" })),
        "invalid tool call log record: _tag: Expected \"tool/call\" | \"tool/result\" | " +
          "\"tool/code-dispatch-start\" | \"tool/code-dispatch\", actual \"nope\""
      )
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...call0, agent: undefined })),
        "tool call log record must be lossless JSON"
      )
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...base, meta: Number.NaN })),
        "tool call log record must be lossless JSON"
      )
      const hostile = Object.defineProperty({ ...base }, "callId", {
        enumerable: true,
        get: () => {
          throw new Error("boom")
        }
      })
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate(hostile)),
        "tool call log record could not be read: boom"
      )
    }))

  it.effect("JSON-6: a 100,000-deep or huge value in the wrong field is reported without printing it", () =>
    Effect.gen(function*() {
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...call0, arguments: nest(100_000) })),
        "invalid tool call log record: arguments: Expected string, actual an object"
      )
      assert.strictEqual(
        yield* failMessage(ToolCallLog.validate({ ...call0, arguments: Array.from({ length: 100_000 }, (_, i) => i) })),
        "invalid tool call log record: arguments: Expected string, actual an array"
      )
      const deepText = `{"_tag":"tool/call","batchId":${"[".repeat(100_000)}${"]".repeat(100_000)}}`
      assert.strictEqual(
        yield* failMessage(ToolCallLog.decodeJson(deepText)),
        "invalid stored tool call log record: batchId: Expected string, actual an array"
      )
    }))

  it.effect("D-18: encodeJson/decodeJson round-trip, and decodeJson reports bad text exactly", () =>
    Effect.gen(function*() {
      for (const record of sample) {
        const text = yield* ToolCallLog.encodeJson(record)
        assert.strictEqual(text, JSON.stringify(record))
        assert.deepStrictEqual(yield* ToolCallLog.decodeJson(text), record)
      }
      assert.strictEqual(
        yield* failMessage(ToolCallLog.decodeJson("{\"_tag\":\"tool/call\"}")),
        "invalid stored tool call log record: batchId is missing"
      )
      const notJson = yield* failMessage(ToolCallLog.decodeJson("{oops"))
      assert.isTrue(notJson.startsWith("stored tool call log record is not JSON: "), notJson)
    }))

  it.effect("JSON-6: encodeJson writes 100,000-deep meta iteratively, identical to JSON.stringify's format", () =>
    Effect.gen(function*() {
      const shallow = { ...result0, meta: nest(50) }
      assert.strictEqual(yield* ToolCallLog.encodeJson(shallow), JSON.stringify(shallow))
      const deep = { ...result0, meta: nest(100_000) }
      const text = yield* ToolCallLog.encodeJson(deep)
      assert.isTrue(text.startsWith("{\"_tag\":\"tool/result\",\"batchId\":\"b1\",\"index\":0,\"callId\":\"c0\","))
      assert.isTrue(text.endsWith("\"leaf\"" + "}".repeat(100_001)))
      const decoded = yield* ToolCallLog.decodeJson(text)
      assert.strictEqual(decoded._tag, "tool/result")
      assert.strictEqual(depthOf((decoded as ToolCallLog.ToolResultRecord).meta), 100_000)
    }))
})

interface Backend {
  readonly name: string
  readonly layer: () => Layer.Layer<ToolCallLog.ToolCallLog, ToolCallLog.ToolCallLogError>
}

const backends: ReadonlyArray<Backend> = [
  { name: "memory", layer: () => ToolCallLogMemory.layer },
  { name: "sqlite :memory:", layer: () => ToolCallLogSqlite.layer({ filename: ":memory:" }) },
  { name: "sqlite file", layer: () => ToolCallLogSqlite.layer({ filename: freshFile() }) }
]

for (const backend of backends) {
  describe(`ToolCallLog (${backend.name})`, () => {
    it.effect("SCHED-7: records come back in append order, exactly", () =>
      Effect.gen(function*() {
        yield* appendAll(sample)
        const records = yield* readAll
        assert.deepStrictEqual(records, sample)
        assert.deepStrictEqual(records.map((record) => record._tag), [
          "tool/call",
          "tool/call",
          "tool/code-dispatch-start",
          "tool/code-dispatch",
          "tool/result",
          "tool/result"
        ])
      }).pipe(Effect.provide(backend.layer())))

    it.effect("SCHED-7: an empty log has no records", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* readAll, [])
      }).pipe(Effect.provide(backend.layer())))

    it.effect("SCHED-7 / PRES-3: the canonical value is never persisted, even when a record carries one", () =>
      Effect.gen(function*() {
        const smuggled = { ...result0, value: success.isError ? null : success.value } as unknown as LogRecord
        yield* appendAll([result0, smuggled])
        const records = yield* readAll
        assert.deepStrictEqual(records, [result0, result0])
        for (const record of records) assert.isFalse("value" in record)
        assert.isFalse(JSON.stringify(records).includes("canonical-value-xyz"))
      }).pipe(Effect.provide(backend.layer())))

    it.effect("D-18: undeclared content-block keys and __proto__ keys survive", () =>
      Effect.gen(function*() {
        const meta = JSON.parse("{\"__proto__\":{\"polluted\":true},\"x\":1}") as JsonValue
        const content = [{ type: "text", text: "a", cacheControl: "ephemeral" }] as unknown as ToolResult["content"]
        const record = ToolCallLog.resultRecord("b", 0, "c", { isError: false, value: 1, content, meta })
        yield* appendAll([record])
        const [stored] = yield* readAll
        const storedMeta = (stored as ToolCallLog.ToolResultRecord).meta as object
        assert.deepStrictEqual(Object.keys(storedMeta), ["__proto__", "x"])
        assert.strictEqual(Object.getPrototypeOf(storedMeta), Object.prototype)
        assert.strictEqual(({} as { polluted?: boolean }).polluted, undefined)
        assert.deepStrictEqual((stored as ToolCallLog.ToolResultRecord).content, content)
      }).pipe(Effect.provide(backend.layer())))

    it.effect("D-18: stored records are detached and deep-frozen", () =>
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
      }).pipe(Effect.provide(backend.layer())))

    it.effect("D-18: an invalid record fails with ToolCallLogError and is not stored", () =>
      Effect.gen(function*() {
        const log = yield* ToolCallLog.ToolCallLog
        yield* log.append(call0)
        const bad = { ...call1, arguments: { not: "a string" } } as unknown as LogRecord
        assert.strictEqual(
          yield* failMessage(log.append(bad)),
          "invalid tool call log record: arguments: Expected string, actual {\"not\":\"a string\"}"
        )
        assert.deepStrictEqual(yield* log.records, [call0])
      }).pipe(Effect.provide(backend.layer())))

    it.effect("JSON-6: a 100,000-deep meta round-trips", () =>
      Effect.gen(function*() {
        yield* appendAll([{ ...result0, meta: nest(100_000) }])
        const [stored] = yield* readAll
        assert.strictEqual(depthOf((stored as ToolCallLog.ToolResultRecord).meta), 100_000)
      }).pipe(Effect.provide(backend.layer())))

    it.effect("SCHED-5: concurrent appends all land, each exactly once", () =>
      Effect.gen(function*() {
        const log = yield* ToolCallLog.ToolCallLog
        const calls = Array.from({ length: 40 }, (_, i): LogRecord => ({ ...call1, index: i, callId: `c${i}` }))
        yield* Effect.forEach(calls, (record) => log.append(record), { concurrency: "unbounded" })
        const records = yield* log.records
        assert.strictEqual(records.length, 40)
        assert.deepStrictEqual(
          records.map((record) => (record as ToolCallLog.ToolCallRecord).callId).sort(),
          calls.map((record) => (record as ToolCallLog.ToolCallRecord).callId).sort()
        )
      }).pipe(Effect.provide(backend.layer())))
  })
}

const rawRows = (filename: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ readonly seq: number; readonly tag: string; readonly payload: string }>`
      SELECT seq, tag, payload FROM tool_call_log ORDER BY seq`
  }).pipe(Effect.provide(SqliteClient.layer({ filename })))

const rawExec = (filename: string, statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
    Effect.provide(SqliteClient.layer({ filename }))
  )

describe("ToolCallLogSqlite", () => {
  it.effect("D-18: a file log survives closing and reopening the layer", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      yield* appendAll([call0, call1]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      assert.isTrue(fs.existsSync(filename))
      assert.isFalse(fs.existsSync(`${filename}-wal`), "closing the layer closes the database")
      const reopened = yield* readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      assert.deepStrictEqual(reopened, [call0, call1])
      yield* appendAll([result0, result1]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      const third = yield* readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      assert.deepStrictEqual(third, [call0, call1, result0, result1])
    }))

  it.effect("D-18: rows hold seq, tag and the record's JSON text; no value anywhere", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      yield* appendAll(sample).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      const rows = yield* rawRows(filename)
      assert.deepStrictEqual(
        rows.map((row) => [row.seq, row.tag, row.payload]),
        sample.map((record, i) => [i + 1, record._tag, JSON.stringify(record)])
      )
      assert.isFalse(rows.some((row) => row.payload.includes("canonical-value-xyz")))
    }))

  it.effect("D-18: layerFromClient logs through an existing SqlClient", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      const layer = ToolCallLogSqlite.layerFromClient.pipe(Layer.provide(SqliteClient.layer({ filename })))
      yield* appendAll([call0]).pipe(Effect.provide(layer))
      assert.deepStrictEqual(yield* readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename }))), [call0])
    }))

  it.effect("D-16: a directory that does not exist is a ToolCallLogError", () =>
    Effect.gen(function*() {
      const filename = path.join(tmp, "missing-dir", "log.db")
      assert.strictEqual(
        yield* failMessage(readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))),
        `tool call log could not open "${filename}": Cannot open database because the directory does not exist`
      )
    }))

  it.effect("D-16: a file that is not a database is a ToolCallLogError", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      fs.writeFileSync(filename, "not a database ".repeat(100))
      assert.strictEqual(
        yield* failMessage(readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))),
        `tool call log could not open "${filename}": file is not a database`
      )
    }))

  it.effect("D-16: a storage failure during append and read is a ToolCallLogError", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      yield* Effect.gen(function*() {
        const log = yield* ToolCallLog.ToolCallLog
        yield* log.append(call0)
        yield* rawExec(filename, "DROP TABLE tool_call_log")
        assert.strictEqual(
          yield* failMessage(log.append(call1)),
          "tool call log append failed: no such table: tool_call_log"
        )
        assert.strictEqual(yield* failMessage(log.records), "tool call log read failed: no such table: tool_call_log")
      }).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
    }))

  it.effect("issue 8 item 14 / D-16: corrupt stored rows are skipped by records and reported with their seq", () =>
    Effect.gen(function*() {
      const open = (filename: string) =>
        Effect.all([readAll, ToolCallLog.contents]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      const notJson = freshFile()
      yield* appendAll([call0]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename: notJson })))
      yield* rawExec(notJson, "INSERT INTO tool_call_log (tag, payload) VALUES ('tool/call', '{oops')")
      const [records, contents] = yield* open(notJson)
      assert.deepStrictEqual(records, [call0])
      assert.deepStrictEqual(contents.records, [call0])
      assert.deepStrictEqual(contents.corrupt.map((entry) => entry.sequence), [2])
      const reason = contents.corrupt[0]!.reason
      assert.isTrue(reason.startsWith("stored tool call log record is not JSON: "), reason)

      const invalid = freshFile()
      yield* appendAll([call0]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename: invalid })))
      yield* rawExec(invalid, `INSERT INTO tool_call_log (tag, payload) VALUES ('tool/call', '{"_tag":"tool/call"}')`)
      yield* appendAll([call1]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename: invalid })))
      assert.deepStrictEqual(yield* open(invalid), [[call0, call1], {
        records: [call0, call1],
        corrupt: [{ sequence: 2, reason: "invalid stored tool call log record: batchId is missing" }]
      }])

      const mismatch = freshFile()
      yield* appendAll([call0]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename: mismatch })))
      const payload = JSON.stringify(call1)
      yield* rawExec(mismatch, `INSERT INTO tool_call_log (tag, payload) VALUES ('tool/result', '${payload}')`)
      assert.deepStrictEqual((yield* open(mismatch))[1].corrupt, [
        { sequence: 2, reason: "stored tool call log record has tag \"tool/result\" but a \"tool/call\" payload" }
      ])
    }))
})

describe("test/fixtures/toolCallLog", () => {
  it.effect("D-16: layerFailingFrom fails the n-th append onwards and stores the others", () =>
    Effect.gen(function*() {
      const log = yield* ToolCallLog.ToolCallLog
      yield* log.append(call0)
      assert.strictEqual(yield* failMessage(log.append(call1)), "tool call log append failed: injected failure")
      assert.deepStrictEqual(yield* log.records, [call0])
    }).pipe(Effect.provide(layerFailingFrom(1))))
})
