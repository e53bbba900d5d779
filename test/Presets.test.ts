/**
 * `Presets.layer` (issue 11 item 6): one call assembles a runtime that runs `execute` and
 * `Scheduler.runBatch`; each option swaps one service. Also the no-op log, and Code Mode through
 * `codeMode` / `codeRuntime` (issue 9).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Option, Scope, TestClock } from "effect"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import * as Presets from "../layers/Presets.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogNoop from "../layers/ToolCallLogNoop.js"
import * as ApprovalGrants from "../src/ApprovalGrants.js"
import * as ApprovalService from "../src/ApprovalService.js"
import * as CodeMode from "../src/CodeMode.js"
import { CodeRuntime, type CodeRuntimeError } from "../src/CodeRuntime.js"
import * as IdGenerator from "../src/IdGenerator.js"
import { PreDecision } from "../src/Policy.js"
import * as Scheduler from "../src/Scheduler.js"
import type { ToolDefinition } from "../src/Tool.js"
import type { JsonSchemaError } from "../src/ToolError.js"
import { ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistrationError, ToolRegistry } from "../src/ToolRegistry.js"
import { ToolRuntime } from "../src/ToolRuntime.js"
import * as Code from "./fixtures/codeRuntime.js"
import * as Hostile from "./fixtures/hostile.js"
import {
  awaitTimer,
  echo,
  echoed,
  errorResult,
  execute,
  rawTool,
  settle,
  text,
  timedOut,
  unknownTool
} from "./fixtures/runtime.js"

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

const missingRuntime = (mode: string) =>
  `dsh-tools: mode "${mode}" requires a code runtime — provide a CodeRuntime Layer (CodeRuntimeQuickJs.layer) ` +
  "or present the tools as \"native\""

const runCode = (code: string, agent = "main") =>
  execute({ callId: "call-1", name: "run_code", agent, arguments: { description: "Run the program", code } })

const names = (assembly: CodeMode.Assembly) => assembly.schemas.map((schema) => schema.name)

/** Asks before every `echo` call (and only those: `run_code` itself is allowed). */
const askingEcho = Layer.scopedDiscard(Effect.flatMap(ToolRegistry, (registry) =>
  registry.onPreExecute((exec, next) =>
    exec.name === "echo" ? Effect.succeed(PreDecision.Ask({ reason: "sure?" })) : next)))

/** A fake program that starts two `read` calls at once, then awaits both. */
const readTwice: Code.Script = (guest) =>
  Effect.gen(function*() {
    const a = yield* guest.call("read", { text: "a" })
    const b = yield* guest.call("read", { text: "b" })
    return [yield* guest.await(a), yield* guest.await(b)]
  })

describe("issue 9: Code Mode in one call (Presets codeMode / codeRuntime)", () => {
  it.scoped("PTC-8 / PTC-13: over CodeRuntimeQuickJs a run_code program calls a registered tool; value and records", () =>
    Effect.gen(function*() {
      const code = [
        "const a: string = await tools.echo({ text: \"hi\" })",
        "console.log(\"first: \" + a)",
        "return a + \" / \" + (await tools.echo({ text: \"there\" }))"
      ].join("\n")
      const step = yield* Scheduler.runBatch(
        [{ callId: "c1", name: "run_code", arguments: JSON.stringify({ description: "Echo twice", code }) }],
        { agent: "main" }
      )
      assert.deepStrictEqual(step.results.map((r) => r.result), [{
        isError: false,
        value: { logs: ["first: hi"], result: "hi / there" },
        content: text("first: hi\nhi / there")
      }])
      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
      assert.deepStrictEqual(records.map((r) => r._tag), [
        "tool/call",
        "tool/code-dispatch-start",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "tool/code-dispatch",
        "tool/result"
      ])
    }).pipe(Effect.provide(Presets.layer({
      tools: [echo()],
      codeMode: { mode: "code" },
      codeRuntime: CodeRuntimeQuickJs.layer(),
      log: ToolCallLogMemory.layer
    }))))

  it.scoped("MODE-2 / MODE-4: CodeMode.assembly gives [run_code]; the prompt has the code-only rule and the SDK", () =>
    Effect.gen(function*() {
      const assembly = yield* CodeMode.assembly()
      assert.deepStrictEqual(names(assembly), ["run_code"])
      assert.deepStrictEqual(assembly.knownNames, ["run_code"])
      const sections = yield* CodeMode.promptSections()
      assert.deepStrictEqual(sections.map((section) => section.name), ["tools:code-only", "tools:sdk"])
      assert.include(sections[1].text, "echo")
      assert.strictEqual((yield* CodeRuntime).language, "typescript")
    }).pipe(Effect.provide(Presets.layer({
      tools: [echo()],
      codeMode: { mode: "code" },
      codeRuntime: CodeRuntimeQuickJs.layer()
    }))))

  it.scoped("PTC-5 / MODE-3: without codeRuntime run_code fails with `requires a code runtime`; so does assembly", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isNone(yield* Effect.serviceOption(CodeRuntime)))
      assert.deepStrictEqual(yield* runCode("return 1"), errorResult(missingRuntime("code")))
      const failure = yield* Effect.flip(CodeMode.assembly())
      assert.instanceOf(failure, CodeMode.CodeModeError)
      assert.strictEqual(failure.message, missingRuntime("code"))
    }).pipe(Effect.provide(Presets.layer({ tools: [echo()], codeMode: {} }))))

  it.scoped("MODE-1 / MODE-5: codeMode.mode native keeps the deployment native; a code-mode agent gets run_code", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(names(yield* CodeMode.assembly()), ["echo"])
      const registry = yield* ToolRegistry
      yield* registry.presentAs("code", { agent: "A" })
      assert.deepStrictEqual(names(yield* CodeMode.assembly("A")), ["run_code"])
      assert.strictEqual(registry.unsafeView("A").get("run_code")?.definition.name, "run_code")
    }).pipe(Effect.provide(Presets.layer({
      tools: [echo()],
      codeMode: { mode: "native" },
      codeRuntime: Code.make({}).layer
    }))))

  it.scoped("MODE-5: without codeMode no view holds run_code, even with a codeRuntime", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.presentAs("code", { agent: "A" })
      assert.strictEqual(registry.unsafeView("A").get("run_code"), undefined)
      assert.deepStrictEqual(yield* runCode("return 1", "A"), unknownTool("run_code"))
    }).pipe(Effect.provide(Presets.layer({ tools: [echo()], codeRuntime: Code.make({}).layer }))))

  it.scoped("PTC-9: codeMode.maxParallelSubCalls reaches the transport: with 1, safe sub-calls run singly", () => {
    const trace = Code.makeTrace()
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(runCode("two"))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      yield* settle
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1"])
      yield* trace.release("call-1:code:1")
      yield* Deferred.await(trace.entered("call-1:code:2"))
      yield* trace.release("call-1:code:2")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result.isError ? result.error : result.value, { logs: [], result: ["a", "b"] })
      assert.strictEqual(trace.peak, 1)
    }).pipe(Effect.provide(Presets.layer({
      tools: [Code.gated(trace, "read", { parallel: true })],
      codeMode: { maxParallelSubCalls: 1 },
      codeRuntime: Code.make({ two: readTwice }).layer
    })))
  })

  it.scoped("PTC-9: without maxParallelSubCalls (default 10) the same two sub-calls are live at once", () => {
    const trace = Code.makeTrace()
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(runCode("two"))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      yield* Deferred.await(trace.entered("call-1:code:2"))
      assert.strictEqual(trace.live, 2)
      yield* trace.release("call-1:code:2")
      yield* trace.release("call-1:code:1")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result.isError ? result.error : result.value, { logs: [], result: ["a", "b"] })
      assert.strictEqual(trace.peak, 2)
    }).pipe(Effect.provide(Presets.layer({
      tools: [Code.gated(trace, "read", { parallel: true })],
      codeMode: {},
      codeRuntime: Code.make({ two: readTwice }).layer
    })))
  })

  it.scoped("the code runtime's error and requirements become the layer's (types)", () => {
    class Engine extends Context.Tag("test/Engine")<Engine, string>() {}
    const fake = Code.make({})
    const needing: Layer.Layer<CodeRuntime, CodeRuntimeError, Engine> = Layer.effect(
      CodeRuntime,
      Effect.as(Engine, fake.service)
    )
    const layer: Layer.Layer<Presets.Provided<never, never, never, typeof needing>, CodeRuntimeError, Engine> = Presets
      .layer({ codeMode: {}, codeRuntime: needing })
    const approval: Layer.Layer<
      Presets.ApprovalProvided<never, never, never, false, typeof needing>,
      CodeRuntimeError,
      Engine
    > = Presets.layerApproval({ codeMode: {}, codeRuntime: needing })
    return Effect.gen(function*() {
      assert.strictEqual(yield* CodeRuntime, fake.service)
      assert.deepStrictEqual(names(yield* CodeMode.assembly()), ["run_code"])
      assert.strictEqual(
        yield* Effect.provide(CodeRuntime, approval.pipe(Layer.provide(Layer.succeed(Engine, "v8")))),
        fake.service
      )
    }).pipe(Effect.provide(layer.pipe(Layer.provide(Layer.succeed(Engine, "v8")))), Effect.orDie)
  })

  it.scoped("Presets.layerApproval takes codeMode and codeRuntime: the audited service decides a sub-call's ask", () =>
    Effect.gen(function*() {
      const result = yield* runCode("ask")
      assert.deepStrictEqual(result.isError ? result.error : result.value, {
        logs: [],
        result: "echo: the user rejected tool \"echo\""
      })
      assert.deepStrictEqual(names(yield* CodeMode.assembly()), ["run_code"])
      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
      assert.deepStrictEqual(records.map((r) => r._tag).filter((tag) => tag.startsWith("approval/")), [
        "approval/asked",
        "approval/decided"
      ])
    }).pipe(Effect.provide(askingEcho.pipe(Layer.provideMerge(Presets.layerApproval({
      tools: [echo()],
      policy: "never",
      log: ToolCallLogMemory.layer,
      codeMode: {},
      codeRuntime: Code.make({
        ask: (guest) =>
          Effect.catchAll(guest.invoke("echo", { text: "hi" }), (e) => Effect.succeed(`${e.toolName}: ${e.message}`))
      }).layer
    }))))))

  describe("codeMode / codeRuntime values that cannot be used are a defect raised at build", () => {
    const notObject = "Presets.layer option \"codeMode\" must be an object"
    const unreadable = (detail: string) => `Presets.layer could not read option "codeMode": ${detail}`
    const badMode = "Presets.layer option \"codeMode.mode\" must be \"native\", \"code\" or \"both\""
    const badCap = "Presets.layer option \"codeMode.maxParallelSubCalls\" must be a positive integer"
    const notLayer = "Presets.layer option \"codeRuntime\" must be a Layer"
    const cases: ReadonlyArray<readonly [string, () => unknown, string]> = [
      ["codeMode null", () => ({ codeMode: null }), notObject],
      ["codeMode a string", () => ({ codeMode: "code" }), notObject],
      ["codeMode true", () => ({ codeMode: true }), notObject],
      ["codeMode an array", () => ({ codeMode: [] }), notObject],
      ["codeMode a function", () => ({ codeMode: () => "code" }), notObject],
      ["codeMode a throwing proxy", () => ({ codeMode: Hostile.throwingProxy() }), unreadable("hostile get")],
      [
        "codeMode a revoked proxy",
        () => ({ codeMode: Hostile.revokedProxy() }),
        unreadable("Cannot perform 'IsArray' on a proxy that has been revoked")
      ],
      ["a codeMode getter throwing a throwing proxy", () => ({
        get codeMode() {
          throw Hostile.throwingProxy()
        }
      }), unreadable("<unprintable thrown value>")],
      ["codeMode.maxParallelSubCalls a throwing getter", () => ({
        codeMode: {
          get maxParallelSubCalls() {
            throw new Error("no cap")
          }
        }
      }), unreadable("no cap")],
      ["codeMode.mode unknown", () => ({ codeMode: { mode: "sometimes" } }), badMode],
      ["codeMode.mode a null-prototype object", () => ({ codeMode: { mode: Hostile.nullProto({ a: 1 }) } }), badMode],
      ["codeMode.mode a throwing proxy", () => ({ codeMode: { mode: Hostile.throwingProxy() } }), badMode],
      ["codeMode.maxParallelSubCalls zero", () => ({ codeMode: { maxParallelSubCalls: 0 } }), badCap],
      ["codeMode.maxParallelSubCalls fractional", () => ({ codeMode: { maxParallelSubCalls: 1.5 } }), badCap],
      ["codeMode.maxParallelSubCalls a bigint", () => ({ codeMode: { maxParallelSubCalls: 2n } }), badCap],
      ["codeRuntime an Effect", () => ({ codeRuntime: CodeRuntimeQuickJs.make() }), notLayer],
      ["codeRuntime a service", () => ({ codeRuntime: Code.make({}).service }), notLayer],
      ["codeRuntime a throwing proxy", () => ({ codeRuntime: Hostile.throwingProxy() }), notLayer],
      ["codeRuntime a revoked proxy", () => ({ codeRuntime: Hostile.revokedProxy() }), notLayer],
      ["a throwing codeRuntime getter", () => ({
        get codeRuntime() {
          throw new Error("no engine")
        }
      }), "Presets.layer could not read option \"codeRuntime\": no engine"]
    ]
    for (const [label, options, message] of cases) {
      it.effect(label, () =>
        Effect.map(buildDefect(Presets.layer(options() as never) as Layer.Layer<unknown, unknown, never>), (actual) =>
          assert.strictEqual(actual, message)))
    }

    it.effect("Presets.layerApproval names itself in the same defects", () =>
      Effect.gen(function*() {
        const bad = (options: unknown) =>
          buildDefect(Presets.layerApproval(options as never) as Layer.Layer<unknown, unknown, never>)
        assert.strictEqual(yield* bad({ codeMode: 3 }), "Presets.layerApproval option \"codeMode\" must be an object")
        assert.strictEqual(
          yield* bad({ codeMode: { mode: "both", maxParallelSubCalls: -1 } }),
          "Presets.layerApproval option \"codeMode.maxParallelSubCalls\" must be a positive integer"
        )
        assert.strictEqual(
          yield* bad({ codeRuntime: Hostile.throwingProxy() }),
          "Presets.layerApproval option \"codeRuntime\" must be a Layer"
        )
      }))

    it.effect("the options and codeMode's fields are each read once; the layer is built from that reading", () =>
      Effect.gen(function*() {
        const codeMode = Hostile.counted({ mode: "code", maxParallelSubCalls: 3 })
        const read = Hostile.counted({ tools: [echo()], codeMode: codeMode.value, codeRuntime: Code.make({}).layer })
        const context = yield* Layer.build(Presets.layer(read.value as never) as Layer.Layer<ToolRegistry>)
        assert.deepStrictEqual(Object.fromEntries(read.reads), { tools: 1, codeMode: 1, codeRuntime: 1 })
        assert.deepStrictEqual(Object.fromEntries(codeMode.reads), { mode: 1, maxParallelSubCalls: 1 })
        assert.strictEqual(Context.get(context, ToolRegistry).unsafeView().mode, "code")
        const approval = Hostile.counted({ mode: "both" })
        const approvalRead = Hostile.counted({ codeMode: approval.value, codeRuntime: Code.make({}).layer })
        yield* Layer.build(Presets.layerApproval(approvalRead.value as never) as Layer.Layer<unknown>)
        assert.deepStrictEqual(Object.fromEntries(approvalRead.reads), { codeMode: 1, codeRuntime: 1 })
        assert.deepStrictEqual(Object.fromEntries(approval.reads), { mode: 1 })
      }).pipe(Effect.scoped))
  })
})
