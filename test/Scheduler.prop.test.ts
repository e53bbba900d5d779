import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck, Fiber, Option, Queue } from "effect"
import * as internal from "../src/internal/scheduler/batch.js"
import * as Scheduler from "../src/Scheduler.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import * as Fake from "./fixtures/fakeRuntime.js"

type Outcome = "ok" | "deny" | "final" | "throw" | "wrapFail" | "conclude" | "unknown"
type Mode = "parallel" | "exclusive" | "flip"

interface CallSpec {
  readonly outcome: Outcome
  readonly mode: Mode
  readonly flipAfter: number
  readonly bodyContexts: number
  readonly postContexts: number
  readonly cooperative: boolean
  readonly args: string
}

interface Cancel {
  readonly at: number
  readonly how: "signal" | "interrupt"
}

const callSpec: FastCheck.Arbitrary<CallSpec> = FastCheck.record({
  outcome: FastCheck.constantFrom<Outcome>(
    "ok",
    "ok",
    "ok",
    "deny",
    "final",
    "throw",
    "wrapFail",
    "conclude",
    "unknown"
  ),
  mode: FastCheck.constantFrom<Mode>("parallel", "parallel", "parallel", "exclusive", "flip"),
  flipAfter: FastCheck.nat(),
  bodyContexts: FastCheck.integer({ min: 0, max: 2 }),
  postContexts: FastCheck.integer({ min: 0, max: 1 }),
  cooperative: FastCheck.boolean(),
  args: FastCheck.constantFrom("", "{}", "{\"a\":1}", "not json", "[1,2]")
})

const specs = FastCheck.array(callSpec, { minLength: 1, maxLength: 8 })
const cap = FastCheck.integer({ min: 1, max: 6 })
const choices = FastCheck.array(FastCheck.nat({ max: 1000 }), { minLength: 1, maxLength: 16 })
const cancel: FastCheck.Arbitrary<Cancel> = FastCheck.record({
  at: FastCheck.nat({ max: 8 }),
  how: FastCheck.constantFrom<Cancel["how"]>("signal", "interrupt")
})

const range = (n: number, f: (k: number) => string): Array<string> => Array.from({ length: n }, (_, k) => f(k))

interface Built {
  readonly world: Fake.FakeWorld
  readonly calls: ReadonlyArray<Scheduler.ModelToolCall>
  /** call index → index of the call whose commit flips it to exclusive */
  readonly flips: ReadonlyMap<number, number>
}

const build = (spec: ReadonlyArray<CallSpec>, failAppend?: number): Built => {
  const tools: Record<string, Fake.FakeTool> = {}
  const calls: Array<Scheduler.ModelToolCall> = []
  const flips = new Map<number, number>()
  spec.forEach((s, i) => {
    const callId = `c${i}`
    const name = s.outcome === "unknown" ? `ghost${i}` : `t${i}`
    calls.push({ callId, name, arguments: s.args })
    if (s.outcome === "unknown") return
    tools[name] = {
      mode: s.mode === "exclusive" ? "exclusive" : "parallel",
      cooperative: s.cooperative,
      bodyContexts: range(s.bodyContexts, (k) => `${callId}-body${k}`),
      postContexts: range(s.postContexts, (k) => `${callId}-post${k}`),
      ...(s.outcome === "deny" ? { prepare: "deny" } : {}),
      ...(s.outcome === "final" ? { prepare: "final" } : {}),
      ...(s.outcome === "throw" ? { body: "throw" } : {}),
      ...(s.outcome === "wrapFail" ? { body: "wrapperFails" } : {}),
      ...(s.outcome === "conclude" ? { concludes: true } : {})
    }
    if (s.mode === "flip" && i > 0) flips.set(i, s.flipAfter % i)
  })
  const world = Fake.make(
    failAppend === undefined ? { tools } : { tools, failAppend: (_r, count) => count === failAppend }
  )
  world.observers.push((callId) => {
    const committed = Number(callId.slice(1))
    for (const [target, trigger] of flips) if (trigger === committed) world.setMode(`t${target}`, "exclusive")
  })
  return { world, calls, flips }
}

interface Outcome_ {
  readonly built: Built
  readonly commits: Array<Scheduler.CommitEvent>
  readonly exit: Exit.Exit<Scheduler.BatchResult, Scheduler.SchedulerError>
  readonly cancelled: boolean
}

/** Runs a batch; each time the driver blocks, completes the gate `picks` selects among the calls in flight. */
const execute = (
  built: Built,
  maxParallel: number,
  picks: ReadonlyArray<number>,
  cancelAt?: Cancel
): Effect.Effect<Outcome_> =>
  Effect.gen(function*() {
    const { calls, world } = built
    const controller = new AbortController()
    const commits: Array<Scheduler.CommitEvent> = []
    const waits = yield* Queue.unbounded<ReadonlyArray<number>>()
    const fiber = yield* internal.runBatch(calls, {
      maxParallel,
      signal: controller.signal,
      onCommit: (e) => Effect.sync(() => void commits.push(e))
    }, { onWait: (inFlight) => Queue.offer(waits, inFlight) }).pipe(
      Effect.mapError((failure) => new Scheduler.SchedulerError(failure)),
      Effect.provide(world.context),
      Effect.fork
    )
    let cancelled = false
    const released = new Set<number>()
    const releaser = yield* Effect.fork(Effect.gen(function*() {
      for (let step = 0;; step++) {
        const inFlight = yield* Queue.take(waits)
        if (cancelAt !== undefined && step === cancelAt.at) {
          cancelled = true
          if (cancelAt.how === "signal") controller.abort()
          else yield* Effect.forkDaemon(Fiber.interrupt(fiber))
        }
        const candidates = inFlight.filter((i) => !released.has(i))
        if (candidates.length === 0) continue
        const pick = candidates[picks[step % picks.length] % candidates.length]
        released.add(pick)
        yield* world.release(calls[pick].callId)
      }
    }))
    const exit = yield* Fiber.await(fiber)
    yield* Fiber.interrupt(releaser)
    return { built, commits, exit, cancelled }
  })

const codeOf = (r: Scheduler.CommitEvent): string | undefined =>
  r.result.isError ? r.result.error.info?.code : undefined

/** Lane steps (classify, log, prepare, finalize, finish) never overlap each other. */
const checkLane = (events: ReadonlyArray<Fake.StageEvent>) => {
  let open: Fake.StageEvent | undefined
  for (const e of events) {
    if (e.stage === "dispatch" || e.stage === "observer") continue
    if (e.phase === "enter") {
      assert.isUndefined(open, `lane step ${e.stage} ${e.callId} overlaps ${open?.stage} ${open?.callId}`)
      open = e
    } else {
      assert.isTrue(open !== undefined && open.stage === e.stage && open.callId === e.callId)
      open = undefined
    }
  }
  assert.isUndefined(open)
}

interface Interval {
  readonly callId: string
  readonly from: number
  readonly to: number
}

const bodies = (events: ReadonlyArray<Fake.StageEvent>): Array<Interval> => {
  const enters = new Map<string, number>()
  const out: Array<Interval> = []
  for (const e of events) {
    if (e.stage !== "dispatch") continue
    if (e.phase === "enter") enters.set(e.callId, e.t)
    else out.push({ callId: e.callId, from: enters.get(e.callId)!, to: e.t })
  }
  assert.strictEqual(out.length, enters.size, "every started body reached quiescence")
  return out
}

const time = (events: ReadonlyArray<Fake.StageEvent>, pred: (e: Fake.StageEvent) => boolean): number =>
  events.find(pred)?.t ?? -1

/** The mode each started call was classified with right before its `tool/call` (the last classification). */
const modes = (built: Built): Map<number, { readonly mode: string; readonly at: number; readonly start: number }> => {
  const out = new Map<number, { readonly mode: string; readonly at: number; readonly start: number }>()
  const prepared = new Set(built.world.inputs.map((i) => i.callId))
  let last: Fake.StageEvent | undefined
  for (const e of built.world.events) {
    if (e.stage === "classify" && e.phase === "enter") last = e
    if (e.stage === "log" && e.phase === "enter" && e.detail === "tool/call") {
      const index = Number(e.callId.slice(1))
      if (last !== undefined && prepared.has(e.callId)) {
        assert.strictEqual(last.callId, built.calls[index].name)
        out.set(index, { mode: last.detail!, at: last.t, start: e.t })
      }
      last = undefined
    }
  }
  return out
}

const commitTime = (events: ReadonlyArray<Fake.StageEvent>, callId: string): number =>
  time(events, (e) => (e.stage === "finalize" || e.stage === "finish") && e.phase === "exit" && e.callId === callId)

/** The invariants every run (complete or cancelled) must satisfy. */
const checkRun = (run: Outcome_, maxParallel: number) => {
  const { built, commits } = run
  const { calls, world } = built
  const n = calls.length
  const events = world.events
  // exactly one committed result per call, in model order
  assert.deepStrictEqual(commits.map((c) => c.index), calls.map((_, i) => i))
  assert.deepStrictEqual(commits.map((c) => c.callId), calls.map((c) => c.callId))
  // durable records: tool/result in model order, each after its tool/call; tool/call in model order
  const results = world.records.filter((r) => r._tag === "tool/result")
  const callRecords = world.records.filter((r) => r._tag === "tool/call")
  assert.deepStrictEqual(results.map((r) => r.index), calls.map((_, i) => i))
  assert.deepStrictEqual(callRecords.map((r) => r.index), calls.map((_, i) => i))
  const position = (tag: LogRecord["_tag"], index: number) =>
    world.records.findIndex((r) => r._tag === tag && (r as { index: number }).index === index)
  for (let i = 0; i < n; i++) assert.isTrue(position("tool/call", i) < position("tool/result", i))
  // observers notified in model order, never for synthetic results
  assert.deepStrictEqual(world.observed, commits.filter((c) => !c.synthetic).map((c) => c.callId))
  // never-started calls are synthetic ABORTED_BEFORE_DISPATCH; started calls never are
  const prepared = new Set(world.inputs.map((i) => i.callId))
  for (const c of commits) {
    assert.strictEqual(c.synthetic, !prepared.has(c.callId))
    if (c.synthetic) {
      assert.isTrue(run.cancelled)
      assert.strictEqual(codeOf(c), "ABORTED_BEFORE_DISPATCH")
      assert.isTrue(Object.isFrozen(c.result) && Object.isFrozen(c.result.content))
    }
  }
  // the ordered lane never overlaps itself; each tool/call is appended immediately before its prepare
  checkLane(events)
  const lane = events.filter((e) => e.stage !== "dispatch" && e.stage !== "observer")
  lane.forEach((e, k) => {
    if (e.stage !== "prepare" || e.phase !== "enter") return
    const before = lane[k - 1]
    assert.isTrue(before.stage === "log" && before.detail === "tool/call" && before.callId === e.callId)
  })
  // in-flight bodies never exceed maxParallel; all started bodies are quiescent
  const intervals = bodies(events)
  const sweep = events.filter((e) => e.stage === "dispatch")
  let inFlight = 0
  for (const e of sweep) {
    inFlight += e.phase === "enter" ? 1 : -1
    assert.isTrue(inFlight <= maxParallel, `in flight ${inFlight} > ${maxParallel}`)
  }
  // an exclusive call runs with nothing else in flight and holds its barrier through its commit
  const classified = modes(built)
  for (const [index, { mode, start }] of classified) {
    if (mode !== "exclusive") continue
    const callId = calls[index].callId
    const own = intervals.find((b) => b.callId === callId)
    if (own !== undefined) {
      for (const other of intervals) {
        if (other.callId !== callId) assert.isTrue(other.to < own.from || other.from > own.to, "exclusive overlap")
      }
    }
    const done = commitTime(events, callId)
    for (let j = 0; j < n; j++) {
      if (j === index) continue
      const otherStart = time(
        events,
        (e) => e.stage === "log" && e.detail === "tool/call" && e.callId === calls[j].callId
      )
      if (j < index) {
        const otherDone = commitTime(events, calls[j].callId)
        if (otherDone >= 0) assert.isTrue(otherDone < start, "earlier calls committed before an exclusive start")
      } else if (otherStart >= 0 && done >= 0) {
        assert.isTrue(otherStart > done, "later calls start after an exclusive commit")
      }
    }
  }
  // SCHED-6: a flipped call is exclusive iff it was classified after its trigger committed
  for (const [target, trigger] of built.flips) {
    const seen = classified.get(target)
    if (seen === undefined || !prepared.has(calls[target].callId)) continue
    const flippedAt = time(
      events,
      (e) => e.stage === "observer" && e.phase === "enter" && e.callId === calls[trigger].callId
    )
    const expected = flippedAt >= 0 && flippedAt < seen.at ? "exclusive" : "parallel"
    assert.strictEqual(seen.mode, expected)
  }
  if (Exit.isSuccess(run.exit)) {
    const batch = run.exit.value
    assert.deepStrictEqual(batch.results.map((r) => r.result), commits.map((c) => c.result))
    assert.deepStrictEqual(batch.contexts, commits.flatMap((c) => c.result.additionalContexts ?? []))
    assert.strictEqual(batch.concluded, commits.some((c) => !c.result.isError && c.result.concludesTurn === true))
    assert.strictEqual(batch.aborted, run.cancelled)
  } else {
    assert.isTrue(Exit.isInterrupted(run.exit) && run.cancelled)
  }
}

const history = (run: Outcome_) => ({
  commits: run.commits,
  calls: run.built.world.records.filter((r) => r._tag === "tool/call"),
  results: run.built.world.records.filter((r) => r._tag === "tool/result"),
  observed: run.built.world.observed,
  batch: Exit.isSuccess(run.exit) ? run.exit.value : undefined
})

const options = { fastCheck: { numRuns: 200 } }

describe("Scheduler properties", () => {
  it.live.prop(
    "SCHED-3/4/5: random batches, caps and completion orders keep the lane ordered and the pool bounded",
    [specs, cap, choices],
    ([spec, maxParallel, picks]) =>
      Effect.gen(function*() {
        const run = yield* execute(build(spec), maxParallel, picks)
        assert.isTrue(Exit.isSuccess(run.exit))
        checkRun(run, maxParallel)
        assert.isTrue(run.commits.every((c) => !c.synthetic))
      }),
    options
  )

  it.live.prop(
    "SCHED-9 / D-14: with a random abort point (signal or interruption) every call ends with exactly one result",
    [specs, cap, choices, cancel],
    ([spec, maxParallel, picks, cancelAt]) =>
      Effect.gen(function*() {
        const run = yield* execute(build(spec), maxParallel, picks, cancelAt)
        checkRun(run, maxParallel)
        for (const input of run.built.world.inputs) if (run.cancelled) assert.isTrue(input.signal?.aborted)
      }),
    options
  )

  it.live.prop(
    "SCHED-6: an observer's registry change turns a not-yet-started call into a barrier",
    [FastCheck.integer({ min: 2, max: 7 }), cap, choices],
    ([n, maxParallel, picks]) =>
      Effect.gen(function*() {
        const spec: Array<CallSpec> = Array.from({ length: n }, (_, i) => ({
          outcome: "ok",
          mode: i === n - 1 ? "flip" : "parallel",
          flipAfter: 0,
          bodyContexts: 0,
          postContexts: 0,
          cooperative: true,
          args: "{}"
        }))
        const built = build(spec)
        const run = yield* execute(built, maxParallel, picks)
        checkRun(run, maxParallel)
        const seen = modes(built).get(n - 1)!
        const flippedAt = time(built.world.events, (e) => e.stage === "observer" && e.callId === "c0")
        if (flippedAt < seen.at) {
          assert.strictEqual(seen.mode, "exclusive")
          const last = bodies(built.world.events).find((b) => b.callId === `c${n - 1}`)!
          for (const b of bodies(built.world.events)) {
            if (b.callId !== last.callId) assert.isTrue(b.to < last.from)
          }
        }
      }),
    options
  )

  it.live.prop(
    "SCHED-5: with deterministic bodies the committed history equals that of a serial run (maxParallel 1)",
    [specs, cap, choices],
    ([spec, maxParallel, picks]) =>
      Effect.gen(function*() {
        const concurrent = yield* execute(build(spec), maxParallel, picks)
        const serial = yield* execute(build(spec), 1, [0])
        checkRun(serial, 1)
        assert.deepStrictEqual(history(concurrent), history(serial))
      }),
    options
  )

  it.live.prop(
    "D-16 / SCHED-10: a log failure drains every started body and names exactly the unrecorded calls",
    [specs, cap, choices, FastCheck.nat({ max: 16 })],
    ([spec, maxParallel, picks, failAt]) =>
      Effect.gen(function*() {
        const built = build(spec, failAt)
        const run = yield* execute(built, maxParallel, picks)
        const { calls, world } = built
        const total = 2 * calls.length
        bodies(world.events)
        checkLane(world.events)
        if (failAt >= total) {
          assert.isTrue(Exit.isSuccess(run.exit))
          return
        }
        assert.isTrue(Exit.isFailure(run.exit))
        const error = Exit.isFailure(run.exit) ? Cause.failureOption(run.exit.cause) : Option.none()
        assert.isTrue(Option.isSome(error))
        if (Option.isNone(error)) return
        const recorded = new Set(world.records.filter((r) => r._tag === "tool/result").map((r) => r.callId))
        const attempted = new Set(
          [...world.records, ...world.failed].filter((r) => r._tag === "tool/call").map((r) => r.callId)
        )
        assert.deepStrictEqual(error.value.unrecorded, calls.map((c) => c.callId).filter((id) => !recorded.has(id)))
        assert.deepStrictEqual(error.value.notStarted, calls.map((c) => c.callId).filter((id) => !attempted.has(id)))
        assert.strictEqual(world.failed.length, 1)
        assert.deepStrictEqual(
          run.commits.map((c) => c.callId),
          calls.map((c) => c.callId).filter((id) => recorded.has(id))
        )
        assert.strictEqual(world.records.length, failAt)
      }),
    options
  )
})
