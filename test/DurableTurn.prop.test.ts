/**
 * Properties of durable turns (issue 28 "Tests → Property", D-22, D-24).
 *
 * Crashes run on the real engine (the SQL runner on a libSQL file) with real, short durations: a
 * round is several random batches — parallel-safe and exclusive calls under each replay policy,
 * failing calls, calls that ask for approval — run together by a "process" (the layer built into
 * a scope) that is cut when every batch reached its own random point (its k-th body start, or its
 * k-th commit) or ended, by closing that scope. A second process on the same file resumes each
 * batch, its person answering as decided. Each batch must equal its uninterrupted run (on the
 * in-memory engine), but for the documented cases: a `never` body cut mid-run ends
 * OUTCOME_UNKNOWN, `idempotent`/`safe` cut bodies run again (with the same key). Every call has
 * exactly one result and one record pair, no body starts before its intent is stored, no settled
 * body runs again, a `never` body runs at most once, each approval is audited once.
 *
 * Ordering and expiry run on `WorkflowEngine.layerMemory` under the test clock (the cluster engine
 * does not advance under it): results, contexts and commit events equal the in-memory
 * `Scheduler.runBatch` of the same calls, whatever order the bodies end in; an approval nobody
 * answers ends `unavailable` after the timeout.
 */
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, beforeAll, describe, it, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Exit, FastCheck, Fiber, Layer, Option, Queue, Scope, TestClock } from "effect"
import * as DurableTurnSql from "../layers/DurableTurnSql.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as DurableTurn from "../src/DurableTurn.js"
import * as Scheduler from "../src/Scheduler.js"
import type { CommitEvent } from "../src/Scheduler.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import type { ToolResult } from "../src/ToolResult.js"
import { memoryEngine, tempDatabase } from "./fixtures/durable.js"
import {
  AGENT,
  type BatchSpec,
  batchSpec,
  callsOf,
  Control,
  controls,
  drive,
  memoryApp,
  propApp
} from "./fixtures/durableProp.js"

const codeOf = (result: ToolResult): string | undefined => (result.isError ? result.error.info?.code : undefined)

const db = tempDatabase()

/** The uninterrupted runs: the in-memory engine and journal, built once for the file. */
const referenceScope = Effect.runSync(Scope.make())
let reference: Context.Context<DurableTurn.DurableTurns | DurableTurn.DurableApprovals> | undefined
beforeAll(async () => {
  reference = await Effect.runPromise(
    Layer.buildWithScope(propApp(memoryEngine, { pollInterval: "20 millis" }), referenceScope)
  )
})
afterAll(async () => {
  await Effect.runPromise(Scope.close(referenceScope, Exit.void))
  db.cleanup()
})

let serial = 0

/** Rounds of the crash property, and batches per round (each round builds two runners). */
const ROUNDS = 6
const BATCHES = 30

/** The runner on the file; its storage poll and a waiting caller's re-read both short (answers are in-process). */
const runner = () =>
  propApp(DurableTurnSql.layerLibsql({ url: db.url, pollInterval: "20 millis" }), { pollInterval: "20 millis" })

/** The journal entries each batch's first process stored, read from the file between the two processes. */
const storedEntries = (sessionIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const out = new Map<string, Set<string>>()
    for (const id of sessionIds) {
      const rows = yield* sql<{ readonly entry: string }>`SELECT entry FROM tool_turn_journal WHERE session_id = ${id}`
      out.set(id, new Set(rows.map((row) => row.entry)))
    }
    return out
  }).pipe(Effect.provide(LibsqlClient.layer({ url: db.url, intMode: "bigint" })), Effect.orDie)

interface Run {
  readonly spec: BatchSpec
  readonly key: DurableTurn.BatchKey
  readonly calls: ReturnType<typeof callsOf>
  readonly control: Control
}

/** Checks one batch of a round against its uninterrupted run. */
const check = (
  run: Run,
  reference: Scheduler.BatchResult,
  final: Scheduler.BatchResult,
  stored: ReadonlySet<string>,
  records: ReadonlyArray<LogRecord>
) => {
  const { control, spec } = run
  const where = `batch ${run.key.sessionId} ${JSON.stringify(spec)}`
  assert.deepStrictEqual(
    final.results.map((r) => r.callId),
    run.calls.map((c) => c.callId),
    `one result per call, in order: ${where}`
  )
  assert.deepStrictEqual(control.violations, [], `D-24: every body starts with its intent stored: ${where}`)
  assert.isFalse(final.aborted)
  assert.deepStrictEqual(final.contexts, reference.contexts)
  spec.calls.forEach((call, i) => {
    const at = `call ${i} of ${where}`
    const intent = stored.has(`intent:${i}`)
    const settled = stored.has(`settle:${i}`) || stored.has(`result:${i}`)
    const first = control.runsOf(i, 1).length
    const second = control.runsOf(i, 2).length
    if (!intent) assert.strictEqual(first, 0, `D-24: no body starts before its intent is stored (${at})`)
    if (settled) assert.strictEqual(second, 0, `D-22: a settled body never runs again (${at})`)
    if (call.policy === "never") assert.isAtMost(first + second, 1, `D-22: a never body runs at most once (${at})`)
    const keys = new Set(control.runsOf(i).map((r) => r.key))
    assert.isAtMost(keys.size, 1, `D-22: every run of a body has the same idempotency key (${at})`)
    const result = final.results[i].result
    if (intent && !settled && call.policy === "never") {
      assert.strictEqual(codeOf(result), "OUTCOME_UNKNOWN", `D-22: a never body cut mid-run ends OUTCOME_UNKNOWN (${at})`)
    } else {
      assert.deepStrictEqual(result, reference.results[i].result, `the uninterrupted run's result (${at})`)
    }
    const mine = records.filter((r) => (r._tag === "tool/call" || r._tag === "tool/result") && r.callId === `c${i}`)
    assert.deepStrictEqual(mine.map((r) => r._tag), ["tool/call", "tool/result"], `one record pair (${at})`)
  })
  const asks = spec.calls.filter((call) => call.kind === "ask").length
  assert.strictEqual(records.filter((r) => r._tag === "approval/asked").length, asks, `each approval asked once: ${where}`)
  assert.strictEqual(records.filter((r) => r._tag === "approval/decided").length, asks, `each approval decided once: ${where}`)
}

/** One round: the batches run by a process cut at their points, resumed by another; each checked. */
const round = (specs: ReadonlyArray<BatchSpec>) =>
  Effect.gen(function*() {
    const id = serial++
    const runs: Array<Run> = specs.map((spec, j) => {
      const key = { sessionId: `crash-${id}-${j}`, batchId: "b" }
      const control = new Control(spec)
      controls.set(key.sessionId, control)
      return { spec, key, calls: callsOf(key.sessionId, spec), control }
    })
    const references = yield* Effect.forEach(runs, (run, j) => {
      const tag = `ref-${id}-${j}`
      controls.set(tag, new Control(undefined))
      return drive(callsOf(tag, run.spec), { sessionId: tag, batchId: "b" }, run.spec)
    }, { concurrency: "unbounded" }).pipe(Effect.provide(reference!))

    const first = yield* Scope.make()
    const context = yield* Layer.buildWithScope(runner(), first)
    for (const run of runs) run.control.journal = Context.get(context, DurableTurn.DurableJournal)
    const drivers = yield* Effect.forEach(runs, (run) =>
      Effect.fork(drive(run.calls, run.key, run.spec, run.control).pipe(Effect.provide(context))))
    yield* Effect.forEach(runs, (run, j) =>
      Effect.raceFirst(Deferred.await(run.control.cutReached), Effect.ignore(Fiber.join(drivers[j]))), { discard: true })
    yield* Scope.close(first, Exit.void)
    yield* Effect.forEach(drivers, Fiber.interrupt, { discard: true })

    const stored = yield* storedEntries(runs.map((run) => run.key.sessionId))
    for (const run of runs) run.control.restart()
    const second = yield* Scope.make()
    const resumed = yield* Layer.buildWithScope(runner(), second)
    for (const run of runs) run.control.journal = Context.get(resumed, DurableTurn.DurableJournal)
    const finals = yield* Effect.forEach(runs, (run) => drive(run.calls, run.key, run.spec), { concurrency: "unbounded" }).pipe(
      Effect.provide(resumed)
    )
    const logs = yield* Effect.forEach(runs, (run) => DurableTurn.records(run.key.sessionId)).pipe(Effect.provide(resumed))
    yield* Scope.close(second, Exit.void)
    runs.forEach((run, j) => check(run, references[j], finals[j], stored.get(run.key.sessionId)!, logs[j].records))
  })

describe("DurableTurn: crash property on the real engine (libSQL file)", () => {
  it.live.prop(
    "D-22/D-24: a process cut at random points, resumed by another, commits the uninterrupted history (modulo OUTCOME_UNKNOWN and re-runs)",
    [FastCheck.array(batchSpec(5), { minLength: BATCHES, maxLength: BATCHES })],
    ([specs]) => round(specs),
    { timeout: 60_000, fastCheck: { numRuns: ROUNDS, endOnFailure: true } }
  )
})

// ---------------------------------------------------------------------------------------------
// ordering and expiry under the test clock (in-memory engine)

/**
 * Ends the gated bodies of a batch in the order `rank` gives: each time bodies have started, the
 * one of them that ranks first is released (a body that cannot start before another ends is
 * released once it has started).
 */
const releaseInOrder = (control: Control, bodies: number, rank: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const gates = control.gates!
    const waiting = new Set<number>()
    for (let released = 0; released < bodies; released++) {
      if (waiting.size === 0) waiting.add(yield* Queue.take(gates.started))
      for (const index of yield* Queue.takeAll(gates.started)) waiting.add(index)
      const next = [...waiting].sort((a, b) => (rank[a] ?? a) - (rank[b] ?? b) || a - b)[0]
      waiting.delete(next)
      yield* Deferred.succeed(gates.release[next], undefined)
    }
  })

/** How many bodies a batch without asking calls starts: one per call. */
const bodiesOf = (spec: BatchSpec): number => spec.calls.length

const withoutAsks = (spec: BatchSpec): BatchSpec => ({ ...spec, calls: spec.calls.filter((call) => call.kind !== "ask") })

/** The in-memory engine under the test clock: a long poll, so the clock does not spin through retries. */
const clocked = propApp(memoryEngine, { approvalTimeout: "1 hour", pollInterval: "1 hour" })

layer(clocked)("DurableTurn: ordering and expiry (test clock)", (it) => {
  it.effect.prop(
    "D-22: results, contexts and commit events equal the in-memory scheduler's, whatever order the bodies end in",
    [batchSpec(6).map(withoutAsks), FastCheck.array(FastCheck.nat(), { minLength: 6, maxLength: 6 })],
    ([spec, rank]) =>
      Effect.gen(function*() {
        const id = serial++
        const tag = `order-${id}`
        const started = yield* Queue.unbounded<number>()
        const release = yield* Effect.forEach(spec.calls, () => Deferred.make<void>())
        const control = new Control(undefined, { started, release })
        controls.set(tag, control)
        const durableCommits: Array<CommitEvent> = []
        const [batch] = yield* Effect.all([
          DurableTurn.runBatch(callsOf(tag, spec), {
            sessionId: tag,
            batchId: "b",
            agent: AGENT,
            onCommit: (event) => Effect.sync(() => void durableCommits.push(event))
          }),
          releaseInOrder(control, bodiesOf(spec), rank)
        ], { concurrency: "unbounded" })
        const memoryTag = `memory-${id}`
        controls.set(memoryTag, new Control(undefined))
        const memoryCommits: Array<CommitEvent> = []
        const inMemory = yield* Scheduler.runBatch(callsOf(memoryTag, spec), {
          agent: AGENT,
          onCommit: (event) => Effect.sync(() => void memoryCommits.push(event))
        }).pipe(Effect.provide(memoryApp(ToolCallLogMemory.layer)))
        assert.deepStrictEqual(batch.results, inMemory.results)
        assert.deepStrictEqual(batch.contexts, inMemory.contexts)
        assert.deepStrictEqual(durableCommits, memoryCommits)
        assert.deepStrictEqual(
          durableCommits.map((event) => event.index),
          spec.calls.map((_, i) => i),
          "commits in model order"
        )
      }),
    { fastCheck: { numRuns: 50 } }
  )

  it.effect.prop(
    "D-22: an approval nobody answers expires `unavailable` after the timeout, as an unavailable approval in memory",
    [batchSpec(4)],
    ([spec]) =>
      Effect.gen(function*() {
        const id = serial++
        const tag = `expiry-${id}`
        controls.set(tag, new Control(undefined))
        const calls = callsOf(tag, spec)
        const fiber = yield* Effect.fork(DurableTurn.runBatch(calls, { sessionId: tag, batchId: "b", agent: AGENT }))
        if (spec.calls.some((call) => call.kind === "ask")) {
          const waitingOf = Effect.map(DurableTurn.pending, (all) => all.filter((p) => p.sessionId === tag))
          for (let ms = 0; ms < 1000 && (yield* waitingOf).length === 0; ms++) yield* TestClock.adjust(Duration.millis(1))
          const asked = yield* waitingOf
          assert.strictEqual(asked.length, 1, "the first asking call waits")
          yield* TestClock.adjust(Duration.minutes(59))
          assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), "not decided before the timeout")
          assert.deepStrictEqual(yield* waitingOf, asked, "the request still waits")
        }
        for (let hours = 0; hours < 48 && Option.isNone(yield* Fiber.poll(fiber)); hours++) {
          yield* TestClock.adjust(Duration.minutes(61))
        }
        const batch = yield* Fiber.join(fiber)
        const memoryTag = `expiry-memory-${id}`
        controls.set(memoryTag, new Control(undefined))
        const inMemory = yield* Scheduler.runBatch(callsOf(memoryTag, spec), { agent: AGENT }).pipe(Effect.provide(memoryApp(ToolCallLogMemory.layer)))
        assert.deepStrictEqual(batch.results.map((r) => r.result), inMemory.results.map((r) => r.result))
        const decided = (yield* DurableTurn.records(tag)).records.filter((r) => r._tag === "approval/decided")
        assert.deepStrictEqual(
          decided.map((r) => r._tag === "approval/decided" ? [r.outcome, r.by] : []),
          spec.calls.filter((c) => c.kind === "ask").map(() => ["unavailable", "expiry"])
        )
      }),
    { fastCheck: { numRuns: 25 } }
  )
})
