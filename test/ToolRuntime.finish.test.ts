/**
 * Finishing: FIN-1…4 (materialization, the content finalizer), OBS-1 (observers) and the
 * `projectContent` callback of D-1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import * as Presets from "../layers/Presets.js"
import type { ToolExecution } from "../src/Execution.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED_BEFORE_DISPATCH,
  context,
  echo,
  echoed,
  errorResult,
  execute,
  info,
  instrument,
  isDeepFrozen,
  makeProbe,
  message,
  probeTool,
  text,
  withContexts
} from "./fixtures/runtime.js"

const capturingLogger = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    lines.push(`${logLevel.label}: ${parts.map(String).join(" ")}`)
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

describe("FIN (materialization and the content finalizer)", () => {
  it.scoped("FIN-1 / FIN-3: the finalizer runs exactly once with the materialized, frozen candidate", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const seen: Array<readonly [ToolExecution, ToolResult]> = []
      yield* tools.register(echo({
        finalizeContent: (exec, result) => {
          seen.push([exec, result])
          return text("final")
        }
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "body" } })
      assert.deepStrictEqual(result, { isError: false, value: "body", content: text("final") })
      assert.strictEqual(seen.length, 1)
      const [exec, candidate] = seen[0]!
      assert.deepStrictEqual(candidate, echoed("body"))
      assert.isTrue(isDeepFrozen(candidate))
      assert.strictEqual(exec.callId, "c1")
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("FIN-3: the finalizer replaces only content (meta, contexts, conclusion and error survive)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        output: { schema: { type: "string" }, render: (_args, value) => text(value as string), presentationMeta: () => 1 },
        execute: (_args, ctx) =>
          Effect.sync(() => {
            ctx.deferContext(message("m"))
            ctx.concludeTurn()
            return "v"
          }),
        finalizeContent: () => text("short")
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, {
        isError: false,
        value: "v",
        content: text("short"),
        meta: 1,
        additionalContexts: [context("ctx-1", "m")],
        concludesTurn: true
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-FIN-004: a finalizer returning nothing keeps the normalized content", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      let calls = 0
      yield* tools.register(echo({
        finalizeContent: () => {
          calls++
          return undefined
        }
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "" } })
      assert.deepStrictEqual(result, { isError: false, value: "", content: text("") })
      assert.strictEqual(calls, 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-FIN-002: a throwing finalizer is the ERR-1 error and is not invoked a second time", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      let calls = 0
      yield* tools.register(echo({
        finalizeContent: () => {
          calls++
          throw new Error("finalizer violated its total contract")
        }
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("finalizer violated its total contract"))
      assert.strictEqual(calls, 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-FIN-001: a finalizer runs once on a snapshot-time error and can truncate it", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      let calls = 0
      yield* tools.register(echo({
        name: "throwing-meta",
        output: {
          schema: { type: "string" },
          render: (_args, value) => text(value as string),
          presentationMeta: () =>
            ({
              get broken(): unknown {
                throw new Error("meta getter exploded")
              }
            }) as never
        },
        finalizeContent: (_exec, result) => {
          calls++
          const first = result.content[0]
          return first?.type === "text" ? text(first.text.slice(0, 32)) : undefined
        }
      }))
      const result = yield* execute({ callId: "c1", name: "throwing-meta", arguments: {} })
      assert.isTrue(result.isError)
      assert.deepStrictEqual(result.isError && result.error.info, info("ToolOutputError", "INVALID_TOOL_OUTPUT"))
      assert.strictEqual(result.content.length, 1)
      const block = result.content[0]!
      assert.isTrue(block.type === "text" && block.text.startsWith("Error: tool \"throwing-meta\""))
      assert.strictEqual(block.type === "text" ? block.text.length : 0, 32)
      assert.strictEqual(calls, 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-3 / FIN-3: a finalizer returning malformed content becomes an error; it is not called again", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const returns: ReadonlyArray<unknown> = [null, "text", [{ type: "text", text: 1 }], [() => 1]]
      let index = 0
      let calls = 0
      yield* tools.register(echo({
        finalizeContent: () => {
          calls++
          return returns[index] as never
        }
      }))
      for (; index < returns.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "echo", arguments: {} })
        assert.isTrue(result.isError)
        assert.isFalse(result.isError && "info" in result.error)
        assert.deepStrictEqual(result.content, text(`Error: ${result.isError ? result.error.message : ""}`))
      }
      assert.strictEqual(calls, returns.length)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("FIN-3: when the first materialization fails, the finalizer sees that error", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const seen: Array<ToolResult> = []
      yield* tools.register(echo({
        finalizeContent: (_exec, result) => {
          seen.push(result)
          return undefined
        }
      }))
      yield* tools.onExecute(() =>
        Effect.succeed({ isError: true, error: { message: "authored" }, content: [() => 1] } as unknown as ToolResult)
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      const expected = errorResult("tool result must be losslessly JSON-serializable")
      assert.deepStrictEqual(result, expected)
      assert.deepStrictEqual(seen, [expected])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("FIN-2: materialization drops foreign fields; a failure never gains value or concludesTurn", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo())
      yield* tools.onExecute(() =>
        Effect.succeed(
          {
            isError: true,
            error: { message: "authored", info: { name: "X", code: "Y" } },
            content: text("c"),
            value: "v",
            concludesTurn: true,
            stack: "s"
          } as unknown as ToolResult
        )
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, {
        isError: true,
        error: { message: "authored", info: { name: "X", code: "Y" } },
        content: text("c")
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("FIN-4: observers see a frozen execution and a frozen result", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo())
      const frozen: Array<boolean> = []
      yield* tools.onResult((exec, result) =>
        Effect.sync(() => {
          frozen.push(Object.isFrozen(exec), isDeepFrozen(exec.arguments), isDeepFrozen(result))
        })
      )
      yield* execute({ callId: "c1", name: "echo", arguments: { nested: { a: [1] } } })
      assert.deepStrictEqual(frozen, [true, true, true])
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("OBS-1 (observers)", () => {
  it.scoped("T-FIN-005: observer failures are contained and logged; the outcome is unchanged; each fires once", () => {
    const { layer, lines } = capturingLogger()
    return Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo())
      yield* tools.onExecute(() =>
        Effect.succeed({ isError: true, error: { message: "outer failure" }, content: text("Error: outer failure") } as ToolResult)
      )
      const good: Array<readonly [ToolExecution, ToolResult]> = []
      const counts = { unprintable: 0, async: 0 }
      yield* tools.onResult((exec, result) => Effect.sync(() => good.push([exec, result])))
      yield* tools.onResult(() =>
        Effect.suspend(() => {
          counts.unprintable++
          return Effect.die({
            get message(): string {
              throw new Error("no")
            }
          })
        })
      )
      yield* tools.onResult(() =>
        Effect.suspend(() => {
          counts.async++
          return Effect.fail(new Error("async observer failure"))
        })
      )
      yield* tools.onResult((exec, result) => Effect.sync(() => good.push([exec, result])))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { a: 1 } })
      assert.deepStrictEqual(result, errorResult("outer failure"))
      assert.strictEqual(good.length, 2)
      for (const [exec, seen] of good) {
        assert.strictEqual(seen, result)
        assert.isTrue(seen.isError)
        assert.isTrue(Object.isFrozen(exec))
        assert.isTrue(isDeepFrozen(exec.arguments))
        assert.isTrue(Object.isFrozen(seen.content))
      }
      assert.deepStrictEqual(counts, { unprintable: 1, async: 1 })
      const warnings = lines.filter((line) => line.startsWith("WARN"))
      assert.deepStrictEqual(warnings, [
        "WARN: tool \"echo\" (c1): tools/result observer failed: <unprintable thrown value>",
        "WARN: tool \"echo\" (c1): tools/result observer failed: async observer failure"
      ])
    }).pipe(Effect.provide(Presets.layerTest()), Effect.provide(layer))
  })

  it.scoped("OBS-1: observers are scope-filtered by the execution's agent", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo())
      const seen: Record<string, Array<string>> = { global: [], a: [], b: [] }
      yield* tools.onResult((exec) => Effect.sync(() => seen.global!.push(exec.callId)))
      yield* tools.onResult((exec) => Effect.sync(() => seen.a!.push(exec.callId)), { agent: "a" })
      yield* tools.onResult((exec) => Effect.sync(() => seen.b!.push(exec.callId)), { agent: "b" })
      yield* execute({ callId: "x", name: "echo", agent: "a", arguments: {} })
      yield* execute({ callId: "y", name: "echo", arguments: {} })
      assert.deepStrictEqual(seen, { global: ["x", "y"], a: ["x"], b: [] })
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("D-1 (projectContent)", () => {
  const projecting = (
    project: NonNullable<ToolDefinition<never>["projectContent"]>,
    overrides: Partial<ToolDefinition<never>> = {}
  ) => echo({ projectContent: project, ...overrides })

  it.scoped("D-1: projectContent runs once per post-result before post; post sees and may override it", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const seen: Array<ToolResult> = []
      yield* tools.register(projecting((_exec, result) => {
        seen.push(result)
        return text(`projected:${result.isError ? "error" : "ok"}`)
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "v" } })
      assert.deepStrictEqual(result, { isError: false, value: "v", content: text("projected:ok") })
      assert.deepStrictEqual(seen, [echoed("v")])
      assert.deepStrictEqual(probe.postSeen, [{ isError: false, value: "v", content: text("projected:ok") }])
      yield* tools.onPostExecute(() => Effect.succeed(PostDecision.Accept({ content: text("post wins") })))
      const overridden = yield* execute({ callId: "c2", name: "echo", arguments: { text: "v" } })
      assert.deepStrictEqual(overridden, { isError: false, value: "v", content: text("post wins") })
      assert.strictEqual(seen.length, 2)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-1: projectContent also runs on errors and denials, and may return nothing", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const seen: Array<string> = []
      yield* tools.register(projecting((_exec, result) => {
        seen.push(result.isError ? result.error.message : "ok")
        return result.isError ? text("projected error") : undefined
      }, { execute: (args) => (args as { readonly fail?: boolean }).fail ? Effect.fail(new Error("boom")) : Effect.succeed("ok") }))
      const mode = { deny: false }
      yield* tools.onPreExecute((_exec, next) => mode.deny ? Effect.succeed(PreDecision.Deny({ reason: "no" })) : next)
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), echoed("ok"))
      assert.deepStrictEqual(
        yield* execute({ callId: "c2", name: "echo", arguments: { fail: true } }),
        { isError: true, error: { message: "boom" }, content: text("projected error") }
      )
      mode.deny = true
      assert.deepStrictEqual(
        yield* execute({ callId: "c3", name: "echo", arguments: {} }),
        { isError: true, error: { message: "no" }, content: text("projected error") }
      )
      assert.deepStrictEqual(seen, ["ok", "boom", "no"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-1: projectContent does not run on final results (pre-aborted, pre failure, wrapper failure)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      let calls = 0
      yield* tools.register(projecting(() => {
        calls++
        return undefined
      }))
      const mode = { value: "" }
      yield* tools.onPreExecute((_exec, next) => mode.value === "pre" ? Effect.fail(new Error("pre")) : next)
      yield* tools.onExecute((_exec, next) => mode.value === "around" ? Effect.fail(new Error("around")) : next)
      const controller = new AbortController()
      controller.abort()
      assert.deepStrictEqual(
        yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }),
        ABORTED_BEFORE_DISPATCH
      )
      mode.value = "pre"
      assert.deepStrictEqual(yield* execute({ callId: "c2", name: "echo", arguments: {} }), errorResult("pre"))
      mode.value = "around"
      assert.deepStrictEqual(yield* execute({ callId: "c3", name: "echo", arguments: {} }), errorResult("around"))
      assert.strictEqual(calls, 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-1: a throwing projectContent is a final error (post skipped; body contexts survive, D-13)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      yield* tools.register(projecting(() => {
        throw new Error("projection broke")
      }, { execute: (_args, ctx) => Effect.as(Effect.sync(() => ctx.deferContext(message("kept"))), "v") }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(errorResult("projection broke"), [context("ctx-1", "kept")]))
      assert.strictEqual(probe.count("post"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-1 / D-3: a malformed projectContent return is a final error", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      yield* tools.register(projecting(() => "not content" as never))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.isTrue(result.isError)
      assert.isTrue(result.isError && result.error.message.startsWith("projectContent"))
      assert.strictEqual(probe.count("post"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-1: projectContent and finalizeContent both apply, in that order", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(probeTool(makeProbe(), {
        projectContent: () => text("projected"),
        finalizeContent: (_exec, result) => text(`final(${result.content[0]?.type === "text" ? result.content[0].text : ""})`)
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "v" } })
      assert.deepStrictEqual(result, { isError: false, value: "v", content: text("final(projected)") })
    }).pipe(Effect.provide(Presets.layerTest())))
})
