/**
 * Fault injection with hostile values (issue 8): every callback — pre-execute, guard, approval,
 * around, body, render, projectContent, post-execute, finalizer, observer — may hand back (return,
 * fail with, die with, throw, resolve or reject with) a null-prototype object, a cyclic object, a
 * Proxy whose traps throw, a revoked Proxy, a `bigint`, a symbol, a function or an object with an
 * own `__proto__` key. Whatever it is, the call ends with exactly one frozen, well-formed result,
 * observed once, the finalizer runs exactly once, no body is left running, and the result is an
 * error exactly when a hostile value reached a stage that decides the outcome.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FastCheck as fc, Layer, Logger } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as TimeoutPolicy from "../layers/TimeoutPolicy.js"
import { Approval, type ApprovalOutcome } from "../src/Approval.js"
import * as Content from "../src/Content.js"
import type { ToolExecution } from "../src/Execution.js"
import * as IdGenerator from "../src/IdGenerator.js"
import * as Json from "../src/Json.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as Hostile from "./fixtures/hostile.js"
import { text } from "./fixtures/tools.js"
import { isDeepFrozen } from "./fixtures/runtime.js"

const pick = <const A extends string>(...values: ReadonlyArray<A>): fc.Arbitrary<A> => fc.constantFrom(...values)

interface Scenario {
  readonly kind: Hostile.Kind
  readonly pre: "allow" | "ask" | "return" | "fail" | "die" | "throw"
  readonly approval: "allow" | "return" | "fail" | "die" | "throw"
  readonly guard: "none" | "return" | "throw"
  readonly around: "pass" | "return" | "fail" | "die" | "throw"
  readonly body: "ok" | "return" | "fail" | "die" | "throw" | "resolve" | "reject"
  readonly render: "ok" | "return" | "throw"
  readonly project: "none" | "return" | "throw"
  readonly post: "accept" | "return" | "fail" | "die" | "throw" | "feedback" | "content" | "contexts"
  readonly finalizer: "keep" | "return" | "throw"
  readonly observer: "ok" | "return" | "fail" | "die" | "throw"
  readonly abortInBody: boolean
}

/** Mostly benign stages, so that hostility lands at one or two stages per run. */
const scenario: fc.Arbitrary<Scenario> = fc.record({
  kind: Hostile.arbitraryKind,
  pre: pick("allow", "allow", "allow", "ask", "return", "fail", "die", "throw"),
  approval: pick("allow", "allow", "return", "fail", "die", "throw"),
  guard: pick("none", "none", "none", "return", "throw"),
  around: pick("pass", "pass", "pass", "return", "fail", "die", "throw"),
  body: pick("ok", "ok", "ok", "return", "fail", "die", "throw", "resolve", "reject"),
  render: pick("ok", "ok", "ok", "return", "throw"),
  project: pick("none", "none", "return", "throw"),
  post: pick("accept", "accept", "accept", "return", "fail", "die", "throw", "feedback", "content", "contexts"),
  finalizer: pick("keep", "keep", "return", "throw"),
  observer: pick("ok", "ok", "return", "fail", "die", "throw"),
  abortInBody: fc.boolean()
})

/** A well-formed result: lossless JSON apart from `value`, valid content, an error detail of strings. */
const assertWellFormed = (result: ToolResult): void => {
  assert.isTrue(Json.isLossless(result), "the result is lossless JSON")
  assert.strictEqual(Content.check(result.content)._tag, "Valid", "the content is valid")
  if (result.isError) {
    assert.strictEqual(typeof result.error.message, "string")
    if (result.error.info !== undefined) {
      assert.strictEqual(typeof result.error.info.name, "string")
      assert.strictEqual(typeof result.error.info.code, "string")
    }
  }
}

const runScenario = (s: Scenario) =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry
    const runtime = yield* ToolRuntime.ToolRuntime
    const hostile = () => Hostile.make(s.kind)
    /** Stages that ran and handed back a hostile value deciding the outcome. */
    const decisive: Array<string> = []
    const hand = (stage: string) => {
      decisive.push(stage)
      return hostile()
    }
    const inBody = yield* Deferred.make<void>()
    const observed: Array<[ToolExecution, ToolResult]> = []
    let finalizerCalls = 0
    let bodiesRunning = 0
    const controller = new AbortController()
    const behave = <A>(stage: string, mode: string, ok: () => A): unknown => {
      switch (mode) {
        case "return":
          return Effect.sync(() => hand(stage))
        case "fail":
          return Effect.suspend(() => Effect.fail(hand(stage)))
        case "die":
          return Effect.suspend(() => Effect.die(hand(stage)))
        case "throw":
          throw hand(stage)
        default:
          return ok()
      }
    }
    const tool: ToolDefinition<never> = {
      name: "probe",
      description: "hostile fault injection",
      parameters: { type: "object" },
      output: {
        schema: { type: "string" },
        render: (_args, value) => {
          if (s.render === "return") return hand("render") as never
          if (s.render === "throw") throw hand("render")
          return text(value as string)
        }
      },
      execute: (_args, ctx) => {
        const started = Effect.sync(() => bodiesRunning++)
        const ended = Effect.sync(() => bodiesRunning--)
        const waitAbort = s.abortInBody
          ? Effect.zipRight(
            Deferred.succeed(inBody, undefined),
            Effect.async<void>((resume) => {
              if (ctx.signal.aborted) return resume(Effect.void)
              ctx.signal.addEventListener("abort", () => resume(Effect.void), { once: true })
            })
          )
          : Effect.void
        switch (s.body) {
          case "resolve":
            return Effect.zipRight(started, Effect.promise(async () => hand("body"))).pipe(Effect.ensuring(ended))
          case "reject":
            return Effect.zipRight(started, Effect.tryPromise({ try: async () => { throw hand("body") }, catch: (e) => e }))
              .pipe(Effect.ensuring(ended))
          case "throw":
            throw hand("body")
          default:
            return Effect.zipRight(
              Effect.zipRight(started, waitAbort),
              behave("body", s.body, () => Effect.succeed("done")) as Effect.Effect<unknown, unknown>
            ).pipe(Effect.ensuring(ended))
        }
      },
      finalizeContent: () => {
        finalizerCalls++
        if (s.finalizer === "return") return hand("finalizer") as never
        if (s.finalizer === "throw") throw hand("finalizer")
        return undefined
      },
      ...(s.project === "none" ? {} : {
        projectContent: () => {
          if (s.project === "return") return hand("project") as never
          throw hand("project")
        }
      })
    }
    yield* registry.register(tool)
    yield* registry.onPreExecute((_exec, next) =>
      behave("pre", s.pre, () => s.pre === "ask" ? Effect.succeed(PreDecision.Ask({})) : next) as typeof next
    )
    if (s.guard !== "none") {
      yield* registry.guard(() => {
        if (s.guard === "throw") throw hand("guard")
        return hand("guard") as never
      })
    }
    yield* registry.onExecute((_exec, next) => behave("around", s.around, () => next) as typeof next)
    yield* registry.onPostExecute((_exec, _result, next) => {
      switch (s.post) {
        case "feedback":
          return Effect.sync(() => PostDecision.Block({ feedback: hand("post") as never }))
        case "content":
          return Effect.sync(() => PostDecision.Accept({ content: hand("post") as never }))
        case "contexts":
          return Effect.sync(() => PostDecision.Accept({ additionalContexts: hand("post") as never }))
        default:
          return behave("post", s.post, () => next) as typeof next
      }
    })
    yield* registry.onResult((exec, result) => {
      observed.push([exec, result])
      return behave("observer", s.observer, () => Effect.void) as Effect.Effect<void>
    })
    const fiber = yield* Effect.fork(
      runtime.execute({ callId: "c1", name: "probe", agent: "a", arguments: {}, signal: controller.signal })
    )
    if (s.abortInBody) {
      const reached = yield* Effect.raceFirst(Effect.as(Deferred.await(inBody), true), Effect.as(Fiber.await(fiber), false))
      if (reached) controller.abort()
    }
    const exit = yield* Fiber.await(fiber)
    return { exit, observed, finalizerCalls, bodiesRunning, decisive, aborted: controller.signal.aborted }
  })

const approvalFor = (s: Scenario): Layer.Layer<Approval> =>
  Layer.succeed(Approval, {
    request: () => {
      const value = () => Hostile.make(s.kind)
      switch (s.approval) {
        case "allow":
          return Effect.succeed<ApprovalOutcome>("allowed-once")
        case "return":
          return Effect.sync(() => value() as ApprovalOutcome)
        case "fail":
          return Effect.suspend(() => Effect.fail(value()))
        case "die":
          return Effect.suspend(() => Effect.die(value()))
        case "throw":
          throw value()
      }
    }
  })

const layerFor = (s: Scenario) =>
  Layer.mergeAll(ToolRuntime.layer, TimeoutPolicy.layer).pipe(
    Layer.provideMerge(Layer.mergeAll(InMemoryToolRegistry.layer, approvalFor(s), IdGenerator.layerCounter())),
    Layer.merge(Logger.replace(Logger.defaultLogger, Logger.none))
  )

describe("ToolRuntime fault injection with hostile values (issue 8 items 1, 2, 5)", () => {
  it.live.prop(
    "EXEC-2 / D-2 / D-14 / D-15: one frozen well-formed result whatever the callbacks hand back",
    [scenario],
    ([s]) =>
      Effect.gen(function*() {
        const { aborted, bodiesRunning, decisive, exit, finalizerCalls, observed } = yield* runScenario(s)
        assert.isTrue(Exit.isSuccess(exit), "execute never fails")
        assert.strictEqual(observed.length, 1, "exactly one observer notification")
        const [exec, result] = observed[0]!
        if (Exit.isSuccess(exit)) assert.strictEqual(exit.value, result, "returned === observed")
        assert.isTrue(isDeepFrozen(result), "result deep-frozen")
        assert.isTrue(Object.isFrozen(exec), "execution frozen")
        assertWellFormed(result)
        assert.strictEqual(finalizerCalls, 1, "the finalizer ran exactly once")
        assert.strictEqual(bodiesRunning, 0, "no body left running")
        const deciding = decisive.filter((stage) => stage !== "observer")
        if (deciding.length > 0) assert.isTrue(result.isError, `hostile value at ${deciding.join(", ")} is an error`)
        else if (!aborted) {
          const approvalDenied = s.pre === "ask" && s.approval !== "allow"
          assert.strictEqual(result.isError, approvalDenied, `no hostile value reached a deciding stage`)
        }
      }).pipe(Effect.scoped, Effect.provide(layerFor(s))),
    { fastCheck: { numRuns: 300 } }
  )
})
