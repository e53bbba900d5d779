/**
 * `Presets.layer` (issue 11 item 6): one call assembles a runtime that runs `execute` and
 * `Scheduler.runBatch`; each option swaps one service. Also the no-op log.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Fiber, Layer, Option, Scope, TestClock } from "effect"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as Presets from "../layers/Presets.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogNoop from "../layers/ToolCallLogNoop.js"
import * as ApprovalGrants from "../src/ApprovalGrants.js"
import * as ApprovalService from "../src/ApprovalService.js"
import * as IdGenerator from "../src/IdGenerator.js"
import { PreDecision } from "../src/Policy.js"
import * as Scheduler from "../src/Scheduler.js"
import type { ToolDefinition } from "../src/Tool.js"
import type { JsonSchemaError } from "../src/ToolError.js"
import { ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistrationError, ToolRegistry } from "../src/ToolRegistry.js"
import { ToolRuntime } from "../src/ToolRuntime.js"
import * as Hostile from "./fixtures/hostile.js"
import { awaitTimer, echo, echoed, errorResult, execute, rawTool, text, timedOut } from "./fixtures/runtime.js"

const batch = [
  { callId: "a", name: "echo", arguments: "{\"text\":\"1\"}" },
  { callId: "b", name: "echo", arguments: "{\"text\":\"2\"}" }
]

const asking = Layer.scopedDiscard(Effect.flatMap(ToolRegistry, (registry) =>
  registry.onPreExecute(() => Effect.succeed(PreDecision.Ask({ reason: "sure?" })))))

/** The defect message a layer build died with. */
const buildDefect = (layer: Layer.Layer<unknown, unknown, never>): Effect.Effect<string> =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.scoped(Layer.build(layer)))
    assert.isTrue(Exit.isFailure(exit), "the layer built")
    if (Exit.isSuccess(exit)) return ""
    const defect = Cause.dieOption(exit.cause)
    assert.isTrue(Option.isSome(defect), "a defect")
    assert.instanceOf(Option.getOrThrow(defect), Cause.IllegalArgumentException)
    return (Option.getOrThrow(defect) as Error).message
  })

describe("issue 11 item 6: Presets.layer", () => {
  it.scoped("one call provides everything Scheduler.runBatch needs; tools are registered for the layer's lifetime", () =>
    Effect.gen(function*() {
      const result = yield* Scheduler.runBatch(batch)
      assert.deepStrictEqual(result.results.map((r) => r.result), [echoed("1"), echoed("2")])
      const registry = yield* ToolRegistry
      assert.deepStrictEqual((yield* registry.schemas()).map((schema) => schema.name), ["echo"])
    }).pipe(Effect.provide(Presets.layer({ tools: [echo()] }))))

  it.effect("the tools leave the registry when the layer closes (HOST-5)", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(Presets.layer({ tools: [echo(), echo({ name: "two" })] }), scope)
      const registry = Context.get(context, ToolRegistry)
      assert.deepStrictEqual((yield* registry.schemas()).map((schema) => schema.name), ["echo", "two"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* registry.schemas(), [])
    }))

  it.scoped("the services the tools need become the layer's requirements (captured at registration)", () => {
    class Greeting extends Context.Tag("test/Greeting")<Greeting, string>() {}
    const greet = rawTool<Greeting>("greet", () => Effect.map(Greeting, (word) => `${word}!`))
    const layer = Presets.layer({ tools: [greet] })
    const needs: Layer.Layer<Presets.Provided, ToolRegistrationError | JsonSchemaError, Greeting> = layer
    return Effect.gen(function*() {
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "greet", arguments: {} }), echoed("hello!"))
    }).pipe(Effect.provide(needs.pipe(Layer.provide(Layer.succeed(Greeting, "hello")))), Effect.orDie)
  })

  it.effect("REG-1: a refused tool fails the layer with the registry's typed error", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(Presets.layer({ tools: [echo(), echo()] }))))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const failure = Option.getOrThrow(Cause.failureOption(exit.cause))
        assert.instanceOf(failure, ToolRegistrationError)
      }
    }))

  it.scoped("the default log keeps nothing (ToolCallLogNoop); `log` swaps it", () =>
    Effect.gen(function*() {
      const noop = yield* Effect.provide(
        Effect.zipRight(Scheduler.runBatch(batch), Effect.flatMap(ToolCallLog, (log) => log.records)),
        Presets.layer({ tools: [echo()] })
      )
      assert.deepStrictEqual(noop, [])
      const memory = yield* Effect.provide(
        Effect.zipRight(Scheduler.runBatch(batch), Effect.flatMap(ToolCallLog, (log) => log.records)),
        Presets.layer({ tools: [echo()], log: ToolCallLogMemory.layer })
      )
      assert.deepStrictEqual(memory.map((r) => r._tag), ["tool/call", "tool/result", "tool/call", "tool/result"])
    }))

  it.scoped("APPR-1: without `approval` an ask is denied; with ApprovalLayers.layerApproveAll it runs", () =>
    Effect.gen(function*() {
      const call = { callId: "c1", name: "echo", agent: "main", arguments: { text: "hi" } }
      const denied = yield* Effect.provide(execute(call), asking.pipe(Layer.provideMerge(Presets.layer({ tools: [echo()] }))))
      assert.deepStrictEqual(denied, errorResult("sure?"))
      const approved = yield* Effect.provide(
        execute(call),
        asking.pipe(Layer.provideMerge(Presets.layer({ tools: [echo()], approval: ApprovalLayers.layerApproveAll })))
      )
      assert.deepStrictEqual(approved, echoed("hi"))
    }))

  it.scoped("the interactive approval layer's own service is part of the output", () =>
    Effect.gen(function*() {
      const interactive = yield* ApprovalLayers.InteractiveApprovals
      assert.deepStrictEqual(yield* interactive.pending, [])
    }).pipe(Effect.provide(Presets.layer({ approval: ApprovalLayers.layerInteractive }))))

  describe("timeout (TIMEOUT-1)", () => {
    const slow = (overrides: Partial<ToolDefinition<never>> = {}) =>
      echo({ name: "slow", execute: () => Effect.as(Effect.never, "never"), ...overrides })

    it.scoped("on by default: a tool's own timeoutMs applies", () =>
      Effect.gen(function*() {
        const fiber = yield* Effect.fork(execute({ callId: "c1", name: "slow", arguments: {} }))
        yield* awaitTimer
        yield* TestClock.adjust("50 millis")
        assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(50))
      }).pipe(Effect.provide(Presets.layer({ tools: [slow({ timeoutMs: 50 })] }))))

    it.scoped("{ defaultTimeoutMs } gives every other tool that budget", () =>
      Effect.gen(function*() {
        const fiber = yield* Effect.fork(execute({ callId: "c1", name: "slow", arguments: {} }))
        yield* awaitTimer
        yield* TestClock.adjust("30 millis")
        assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(30))
      }).pipe(Effect.provide(Presets.layer({ tools: [slow()], timeout: { defaultTimeoutMs: 30 } }))))

    it.scoped("false leaves the policy out: no wrapper is registered", () =>
      Effect.gen(function*() {
        const registry = yield* ToolRegistry
        assert.strictEqual(registry.unsafeView().aroundExecute.length, 0)
      }).pipe(Effect.provide(Presets.layer({ timeout: false }))))

    it.scoped("absent or true registers exactly one wrapper", () =>
      Effect.gen(function*() {
        const registry = yield* ToolRegistry
        assert.strictEqual(registry.unsafeView().aroundExecute.length, 1)
      }).pipe(Effect.provide(Presets.layer({ timeout: true }))))
  })

  it.scoped("`ids` swaps the context id generator (default: random UUIDs)", () =>
    Effect.gen(function*() {
      const ids = yield* IdGenerator.IdGenerator
      assert.strictEqual(ids.next(), "m-1")
      const tool = echo({
        execute: (_args, ctx) => Effect.sync(() => (ctx.deferContext({ content: text("later") }), "ok"))
      })
      const result = yield* Effect.provide(execute({ callId: "c1", name: "echo", arguments: {} }), Presets.layer({ tools: [tool] }))
      assert.match(result.additionalContexts?.[0]?.id ?? "", /^[0-9a-f-]{36}$/)
    }).pipe(Effect.provide(Presets.layer({ ids: IdGenerator.layerCounter("m-") }))))

  describe("options that cannot be used are a defect raised at build (read once)", () => {
    const cases: ReadonlyArray<readonly [string, () => unknown, string]> = [
      ["null", () => null, "Presets.layer options must be an object"],
      ["a number", () => 3, "Presets.layer options must be an object"],
      ["a revoked proxy", () => Hostile.revokedProxy(), "Presets.layer could not read option \"tools\": Cannot perform 'get' on a proxy that has been revoked"],
      ["a throwing approval getter", () => ({
        get approval() {
          throw Hostile.throwingProxy()
        }
      }), "Presets.layer could not read option \"approval\": <unprintable thrown value>"],
      ["tools not an array", () => ({ tools: echo() }), "Presets.layer option \"tools\" must be an array of tool definitions"],
      ["tools a revoked proxy", () => ({ tools: Hostile.revokedProxy() }), "Presets.layer could not read option \"tools\": Cannot perform 'IsArray' on a proxy that has been revoked"],
      ["approval not a Layer", () => ({ approval: ApprovalLayers.layerDenyAll.pipe(Layer.build) }), "Presets.layer option \"approval\" must be a Layer"],
      ["log a throwing proxy", () => ({ log: Hostile.throwingProxy() }), "Presets.layer option \"log\" must be a Layer"],
      ["ids a string", () => ({ ids: "counter" }), "Presets.layer option \"ids\" must be a Layer"],
      ["timeout a number", () => ({ timeout: 100 }), "Presets.layer option \"timeout\" must be true, false or { defaultTimeoutMs }"],
      ["timeout an array", () => ({ timeout: [] }), "Presets.layer option \"timeout\" must be true, false or { defaultTimeoutMs }"],
      ["defaultTimeoutMs zero", () => ({ timeout: { defaultTimeoutMs: 0 } }), "Presets.layer option \"timeout.defaultTimeoutMs\" must be a positive finite number no greater than 2147483647"],
      ["defaultTimeoutMs too large", () => ({ timeout: { defaultTimeoutMs: 2 ** 31 } }), "Presets.layer option \"timeout.defaultTimeoutMs\" must be a positive finite number no greater than 2147483647"],
      ["defaultTimeoutMs a bigint", () => ({ timeout: { defaultTimeoutMs: 5n } }), "Presets.layer option \"timeout.defaultTimeoutMs\" must be a positive finite number no greater than 2147483647"]
    ]
    for (const [label, options, message] of cases) {
      it.effect(label, () =>
        Effect.map(buildDefect(Presets.layer(options() as never) as Layer.Layer<unknown, unknown, never>), (actual) =>
          assert.strictEqual(actual, message)))
    }

    it.effect("each option is read exactly once", () =>
      Effect.gen(function*() {
        const read = Hostile.counted({ tools: [echo()], approval: undefined, log: undefined, timeout: true, ids: undefined })
        yield* Effect.scoped(Layer.build(Presets.layer(read.value as never) as Layer.Layer<unknown>))
        assert.deepStrictEqual(Object.fromEntries(read.reads), { tools: 1, approval: 1, log: 1, timeout: 1, ids: 1 })
      }))
  })

  it.scoped("layerDefault and layerTest are choices of layer: layerTest keeps records and counts ids", () =>
    Effect.gen(function*() {
      yield* Scheduler.runBatch([{ callId: "a", name: "ghost", arguments: "" }])
      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
      assert.strictEqual(records.length, 2)
      assert.strictEqual((yield* IdGenerator.IdGenerator).next(), "ctx-1")
      assert.isTrue(Context.isTag(ToolRuntime))
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("issue 10 item 4: the approval service composes in one call", () => {
  it.scoped("Presets.layer({ approval: ApprovalService.layer() }) builds the service over the chosen log and registry", () =>
    Effect.gen(function*() {
      const service = yield* ApprovalService.ApprovalService
      yield* service.answer(() => Effect.succeed("rejected"))
      const result = yield* execute({ callId: "c1", name: "echo", agent: "main", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, errorResult("the user rejected tool \"echo\""))
      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
      assert.deepStrictEqual(records.map((record) => record._tag), ["approval/asked", "approval/decided"])
    }).pipe(
      Effect.provide(asking.pipe(Layer.provideMerge(Presets.layer({
        tools: [echo()],
        approval: ApprovalService.layer(),
        log: ToolCallLogMemory.layer
      }))))
    ))

  it.scoped("Presets.layerApproval: the service, its grants when given, the person's channel only with interactive: true", () =>
    Effect.gen(function*() {
      const plain = yield* Effect.provide(
        Effect.all([
          Effect.serviceOption(ApprovalService.ApprovalService),
          Effect.serviceOption(ApprovalLayers.InteractiveApprovals),
          Effect.serviceOption(ApprovalGrants.ApprovalGrants)
        ]),
        Presets.layerApproval()
      )
      assert.deepStrictEqual(plain.map((o: Option.Option<unknown>) => Option.isSome(o)), [true, false, false])
      const full = yield* Effect.provide(
        Effect.all([
          Effect.serviceOption(ApprovalService.ApprovalService),
          Effect.serviceOption(ApprovalLayers.InteractiveApprovals),
          Effect.serviceOption(ApprovalGrants.ApprovalGrants)
        ]),
        Presets.layerApproval({ interactive: true, grants: ApprovalGrants.layerMemory })
      )
      assert.deepStrictEqual(full.map((o: Option.Option<unknown>) => Option.isSome(o)), [true, true, true])
    }))

  it.scoped("Presets.layerApproval: policy `never` is the deployment default", () =>
    Effect.gen(function*() {
      const result = yield* execute({ callId: "c1", name: "echo", agent: "main", arguments: {} })
      assert.deepStrictEqual(result, errorResult("the user rejected tool \"echo\""))
    }).pipe(Effect.provide(asking.pipe(Layer.provideMerge(Presets.layerApproval({ tools: [echo()], policy: "never" }))))))

  describe("Presets.layerApproval options that cannot be used are a defect raised at build (read once)", () => {
    const cases: ReadonlyArray<readonly [string, () => unknown, string]> = [
      ["null", () => null, "Presets.layerApproval options must be an object"],
      ["a bad policy", () => ({ policy: "sometimes" }), "Presets.layerApproval option \"policy\" must be \"ask\" or \"never\""],
      ["grants not a Layer", () => ({ grants: {} }), "Presets.layerApproval option \"grants\" must be a Layer"],
      ["interactive not a boolean", () => ({ interactive: "yes" }), "Presets.layerApproval option \"interactive\" must be a boolean"],
      ["approvalIds not a generator", () => ({ approvalIds: 3 }), "Presets.layerApproval option \"approvalIds\" must be an IdGenerator service"],
      ["tools not an array", () => ({ tools: echo() }), "Presets.layerApproval option \"tools\" must be an array of tool definitions"],
      ["a throwing grants getter", () => ({
        get grants() {
          throw new Error("no grants")
        }
      }), "Presets.layerApproval could not read option \"grants\": no grants"]
    ]
    for (const [label, options, message] of cases) {
      it.effect(label, () =>
        Effect.map(buildDefect(Presets.layerApproval(options() as never) as Layer.Layer<unknown, unknown, never>), (actual) =>
          assert.strictEqual(actual, message)))
    }

    it.effect("each option is read exactly once", () =>
      Effect.gen(function*() {
        const read = Hostile.counted({
          tools: [echo()],
          log: undefined,
          timeout: true,
          ids: undefined,
          policy: "ask",
          grants: undefined,
          interactive: false,
          approvalIds: undefined
        })
        yield* Effect.scoped(Layer.build(Presets.layerApproval(read.value as never) as Layer.Layer<unknown>))
        assert.deepStrictEqual(Object.fromEntries(read.reads), {
          tools: 1,
          log: 1,
          timeout: 1,
          ids: 1,
          policy: 1,
          grants: 1,
          interactive: 1,
          approvalIds: 1
        })
      }))
  })
})

describe("issue 11 item 6: ToolCallLogNoop", () => {
  it.effect("append accepts anything without reading it; records and contents stay empty", () =>
    Effect.gen(function*() {
      const log = yield* ToolCallLog
      yield* log.append(Hostile.throwingProxy() as never)
      yield* log.append(Hostile.revokedProxy() as never)
      assert.deepStrictEqual(yield* log.records, [])
      assert.deepStrictEqual(yield* log.contents!, { records: [], corrupt: [] })
    }).pipe(Effect.provide(ToolCallLogNoop.layer)))
})
