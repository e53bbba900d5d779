/**
 * The timeout policy (spec §17, TIMEOUT-1…5, T-TMO-*), driven by TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope, TestClock } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as Presets from "../layers/Presets.js"
import * as TimeoutPolicy from "../layers/TimeoutPolicy.js"
import type { RunContext } from "../src/Execution.js"
import * as IdGenerator from "../src/IdGenerator.js"
import { PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { defineTool } from "../src/Tool.js"
import { HarnessError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import {
  ABORTED,
  awaitTimer,
  closeNow,
  echo,
  echoed,
  errorResult,
  execute,
  isPending,
  registerScoped,
  signalDone,
  stubbornBody,
  text,
  timedOut
} from "./fixtures/runtime.js"

const layerWith = (timeout: Layer.Layer<never, never, ToolRegistry>) =>
  Layer.mergeAll(ToolRuntime.layer, timeout).pipe(
    Layer.provideMerge(Layer.mergeAll(InMemoryToolRegistry.layer, IdGenerator.layerCounter()))
  )

/** The runtime without any timeout policy. */
const layerBare = ToolRuntime.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(InMemoryToolRegistry.layer, IdGenerator.layerCounter()))
)

/** A body that reports its start and resolves (cooperatively) with "stopped" when its signal aborts. */
const cooperative = (started: Deferred.Deferred<void>) => (_args: unknown, ctx: RunContext) =>
  Effect.zipRight(
    Deferred.succeed(started, undefined),
    Effect.async<string>((resume) => {
      ctx.signal.addEventListener("abort", () => resume(Effect.succeed("stopped")))
    })
  )

const budgeted = (
  execute: ToolDefinition<never>["execute"],
  timeoutMs = 100,
  overrides: Partial<ToolDefinition<never>> = {}
) => echo({ timeoutMs, execute, ...overrides })

describe("TimeoutPolicy exports", () => {
  it("MAX_TIMEOUT_MS and isValidTimeout follow TIMEOUT-3", () => {
    assert.strictEqual(TimeoutPolicy.MAX_TIMEOUT_MS, 2147483647)
    for (const ok of [1, 0.5, 100, 2147483647]) assert.isTrue(TimeoutPolicy.isValidTimeout(ok), String(ok))
    for (const bad of [0, -1, NaN, Infinity, -Infinity, 2147483648, "100", undefined, null]) {
      assert.isFalse(TimeoutPolicy.isValidTimeout(bad), String(bad))
    }
  })

  it("TimeoutReason carries the TOOL_TIMEOUT code and the budget", () => {
    const reason = new TimeoutPolicy.TimeoutReason(250)
    assert.strictEqual(reason.code, "TOOL_TIMEOUT")
    assert.strictEqual(reason.timeoutMs, 250)
  })

  it("issue 8 item 13(a) / TIMEOUT-3: TimeoutReason is an Error named TimeoutReason, `TOOL_TIMEOUT after <ms>ms`", () => {
    for (const [ms, shown] of [[250, "250"], [0.5, "0.5"], [2147483647, "2147483647"]] as const) {
      const reason = new TimeoutPolicy.TimeoutReason(ms)
      assert.instanceOf(reason, Error)
      assert.instanceOf(reason, TimeoutPolicy.TimeoutReason)
      assert.strictEqual(reason.name, "TimeoutReason")
      assert.strictEqual(reason.message, `TOOL_TIMEOUT after ${shown}ms`)
      assert.strictEqual(String(reason), `TimeoutReason: TOOL_TIMEOUT after ${shown}ms`)
      assert.isTrue(reason.stack?.startsWith(`TimeoutReason: TOOL_TIMEOUT after ${shown}ms`))
      assert.strictEqual(reason.code, "TOOL_TIMEOUT")
      assert.strictEqual(reason.timeoutMs, ms)
    }
  })
})

describe("TIMEOUT-1…5", () => {
  it.scoped("TIMEOUT-1 / T-TMO-001: a tool without timeoutMs is not wrapped; the body gets the caller signal", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const signals: Array<AbortSignal> = []
      const callerSignals: Array<AbortSignal> = []
      yield* tools.register(echo({ execute: (_args, ctx) => Effect.as(Effect.sync(() => signals.push(ctx.signal)), "ok") }))
      yield* tools.onPreExecute((exec, next) => Effect.zipRight(Effect.sync(() => callerSignals.push(exec.signal)), next))
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), echoed("ok"))
      assert.strictEqual(signals[0], callerSignals[0])
      assert.deepStrictEqual(Array.from(yield* TestClock.sleeps()), [])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-TMO-003 / T-TMO-004: a budgeted body gets a derived signal; post and observers see the caller's again", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const seen: Record<string, AbortSignal> = {}
      yield* tools.register(budgeted((_args, ctx) => Effect.as(Effect.sync(() => (seen.body = ctx.signal)), "ok")))
      yield* tools.onPreExecute((exec, next) => Effect.zipRight(Effect.sync(() => (seen.pre = exec.signal)), next))
      yield* tools.onExecute((exec, next) =>
        Effect.gen(function*() {
          seen.inner = exec.signal
          return yield* next
        })
      )
      yield* tools.onExecute((exec, next) =>
        Effect.tap(next, () => Effect.sync(() => (seen.outerAfter = exec.signal))), { prepend: true })
      yield* tools.onPostExecute((exec, _result, next) => Effect.zipRight(Effect.sync(() => (seen.post = exec.signal)), next))
      yield* tools.onResult((exec) => Effect.sync(() => (seen.observer = exec.signal)))
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), echoed("ok"))
      assert.notStrictEqual(seen.body, seen.pre)
      assert.notStrictEqual(seen.inner, seen.pre)
      assert.strictEqual(seen.outerAfter, seen.pre)
      assert.strictEqual(seen.post, seen.pre)
      assert.strictEqual(seen.observer, seen.pre)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-TMO-005: the deadline wins over a cooperative success → exactly TOOL_TIMEOUT", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      yield* tools.register(budgeted(cooperative(started)))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("99 millis")
      assert.isTrue(yield* isPending(fiber))
      yield* TestClock.adjust("51 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), {
        content: text("Error: tool call timed out after 100ms"),
        isError: true,
        error: { message: "tool call timed out after 100ms", info: { name: "ToolTimeoutError", code: "TOOL_TIMEOUT" } }
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-TMO-005: a Promise body that resolves when its signal aborts → TOOL_TIMEOUT", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      yield* tools.register(defineTool({
        name: "fetch",
        description: "promise",
        parameters: {},
        timeoutMs: 100,
        output: { schema: { type: "string" }, render: (_args, value) => text(value) },
        execute: (_args, ctx) =>
          new Promise<string>((resolve) => {
            ctx.signal.addEventListener("abort", () => resolve("stopped"))
            signalDone(started)
          })
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "fetch", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("150 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(100))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-TMO-006: the deadline beats the tool's own abort error (Promise body)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      yield* tools.register(defineTool({
        name: "web",
        description: "promise",
        parameters: {},
        timeoutMs: 100,
        output: { schema: { type: "string" }, render: (_args, value) => text(value) },
        execute: (_args, ctx) =>
          new Promise<string>((_resolve, reject) => {
            ctx.signal.addEventListener("abort", () =>
              reject(new HarnessError({ message: "request aborted", code: "WEB_ABORTED" })))
            signalDone(started)
          })
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "web", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("150 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(100))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-TMO-006: the deadline beats the tool's own abort error (Effect body failing on abort)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      yield* tools.register(budgeted((_args, ctx) =>
        Effect.uninterruptible(Effect.zipRight(
          Deferred.succeed(started, undefined),
          Effect.async<never, HarnessError>((resume) => {
            ctx.signal.addEventListener("abort", () =>
              resume(Effect.fail(new HarnessError({ message: "request aborted", code: "WEB_ABORTED" }))))
          })
        ))
      ))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(100))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("issue 8 item 13(a) / TIMEOUT-3: the body's signal aborts with an Error TimeoutReason (name, message, code, timeoutMs)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const reasons: Array<unknown> = []
      yield* tools.register(budgeted((_args, ctx) =>
        Effect.zipRight(
          Deferred.succeed(started, undefined),
          Effect.async<string>((resume) => {
            ctx.signal.addEventListener("abort", () => {
              reasons.push(ctx.signal.reason)
              resume(Effect.succeed("stopped"))
            })
          })
        ), 125))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("125 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(125))
      assert.strictEqual(reasons.length, 1)
      const reason = reasons[0]
      assert.instanceOf(reason, Error)
      assert.instanceOf(reason, TimeoutPolicy.TimeoutReason)
      const timeout = reason as TimeoutPolicy.TimeoutReason
      assert.strictEqual(timeout.name, "TimeoutReason")
      assert.strictEqual(timeout.message, "TOOL_TIMEOUT after 125ms")
      assert.strictEqual(timeout.code, "TOOL_TIMEOUT")
      assert.strictEqual(timeout.timeoutMs, 125)
    }).pipe(Effect.provide(Presets.layerTest())))

  type ReasonThrower = (ctx: RunContext, started: Deferred.Deferred<void>) => unknown
  const throwsReason: ReadonlyArray<readonly [string, ReasonThrower]> = [
    ["a Promise body rejecting with it", (ctx, started) =>
      new Promise<string>((_resolve, reject) => {
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))
        signalDone(started)
      })],
    ["an Effect body failing with it", (ctx, started) =>
      Effect.uninterruptible(Effect.zipRight(
        Deferred.succeed(started, undefined),
        Effect.async<never, unknown>((resume) => {
          ctx.signal.addEventListener("abort", () => resume(Effect.fail(ctx.signal.reason)))
        })
      ))],
    ["an Effect body throwing it", (ctx, started) =>
      Effect.uninterruptible(Effect.zipRight(
        Deferred.succeed(started, undefined),
        Effect.async<never>((resume) => {
          ctx.signal.addEventListener("abort", () =>
            resume(Effect.sync(() => {
              throw ctx.signal.reason
            })))
        })
      ))]
  ]
  for (const [label, body] of throwsReason) {
    it.scoped(`issue 8 item 13(a) / T-TMO-006 / TIMEOUT-4: ${label} throws an Error; the result is exactly TOOL_TIMEOUT`, () =>
      Effect.gen(function*() {
        const tools = yield* ToolRegistry
        const started = yield* Deferred.make<void>()
        const inner: Array<unknown> = []
        yield* tools.register(budgeted((_args, ctx) => body(ctx, started) as Effect.Effect<string>))
        yield* tools.onExecute((_exec, next) => Effect.tap(next, (result) => Effect.sync(() => inner.push(result))))
        const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
        yield* Deferred.await(started)
        yield* awaitTimer
        yield* TestClock.adjust("100 millis")
        assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(100))
        assert.deepStrictEqual(inner, [errorResult("TOOL_TIMEOUT after 100ms")])
      }).pipe(Effect.provide(Presets.layerTest())))
  }

  it.scoped("issue 8 item 13(a) / TIMEOUT-4: a foreign TimeoutReason with the same budget (outer wrapper) keeps the inner result", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const outer = new AbortController()
      yield* tools.register(budgeted((_args, ctx) =>
        new Promise<string>((_resolve, reject) => {
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))
          signalDone(started)
        }) as unknown as Effect.Effect<string>))
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          exec.signal = outer.signal
          return next
        }), { prepend: true })
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      outer.abort(new TimeoutPolicy.TimeoutReason(100))
      assert.deepStrictEqual(yield* Fiber.join(fiber), errorResult("TOOL_TIMEOUT after 100ms"))
      yield* TestClock.adjust("100 millis")
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-TMO-007: a caller abort before the deadline → ABORTED, not TOOL_TIMEOUT", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const controller = new AbortController()
      yield* tools.register(budgeted(cooperative(started)))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("50 millis")
      controller.abort()
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
      yield* TestClock.adjust("100 millis")
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-TMO-008: timeout first, then a caller abort → TOOL_TIMEOUT, settled only after the body's cleanup", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const controller = new AbortController()
      yield* tools.register(budgeted(stubbornBody(started, release)))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("100 millis")
      controller.abort()
      assert.isTrue(yield* isPending(fiber))
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(100))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("TIMEOUT-5: a body ignoring its signal (uninterruptible sleep) keeps the call pending until it settles", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const done: Array<string> = []
      yield* tools.register(budgeted(() =>
        Effect.uninterruptible(Effect.zipRight(
          Deferred.succeed(started, undefined),
          Effect.as(Effect.zipRight(Effect.sleep("1 second"), Effect.sync(() => done.push("slept"))), "late")
        ))
      ))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("100 millis")
      assert.isTrue(yield* isPending(fiber))
      assert.deepStrictEqual(done, [])
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(100))
      assert.deepStrictEqual(done, ["slept"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("TIMEOUT-5: a Promise body that settles later keeps the call pending until it settles", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      let resolve: (value: string) => void = () => {}
      yield* tools.register(defineTool({
        name: "slow",
        description: "promise",
        parameters: {},
        timeoutMs: 100,
        output: { schema: { type: "string" }, render: (_args, value) => text(value) },
        execute: () =>
          new Promise<string>((r) => {
            resolve = r
            signalDone(started)
          })
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "slow", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("200 millis")
      assert.isTrue(yield* isPending(fiber))
      resolve("finally")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(100))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("TIMEOUT-2: the budget is read from the live definition at wrapper time", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const scope = yield* registerScoped(echo())
      const testScope = yield* Effect.scope
      yield* tools.onPreExecute((_exec, next) =>
        Effect.zipRight(
          Effect.suspend(() => {
            closeNow(scope)
            return Scope.extend(Effect.orDie(tools.register(budgeted(cooperative(started), 20))), testScope)
          }),
          next
        )
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("20 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(20))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("TIMEOUT-4: an upstream (outer wrapper) abort is not this wrapper's timeout → the inner result stays", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      const outer = new AbortController()
      yield* tools.register(budgeted(cooperative(started)))
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          exec.signal = outer.signal
          return next
        }), { prepend: true })
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      outer.abort(new TimeoutPolicy.TimeoutReason(5))
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("TIMEOUT-3: an invalid budget is a wrapper failure (final-result)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const posts: Array<unknown> = []
      yield* tools.register(echo())
      yield* tools.onPostExecute((_exec, result, next) => Effect.zipRight(Effect.sync(() => posts.push(result)), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(
        result,
        errorResult("deadline timeoutMs must be a positive finite number no greater than 2147483647")
      )
      assert.deepStrictEqual(posts, [])
    }).pipe(Effect.provide(layerWith(TimeoutPolicy.layerWithDefault(0)))))

  it.scoped("TimeoutPolicy.layerWithDefault: tools without a budget get the default; declared budgets win", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const startedA = yield* Deferred.make<void>()
      const startedB = yield* Deferred.make<void>()
      yield* tools.register(echo({ name: "plain", execute: cooperative(startedA) }))
      yield* tools.register(budgeted(cooperative(startedB), 30, { name: "own" }))
      const a = yield* Effect.fork(execute({ callId: "a", name: "plain", arguments: {} }))
      const b = yield* Effect.fork(execute({ callId: "b", name: "own", arguments: {} }))
      yield* Deferred.await(startedA)
      yield* Deferred.await(startedB)
      yield* awaitTimer
      yield* TestClock.adjust("30 millis")
      assert.deepStrictEqual(yield* Fiber.join(b), timedOut(30))
      assert.isTrue(yield* isPending(a))
      yield* TestClock.adjust("30 millis")
      assert.deepStrictEqual(yield* Fiber.join(a), timedOut(60))
    }).pipe(Effect.provide(layerWith(TimeoutPolicy.layerWithDefault(60)))))

  it.scoped("T-TMO-010: once the policy is unloaded, a budgeted body gets the caller's own signal", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const signals: Array<readonly [AbortSignal, AbortSignal]> = []
      const callers: Array<AbortSignal> = []
      yield* tools.register(budgeted((_args, ctx) => Effect.as(Effect.sync(() => signals.push([ctx.signal, ctx.signal])), "ok")))
      yield* tools.onPreExecute((exec, next) => Effect.zipRight(Effect.sync(() => callers.push(exec.signal)), next))
      const policy = yield* Scope.make()
      yield* Scope.extend(tools.onExecute(TimeoutPolicy.makeWrapper(tools)), policy)
      yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.notStrictEqual(signals[0]![0], callers[0])
      yield* Scope.close(policy, Exit.void)
      yield* execute({ callId: "c2", name: "echo", arguments: {} })
      assert.strictEqual(signals[1]![0], callers[1])
    }).pipe(Effect.provide(layerBare)))

  it.scoped("TIMEOUT-2: the timer is cleared when the call finishes in time (the deadline never fires later)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const deadlines: Array<AbortSignal> = []
      yield* tools.register(budgeted(() => Effect.succeed("fast")))
      yield* tools.onExecute((exec, next) => Effect.zipRight(Effect.sync(() => deadlines.push(exec.signal)), next))
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), echoed("fast"))
      yield* TestClock.adjust("1 second")
      assert.strictEqual(deadlines.length, 1)
      assert.isFalse(deadlines[0]!.aborted)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("TIMEOUT-1: ask/deny paths never start a timer (the wrapper only runs on dispatch)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(budgeted(() => Effect.succeed("x")))
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "no" })))
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), errorResult("no"))
      assert.deepStrictEqual(Array.from(yield* TestClock.sleeps()), [])
    }).pipe(Effect.provide(Presets.layerTest())))
})
