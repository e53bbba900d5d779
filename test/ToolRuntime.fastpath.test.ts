/**
 * Targeted tests of the runtime's fast paths: the inline (caller's fiber) path keeps D-14, a
 * call that gains hooks mid-call moves onto its own fiber, the fibers each kind of call starts,
 * the native deadline on the live clock and under `TestClock`, lazy `AbortController`s, and
 * the TIMEOUT ordering under both the fast and the general runtime.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope, TestClock } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as TimeoutPolicy from "../layers/TimeoutPolicy.js"
import type { RunContext, ToolExecution } from "../src/Execution.js"
import { PostDecision } from "../src/Policy.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type * as ToolRegistryModule from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import {
  abortedSignal,
  activeTimers,
  CALLER_REASON,
  countingAbortControllers,
  makeRuntimes,
  reasonLabel,
  StartCounter
} from "./fixtures/fastpath.js"
import { ABORTED, ABORTED_BEFORE_DISPATCH, bounded, echo, echoed, isPending, text, timedOut } from "./fixtures/runtime.js"

const INTERRUPTED = "dom:AbortError:the calling fiber was interrupted"

const call = (runtime: ToolRuntime.Service, signal?: AbortSignal) =>
  runtime.execute({ callId: "c1", name: "echo", arguments: { text: "hi" }, ...(signal ? { signal } : {}) })

/** The number of fibers a call starts, counted by a supervisor on the calling fiber. */
const fibersOf = (runtime: ToolRuntime.Service) =>
  Effect.gen(function*() {
    const counter = new StartCounter()
    const result = yield* Effect.supervised(call(runtime), counter)
    return { result, started: counter.started, ended: counter.ended }
  })

describe("D-14 on the inline path", () => {
  it.scoped(
    "D-14: interrupting the caller of a hook-less call aborts the body's signal with the interruption reason and awaits the interrupted body",
    () =>
      Effect.gen(function*() {
        const { fast, registry } = yield* makeRuntimes
        const started = yield* Deferred.make<void>()
        const cleanupStarted = yield* Deferred.make<void>()
        const releaseCleanup = yield* Deferred.make<void>()
        yield* Effect.addFinalizer(() => Deferred.succeed(releaseCleanup, undefined))
        const events: Array<string> = []
        yield* registry.register(echo({
          execute: (_args, ctx) =>
            Effect.zipRight(
              Effect.sync(() =>
                ctx.signal.addEventListener("abort", () => events.push(`signal ${reasonLabel(ctx.signal.reason)}`))
              ),
              Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
            ).pipe(
              Effect.onInterrupt(() =>
                Effect.zipRight(
                  Deferred.succeed(cleanupStarted, undefined),
                  Effect.zipRight(Deferred.await(releaseCleanup), Effect.sync(() => events.push("finalizer ran")))
                )
              )
            )
        }))
        const counter = new StartCounter()
        const caller = yield* Effect.fork(Effect.supervised(call(fast), counter))
        yield* Deferred.await(started)
        assert.strictEqual(counter.started, 1, "only the body's fiber: the call itself runs on the caller's fiber")
        const interrupter = yield* Effect.fork(Fiber.interrupt(caller))
        yield* Deferred.await(cleanupStarted)
        assert.deepStrictEqual(events, [`signal ${INTERRUPTED}`])
        assert.isTrue(yield* isPending(interrupter), "the interrupt waits for the body's cleanup")
        yield* Deferred.succeed(releaseCleanup, undefined)
        const exit = yield* Fiber.join(interrupter)
        assert.isTrue(Exit.isInterrupted(exit))
        assert.deepStrictEqual(events, [`signal ${INTERRUPTED}`, "finalizer ran"])
        assert.deepStrictEqual([counter.started, counter.ended], [1, 1], "nothing left running")
      })
  )

  it.scoped("D-14: the fast and the general runtime give an interrupted caller's body the same view (signal first, then interruption)", () =>
    Effect.gen(function*() {
      const { fast, general, registry } = yield* makeRuntimes
      let seen: Array<string> = []
      let started = yield* Deferred.make<void>()
      yield* registry.register(echo({
        execute: (_args, ctx) =>
          Effect.zipRight(
            Effect.sync(() => ctx.signal.addEventListener("abort", () => seen.push(reasonLabel(ctx.signal.reason)))),
            Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
          ).pipe(Effect.onInterrupt(() => Effect.sync(() => seen.push("interrupted"))))
      }))
      const views: Array<ReadonlyArray<string>> = []
      for (const runtime of [fast, general]) {
        seen = []
        started = yield* Deferred.make<void>()
        const caller = yield* Effect.fork(call(runtime))
        yield* Deferred.await(started)
        assert.isTrue(Exit.isInterrupted(yield* Fiber.interrupt(caller)))
        views.push(seen)
      }
      assert.deepStrictEqual(views, [[INTERRUPTED, "interrupted"], [INTERRUPTED, "interrupted"]])
    }))
})

describe("hooks that appear mid-call", () => {
  /** A tool whose body registers a post-execute hook and an observer (the call starts hook-less). */
  const registerMidPost = (
    registry: ToolRegistryModule.Service,
    scope: Scope.Scope,
    hook: (exec: ToolExecution, result: ToolResult) => Effect.Effect<PostDecision>,
    observer: (result: ToolResult) => void = () => {}
  ) =>
    echo({
      execute: (args) =>
        Effect.zipRight(
          Scope.extend(
            Effect.zipRight(
              registry.onPostExecute((exec, result) => hook(exec, result)),
              registry.onResult((_exec, result) => Effect.sync(() => observer(result)))
            ),
            scope
          ),
          Effect.succeed((args as { readonly text: string }).text)
        )
    })

  it.scoped("HOST-1 / D-14: a post-execute hook the body registers runs for this very call", () =>
    Effect.gen(function*() {
      const { fast, registry } = yield* makeRuntimes
      const scope = yield* Scope.make()
      const seen: Array<ToolResult> = []
      yield* registry.register(registerMidPost(registry, scope, (_exec, result) =>
        Effect.sync(() => {
          seen.push(result)
          return PostDecision.Accept({ content: text("from the mid-call hook") })
        })))
      const result = yield* call(fast)
      assert.deepStrictEqual(seen, [echoed("hi")])
      assert.deepStrictEqual(result, { isError: false, value: "hi", content: text("from the mid-call hook") })
    }))

  it.scoped(
    "D-14: when that hook suspends and the caller is interrupted, exec.signal aborts while the hook still runs (the call moved onto its own fiber)",
    () =>
      Effect.gen(function*() {
        const { fast, registry } = yield* makeRuntimes
        const scope = yield* Scope.make()
        const entered = yield* Deferred.make<ToolExecution>()
        const release = yield* Deferred.make<void>()
        yield* Effect.addFinalizer(() => Deferred.succeed(release, undefined))
        const events: Array<string> = []
        yield* registry.register(registerMidPost(
          registry,
          scope,
          (exec) =>
            Effect.gen(function*() {
              yield* Deferred.succeed(entered, exec)
              yield* Deferred.await(release)
              events.push(`hook done, signal ${reasonLabel(exec.signal.reason)}`)
              return PostDecision.Accept({})
            }),
          (result) => events.push(`observed ${result.isError ? result.error.info?.code : "success"}`)
        ))
        const counter = new StartCounter()
        const caller = yield* Effect.fork(Effect.supervised(call(fast), counter))
        const exec = yield* Deferred.await(entered)
        assert.strictEqual(counter.started, 2, "the body's fiber, then the call's own fiber once hooks appeared")
        assert.isFalse(exec.signal.aborted)
        const interrupter = yield* Effect.fork(Fiber.interrupt(caller))
        yield* abortedSignal(exec.signal)
        assert.strictEqual(reasonLabel(exec.signal.reason), INTERRUPTED)
        assert.deepStrictEqual(events, [], "the hook is still running")
        assert.isTrue(yield* isPending(interrupter), "the interrupt waits for the hook")
        yield* Deferred.succeed(release, undefined)
        assert.isTrue(Exit.isInterrupted(yield* Fiber.join(interrupter)))
        assert.deepStrictEqual(events, [`hook done, signal ${INTERRUPTED}`, "observed ABORTED"])
        assert.deepStrictEqual([counter.started, counter.ended], [2, 2])
      })
  )
})

describe("fibers per call", () => {
  it.scoped("a hook-less call whose body returns Effect.succeed starts 0 fibers (the body is an Exit, the call runs on the caller's fiber)", () =>
    Effect.gen(function*() {
      const { fast, general, registry } = yield* makeRuntimes
      yield* registry.register(echo())
      const measured = yield* fibersOf(fast)
      assert.deepStrictEqual(measured, { result: echoed("hi"), started: 0, ended: 0 })
      const reference = yield* fibersOf(general)
      assert.deepStrictEqual(reference, { result: echoed("hi"), started: 2, ended: 2 }, "general path: its own + the body's")
    }))

  it.scoped("a hook-less call whose body suspends starts 1 fiber (the body's; the call stays on the caller's fiber)", () =>
    Effect.gen(function*() {
      const { fast, registry } = yield* makeRuntimes
      yield* registry.register(echo({ execute: () => Effect.as(Effect.yieldNow(), "hi") }))
      assert.deepStrictEqual(yield* fibersOf(fast), { result: echoed("hi"), started: 1, ended: 1 })
    }))

  it.scoped("a call with a pre-execute hook starts 2 fibers with a suspending body (its own + the body's), 1 with an Exit body (its own)", () =>
    Effect.gen(function*() {
      const { fast, registry } = yield* makeRuntimes
      yield* registry.onPreExecute((_exec, next) => next)
      const exitBody = yield* Scope.make()
      yield* Scope.extend(registry.register(echo()), exitBody)
      assert.deepStrictEqual(yield* fibersOf(fast), { result: echoed("hi"), started: 1, ended: 1 })
      yield* Scope.close(exitBody, Exit.void)
      yield* registry.register(echo({ execute: () => Effect.as(Effect.yieldNow(), "hi") }))
      assert.deepStrictEqual(yield* fibersOf(fast), { result: echoed("hi"), started: 2, ended: 2 })
    }))

  it.live("TIMEOUT-2: a hook-less call under the timeout policy on the live clock starts 0 fibers (a host timer, no timer fiber)", () =>
    Effect.gen(function*() {
      const { fast, registry } = yield* makeRuntimes
      yield* registry.onExecute(TimeoutPolicy.makeWrapper(registry, { defaultTimeoutMs: 60_000 }))
      yield* registry.register(echo())
      const before = activeTimers()
      assert.deepStrictEqual(yield* fibersOf(fast), { result: echoed("hi"), started: 0, ended: 0 })
      assert.strictEqual(activeTimers(), before)
    }).pipe(Effect.scoped))
})

const liveTimeoutLayer = (budget: number) =>
  Layer.mergeAll(ToolRuntime.layer, TimeoutPolicy.layerWithDefault(budget)).pipe(
    Layer.provideMerge(InMemoryToolRegistry.layer)
  )

describe("the native deadline on the live clock", () => {
  it.live("TIMEOUT-2 / TIMEOUT-4: a real 20 ms budget over a body waiting on its signal answers TOOL_TIMEOUT; the body saw a TimeoutReason", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const runtime = yield* ToolRuntime.ToolRuntime
      const seen: Array<unknown> = []
      const interrupted: Array<boolean> = []
      yield* registry.register(echo({
        execute: (_args, ctx) =>
          Effect.zipRight(
            Effect.sync(() => ctx.signal.addEventListener("abort", () => seen.push(ctx.signal.reason))),
            Effect.never
          ).pipe(Effect.onInterrupt(() => Effect.sync(() => interrupted.push(true))))
      }))
      const result = yield* bounded(call(runtime), 2_000)
      assert.deepStrictEqual(result, timedOut(20))
      assert.deepStrictEqual(interrupted, [true], "the body was interrupted and awaited")
      assert.strictEqual(seen.length, 1)
      assert.instanceOf(seen[0], TimeoutPolicy.TimeoutReason)
      assert.strictEqual((seen[0] as TimeoutPolicy.TimeoutReason).timeoutMs, 20)
      assert.strictEqual((seen[0] as TimeoutPolicy.TimeoutReason).message, "TOOL_TIMEOUT after 20ms")
    }).pipe(Effect.scoped, Effect.provide(liveTimeoutLayer(20))))

  it.live("TIMEOUT-2 / D-20: a call that settles before its budget leaves no host timer behind (one exists while it runs)", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const runtime = yield* ToolRuntime.ToolRuntime
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* Effect.addFinalizer(() => Deferred.succeed(release, undefined))
      yield* registry.register(echo({
        execute: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.as(Deferred.await(release), "hi"))
      }))
      const before = activeTimers()
      const caller = yield* Effect.fork(call(runtime))
      yield* Deferred.await(started)
      assert.strictEqual(activeTimers(), before + 1, "the armed deadline is one host timer")
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(caller), echoed("hi"))
      assert.strictEqual(activeTimers(), before, "cancelled on settle")
    }).pipe(Effect.scoped, Effect.provide(liveTimeoutLayer(60_000))))
})

describe("lazy AbortControllers", () => {
  const armed = (execute: (ctx: RunContext) => Effect.Effect<string>) =>
    Effect.gen(function*() {
      const { fast, registry } = yield* makeRuntimes
      yield* registry.onExecute(TimeoutPolicy.makeWrapper(registry, { defaultTimeoutMs: 60_000 }))
      yield* registry.register(echo({ execute: (_args, ctx) => execute(ctx) }))
      return yield* countingAbortControllers((made) => Effect.map(call(fast), (result) => ({ result, made: made() })))
    })

  it.scoped("TIMEOUT-3: a timeout-armed call whose body never reads ctx.signal makes no AbortController", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* armed(() => Effect.succeed("hi")), { result: echoed("hi"), made: 0 })
      assert.deepStrictEqual(yield* armed(() => Effect.as(Effect.yieldNow(), "hi")), { result: echoed("hi"), made: 0 })
    }))

  it.scoped("TIMEOUT-3: a timeout-armed call whose body reads ctx.signal makes exactly one", () =>
    Effect.gen(function*() {
      const read = (ctx: RunContext) => Effect.sync(() => (ctx.signal.aborted ? "aborted" : "hi"))
      assert.deepStrictEqual(yield* armed(read), { result: echoed("hi"), made: 1 })
    }))

  it.scoped("the counter restores the global AbortController", () =>
    Effect.gen(function*() {
      const original = globalThis.AbortController
      const inside = yield* countingAbortControllers(() => Effect.sync(() => globalThis.AbortController))
      assert.notStrictEqual(inside, original)
      assert.strictEqual(globalThis.AbortController, original)
    }))
})

describe("TIMEOUT ordering, fast and general", () => {
  const BUDGET = 50

  /** A body that holds (uninterruptibly) until released, then answers "late"; both events land while it holds. */
  const ordered = (first: "caller" | "deadline") =>
    Effect.gen(function*() {
      const { fast, general, registry } = yield* makeRuntimes
      yield* registry.onExecute(TimeoutPolicy.makeWrapper(registry, { defaultTimeoutMs: BUDGET }))
      let started = yield* Deferred.make<RunContext>()
      let release = yield* Deferred.make<void>()
      const seen: Array<string> = []
      yield* registry.register(echo({
        execute: (_args, ctx) =>
          Effect.uninterruptible(
            Effect.zipRight(
              Deferred.succeed(started, ctx),
              Effect.zipRight(Deferred.await(release), Effect.sync(() => {
                seen.push(reasonLabel(ctx.signal.reason))
                return "late"
              }))
            )
          )
      }))
      const results: Array<ToolResult> = []
      for (const runtime of [fast, general]) {
        started = yield* Deferred.make<RunContext>()
        release = yield* Deferred.make<void>()
        const controller = new AbortController()
        const caller = yield* Effect.fork(call(runtime, controller.signal))
        const ctx = yield* Deferred.await(started)
        const abort = Effect.sync(() => controller.abort(CALLER_REASON))
        const deadline = Effect.zipRight(TestClock.adjust(BUDGET), abortedSignal(ctx.signal))
        yield* first === "caller" ? Effect.zipRight(abort, deadline) : Effect.zipRight(deadline, abort)
        yield* Deferred.succeed(release, undefined)
        results.push(yield* Fiber.join(caller))
      }
      return { results, seen }
    })

  it.scoped("TIMEOUT-3 / TIMEOUT-4: the caller aborts first, then the deadline passes → ABORTED under both runtimes", () =>
    Effect.gen(function*() {
      const { results, seen } = yield* ordered("caller")
      assert.deepStrictEqual(results, [ABORTED, ABORTED])
      assert.deepStrictEqual(seen, ["caller", "caller"])
    }))

  it.scoped("TIMEOUT-3 / TIMEOUT-4: the deadline fires first, then the caller aborts → TOOL_TIMEOUT under both runtimes", () =>
    Effect.gen(function*() {
      const { results, seen } = yield* ordered("deadline")
      assert.deepStrictEqual(results, [timedOut(BUDGET), timedOut(BUDGET)])
      assert.deepStrictEqual(seen, [`timeout:${BUDGET}`, `timeout:${BUDGET}`])
    }))
})

describe("the native deadline through the staged steps", () => {
  it.scoped(
    "BODY-1 / TIMEOUT-3: a caller that aborts between prepare and dispatch gets ABORTED_BEFORE_DISPATCH, the body never runs, under both runtimes",
    () =>
      Effect.gen(function*() {
        const { fast, general, registry } = yield* makeRuntimes
        yield* registry.onExecute(TimeoutPolicy.makeWrapper(registry, { defaultTimeoutMs: 50 }))
        let ran = 0
        yield* registry.register(echo({ execute: () => Effect.sync(() => ++ran) }))
        const outcomes: Array<unknown> = []
        for (const runtime of [fast, general]) {
          const controller = new AbortController()
          const prepared = yield* runtime.prepare({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
          assert.strictEqual(prepared._tag, "Dispatch")
          controller.abort(CALLER_REASON)
          const dispatched = yield* runtime.dispatch(prepared.handle)
          const final = dispatched._tag === "PostResult"
            ? yield* runtime.finalize(prepared.handle, dispatched.result)
            : yield* runtime.finish(prepared.handle, dispatched.result)
          outcomes.push([dispatched._tag, final])
        }
        assert.strictEqual(ran, 0)
        assert.deepStrictEqual(outcomes, [["PostResult", ABORTED_BEFORE_DISPATCH], ["PostResult", ABORTED_BEFORE_DISPATCH]])
      })
  )
})
