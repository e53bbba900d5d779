/**
 * Cancellation (ERR-4, PREC-1 rows 7–13, T-CANCEL-*), quiescence and fiber interruption as the
 * caller's abort (D-14).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import * as Presets from "../layers/Presets.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import { defineTool } from "../src/Tool.js"
import { HarnessError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import {
  ABORTED,
  ABORTED_BEFORE_DISPATCH,
  context,
  echo,
  errorResult,
  execute,
  info,
  instrument,
  isPending,
  message,
  probeTool,
  setup,
  setupTool,
  signalDone,
  stubbornBody,
  text,
  waitingBody,
  withContexts
} from "./fixtures/runtime.js"

describe("CANCEL (cancellation outcomes)", () => {
  it.scoped("T-CANCEL-005: a late success becomes ABORTED and keeps the body's context", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* tools.register(echo({
        execute: (_args, ctx) => Effect.as(Effect.sync(() => ctx.deferContext(message("child"))), "ok")
      }))
      yield* tools.onExecute((_exec, next) =>
        Effect.gen(function*() {
          const result = yield* next
          yield* Deferred.succeed(holding, undefined)
          yield* Deferred.await(release)
          return result
        })
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(holding)
      controller.abort()
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), withContexts(ABORTED, [context("ctx-1", "child")]))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-CANCEL-010: quiescence — execute stays pending while an uncooperative body runs after the abort", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const finished: Array<string> = []
      yield* tools.register(echo({
        execute: stubbornBody(started, release, (ctx) =>
          Effect.sync(() => {
            ctx.deferContext(message("still here"))
            finished.push("body done")
            return "late"
          }))
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(started)
      controller.abort()
      assert.isTrue(yield* isPending(fiber))
      assert.deepStrictEqual(finished, [])
      yield* Deferred.succeed(release, undefined)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(finished, ["body done"])
      assert.deepStrictEqual(result, withContexts(ABORTED, [context("ctx-1", "still here")]))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-CANCEL-010: quiescence with a Promise body that ignores its signal", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      let resolve: (value: string) => void = () => {}
      yield* tools.register(defineTool({
        name: "promise",
        description: "ignores its signal",
        parameters: {},
        output: { schema: { type: "string" }, render: (_args, value) => text(value) },
        execute: () =>
          new Promise<string>((r) => {
            resolve = r
            signalDone(started)
          })
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "promise", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(started)
      controller.abort()
      assert.isTrue(yield* isPending(fiber))
      resolve("late")
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-14: an Effect body's fiber is interrupted (its finalizers run) and its signal aborts on caller abort", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      const events: Array<string> = []
      yield* tools.register(echo({
        execute: (_args, ctx) =>
          Effect.gen(function*() {
            ctx.signal.addEventListener("abort", () => events.push("signal aborted"))
            yield* Deferred.succeed(started, undefined)
            return yield* Effect.never
          }).pipe(Effect.ensuring(Effect.sync(() => events.push("finalizer ran"))))
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(started)
      controller.abort()
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
      assert.deepStrictEqual(events, ["signal aborted", "finalizer ran"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-CANCEL-008: an error the body raises after the abort (uninterruptible cleanup) is kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* tools.register(echo({
        execute: stubbornBody(
          started,
          release,
          () => Effect.fail(new HarnessError({ message: "tool failed", code: "TOOL_FAILURE" }))
        )
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(started)
      controller.abort()
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(
        yield* Fiber.join(fiber),
        errorResult("tool failed", info("HarnessError", "TOOL_FAILURE"))
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-CANCEL-009: a post failure after the abort is kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(echo())
      yield* tools.onPostExecute(() =>
        Effect.suspend(() => {
          controller.abort()
          return Effect.fail(new HarnessError({ message: "post failed", code: "POST_FAILURE" }))
        })
      )
      assert.deepStrictEqual(
        yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }),
        errorResult("post failed", info("HarnessError", "POST_FAILURE"))
      )
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("D-14 (interrupting the calling fiber is the caller's abort)", () => {
  it.scoped("D-14: interrupting execute while the body waits interrupts the body; observers see exactly one ABORTED", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const interrupted = { count: 0 }
      yield* tools.register(probeTool(probe, { execute: waitingBody(started, interrupted) }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.strictEqual(interrupted.count, 1)
      assert.strictEqual(probe.observed.length, 1)
      assert.deepStrictEqual(probe.observed[0]!.result, ABORTED)
      assert.deepStrictEqual(probe.postSeen, [ABORTED])
      assert.strictEqual(probe.count("fin"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-14: the interruption completes only after an uncooperative body settles and the call finished", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* tools.register(probeTool(probe, { execute: stubbornBody(started, release) }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      assert.isTrue(yield* isPending(interrupter))
      assert.isTrue(yield* isPending(fiber))
      assert.isTrue(probe.bodies.length === 0 && probe.observed.length === 0)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(interrupter)
      assert.strictEqual(probe.observed.length, 1)
      assert.deepStrictEqual(probe.observed[0]!.result, ABORTED)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-14: a pre hook is not cut in half by the interruption; the outcome is ABORTED_BEFORE_DISPATCH", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const hook: Array<string> = []
      yield* tools.onPreExecute((_exec, next) =>
        Effect.gen(function*() {
          yield* Deferred.succeed(entered, undefined)
          yield* Deferred.await(release)
          hook.push("completed")
          return yield* next
        })
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(entered)
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      assert.isTrue(yield* isPending(interrupter))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(interrupter)
      assert.deepStrictEqual(hook, ["completed"])
      assert.strictEqual(probe.count("body"), 0)
      assert.strictEqual(probe.observed.length, 1)
      assert.deepStrictEqual(probe.observed[0]!.result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-14: a post hook is not cut in half; a success after post becomes ABORTED", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* tools.onPostExecute((_exec, _result, next) =>
        Effect.gen(function*() {
          yield* Deferred.succeed(entered, undefined)
          yield* Deferred.await(release)
          return yield* next
        })
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(entered)
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      assert.isTrue(yield* isPending(interrupter))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(interrupter)
      assert.strictEqual(probe.observed.length, 1)
      assert.deepStrictEqual(probe.observed[0]!.result, ABORTED)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-14: a denial decided while the fiber is being interrupted is kept", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* tools.onPreExecute(() =>
        Effect.gen(function*() {
          yield* Deferred.succeed(entered, undefined)
          yield* Deferred.await(release)
          return PreDecision.Deny({ reason: "denied anyway" })
        })
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(entered)
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      assert.isTrue(yield* isPending(interrupter))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(interrupter)
      assert.deepStrictEqual(probe.observed.map((o) => o.result), [errorResult("denied anyway")])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-15: execute never fails; a blocked, interrupted or failing call still yields exactly one result", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setupTool({ execute: () => Effect.die("boom") })
      yield* tools.onPostExecute(() => Effect.succeed(PostDecision.Accept({})))
      const exit = yield* Effect.exit(execute({ callId: "c1", name: "echo", arguments: {} }))
      assert.isTrue(Exit.isSuccess(exit))
      assert.deepStrictEqual(Exit.isSuccess(exit) && exit.value, errorResult("boom"))
      assert.strictEqual(probe.observed.length, 1)
    }).pipe(Effect.provide(Presets.layerTest())))
})
