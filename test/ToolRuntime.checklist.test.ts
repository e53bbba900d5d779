/**
 * The seed's §8.13 contract checklist, one test per item.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope, TestClock } from "effect"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as Presets from "../layers/Presets.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { defineTool } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED,
  ABORTED_BEFORE_DISPATCH,
  awaitTimer,
  context,
  echo,
  echoed,
  errorResult,
  execute,
  isPending,
  layerNoApproval,
  layerWithApproval,
  message,
  outputError,
  stubbornBody,
  text,
  timedOut,
  unknownTool
} from "./fixtures/runtime.js"

describe("§8.13 contract checklist", () => {
  it.scoped("§8.13: invalid input never runs the body", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      let runs = 0
      yield* tools.register(defineTool({
        name: "typed",
        description: "typed",
        parameters: { n: { type: "integer", required: true } },
        output: { schema: { type: "integer" }, render: (_args, value) => text(String(value)) },
        execute: (args) =>
          Effect.sync(() => {
            runs++
            return args.n
          })
      }))
      const invalid: ReadonlyArray<unknown> = [{}, { n: 1.5 }, { n: "1" }, "raw text", new Map()]
      for (const args of invalid) {
        const result = yield* execute({ callId: "c", name: "typed", arguments: args })
        assert.isTrue(result.isError)
      }
      assert.strictEqual(runs, 0)
      assert.deepStrictEqual(yield* execute({ callId: "ok", name: "typed", arguments: { n: 2 } }), {
        isError: false,
        value: 2,
        content: text("2")
      })
      assert.strictEqual(runs, 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("§8.13: invalid output is a normalized error (no value, Error: content, observed as error)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const observed: Array<ToolResult> = []
      yield* tools.register(echo({ execute: () => Effect.succeed({ not: "a string" }) }))
      yield* tools.onResult((_exec, result) => Effect.sync(() => observed.push(result)))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, outputError("echo", "\"value\" must be a string"))
      assert.deepStrictEqual(observed, [result])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("§8.13: ask without approval is refused (no service)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      let runs = 0
      yield* tools.register(echo({ execute: () => Effect.sync(() => String(++runs)) }))
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
      assert.deepStrictEqual(
        yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} }),
        errorResult("tool \"echo\" requires approval (not yet supported)")
      )
      assert.strictEqual(runs, 0)
    }).pipe(Effect.provide(layerNoApproval)))

  it.scoped("§8.13: ask without approval is refused (a service without channel)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo())
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
      assert.deepStrictEqual(
        yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} }),
        errorResult("tool \"echo\" requires approval, but no approval channel is available")
      )
    }).pipe(Effect.provide(layerWithApproval(ApprovalLayers.layerUnavailable))))

  it.scoped("§8.13: a caller cancel cannot be overridden by a wrapper's signal", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      const bodySignals: Array<AbortSignal> = []
      yield* tools.register(echo({
        execute: (_args, ctx) =>
          Effect.zipRight(
            Effect.sync(() => bodySignals.push(ctx.signal)),
            Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
          )
      }))
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          exec.signal = new AbortController().signal
          return next
        })
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(started)
      controller.abort()
      assert.isTrue(bodySignals[0]!.aborted)
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
      const dead = new AbortController()
      dead.abort()
      assert.deepStrictEqual(
        yield* execute({ callId: "c2", name: "echo", arguments: {}, signal: dead.signal }),
        ABORTED_BEFORE_DISPATCH
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("§8.13: a timed-out body really converges (the call settles only after the body's cleanup)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const cleanup: Array<string> = []
      yield* tools.register(echo({
        timeoutMs: 100,
        execute: (args, ctx) =>
          Effect.ensuring(
            stubbornBody(started, release)(args, ctx),
            Effect.sync(() => cleanup.push("cleaned up"))
          )
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("100 millis")
      assert.isTrue(yield* isPending(fiber))
      assert.deepStrictEqual(cleanup, [])
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(100))
      assert.deepStrictEqual(cleanup, ["cleaned up"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("§8.13: a block drops body-only contexts", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        execute: (_args, ctx) => Effect.as(Effect.sync(() => ctx.deferContext(message("body only"))), "v")
      }))
      yield* tools.onPostExecute(() => Effect.succeed(PostDecision.Block({ feedback: text("blocked") })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: true, error: { message: "blocked" }, content: text("blocked") })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("§8.13: conclude only on final success — never after a throw, abort, timeout or invalid output", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const concluding = (name: string, then: Effect.Effect<unknown, unknown>, extra: Partial<ToolDefinition<never>> = {}) =>
        tools.register(echo({
          name,
          execute: (_args, ctx) => Effect.zipRight(Effect.sync(() => ctx.concludeTurn()), then),
          ...extra
        }))
      yield* concluding("ok", Effect.succeed("done"))
      yield* concluding("throw", Effect.fail(new Error("exploded")))
      yield* concluding("invalid", Effect.succeed(7))
      yield* concluding("slow", Effect.zipRight(Deferred.succeed(started, undefined), Effect.never), { timeoutMs: 10 })
      const aborting = new AbortController()
      yield* concluding("abort", Effect.uninterruptible(Effect.sync(() => {
        aborting.abort()
        return "late"
      })))
      const ok = yield* execute({ callId: "c1", name: "ok", arguments: {} })
      assert.deepStrictEqual(ok, { isError: false, value: "done", content: text("done"), concludesTurn: true })
      const thrown = yield* execute({ callId: "c2", name: "throw", arguments: {} })
      const invalid = yield* execute({ callId: "c3", name: "invalid", arguments: {} })
      const aborted = yield* execute({ callId: "c4", name: "abort", arguments: {}, signal: aborting.signal })
      const fiber = yield* Effect.fork(execute({ callId: "c5", name: "slow", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("10 millis")
      const timeout = yield* Fiber.join(fiber)
      for (const result of [thrown, invalid, aborted, timeout]) {
        assert.isTrue(result.isError)
        assert.isFalse("concludesTurn" in result)
      }
      assert.deepStrictEqual(aborted, ABORTED)
      assert.deepStrictEqual(timeout, timedOut(10))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("§8.13: unregistering removes contributions and re-registering restores them", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const seen: Array<string> = []
      const contribute = Effect.gen(function*() {
        yield* tools.register(echo({ execute: () => Effect.succeed("tool") }))
        yield* tools.onPreExecute((_exec, next) => Effect.zipRight(Effect.sync(() => seen.push("pre")), next))
        yield* tools.guard(() => {
          seen.push("guard")
          return undefined
        })
        yield* tools.onExecute((_exec, next) => Effect.zipRight(Effect.sync(() => seen.push("around")), next))
        yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => seen.push("post")), next))
        yield* tools.onResult(() => Effect.sync(() => seen.push("observe")))
      })
      const owner = yield* Scope.make()
      yield* Scope.extend(contribute, owner)
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), echoed("tool"))
      assert.deepStrictEqual(seen, ["pre", "guard", "around", "post", "observe"])
      yield* Scope.close(owner, Exit.void)
      seen.length = 0
      assert.deepStrictEqual(yield* execute({ callId: "c2", name: "echo", arguments: {} }), unknownTool("echo"))
      assert.deepStrictEqual(seen, [])
      assert.deepStrictEqual(yield* tools.schemas(), [])
      const again = yield* Scope.make()
      yield* Scope.extend(contribute, again)
      assert.deepStrictEqual(yield* execute({ callId: "c3", name: "echo", arguments: {} }), echoed("tool"))
      assert.deepStrictEqual(seen, ["pre", "guard", "around", "post", "observe"])
      yield* Scope.close(again, Exit.void)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("§8.13: contexts survive a body throw and cancellation, the block keeps only its own", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        execute: (_args, ctx) =>
          Effect.zipRight(Effect.sync(() => ctx.deferContext(message("nested"))), Effect.fail(new Error("exploded")))
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { ...errorResult("exploded"), additionalContexts: [context("ctx-1", "nested")] })
    }).pipe(Effect.provide(Presets.layerTest())))
})
