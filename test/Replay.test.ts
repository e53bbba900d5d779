/**
 * End to end (D-18, PRES-1…3, SCHED-7): a batch run through the scheduler into a libSQL file
 * log presents exactly the same cards live and when replayed after the database was closed and
 * reopened. (The shared log suite replays from every backend, PostgreSQL included.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Logger, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogSql from "../layers/ToolCallLogSql.js"
import type { CallPresentation, LiveCall } from "../src/Presentation.js"
import * as Presentation from "../src/Presentation.js"
import * as Scheduler from "../src/Scheduler.js"
import { defineTool } from "../src/Tool.js"
import type * as Tool from "../src/Tool.js"
import * as ToolCallLogModule from "../src/ToolCallLog.js"
import { ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import { ownProtoKey } from "./fixtures/hostile.js"

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
    presentationMeta: (_args, value) => ({ lines: value.lines })
  },
  isConcurrencySafe: () => true,
  presentCall: (args) => ({ card: "generic", title: `Read ${args.path}`, kind: "read" }),
  presentResult: (args, result) =>
    result.isError ? undefined : { card: "generic", title: `Read ${args.path} (${JSON.stringify(result.meta)})` },
  execute: (args) => Effect.succeed({ path: args.path, lines: args.path.length })
})

const failing = defineTool({
  name: "explode",
  description: "Always fails.",
  parameters: {},
  output: { schema: { type: "null" }, render: () => [{ type: "text", text: "never" }] },
  presentCall: () => ({ card: "terminal", title: "explode" }),
  execute: () => Effect.fail(new Error("boom"))
})

const tools: ReadonlyArray<Tool.ToolDefinition<never>> = [readFile, failing]

const calls: ReadonlyArray<Scheduler.ModelToolCall> = [
  { callId: "c1", name: "read_file", arguments: "{\"path\":\"/etc/hosts\"}" },
  { callId: "c2", name: "read_file", arguments: "{\"path\":\"/tmp/a\"}" },
  { callId: "c3", name: "explode", arguments: "" },
  { callId: "c4", name: "read_file", arguments: "not json" },
  { callId: "c5", name: "missing_tool", arguments: "{}" }
]

const registryWithTools = Layer.scopedDiscard(
  Effect.flatMap(ToolRegistry, (registry) => Effect.forEach(tools, (tool) => registry.register(tool)))
).pipe(Layer.provideMerge(InMemoryToolRegistry.layer))

const lookup = (name: string) => tools.find((tool) => tool.name === name)

describe("live presentation equals replay", () => {
  it.live("D-18: a scheduled batch replays from a reopened libSQL file log into the live cards", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-replay-"))
      const filename = path.join(dir, "log.db")
      const live: Array<LiveCall> = []
      const firstSession = ToolRuntime.layer.pipe(
        Layer.provideMerge(registryWithTools),
        Layer.provideMerge(ToolCallLogSql.layerLibsql({ url: `file:${filename}` }))
      )
      const scope = yield* Scope.make()
      const batch = yield* Scheduler.runBatch(calls, {
        agent: "main",
        maxParallel: 3,
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
      }).pipe(Effect.provide(firstSession), Scope.extend(scope))
      yield* Scope.close(scope, Exit.void)

      assert.deepStrictEqual(batch.results.map((r) => r.callId), ["c1", "c2", "c3", "c4", "c5"])
      assert.deepStrictEqual(batch.results.map((r) => r.result.isError), [false, false, true, true, true])
      const livePresentation = Presentation.livePresentation(live, lookup)

      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records).pipe(
        Effect.provide(ToolCallLogSql.layerLibsql({ url: `file:${filename}` }))
      )
      const replayed: Array<CallPresentation> = Presentation.replay(records, lookup)
      assert.deepStrictEqual(replayed, livePresentation)
      assert.deepStrictEqual(replayed[0], {
        callId: "c1",
        name: "read_file",
        call: { card: "generic", title: "Read /etc/hosts", kind: "read" },
        result: { card: "generic", title: "Read /etc/hosts ({\"lines\":10})" }
      })
      assert.strictEqual(records.filter((r) => r._tag === "tool/result").length, calls.length)
      assert.isFalse(JSON.stringify(records).includes("\"value\""), "canonical values are never persisted")
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})

/** A tool whose content block and meta each carry an own `__proto__` key holding an object. */
const protoTool = defineTool({
  name: "proto_card",
  description: "Renders a block with an own __proto__ key.",
  parameters: {},
  output: {
    schema: { type: "null" },
    render: () => [{ type: "text", text: "card", ...ownProtoKey({ polluted: true }) }],
    presentationMeta: () => ({ ...ownProtoKey({ role: "admin" }), lines: 1 })
  },
  presentResult: (_args, result) => {
    const block = result.content[0] as unknown as { readonly polluted?: unknown }
    const meta = result.meta as { readonly role?: unknown } | undefined
    return {
      card: "generic",
      title: `polluted=${String(block?.polluted)} role=${String(meta?.role)}`,
      content: result.content
    }
  },
  execute: () => Effect.succeed(null)
})

const protoTools: ReadonlyArray<Tool.ToolDefinition<never>> = [protoTool, readFile]
const protoLookup = (name: string) => protoTools.find((tool) => tool.name === name)
const protoCalls: ReadonlyArray<Scheduler.ModelToolCall> = [
  { callId: "p1", name: "proto_card", arguments: "{}" },
  { callId: "p2", name: "read_file", arguments: "{\"path\":\"/x\"}" }
]

const protoRegistry = Layer.scopedDiscard(
  Effect.flatMap(ToolRegistry, (registry) => Effect.forEach(protoTools, (tool) => registry.register(tool)))
).pipe(Layer.provideMerge(InMemoryToolRegistry.layer))

/** Runs `protoCalls` through the scheduler with `log` and returns the live calls. */
const runProtoBatch = Effect.gen(function*() {
  const live: Array<LiveCall> = []
  yield* Scheduler.runBatch(protoCalls, {
    agent: "main",
    onCommit: (event) =>
      Effect.sync(() => {
        const call = protoCalls[event.index]!
        live.push({
          callId: call.callId,
          name: call.name,
          agent: "main",
          arguments: Presentation.parseArguments(call.arguments),
          result: event.result
        })
      })
  })
  return live
})

const assertOwnProtoCard = (presentation: ReadonlyArray<CallPresentation>) => {
  const result = presentation[0]!.result as { readonly title?: string; readonly content?: ReadonlyArray<object> }
  assert.strictEqual(result.title, "polluted=undefined role=undefined")
  const block = result.content![0]!
  assert.strictEqual(Object.getPrototypeOf(block), Object.prototype)
  assert.deepStrictEqual(Object.keys(block), ["type", "text", "__proto__"])
  assert.deepStrictEqual(Object.getOwnPropertyDescriptor(block, "__proto__")?.value, { polluted: true })
}

describe("issue 8 item 8: __proto__ keys replay as own keys", () => {
  it.live("issue 8 item 8 / JSON-5 / D-18: own __proto__ keys replay from the memory log", () =>
    Effect.gen(function*() {
      const { live, records } = yield* Effect.gen(function*() {
        const live = yield* runProtoBatch
        const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
        return { live, records }
      }).pipe(Effect.provide(ToolRuntime.layer.pipe(
        Layer.provideMerge(protoRegistry),
        Layer.provideMerge(ToolCallLogMemory.layer)
      )))
      const livePresentation = Presentation.livePresentation(live, protoLookup)
      assertOwnProtoCard(livePresentation)
      const replayed = Presentation.replay(records, protoLookup)
      assertOwnProtoCard(replayed)
      assert.deepStrictEqual(replayed, livePresentation)
      const stored = records.find((record) => record._tag === "tool/result")!
      const meta = (stored as ToolCallLogModule.ToolResultRecord).meta as object
      assert.strictEqual(Object.getPrototypeOf(meta), Object.prototype)
      assert.deepStrictEqual(Object.keys(meta), ["__proto__", "lines"])
    }))

  it.live("issue 8 item 8 / JSON-5 / D-18: own __proto__ keys replay from a reopened libSQL file log", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-replay-proto-"))
      const filename = path.join(dir, "log.db")
      const live = yield* runProtoBatch.pipe(Effect.provide(ToolRuntime.layer.pipe(
        Layer.provideMerge(protoRegistry),
        Layer.provideMerge(ToolCallLogSql.layerLibsql({ url: `file:${filename}` }))
      )))
      const livePresentation = Presentation.livePresentation(live, protoLookup)
      assertOwnProtoCard(livePresentation)
      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records).pipe(
        Effect.provide(ToolCallLogSql.layerLibsql({ url: `file:${filename}` }))
      )
      const replayed = Presentation.replay(records, protoLookup)
      assertOwnProtoCard(replayed)
      assert.deepStrictEqual(replayed, livePresentation)
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})

const rawExec = (filename: string, statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
    Effect.provide(ToolCallLogSql.layerLibsqlClient({ url: `file:${filename}` }))
  )

describe("issue 8 item 14: replay from the good rows", () => {
  it.live("issue 8 item 14 / D-18: corrupt rows between good ones are reported and replay equals the live run", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-replay-corrupt-"))
      const filename = path.join(dir, "log.db")
      const live = yield* runProtoBatch.pipe(Effect.provide(ToolRuntime.layer.pipe(
        Layer.provideMerge(protoRegistry),
        Layer.provideMerge(ToolCallLogSql.layerLibsql({ url: `file:${filename}` }))
      )))
      yield* rawExec(filename, "INSERT INTO tool_call_log (tag, payload) VALUES ('tool/call', '{oops')")
      yield* rawExec(filename, "INSERT INTO tool_call_log (tag, payload) VALUES ('nope', '{\"_tag\":\"nope\"}')")
      const warnings: Array<string> = []
      const collect = Logger.make(({ message }) => {
        warnings.push(String(Array.isArray(message) ? message[0] : message))
      })
      const { contents, records } = yield* Effect.gen(function*() {
        const contents = yield* ToolCallLogModule.contents
        const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
        return { contents, records }
      }).pipe(Effect.provide(Layer.merge(
        ToolCallLogSql.layerLibsql({ url: `file:${filename}` }),
        Logger.replace(Logger.defaultLogger, collect)
      )))

      assert.deepStrictEqual(contents.corrupt.map((entry) => entry.sequence), [5, 6])
      assert.deepStrictEqual(records, contents.records)
      assert.strictEqual(records.length, 4)
      assert.strictEqual(warnings.length, 2)
      const livePresentation = Presentation.livePresentation(live, protoLookup)
      assert.deepStrictEqual(Presentation.replay(records, protoLookup), livePresentation)
      assert.deepStrictEqual(Presentation.replay(contents.records, protoLookup), livePresentation)
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})
