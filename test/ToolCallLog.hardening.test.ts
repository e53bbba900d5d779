/**
 * Issue 8, the log's items: `__proto__` keys stay own keys through every record kind and backend
 * (item 8, JSON-5), and the SQLite log survives corrupt rows, foreign tables and bad filenames
 * (item 14, D-18).
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, HashMap, Layer, Logger, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogSqlite from "../layers/ToolCallLogSqlite.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import type { ToolResult } from "../src/ToolResult.js"
import { nullProto, ownProtoKey } from "./fixtures/hostile.js"

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

const rawExec = (filename: string, ...statements: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement))).pipe(
    Effect.provide(SqliteClient.layer({ filename }))
  )

/** The typed failure of building `layer` (a defect fails the test). */
const buildError = <E>(layer: Layer.Layer<ToolCallLog.ToolCallLog, E>) =>
  Effect.map(Effect.flip(Layer.build(layer).pipe(Effect.scoped)), (error) => {
    assert.instanceOf(error, ToolCallLog.ToolCallLogError)
    const typed = error as ToolCallLog.ToolCallLogError
    assert.strictEqual(typed._tag, "ToolCallLogError")
    return typed
  })

/** Asserts `value` has an own data property `__proto__` holding `expected`, and an intact prototype. */
const assertOwnProto = (value: unknown, expected: unknown, prototype: object | null = Object.prototype) => {
  assert.strictEqual(Object.getPrototypeOf(value), prototype, "the prototype is untouched")
  const descriptor = Object.getOwnPropertyDescriptor(value, "__proto__")
  assert.isDefined(descriptor, "__proto__ is an own key")
  assert.isTrue("value" in descriptor! && descriptor.enumerable === true, "__proto__ is an enumerable data property")
  assert.deepStrictEqual(descriptor!.value, expected)
  for (const key of Object.keys(expected as object)) {
    assert.isFalse(key in (value as object) && !Object.hasOwn(value as object, key), `${key} is not inherited`)
  }
}

// ---------------------------------------------------------------------------------------------
// item 8
// ---------------------------------------------------------------------------------------------

const protoBlock = () => ({ type: "text", text: "a", ...ownProtoKey({ polluted: true }) })
const protoImage = () => ({ type: "image", data: "aGk=", mimeType: "image/png", ...ownProtoKey({ role: "admin" }) })
const protoError = () => ({ name: "Denied", code: "DENIED", ...ownProtoKey({ admin: true }) })
const protoMeta = () => ({ nested: { ...ownProtoKey({ deep: [1] }) }, ...ownProtoKey({ top: "x" }) })

const protoRecords = (): ReadonlyArray<Record<string, unknown>> => [
  {
    _tag: "tool/result",
    batchId: "b",
    index: 0,
    callId: "c0",
    content: [protoBlock(), protoImage()],
    isError: true,
    error: protoError(),
    meta: protoMeta()
  },
  {
    _tag: "tool/code-dispatch",
    rootCallId: "r",
    parentCallId: "r",
    subCallId: "r:1",
    name: "read",
    arguments: { ...ownProtoKey({ path: "/etc" }) },
    isError: false,
    content: [{ type: "reasoning", text: "hm", ...ownProtoKey({ cache: { ttl: 1 } }) }]
  },
  {
    _tag: "tool/code-dispatch-start",
    rootCallId: "r",
    parentCallId: "r",
    subCallId: "r:1",
    name: "read",
    arguments: [{ ...ownProtoKey({ path: "/etc" }) }]
  }
]

const assertProtoRecords = (records: ReadonlyArray<LogRecord>) => {
  assert.strictEqual(records.length, 3)
  const [result, dispatch, start] = records as ReadonlyArray<Record<string, any>>
  assert.strictEqual(result!._tag, "tool/result")
  assertOwnProto(result!.content[0], { polluted: true })
  assertOwnProto(result!.content[1], { role: "admin" })
  assertOwnProto(result!.error, { admin: true })
  assertOwnProto(result!.meta, { top: "x" })
  assertOwnProto(result!.meta.nested, { deep: [1] })
  assertOwnProto(dispatch!.content[0], { cache: { ttl: 1 } })
  assertOwnProto(dispatch!.arguments, { path: "/etc" })
  assertOwnProto(start!.arguments[0], { path: "/etc" })
  assert.deepStrictEqual(records, protoRecords())
  assert.strictEqual(({} as Record<string, unknown>).polluted, undefined)
}

interface Backend {
  readonly name: string
  readonly layer: () => Layer.Layer<ToolCallLog.ToolCallLog, ToolCallLog.ToolCallLogError>
}

const backends: ReadonlyArray<Backend> = [
  { name: "memory", layer: () => ToolCallLogMemory.layer },
  { name: "sqlite :memory:", layer: () => ToolCallLogSqlite.layer({ filename: ":memory:" }) },
  { name: "sqlite file", layer: () => ToolCallLogSqlite.layer({ filename: freshFile() }) }
]

describe("issue 8 item 8: __proto__ keys stay own keys in the log", () => {
  for (const backend of backends) {
    it.effect(
      `issue 8 item 8 / JSON-5: content blocks, error, meta and arguments keep own __proto__ keys (${backend.name})`,
      () =>
        Effect.gen(function*() {
          yield* appendAll(protoRecords())
          assertProtoRecords(yield* readAll)
          assertProtoRecords((yield* ToolCallLog.contents).records)
        }).pipe(Effect.provide(backend.layer()))
    )
  }

  it.effect("issue 8 item 8 / JSON-5: a reopened SQLite file reads own __proto__ keys back", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      yield* appendAll(protoRecords()).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      assertProtoRecords(yield* readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename }))))
    }))

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

  it.effect("issue 8 item 8 / JSON-5: a null-prototype block is stored with Object.prototype and its own keys", () =>
    Effect.gen(function*() {
      const block = nullProto({ type: "text", text: "a", ...ownProtoKey({ polluted: true }) })
      assert.isTrue(Object.hasOwn(block, "__proto__"))
      for (const backend of backends) {
        const [stored] = yield* Effect.zipRight(
          appendAll([{ _tag: "tool/result", batchId: "b", index: 0, callId: "c", content: [block], isError: false }]),
          readAll
        ).pipe(Effect.provide(backend.layer()))
        assertOwnProto((stored as ToolCallLog.ToolResultRecord).content[0], { polluted: true })
      }
    }))

  it.effect("issue 8 item 8 / SCHED-7: resultRecord of a result whose block has an own __proto__ key round-trips", () =>
    Effect.gen(function*() {
      const result = {
        isError: false,
        value: 1,
        content: [protoBlock()],
        meta: protoMeta()
      } as unknown as ToolResult
      const record = ToolCallLog.resultRecord("b", 0, "c", result)
      for (const backend of backends) {
        const [stored] = yield* Effect.zipRight(appendAll([record]), readAll).pipe(Effect.provide(backend.layer()))
        assert.deepStrictEqual(stored, record)
        assertOwnProto((stored as ToolCallLog.ToolResultRecord).content[0], { polluted: true })
      }
    }))
})

// ---------------------------------------------------------------------------------------------
// item 14
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

const UNION = "\"tool/call\" | \"tool/result\" | \"tool/code-dispatch-start\" | \"tool/code-dispatch\""

const collectWarnings = () => {
  const warnings: Array<{ readonly level: string; readonly message: unknown; readonly sequence: unknown }> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    warnings.push({
      level: logLevel.label,
      message: Array.isArray(message) ? message[0] : message,
      sequence: Option.getOrUndefined(HashMap.get(annotations, "sequence"))
    })
  })
  return { warnings, layer: Logger.add(logger) }
}

describe("issue 8 item 14: corrupt SQLite rows", () => {
  it.effect("issue 8 item 14 / D-18: contents returns the good records and one { sequence, reason } per bad row", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      yield* appendAll([good0]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      yield* rawExec(
        filename,
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
      yield* appendAll([good1]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      yield* rawExec(filename, "INSERT INTO tool_call_log (tag, payload) VALUES ('tool/call', x'7b7d')")
      yield* appendAll([good2]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))

      const contents = yield* ToolCallLog.contents.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      assert.deepStrictEqual(contents.records, [good0, good1, good2])
      const notJson = contents.corrupt[0]!
      assert.strictEqual(notJson.sequence, 2)
      assert.isTrue(notJson.reason.startsWith("stored tool call log record is not JSON: "), notJson.reason)
      assert.deepStrictEqual(contents.corrupt.slice(1), [
        { sequence: 3, reason: "invalid stored tool call log record: batchId is missing" },
        {
          sequence: 4,
          reason: "stored tool call log record has tag \"tool/result\" but a \"tool/call\" payload"
        },
        { sequence: 5, reason: `invalid stored tool call log record: _tag: Expected ${UNION}, actual "nope"` },
        { sequence: 6, reason: "invalid stored tool call log record: _tag is missing" },
        { sequence: 7, reason: "invalid stored tool call log record: _tag is missing" },
        {
          sequence: 8,
          reason: "invalid stored tool call log record: Expected ToolCallRecord | ToolResultRecord | " +
            "CodeDispatchStartRecord | CodeDispatchRecord, actual 5"
        },
        { sequence: 9, reason: "invalid stored tool call log record: content: Expected lossless JSON" },
        { sequence: 11, reason: "stored tool call log row has a blob payload, expected JSON text" }
      ])
      assert.strictEqual(Object.getPrototypeOf(contents.records[2]), Object.prototype)
      assert.strictEqual(({} as Record<string, unknown>).batchId, undefined)
    }))

  it.effect("issue 8 item 14 / D-18: records returns the good records and logs one warning per bad row", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      yield* appendAll([good0]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      yield* rawExec(filename, insert("tool/call", "{oops"), insert("nope", "{\"_tag\":\"nope\"}"))
      yield* appendAll([good1]).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
      const { layer, warnings } = collectWarnings()
      const records = yield* readAll.pipe(Effect.provide(Layer.merge(ToolCallLogSqlite.layer({ filename }), layer)))
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
    }))

  it.effect("issue 8 item 14 / D-18: NULL tags and payloads of a table without NOT NULL are reported per row", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      yield* rawExec(
        filename,
        "CREATE TABLE tool_call_log (SEQ integer PRIMARY KEY, payload text, Tag Text)",
        insert("tool/call", JSON.stringify(good0)),
        insert("tool/call", null),
        insert(null, JSON.stringify(good2)),
        insert(null, null)
      )
      const { records, corrupt } = yield* Effect.zipLeft(ToolCallLog.contents, appendAll([good2])).pipe(
        Effect.provide(ToolCallLogSqlite.layer({ filename }))
      )
      assert.deepStrictEqual(records, [good0])
      assert.deepStrictEqual(corrupt, [
        { sequence: 2, reason: "stored tool call log row has NULL payload, expected JSON text" },
        { sequence: 3, reason: "stored tool call log row has NULL tag, expected text" },
        { sequence: 4, reason: "stored tool call log row has NULL tag, expected text" }
      ])
      assert.deepStrictEqual(yield* readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename }))), [good0, good2])
    }))

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

  it.effect("issue 8 item 14 / D-16: a storage failure still fails records and contents", () =>
    Effect.gen(function*() {
      const filename = freshFile()
      yield* Effect.gen(function*() {
        yield* appendAll([good0])
        yield* rawExec(filename, "DROP TABLE tool_call_log")
        const message = "tool call log read failed: no such table: tool_call_log"
        assert.strictEqual((yield* Effect.flip(readAll)).message, message)
        assert.strictEqual((yield* Effect.flip(ToolCallLog.contents)).message, message)
      }).pipe(Effect.provide(ToolCallLogSqlite.layer({ filename })))
    }))
})

describe("issue 8 item 14: a table of a different layout fails at open", () => {
  const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, ReadonlyArray<string>]> = [
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
  ]

  for (const [name, setup, differences] of cases) {
    it.effect(`issue 8 item 14 / D-18: ${name} is a ToolCallLogError naming the table and each difference`, () =>
      Effect.gen(function*() {
        const filename = freshFile()
        yield* rawExec(filename, ...setup)
        const expected = `tool call log table "tool_call_log" has a different layout: ${differences.join("; ")}`
        const opened = yield* buildError(ToolCallLogSqlite.layer({ filename }))
        assert.strictEqual(opened.message, expected)
        assert.deepStrictEqual(opened.reason, { _tag: "TableLayout", table: "tool_call_log", differences })
        const fromClient = yield* buildError(
          ToolCallLogSqlite.layerFromClient.pipe(Layer.provide(SqliteClient.layer({ filename })))
        )
        assert.strictEqual(fromClient.message, expected)
      }))
  }
})

describe("issue 8 item 14: filename", () => {
  const rule = "tool call log filename must be a database file path or \":memory:\""
  const cases: ReadonlyArray<readonly [string, unknown, string]> = [
    ["an empty string", "", `${rule}, not an empty string`],
    ["undefined", undefined, `${rule}, not undefined`],
    ["null", null, `${rule}, not null`],
    ["a number", 5, `${rule}, not number`],
    ["a NUL character", "log\u0000.db", `${rule}, not a string containing a NUL character`]
  ]
  for (const [name, filename, message] of cases) {
    it.effect(`issue 8 item 14 / D-18: a filename that is ${name} is refused at layer build`, () =>
      Effect.gen(function*() {
        const before = fs.readdirSync(tmp).length
        const error = yield* buildError(ToolCallLogSqlite.layer({ filename } as ToolCallLogSqlite.Options))
        assert.strictEqual(error.message, message)
        assert.deepStrictEqual(error.reason, { _tag: "InvalidOption", option: "filename" })
        assert.strictEqual(fs.readdirSync(tmp).length, before, "no file was created")
      }))
  }

  it.effect("issue 8 item 14 / D-18: options that cannot be read are refused at layer build", () =>
    Effect.gen(function*() {
      const hostile = Object.defineProperty({}, "filename", {
        get: () => {
          throw new Error("no filename")
        }
      }) as ToolCallLogSqlite.Options
      const error = yield* buildError(ToolCallLogSqlite.layer(hostile))
      assert.strictEqual(error.message, "tool call log options could not be read: no filename")
      assert.deepStrictEqual(error.reason, { _tag: "InvalidOption", option: "filename" })
      const missing = yield* buildError(ToolCallLogSqlite.layer(null as unknown as ToolCallLogSqlite.Options))
      assert.isTrue(missing.message.startsWith("tool call log options could not be read: "), missing.message)
    }))

  it.effect("issue 8 item 14 / D-18: the refusal is a failure of the layer, not a defect, through Effect.provide", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename: "" }))))
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(readAll.pipe(Effect.provide(ToolCallLogSqlite.layer({ filename: "" }))))
      assert.strictEqual(error._tag, "ToolCallLogError")
      assert.deepStrictEqual(error.reason, { _tag: "InvalidOption", option: "filename" })
    }))
})

