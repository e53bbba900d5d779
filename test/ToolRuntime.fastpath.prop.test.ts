/**
 * The fast paths against the general path: the same random pipeline (hooks at every stage, the
 * timeout policy, body kinds, finalizers, caller cancellation) runs through the runtime with its
 * fast paths on and through the one with them off, over one registry; results and traces must
 * be identical.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, FastCheck as fc, Fiber, Logger, Scope, TestClock } from "effect"
import * as TimeoutPolicy from "../layers/TimeoutPolicy.js"
import type { RunContext } from "../src/Execution.js"
import type { JsonValue } from "../src/Json.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { HarnessError } from "../src/ToolError.js"
import type * as ToolRegistryModule from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import type * as ToolRuntime from "../src/ToolRuntime.js"
import { abortedSignal, CALLER_REASON, makeRuntimes, signalSeen } from "./fixtures/fastpath.js"
import * as Hostile from "./fixtures/hostile.js"
import { isDeepFrozen } from "./fixtures/runtime.js"
import { text } from "./fixtures/tools.js"

type BodyKind =
  | "succeed"
  | "fail"
  | "die"
  | "throw"
  | "sync"
  | "yield"
  | "promise"
  | "defer"
  | "conclude"
  | "hostile"
  | "hostileFail"

interface Scenario {
  readonly pre: "none" | "pass" | "deny" | "fail" | "die" | "cancel" | "ask"
  /** A guard (synchronous: it keeps a call hook-less): silent, denying, throwing, or aborting the caller and staying silent. */
  readonly guard: "none" | "silent" | "deny" | "throw" | "abort"
  readonly around: "none" | "pass" | "fail" | "die"
  readonly post: "none" | "pass" | "block" | "replace" | "fail" | "die"
  readonly observer: "none" | "ok" | "fail"
  readonly finalizer: "none" | "keep" | "replace" | "project"
  readonly deadline: "none" | "armed" | "fires"
  readonly body: BodyKind
  readonly hostile: Hostile.Kind
  /** Whether the body reads `ctx.signal` when invoked (a held body reads it when it resumes, maybe for the first time). */
  readonly reads: boolean
  /** How the body waits before its behaviour: not at all, on its signal (interruptibly), on a gate (uninterruptibly). */
  readonly hold: "none" | "signal" | "gate"
  /** Caller cancellation: a pre-aborted signal, an abort or an interruption while the body holds, or an abort from inside a pre-/post-execute hook. */
  readonly cancel: "none" | "pre" | "abort" | "interrupt" | "inPre" | "inPost"
  /** With both a caller event and a deadline during the body: which comes first. */
  readonly order: "cancelFirst" | "deadlineFirst"
  /** No user hook at any stage (the inline path), whatever the hook fields say. */
  readonly plain: boolean
  /** Whether the body registers a post-execute hook while it runs (the call leaves the inline path). */
  readonly midHook: boolean
}

const pick = <const A extends string>(...values: ReadonlyArray<A>): fc.Arbitrary<A> => fc.constantFrom(...values)

/** Makes every scenario runnable: a held body always gets an event or a release, a throwing body never holds. */
const normalize = (s: Scenario): Scenario => {
  const inBody = s.cancel === "abort" || s.cancel === "interrupt"
  const events = (inBody ? 1 : 0) + (s.deadline === "fires" ? 1 : 0)
  const body: BodyKind = s.body === "throw" && events > 0 ? "die" : s.body
  let hold = body === "throw" ? "none" : s.hold
  if (events === 1 && hold === "none") hold = "signal"
  if (events === 2 || (events === 0 && hold === "signal")) hold = "gate"
  const hooks = s.cancel === "inPre"
    ? { pre: s.pre === "none" ? "pass" : s.pre }
    : s.cancel === "inPost"
    ? { post: s.post === "none" ? "pass" : s.post }
    : s.plain
    ? { pre: "none", around: "none", post: "none", observer: "none" } as const
    : {}
  const midHook = s.midHook && body !== "promise" && body !== "throw" &&
    (hold !== "none" || (body !== "succeed" && body !== "fail" && body !== "die"))
  return { ...s, ...hooks, body, hold, midHook, reads: s.reads || hold === "signal" }
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  pre: pick("none", "none", "none", "pass", "deny", "fail", "die", "cancel", "ask"),
  guard: pick("none", "none", "none", "silent", "deny", "throw", "abort"),
  around: pick("none", "none", "none", "pass", "fail", "die"),
  post: pick("none", "none", "none", "pass", "block", "replace", "fail", "die"),
  observer: pick("none", "none", "ok", "fail"),
  finalizer: pick("none", "none", "keep", "replace", "project"),
  deadline: pick("none", "armed", "fires"),
  body: pick<BodyKind>(
    "succeed",
    "succeed",
    "fail",
    "die",
    "throw",
    "sync",
    "yield",
    "promise",
    "defer",
    "conclude",
    "hostile",
    "hostileFail"
  ),
  hostile: Hostile.arbitraryKind,
  reads: fc.boolean(),
  hold: pick("none", "none", "signal", "gate"),
  cancel: pick("none", "none", "pre", "abort", "interrupt", "inPre", "inPost"),
  order: pick("cancelFirst", "deadlineFirst"),
  plain: fc.boolean(),
  midHook: fc.boolean()
}).map(normalize)

const BUDGET_FIRES = 50
const BUDGET_ARMED = 60_000

const injected = (stage: string) => new HarnessError({ message: `${stage} failed`, code: "INJECTED" })

const abortPromise = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve()
    else signal.addEventListener("abort", () => resolve(), { once: true })
  })

const exitLabel = (exit: Exit.Exit<unknown, unknown>): string =>
  Exit.isSuccess(exit) ? "success" : Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "failure"

/** One run's mutable state: its trace, the body's context and the gate the test releases. */
interface Run {
  readonly trace: Array<ReadonlyArray<unknown>>
  /** Where hooks the body registers live; closed after the run. */
  readonly scope: Scope.CloseableScope
  ctx: RunContext | undefined
  readonly entered: Deferred.Deferred<void>
  readonly gate: Deferred.Deferred<void>
  release: () => void
  readonly released: Promise<void>
  /** Aborts the caller's signal (set per run). */
  abort: () => void
}

const makeRun = Effect.gen(function*() {
  const entered = yield* Deferred.make<void>()
  const gate = yield* Deferred.make<void>()
  const scope = yield* Scope.make()
  let resolve: () => void = () => {}
  const released = new Promise<void>((r) => {
    resolve = r
  })
  const run: Run = {
    trace: [],
    scope,
    ctx: undefined,
    entered,
    gate,
    release: () => {
      resolve()
      Deferred.unsafeDone(gate, Exit.void)
    },
    released,
    abort: () => {}
  }
  return run
})

const behaviour = (s: Scenario, ctx: RunContext): Effect.Effect<unknown, unknown> => {
  switch (s.body) {
    case "succeed":
    case "throw":
      return Effect.succeed("ok")
    case "fail":
      return Effect.fail(injected("body"))
    case "die":
      return Effect.die(new Error("body died"))
    case "sync":
      return Effect.sync(() => "synced")
    case "yield":
      return Effect.as(Effect.yieldNow(), "yielded")
    case "promise":
      return Effect.succeed("promised")
    case "defer":
      return Effect.sync(() => {
        ctx.deferContext({ content: text("deferred") })
        return "deferred"
      })
    case "conclude":
      return Effect.sync(() => {
        ctx.deferContext({ content: text("concluding") })
        ctx.concludeTurn()
        return "concluded"
      })
    case "hostile":
      return Effect.sync(() => Hostile.make(s.hostile))
    case "hostileFail":
      return Effect.suspend(() => Effect.fail(Hostile.make(s.hostile)))
  }
}

/** The probed tool: it records what it saw into the current run's trace. */
const probeTool = (
  s: Scenario,
  registry: ToolRegistryModule.Service,
  current: () => Run
): ToolDefinition<never> => {
  const execute = (_args: JsonValue, ctx: RunContext): Effect.Effect<unknown, unknown> => {
    const run = current()
    run.ctx = ctx
    run.trace.push(["body:invoked", s.reads ? signalSeen(ctx.signal) : "unread"])
    if (s.body === "throw") throw new Error("body threw")
    const afterHold = () => {
      run.trace.push(["body:resumed", signalSeen(ctx.signal)])
    }
    if (s.body === "promise") {
      const promise = (async () => {
        Deferred.unsafeDone(run.entered, Exit.void)
        if (s.hold === "gate") await run.released
        else if (s.hold === "signal") await abortPromise(ctx.signal)
        if (s.hold !== "none") afterHold()
        return "promised"
      })()
      const adopted: Promise<unknown> = promise.then((value) => {
        run.trace.push(["body:end", "success"])
        return value
      })
      return adopted as unknown as Effect.Effect<unknown>
    }
    if (s.hold === "none" && (s.body === "succeed" || s.body === "fail" || s.body === "die")) {
      run.trace.push(["body:end", "exit"])
      return behaviour(s, ctx)
    }
    const midHook = !s.midHook ? Effect.void : Scope.extend(
      registry.onPostExecute((exec, result, next) =>
        Effect.suspend(() => {
          run.trace.push(["mid-post", signalSeen(exec.signal), result])
          return Effect.zipRight(Effect.yieldNow(), next)
        })
      ),
      run.scope
    )
    const hold = s.hold === "none"
      ? Effect.void
      : Effect.zipRight(
        Deferred.succeed(run.entered, undefined),
        s.hold === "gate" ? Deferred.await(run.gate) : abortedSignal(ctx.signal)
      ).pipe(Effect.tap(() => Effect.sync(afterHold)))
    const body = Effect.zipRight(Effect.zipRight(midHook, hold), Effect.suspend(() => behaviour(s, ctx)))
    return (s.hold === "gate" ? Effect.uninterruptible(body) : body).pipe(
      Effect.onExit((exit) => Effect.sync(() => run.trace.push(["body:end", exitLabel(exit)])))
    )
  }
  return {
    name: "probe",
    description: "fast-path probe",
    parameters: { type: "object" },
    output: { schema: {}, render: (_args, value) => text(typeof value === "string" ? value : JSON.stringify(value)) },
    execute,
    ...(s.finalizer === "keep" || s.finalizer === "replace"
      ? {
        finalizeContent: (exec, result) => {
          current().trace.push(["finalize", signalSeen(exec.signal), result])
          return s.finalizer === "replace" ? text("finalized") : undefined
        }
      }
      : {}),
    ...(s.finalizer === "project"
      ? {
        projectContent: (exec, result) => {
          current().trace.push(["project", signalSeen(exec.signal), result])
          return text("projected")
        }
      }
      : {})
  }
}

/** Registers the scenario's tool and hooks in `scope`; they record into the current run. */
const install = (
  s: Scenario,
  registry: ToolRegistryModule.Service,
  current: () => Run
) =>
  Effect.gen(function*() {
    yield* registry.register(probeTool(s, registry, current))
    if (s.pre !== "none") {
      yield* registry.onPreExecute((exec, next) =>
        Effect.suspend(() => {
          current().trace.push(["pre", signalSeen(exec.signal)])
          if (s.cancel === "inPre") current().abort()
          switch (s.pre) {
            case "none":
            case "pass":
              return next
            case "deny":
              return Effect.succeed(PreDecision.Deny({ reason: "denied" }))
            case "cancel":
              return Effect.succeed(PreDecision.Cancel())
            case "ask":
              return Effect.succeed(PreDecision.Ask({ reason: "may I?" }))
            case "fail":
              return Effect.fail(injected("pre"))
            case "die":
              return Effect.die(new Error("pre died"))
          }
        })
      )
    }
    if (s.guard !== "none") {
      yield* registry.guard((exec) => {
        const run = current()
        run.trace.push(["guard", signalSeen(exec.signal)])
        if (s.guard === "throw") throw new Error("guard threw")
        if (s.guard === "abort") run.abort()
        return s.guard === "deny" ? "guarded" : undefined
      })
    }
    if (s.deadline !== "none") {
      const defaultTimeoutMs = s.deadline === "fires" ? BUDGET_FIRES : BUDGET_ARMED
      yield* registry.onExecute(TimeoutPolicy.makeWrapper(registry, { defaultTimeoutMs }))
    }
    if (s.around !== "none") {
      yield* registry.onExecute((exec, next) =>
        Effect.suspend(() => {
          current().trace.push(["around", signalSeen(exec.signal)])
          return s.around === "pass" ? next : s.around === "fail" ? Effect.fail(injected("around")) : Effect.die(new Error("around died"))
        })
      )
    }
    if (s.post !== "none") {
      yield* registry.onPostExecute((exec, result, next) =>
        Effect.suspend(() => {
          current().trace.push(["post", signalSeen(exec.signal), result])
          if (s.cancel === "inPost") current().abort()
          switch (s.post) {
            case "none":
            case "pass":
              return next
            case "block":
              return Effect.succeed(PostDecision.Block({ feedback: text("blocked") }))
            case "replace":
              return Effect.succeed(PostDecision.Accept({ content: text("replaced") }))
            case "fail":
              return Effect.fail(injected("post"))
            case "die":
              return Effect.die(new Error("post died"))
          }
        })
      )
    }
    if (s.observer !== "none") {
      yield* registry.onResult((exec, result) =>
        Effect.suspend(() => {
          current().trace.push(["observe", signalSeen(exec.signal), result])
          return s.observer === "ok" ? Effect.void : Effect.fail(injected("observer"))
        })
      )
    }
  })

interface Outcome {
  readonly exit: Exit.Exit<ToolResult>
  readonly trace: ReadonlyArray<ReadonlyArray<unknown>>
}

/** Runs the scenario once through `runtime`, driving its events in the scenario's order. */
const runOnce = (s: Scenario, runtime: ToolRuntime.Service, run: Run): Effect.Effect<Outcome> =>
  Effect.gen(function*() {
    const controller = new AbortController()
    if (s.cancel === "pre") controller.abort(CALLER_REASON)
    run.abort = () => controller.abort(CALLER_REASON)
    const fiber = yield* Effect.fork(
      runtime.execute({ callId: "c1", name: "probe", arguments: {}, signal: controller.signal })
    )
    const reached = s.hold !== "none" &&
      (yield* Effect.raceFirst(Effect.as(Deferred.await(run.entered), true), Effect.as(Fiber.await(fiber), false)))
    let interrupter: Fiber.RuntimeFiber<unknown> | undefined = undefined
    if (reached) {
      const deadline = s.deadline === "fires"
        ? Effect.zipRight(TestClock.adjust(BUDGET_FIRES), abortedSignal(run.ctx!.signal))
        : Effect.void
      const cancel = s.cancel === "abort"
        ? Effect.sync(() => controller.abort(CALLER_REASON))
        : s.cancel === "interrupt"
        ? Effect.flatMap(Effect.fork(Fiber.interrupt(fiber)), (f) =>
          Effect.zipRight(
            Effect.sync(() => {
              interrupter = f
            }),
            abortedSignal(run.ctx!.signal)
          ))
        : Effect.void
      if (s.order === "deadlineFirst") {
        yield* deadline
        yield* cancel
      } else {
        yield* cancel
        yield* deadline
      }
      run.release()
    }
    if (interrupter !== undefined) yield* Fiber.await(interrupter)
    const exit = yield* Fiber.await(fiber)
    yield* Scope.close(run.scope, Exit.void)
    return { exit, trace: run.trace }
  })

const scenarioRuns = (s: Scenario) =>
  Effect.gen(function*() {
    const { fast, general, registry } = yield* makeRuntimes
    let run = yield* makeRun
    const scope = yield* Scope.make()
    yield* Scope.extend(install(s, registry, () => run), scope)
    const fastOutcome = yield* runOnce(s, fast, run)
    run = yield* makeRun
    const generalOutcome = yield* runOnce(s, general, run)
    yield* Scope.close(scope, Exit.void)
    return { fast: fastOutcome, general: generalOutcome }
  })

const silent = Logger.replace(Logger.defaultLogger, Logger.none)

describe("fast paths against the general path", () => {
  it.effect.prop(
    "PIPELINE / D-14 / TIMEOUT-*: the fast runtime's results and traces equal the general runtime's",
    [scenario],
    ([s]) =>
      Effect.gen(function*() {
        const { fast, general } = yield* scenarioRuns(s)
        const label = JSON.stringify(s)
        assert.deepStrictEqual(fast.trace, general.trace, `trace for ${label}`)
        if (s.cancel === "interrupt" && s.hold !== "none" && s.pre !== "deny") {
          assert.strictEqual(Exit.isInterrupted(fast.exit), Exit.isInterrupted(general.exit), `interrupted for ${label}`)
        }
        assert.strictEqual(fast.exit._tag, general.exit._tag, `exit for ${label}`)
        if (Exit.isSuccess(fast.exit) && Exit.isSuccess(general.exit)) {
          assert.deepStrictEqual(fast.exit.value, general.exit.value, `result for ${label}`)
          assert.isTrue(isDeepFrozen(fast.exit.value), "fast result deep-frozen")
          assert.isTrue(isDeepFrozen(general.exit.value), "general result deep-frozen")
        } else {
          assert.isTrue(Exit.isInterrupted(fast.exit) && s.cancel === "interrupt", `only an interrupted caller gets no result: ${label}`)
        }
        const ended = fast.trace.filter((entry) => entry[0] === "body:end").length
        const invoked = fast.trace.filter((entry) => entry[0] === "body:invoked").length
        assert.strictEqual(ended, s.body === "throw" ? 0 : invoked, `every started body ended: ${label}`)
      }).pipe(Effect.provide(silent)),
    { fastCheck: { numRuns: 250 } }
  )
})
