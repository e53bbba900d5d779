/**
 * End to end (D-18, PRES-1…3, SCHED-7): a batch run through the scheduler into a SQLite file
 * log presents exactly the same cards live and when replayed after the database was closed and
 * reopened.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogSqlite from "../layers/ToolCallLogSqlite.js"
import type { CallPresentation, LiveCall } from "../src/Presentation.js"
import * as Presentation from "../src/Presentation.js"
import * as Scheduler from "../src/Scheduler.js"
import { defineTool } from "../src/Tool.js"
import type * as Tool from "../src/Tool.js"
import { ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"

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
  it.live("D-18: a scheduled batch replays from a reopened SQLite file log into the live cards", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-replay-"))
      const filename = path.join(dir, "log.sqlite")
      const live: Array<LiveCall> = []
      const firstSession = ToolRuntime.layer.pipe(
        Layer.provideMerge(registryWithTools),
        Layer.provideMerge(ToolCallLogSqlite.layer({ filename }))
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
        Effect.provide(ToolCallLogSqlite.layer({ filename }))
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
