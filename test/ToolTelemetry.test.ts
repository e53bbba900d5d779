/**
 * ToolTelemetry: spans through a real OpenTelemetry SDK (in-memory exporter) and the
 * `effect/Metric` instruments, driven through the public runtime and scheduler.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Metric, Option, TestClock } from "effect"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as Presets from "../layers/Presets.js"
import * as TimeoutPolicy from "../layers/TimeoutPolicy.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import type { ScriptedAnswer } from "../layers/ApprovalLayers.js"
import * as IdGenerator from "../src/IdGenerator.js"
import { PreDecision } from "../src/Policy.js"
import * as Scheduler from "../src/Scheduler.js"
import type { ToolDefinition } from "../src/Tool.js"
import { HarnessError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as ToolTelemetry from "../src/ToolTelemetry.js"
import { childNames, durationMs, makeOtel, only, parentId, spanId } from "./fixtures/otel.js"
import { echo } from "./fixtures/tools.js"

const runtimeLayer = (
  telemetry: Layer.Layer<ToolTelemetry.ToolTelemetry> | undefined,
  answers: ReadonlyArray<ScriptedAnswer> = []
) => {
  const base = Layer.mergeAll(
    InMemoryToolRegistry.layer,
    IdGenerator.layerCounter(),
    ApprovalLayers.layerScripted(answers),
    ToolCallLogMemory.layer
  )
  return Layer.mergeAll(ToolRuntime.layer, TimeoutPolicy.layer).pipe(
    Layer.provideMerge(telemetry === undefined ? base : Layer.merge(base, telemetry))
  )
}

const register = (definition: ToolDefinition<never>) =>
  Effect.flatMap(ToolRegistry, (registry) => registry.register(definition))

const execute = (name: string, callId = "c1", args: unknown = { text: "hi" }, agent?: string) =>
  Effect.flatMap(
    ToolRuntime.ToolRuntime,
    (runtime) => runtime.execute(agent === undefined ? { callId, name, arguments: args } : { callId, name, arguments: args, agent })
  )

const count = (metric: Metric.Metric.Counter<number>) => Effect.map(Metric.value(metric), (s) => s.count)

const callsOf = (tool: string, outcome: string) => count(ToolTelemetry.forToolAndOutcome(ToolTelemetry.calls, tool, outcome))
const denialsOf = (tool: string, outcome: string) =>
  count(ToolTelemetry.forToolAndOutcome(ToolTelemetry.denials, tool, outcome))
const active = Effect.map(Metric.value(ToolTelemetry.activeCalls), (s) => s.value)

/** A tool whose body waits for `gate` (opening `started` first). */
const gated = (name: string, started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>, overrides = {}) =>
  echo({
    name,
    execute: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.as(Deferred.await(gate), "done")),
    ...overrides
  })

const OK_STATUS = 1
const ERROR_STATUS = 2
const INTERNAL_KIND = 0

describe("ToolTelemetry spans", () => {
  it.scoped("a call's span: GenAI name, kind and attributes, caller's span as parent, stage spans that ran", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      yield* register(echo({ name: "span_echo" }))
      const result = yield* execute("span_echo", "call-1", { text: "hi" }, "main").pipe(Effect.withSpan("agent.step"))
      assert.strictEqual(result.isError, false)
      const spans = yield* otel.spans
      const call = only(spans, "execute_tool span_echo")
      assert.strictEqual(call.kind, INTERNAL_KIND)
      assert.deepStrictEqual(call.attributes, {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "span_echo",
        "gen_ai.tool.call.id": "call-1",
        "gen_ai.agent.id": "main",
        "tool_runtime.outcome": "ok"
      })
      assert.strictEqual(call.status.code, OK_STATUS)
      assert.strictEqual(parentId(call), spanId(only(spans, "agent.step")))
      assert.deepStrictEqual(childNames(spans, call), ["tool.body", "tool.finish", "tool.guards"])
    }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer()), otel.layer)))
  })

  it.scoped("hooks add the pre-execute and post-execute spans; a call without an agent has no agent attribute", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(echo({ name: "hooked" }))
      yield* registry.onPreExecute((_exec, next) => next)
      yield* registry.onPostExecute((_exec, _result, next) => next)
      yield* execute("hooked")
      const spans = yield* otel.spans
      const call = only(spans, "execute_tool hooked")
      assert.isUndefined(call.attributes["gen_ai.agent.id"])
      assert.deepStrictEqual(childNames(spans, call), [
        "tool.body",
        "tool.finish",
        "tool.guards",
        "tool.post_execute",
        "tool.pre_execute"
      ])
    }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer()), otel.layer)))
  })

  it.scoped("a pre-execute denial: no guards or body span, outcome denied, status error", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(echo({ name: "denied_tool" }))
      yield* registry.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "not now" })))
      const result = yield* execute("denied_tool")
      assert.strictEqual(result.isError, true)
      const spans = yield* otel.spans
      const call = only(spans, "execute_tool denied_tool")
      assert.deepStrictEqual(childNames(spans, call), ["tool.finish", "tool.pre_execute"])
      assert.strictEqual(call.attributes["tool_runtime.outcome"], "denied")
      assert.strictEqual(call.attributes["tool_runtime.denied"], true)
      assert.strictEqual(call.attributes["error.type"], "_OTHER")
      assert.deepStrictEqual(call.status, { code: ERROR_STATUS, message: "denied" })
    }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer()), otel.layer)))
  })

  it.scoped("an ask waits in an approval span as long as the answer takes (TestClock)", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      const asked = yield* Deferred.make<void>()
      const answer = yield* Deferred.make<"allowed-once">()
      return yield* Effect.gen(function*() {
        const registry = yield* ToolRegistry
        yield* registry.register(echo({ name: "asks" }))
        yield* registry.onPreExecute(() => Effect.succeed(PreDecision.Ask({ reason: "sure?" })))
        const fiber = yield* Effect.fork(execute("asks", "c1", { text: "hi" }, "main"))
        yield* Deferred.await(asked)
        yield* TestClock.adjust("3 seconds")
        yield* Deferred.succeed(answer, "allowed-once")
        const result = yield* Fiber.join(fiber)
        assert.strictEqual(result.isError, false)
        const spans = yield* otel.spans
        const call = only(spans, "execute_tool asks")
        assert.deepStrictEqual(childNames(spans, call), [
          "tool.approval",
          "tool.body",
          "tool.finish",
          "tool.guards",
          "tool.pre_execute"
        ])
        assert.strictEqual(durationMs(only(spans, "tool.approval")), 3000)
        assert.strictEqual(durationMs(call), 3000)
        const wait = yield* Metric.value(ToolTelemetry.forTool(ToolTelemetry.approvalWait, "asks"))
        assert.strictEqual(wait.count, 1)
        assert.strictEqual(wait.sum, 3)
      }).pipe(
        Effect.provide(Layer.merge(
          runtimeLayer(ToolTelemetry.layer(), [() => Effect.zipRight(Deferred.succeed(asked, undefined), Deferred.await(answer))]),
          otel.layer
        ))
      )
    })
  })

  it.scoped("the body span is the parent of the spans the tool's own body opens", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      yield* register(echo({
        name: "traced_body",
        execute: () => Effect.succeed("inner").pipe(Effect.withSpan("my.inner.work"))
      }))
      yield* execute("traced_body")
      const spans = yield* otel.spans
      const body = only(spans, "tool.body")
      assert.strictEqual(parentId(only(spans, "my.inner.work")), spanId(body))
      assert.strictEqual(parentId(body), spanId(only(spans, "execute_tool traced_body")))
    }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer()), otel.layer)))
  })

  it.scoped("an error result's code is its outcome and the status message; an unknown tool keeps its name on the span", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      yield* execute("no_such_tool")
      const spans = yield* otel.spans
      const call = only(spans, "execute_tool no_such_tool")
      assert.strictEqual(call.attributes["tool_runtime.outcome"], "UNKNOWN_TOOL")
      assert.strictEqual(call.attributes["error.type"], "UNKNOWN_TOOL")
      assert.isUndefined(call.attributes["tool_runtime.denied"])
      assert.deepStrictEqual(call.status, { code: ERROR_STATUS, message: "UNKNOWN_TOOL" })
    }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer()), otel.layer)))
  })

  it.scoped("a batch span (id, size) is the parent of its call spans; a call behind an exclusive barrier has a queue span for its wait", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      yield* register(gated("exclusive_one", started, gate))
      yield* register(echo({ name: "parallel_two", isConcurrencySafe: () => true }))
      const fiber = yield* Effect.fork(Scheduler.runBatch([
        { callId: "b1", name: "exclusive_one", arguments: "{}" },
        { callId: "b2", name: "parallel_two", arguments: "{\"text\":\"x\"}" }
      ], { agent: "main" }))
      yield* Deferred.await(started)
      yield* TestClock.adjust("2 seconds")
      yield* Deferred.succeed(gate, undefined)
      const batch = yield* Fiber.join(fiber)
      assert.deepStrictEqual(batch.results.map((r) => r.result.isError), [false, false])
      const spans = yield* otel.spans
      const batchSpan = only(spans, "tool_batch")
      assert.strictEqual(batchSpan.attributes["tool_runtime.batch.size"], 2)
      assert.strictEqual(typeof batchSpan.attributes["tool_runtime.batch.id"], "string")
      assert.strictEqual(batchSpan.attributes["gen_ai.agent.id"], "main")
      const first = only(spans, "execute_tool exclusive_one")
      const second = only(spans, "execute_tool parallel_two")
      assert.strictEqual(parentId(first), spanId(batchSpan))
      assert.strictEqual(parentId(second), spanId(batchSpan))
      const queues = spans.filter((s) => s.name === "tool.queue")
      const queueOf = (call: typeof first) => queues.find((q) => parentId(q) === spanId(call))!
      assert.strictEqual(queues.length, 2)
      assert.strictEqual(durationMs(queueOf(first)), 0)
      assert.strictEqual(durationMs(queueOf(second)), 2000)
      assert.deepStrictEqual(second.startTime, batchSpan.startTime)
      assert.deepStrictEqual(childNames(spans, second), ["tool.body", "tool.finish", "tool.guards", "tool.queue"])
    }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer()), otel.layer)))
  })

  it.scoped("the documented assembly: a preset with the telemetry provided below and merged out traces execute and runBatch", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      yield* register(echo({ name: "preset_echo", isConcurrencySafe: () => true }))
      yield* execute("preset_echo")
      yield* Scheduler.runBatch([{ callId: "b1", name: "preset_echo", arguments: "{}" }])
      const spans = yield* otel.spans
      assert.strictEqual(spans.filter((s) => s.name === "execute_tool preset_echo").length, 2)
      assert.strictEqual(
        parentId(spans.filter((s) => s.name === "execute_tool preset_echo")[1]!),
        spanId(only(spans, "tool_batch"))
      )
    }).pipe(
      Effect.provide(Layer.merge(Presets.layerDefault.pipe(Layer.provideMerge(ToolTelemetry.layer())), otel.layer))
    )
  })

  it.scoped("without a ToolTelemetry no call span is exported, even with the OpenTelemetry tracer installed", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      yield* register(echo({ name: "untraced" }))
      const result = yield* execute("untraced")
      assert.strictEqual(result.isError, false)
      yield* Scheduler.runBatch([{ callId: "b1", name: "untraced", arguments: "{}" }])
      const names = (yield* otel.spans).map((s) => s.name)
      assert.deepStrictEqual(names, ["Scheduler.runBatch"])
    }).pipe(Effect.provide(Layer.merge(runtimeLayer(undefined), otel.layer)))
  })

  it.scoped("spans: false records no span (metrics still count); stageSpans: false keeps only the call span", () => {
    const off = makeOtel()
    const callOnly = makeOtel()
    return Effect.gen(function*() {
      yield* Effect.gen(function*() {
        yield* register(echo({ name: "spans_off" }))
        yield* execute("spans_off")
      }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer({ spans: false })), off.layer)))
      assert.deepStrictEqual(yield* off.spans, [])
      assert.strictEqual(yield* callsOf("spans_off", "ok"), 1)
      yield* Effect.gen(function*() {
        yield* register(echo({ name: "stages_off" }))
        yield* execute("stages_off")
      }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer({ stageSpans: false })), callOnly.layer)))
      assert.deepStrictEqual((yield* callOnly.spans).map((s) => s.name), ["execute_tool stages_off"])
    })
  })

  it.scoped("with Effect's built-in tracer only, spans are skipped unless spans: \"always\"", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const body = () => Effect.map(Effect.option(Effect.currentSpan), (span) => {
        seen.push(Option.match(span, { onNone: () => "none", onSome: (s) => s.name }))
        return "ok"
      })
      yield* Effect.gen(function*() {
        yield* register(echo({ name: "native_default", execute: body }))
        yield* execute("native_default")
      }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer())))
      yield* Effect.gen(function*() {
        yield* register(echo({ name: "native_always", execute: body }))
        yield* execute("native_always")
      }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer({ spans: "always" }))))
      assert.deepStrictEqual(seen, ["none", "tool.body"])
    }))

  it.scoped("hostile text: a tool name and call id with odd characters are plain attribute text", () => {
    const otel = makeOtel()
    const name = "we\u0000ird \"tool\" <__proto__> \u{1F600}\n"
    const callId = "__proto__"
    return Effect.gen(function*() {
      yield* register(echo({ name }))
      const result = yield* execute(name, callId)
      assert.strictEqual(result.isError, false)
      const call = only(yield* otel.spans, `execute_tool ${name}`)
      assert.strictEqual(call.attributes["gen_ai.tool.name"], name)
      assert.strictEqual(call.attributes["gen_ai.tool.call.id"], callId)
      assert.strictEqual(yield* callsOf(name, "ok"), 1)
    }).pipe(Effect.provide(Layer.merge(runtimeLayer(ToolTelemetry.layer()), otel.layer)))
  })
})

describe("ToolTelemetry metrics", () => {
  it.scoped("calls count by tool and outcome, the duration histogram per tool, the in-flight gauge back to 0", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      yield* register(gated("metered", started, gate))
      yield* register(echo({ name: "metered_fast" }))
      assert.strictEqual(yield* active, 0)
      const fiber = yield* Effect.fork(execute("metered"))
      yield* Deferred.await(started)
      assert.strictEqual(yield* active, 1)
      yield* TestClock.adjust("1500 millis")
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(fiber)
      yield* execute("metered_fast", "c2")
      yield* execute("metered_fast", "c3")
      assert.strictEqual(yield* active, 0)
      assert.strictEqual(yield* callsOf("metered", "ok"), 1)
      assert.strictEqual(yield* callsOf("metered_fast", "ok"), 2)
      assert.strictEqual(yield* callsOf("metered_fast", "UNKNOWN_TOOL"), 0)
      const slow = yield* Metric.value(ToolTelemetry.forTool(ToolTelemetry.callDuration, "metered"))
      assert.strictEqual(slow.count, 1)
      assert.strictEqual(slow.sum, 1.5)
      const fast = yield* Metric.value(ToolTelemetry.forTool(ToolTelemetry.callDuration, "metered_fast"))
      assert.strictEqual(fast.count, 2)
    }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer()))))

  it.scoped("unknown tool names share the _OTHER series", () =>
    Effect.gen(function*() {
      const before = yield* callsOf(ToolTelemetry.OTHER_TOOL, "UNKNOWN_TOOL")
      yield* execute("invented_1")
      yield* execute("invented_2")
      assert.strictEqual((yield* callsOf(ToolTelemetry.OTHER_TOOL, "UNKNOWN_TOOL")) - before, 2)
      assert.strictEqual(yield* callsOf("invented_1", "UNKNOWN_TOOL"), 0)
    }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer()))))

  it.scoped("denials: a pre-execute deny (with and without a code), a guard, a rejected approval, an ask with no agent", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      for (const name of ["deny_plain", "deny_coded", "deny_guard", "deny_rejected", "deny_no_agent"]) {
        yield* registry.register(echo({ name }))
      }
      yield* registry.onPreExecute((exec, next) => {
        switch (exec.name) {
          case "deny_plain":
            return Effect.succeed(PreDecision.Deny({ reason: "no" }))
          case "deny_coded":
            return Effect.succeed(PreDecision.Deny({ reason: "no", info: { name: "PolicyError", code: "POLICY_DENIED" } }))
          case "deny_rejected":
          case "deny_no_agent":
            return Effect.succeed(PreDecision.Ask({}))
          default:
            return next
        }
      })
      yield* registry.guard((exec) => exec.name === "deny_guard" ? "guarded" : undefined)
      yield* execute("deny_plain")
      yield* execute("deny_coded")
      yield* execute("deny_guard")
      yield* execute("deny_rejected", "c1", { text: "x" }, "main")
      yield* execute("deny_no_agent")
      assert.strictEqual(yield* denialsOf("deny_plain", "denied"), 1)
      assert.strictEqual(yield* denialsOf("deny_coded", "POLICY_DENIED"), 1)
      assert.strictEqual(yield* callsOf("deny_coded", "POLICY_DENIED"), 1)
      assert.strictEqual(yield* denialsOf("deny_guard", "denied"), 1)
      assert.strictEqual(yield* denialsOf("deny_rejected", "denied"), 1)
      assert.strictEqual(yield* denialsOf("deny_no_agent", "denied"), 1)
      assert.strictEqual(yield* callsOf("deny_plain", "denied"), 1)
    }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer(), ["rejected"]))))

  it.scoped("not denials: a cancel decision, a throwing pre-execute hook, a body error", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(echo({ name: "not_cancel" }))
      yield* registry.register(echo({ name: "not_throw" }))
      yield* registry.register(echo({ name: "not_body", execute: () => Effect.fail(new HarnessError({ code: "BODY_FAILED", message: "boom" })) }))
      yield* registry.onPreExecute((exec, next) => {
        if (exec.name === "not_cancel") return Effect.succeed(PreDecision.Cancel())
        if (exec.name === "not_throw") return Effect.fail(new HarnessError({ code: "DENIED", message: "thrown" }))
        return next
      })
      yield* execute("not_cancel")
      yield* execute("not_throw")
      yield* execute("not_body")
      assert.strictEqual(yield* callsOf("not_cancel", "ABORTED_BEFORE_DISPATCH"), 1)
      assert.strictEqual(yield* callsOf("not_throw", "DENIED"), 1)
      assert.strictEqual(yield* callsOf("not_body", "BODY_FAILED"), 1)
      for (const [tool, code] of [["not_cancel", "ABORTED_BEFORE_DISPATCH"], ["not_throw", "DENIED"], ["not_body", "BODY_FAILED"]]) {
        assert.strictEqual(yield* denialsOf(tool!, code!), 0)
      }
    }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer()))))

  it.scoped("timeouts: a body past its timeoutMs (TimeoutPolicy + TestClock) counts one timeout", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const never = yield* Deferred.make<void>()
      yield* register(gated("slow_tool", started, never, { timeoutMs: 100 }))
      const fiber = yield* Effect.fork(execute("slow_tool"))
      yield* Deferred.await(started)
      yield* TestClock.adjust("100 millis")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result.isError && result.error.info, { name: "ToolTimeoutError", code: "TOOL_TIMEOUT" })
      assert.strictEqual(yield* count(ToolTelemetry.forTool(ToolTelemetry.timeouts, "slow_tool")), 1)
      assert.strictEqual(yield* callsOf("slow_tool", "TOOL_TIMEOUT"), 1)
      assert.strictEqual(yield* denialsOf("slow_tool", "TOOL_TIMEOUT"), 0)
    }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer()))))

  it.scoped("metrics: false leaves every instrument untouched", () =>
    Effect.gen(function*() {
      yield* register(echo({ name: "unmetered" }))
      yield* execute("unmetered")
      assert.strictEqual(yield* callsOf("unmetered", "ok"), 0)
      const duration = yield* Metric.value(ToolTelemetry.forTool(ToolTelemetry.callDuration, "unmetered"))
      assert.strictEqual(duration.count, 0)
    }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer({ metrics: false })))))

  it.scoped("user metric labels (Effect.tagMetrics) are added to every series", () =>
    Effect.gen(function*() {
      yield* register(echo({ name: "labelled" }))
      yield* execute("labelled").pipe(Effect.tagMetrics("tenant", "t1"))
      assert.strictEqual(yield* callsOf("labelled", "ok").pipe(Effect.tagMetrics("tenant", "t1")), 1)
      assert.strictEqual(yield* callsOf("labelled", "ok"), 0)
    }).pipe(Effect.provide(runtimeLayer(ToolTelemetry.layer()))))
})
