import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogSql from "../layers/ToolCallLogSql.js"
import * as Hostile from "./fixtures/hostile.js"
import type { Content } from "../src/Content.js"
import type { JsonValue } from "../src/Json.js"
import * as Presentation from "../src/Presentation.js"
import type { CallPresentation, CallView, LiveCall, Lookup, ResultProjection, ResultView } from "../src/Presentation.js"
import type { ToolDefinition } from "../src/Tool.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolResultModule from "../src/ToolResult.js"

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "presentation-test-"))
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
})

const text = (value: string): Content => [{ type: "text", text: value }]

const tool = (name: string, overrides: Partial<ToolDefinition<never>> = {}): ToolDefinition<never> => ({
  name,
  description: `${name} tool`,
  parameters: { type: "object" },
  output: { schema: {}, render: () => [] },
  execute: () => Effect.succeed(null),
  ...overrides
})

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** A raw tool whose presenters soft-validate `{ path: string }` (PRES-2) and use `meta`. */
const read = tool("read", {
  presentCall: (args) =>
    isRecord(args) && typeof args.path === "string"
      ? { card: "generic", title: `Read ${args.path}`, kind: "read", locations: [{ path: args.path }] }
      : undefined,
  presentResult: (args, result) => {
    if (!isRecord(args) || typeof args.path !== "string" || result.isError || !isRecord(result.meta)) return undefined
    const lines = result.meta.lines as ReadonlyArray<string>
    return {
      card: "read",
      path: args.path,
      offset: 1,
      lines: lines.map((line, i) => ({ number: i + 1, text: line })),
      totalLines: lines.length
    }
  }
})

/** Only a call presenter: completed cards fall back to the generic one keeping this title. */
const shell = tool("shell", {
  presentCall: (args) =>
    isRecord(args) && typeof args.cmd === "string" ? { card: "terminal", title: args.cmd } : undefined
})

const throwing = tool("explode", {
  presentCall: () => {
    throw new Error("presenter bug")
  },
  presentResult: () => {
    throw new Error("presenter bug")
  }
})

/** PTC-4 / PRES-6: the run_code card. */
const runCode = tool("run_code", {
  presentCall: (args) =>
    isRecord(args) && typeof args.description === "string" && typeof args.code === "string"
      ? { card: "generic", title: args.description, kind: "execute", rawInput: args.code }
      : undefined
})

const plain = tool("plain")

const definitions: ReadonlyMap<string, ToolDefinition<never>> = new Map(
  [read, shell, throwing, runCode, plain].map((definition) => [definition.name, definition])
)
const lookup: Lookup = (name) => definitions.get(name)

const ok = (value: JsonValue, content: Content, meta?: JsonValue): ToolResult =>
  meta === undefined ? { isError: false, value, content } : { isError: false, value, content, meta }

describe("Presentation presenters", () => {
  it("SCHED-1: parseArguments parses like the agent loop", () => {
    assert.deepStrictEqual(Presentation.parseArguments(""), {})
    assert.deepStrictEqual(Presentation.parseArguments("{\"a\":[1,null]}"), { a: [1, null] })
    assert.deepStrictEqual(Presentation.parseArguments("[1]"), [1])
    assert.strictEqual(Presentation.parseArguments("null"), null)
    assert.strictEqual(Presentation.parseArguments("{not json"), "{not json")
    assert.strictEqual(Presentation.parseArguments("  "), "  ")
  })

  it("PRES-3: projectResult keeps content, isError and meta only when present, never the value", () => {
    assert.deepStrictEqual(Presentation.projectResult(ok({ secret: 1 }, text("x"))), {
      content: text("x"),
      isError: false
    })
    assert.deepStrictEqual(Presentation.projectResult(ok(1, text("x"), { m: 1 })), {
      content: text("x"),
      isError: false,
      meta: { m: 1 }
    })
    const failed = Presentation.projectResult(ToolResultModule.aborted())
    assert.deepStrictEqual(Object.keys(failed), ["content", "isError"])
    assert.deepStrictEqual(failed.content, text("Error: tool call aborted"))
  })

  it("PRES-1: the generic cards show the tool name with raw args, then the pending title with raw content", () => {
    assert.deepStrictEqual(Presentation.genericCall("read", { path: "a.ts" }), {
      card: "generic",
      title: "read",
      rawInput: { path: "a.ts" }
    })
    assert.deepStrictEqual(Presentation.genericCall("read", "{not json"), {
      card: "generic",
      title: "read",
      rawInput: "{not json"
    })
    assert.deepStrictEqual(Presentation.genericCall("read", { bad: undefined }), { card: "generic", title: "read" })
    assert.deepStrictEqual(Presentation.genericResult("Read a.ts", { content: text("hi"), isError: true }), {
      card: "generic",
      title: "Read a.ts",
      content: text("hi")
    })
  })

  it("PRES-1: no definition or no presenter selects the fallback (undefined)", () => {
    assert.isUndefined(Presentation.presentCall(undefined, {}))
    assert.isUndefined(Presentation.presentResult(undefined, {}, { content: [], isError: false }))
    assert.isUndefined(Presentation.presentCall(plain, {}))
    assert.isUndefined(Presentation.presentResult(plain, {}, { content: [], isError: false }))
  })

  it("PRES-1: presenters receive exactly the arguments and the durable projection", () => {
    const seen: Array<unknown> = []
    const spy = tool("spy", {
      presentCall: (args) => {
        seen.push(["call", args])
        return { card: "generic", title: "spy" }
      },
      presentResult: (args, result) => {
        seen.push(["result", args, result])
        return { card: "generic", title: "done" }
      }
    })
    const args = { q: 1 }
    const projection: ResultProjection = { content: text("r"), isError: false, meta: [1] }
    assert.deepStrictEqual(Presentation.presentCall(spy, args), { card: "generic", title: "spy" })
    assert.deepStrictEqual(Presentation.presentResult(spy, args, projection), { card: "generic", title: "done" })
    assert.strictEqual((seen[0] as Array<unknown>)[1], args)
    assert.strictEqual((seen[1] as Array<unknown>)[2], projection)
  })

  it("PRES-2: arguments that fail the presenter's soft validation yield undefined, not an error", () => {
    assert.isUndefined(Presentation.presentCall(read, {}))
    assert.isUndefined(Presentation.presentCall(read, { wrong: 1 }))
    assert.isUndefined(Presentation.presentCall(read, "{not json"))
    assert.isUndefined(Presentation.presentResult(read, {}, { content: [], isError: false, meta: { lines: [] } }))
  })

  it("D-10: a throwing presenter yields undefined", () => {
    assert.isUndefined(Presentation.presentCall(throwing, { a: 1 }))
    assert.isUndefined(Presentation.presentResult(throwing, { a: 1 }, { content: [], isError: false }))
  })

  it("D-10: a hostile definition (throwing getter) yields undefined", () => {
    const hostile = Object.defineProperty({ ...plain }, "presentCall", {
      get: () => {
        throw new Error("getter")
      }
    }) as ToolDefinition<never>
    assert.isUndefined(Presentation.presentCall(hostile, {}))
  })

  it("D-10: a presenter returning something that is not a view yields undefined", () => {
    const weird = (value: unknown) =>
      tool("weird", {
        presentCall: () => value as CallView,
        presentResult: () => value as ResultView
      })
    for (const value of [42, "card", null, [], { card: "custom", title: "x" }]) {
      assert.isUndefined(Presentation.presentCall(weird(value), {}))
      assert.isUndefined(Presentation.presentResult(weird(value), {}, { content: [], isError: false }))
    }
    assert.isUndefined(Presentation.presentCall(weird({ card: "generic" }), {}), "a call view needs a title")
    assert.deepStrictEqual(
      Presentation.presentResult(weird({ card: "generic" }), {}, { content: [], isError: false }),
      { card: "generic" },
      "a result view's title is optional"
    )
  })

  it("PRES-4 / PRES-5: presenter views are returned as detached frozen copies with the same fields", () => {
    const views: ReadonlyArray<ResultView> = [
      { card: "terminal", title: "ls", output: "a\nb", exitCode: 0 },
      { card: "diff", diffs: [{ path: "a.ts", oldText: null, newText: "x" }] },
      {
        card: "search",
        shape: "matches",
        files: [{ path: "a", matches: [{ lineNumber: 3, line: "x" }] }],
        truncated: false,
        total: 1
      },
      { card: "search", shape: "paths", paths: ["a", "b"], truncated: true, total: 9 },
      { card: "read", path: "a.ts", offset: 5, lines: [], totalLines: 4 },
      { card: "web", kind: "search", sources: [{ url: "https://x.test" }], truncated: false },
      { card: "web", kind: "fetch", url: "https://x.test", statusCode: 404, truncated: false }
    ]
    for (const view of views) {
      const definition = tool("v", { presentResult: () => view })
      const shown = Presentation.presentResult(definition, {}, { content: [], isError: false })
      assert.deepStrictEqual(shown, view)
      assert.notStrictEqual(shown, view)
      assert.isTrue(Object.isFrozen(shown))
    }
    const diff: CallView = { card: "diff", title: "Edit a.ts", diffs: [{ path: "a.ts", oldText: "a", newText: "b" }] }
    assert.deepStrictEqual(Presentation.presentCall(tool("d", { presentCall: () => diff }), {}), diff)
  })

  it("issue 8 / D-10: a view is read once (a getter cannot change it after the check); hostile views fall back", () => {
    let reads = 0
    const view = { title: "t" } as Record<string, unknown>
    Object.defineProperty(view, "card", { enumerable: true, get: () => reads++ === 0 ? "generic" : "bogus" })
    const shown = Presentation.presentCall(tool("g", { presentCall: () => view as never }), {})
    assert.deepStrictEqual(shown, { card: "generic", title: "t" })
    assert.strictEqual(reads, 1)
    assert.deepStrictEqual(
      Presentation.presentCall(tool("u", { presentCall: () => ({ card: "generic", title: "t", kind: undefined }) as never }), {}),
      { card: "generic", title: "t" },
      "optional fields set to undefined are dropped, not a reason to fall back"
    )
    for (const kind of Hostile.kinds) {
      const hostile = tool("h", { presentCall: () => Hostile.make(kind, { card: "generic" }) as never })
      const call = Presentation.presentCall(hostile, {})
      assert.isTrue(call === undefined || (call.card === "generic" && Object.isFrozen(call)), kind)
      const result = Presentation.presentResult(tool("r", { presentResult: () => Hostile.make(kind) as never }), {}, {
        content: [],
        isError: false
      })
      assert.isUndefined(result, kind)
    }
  })

  it("PRES-6: the run_code card is titled with the description, kind execute, program as rawInput", () => {
    assert.deepStrictEqual(
      Presentation.presentCall(runCode, { description: "Count the files", code: "return 1" }),
      { card: "generic", title: "Count the files", kind: "execute", rawInput: "return 1" }
    )
    assert.isUndefined(Presentation.presentCall(runCode, { code: "return 1" }))
    assert.isUndefined(Presentation.presentResult(runCode, {}, { content: [], isError: false }))
  })
})

/** One live call of the scenario: what the loop parsed and ran, and what it logged. */
interface Scenario {
  readonly live: ReadonlyArray<LiveCall>
  readonly records: ReadonlyArray<LogRecord>
}

const scenario = (): Scenario => {
  const calls: ReadonlyArray<{
    readonly callId: string
    readonly name: string
    readonly agent?: string
    readonly raw: string
    readonly result?: ToolResult
  }> = [
    {
      callId: "c1",
      name: "read",
      agent: "main",
      raw: "{\"path\":\"src/a.ts\"}",
      result: ok({ secret: "value-1" }, text("1: one\n2: two"), { lines: ["one", "two"] })
    },
    { callId: "c2", name: "read", raw: "{\"wrong\":1}", result: ok("v", text("odd")) },
    { callId: "c3", name: "shell", raw: "{\"cmd\":\"ls -la\"}", result: ok("v", text("a\nb")) },
    {
      callId: "c4",
      name: "explode",
      raw: "{\"a\":1}",
      result: ToolResultModule.denial("nope", { name: "ToolDeniedError", code: "DENIED" })
    },
    {
      callId: "c5",
      name: "unknown_tool",
      raw: "{not json",
      result: ToolResultModule.failure({ message: "unknown tool" })
    },
    { callId: "c6", name: "plain", raw: "", result: ok(null, text("empty args"), { n: 0 }) },
    {
      callId: "c7",
      name: "run_code",
      raw: "{\"description\":\"Sum it\",\"code\":\"return 1+1\"}",
      result: ok({ logs: [] }, text("2"))
    },
    { callId: "c8", name: "read", raw: "{\"path\":\"b.ts\"}" }
  ]
  const live: Array<LiveCall> = calls.map((call) => ({
    callId: call.callId,
    name: call.name,
    agent: call.agent,
    arguments: Presentation.parseArguments(call.raw),
    result: call.result
  }))
  const records: Array<LogRecord> = []
  calls.forEach((call, index) => {
    const record: LogRecord = call.agent === undefined
      ? { _tag: "tool/call", batchId: "t1:s1", index, callId: call.callId, name: call.name, arguments: call.raw }
      : {
        _tag: "tool/call",
        batchId: "t1:s1",
        index,
        callId: call.callId,
        name: call.name,
        agent: call.agent,
        arguments: call.raw
      }
    records.push(record)
  })
  calls.forEach((call, index) => {
    if (call.result !== undefined) records.push(ToolCallLog.resultRecord("t1:s1", index, call.callId, call.result))
  })
  return { live, records }
}

const expected: ReadonlyArray<CallPresentation> = [
  {
    callId: "c1",
    name: "read",
    call: { card: "generic", title: "Read src/a.ts", kind: "read", locations: [{ path: "src/a.ts" }] },
    result: {
      card: "read",
      path: "src/a.ts",
      offset: 1,
      lines: [{ number: 1, text: "one" }, { number: 2, text: "two" }],
      totalLines: 2
    }
  },
  {
    callId: "c2",
    name: "read",
    call: { card: "generic", title: "read", rawInput: { wrong: 1 } },
    result: { card: "generic", title: "read", content: text("odd") }
  },
  {
    callId: "c3",
    name: "shell",
    call: { card: "terminal", title: "ls -la" },
    result: { card: "generic", title: "ls -la", content: text("a\nb") }
  },
  {
    callId: "c4",
    name: "explode",
    call: { card: "generic", title: "explode", rawInput: { a: 1 } },
    result: { card: "generic", title: "explode", content: text("Error: nope") }
  },
  {
    callId: "c5",
    name: "unknown_tool",
    call: { card: "generic", title: "unknown_tool", rawInput: "{not json" },
    result: { card: "generic", title: "unknown_tool", content: text("Error: unknown tool") }
  },
  {
    callId: "c6",
    name: "plain",
    call: { card: "generic", title: "plain", rawInput: {} },
    result: { card: "generic", title: "plain", content: text("empty args") }
  },
  {
    callId: "c7",
    name: "run_code",
    call: { card: "generic", title: "Sum it", kind: "execute", rawInput: "return 1+1" },
    result: { card: "generic", title: "Sum it", content: text("2") }
  },
  {
    callId: "c8",
    name: "read",
    call: { card: "generic", title: "Read b.ts", kind: "read", locations: [{ path: "b.ts" }] }
  }
]

describe("Presentation replay", () => {
  it("PRES-1…6: live presentation of the scenario is exactly the expected cards", () => {
    assert.deepStrictEqual(Presentation.livePresentation(scenario().live, lookup), expected)
  })

  it("D-18: replaying the durable records equals the live presentation", () => {
    const { live, records } = scenario()
    const replayed = Presentation.replay(records, lookup)
    assert.deepStrictEqual(replayed, Presentation.livePresentation(live, lookup))
    assert.deepStrictEqual(replayed, expected)
  })

  it("OQ-33: a tool/call without tool/result replays as a pending card only", () => {
    const replayed = Presentation.replay(scenario().records, lookup)
    const last = replayed[replayed.length - 1]!
    assert.strictEqual(last.callId, "c8")
    assert.isFalse("result" in last)
  })

  it("PRES-3: presentResult sees content, isError and the persisted meta — never the value", () => {
    const seen: Array<ResultProjection> = []
    const spy = tool("spy", {
      presentResult: (_args, result) => {
        seen.push(result)
        return undefined
      }
    })
    const records: ReadonlyArray<LogRecord> = [
      { _tag: "tool/call", batchId: "b", index: 0, callId: "x", name: "spy", arguments: "{}" },
      ToolCallLog.resultRecord("b", 0, "x", ok({ secret: 1 }, text("c"), { m: true })),
      { _tag: "tool/call", batchId: "b", index: 1, callId: "y", name: "spy", arguments: "{}" },
      ToolCallLog.resultRecord("b", 1, "y", ToolResultModule.aborted())
    ]
    Presentation.replay(records, () => spy)
    assert.deepStrictEqual(seen, [
      { content: text("c"), isError: false, meta: { m: true } },
      { content: text("Error: tool call aborted"), isError: true }
    ])
  })

  it("D-18: results match their call by batch, index and callId, whatever the record order", () => {
    const records: ReadonlyArray<LogRecord> = [
      { _tag: "tool/call", batchId: "b1", index: 0, callId: "same", name: "plain", arguments: "{\"n\":1}" },
      { _tag: "tool/call", batchId: "b1", index: 1, callId: "other", name: "plain", arguments: "{\"n\":2}" },
      ToolCallLog.resultRecord("b1", 1, "other", ok(0, text("second"))),
      {
        _tag: "tool/code-dispatch-start",
        rootCallId: "r",
        parentCallId: "r",
        subCallId: "r:code:1",
        name: "plain",
        arguments: {}
      },
      ToolCallLog.resultRecord("b9", 0, "orphan", ok(0, text("orphan"))),
      ToolCallLog.resultRecord("b1", 0, "same", ok(0, text("first"))),
      ToolCallLog.resultRecord("b1", 0, "same", ok(0, text("duplicate"))),
      { _tag: "tool/call", batchId: "b2", index: 0, callId: "same", name: "plain", arguments: "{\"n\":3}" },
      ToolCallLog.resultRecord("b2", 0, "same", ok(0, text("third")))
    ]
    const replayed = Presentation.replay(records, lookup)
    assert.deepStrictEqual(
      replayed.map((entry) => [entry.callId, (entry.call as { readonly rawInput?: unknown }).rawInput, entry.result]),
      [
        ["same", { n: 1 }, { card: "generic", title: "plain", content: text("first") }],
        ["other", { n: 2 }, { card: "generic", title: "plain", content: text("second") }],
        ["same", { n: 3 }, { card: "generic", title: "plain", content: text("third") }]
      ]
    )
  })

  it("PRES-1: the lookup receives the calling agent, and a throwing lookup falls back to generic cards", () => {
    const asked: Array<[string, string | undefined]> = []
    const records: ReadonlyArray<LogRecord> = [
      {
        _tag: "tool/call",
        batchId: "b",
        index: 0,
        callId: "a",
        name: "read",
        agent: "helper",
        arguments: "{\"path\":\"x\"}"
      },
      { _tag: "tool/call", batchId: "b", index: 1, callId: "b", name: "read", arguments: "{\"path\":\"y\"}" }
    ]
    Presentation.replay(records, (name, agent) => {
      asked.push([name, agent])
      return read
    })
    assert.deepStrictEqual(asked, [["read", "helper"], ["read", undefined]])
    const fallback = Presentation.replay(records, () => {
      throw new Error("registry gone")
    })
    assert.deepStrictEqual(fallback[0]!.call, { card: "generic", title: "read", rawInput: { path: "x" } })
  })

  it.effect("D-18: replay from the in-memory log equals the live presentation", () =>
    Effect.gen(function*() {
      const { live, records } = scenario()
      const log = yield* ToolCallLog.ToolCallLog
      yield* Effect.forEach(records, (record) => log.append(record))
      const replayed = Presentation.replay(yield* log.records, lookup)
      assert.deepStrictEqual(replayed, Presentation.livePresentation(live, lookup))
    }).pipe(Effect.provide(ToolCallLogMemory.layer)))

  it.effect("D-18: replay after closing and reopening a libSQL file log equals the live presentation", () =>
    Effect.gen(function*() {
      const { live, records } = scenario()
      const filename = path.join(tmp, "replay.db")
      const append = Effect.flatMap(
        ToolCallLog.ToolCallLog,
        (log) => Effect.forEach(records, (record) => log.append(record))
      )
      yield* append.pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url: `file:${filename}` })))
      const stored = yield* Effect.flatMap(ToolCallLog.ToolCallLog, (log) => log.records).pipe(
        Effect.provide(ToolCallLogSql.layerLibsql({ url: `file:${filename}` }))
      )
      assert.isFalse(JSON.stringify(stored).includes("value-1"), "the canonical value was not persisted")
      const replayed = Presentation.replay(stored, lookup)
      assert.deepStrictEqual(replayed, Presentation.livePresentation(live, lookup))
      assert.deepStrictEqual(replayed, expected)
    }))
})
