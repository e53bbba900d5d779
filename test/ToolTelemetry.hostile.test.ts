/**
 * ToolTelemetry's own seam under hostile values: results handed to `end` are read once per field
 * and never stringified; malformed options fail loudly.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Metric } from "effect"
import * as ToolTelemetry from "../src/ToolTelemetry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as Hostile from "./fixtures/hostile.js"
import { makeOtel, only } from "./fixtures/otel.js"

const callsOf = (tool: string, outcome: string) =>
  Effect.map(Metric.value(ToolTelemetry.forToolAndOutcome(ToolTelemetry.calls, tool, outcome)), (s) => s.count)
const denialsOf = (tool: string, outcome: string) =>
  Effect.map(Metric.value(ToolTelemetry.forToolAndOutcome(ToolTelemetry.denials, tool, outcome)), (s) => s.count)

/** Ends one probed call of `tool` with `result` (as the runtime would, but with any value). */
const endWith = (tool: string, result: unknown, facts?: ToolTelemetry.CallEnd) =>
  Effect.gen(function*() {
    const service = yield* ToolTelemetry.make()
    const probe = yield* service.call({ toolName: tool, callId: "h1" })
    yield* probe.end(result as ToolResult, facts)
  })

const coded = (code: unknown) => ({ isError: true, error: { message: "m", info: { name: "N", code } } })

describe("ToolTelemetry hostile results", () => {
  Hostile.kinds.forEach((kind, i) => {
    it.effect(`a ${kind} result is an uncoded error outcome`, () =>
      Effect.gen(function*() {
        const tool = `hostile_kind_${i}`
        yield* endWith(tool, Hostile.make(kind, { isError: true }))
        assert.strictEqual(yield* callsOf(tool, "error"), 1)
        assert.strictEqual(yield* callsOf(tool, "ok"), 0)
      }))
  })

  it.effect("null-prototype result, error and info still yield their code", () =>
    Effect.gen(function*() {
      const result = Hostile.nullProto({
        isError: true,
        error: Hostile.nullProto({ message: "m", info: Hostile.nullProto({ name: "N", code: "NP_CODE" }) })
      })
      yield* endWith("hostile_null_proto", result)
      assert.strictEqual(yield* callsOf("hostile_null_proto", "NP_CODE"), 1)
    }))

  it.effect("a code that is a bigint, a throwing proxy or an object is no code; an own __proto__ key is ignored", () =>
    Effect.gen(function*() {
      yield* endWith("hostile_code", coded(10n))
      yield* endWith("hostile_code", coded(Hostile.throwingProxy()))
      yield* endWith("hostile_code", coded({ toString: () => "SNEAKY" }))
      yield* endWith("hostile_code", { isError: true, error: Hostile.ownProtoKey({ info: { code: "POLLUTED" } }) })
      assert.strictEqual(yield* callsOf("hostile_code", "error"), 4)
      assert.strictEqual(yield* callsOf("hostile_code", "SNEAKY"), 0)
      assert.strictEqual(yield* callsOf("hostile_code", "POLLUTED"), 0)
    }))

  it.effect("each field is read exactly once, so a changing getter cannot split the outcome", () =>
    Effect.gen(function*() {
      const info = Hostile.counted({ name: "N", code: "ONCE" })
      const error = Hostile.counted({ message: "m", info: info.value })
      const result = Hostile.counted({ isError: true, error: error.value })
      yield* endWith("hostile_once", result.value)
      assert.deepStrictEqual([...result.reads], [["isError", 1], ["error", 1]])
      assert.deepStrictEqual([...error.reads], [["info", 1]])
      assert.deepStrictEqual([...info.reads], [["code", 1]])
      assert.strictEqual(yield* callsOf("hostile_once", "ONCE"), 1)
      yield* endWith("hostile_changing", Hostile.changing({ error: { info: { code: "X" } } }, "isError", false, true))
      assert.strictEqual(yield* callsOf("hostile_changing", "ok"), 1)
    }))

  it.scoped("the call span of a hostile result ends with the fixed outcome text, never the value's own text", () => {
    const otel = makeOtel()
    return Effect.gen(function*() {
      yield* endWith("hostile_span", Hostile.throwingConversions())
      const call = only(yield* otel.spans, "execute_tool hostile_span")
      assert.strictEqual(call.attributes["tool_runtime.outcome"], "error")
      assert.strictEqual(call.status.message, "error")
    }).pipe(Effect.provide(otel.layer))
  })

  it.effect("end is idempotent: a second end of the same probe records nothing", () =>
    Effect.gen(function*() {
      const service = yield* ToolTelemetry.make()
      const probe = yield* service.call({ toolName: "hostile_twice", callId: "h1" })
      yield* probe.end({ isError: false, value: 1, content: [] })
      yield* probe.end({ isError: false, value: 1, content: [] })
      assert.strictEqual(yield* callsOf("hostile_twice", "ok"), 1)
    }))

  it.effect("a runtime-supplied denied fact wins over the inference", () =>
    Effect.gen(function*() {
      const error = { isError: true, error: { message: "no" }, content: [] }
      yield* endWith("fact_denied", error, { denied: true })
      yield* endWith("fact_not_denied", error)
      assert.strictEqual(yield* denialsOf("fact_denied", "denied"), 1)
      assert.strictEqual(yield* callsOf("fact_denied", "denied"), 1)
      assert.strictEqual(yield* denialsOf("fact_not_denied", "error"), 0)
      assert.strictEqual(yield* callsOf("fact_not_denied", "error"), 1)
    }))
})

describe("ToolTelemetry options", () => {
  const dies = (options: unknown) =>
    Effect.map(Effect.exit(ToolTelemetry.make(options as ToolTelemetry.Options)), (exit) => {
      assert.isTrue(Exit.isFailure(exit))
      const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(defect, Cause.IllegalArgumentException)
      return (defect as Error).message
    })

  it.effect("malformed options are defects naming the option", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* dies(null), "ToolTelemetry options must be an object")
      assert.strictEqual(yield* dies({ spans: "yes" }), "ToolTelemetry option \"spans\" must be a boolean or \"always\"")
      assert.strictEqual(yield* dies({ stageSpans: 1 }), "ToolTelemetry option \"stageSpans\" must be a boolean")
      assert.strictEqual(yield* dies({ metrics: 10n }), "ToolTelemetry option \"metrics\" must be a boolean")
      assert.strictEqual(yield* dies(Hostile.throwingProxy()), "ToolTelemetry could not read option \"spans\"")
      assert.strictEqual(yield* dies(Hostile.revokedProxy()), "ToolTelemetry could not read option \"spans\"")
    }))

  it.effect("a null-prototype options object is read like any other", () =>
    Effect.gen(function*() {
      const service = yield* ToolTelemetry.make(Hostile.nullProto({ metrics: false }) as ToolTelemetry.Options)
      const probe = yield* service.call({ toolName: "np_options", callId: "h1" })
      yield* probe.end({ isError: false, value: 1, content: [] })
      assert.strictEqual(yield* callsOf("np_options", "ok"), 0)
    }))
})
