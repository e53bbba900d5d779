/**
 * The agent loop over `@effect/ai` (generateText), end to end with a scripted LanguageModel: the
 * batch per step, what the next request carries, stopping, policies and the durable log.
 */
import * as Tool from "@effect/ai/Tool"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { Presets } from "../layers/index.js"
import * as AgentLoop from "../src/AgentLoop.js"
import type { RunContext } from "../src/Execution.js"
import { PreDecision } from "../src/Policy.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import { defineTool, type ToolDefinition } from "../src/Tool.js"
import * as hostile from "./fixtures/hostile.js"
import { echo, errorResult, info, rawTool, settle, text, unknownTool } from "./fixtures/runtime.js"
import * as Scripted from "./fixtures/scriptedModel.js"

const withModel = (script: ReadonlyArray<Scripted.ScriptEntry>, answers: Parameters<typeof Presets.layerTest>[0] = []) => {
  const model = Scripted.make(script)
  return { model, layer: Layer.merge(Presets.layerTest(answers), model.layer) }
}

const register = (...definitions: ReadonlyArray<ToolDefinition<never>>) =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry
    for (const definition of definitions) yield* registry.register(definition)
  })

const records = Effect.map(ToolCallLog.contents, (contents) => contents.records)

const typedRead = defineTool({
  name: "read",
  description: "Reads a file.",
  parameters: { path: { type: "string" } },
  output: { schema: { type: "string" }, render: (_args, value) => text(value) },
  execute: ({ path }) => Effect.succeed(typeof path === "string" ? path : "(no path)")
})

const call = (id: string, name: string, args: string): Scripted.ScriptedCall => ({ id, name, arguments: args })

describe("AgentLoop.run", () => {
  it.scoped("T-LOOP-001: a two-step run — echo is called, its result goes back, the model's text ends the run", () => {
    const { layer, model } = withModel([
      { text: "Let me echo.", calls: [call("c1", "echo", "{\"text\":\"ping\"}")], usage: { inputTokens: 7, outputTokens: 3 } },
      { text: "It said ping.", usage: { inputTokens: 11, outputTokens: 4 } }
    ])
    return Effect.gen(function*() {
      yield* register(echo())
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "echo ping" })

      assert.strictEqual(summary.stopReason, "stop")
      assert.strictEqual(summary.text, "It said ping.")
      assert.deepStrictEqual(summary.steps.map((s) => [s.step, s.text, s.finishReason]), [
        [1, "Let me echo.", "tool-calls"],
        [2, "It said ping.", "stop"]
      ])
      assert.deepStrictEqual(summary.steps[0]!.calls, [{ callId: "c1", name: "echo", arguments: "{\"text\":\"ping\"}" }])
      assert.deepStrictEqual(summary.steps[0]!.results, [{ callId: "c1", index: 0, result: { isError: false, value: "ping", content: text("ping") } }])
      assert.deepStrictEqual([summary.usage.inputTokens, summary.usage.outputTokens, summary.usage.totalTokens], [18, 7, 25])

      assert.strictEqual(model.requests.length, 2)
      const first = model.requests[0]!
      assert.deepStrictEqual(first.tools.map((t) => t.name), ["echo"])
      assert.deepStrictEqual<unknown>(Tool.getJsonSchemaFromSchemaAst(first.tools[0]!.parametersSchema.ast), echo().parameters)
      assert.strictEqual(first.tools[0]!.description, "Echo text.")
      const second = model.requests[1]!
      assert.deepStrictEqual(Scripted.roles(second), ["user", "assistant", "tool"])
      assert.deepStrictEqual(Scripted.assistantCalls(second), [{ id: "c1", name: "echo", params: { text: "ping" } }])
      assert.deepStrictEqual(Scripted.toolResults(second), [{ id: "c1", name: "echo", isFailure: false, result: text("ping") }])
      assert.deepStrictEqual(Scripted.roles({ ...second, prompt: summary.prompt }), ["user", "assistant", "tool", "assistant"])

      const log = yield* records
      assert.deepStrictEqual(log.map((r) => [r._tag, "callId" in r ? r.callId : ""]), [["tool/call", "c1"], ["tool/result", "c1"]])
      assert.strictEqual(log[0]!._tag === "tool/call" && log[0]!.arguments, "{\"text\":\"ping\"}")
      assert.strictEqual(log[0]!._tag === "tool/call" && log[0]!.agent, "main")
    }).pipe(Effect.provide(layer))
  })

  it.scoped("SCHED-1: a call to a tool the model was not offered reaches the scheduler and UNKNOWN_TOOL goes back", () => {
    const { layer, model } = withModel([
      { calls: [call("c1", "launch_rockets", "{}"), call("c2", "echo", "{\"text\":\"ok\"}")] },
      { text: "sorry" }
    ])
    return Effect.gen(function*() {
      yield* register(echo())
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "go" })
      assert.deepStrictEqual(summary.steps[0]!.results.map((r) => r.result), [
        unknownTool("launch_rockets"),
        { isError: false, value: "ok", content: text("ok") }
      ])
      assert.deepStrictEqual(Scripted.toolResults(model.requests[1]!), [
        { id: "c1", name: "launch_rockets", isFailure: true, result: text("Error: unknown tool \"launch_rockets\"") },
        { id: "c2", name: "echo", isFailure: false, result: text("ok") }
      ])
      assert.strictEqual(summary.stopReason, "stop")
    }).pipe(Effect.provide(layer))
  })

  it.scoped("SCHED-1 / T-LOOP-021 / T-LOOP-022: text that is not JSON fails typed validation (recorded as it was); \"\" is {} (recorded as its JSON)", () => {
    const { layer, model } = withModel([
      { calls: [call("c1", "read", "not json"), call("c2", "read", "")] },
      { text: "done" }
    ])
    return Effect.gen(function*() {
      yield* register(typedRead)
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "go" })
      const [bad, empty] = summary.steps[0]!.results.map((r) => r.result)
      assert.isTrue(bad!.isError)
      assert.deepStrictEqual(bad!.isError && bad!.error.info, info("ToolArgsError", "INVALID_ARGS"))
      assert.include(bad!.isError ? bad!.error.message : "", "must be an object")
      assert.deepStrictEqual(empty, { isError: false, value: "(no path)", content: text("(no path)") })
      const log = yield* records
      assert.deepStrictEqual(log.filter((r) => r._tag === "tool/call").map((r) => r._tag === "tool/call" && r.arguments), [
        "not json",
        "{}"
      ])
      assert.deepStrictEqual(Scripted.toolResults(model.requests[1]!).map((r) => [r.id, r.isFailure]), [["c1", true], ["c2", false]])
    }).pipe(Effect.provide(layer))
  })

  it.scoped("SCHED-1: params that are not lossless JSON (bigint, throwing proxy) get the scheduler's own error result; own __proto__ keys arrive intact", () => {
    const seen: Array<unknown> = []
    const probe = rawTool("probe", (args) => Effect.sync(() => seen.push(args)).pipe(Effect.as("ok")))
    const { layer, model } = withModel([
      {
        calls: [call("c1", "probe", "{}"), call("c2", "probe", "{}"), call("c3", "probe", "{}")],
        params: { c1: hostile.withBigint(), c2: hostile.throwingProxy(), c3: hostile.ownProtoKey() }
      },
      { text: "done" }
    ])
    return Effect.gen(function*() {
      yield* register(probe)
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "go" })
      const results = summary.steps[0]!.results.map((r) => r.result)
      const malformed = errorResult("tool call arguments must be a string")
      assert.deepStrictEqual(results.slice(0, 2), [malformed, malformed])
      assert.isFalse(results[2]!.isError)
      assert.strictEqual(seen.length, 1)
      assert.isTrue(Object.hasOwn(seen[0] as object, "__proto__"))
      assert.deepStrictEqual(Object.getOwnPropertyDescriptor(seen[0], "__proto__")?.value, { polluted: true })
      assert.strictEqual(model.requests.length, 2)
      assert.strictEqual(summary.steps[0]!.calls[2]!.arguments, "{\"__proto__\":{\"polluted\":true}}")
    }).pipe(Effect.provide(layer))
  })

  it.scoped("SCHED-3: the same exclusive tool twice in one step runs one after the other; results in model order", () => {
    const { layer, model } = withModel([
      { calls: [call("c1", "write", "{\"n\":1}"), call("c2", "write", "{\"n\":2}")] },
      { text: "written" }
    ])
    return Effect.gen(function*() {
      const started: Array<number> = []
      const firstStarted = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* register(rawTool("write", (args) =>
        Effect.gen(function*() {
          const n = (args as { readonly n: number }).n
          started.push(n)
          if (n === 1) {
            yield* Deferred.succeed(firstStarted, undefined)
            yield* Deferred.await(release)
          }
          return `wrote ${n}`
        })))
      const fiber = yield* Effect.fork(AgentLoop.run({ agent: "main", prompt: "write twice" }))
      yield* Deferred.await(firstStarted)
      yield* settle
      assert.deepStrictEqual(started, [1], "the second write waits for the first")
      yield* Deferred.succeed(release, undefined)
      const summary = yield* Fiber.join(fiber)
      assert.deepStrictEqual(started, [1, 2])
      assert.deepStrictEqual(summary.steps[0]!.results.map((r) => [r.callId, r.result.content]), [
        ["c1", text("wrote 1")],
        ["c2", text("wrote 2")]
      ])
      assert.deepStrictEqual(Scripted.toolResults(model.requests[1]!).map((r) => r.id), ["c1", "c2"])
    }).pipe(Effect.provide(layer))
  })

  it.scoped("CTX-6 / T-LOOP-010: a call that concludes the turn stops the loop after one request; its result is recorded", () => {
    const finisher = rawTool("finish", (_args, ctx: RunContext) => Effect.sync(() => ctx.concludeTurn()).pipe(Effect.as("bye")))
    const { layer, model } = withModel([{ text: "Finishing.", calls: [call("c1", "finish", "{}")] }, { text: "never asked" }])
    return Effect.gen(function*() {
      yield* register(finisher)
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "finish" })
      assert.strictEqual(summary.stopReason, "concluded")
      assert.strictEqual(model.requests.length, 1)
      assert.isTrue(summary.steps[0]!.concluded)
      assert.deepStrictEqual(summary.steps[0]!.results[0]!.result, { isError: false, value: "bye", content: text("bye"), concludesTurn: true })
      assert.deepStrictEqual(Scripted.roles({ ...model.requests[0]!, prompt: summary.prompt }), ["user", "assistant", "tool"])
      assert.deepStrictEqual((yield* records).map((r) => r._tag), ["tool/call", "tool/result"])
    }).pipe(Effect.provide(layer))
  })

  it.scoped("CTX-6: a concluding call whose batch deferred a context still delivers it in one more request", () => {
    const finisher = rawTool("finish", (_args, ctx: RunContext) =>
      Effect.sync(() => {
        ctx.deferContext({ content: text("one more thing") })
        ctx.concludeTurn()
      }).pipe(Effect.as("bye")))
    const { layer, model } = withModel([{ calls: [call("c1", "finish", "{}")] }, { text: "noted" }])
    return Effect.gen(function*() {
      yield* register(finisher)
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "finish" })
      assert.strictEqual(model.requests.length, 2)
      assert.deepStrictEqual(Scripted.userTexts(model.requests[1]!), ["finish", "one more thing"])
      assert.strictEqual(summary.stopReason, "stop")
      assert.deepStrictEqual(summary.pending, [])
    }).pipe(Effect.provide(layer))
  })

  it.scoped("maxSteps: the budget ends the run with max-steps after committing the last step's calls; contexts are pending", () => {
    const noisy = rawTool("noisy", (_args, ctx: RunContext) =>
      Effect.sync(() => ctx.deferContext({ content: text("later") })).pipe(Effect.as("again")))
    const { layer, model } = withModel([
      { calls: [call("c1", "noisy", "{}")] },
      { calls: [call("c2", "noisy", "{}")] },
      { calls: [call("c3", "noisy", "{}")] }
    ])
    return Effect.gen(function*() {
      yield* register(noisy)
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "loop", maxSteps: 2 })
      assert.strictEqual(summary.stopReason, "max-steps")
      assert.strictEqual(model.requests.length, 2)
      assert.deepStrictEqual(summary.steps.map((s) => s.results.map((r) => r.callId)), [["c1"], ["c2"]])
      assert.deepStrictEqual(summary.pending.map((c) => c.content), [text("later")])
      assert.deepStrictEqual(Scripted.userTexts(model.requests[1]!), ["loop", "later"])
      assert.deepStrictEqual(Scripted.roles({ ...model.requests[0]!, prompt: summary.prompt }), [
        "user", "assistant", "tool", "user", "assistant", "tool"
      ])
      assert.deepStrictEqual(Scripted.userTexts({ ...model.requests[0]!, prompt: AgentLoop.contextsPrompt(summary.pending) }), ["later"])
      assert.strictEqual((yield* records).length, 4)
    }).pipe(Effect.provide(layer))
  })

  it.scoped("CTX-4 / T-LOOP-002: contexts follow every result of the step, in model order, whatever the settlement order", () => {
    const { layer, model } = withModel([
      { calls: [call("c1", "slow", "{}"), call("c2", "fast", "{}")] },
      { text: "ok" }
    ])
    return Effect.gen(function*() {
      const fastDone = yield* Deferred.make<void>()
      const parallel = { isConcurrencySafe: () => true }
      yield* register(
        rawTool("slow", (_args, ctx: RunContext) =>
          Effect.zipRight(Deferred.await(fastDone), Effect.sync(() => ctx.deferContext({ content: text("ctx-c1") }))).pipe(Effect.as("slow")), parallel),
        rawTool("fast", (_args, ctx: RunContext) =>
          Effect.sync(() => ctx.deferContext({ content: text("ctx-c2") })).pipe(
            Effect.zipRight(Deferred.succeed(fastDone, undefined)),
            Effect.as("fast")
          ), parallel)
      )
      yield* AgentLoop.run({ agent: "main", prompt: "both" })
      const next = model.requests[1]!
      assert.deepStrictEqual(Scripted.roles(next), ["user", "assistant", "tool", "user", "user"])
      assert.deepStrictEqual(Scripted.toolResults(next).map((r) => r.id), ["c1", "c2"])
      assert.deepStrictEqual(Scripted.userTexts(next), ["both", "ctx-c1", "ctx-c2"])
    }).pipe(Effect.provide(layer))
  })

  it.scoped("T-LOOP-004: a deny policy applies through the loop — the body never runs, the model reads the reason", () => {
    let ran = 0
    const { layer, model } = withModel([{ calls: [call("c1", "echo", "{\"text\":\"x\"}")] }, { text: "denied" }])
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(echo({ execute: () => Effect.sync(() => ++ran).pipe(Effect.as("x")) }))
      yield* registry.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "not today" })))
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "go" })
      assert.strictEqual(ran, 0)
      assert.deepStrictEqual(summary.steps[0]!.results[0]!.result, errorResult("not today"))
      assert.deepStrictEqual(Scripted.toolResults(model.requests[1]!)[0]!.result, text("Error: not today"))
      const log = yield* records
      assert.deepStrictEqual(log[1]!._tag === "tool/result" && log[1]!.content, text("Error: not today"))
    }).pipe(Effect.provide(layer))
  })

  it.scoped("APPR: an ask policy goes through the approval service for each call, in model order", () => {
    const seen: Array<string> = []
    const { layer } = withModel(
      [{ calls: [call("c1", "echo", "{\"text\":\"a\"}"), call("c2", "echo", "{\"text\":\"b\"}")] }, { text: "ok" }],
      ["allowed-once", "rejected"]
    )
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(echo({ execute: (args) => Effect.sync(() => seen.push((args as { text: string }).text)).pipe(Effect.as("ran")) }))
      yield* registry.onPreExecute(() => Effect.succeed(PreDecision.Ask({ reason: "check" })))
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "go" })
      assert.deepStrictEqual(seen, ["a"])
      assert.deepStrictEqual(summary.steps[0]!.results.map((r) => r.result.isError), [false, true])
      assert.deepStrictEqual(summary.steps[0]!.results[1]!.result.content, text("Error: the user rejected tool \"echo\""))
    }).pipe(Effect.provide(layer))
  })

  it.scoped("a model error fails the run with the model's AiError after the batches so far", () => {
    const { layer } = withModel([{ calls: [call("c1", "echo", "{}")] }])
    return Effect.gen(function*() {
      yield* register(echo())
      const error = yield* Effect.flip(AgentLoop.run({ agent: "main", prompt: "go" }))
      assert.strictEqual(error._tag, "UnknownError")
      assert.strictEqual((yield* records).length, 2)
    }).pipe(Effect.provide(layer))
  })

  it.effect("options: an invalid maxSteps, agent or a hostile options object is a defect before the model is asked", () => {
    const { layer, model } = withModel([{ text: "never" }])
    return Effect.gen(function*() {
      const messages: Array<string> = []
      for (const options of [
        { agent: "main", prompt: "x", maxSteps: 0 },
        { agent: "main", prompt: "x", maxSteps: 1.5 },
        { agent: 42, prompt: "x" },
        hostile.throwingProxy(),
        null
      ]) {
        const exit = yield* Effect.exit(AgentLoop.run(options as AgentLoop.Options))
        assert.isTrue(Exit.isFailure(exit))
        const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        assert.isTrue(Cause.isIllegalArgumentException(defect))
        messages.push((defect as Error).message)
      }
      assert.deepStrictEqual(messages, [
        "maxSteps must be a positive integer",
        "maxSteps must be a positive integer",
        "AgentLoop option \"agent\" must be a string",
        "AgentLoop could not read option \"agent\"",
        "AgentLoop options must be an object"
      ])
      assert.strictEqual(model.requests.length, 0)
    }).pipe(Effect.provide(layer))
  })
})
