/**
 * Durable turns (D-22, D-24) in one process, on the in-memory workflow engine: a batch keyed by
 * session and batch, run again returns its recorded results; results, order and overlap as in
 * memory; the idempotency key; Stop (signal and interruption) journaled; approvals that suspend
 * and resume; expiry under a test clock; bad input. Crashes are in DurableTurn.crash.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Layer, Schema, Scope, TestClock, TestServices } from "effect"
import * as EffectScheduler from "effect/Scheduler"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ApprovalService from "../src/ApprovalService.js"
import * as DurableTurn from "../src/DurableTurn.js"
import * as Scheduler from "../src/Scheduler.js"
import * as Tool from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import { appOver, call, libsqlEngine, memoryEngine, Probe, registering, tempDatabase, toolsOf } from "./fixtures/durable.js"
import { crashApp, readSide } from "./fixtures/durableCrashApp.js"

const key = { sessionId: "s1", batchId: "b1" }
const live = <A, E>(
  probe: Probe,
  effect: Effect.Effect<A, E, DurableTurn.DurableTurns | DurableTurn.DurableApprovals | DurableTurn.DurableJournal | ToolRegistry>
) =>
  effect.pipe(Effect.provide(appOver(memoryEngine, toolsOf(probe))))

/**
 * Under the test clock: waits until the batch lists a pending request (moving the clock 1 ms and
 * letting the event loop turn between reads, at most 200 times), however loaded the machine is.
 */
const pendingSoon = Effect.gen(function*() {
  for (let i = 0; i < 200; i++) {
    const waiting = yield* DurableTurn.pending
    if (waiting.length > 0) return waiting
    yield* TestClock.adjust(Duration.millis(1))
    yield* TestServices.provideLive(Effect.sleep(Duration.millis(2)))
  }
  return yield* DurableTurn.pending
})

const codeOf = (result: { readonly isError: boolean; readonly error?: { readonly info?: { readonly code: string } } }) =>
  result.isError ? result.error?.info?.code : undefined

describe("DurableTurn: a batch keyed by session and batch (D-22)", () => {
  it.live("D-22: a completed key returns its recorded results and runs nothing", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const calls = [call("c1", "read", { path: "a" }), call("c2", "read", { path: "b" }), call("c3", "nope", {})]
        const first = yield* DurableTurn.runBatch(calls, key)
        assert.strictEqual(probe.runs.length, 2)
        const again = yield* DurableTurn.runBatch(calls, key)
        assert.deepStrictEqual(again, first)
        assert.strictEqual(probe.runs.length, 2, "no body ran again")
        assert.deepStrictEqual(first.results.map((r) => r.callId), ["c1", "c2", "c3"])
        assert.strictEqual(codeOf(first.results[2].result), "UNKNOWN_TOOL")
        assert.isTrue(Object.isFrozen(again.results[0].result))
      })
    )
  })

  it.live("D-22: the durable batch gives the results the in-memory scheduler gives, in model order", () => {
    const probe = new Probe()
    const calls = [
      call("c1", "read", { path: "a" }),
      { callId: "c2", name: "read", arguments: "not json" },
      call("c3", "read", { path: "c" }),
      { callId: 7, name: "read", arguments: "{}" } as unknown as Scheduler.ModelToolCall
    ]
    return Effect.gen(function*() {
      const durable = yield* live(probe, DurableTurn.runBatch(calls, key))
      const inMemory = yield* Scheduler.runBatch(calls).pipe(
        Effect.provide(
          ToolRuntime.layer.pipe(
            Layer.provideMerge(Layer.mergeAll(
              registering(toolsOf(new Probe())),
              ToolCallLogMemory.layer
            ).pipe(Layer.provideMerge(InMemoryToolRegistry.layer)))
          )
        )
      )
      assert.deepStrictEqual(durable.results, inMemory.results)
      assert.deepStrictEqual(durable.contexts, inMemory.contexts)
      assert.strictEqual(durable.aborted, false)
    })
  })

  it.live("D-22: parallel-safe bodies overlap (each waits for the other to have started)", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const fiber = yield* Effect.fork(
          DurableTurn.runBatch([call("c1", "gated", { id: "x" }), call("c2", "gated", { id: "y" })], key)
        )
        yield* Deferred.await(probe.startedOf("x"))
        yield* Deferred.await(probe.startedOf("y"))
        yield* Deferred.succeed(probe.gate("x"), undefined)
        yield* Deferred.succeed(probe.gate("y"), undefined)
        const batch = yield* Fiber.join(fiber)
        assert.deepStrictEqual(batch.results.map((r) => r.result.content), [[{ type: "text", text: "gated x" }], [
          { type: "text", text: "gated y" }
        ]])
      })
    )
  })

  it.live("D-22: ctx.idempotencyKey is given on the first run, stable per session, batch and call", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        yield* DurableTurn.runBatch([call("c1", "read", { path: "a" }), call("c2", "read", { path: "b" })], key)
        yield* DurableTurn.runBatch([call("c1", "read", { path: "a" })], { sessionId: "s1", batchId: "b2" })
        const [a, b, c] = probe.runs.map((run) => run.key)
        assert.match(a!, /^[0-9a-f]{64}$/)
        assert.notStrictEqual(a, b, "another call of the batch")
        assert.notStrictEqual(a, c, "the same call id in another batch")
      })
    )
  })

  it.live("outside a durable batch ctx.idempotencyKey is absent", () => {
    const probe = new Probe()
    return Scheduler.runBatch([call("c1", "read", { path: "a" })]).pipe(
      Effect.provide(
        ToolRuntime.layer.pipe(
          Layer.provideMerge(
            Layer.mergeAll(
              registering(toolsOf(probe)),
              ToolCallLogMemory.layer
            ).pipe(Layer.provideMerge(InMemoryToolRegistry.layer))
          )
        )
      ),
      Effect.map(() => assert.deepStrictEqual(probe.runs.map((run) => run.key), [undefined]))
    )
  })

  it.live("the session's records: one tool/call and one tool/result per call, in order", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const calls = [call("c1", "read", { path: "a" }), call("c2", "read", { path: "b" })]
        yield* DurableTurn.runBatch(calls, key)
        yield* DurableTurn.runBatch(calls, key)
        const { corrupt, records } = yield* DurableTurn.records("s1")
        assert.deepStrictEqual(corrupt, [])
        assert.deepStrictEqual(records.map((r) => r._tag === "tool/call" || r._tag === "tool/result" ? `${r._tag}:${r.callId}` : r._tag), [
          "tool/call:c1",
          "tool/call:c2",
          "tool/result:c1",
          "tool/result:c2"
        ])
      })
    )
  })
})

describe("DurableTurn: Stop is the in-memory contract, journaled (D-24)", () => {
  it.live("D-24: the caller's signal stops the batch; a resume returns the stopped results and runs nothing", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const controller = new AbortController()
        const calls = [call("c1", "gated", { id: "x" }), call("c2", "never", { id: "y" }), call("c3", "read", { path: "z" })]
        const fiber = yield* Effect.fork(DurableTurn.runBatch(calls, { ...key, signal: controller.signal }))
        yield* Deferred.await(probe.startedOf("x"))
        controller.abort(new Error("the person pressed stop"))
        yield* Deferred.await(probe.abortedOf("x"))
        yield* Deferred.succeed(probe.gate("x"), undefined)
        const stopped = yield* Fiber.join(fiber)
        assert.isTrue(stopped.aborted)
        assert.deepStrictEqual(stopped.results.map((r) => codeOf(r.result) ?? "ok"), [
          "ABORTED",
          "ABORTED_BEFORE_DISPATCH",
          "ABORTED_BEFORE_DISPATCH"
        ], "the running body is interrupted and awaited, the rest never start (as in memory)")
        const again = yield* DurableTurn.resume(key)
        assert.deepStrictEqual(again.results, stopped.results)
        assert.deepStrictEqual(probe.runs.map((r) => r.arg), ["x"], "no body started after the stop")
      })
    )
  })

  it.live("D-24: interrupting the caller stops the batch the same way (running bodies are aborted and awaited)", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const calls = [call("c1", "never", { id: "x" }), call("c2", "read", { path: "z" })]
        const fiber = yield* Effect.fork(DurableTurn.runBatch(calls, key))
        yield* Deferred.await(probe.startedOf("x"))
        const interrupted = yield* Effect.fork(Fiber.interrupt(fiber))
        yield* Deferred.await(probe.abortedOf("x"))
        yield* Deferred.succeed(probe.gate("x"), undefined)
        const exit = yield* Fiber.join(interrupted)
        assert.isTrue(Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause), "the caller ends interrupted")
        const again = yield* DurableTurn.resume(key)
        assert.strictEqual(again.aborted, true)
        assert.deepStrictEqual(again.results.map((r) => codeOf(r.result) ?? "ok"), ["ABORTED", "ABORTED_BEFORE_DISPATCH"])
        assert.strictEqual(probe.count("read"), 0)
      })
    )
  })
})

describe("DurableTurn: approvals that wait (D-22)", () => {
  it.live("D-22: an ask suspends the batch; the pending request is listed; the answer resumes it; the body runs once", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const calls = [call("c1", "read", { path: "a" }), call("c2", "write", { path: "b" }), call("c3", "read", { path: "c" })]
        const status = yield* DurableTurn.start(calls, { ...key, agent: "main" })
        assert.strictEqual(status._tag, "Suspended")
        if (status._tag !== "Suspended") return
        assert.strictEqual(status.pending.length, 1)
        const [request] = status.pending
        assert.strictEqual(request.toolName, "write")
        assert.strictEqual(request.callId, "c2")
        assert.strictEqual(request.reason, "writes need a yes")
        assert.match(request.argumentsDigest, /^[0-9a-f]{64}$/)
        assert.deepStrictEqual(probe.runs.map((r) => `${r.tool}:${r.arg}`), ["read:a"], "nothing after the asking call started")
        assert.deepStrictEqual((yield* DurableTurn.pending).map((p) => p.id), [request.id])
        yield* DurableTurn.answer(request.id, "allowed-once")
        const batch = yield* DurableTurn.runBatch(calls, { ...key, agent: "main" })
        assert.deepStrictEqual(batch.results.map((r) => r.result.content[0]), [
          { type: "text", text: "read a" },
          { type: "text", text: "wrote b" },
          { type: "text", text: "read c" }
        ])
        assert.deepStrictEqual(probe.runs.map((r) => `${r.tool}:${r.arg}`), ["read:a", "write:b", "read:c"])
        assert.deepStrictEqual(yield* DurableTurn.pending, [])
        const audit = (yield* DurableTurn.records("s1")).records.filter((r) => r._tag.startsWith("approval/"))
        assert.deepStrictEqual(audit.map((r) => r._tag), ["approval/asked", "approval/decided"], "written once")
        const error = yield* Effect.flip(DurableTurn.answer(request.id, "rejected"))
        assert.strictEqual(error.reason, "Answered")
      })
    )
  })

  it.live("D-22: a rejection from the person denies the call; its body never runs", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const calls = [call("c1", "write", { path: "b" })]
        const status = yield* DurableTurn.start(calls, { ...key, agent: "main" })
        if (status._tag !== "Suspended") return assert.fail("expected a suspension")
        yield* DurableTurn.answer(status.pending[0].id, "rejected")
        const batch = yield* DurableTurn.runBatch(calls, { ...key, agent: "main" })
        assert.isTrue(batch.results[0].result.isError)
        assert.strictEqual(probe.count("write"), 0)
      })
    )
  })

  it.live("bad answers are refused: unknown id (NotFound), outside the vocabulary (InvalidAnswer)", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        assert.strictEqual((yield* Effect.flip(DurableTurn.answer("nope", "allowed-once"))).reason, "NotFound")
        assert.strictEqual((yield* Effect.flip(DurableTurn.answer("nope", "maybe" as never))).reason, "InvalidAnswer")
        const hostile = new Proxy({}, { get: () => { throw new Error("trap") } })
        assert.strictEqual((yield* Effect.flip(DurableTurn.answer("nope", hostile as never))).reason, "InvalidAnswer")
      })
    )
  })

  it.effect("D-22: an answer stored but cut before it reached the engine (its process died) is sent again by the runner's redelivery; the batch resumes", () => {
    const probe = new Probe()
    return Effect.gen(function*() {
      const journal = yield* DurableTurn.DurableJournal
      const calls = [call("c1", "write", { path: "b" })]
      const fiber = yield* Effect.fork(DurableTurn.runBatch(calls, { ...key, agent: "main" }))
      const [request] = yield* pendingSoon
      assert.isDefined(request)
      assert.isTrue(yield* journal.answer(request!.id, JSON.stringify({ outcome: "allowed-once" })), "stored, never sent")
      assert.deepStrictEqual(yield* DurableTurn.pending, [], "no longer pending")
      assert.strictEqual(probe.count("write"), 0, "the engine has not seen it")
      yield* TestClock.adjust(Duration.seconds(3))
      assert.strictEqual(probe.count("write"), 0, "not before the redelivery (every five polls)")
      yield* TestClock.adjust(Duration.seconds(2))
      yield* TestClock.adjust(Duration.seconds(30))
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(batch.results[0].result.content[0], { type: "text", text: "wrote b" })
      assert.strictEqual(probe.count("write"), 1)
    }).pipe(Effect.provide(appOver(memoryEngine, toolsOf(probe), { pollInterval: "1 second" })))
  })

  it.live("D-22: an answer given again (its first try was cut) succeeds and is sent again; another answer is refused (Answered)", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const journal = yield* DurableTurn.DurableJournal
        const calls = [call("c1", "write", { path: "b" })]
        const status = yield* DurableTurn.start(calls, { ...key, agent: "main" })
        if (status._tag !== "Suspended") return assert.fail("expected a suspension")
        const id = status.pending[0].id
        assert.isTrue(yield* journal.answer(id, JSON.stringify({ outcome: "rejected" })), "stored, never sent")
        assert.strictEqual((yield* Effect.flip(DurableTurn.answer(id, "allowed-once"))).reason, "Answered", "another answer")
        yield* DurableTurn.answer(id, "rejected")
        const batch = yield* DurableTurn.runBatch(calls, { ...key, agent: "main" })
        assert.isTrue(batch.results[0].result.isError, "the stored answer decided")
        assert.strictEqual(probe.count("write"), 0)
        assert.strictEqual((yield* Effect.flip(DurableTurn.answer(id, "rejected"))).reason, "Answered", "consumed: closed")
      })
    )
  })

  it.effect("D-22: an approval nobody answers expires `unavailable` (DurableClock, test clock)", () => {
    const probe = new Probe()
    return Effect.gen(function*() {
      const calls = [call("c1", "write", { path: "b" })]
      const fiber = yield* Effect.fork(DurableTurn.runBatch(calls, { ...key, agent: "main" }))
      assert.strictEqual((yield* pendingSoon).length, 1)
      yield* TestClock.adjust(Duration.hours(2))
      yield* TestClock.adjust(Duration.seconds(30))
      const batch = yield* Fiber.join(fiber)
      assert.isTrue(batch.results[0].result.isError)
      assert.strictEqual(probe.count("write"), 0)
      const decided = (yield* DurableTurn.records("s1")).records.find((r) => r._tag === "approval/decided")
      assert.deepStrictEqual(decided && decided._tag === "approval/decided" ? [decided.outcome, decided.by] : [], ["unavailable", "expiry"])
    }).pipe(Effect.provide(appOver(memoryEngine, toolsOf(probe), { approvalTimeout: "1 hour", pollInterval: "1 hour" })))
  })
})

describe("DurableTurn: bad input", () => {
  it.live("resuming an unknown key is NotFound; a session id that is not a string is InvalidOption", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const unknown = yield* Effect.flip(DurableTurn.resume({ sessionId: "s9", batchId: "b9" }))
        assert.strictEqual(unknown._tag === "DurableTurnError" ? unknown.reason : undefined, "NotFound")
        const bad = yield* Effect.flip(DurableTurn.runBatch([], { sessionId: 42 as never, batchId: "b" }))
        assert.strictEqual(bad._tag, "DurableTurnError")
        assert.strictEqual(bad._tag === "DurableTurnError" ? bad.reason : undefined, "InvalidOption")
        const trap = new Proxy({}, { get: () => { throw new Error("trap") } })
        const trapped = yield* Effect.flip(DurableTurn.runBatch([], trap as never))
        assert.strictEqual(trapped._tag === "DurableTurnError" ? trapped.reason : undefined, "InvalidOption")
      })
    )
  })

  it.live("the same key run again with other calls is a Mismatch", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        yield* DurableTurn.runBatch([call("c1", "read", { path: "a" })], key)
        const error = yield* Effect.flip(DurableTurn.runBatch([call("c1", "read", { path: "OTHER" })], key))
        assert.strictEqual(error._tag === "DurableTurnError" ? error.reason : undefined, "Mismatch")
      })
    )
  })

  it.live("a journal row that cannot be decoded is reported and its call ends OUTCOME_UNKNOWN; nothing crashes", () => {
    const probe = new Probe()
    return live(
      probe,
      Effect.gen(function*() {
        const journal = yield* DurableTurn.DurableJournal
        const calls = [call("c1", "read", { path: "a" }), call("c2", "read", { path: "b" })]
        yield* journal.write(key, [
          { entry: "batch", payload: JSON.stringify({ calls: calls.map((c) => ({ ...c })), maxParallel: 10 }) },
          { entry: "call:0", payload: "{}" },
          { entry: "settle:0", payload: "{not json" }
        ])
        const batch = yield* DurableTurn.resume(key)
        assert.strictEqual(codeOf(batch.results[0].result), "OUTCOME_UNKNOWN")
        assert.include((batch.results[0].result as { error: { message: string } }).error.message, "not JSON")
        assert.deepStrictEqual(batch.results[1].result.content, [{ type: "text", text: "read b" }])
        assert.strictEqual(probe.count("read", "a"), 0)
      })
    )
  })
})

describe("replay policy on definitions (D-22)", () => {
  it("an invalid replay value is a definition error (DSL, Schema tools, registration)", () => {
    const base = {
      name: "t",
      description: "d",
      parameters: {},
      output: { schema: { type: "string" as const }, render: () => [] },
      execute: () => Effect.succeed("x")
    }
    assert.throws(() => Tool.defineTool({ ...base, replay: "sometimes" as never }), /replay must be "never", "idempotent" or "safe"/)
    assert.strictEqual(Tool.defineTool({ ...base, replay: "idempotent" }).replay, "idempotent")
    assert.throws(() => Tool.fromSchema({ ...base, parameters: Schema.Struct({}), output: { schema: Schema.String, render: () => [] }, replay: 1 as never }), /replay must be/)
  })

  it.effect("registration refuses a hand-built definition whose replay is invalid, and keeps a valid one", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const tool = Tool.defineTool({
        name: "t",
        description: "d",
        parameters: {},
        output: { schema: { type: "string" }, render: () => [] },
        execute: () => Effect.succeed("x")
      })
      const refused = yield* Effect.flip(Effect.scoped(registry.register({ ...tool, replay: "maybe" } as unknown as Tool.ToolDefinition<never>)))
      assert.include(String((refused as { message?: unknown }).message), "replay must be")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* registry.register({ ...tool, replay: "safe" } as unknown as Tool.ToolDefinition<never>)
        const got = yield* registry.get("t")
        assert.strictEqual(got._tag === "Some" ? got.value.replay : undefined, "safe")
      }))
    }).pipe(Effect.provide(InMemoryToolRegistry.layer)))
})

describe("DurableTurn: a durable lane waits for its bodies (D-24)", () => {
  it.live("D-24: while a body runs, the lane waits for it without polling (other fibers schedule no work over 20 event-loop turns)", () => {
    const probe = new Probe()
    let tasks = 0
    let self: unknown = undefined
    const counting = EffectScheduler.make((task, priority, fiber) => {
      if (fiber !== self) tasks++
      EffectScheduler.defaultScheduler.scheduleTask(task, priority, fiber)
    }, EffectScheduler.defaultScheduler.shouldYield)
    const turn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
    return live(
      probe,
      Effect.gen(function*() {
        const fiber = yield* Effect.fork(DurableTurn.runBatch([call("c1", "never", { id: "x" })], key))
        yield* Deferred.await(probe.startedOf("x"))
        self = yield* Effect.withFiberRuntime((fiber) => Effect.succeed(fiber))
        const before = tasks
        for (let i = 0; i < 20; i++) yield* turn
        const during = tasks - before
        self = undefined
        yield* Deferred.succeed(probe.gate("x"), undefined)
        const batch = yield* Fiber.join(fiber)
        assert.deepStrictEqual(batch.results[0].result.content, [{ type: "text", text: "never x" }])
        assert.isBelow(during, 10, `the lane scheduled ${during} tasks while the body waited (a busy loop)`)
      })
    ).pipe(Effect.withScheduler(counting))
  })
})

describe("DurableTurn: run_code in a durable batch (D-22)", () => {
  it.live("D-22: each sub-call body of a program starts only once its intent is stored (exclusive and parallel-safe)", () =>
    Effect.gen(function*() {
      const place = yield* Effect.acquireRelease(Effect.sync(tempDatabase), (db) => Effect.sync(db.cleanup))
      const side = `${place.file}.side`
      const code = `
        const [a, b] = await Promise.all([tools.par_safe({ id: "p1" }), tools.par_safe({ id: "p2" })])
        const c = await tools.never({ id: "e1" })
        const d = await tools.safe({ id: "e2" })
        return [a, b, c, d].join(", ")
      `
      const calls = [{ callId: "c0", name: "run_code", arguments: JSON.stringify({ description: "four steps", code }) }]
      const batch = yield* DurableTurn.runBatch(calls, { ...key, agent: "main" }).pipe(
        Effect.provide(crashApp(memoryEngine, { side, point: undefined }, { code: true }))
      )
      assert.deepStrictEqual(batch.results[0].result.content, [{ type: "text", text: "par_safe p1, par_safe p2, never e1, safe e2" }])
      const starts = readSide(side).filter((e) => e.ev === "start")
      assert.deepStrictEqual(starts.map((e) => e.ev === "start" ? [e.id, e.intentStored] : []), [
        ["p1", true],
        ["p2", true],
        ["e1", true],
        ["e2", true]
      ])
    }).pipe(Effect.scoped))

  it.live("D-22: a runner closing while a sub-call runs journals nothing more of the program: on restart the sub-call is cut (safe: run again)", () =>
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(Effect.sync(tempDatabase), (made) => Effect.sync(made.cleanup))
      const probe = new Probe()
      const app = () => {
        const base = Layer.merge(InMemoryToolRegistry.layerCodeMode({ mode: "both" }), Layer.orDie(CodeRuntimeQuickJs.layer()))
        const registry = registering(toolsOf(probe)).pipe(Layer.provideMerge(base))
        const log = DurableTurn.layerLog.pipe(Layer.provideMerge(Layer.merge(libsqlEngine(db.url), registry)))
        const runtime = ToolRuntime.layer.pipe(Layer.provideMerge(ApprovalService.layer().pipe(Layer.provideMerge(log))))
        return DurableTurn.layer().pipe(Layer.provideMerge(runtime))
      }
      const code = `
        const out = []
        for (const id of ["k1", "k2"]) out.push(await tools.safe({ id }))
        return out.join(" | ")
      `
      const calls = [{ callId: "c0", name: "run_code", arguments: JSON.stringify({ description: "two steps", code }) }]
      yield* Deferred.succeed(probe.gate("k1"), undefined)
      const scope = yield* Scope.make()
      const first = yield* Layer.buildWithScope(app(), scope)
      const fiber = yield* Effect.fork(Effect.provide(DurableTurn.runBatch(calls, { ...key, agent: "main" }), first))
      yield* Deferred.await(probe.startedOf("k2"))
      yield* Scope.close(scope, Exit.void)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.succeed(probe.gate("k2"), undefined)
      const second = yield* Layer.build(app())
      const rows = yield* Effect.provide(Effect.flatMap(DurableTurn.DurableJournal, (journal) => journal.load(key)), second)
      assert.isFalse(rows.some((row) => row.entry === "result:c0:code:2"), "the aborted sub-call's result is not journaled")
      const batch = yield* Effect.provide(DurableTurn.resume(key), second)
      assert.deepStrictEqual(batch.results[0].result.content, [{ type: "text", text: "safe k1 | safe k2" }])
      assert.deepStrictEqual(probe.runs.map((run) => run.arg), ["k1", "k2", "k2"], "k1 committed, k2 cut and run again")
    }).pipe(Effect.scoped))
})
