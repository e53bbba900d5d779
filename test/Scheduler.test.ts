import { assert, describe, it } from "@effect/vitest"
import { Cause, Chunk, Deferred, Effect, Exit, Fiber, FiberId, Layer, Logger, Option, Queue, Stream } from "effect"
import { getEventListeners } from "node:events"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as internal from "../src/internal/scheduler/batch.js"
import * as Scheduler from "../src/Scheduler.js"
import { defineTool } from "../src/Tool.js"
import type { ToolDefinition } from "../src/Tool.js"
import { type LogRecord, ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import { detailOf } from "../src/ToolError.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as Fake from "./fixtures/fakeRuntime.js"
import * as Hostile from "./fixtures/hostile.js"

const call = (callId: string, name: string, args = "{}"): Scheduler.ModelToolCall => ({
  callId,
  name,
  arguments: args
})

const durable = (records: ReadonlyArray<LogRecord>): Array<string> =>
  records.map((r) => `${r._tag === "tool/call" ? "call" : "result"} ${(r as { callId: string }).callId}`)

const codeOf = (result: ToolResult): string | undefined => result.isError ? result.error.info?.code : undefined

const textOf = (result: ToolResult): string => result.content.map((b) => (b as { text: string }).text).join("")

const eventsOf = (world: Fake.FakeWorld, stage: Fake.Stage, phase: "enter" | "exit" = "enter"): Array<string> =>
  world.events.filter((e) => e.stage === stage && e.phase === phase).map((e) => e.callId)

const timeOf = (world: Fake.FakeWorld, stage: Fake.Stage, phase: "enter" | "exit", callId: string): number =>
  world.events.find((e) => e.stage === stage && e.phase === phase && e.callId === callId)?.t ?? -1

const hasRecord = (world: Fake.FakeWorld, tag: string, callId: string): boolean =>
  world.records.some((r) => r._tag === tag && (r as { callId: string }).callId === callId)

/** Runs a batch with the test probe: `waitFor` awaits the driver blocking with exactly these calls in flight. */
const forkProbedIn = (calls: ReadonlyArray<Scheduler.ModelToolCall>, options?: Scheduler.BatchOptions) =>
  Effect.gen(function*() {
    const waits = yield* Queue.unbounded<ReadonlyArray<number>>()
    const fiber = yield* internal.runBatch(calls, options, { onWait: (inFlight) => Queue.offer(waits, inFlight) }).pipe(
      Effect.mapError((failure) => new Scheduler.SchedulerError(failure)),
      Effect.fork
    )
    const waitFor = (inFlight: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        while (true) {
          const next = yield* Queue.take(waits)
          if (next.length === inFlight.length && next.every((i, k) => i === inFlight[k])) return
        }
      })
    return { fiber, waits, waitFor }
  })

const forkProbed = (
  world: Fake.FakeWorld,
  calls: ReadonlyArray<Scheduler.ModelToolCall>,
  options?: Scheduler.BatchOptions
) => Effect.provide(forkProbedIn(calls, options), world.context)

const run = (
  world: Fake.FakeWorld,
  calls: ReadonlyArray<Scheduler.ModelToolCall>,
  options?: Scheduler.BatchOptions
) => Scheduler.runBatch(calls, options).pipe(Effect.provide(world.context))

const awaitAbort = (signal: AbortSignal) =>
  Effect.async<void>((resume) => {
    if (signal.aborted) return resume(Effect.void)
    const onAbort = () => resume(Effect.void)
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

const ungated = (tool: Fake.FakeTool = {}): Fake.FakeTool => ({ ...tool, gated: false })

describe("Scheduler", () => {
  it.effect("T-SCHED-001 / SCHED-4: three parallel-safe bodies all start before any completes", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: { mode: "parallel" } } })
      const calls = [call("c1", "read"), call("c2", "read"), call("c3", "read")]
      const fiber = yield* Effect.fork(run(world, calls))
      for (const id of ["c1", "c2", "c3"]) yield* Deferred.await(world.entered(id))
      assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c1", "c2", "c3"])
      assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), [])
      for (const id of ["c3", "c2", "c1"]) yield* world.release(id)
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(batch.results.map((r) => [r.callId, r.index, textOf(r.result)]), [
        ["c1", 0, "ok c1"],
        ["c2", 1, "ok c2"],
        ["c3", 2, "ok c3"]
      ])
      assert.isFalse(batch.aborted)
      assert.isFalse(batch.concluded)
    }))

  it.effect("T-SCHED-004 / SCHED-6: an observer's registry change turns a not-yet-started call into a barrier", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { p: { mode: "parallel" }, x: { mode: "parallel" } } })
      world.observers.push((callId) => {
        if (callId === "c1") world.setMode("x", "exclusive")
      })
      const { fiber, waitFor } = yield* forkProbed(world, [call("c1", "p"), call("c2", "p"), call("c3", "x")], {
        maxParallel: 2
      })
      yield* waitFor([0, 1])
      yield* world.release("c1")
      yield* waitFor([1])
      assert.isTrue(hasRecord(world, "tool/result", "c1"))
      assert.isFalse(hasRecord(world, "tool/call", "c3"))
      assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c1", "c2"])
      yield* world.release("c2")
      yield* Deferred.await(world.entered("c3"))
      assert.isTrue(timeOf(world, "dispatch", "enter", "c3") > timeOf(world, "finalize", "exit", "c2"))
      yield* world.release("c3")
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(batch.results.map((r) => r.callId), ["c1", "c2", "c3"])
      assert.deepStrictEqual(durable(world.records), [
        "call c1",
        "call c2",
        "result c1",
        "result c2",
        "call c3",
        "result c3"
      ])
    }))

  it.effect("T-SCHED-005 / SCHED-5: nothing is committed until the first call settles; durable order c1, c2", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {} } })
      const { fiber, waitFor } = yield* forkProbed(world, [call("c1", "read"), call("c2", "read")])
      yield* waitFor([0, 1])
      yield* world.release("c2")
      yield* waitFor([0])
      assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), ["c2"])
      assert.deepStrictEqual(durable(world.records), ["call c1", "call c2"])
      assert.deepStrictEqual(world.observed, [])
      yield* world.release("c1")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(durable(world.records), ["call c1", "call c2", "result c1", "result c2"])
      assert.deepStrictEqual(world.observed, ["c1", "c2"])
    }))

  it.effect("T-SCHED-006: results and commit events pair with calls in model order whatever the settlement order", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {} } })
      const commits: Array<string> = []
      const calls = [call("c1", "read"), call("c2", "read"), call("c3", "read")]
      const fiber = yield* Effect.fork(
        run(world, calls, { onCommit: (e) => Effect.sync(() => commits.push(`${e.index}:${e.callId}:${e.synthetic}`)) })
      )
      for (const id of ["c1", "c2", "c3"]) yield* Deferred.await(world.entered(id))
      for (const id of ["c2", "c3", "c1"]) yield* world.release(id)
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(commits, ["0:c1:false", "1:c2:false", "2:c3:false"])
      assert.deepStrictEqual(batch.results.map((r) => `${r.callId}=${textOf(r.result)}`), [
        "c1=ok c1",
        "c2=ok c2",
        "c3=ok c3"
      ])
      assert.deepStrictEqual(
        world.records.filter((r) => r._tag === "tool/result").map((r) => [r.callId, r.index, r.batchId]),
        [["c1", 0, "c1"], ["c2", 1, "c1"], ["c3", 2, "c1"]]
      )
    }))

  it.effect("T-SCHED-007 / SCHED-4: a cap of 0, 1.5, -1, NaN or Infinity is a defect at call time", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      for (const cap of [0, 1.5, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
        const exit = yield* Effect.exit(run(world, [call("c1", "read")], { maxParallel: cap }))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const defect = Cause.dieOption(exit.cause)
          assert.isTrue(Option.isSome(defect))
          if (Option.isSome(defect)) {
            assert.instanceOf(defect.value, Cause.IllegalArgumentException)
            assert.strictEqual((defect.value as Error).message, "maxParallelToolCalls must be a positive integer")
          }
        }
        assert.isFalse(Scheduler.isValidMaxParallel(cap))
      }
      assert.deepStrictEqual(world.records, [])
      assert.isTrue(Scheduler.isValidMaxParallel(1))
      assert.strictEqual(Scheduler.DEFAULT_MAX_PARALLEL, 10)
    }))

  it.effect("SCHED-4: the default cap is 10 dispatches in flight", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {} } })
      const calls = Array.from({ length: 12 }, (_, i) => call(`c${i + 1}`, "read"))
      const { fiber, waitFor } = yield* forkProbed(world, calls)
      yield* waitFor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
      assert.strictEqual(eventsOf(world, "dispatch").length, 10)
      for (const c of calls) yield* world.release(c.callId)
      const batch = yield* Fiber.join(fiber)
      assert.strictEqual(batch.results.length, 12)
    }))

  it.effect("T-SCHED-010 / SCHED-4: the pool refills per call; log begins call c1, call c2, result c1, call c3", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {} } })
      const calls = ["c1", "c2", "c3", "c4"].map((id) => call(id, "read"))
      const { fiber, waitFor } = yield* forkProbed(world, calls, { maxParallel: 2 })
      yield* waitFor([0, 1])
      assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c1", "c2"])
      yield* world.release("c1")
      yield* Deferred.await(world.entered("c3"))
      assert.deepStrictEqual(durable(world.records), ["call c1", "call c2", "result c1", "call c3"])
      for (const id of ["c4", "c3", "c2"]) yield* world.release(id)
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(batch.results.map((r) => r.callId), ["c1", "c2", "c3", "c4"])
    }))

  it.effect("T-SCHED-011 / SCHED-4: with cap 1 the second call does not start before the first settles", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: { mode: "parallel" } } })
      const { fiber, waitFor } = yield* forkProbed(world, [call("c1", "read"), call("c2", "read")], { maxParallel: 1 })
      yield* waitFor([0])
      assert.deepStrictEqual(durable(world.records), ["call c1"])
      assert.deepStrictEqual(eventsOf(world, "prepare"), ["c1"])
      yield* world.release("c1")
      yield* Deferred.await(world.entered("c2"))
      assert.deepStrictEqual(durable(world.records), ["call c1", "result c1", "call c2"])
      yield* world.release("c2")
      yield* Fiber.join(fiber)
    }))

  it.effect("T-SCHED-013 / SCHED-5: pre/post-execute observe c1, c2, c3 in order when bodies settle in reverse", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {} } })
      const calls = ["c1", "c2", "c3"].map((id) => call(id, "read"))
      const fiber = yield* Effect.fork(run(world, calls))
      for (const id of ["c1", "c2", "c3"]) yield* Deferred.await(world.entered(id))
      for (const id of ["c3", "c2", "c1"]) yield* world.release(id)
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), ["c3", "c2", "c1"])
      assert.deepStrictEqual(eventsOf(world, "prepare"), ["c1", "c2", "c3"])
      assert.deepStrictEqual(eventsOf(world, "finalize"), ["c1", "c2", "c3"])
      assert.deepStrictEqual(world.observed, ["c1", "c2", "c3"])
    }))

  it.effect("T-SCHED-014 / CTX-4: contexts ctx-c1, ctx-c2 follow every result though c2 settles first", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { a: { postContexts: ["ctx-c1"] }, b: { postContexts: ["ctx-c2"] } } })
      const history: Array<string> = []
      const fiber = yield* Effect.fork(
        run(world, [call("c1", "a"), call("c2", "b")], {
          onCommit: (e) => Effect.sync(() => history.push(`result ${e.callId}`))
        })
      )
      yield* Deferred.await(world.entered("c2"))
      yield* world.release("c2")
      yield* world.release("c1")
      const batch = yield* Fiber.join(fiber)
      for (const c of batch.contexts) history.push(`user ${c.id}`)
      assert.deepStrictEqual(history, ["result c1", "result c2", "user ctx-c1", "user ctx-c2"])
      assert.deepStrictEqual(batch.results.map((r) => r.result.additionalContexts?.map((c) => c.id)), [
        ["ctx-c1"],
        ["ctx-c2"]
      ])
    }))

  it.effect("T-SCHED-018 / SCHED-9: abort mid-pool drains c1, c2; c3, c4 get synthetic ABORTED_BEFORE_DISPATCH", () =>
    Effect.gen(function*() {
      const world = Fake.make({
        tools: { read: {}, a: { postContexts: ["ctx-c1"] }, b: { postContexts: ["ctx-c2"] } }
      })
      const controller = new AbortController()
      const commits: Array<string> = []
      const calls = [call("c1", "a"), call("c2", "b"), call("c3", "read"), call("c4", "read")]
      const { fiber, waitFor } = yield* forkProbed(world, calls, {
        maxParallel: 2,
        signal: controller.signal,
        onCommit: (e) => Effect.sync(() => commits.push(`${e.callId}:${e.synthetic}`))
      })
      yield* waitFor([0, 1])
      controller.abort()
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(eventsOf(world, "prepare"), ["c1", "c2"])
      assert.deepStrictEqual(eventsOf(world, "dispatch", "exit").sort(), ["c1", "c2"])
      assert.deepStrictEqual(durable(world.records), [
        "call c1",
        "call c2",
        "result c1",
        "result c2",
        "call c3",
        "result c3",
        "call c4",
        "result c4"
      ])
      assert.deepStrictEqual(batch.results.map((r) => codeOf(r.result)), [
        "ABORTED",
        "ABORTED",
        "ABORTED_BEFORE_DISPATCH",
        "ABORTED_BEFORE_DISPATCH"
      ])
      assert.deepStrictEqual(batch.results[2].result, {
        isError: true,
        error: {
          message: "tool call aborted before dispatch",
          info: { name: "AbortError", code: "ABORTED_BEFORE_DISPATCH" }
        },
        content: [{ type: "text", text: "Error: tool call aborted before dispatch" }]
      })
      assert.isTrue(Object.isFrozen(batch.results[3].result))
      assert.isTrue(Object.isFrozen(batch.results[3].result.content[0]))
      assert.deepStrictEqual(batch.contexts.map((c) => c.id), ["ctx-c1", "ctx-c2"])
      assert.deepStrictEqual(world.observed, ["c1", "c2"])
      assert.deepStrictEqual(commits, ["c1:false", "c2:false", "c3:true", "c4:true"])
      assert.isTrue(batch.aborted)
      const synthetic = world.records[5]
      assert.deepStrictEqual(synthetic, {
        _tag: "tool/result",
        batchId: "c1",
        index: 2,
        callId: "c3",
        content: [{ type: "text", text: "Error: tool call aborted before dispatch" }],
        isError: true,
        error: { name: "AbortError", code: "ABORTED_BEFORE_DISPATCH" }
      })
    }))

  it.effect("T-SCHED-019 / SCHED-9: after an abort a following exclusive call never runs", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { p: { mode: "parallel" }, x: { mode: "exclusive" } } })
      const controller = new AbortController()
      const calls = [call("c1", "p"), call("c2", "p"), call("c3", "x")]
      const { fiber, waitFor } = yield* forkProbed(world, calls, { signal: controller.signal })
      yield* waitFor([0, 1])
      controller.abort()
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c1", "c2"])
      assert.deepStrictEqual(world.inputs.map((i) => i.callId), ["c1", "c2"])
      assert.strictEqual(codeOf(batch.results[2].result), "ABORTED_BEFORE_DISPATCH")
      assert.deepStrictEqual(durable(world.records).slice(-2), ["call c3", "result c3"])
      assert.strictEqual((world.records[5] as { callId: string }).callId, "c3")
    }))

  it.effect("SCHED-9: a signal aborted before the batch starts nothing and records a pair per call", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {} } })
      const controller = new AbortController()
      controller.abort()
      const batch = yield* run(world, [call("c1", "read"), call("c2", "nope")], { signal: controller.signal })
      assert.deepStrictEqual(world.events.filter((e) => e.stage !== "log"), [])
      assert.deepStrictEqual(durable(world.records), ["call c1", "result c1", "call c2", "result c2"])
      assert.deepStrictEqual(batch.results.map((r) => codeOf(r.result)), [
        "ABORTED_BEFORE_DISPATCH",
        "ABORTED_BEFORE_DISPATCH"
      ])
      assert.isTrue(batch.aborted)
    }))

  it.effect("D-14: interrupting the batch drains the started body, records synthetic results, then interrupts", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { slow: { cooperative: false }, read: {} } })
      const calls = [call("c1", "slow"), call("c2", "read"), call("c3", "read")]
      const { fiber, waitFor } = yield* forkProbed(world, calls, { maxParallel: 1 })
      yield* waitFor([0])
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* awaitAbort(world.inputs[0].signal!)
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(interrupter)))
      assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), [])
      yield* world.release("c1")
      const exit = yield* Fiber.join(interrupter)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.deepStrictEqual(durable(world.records), [
        "call c1",
        "result c1",
        "call c2",
        "result c2",
        "call c3",
        "result c3"
      ])
      const results = world.records.filter((r) => r._tag === "tool/result")
      assert.deepStrictEqual(results.map((r) => r.error?.code), [
        "ABORTED",
        "ABORTED_BEFORE_DISPATCH",
        "ABORTED_BEFORE_DISPATCH"
      ])
      assert.isTrue(world.inputs[0].signal?.aborted)
    }))

  it.effect("D-14: the runtime sees one batch signal; every listener added to the caller's signal is removed", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      const controller = new AbortController()
      yield* run(world, [call("c1", "read"), call("c2", "read")], { signal: controller.signal })
      assert.strictEqual(getEventListeners(controller.signal, "abort").length, 0)
      assert.notStrictEqual(world.inputs[0].signal, controller.signal)
      assert.strictEqual(world.inputs[0].signal, world.inputs[1].signal)
      assert.isFalse(world.inputs[0].signal?.aborted)
    }))

  it.effect("D-16 / SCHED-10: a failing tool/result append drains in-flight calls and names the unrecorded calls", () =>
    Effect.gen(function*() {
      const world = Fake.make({
        tools: { read: {} },
        failAppend: (record) => record._tag === "tool/result" && record.callId === "c1"
      })
      const calls = ["c1", "c2", "c3", "c4"].map((id) => call(id, "read"))
      const { fiber, waitFor } = yield* forkProbed(world, calls, { maxParallel: 2 })
      yield* waitFor([0, 1])
      yield* world.release("c1")
      yield* waitFor([1])
      assert.isFalse(hasRecord(world, "tool/call", "c3"))
      yield* world.release("c2")
      const exit = yield* Effect.exit(Fiber.join(fiber))
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      assert.isTrue(Option.isSome(error))
      if (Option.isSome(error)) {
        assert.instanceOf(error.value, Scheduler.SchedulerError)
        assert.strictEqual(error.value._tag, "SchedulerError")
        assert.deepStrictEqual(error.value.unrecorded, ["c1", "c2", "c3", "c4"])
        assert.deepStrictEqual(error.value.notStarted, ["c3", "c4"])
        assert.strictEqual(error.value.logError.message, "disk full at tool/result c1")
        assert.strictEqual(
          error.value.message,
          "tool-call log failed: disk full at tool/result c1; no tool/result recorded for: c1, c2, c3, c4" +
            " (not started: c3, c4)"
        )
      }
      assert.deepStrictEqual(durable(world.records), ["call c1", "call c2"])
      assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), ["c1", "c2"])
      assert.deepStrictEqual(world.observed, ["c1"])
      assert.deepStrictEqual(eventsOf(world, "finalize"), ["c1"])
    }))

  it.effect("D-16: a failing tool/call append starts nothing (no prepare for that call)", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() }, failAppend: (_record, count) => count === 2 })
      const exit = yield* Effect.exit(run(world, [call("c1", "read"), call("c2", "read")], { maxParallel: 1 }))
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      assert.isTrue(Option.isSome(error))
      if (Option.isSome(error)) {
        assert.deepStrictEqual(error.value.unrecorded, ["c2"])
        assert.deepStrictEqual(error.value.notStarted, [])
        assert.strictEqual(
          error.value.message,
          "tool-call log failed: disk full at tool/call c2; no tool/result recorded for: c2"
        )
      }
      assert.deepStrictEqual(world.inputs.map((i) => i.callId), ["c1"])
    }))

  it.effect("D-16: a failing synthetic append after an abort fails the batch with the remaining calls", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      controller.abort()
      const world = Fake.make({ tools: { read: {} }, failAppend: (_record, count) => count === 3 })
      const calls = ["c1", "c2", "c3"].map((id) => call(id, "read"))
      const exit = yield* Effect.exit(run(world, calls, { signal: controller.signal }))
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      assert.isTrue(Option.isSome(error) && error.value.message ===
        "tool-call log failed: disk full at tool/result c2; no tool/result recorded for: c2, c3 (not started: c3)")
      assert.deepStrictEqual(durable(world.records), ["call c1", "result c1", "call c2"])
    }))

  it.effect("SCHED-10: a defect in a staged step stops new starts, drains in-flight calls and is rethrown", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {}, crash: { prepare: "die" } } })
      const calls = [call("c1", "read"), call("c2", "crash"), call("c3", "read")]
      const { fiber, waitFor } = yield* forkProbed(world, calls)
      yield* waitFor([0])
      assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), [])
      yield* world.release("c1")
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isFailure(exit))
      const defect = Exit.isFailure(exit) ? Cause.dieOption(exit.cause) : Option.none()
      assert.isTrue(Option.isSome(defect) && (defect.value as Error).message === "prepare crashed for c2")
      assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), ["c1"])
      assert.deepStrictEqual(durable(world.records), ["call c1", "call c2"])
      assert.deepStrictEqual(world.observed, [])
    }))

  it.effect("SCHED-3: an exclusive call runs alone and holds its barrier through its commit", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { p: { mode: "parallel" }, x: { mode: "exclusive" } } })
      const calls = [call("c1", "p"), call("c2", "p"), call("c3", "x"), call("c4", "p")]
      const { fiber, waitFor } = yield* forkProbed(world, calls)
      yield* waitFor([0, 1])
      assert.isFalse(hasRecord(world, "tool/call", "c3"))
      yield* world.release("c2")
      yield* world.release("c1")
      yield* waitFor([2])
      assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c1", "c2", "c3"])
      assert.isFalse(hasRecord(world, "tool/call", "c4"))
      yield* world.release("c3")
      yield* Deferred.await(world.entered("c4"))
      assert.isTrue(timeOf(world, "dispatch", "enter", "c4") > timeOf(world, "finalize", "exit", "c3"))
      yield* world.release("c4")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(durable(world.records), [
        "call c1",
        "call c2",
        "result c1",
        "result c2",
        "call c3",
        "result c3",
        "call c4",
        "result c4"
      ])
    }))

  it.effect("SCHED-5: denials and final results fill their slot without dispatching and still commit in order", () =>
    Effect.gen(function*() {
      const world = Fake.make({
        tools: { read: {}, deny: { prepare: "deny" }, broken: { prepare: "final" }, wrap: { body: "wrapperFails" } }
      })
      const calls = [call("c1", "read"), call("c2", "deny"), call("c3", "broken"), call("c4", "wrap")]
      const fiber = yield* Effect.fork(run(world, calls))
      yield* Deferred.await(world.entered("c4"))
      yield* world.release("c4")
      yield* world.release("c1")
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c1", "c4"])
      assert.deepStrictEqual(eventsOf(world, "finalize"), ["c1", "c2"])
      assert.deepStrictEqual(eventsOf(world, "finish"), ["c3", "c4"])
      assert.deepStrictEqual(batch.results.map((r) => textOf(r.result)), [
        "ok c1",
        "Error: denied c2",
        "Error: pipeline failed",
        "Error: wrapper failed"
      ])
    }))

  it.effect("SCHED-2: unknown names are classified exclusive and still get a result", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {} } })
      const calls = [call("c1", "read"), call("c2", "ghost"), call("c3", "read")]
      const { fiber, waitFor } = yield* forkProbed(world, calls)
      yield* waitFor([0])
      assert.isFalse(hasRecord(world, "tool/call", "c2"))
      yield* world.release("c1")
      yield* waitFor([1])
      yield* world.release("c2")
      yield* world.release("c3")
      const batch = yield* Fiber.join(fiber)
      assert.strictEqual(codeOf(batch.results[1].result), "UNKNOWN_TOOL")
    }))

  it.effect("SCHED-11 / CTX-6: concluded is true iff a committed success carried concludesTurn", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated(), done: ungated({ concludes: true }) } })
      const a = yield* run(world, [call("c1", "read"), call("c2", "done")])
      assert.isTrue(a.concluded)
      const b = yield* run(world, [call("d1", "read")])
      assert.isFalse(b.concluded)
    }))

  it.effect("SCHED-7: tool/call records carry batchId, index, name, agent and the raw argument text", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      yield* run(world, [call("c1", "read", "{\"path\": \"a\"}"), call("c2", "read", "")], {
        agent: "main",
        batchId: "turn-1/step-2"
      })
      assert.deepStrictEqual(world.records.filter((r) => r._tag === "tool/call"), [
        {
          _tag: "tool/call",
          batchId: "turn-1/step-2",
          index: 0,
          callId: "c1",
          name: "read",
          agent: "main",
          arguments: "{\"path\": \"a\"}"
        },
        {
          _tag: "tool/call",
          batchId: "turn-1/step-2",
          index: 1,
          callId: "c2",
          name: "read",
          agent: "main",
          arguments: ""
        }
      ])
      assert.deepStrictEqual(world.inputs.map((i) => i.agent), ["main", "main"])
      assert.isFalse("rootCallId" in world.inputs[0])
      assert.isFalse("parent" in world.inputs[0])
    }))

  it.effect("T-LOOP-002: both tool results precede both contexts, ordered ctx-c1, ctx-c2", () =>
    Effect.gen(function*() {
      const world = Fake.make({
        tools: { a: ungated({ postContexts: ["ctx-c1"] }), b: ungated({ postContexts: ["ctx-c2"] }) }
      })
      const surface: Array<string> = []
      const batch = yield* run(world, [call("c1", "a"), call("c2", "b")], {
        onCommit: (e) => Effect.sync(() => surface.push(`tool-result ${e.callId}`))
      })
      for (const c of batch.contexts) surface.push(`user ${c.id}`)
      assert.deepStrictEqual(surface, ["tool-result c1", "tool-result c2", "user ctx-c1", "user ctx-c2"])
    }))

  it.effect("T-LOOP-003 / CTX-4: contexts deferred by a body follow its tool result in defer order", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { composite: ungated({ bodyContexts: ["a", "b"] }) } })
      const batch = yield* run(world, [call("c1", "composite")])
      assert.deepStrictEqual(batch.contexts.map((c) => c.id), ["a", "b"])
      assert.deepStrictEqual(batch.contexts[0], { id: "a", role: "user", content: [{ type: "text", text: "a" }] })
    }))

  it.effect("T-LOOP-021 / SCHED-1: malformed JSON arguments are recorded raw and passed on as the string", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      const batch = yield* run(world, [call("c1", "read", "not json")])
      assert.strictEqual((world.records[0] as { arguments: string }).arguments, "not json")
      assert.strictEqual(world.inputs[0].arguments, "not json")
      assert.strictEqual(world.classified[0].arguments, "not json")
      assert.strictEqual(batch.results.length, 1)
    }))

  it.effect("T-LOOP-022 / SCHED-1: an empty argument string is treated as {}", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      const batch = yield* run(world, [call("c1", "read", "")])
      assert.deepStrictEqual(world.inputs[0].arguments, {})
      assert.strictEqual(textOf(batch.results[0].result), "ok c1")
      assert.deepStrictEqual(Scheduler.parseArguments("[1,2]"), [1, 2])
      assert.strictEqual(Scheduler.parseArguments("{"), "{")
    }))

  it.effect("an empty batch records nothing", () =>
    Effect.gen(function*() {
      const world = Fake.make()
      const batch = yield* run(world, [])
      assert.deepStrictEqual(batch, { results: [], contexts: [], concluded: false, aborted: false })
      assert.deepStrictEqual(world.records, [])
    }))

  it.effect("onCommit failures are contained and never change the batch", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      const batch = yield* run(world, [call("c1", "read"), call("c2", "read")], {
        maxParallel: 1,
        onCommit: (e) => e.index === 0 ? Effect.die("ui crashed") : Effect.void
      })
      assert.deepStrictEqual(batch.results.map((r) => r.callId), ["c1", "c2"])
      assert.deepStrictEqual(durable(world.records), ["call c1", "result c1", "call c2", "result c2"])
    }))

  it.effect("runBatchStream emits each commit, then the batch outcome", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      const events = yield* Scheduler.runBatchStream([call("c1", "read"), call("c2", "read")]).pipe(
        Stream.runCollect,
        Effect.provide(world.context)
      )
      const list = Chunk.toReadonlyArray(events)
      assert.deepStrictEqual(list.map((e) => e._tag === "Committed" ? e.commit.callId : "done"), ["c1", "c2", "done"])
      const last = list[2]
      assert.isTrue(last._tag === "Completed" && last.batch.results.length === 2)
    }))
})

describe("Scheduler.runBatchStream", () => {
  it.effect("ending the stream early interrupts the batch: it drains and records a result for every call", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: {} } })
      yield* Effect.fork(Effect.zipRight(Deferred.await(world.entered("c1")), world.release("c1")))
      const calls = ["c1", "c2", "c3"].map((id) => call(id, "read"))
      const events = yield* Scheduler.runBatchStream(calls, { maxParallel: 1 }).pipe(
        Stream.take(1),
        Stream.runCollect,
        Effect.provide(world.context)
      )
      const emitted = Chunk.toReadonlyArray(events).map((e) => e._tag === "Committed" && e.commit.callId)
      assert.deepStrictEqual(emitted, ["c1"])
      const results = world.records.filter((r) => r._tag === "tool/result")
      assert.deepStrictEqual(results.map((r) => r.callId), ["c1", "c2", "c3"])
      assert.strictEqual(results[2].error?.code, "ABORTED_BEFORE_DISPATCH")
      assert.isTrue(world.inputs.every((input) => input.signal?.aborted === true))
    }))
})

describe("Scheduler end-to-end (real ToolRuntime, InMemoryToolRegistry, in-memory log)", () => {
  const services = (registry: Layer.Layer<ToolRegistry> = InMemoryToolRegistry.layer) =>
    Layer.mergeAll(ToolRuntime.layer, ToolCallLogMemory.layer).pipe(Layer.provideMerge(registry))

  const gates = (ids: ReadonlyArray<string>) => {
    const gate = new Map(ids.map((id) => [id, Deferred.unsafeMake<void>(FiberId.none)]))
    const entered = new Map(ids.map((id) => [id, Deferred.unsafeMake<void>(FiberId.none)]))
    return { gate, entered }
  }

  const tool = (
    name: string,
    execute: ToolDefinition<never>["execute"],
    overrides: Partial<ToolDefinition<never>> = {}
  ): ToolDefinition<never> => ({
    name,
    description: `${name} tool`,
    parameters: { type: "object" },
    output: { schema: {}, render: (_args, value) => [{ type: "text", text: String(value) }] },
    execute,
    ...overrides
  })

  const recordsOf = Effect.flatMap(ToolCallLog, (log) => log.records)

  it.scoped("SCHED-5 / CTX-4 / T-LOOP-021: a mixed batch commits in model order through the real pipeline", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const { entered, gate } = gates(["c1", "c2"])
      yield* registry.register(tool("read", (_args, ctx) =>
        Effect.gen(function*() {
          const own = gate.get(ctx.callId)
          if (own !== undefined) {
            yield* Deferred.succeed(entered.get(ctx.callId)!, undefined)
            yield* Deferred.await(own)
          }
          ctx.deferContext({ id: `ctx-${ctx.callId}`, content: [{ type: "text", text: ctx.callId }] })
          return `read ${ctx.callId}`
        }), { isConcurrencySafe: () => true }))
      yield* registry.register(tool("write", () => Effect.succeed("written")))
      yield* registry.register(defineTool({
        name: "typed",
        description: "typed tool",
        parameters: { path: { type: "string", required: true } },
        output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value }] },
        execute: ({ path }) => Effect.succeed(path)
      }))
      const observed: Array<string> = []
      yield* registry.onResult((exec) => Effect.sync(() => void observed.push(exec.callId)))
      const calls = [
        call("c1", "read"),
        call("c2", "read"),
        call("c3", "write"),
        call("c4", "ghost"),
        call("c5", "typed", "not json"),
        call("c6", "read", "")
      ]
      const fiber = yield* Effect.fork(Scheduler.runBatch(calls, { agent: undefined }))
      yield* Deferred.await(entered.get("c1")!)
      yield* Deferred.await(entered.get("c2")!)
      assert.deepStrictEqual(durable(yield* recordsOf), ["call c1", "call c2"])
      yield* Deferred.succeed(gate.get("c2")!, undefined)
      yield* Deferred.succeed(gate.get("c1")!, undefined)
      const batch = yield* Fiber.join(fiber)
      const records = yield* recordsOf
      assert.deepStrictEqual(durable(records), [
        "call c1",
        "call c2",
        "result c1",
        "result c2",
        "call c3",
        "result c3",
        "call c4",
        "result c4",
        "call c5",
        "result c5",
        "call c6",
        "result c6"
      ])
      assert.deepStrictEqual(observed, ["c1", "c2", "c3", "c4", "c5", "c6"])
      assert.deepStrictEqual(batch.results.map((r) => textOf(r.result)), [
        "read c1",
        "read c2",
        "written",
        "Error: unknown tool \"ghost\"",
        "Error: invalid arguments: \"arguments\" must be an object",
        "read c6"
      ])
      assert.deepStrictEqual(batch.results.map((r) => codeOf(r.result)), [
        undefined,
        undefined,
        undefined,
        "UNKNOWN_TOOL",
        "INVALID_ARGS",
        undefined
      ])
      assert.strictEqual((records[8] as { arguments: string }).arguments, "not json")
      assert.deepStrictEqual(records[9], {
        _tag: "tool/result",
        batchId: "c1",
        index: 4,
        callId: "c5",
        content: [{ type: "text", text: "Error: invalid arguments: \"arguments\" must be an object" }],
        isError: true,
        error: { name: "ToolArgsError", code: "INVALID_ARGS" }
      })
      assert.deepStrictEqual(batch.contexts.map((c) => c.id), ["ctx-c1", "ctx-c2", "ctx-c6"])
    }).pipe(Effect.provide(services())))

  it.scoped("SCHED-9 / D-14: aborting drains started bodies (ABORTED) and skips the rest (synthetic, unobserved)", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const { entered } = gates(["c1", "c2"])
      const quiesced: Array<string> = []
      yield* registry.register(tool("hang", (_args, ctx) =>
        Effect.zipRight(
          Deferred.succeed(entered.get(ctx.callId)!, undefined),
          Effect.onInterrupt(Effect.never, () => Effect.sync(() => void quiesced.push(ctx.callId)))
        ), { isConcurrencySafe: () => true }))
      yield* registry.register(tool("write", () => Effect.succeed("written")))
      const observed: Array<string> = []
      yield* registry.onResult((exec) => Effect.sync(() => void observed.push(exec.callId)))
      const controller = new AbortController()
      const calls = [call("c1", "hang"), call("c2", "hang"), call("c3", "write"), call("c4", "hang")]
      const fiber = yield* Effect.fork(Scheduler.runBatch(calls, { maxParallel: 2, signal: controller.signal }))
      yield* Deferred.await(entered.get("c1")!)
      yield* Deferred.await(entered.get("c2")!)
      controller.abort()
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(quiesced.sort(), ["c1", "c2"])
      assert.deepStrictEqual(batch.results.map((r) => codeOf(r.result)), [
        "ABORTED",
        "ABORTED",
        "ABORTED_BEFORE_DISPATCH",
        "ABORTED_BEFORE_DISPATCH"
      ])
      assert.deepStrictEqual(observed, ["c1", "c2"])
      assert.deepStrictEqual(durable(yield* recordsOf), [
        "call c1",
        "call c2",
        "result c1",
        "result c2",
        "call c3",
        "result c3",
        "call c4",
        "result c4"
      ])
      assert.isTrue(batch.aborted)
      assert.strictEqual(getEventListeners(controller.signal, "abort").length, 0)
    }).pipe(Effect.provide(services())))

  it.scoped("D-14: interrupting runBatch drains through the real pipeline, then the interruption completes", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const { entered } = gates(["c1"])
      yield* registry.register(tool("hang", (_args, ctx) =>
        Effect.zipRight(Deferred.succeed(entered.get(ctx.callId)!, undefined), Effect.never), {
          isConcurrencySafe: () => true
        }))
      const fiber = yield* Effect.fork(Scheduler.runBatch([call("c1", "hang"), call("c2", "hang")], { maxParallel: 1 }))
      yield* Deferred.await(entered.get("c1")!)
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      const results = (yield* recordsOf).filter((r) => r._tag === "tool/result")
      assert.deepStrictEqual(results.map((r) => [r.callId, r.error?.code]), [
        ["c1", "ABORTED"],
        ["c2", "ABORTED_BEFORE_DISPATCH"]
      ])
    }).pipe(Effect.provide(services())))

  it.scoped("T-SCHED-004 / SCHED-6: an observer's change makes a not-yet-started call a barrier (real runtime)", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const { entered, gate } = gates(["c1", "c2", "c3"])
      let xParallel = true
      const body = tool("p", (_args, ctx) =>
        Effect.zipRight(Deferred.succeed(entered.get(ctx.callId)!, undefined), Deferred.await(gate.get(ctx.callId)!)))
      yield* registry.register({ ...body, isConcurrencySafe: () => true })
      yield* registry.register({ ...body, name: "x", isConcurrencySafe: () => xParallel })
      yield* registry.onResult((exec) => Effect.sync(() => {
        if (exec.callId === "c1") xParallel = false
      }))
      const { fiber, waitFor } = yield* forkProbedIn([call("c1", "p"), call("c2", "p"), call("c3", "x")], {
        maxParallel: 2
      })
      yield* waitFor([0, 1])
      yield* Deferred.succeed(gate.get("c1")!, undefined)
      yield* waitFor([1])
      assert.deepStrictEqual(durable(yield* recordsOf), ["call c1", "call c2", "result c1"])
      assert.isFalse(yield* Deferred.isDone(entered.get("c3")!))
      yield* Deferred.succeed(gate.get("c2")!, undefined)
      yield* Deferred.await(entered.get("c3")!)
      assert.deepStrictEqual(durable(yield* recordsOf), ["call c1", "call c2", "result c1", "result c2", "call c3"])
      yield* Deferred.succeed(gate.get("c3")!, undefined)
      yield* Fiber.join(fiber)
    }).pipe(Effect.provide(services())))

  it.scoped("T-SCHED-021: under Code Mode a native call collapses; its durable result carries UNKNOWN_TOOL", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      let ran = false
      yield* registry.register(tool("read", () => Effect.sync(() => (ran = true))))
      const batch = yield* Scheduler.runBatch([call("c1", "read")])
      assert.isFalse(ran)
      assert.strictEqual(codeOf(batch.results[0].result), "UNKNOWN_TOOL")
      const records = yield* recordsOf
      assert.deepStrictEqual((records[1] as { error?: unknown }).error, {
        name: "ToolNotFoundError",
        code: "UNKNOWN_TOOL"
      })
    }).pipe(Effect.provide(services(InMemoryToolRegistry.layerWith({ mode: "code" })))))
})

describe("Scheduler fault paths (issue 8 item 7)", () => {
  /** The calls in flight the next time the driver blocks, or "ended" if the batch ends first. */
  const nextWait = (
    waits: Queue.Queue<ReadonlyArray<number>>,
    fiber: Fiber.Fiber<unknown, unknown>
  ): Effect.Effect<ReadonlyArray<number> | "ended"> =>
    Effect.raceFirst(Queue.take(waits), Effect.as(Fiber.await(fiber), "ended" as const))

  const defectOf = (exit: Exit.Exit<unknown, unknown>): unknown => {
    if (Exit.isSuccess(exit)) return undefined
    const defect = Cause.dieOption(exit.cause)
    return Option.isSome(defect) ? defect.value : undefined
  }

  const illegal = (exit: Exit.Exit<unknown, unknown>): string | undefined => {
    const defect = defectOf(exit)
    return defect instanceof Cause.IllegalArgumentException ? defect.message : undefined
  }

  it.effect(
    "issue 8 item 7a / SCHED-10: a dispatch defect settling during the next prepare starts no dispatch; drain, rethrow",
    () =>
      Effect.gen(function*() {
        const world = Fake.make({
          tools: { slow: {}, crash: { body: "die" }, late: { prepareGated: true }, read: ungated() }
        })
        const calls = [call("c0", "slow"), call("c1", "crash"), call("c2", "late"), call("c3", "read")]
        const { fiber, waits } = yield* forkProbed(world, calls)
        yield* Deferred.await(world.entered("c0"))
        yield* Deferred.await(world.entered("c1"))
        yield* Deferred.await(world.preparing("c2"))
        yield* world.release("c1")
        yield* Deferred.await(world.exited("c1"))
        yield* Deferred.succeed(world.prepareGate("c2"), undefined)
        assert.deepStrictEqual(yield* nextWait(waits, fiber), [0])
        assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c0", "c1"])
        assert.isFalse(yield* Deferred.isDone(world.entered("c2")))
        yield* world.release("c0")
        const exit = yield* Fiber.await(fiber)
        assert.strictEqual((defectOf(exit) as Error).message, "dispatch crashed for c1")
        assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), ["c1", "c0"])
        assert.deepStrictEqual(durable(world.records), ["call c0", "call c1", "call c2"])
        assert.deepStrictEqual(world.inputs.map((i) => i.callId), ["c0", "c1", "c2"])
        assert.deepStrictEqual(world.observed, [])
      })
  )

  it.effect(
    "issue 8 item 7a / SCHED-10: a dispatch defect settling while the next call is classified: that call never starts",
    () =>
      Effect.gen(function*() {
        const world = Fake.make({ tools: { slow: {}, crash: { body: "die" }, late: { classifyGated: true } } })
        const calls = [call("c0", "slow"), call("c1", "crash"), call("c2", "late")]
        const { fiber, waits } = yield* forkProbed(world, calls)
        yield* Deferred.await(world.entered("c1"))
        yield* Deferred.await(world.classifying("late"))
        yield* world.release("c1")
        yield* Deferred.await(world.exited("c1"))
        yield* Deferred.succeed(world.classifyGate("late"), undefined)
        assert.deepStrictEqual(yield* nextWait(waits, fiber), [0])
        assert.deepStrictEqual(durable(world.records), ["call c0", "call c1"])
        assert.deepStrictEqual(world.inputs.map((i) => i.callId), ["c0", "c1"])
        yield* world.release("c0")
        const exit = yield* Fiber.await(fiber)
        assert.strictEqual((defectOf(exit) as Error).message, "dispatch crashed for c1")
        assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c0", "c1"])
      })
  )

  it.effect(
    "issue 8 item 7a / SCHED-10 / OQ-33: a dispatch defect settling during the next tool/call append: never prepared",
    () =>
      Effect.gen(function*() {
        const world = Fake.make({
          tools: { slow: {}, crash: { body: "die" }, read: {} },
          gateAppend: (record) => record._tag === "tool/call" && record.callId === "c2"
        })
        const calls = [call("c0", "slow"), call("c1", "crash"), call("c2", "read")]
        const { fiber, waits } = yield* forkProbed(world, calls)
        yield* Deferred.await(world.entered("c1"))
        yield* Deferred.await(world.appending("c2"))
        yield* world.release("c1")
        yield* Deferred.await(world.exited("c1"))
        yield* Deferred.succeed(world.appendGate("c2"), undefined)
        assert.deepStrictEqual(yield* nextWait(waits, fiber), [0])
        assert.deepStrictEqual(durable(world.records), ["call c0", "call c1", "call c2"])
        assert.deepStrictEqual(world.inputs.map((i) => i.callId), ["c0", "c1"])
        yield* world.release("c0")
        const exit = yield* Fiber.await(fiber)
        assert.strictEqual((defectOf(exit) as Error).message, "dispatch crashed for c1")
        assert.deepStrictEqual(eventsOf(world, "dispatch"), ["c0", "c1"])
      })
  )

  it.effect(
    "issue 8 item 7a / SCHED-10: a staged step that throws synchronously: in-flight bodies drain, not interrupted",
    () =>
      Effect.gen(function*() {
        const world = Fake.make({ tools: { slow: { cooperative: false }, broken: { prepare: "throwSync" } } })
        const { fiber, waits } = yield* forkProbed(world, [call("c0", "slow"), call("c1", "broken")])
        assert.deepStrictEqual(yield* nextWait(waits, fiber), [0])
        assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
        assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), [])
        yield* world.release("c0")
        const exit = yield* Fiber.await(fiber)
        assert.strictEqual((defectOf(exit) as Error).message, "prepare threw for c1")
        assert.deepStrictEqual(eventsOf(world, "dispatch", "exit"), ["c0"])
        assert.isFalse(world.inputs[0].signal?.aborted)
        assert.deepStrictEqual(durable(world.records), ["call c0", "call c1"])
      })
  )

  const captureLogs = () => {
    const logs: Array<{ readonly level: string; readonly message: string; readonly causeEmpty: boolean }> = []
    const logger = Logger.make((options) => {
      Logger.logfmtLogger.log(options) // formats message and cause exactly as the default logger does
      const message = Array.isArray(options.message) ? options.message.join(" ") : String(options.message)
      logs.push({ level: options.logLevel.label, message, causeEmpty: Cause.isEmpty(options.cause) })
    })
    return { logs, layer: Logger.replace(Logger.defaultLogger, logger) }
  }

  const NOT_AN_EFFECT = "onCommit must return an Effect"
  const UNPRINTABLE = detailOf(Hostile.revokedProxy()).message
  const REVOKED_HAS = "Cannot perform 'has' on a proxy that has been revoked"
  const messageGetter = () => ({
    get message(): string {
      throw new Error("hostile message")
    }
  })
  /** [label, what onCommit does, the detail the warning must carry (ERR-1 of the value, or the scheduler's text)] */
  const hostileCommits: ReadonlyArray<readonly [string, () => unknown, string]> = [
    ["fails with a throwing message getter", () => Effect.fail(messageGetter()), detailOf(messageGetter()).message],
    ["fails with a null-prototype object", () => Effect.fail(Hostile.nullProto({ code: 1 })), UNPRINTABLE],
    ["fails with an object holding a bigint", () => Effect.fail(Hostile.withBigint()), "[object Object]"],
    ["fails with a revoked proxy", () => Effect.failCause(Cause.fail(Hostile.revokedProxy())), UNPRINTABLE],
    ["dies with a revoked proxy", () => Effect.failCause(Cause.die(Hostile.revokedProxy())), UNPRINTABLE],
    ["dies with a throwing proxy", () => Effect.failCause(Cause.die(Hostile.throwingProxy())), UNPRINTABLE],
    ["dies with throwing conversions", () => Effect.die(Hostile.throwingConversions()), UNPRINTABLE],
    ["dies with a bigint", () => Effect.die(10n), "10"],
    ["throws building Effect.die of a revoked proxy", () => Effect.die(Hostile.revokedProxy()), REVOKED_HAS],
    ["throws a revoked proxy synchronously", () => {
      throw Hostile.revokedProxy()
    }, detailOf(Hostile.revokedProxy()).message],
    ["throws an Error synchronously", () => {
      throw new Error("ui crashed")
    }, "ui crashed"],
    ["returns a number", () => 5, NOT_AN_EFFECT],
    ["returns undefined", () => undefined, NOT_AN_EFFECT],
    ["returns a throwing proxy", () => Hostile.throwingProxy(), NOT_AN_EFFECT],
    ["returns a revoked proxy", () => Hostile.revokedProxy(), NOT_AN_EFFECT],
    ["returns a null-prototype object", () => Hostile.nullProto(), NOT_AN_EFFECT]
  ]

  it.effect(
    "issue 8 item 7b: onCommit failing/dying with any value, throwing, or returning a non-Effect: logged safely",
    () =>
      Effect.gen(function*() {
        for (const [label, hostile, detail] of hostileCommits) {
          const world = Fake.make({ tools: { read: ungated() } })
          const { layer, logs } = captureLogs()
          const events: Array<Scheduler.CommitEvent> = []
          const onCommit = (event: Scheduler.CommitEvent) => {
            events.push(event)
            return (event.index === 0 ? hostile() : Effect.void) as Effect.Effect<void>
          }
          const exit = yield* Effect.exit(
            run(world, [call("c1", "read"), call("c2", "read")], { maxParallel: 1, onCommit }).pipe(
              Effect.provide(layer)
            )
          )
          assert.isTrue(Exit.isSuccess(exit), label)
          if (Exit.isSuccess(exit)) assert.deepStrictEqual(exit.value.results.map((r) => r.callId), ["c1", "c2"], label)
          assert.deepStrictEqual(durable(world.records), ["call c1", "result c1", "call c2", "result c2"], label)
          assert.deepStrictEqual(events.map((e) => e.callId), ["c1", "c2"], label)
          assert.isTrue(events.every((e) => Object.isFrozen(e)), label)
          assert.deepStrictEqual(logs, [{
            level: "WARN",
            message: `scheduler onCommit failed for tool call "c1": ${detail}`,
            causeEmpty: true
          }], label)
        }
      })
  )

  it.effect("issue 8 item 7b: runBatchStream guards the caller's onCommit the same way", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      const { layer, logs } = captureLogs()
      const onCommit = (() => 5) as unknown as (event: Scheduler.CommitEvent) => Effect.Effect<void>
      const events = yield* Scheduler.runBatchStream([call("c1", "read")], { onCommit }).pipe(
        Stream.runCollect,
        Effect.provide(world.context),
        Effect.provide(layer)
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(events).map((e) => e._tag), ["Committed", "Completed"])
      assert.deepStrictEqual(logs.map((l) => l.message), [
        "scheduler onCommit failed for tool call \"c1\": onCommit must return an Effect"
      ])
    }))

  const IDENTITY = "tool execution input needs string callId and name"
  const ARGUMENTS = "tool call arguments must be a string"

  it.effect(
    "issue 8 item 7c / D-16: each malformed ModelToolCall gets its error result and a record pair, in model order",
    () =>
      Effect.gen(function*() {
        const world = Fake.make({ tools: { read: ungated() } })
        const counted = Hostile.counted({ callId: 5, name: "read", arguments: "{}" })
        const calls: Array<unknown> = [
          call("c1", "read"),
          null,
          undefined,
          5,
          { callId: Hostile.throwingConversions(), name: "read", arguments: "{}" },
          { callId: Symbol("s"), name: "read", arguments: "{}" },
          { callId: 10n, name: "read", arguments: "{}" },
          { callId: "c8", name: {}, arguments: "{}" },
          {
            callId: "c9",
            name: "read",
            get arguments(): string {
              throw new Error("no arguments")
            }
          },
          { callId: "c10", name: "read", arguments: { a: 1 } },
          Hostile.throwingProxy(),
          Hostile.revokedProxy(),
          Hostile.nullProto({ callId: "c13", name: "read", arguments: "{\"a\":1}" }),
          counted.value,
          call("c15", "read")
        ]
        const commits: Array<Scheduler.CommitEvent> = []
        const batch = yield* run(world, calls as ReadonlyArray<Scheduler.ModelToolCall>, {
          maxParallel: 1,
          onCommit: (e) => Effect.sync(() => void commits.push(e))
        })
        const revoked = "Cannot perform 'get' on a proxy that has been revoked"
        const expected: ReadonlyArray<readonly [string, string, string, string]> = [
          ["c1", "read", "{}", "ok c1"],
          ["", "", "", `Error: ${IDENTITY}`],
          ["", "", "", `Error: ${IDENTITY}`],
          ["", "", "", `Error: ${IDENTITY}`],
          ["", "read", "{}", `Error: ${IDENTITY}`],
          ["", "read", "{}", `Error: ${IDENTITY}`],
          ["", "read", "{}", `Error: ${IDENTITY}`],
          ["c8", "", "{}", `Error: ${IDENTITY}`],
          ["c9", "read", "", "Error: no arguments"],
          ["c10", "read", "", `Error: ${ARGUMENTS}`],
          ["", "", "", "Error: hostile get"],
          ["", "", "", `Error: ${revoked}`],
          ["c13", "read", "{\"a\":1}", "ok c13"],
          ["", "read", "{}", `Error: ${IDENTITY}`],
          ["c15", "read", "{}", "ok c15"]
        ]
        assert.deepStrictEqual(batch.results.map((r) => [r.callId, r.index]), expected.map(([id], i) => [id, i]))
        assert.deepStrictEqual(batch.results.map((r) => textOf(r.result)), expected.map(([, , , text]) => text))
        assert.deepStrictEqual(batch.results[8].result, {
          isError: true,
          error: { message: "no arguments" },
          content: [{ type: "text", text: "Error: no arguments" }]
        })
        assert.isTrue(batch.results.every((r) => Object.isFrozen(r.result) && Object.isFrozen(r.result.content)))
        const pairs: Array<unknown> = []
        for (const [index, [callId, name, args]] of expected.entries()) {
          pairs.push({ _tag: "tool/call", batchId: "c1", index, callId, name, arguments: args })
          pairs.push(index)
        }
        assert.deepStrictEqual(
          world.records.map((r) => r._tag === "tool/call" ? r : (r as { index: number }).index),
          pairs
        )
        assert.deepStrictEqual(
          world.records.filter((r) => r._tag === "tool/result").map((r) => (r as { isError: boolean }).isError),
          expected.map(([, , , text]) => text.startsWith("Error"))
        )
        assert.deepStrictEqual(world.inputs.map((i) => i.callId), ["c1", "c13", "c15"])
        assert.deepStrictEqual(world.observed, ["c1", "c13", "c15"])
        assert.deepStrictEqual(
          commits.map((c) => c.synthetic),
          expected.map(([, , , text]) => text.startsWith("Error"))
        )
        assert.deepStrictEqual([...counted.reads.entries()].sort(), [["arguments", 1], ["callId", 1], ["name", 1]])
      })
  )

  it.effect("issue 8 item 7c / SCHED-9: a malformed call skipped by an abort gets the synthetic pair", () =>
    Effect.gen(function*() {
      const world = Fake.make({ tools: { read: ungated() } })
      const controller = new AbortController()
      controller.abort()
      const calls = [null, { callId: "c2", name: 7, arguments: "" }] as unknown as Array<Scheduler.ModelToolCall>
      const batch = yield* run(world, calls, { signal: controller.signal })
      assert.deepStrictEqual(batch.results.map((r) => [r.callId, codeOf(r.result)]), [
        ["", "ABORTED_BEFORE_DISPATCH"],
        ["c2", "ABORTED_BEFORE_DISPATCH"]
      ])
      assert.deepStrictEqual(world.records.filter((r) => r._tag === "tool/call"), [
        { _tag: "tool/call", batchId: "", index: 0, callId: "", name: "", arguments: "" },
        { _tag: "tool/call", batchId: "", index: 1, callId: "c2", name: "", arguments: "" }
      ])
      assert.strictEqual(world.records.length, 4)
    }))

  it.effect(
    "issue 8 item 7c: throwing index reads give one error result per entry; an unreadable array is an IllegalArgument",
    () =>
      Effect.gen(function*() {
        const world = Fake.make({ tools: { read: ungated() } })
        const indexThrows = new Proxy([call("x1", "read"), call("x2", "read")], {
          get: (target, key) => {
            if (key === "length") return target.length
            throw new Error("hostile index")
          }
        })
        const batch = yield* run(world, indexThrows)
        assert.deepStrictEqual(batch.results.map((r) => [r.callId, textOf(r.result)]), [
          ["", "Error: hostile index"],
          ["", "Error: hostile index"]
        ])
        assert.deepStrictEqual(durable(world.records), ["call ", "result ", "call ", "result "])
        const unreadable: ReadonlyArray<readonly [unknown, string]> = [
          [Hostile.throwingProxy([]), "runBatch could not read the tool-call array: hostile get"],
          [
            Hostile.revokedProxy(),
            "runBatch could not read the tool-call array: Cannot perform 'IsArray' on a proxy that has been revoked"
          ],
          [
            new Proxy([], { get: (target, key) => key === "length" ? -1 : Reflect.get(target, key) }),
            "runBatch could not read the tool-call array: invalid length"
          ],
          [null, "runBatch needs an array of tool calls"],
          [undefined, "runBatch needs an array of tool calls"],
          [{ length: 1, 0: call("c1", "read") }, "runBatch needs an array of tool calls"]
        ]
        for (const [calls, message] of unreadable) {
          const fresh = Fake.make({ tools: { read: ungated() } })
          const exit = yield* Effect.exit(run(fresh, calls as ReadonlyArray<Scheduler.ModelToolCall>))
          assert.strictEqual(illegal(exit), message)
          assert.deepStrictEqual(fresh.records, [])
          assert.deepStrictEqual(fresh.events, [])
        }
      })
  )

  it.effect(
    "issue 8 item 7c: options are read once; hostile or invalid ones die with IllegalArgumentException, run nothing",
    () =>
      Effect.gen(function*() {
        const fake = { aborted: false, addEventListener: () => {}, removeEventListener: () => {} }
        const NOT_A_SIGNAL = "runBatch option \"signal\" must be an AbortSignal"
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{
            get signal(): AbortSignal {
              throw new Error("no signal")
            }
          }, "runBatch could not read option \"signal\": no signal"],
          [{
            get maxParallel(): number {
              throw Hostile.revokedProxy()
            }
          }, "runBatch could not read option \"maxParallel\": <unprintable thrown value>"],
          [Hostile.throwingProxy(), "runBatch could not read option \"agent\": hostile get"],
          [{ signal: fake }, NOT_A_SIGNAL],
          [{ signal: Object.create(AbortSignal.prototype) }, NOT_A_SIGNAL],
          [{ signal: Object.create(new AbortController().signal) }, NOT_A_SIGNAL],
          [{ signal: new Proxy(new AbortController().signal, {}) }, NOT_A_SIGNAL],
          [{ onCommit: 5 }, "runBatch option \"onCommit\" must be a function"],
          [{ agent: 5 }, "runBatch option \"agent\" must be a string"],
          [{ batchId: {} }, "runBatch option \"batchId\" must be a string"],
          [{ maxParallel: "2" }, "maxParallelToolCalls must be a positive integer"],
          [5, "runBatch options must be an object"]
        ]
        for (const [options, message] of cases) {
          const world = Fake.make({ tools: { read: ungated() } })
          const calls = [call("c1", "read")]
          const exit = yield* Effect.exit(run(world, calls, options as Scheduler.BatchOptions))
          assert.strictEqual(illegal(exit), message)
          const streamed = yield* Effect.exit(
            Scheduler.runBatchStream(calls, options as Scheduler.BatchOptions).pipe(
              Stream.runCollect,
              Effect.provide(world.context)
            )
          )
          assert.strictEqual(illegal(streamed), message)
          assert.deepStrictEqual(world.records, [])
          assert.deepStrictEqual(world.events, [])
        }
        const controller = new AbortController()
        const commits: Array<string> = []
        const counted = Hostile.counted({
          agent: "main",
          maxParallel: 2,
          signal: controller.signal,
          batchId: "b1",
          onCommit: (e: Scheduler.CommitEvent) => Effect.sync(() => void commits.push(e.callId))
        })
        const world = Fake.make({ tools: { read: ungated() } })
        const options = counted.value as Scheduler.BatchOptions
        const batch = yield* run(world, [call("c1", "read"), call("c2", "read")], options)
        assert.deepStrictEqual(batch.results.map((r) => r.callId), ["c1", "c2"])
        assert.deepStrictEqual(commits, ["c1", "c2"])
        assert.deepStrictEqual([...counted.reads.values()], [1, 1, 1, 1, 1])
        assert.strictEqual(counted.reads.size, 5)
      })
  )
})
