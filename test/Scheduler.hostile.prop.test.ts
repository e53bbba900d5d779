/**
 * issue 8 item 7 / D-16: `runBatch` over the real runtime while every callback hands back hostile
 * values (test/fixtures/hostile.ts): pre-execute decisions, guard answers, post-execute
 * decisions, body values and throws, observers, `onCommit`, and malformed `ModelToolCall`s, with
 * parallel-safe and exclusive tools mixed and a random abort (signal or interruption).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, FastCheck as fc, Fiber, FiberId, Layer, Logger, Queue } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import type { ToolExecution } from "../src/Execution.js"
import * as internal from "../src/internal/scheduler/batch.js"
import type { PostDecision, PreDecision } from "../src/Policy.js"
import * as Scheduler from "../src/Scheduler.js"
import type { ToolDefinition } from "../src/Tool.js"
import { type LogRecord, ToolCallLog } from "../src/ToolCallLog.js"
import { detailOfCause } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as Hostile from "./fixtures/hostile.js"
import { text } from "./fixtures/tools.js"
import { isDeepFrozen } from "./fixtures/runtime.js"

/**
 * What a callback does: behave (`normal`), succeed with the hostile value, throw it
 * synchronously, return it instead of an Effect, or fail / die with it.
 */
type Behaviour = "normal" | "value" | "throw" | "return" | "fail" | "die"

const behaviour: fc.Arbitrary<Behaviour> = fc.constantFrom<Behaviour>(
  "normal",
  "normal",
  "normal",
  "value",
  "throw",
  "return",
  "fail",
  "die"
)

/** Where a malformed call is hostile: the entry itself, its `callId`, or its `arguments` (value or throwing getter). */
type Malformed = "entry" | "callId" | "arguments" | "argumentsGetter"

interface CallSpec {
  readonly malformed: Malformed | undefined
  readonly exclusive: boolean
  readonly stubborn: boolean
  readonly kind: Hostile.Kind
  readonly pre: Behaviour
  readonly guard: Behaviour
  readonly post: Behaviour
  readonly body: Behaviour
  readonly observer: Behaviour
  readonly onCommit: Behaviour
}

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  malformed: fc.option(fc.constantFrom<Malformed>("entry", "callId", "arguments", "argumentsGetter"), {
    nil: undefined,
    freq: 4
  }),
  exclusive: fc.boolean(),
  stubborn: fc.boolean(),
  kind: Hostile.arbitraryKind,
  pre: behaviour,
  guard: behaviour,
  post: behaviour,
  body: behaviour,
  observer: behaviour,
  onCommit: behaviour
})

interface Abort {
  readonly on: "body" | "commit"
  readonly at: number
  readonly how: "signal" | "interrupt"
}

const abort: fc.Arbitrary<Abort | undefined> = fc.option(
  fc.record({
    on: fc.constantFrom<Abort["on"]>("body", "commit"),
    at: fc.nat({ max: 5 }),
    how: fc.constantFrom<Abort["how"]>("signal", "interrupt")
  }),
  { nil: undefined }
)

const specs = fc.array(callSpec, { minLength: 1, maxLength: 6 })
const cap = fc.integer({ min: 1, max: 4 })
const picks = fc.array(fc.nat({ max: 100 }), { minLength: 1, maxLength: 8 })

/** The hostile answer of a callback whose normal answer is `normal` (an Effect). */
const act = <A>(how: Behaviour, kind: Hostile.Kind, normal: () => Effect.Effect<A>): unknown => {
  switch (how) {
    case "normal":
      return normal()
    case "value":
      return Effect.succeed(Hostile.make(kind))
    case "throw":
      throw Hostile.make(kind)
    case "return":
      return Hostile.make(kind)
    case "fail":
      return Effect.failCause(Cause.fail(Hostile.make(kind)))
    case "die":
      return Effect.failCause(Cause.die(Hostile.make(kind)))
  }
}

/** A guard is synchronous: hostile answers are returned or thrown. */
const guardAnswer = (how: Behaviour, kind: Hostile.Kind): string | undefined => {
  if (how === "normal") return undefined
  if (how === "throw" || how === "die") throw Hostile.make(kind)
  return Hostile.make(kind) as string
}

const malformedEntry = (spec: CallSpec, callId: string, name: string): unknown => {
  const hostile = () => Hostile.make(spec.kind)
  switch (spec.malformed) {
    case "entry":
      return hostile()
    case "callId":
      return { callId: hostile(), name, arguments: "{}" }
    case "arguments":
      return { callId, name, arguments: hostile() }
    case "argumentsGetter":
      return {
        callId,
        name,
        get arguments(): string {
          throw hostile()
        }
      }
    case undefined:
      return { callId, name, arguments: "{}" }
  }
}

/** The `callId` and `name` the records of call `i` must carry. */
const identityOf = (spec: CallSpec, i: number): readonly [string, string] => {
  const name = spec.exclusive ? "excl" : "par"
  if (spec.malformed === "entry") return ["", ""]
  if (spec.malformed === "callId") return ["", name]
  return [`c${i}`, name]
}

/** Formats every record as the default logger does (message and cause), then drops it. */
const formattingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make((options) => void Logger.logfmtLogger.log(options))
)

const services = Layer.mergeAll(ToolRuntime.layer, ToolCallLogMemory.layer).pipe(
  Layer.provideMerge(InMemoryToolRegistry.layer),
  Layer.provideMerge(formattingLogger)
)

interface Run {
  readonly exit: Exit.Exit<Scheduler.BatchResult, Scheduler.SchedulerError>
  readonly commits: Array<Scheduler.CommitEvent>
  readonly records: ReadonlyArray<LogRecord>
  readonly runningAfter: number
  readonly started: number
  readonly exited: number
  readonly cancelled: boolean
  readonly how: Abort["how"] | undefined
}

const runHostile = (spec: ReadonlyArray<CallSpec>, maxParallel: number, choices: ReadonlyArray<number>, cut?: Abort) =>
  Effect.scoped(Effect.gen(function*() {
    const registry = yield* ToolRegistry
    const specOf = (exec: ToolExecution): CallSpec | undefined => spec[Number(exec.callId.slice(1))]
    const gates = spec.map(() => Deferred.unsafeMake<void>(FiberId.none))
    const controller = new AbortController()
    let running = 0
    let started = 0
    let exited = 0
    let bodies = 0
    let commitsSeen = 0
    let cancelled = false
    let fiber: Fiber.RuntimeFiber<Scheduler.BatchResult, Scheduler.SchedulerError> | undefined = undefined
    const cancel = () => {
      if (cancelled || cut === undefined) return
      cancelled = true
      if (cut.how === "signal") controller.abort()
      else if (fiber !== undefined) Effect.runFork(Fiber.interrupt(fiber))
    }
    const waitGate = (index: number, signal: AbortSignal, stubborn: boolean): Effect.Effect<void> =>
      stubborn ? Deferred.await(gates[index]) : Effect.raceFirst(
        Deferred.await(gates[index]),
        Effect.async<void>((resume) => {
          if (signal.aborted) return resume(Effect.void)
          const onAbort = () => resume(Effect.void)
          signal.addEventListener("abort", onAbort, { once: true })
          return Effect.sync(() => signal.removeEventListener("abort", onAbort))
        })
      )
    const tool = (name: string, isConcurrencySafe?: () => boolean): ToolDefinition<never> => ({
      name,
      description: `${name} tool`,
      parameters: { type: "object" },
      output: { schema: {}, render: () => text("ok") },
      execute: (_args, ctx) => {
        const index = Number(ctx.callId.slice(1))
        const s = spec[index]!
        // a synchronous throw or a non-Effect return happens when the body is invoked: nothing runs
        if (s.body === "throw" || s.body === "return") {
          return act(s.body, s.kind, () => Effect.void) as Effect.Effect<never>
        }
        return Effect.suspend(() => {
          running++
          started++
          if (cut?.on === "body" && bodies++ === cut.at) cancel()
          return Effect.zipRight(
            waitGate(index, ctx.signal, s.stubborn),
            Effect.suspend(() => act(s.body, s.kind, () => Effect.succeed("done")) as Effect.Effect<unknown>)
          )
        }).pipe(Effect.ensuring(Effect.sync(() => {
          running--
          exited++
        })))
      },
      ...(isConcurrencySafe === undefined ? {} : { isConcurrencySafe })
    })
    yield* registry.register(tool("par", () => true))
    yield* registry.register(tool("excl"))
    yield* registry.onPreExecute((exec, next) => {
      const s = specOf(exec)
      return (s === undefined ? next : act(s.pre, s.kind, () => next)) as Effect.Effect<PreDecision>
    })
    yield* registry.guard((exec) => {
      const s = specOf(exec)
      return s === undefined ? undefined : guardAnswer(s.guard, s.kind)
    })
    yield* registry.onPostExecute((exec, _result, next) => {
      const s = specOf(exec)
      return (s === undefined ? next : act(s.post, s.kind, () => next)) as Effect.Effect<PostDecision>
    })
    yield* registry.onResult((exec) => {
      const s = specOf(exec)
      return (s === undefined ? Effect.void : act(s.observer, s.kind, () => Effect.void)) as Effect.Effect<void>
    })
    const calls = spec.map((s, i) => malformedEntry(s, `c${i}`, s.exclusive ? "excl" : "par"))
    const commits: Array<Scheduler.CommitEvent> = []
    const onCommit = (event: Scheduler.CommitEvent) => {
      commits.push(event)
      if (cut?.on === "commit" && commitsSeen++ === cut.at) cancel()
      return act(spec[event.index]!.onCommit, spec[event.index]!.kind, () => Effect.void) as Effect.Effect<void>
    }
    const waits = yield* Queue.unbounded<ReadonlyArray<number>>()
    fiber = yield* internal.runBatch(
      calls as ReadonlyArray<Scheduler.ModelToolCall>,
      { maxParallel, signal: controller.signal, onCommit, batchId: "b" },
      { onWait: (inFlight) => Queue.offer(waits, inFlight) }
    ).pipe(Effect.mapError((failure) => new Scheduler.SchedulerError(failure)), Effect.fork)
    const released = new Set<number>()
    const releaser = yield* Effect.fork(Effect.gen(function*() {
      for (let step = 0;; step++) {
        const inFlight = (yield* Queue.take(waits)).filter((i) => !released.has(i))
        if (inFlight.length === 0) continue
        const pick = inFlight[choices[step % choices.length]! % inFlight.length]!
        released.add(pick)
        yield* Deferred.succeed(gates[pick]!, undefined)
      }
    }))
    const exit = yield* Fiber.await(fiber)
    const runningAfter = running
    yield* Fiber.interrupt(releaser)
    const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
    return { exit, commits, records, runningAfter, started, exited, cancelled, how: cut?.how } satisfies Run
  })).pipe(Effect.provide(services))

const describeExit = (exit: Exit.Exit<unknown, unknown>): string =>
  Exit.isSuccess(exit) ? "success" : `failure: ${detailOfCause(exit.cause).message}`

const check = (spec: ReadonlyArray<CallSpec>, run: Run) => {
  const n = spec.length
  const indices = spec.map((_, i) => i)
  const interrupted = Exit.isFailure(run.exit) && Exit.isInterrupted(run.exit)
  assert.isTrue(
    Exit.isSuccess(run.exit) || (interrupted && run.cancelled),
    `runBatch must succeed (or be interrupted by the caller): ${describeExit(run.exit)}`
  )
  // no body outlives the batch
  assert.strictEqual(run.runningAfter, 0, "bodies still running after runBatch returned")
  assert.strictEqual(run.started, run.exited)
  // exactly one committed result per call, in model order
  assert.deepStrictEqual(run.commits.map((c) => c.index), indices)
  assert.deepStrictEqual(run.commits.map((c) => c.callId), spec.map((s, i) => identityOf(s, i)[0]))
  for (const c of run.commits) assert.isTrue(isDeepFrozen(c.result), `result ${c.index} deep-frozen`)
  // exactly one tool/call + tool/result pair per call, in model order, with the read identity
  const calls = run.records.filter((r) => r._tag === "tool/call")
  const results = run.records.filter((r) => r._tag === "tool/result")
  assert.deepStrictEqual(calls.map((r) => r.index), indices)
  assert.deepStrictEqual(results.map((r) => r.index), indices)
  assert.deepStrictEqual(calls.map((r) => [r.callId, r.name]), spec.map((s, i) => [...identityOf(s, i)]))
  for (let i = 0; i < n; i++) {
    const callAt = run.records.findIndex((r) => r._tag === "tool/call" && r.index === i)
    const resultAt = run.records.findIndex((r) => r._tag === "tool/result" && r.index === i)
    assert.isTrue(callAt < resultAt, `tool/call ${i} precedes its tool/result`)
  }
  // a malformed call never reaches the runtime: an error result the scheduler made (or ABORTED_BEFORE_DISPATCH)
  for (const c of run.commits) {
    const s = spec[c.index]!
    if (s.malformed === undefined) continue
    assert.isTrue(c.result.isError && c.synthetic, `malformed call ${c.index} gets a synthetic error result`)
  }
  if (Exit.isSuccess(run.exit)) {
    assert.deepStrictEqual(run.exit.value.results.map((r) => r.result), run.commits.map((c) => c.result))
    // a late interruption may find the batch already done: only a signal abort is reported as `aborted`
    assert.strictEqual(run.exit.value.aborted, run.cancelled && run.how === "signal")
  }
}

describe("Scheduler hostile-value property (issue 8 item 7)", () => {
  it.live.prop(
    "issue 8 item 7 / D-16: hostile callbacks and calls: one result and record pair per call, no body outlives it",
    [specs, cap, picks, abort],
    ([spec, maxParallel, choices, cut]) =>
      Effect.gen(function*() {
        const run = yield* runHostile(spec, maxParallel, choices, cut)
        check(spec, run)
      }),
    { fastCheck: { numRuns: 250 } }
  )
})
