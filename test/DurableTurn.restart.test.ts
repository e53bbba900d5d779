/**
 * Durable batches across processes and calls (D-22, D-24). A process shutting down is not a stop
 * (docs/durable.md "Stop"): a caller interrupted once its durable layer is closing ends at once,
 * journals no stop and asks the closed engine nothing; the batch resumes in the next process
 * exactly as after a crash. A batch that waits for a person is seen waiting by `start`, called
 * again in the same process or in the next one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import * as DurableTurn from "../src/DurableTurn.js"
import { appOver, call, libsqlEngine, memoryEngine, Probe, tempDatabase, toolsOf } from "./fixtures/durable.js"

const key = { sessionId: "s1", batchId: "b1", agent: "main" }

/**
 * The caller's interruption, bounded: a caller that never returns fails the test instead of
 * hanging it (the callers are daemons for the same reason: a hung child would hold the test).
 */
const interruptBounded = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.zipRight(
    Fiber.interruptFork(fiber),
    Fiber.await(fiber).pipe(
      Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the interrupted caller never returned") })
    )
  )

describe("DurableTurn: a process shutting down is not a stop (D-24)", () => {
  it.live("D-24: a caller awaiting a batch that waits for a person, interrupted after its process closed, returns; the batch resumes", () => {
    const probe = new Probe()
    const db = tempDatabase()
    const calls = [call("c1", "read", { path: "a" }), call("c2", "write", { path: "b" })]
    return Effect.gen(function*() {
      const first = yield* Scope.make()
      const context = yield* Layer.buildWithScope(appOver(libsqlEngine(db.url), toolsOf(probe)), first)
      const committed = yield* Deferred.make<void>()
      const fiber = yield* Effect.forkDaemon(
        DurableTurn.runBatch(calls, { ...key, onCommit: () => Deferred.succeed(committed, undefined) }).pipe(
          Effect.provide(context)
        )
      )
      yield* Deferred.await(committed)
      yield* DurableTurn.pending.pipe(
        Effect.provide(context),
        Effect.repeat({ until: (pending) => pending.length === 1 })
      )
      yield* Scope.close(first, Exit.void)
      const exit = yield* interruptBounded(fiber)
      assert.isTrue(Exit.isInterrupted(exit))

      const second = yield* Scope.make()
      const resumed = yield* Layer.buildWithScope(appOver(libsqlEngine(db.url), toolsOf(probe)), second)
      const [request] = yield* DurableTurn.pending.pipe(Effect.provide(resumed))
      yield* DurableTurn.answer(request.id, "allowed-once").pipe(Effect.provide(resumed))
      const batch = yield* DurableTurn.runBatch(calls, key).pipe(Effect.provide(resumed))
      assert.isFalse(batch.aborted, "no stop was journaled")
      assert.deepStrictEqual(batch.results.map((r) => r.result.content[0]), [
        { type: "text", text: "read a" },
        { type: "text", text: "wrote b" }
      ])
      assert.deepStrictEqual(probe.runs.map((r) => `${r.tool}:${r.arg}`), ["read:a", "write:b"])
      yield* Scope.close(second, Exit.void)
    }).pipe(Effect.ensuring(Effect.sync(db.cleanup)))
  })

  it.live("D-24: a caller interrupted while its durable layer closes (its journal still open) journals no stop; the cut body resumes", () => {
    const probe = new Probe()
    const db = tempDatabase()
    const calls = [call("c1", "safe", { id: "x" }), call("c2", "read", { path: "c" })]
    return Effect.gen(function*() {
      const storage = yield* Scope.make()
      const engine = yield* Layer.buildWithScope(libsqlEngine(db.url), storage)
      const first = yield* Scope.make()
      const context = yield* Layer.buildWithScope(appOver(Layer.succeedContext(engine), toolsOf(probe)), first)
      const fiber = yield* Effect.forkDaemon(DurableTurn.runBatch(calls, key).pipe(Effect.provide(context)))
      yield* Deferred.await(probe.startedOf("x"))
      yield* Scope.close(first, Exit.void)
      const exit = yield* interruptBounded(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      yield* Scope.close(storage, Exit.void)

      yield* Deferred.succeed(probe.gate("x"), undefined)
      const second = yield* Scope.make()
      const resumed = yield* Layer.buildWithScope(appOver(libsqlEngine(db.url), toolsOf(probe)), second)
      const batch = yield* DurableTurn.resume(key).pipe(Effect.provide(resumed))
      assert.isFalse(batch.aborted, "the shutdown was not journaled as a stop")
      assert.deepStrictEqual(batch.results.map((r) => r.result.content[0]), [
        { type: "text", text: "safe x" },
        { type: "text", text: "read c" }
      ])
      assert.strictEqual(probe.count("safe", "x"), 2, "the cut `safe` body ran again")
      yield* Scope.close(second, Exit.void)
    }).pipe(Effect.ensuring(Effect.sync(db.cleanup)))
  })
})

describe("DurableTurn.start on a batch that waits for a person (D-22)", () => {
  /** `start`, bounded: a call that never returns fails the test instead of hanging it. */
  const startBounded = (calls: ReadonlyArray<ReturnType<typeof call>>) =>
    DurableTurn.start(calls, key).pipe(
      Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("start never returned") })
    )

  it.live("D-22: start called again while the batch waits returns its pending request at once", () => {
    const probe = new Probe()
    const calls = [call("c1", "write", { path: "b" })]
    return Effect.gen(function*() {
      const first = yield* DurableTurn.start(calls, key)
      assert.strictEqual(first._tag, "Suspended")
      const again = yield* startBounded(calls)
      assert.deepStrictEqual(again, first)
      assert.strictEqual(probe.count("write"), 0)
    }).pipe(Effect.provide(appOver(memoryEngine, toolsOf(probe))))
  })

  it.live("D-22: after a restart, start returns the pending request the batch waits for; answered, it completes", () => {
    const probe = new Probe()
    const db = tempDatabase()
    const calls = [call("c1", "read", { path: "a" }), call("c2", "write", { path: "b" })]
    return Effect.gen(function*() {
      const first = yield* Scope.make()
      const context = yield* Layer.buildWithScope(appOver(libsqlEngine(db.url), toolsOf(probe)), first)
      const status = yield* DurableTurn.start(calls, key).pipe(Effect.provide(context))
      if (status._tag !== "Suspended") return assert.fail("expected a suspension")
      yield* Scope.close(first, Exit.void)
      const second = yield* Scope.make()
      const resumed = yield* Layer.buildWithScope(appOver(libsqlEngine(db.url), toolsOf(probe)), second)
      const again = yield* startBounded(calls).pipe(Effect.provide(resumed))
      if (again._tag !== "Suspended") return assert.fail("expected a suspension")
      assert.deepStrictEqual(again.pending, status.pending)
      yield* DurableTurn.answer(again.pending[0].id, "allowed-once").pipe(Effect.provide(resumed))
      const done = yield* DurableTurn.start(calls, key).pipe(Effect.provide(resumed))
      assert.strictEqual(done._tag, "Complete")
      assert.deepStrictEqual(probe.runs.map((r) => `${r.tool}:${r.arg}`), ["read:a", "write:b"])
      yield* Scope.close(second, Exit.void)
    }).pipe(Effect.ensuring(Effect.sync(db.cleanup)))
  })
})
