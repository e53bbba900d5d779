import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Ref, TestClock } from "effect"
import * as AiToolkit from "../src/AiToolkit.js"
import type { Content } from "../src/Content.js"
import * as Policy from "../src/Policy.js"
import * as Scheduler from "../src/Scheduler.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as Fx from "./fixtures/aiToolkit.js"
import { ABORTED, errorResult, text, timedOut } from "./fixtures/runtime.js"

const execute = (name: string, args: unknown, extra: { readonly agent?: string; readonly signal?: AbortSignal } = {}) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) => runtime.execute({ callId: "c1", name, arguments: args, ...extra }))

const call = (callId: string, name: string, args: string): Scheduler.ModelToolCall => ({ callId, name, arguments: args })

/** Gates by item id, made up front so that handlers and the test share them. */
const gates = (ids: ReadonlyArray<string>) =>
  Effect.map(Effect.forEach(ids, () => Fx.makeGate), (list) => new Map(ids.map((id, i) => [id, list[i]!])))

describe("AiToolkit through the pipeline", () => {
  it.scoped("PRE-3: a pre-execute denial applies: the handler never runs", () => {
    const recorder: Fx.Recorder = { calls: [] }
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* AiToolkit.register(Fx.Items)
      yield* registry.onPreExecute((exec, next) =>
        exec.name === "delete_item" ? Effect.succeed(Policy.PreDecision.Deny({ reason: "deletes are off" })) : next
      )
      assert.deepStrictEqual(yield* execute("delete_item", { id: "a" }), errorResult("deletes are off"))
      assert.deepStrictEqual(recorder.calls, [])
      assert.isFalse((yield* execute("probe", {})).isError)
      assert.deepStrictEqual(recorder.calls.map((c) => c.tool), ["probe"])
    }).pipe(Effect.provide(Fx.layer({}, recorder)))
  })

  it.scoped("APPR-4: an ask goes to the approval service; allowed-once runs the handler, rejected does not", () => {
    const recorder: Fx.Recorder = { calls: [] }
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* AiToolkit.register(Fx.Items, { agent: "A" })
      yield* registry.onPreExecute(() => Effect.succeed(Policy.PreDecision.Ask({})))
      assert.deepStrictEqual(yield* execute("delete_item", { id: "a" }, { agent: "A" }), {
        isError: false,
        value: null,
        content: text("null")
      })
      assert.deepStrictEqual(
        yield* execute("delete_item", { id: "b" }, { agent: "A" }),
        errorResult("the user rejected tool \"delete_item\"")
      )
      assert.deepStrictEqual(recorder.calls, [{ tool: "delete_item", params: { id: "a" } }])
    }).pipe(Effect.provide(Fx.layer({}, recorder, ["allowed-once", "rejected"])))
  })

  it.scoped("D-14: aborting the caller's signal interrupts the running handler; the call ends ABORTED", () =>
    Effect.gen(function*() {
      const gate = yield* Fx.makeGate
      yield* AiToolkit.register(Fx.Items).pipe(
        Effect.provide(Fx.handlers({ probe: () => Fx.gated(gate, Effect.succeed(1)) }))
      )
      const controller = new AbortController()
      const fiber = yield* Effect.fork(execute("probe", {}, { signal: controller.signal }))
      yield* Deferred.await(gate.entered)
      controller.abort()
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
      assert.isTrue(yield* Deferred.isDone(gate.interrupted))
      assert.isFalse(yield* Deferred.isDone(gate.release))
    }).pipe(Effect.provide(Fx.layer())))

  it.scoped("D-14: interrupting the calling fiber interrupts the handler before the interruption completes", () =>
    Effect.gen(function*() {
      const gate = yield* Fx.makeGate
      yield* AiToolkit.register(Fx.Items).pipe(
        Effect.provide(Fx.handlers({ probe: () => Fx.gated(gate, Effect.succeed(1)) }))
      )
      const fiber = yield* Effect.fork(execute("probe", {}))
      yield* Deferred.await(gate.entered)
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.isTrue(yield* Deferred.isDone(gate.interrupted))
    }).pipe(Effect.provide(Fx.layer())))

  it.effect("TIMEOUT-4: a per-tool timeoutMs interrupts the handler at the deadline: TOOL_TIMEOUT", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const gate = yield* Fx.makeGate
        yield* AiToolkit.register(Fx.Items, { tools: { probe: { timeoutMs: 150 } } }).pipe(
          Effect.provide(Fx.handlers({ probe: () => Fx.gated(gate, Effect.succeed(1)) }))
        )
        const fiber = yield* Effect.fork(execute("probe", {}))
        yield* Deferred.await(gate.entered)
        yield* TestClock.adjust("149 millis")
        assert.isNull(fiber.unsafePoll())
        yield* TestClock.adjust("1 millis")
        assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(150))
        assert.isTrue(yield* Deferred.isDone(gate.interrupted))
      })
    ).pipe(Effect.provide(Fx.layer())))

  it.scoped("SCHED-2: Tool.Readonly tools are parallel, others exclusive; overrides win", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* AiToolkit.register(Fx.Items)
      yield* AiToolkit.register(Fx.Items, {
        prefix: "o_",
        tools: {
          get_item: { concurrencySafe: false },
          delete_item: { concurrencySafe: (params) => params.id.startsWith("tmp") },
          probe: { concurrencySafe: true }
        }
      })
      const mode = (name: string, args: unknown) => registry.executionMode({ name, arguments: args })
      assert.deepStrictEqual(
        yield* Effect.all([
          mode("get_item", { id: "a" }),
          mode("get_item", { id: 1 }),
          mode("delete_item", { id: "a" }),
          mode("probe", {}),
          mode("o_get_item", { id: "a" }),
          mode("o_delete_item", { id: "tmp-1" }),
          mode("o_delete_item", { id: "a" }),
          mode("o_delete_item", { id: 7 }),
          mode("o_probe", {})
        ]),
        [
          "parallel",
          "exclusive",
          "exclusive",
          "exclusive",
          "exclusive",
          "parallel",
          "exclusive",
          "exclusive",
          "parallel"
        ]
      )
    }).pipe(Effect.provide(Fx.layer())))

  it.scoped("SCHED-4: two readonly calls of one batch overlap; results commit in model order", () =>
    Effect.gen(function*() {
      const gate = yield* gates(["a", "b"])
      yield* AiToolkit.register(Fx.Items).pipe(
        Effect.provide(Fx.handlers({ get: ({ id }) => Fx.gated(gate.get(id)!, Effect.succeed(Fx.item(id))) }))
      )
      const fiber = yield* Effect.fork(
        Scheduler.runBatch([call("c1", "get_item", "{\"id\":\"a\"}"), call("c2", "get_item", "{\"id\":\"b\"}")])
      )
      yield* Deferred.await(gate.get("a")!.entered)
      yield* Deferred.await(gate.get("b")!.entered)
      yield* Deferred.succeed(gate.get("b")!.release, undefined)
      yield* Deferred.succeed(gate.get("a")!.release, undefined)
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        batch.results.map((r) => [r.callId, r.index, r.result.isError ? "error" : (r.result.value as { id: string }).id]),
        [["c1", 0, "a"], ["c2", 1, "b"]]
      )
    }).pipe(Effect.provide(Fx.layer())))

  it.scoped("SCHED-3: two exclusive calls of one batch run one after the other", () =>
    Effect.gen(function*() {
      const gate = yield* gates(["a", "b"])
      const inFlight = yield* Ref.make(0)
      const peak = yield* Ref.make(0)
      const committed: Array<string> = []
      const seenAtStart: Array<ReadonlyArray<string>> = []
      yield* AiToolkit.register(Fx.Items).pipe(
        Effect.provide(Fx.handlers({
          delete: ({ id }) =>
            Effect.gen(function*() {
              seenAtStart.push([...committed])
              const now = yield* Ref.updateAndGet(inFlight, (n) => n + 1)
              yield* Ref.update(peak, (p) => Math.max(p, now))
              yield* Fx.gated(gate.get(id)!, Effect.void)
              yield* Ref.update(inFlight, (n) => n - 1)
            })
        }))
      )
      const fiber = yield* Effect.fork(
        Scheduler.runBatch(
          [call("c1", "delete_item", "{\"id\":\"a\"}"), call("c2", "delete_item", "{\"id\":\"b\"}")],
          { onCommit: (event) => Effect.sync(() => committed.push(event.callId)) }
        )
      )
      yield* Deferred.await(gate.get("a")!.entered)
      yield* Effect.repeatN(Effect.yieldNow(), 50)
      assert.isFalse(yield* Deferred.isDone(gate.get("b")!.entered))
      yield* Deferred.succeed(gate.get("a")!.release, undefined)
      yield* Deferred.await(gate.get("b")!.entered)
      yield* Deferred.succeed(gate.get("b")!.release, undefined)
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(batch.results.map((r) => [r.callId, r.result.isError]), [["c1", false], ["c2", false]])
      assert.strictEqual(yield* Ref.get(peak), 1)
      assert.deepStrictEqual(seenAtStart, [[], ["c1"]])
    }).pipe(Effect.provide(Fx.layer())))

  it.scoped("SCHED-9: interrupting a batch interrupts its running handlers; every call still gets one result", () =>
    Effect.gen(function*() {
      const gate = yield* gates(["a", "b"])
      yield* AiToolkit.register(Fx.Items).pipe(
        Effect.provide(Fx.handlers({ get: ({ id }) => Fx.gated(gate.get(id)!, Effect.succeed(Fx.item(id))) }))
      )
      const controller = new AbortController()
      const fiber = yield* Effect.fork(
        Scheduler.runBatch(
          [
            call("c1", "get_item", "{\"id\":\"a\"}"),
            call("c2", "get_item", "{\"id\":\"b\"}"),
            call("c3", "delete_item", "{\"id\":\"c\"}")
          ],
          { signal: controller.signal }
        )
      )
      yield* Deferred.await(gate.get("a")!.entered)
      yield* Deferred.await(gate.get("b")!.entered)
      controller.abort()
      const batch = yield* Fiber.join(fiber)
      assert.isTrue(batch.aborted)
      assert.deepStrictEqual(batch.results.map((r) => [r.callId, Fx.codeOf(r.result)]), [
        ["c1", "ABORTED"],
        ["c2", "ABORTED"],
        ["c3", "ABORTED_BEFORE_DISPATCH"]
      ])
      assert.isTrue(yield* Deferred.isDone(gate.get("a")!.interrupted))
      assert.isTrue(yield* Deferred.isDone(gate.get("b")!.interrupted))
    }).pipe(Effect.provide(Fx.layer())))

  it.scoped("OUT-4: renderers: a per-tool renderer gets decoded values; the toolkit renderer gets the JSON value", () => {
    const seen: Array<unknown> = []
    return Effect.gen(function*() {
      yield* AiToolkit.register(Fx.Items, {
        render: (value, name): Content => [{ type: "text", text: `${name} -> ${JSON.stringify(value)}` }],
        tools: {
          get_item: {
            render: (params, success) => {
              seen.push(params, success)
              return text(`${success.id} updated ${success.updatedAt.toISOString()} size ${success.size + 1}`)
            }
          }
        }
      })
      assert.deepStrictEqual(yield* execute("get_item", { id: "a" }), {
        isError: false,
        value: { id: "a", updatedAt: "2024-01-02T00:00:00.000Z", size: "42" },
        content: text("a updated 2024-01-02T00:00:00.000Z size 43")
      })
      assert.deepStrictEqual(seen, [{ id: "a" }, Fx.item("a")])
      assert.deepStrictEqual(yield* execute("probe", {}), { isError: false, value: 1, content: text("probe -> 1") })
    }).pipe(Effect.provide(Fx.layer()))
  })

  it.scoped("AiToolkit.definitions builds the same tools without registering them", () =>
    Effect.gen(function*() {
      const defs = yield* AiToolkit.definitions(Fx.Items, { prefix: "x_" })
      assert.deepStrictEqual(defs.map((d) => [d.name, d.isConcurrencySafe?.({ id: "a" }) ?? "none"]), [
        ["x_get_item", true],
        ["x_delete_item", "none"],
        ["x_probe", "none"]
      ])
      assert.deepStrictEqual(yield* (yield* ToolRegistry).schemas(), [])
      const registry = yield* ToolRegistry
      yield* registry.register(defs[2]!)
      assert.deepStrictEqual(yield* execute("x_probe", {}), { isError: false, value: 1, content: text("1") })
    }).pipe(Effect.provide(Fx.layer())))
})
