/**
 * Fault injection: random hooks at each stage (allow / deny / fail / defect / cancel / …), a
 * random cancellation point (signal abort or fiber interruption), and a PREC-1 oracle.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FastCheck as fc, Layer, Logger } from "effect"
import * as Presets from "../layers/Presets.js"
import type { ToolExecution } from "../src/Execution.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { HarnessError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import { ToolRuntime } from "../src/ToolRuntime.js"
import { text } from "./fixtures/tools.js"
import { isDeepFrozen } from "./fixtures/runtime.js"

type Stage = "before" | "pre" | "around" | "body" | "post" | "none"

interface Scenario {
  readonly pre: "allow" | "deny" | "fail" | "die" | "cancel"
  readonly guard: "none" | "deny" | "throw"
  readonly around: "pass" | "fail" | "die" | "short"
  readonly body: "ok" | "fail" | "die"
  readonly stubborn: boolean
  readonly post: "accept" | "block" | "fail" | "die"
  readonly observer: "ok" | "fail" | "die"
  readonly finalizer: "none" | "keep" | "throw"
  readonly abortAt: Stage
  readonly mode: "signal" | "interrupt"
}

const pick = <const A extends string>(...values: ReadonlyArray<A>): fc.Arbitrary<A> => fc.constantFrom(...values)

const scenario: fc.Arbitrary<Scenario> = fc.record({
  pre: pick("allow", "allow", "deny", "fail", "die", "cancel"),
  guard: pick("none", "none", "deny", "throw"),
  around: pick("pass", "pass", "fail", "die", "short"),
  body: pick("ok", "ok", "fail", "die"),
  stubborn: fc.boolean(),
  post: pick("accept", "accept", "block", "fail", "die"),
  observer: pick("ok", "fail", "die"),
  finalizer: pick("none", "keep", "throw"),
  abortAt: pick<Stage>("before", "pre", "around", "body", "post", "none"),
  mode: pick("signal", "interrupt")
}).map((s) => s.abortAt === "before" ? { ...s, mode: "signal" as const } : s)

interface Expected {
  readonly isError: boolean
  readonly message?: string
  readonly code?: string
}

const ABD: Expected = { isError: true, message: "tool call aborted before dispatch", code: "ABORTED_BEFORE_DISPATCH" }
const ABORTED: Expected = { isError: true, message: "tool call aborted", code: "ABORTED" }
const SUCCESS: Expected = { isError: false }
const coded = (stage: string): Expected => ({ isError: true, message: `${stage} failed`, code: "INJECTED" })
const died = (stage: string): Expected => ({ isError: true, message: `${stage} died` })

/** PREC-1, walked stage by stage. */
const oracle = (s: Scenario): Expected => {
  const finish = (r: Expected): Expected =>
    s.finalizer === "throw" ? { isError: true, message: "finalizer failed", code: "INJECTED" } : r
  if (s.abortAt === "before") return finish(ABD)
  let aborted = s.abortAt === "pre"
  let bodyInvoked = false
  const post = (r: Expected): Expected => {
    if (s.abortAt === "post") aborted = true
    if (s.post === "fail") return finish(coded("post"))
    if (s.post === "die") return finish(died("post"))
    const decided = s.post === "block" ? { isError: true, message: "blocked" } : r
    if (aborted && !decided.isError) return finish(bodyInvoked ? ABORTED : ABD)
    return finish(decided)
  }
  if (s.pre === "fail") return finish(coded("pre"))
  if (s.pre === "die") return finish(died("pre"))
  if (s.pre === "deny") return post({ isError: true, message: "denied" })
  if (s.pre === "cancel") return post(ABD)
  if (s.guard === "throw") return finish(died("guard"))
  if (s.guard === "deny") return post({ isError: true, message: "guarded" })
  if (aborted) return post(ABD)
  if (s.abortAt === "around") aborted = true
  if (s.around === "fail") return finish(coded("around"))
  if (s.around === "die") return finish(died("around"))
  let r: Expected
  if (s.around === "short") {
    r = SUCCESS
  } else if (aborted) {
    r = ABD
  } else {
    bodyInvoked = true
    if (s.abortAt === "body") {
      aborted = true
      r = !s.stubborn ? ABORTED : s.body === "ok" ? ABORTED : s.body === "fail" ? coded("body") : died("body")
    } else {
      r = s.body === "ok" ? SUCCESS : s.body === "fail" ? coded("body") : died("body")
    }
  }
  if (aborted && !r.isError) r = bodyInvoked ? ABORTED : ABD
  return post(r)
}

const injected = (stage: string) => new HarnessError({ message: `${stage} failed`, code: "INJECTED" })

const runScenario = (s: Scenario) =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry
    const runtime = yield* ToolRuntime
    const entered = yield* Deferred.make<void>()
    const observed: Array<[ToolExecution, ToolResult]> = []
    let finalizerCalls = 0
    let bodyStarted = 0
    let bodyExited = 0
    const waitIfAbortPoint = (stage: Stage, signal: AbortSignal) =>
      s.abortAt !== stage ? Effect.void : Effect.zipRight(
        Deferred.succeed(entered, undefined),
        Effect.async<void>((resume) => {
          if (signal.aborted) return resume(Effect.void)
          signal.addEventListener("abort", () => resume(Effect.void), { once: true })
        })
      )
    const bodyBehaviour = Effect.suspend(() =>
      s.body === "ok"
        ? Effect.succeed("done")
        : s.body === "fail"
        ? Effect.fail(injected("body"))
        : Effect.die(new Error("body died"))
    )
    const tool: ToolDefinition<never> = {
      name: "probe",
      description: "fault injection",
      parameters: { type: "object" },
      output: { schema: { type: "string" }, render: (_args, value) => text(value as string) },
      execute: (_args, ctx) => {
        const run = Effect.zipRight(waitIfAbortPoint("body", ctx.signal), bodyBehaviour)
        return Effect.sync(() => bodyStarted++).pipe(
          Effect.zipRight(s.stubborn ? Effect.uninterruptible(run) : run),
          Effect.ensuring(Effect.sync(() => bodyExited++))
        )
      },
      ...(s.finalizer === "none" ? {} : {
        finalizeContent: () => {
          finalizerCalls++
          if (s.finalizer === "throw") throw injected("finalizer")
          return undefined
        }
      })
    }
    yield* registry.register(tool)
    yield* registry.onPreExecute((exec, next) =>
      Effect.zipRight(
        waitIfAbortPoint("pre", exec.signal),
        Effect.suspend(() => {
          switch (s.pre) {
            case "allow":
              return next
            case "deny":
              return Effect.succeed(PreDecision.Deny({ reason: "denied" }))
            case "cancel":
              return Effect.succeed(PreDecision.Cancel())
            case "fail":
              return Effect.fail(injected("pre"))
            case "die":
              return Effect.die(new Error("pre died"))
          }
        })
      )
    )
    if (s.guard !== "none") {
      yield* registry.guard(() => {
        if (s.guard === "throw") throw new Error("guard died")
        return "guarded"
      })
    }
    yield* registry.onExecute((exec, next) =>
      Effect.zipRight(
        waitIfAbortPoint("around", exec.signal),
        Effect.suspend(() => {
          switch (s.around) {
            case "pass":
              return next
            case "short":
              return Effect.succeed({ isError: false as const, value: "short", content: text("ignored") })
            case "fail":
              return Effect.fail(injected("around"))
            case "die":
              return Effect.die(new Error("around died"))
          }
        })
      )
    )
    yield* registry.onPostExecute((exec, _result, next) =>
      Effect.zipRight(
        waitIfAbortPoint("post", exec.signal),
        Effect.suspend(() => {
          switch (s.post) {
            case "accept":
              return next
            case "block":
              return Effect.succeed(PostDecision.Block({ feedback: text("blocked") }))
            case "fail":
              return Effect.fail(injected("post"))
            case "die":
              return Effect.die(new Error("post died"))
          }
        })
      )
    )
    yield* registry.onResult((exec, result) =>
      Effect.suspend(() => {
        observed.push([exec, result])
        return s.observer === "ok"
          ? Effect.void
          : s.observer === "fail"
          ? Effect.fail(injected("observer"))
          : Effect.die(new Error("observer died"))
      })
    )
    const controller = new AbortController()
    if (s.abortAt === "before") controller.abort()
    const input = { callId: "c1", name: "probe", arguments: {}, signal: controller.signal }
    const fiber = yield* Effect.fork(runtime.execute(input))
    if (s.abortAt !== "before" && s.abortAt !== "none") {
      const reached = yield* Effect.raceFirst(
        Effect.as(Deferred.await(entered), true),
        Effect.as(Fiber.await(fiber), false)
      )
      if (reached) {
        if (s.mode === "signal") controller.abort()
        else yield* Fiber.interrupt(fiber)
      }
    }
    const exit = yield* Fiber.await(fiber)
    return { exit, observed, finalizerCalls, bodyStarted, bodyExited }
  })

const testLayer = Layer.merge(Presets.layerTest(), Logger.replace(Logger.defaultLogger, Logger.none))

describe("ToolRuntime fault injection", () => {
  it.live.prop(
    "PREC-1 / EXEC-2 / D-14: one frozen result, observed once, finalizer at most once, bodies quiescent",
    [scenario],
    ([s]) =>
      Effect.gen(function*() {
        const { bodyExited, bodyStarted, exit, finalizerCalls, observed } = yield* runScenario(s)
        assert.strictEqual(observed.length, 1, "exactly one observer notification")
        const [exec, result] = observed[0]!
        if (Exit.isSuccess(exit)) assert.strictEqual(exit.value, result, "returned === observed")
        else assert.isTrue(s.mode === "interrupt" && Exit.isInterrupted(exit), "only an interrupted caller gets no value")
        assert.isTrue(isDeepFrozen(result), "result deep-frozen")
        assert.isTrue(Object.isFrozen(exec), "execution frozen")
        assert.strictEqual(finalizerCalls, s.finalizer === "none" ? 0 : 1, "finalizer exactly once when captured")
        assert.strictEqual(bodyStarted, bodyExited, "no body fiber left running")
        const expected = oracle(s)
        assert.strictEqual(result.isError, expected.isError, `isError for ${JSON.stringify(s)}`)
        if (result.isError && expected.isError) {
          assert.strictEqual(result.error.message, expected.message, `message for ${JSON.stringify(s)}`)
          assert.strictEqual(result.error.info?.code, expected.code, `code for ${JSON.stringify(s)}`)
        }
      }).pipe(Effect.scoped, Effect.provide(testLayer)),
    { fastCheck: { numRuns: 300 } }
  )
})
