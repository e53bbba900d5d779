/**
 * The log's records and codec (SCHED-7, D-18, JSON-2/6), and the failing test double. Every backend
 * runs the shared suite in `ToolCallLog.backends.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as ToolCallLog from "../src/ToolCallLog.js"
import * as ToolResultModule from "../src/ToolResult.js"
import * as Presentation from "../src/Presentation.js"
import {
  approvalSample,
  asked1,
  asked2,
  call0,
  call1,
  decided1,
  decided2,
  depthOf,
  late2,
  layerFailingFrom,
  nest,
  result0,
  result1,
  sample
} from "./fixtures/toolCallLog.js"

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
          "\"tool/code-dispatch-start\" | \"tool/code-dispatch\" | \"approval/asked\" | \"approval/decided\" | \"approval/late\", actual \"nope\""
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

describe("test/fixtures/toolCallLog", () => {
  it.effect("D-16: layerFailingFrom fails the n-th append onwards and stores the others", () =>
    Effect.gen(function*() {
      const log = yield* ToolCallLog.ToolCallLog
      yield* log.append(call0)
      assert.strictEqual(yield* failMessage(log.append(call1)), "tool call log append failed: injected failure")
      assert.deepStrictEqual(yield* log.records, [call0])
    }).pipe(Effect.provide(layerFailingFrom(1))))
})

describe("issue 10: approval audit records", () => {
  it.effect("D-18: the three approval records validate to detached frozen copies; undeclared keys (argument values) are dropped", () =>
    Effect.gen(function*() {
      for (const record of [asked1, decided1, asked2, decided2, late2]) {
        assert.deepStrictEqual(yield* ToolCallLog.validate(record), record)
      }
      const stray = yield* ToolCallLog.validate({ ...asked1, arguments: { path: "/secret" } })
      assert.deepStrictEqual(stray, asked1)
      assert.isTrue(Object.isFrozen(stray))
    }))

  it.effect("APPR-6 / T-APPR-033: outcomes and deciders are closed vocabularies", () =>
    Effect.gen(function*() {
      const bad: ReadonlyArray<unknown> = [
        { ...decided1, outcome: "maybe" },
        { ...decided1, by: "someone" },
        { ...decided1, by: "grant:" },
        { ...late2, by: "policy" },
        (({ argumentsDigest: _, ...rest }) => rest)(asked1),
        (({ agent: _, ...rest }) => rest)(asked1)
      ]
      const messages: Array<string> = []
      for (const record of bad) messages.push(yield* failMessage(ToolCallLog.validate(record)))
      assert.deepStrictEqual(messages, [
        "invalid tool call log record: outcome: Expected \"allowed-once\", actual \"maybe\"",
        "invalid tool call log record: by: Expected \"answerer\", actual \"someone\"",
        "invalid tool call log record: by: Expected \"answerer\", actual \"grant:\"",
        "invalid tool call log record: by: Expected \"answerer\", actual \"policy\"",
        "invalid tool call log record: argumentsDigest is missing",
        "invalid tool call log record: agent is missing"
      ])
      for (const by of ["answerer", "policy", "abort", "error", "grant:g-7"] as const) {
        yield* ToolCallLog.validate({ ...decided2, by })
      }
    }))

  it("the audit query groups records by approval id in first-appearance order, ignoring every other record", () => {
    const decidedOnly: ToolCallLog.ApprovalDecidedRecord = { _tag: "approval/decided", id: "ap-9", outcome: "rejected", by: "policy" }
    const again: ToolCallLog.ApprovalDecidedRecord = { ...decided1, outcome: "rejected" }
    assert.deepStrictEqual(ToolCallLog.approvalAudit([...approvalSample, decidedOnly, again]), [
      { id: "ap-1", asked: asked1, decided: decided1, late: [] },
      { id: "ap-2", asked: asked2, decided: decided2, late: [late2] },
      { id: "ap-9", decided: decidedOnly, late: [] }
    ])
    assert.deepStrictEqual(ToolCallLog.approvalAudit(sample), [])
    assert.deepStrictEqual(ToolCallLog.approvalTags, ["approval/asked", "approval/decided", "approval/late"])
    assert.deepStrictEqual(approvalSample.filter(ToolCallLog.isApprovalRecord), [asked1, decided1, asked2, decided2, late2])
  })

  it("D-18: replay skips approval records for cards (the same cards with or without them)", () => {
    const lookup = () => undefined
    const withAudit = Presentation.replay(approvalSample, lookup)
    assert.deepStrictEqual(withAudit, Presentation.replay([call0, result0], lookup))
    assert.strictEqual(withAudit.length, 1)
  })
})
