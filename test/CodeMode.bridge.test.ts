/**
 * The `run_code` bridge (PTC-6…17, D-5) with the scripted fake runtime: binding set, binding
 * calls, the per-run ordered lane (orderings proven with Deferred gates), commits and context
 * ferrying, durable sub-call events, completion, abandonment, cancellation, hostile values.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, FiberId, Layer, Option, Scope } from "effect"
import { getEventListeners } from "node:events"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import type { Binding } from "../src/CodeRuntime.js"
import { CodeRuntimeError } from "../src/CodeRuntime.js"
import type { ExecuteInput, RunContext, ToolExecution } from "../src/Execution.js"
import type { JsonValue } from "../src/Json.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import * as Presentation from "../src/Presentation.js"
import * as Scheduler from "../src/Scheduler.js"
import * as Tool from "../src/Tool.js"
import * as ToolCallLogModule from "../src/ToolCallLog.js"
import { type LogRecord, ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import { HarnessError } from "../src/ToolError.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as Code from "./fixtures/codeRuntime.js"
import * as Hostile from "./fixtures/hostile.js"
import { ABORTED, echo, errorResult, info, rawTool, text } from "./fixtures/runtime.js"
import { layerFailing } from "./fixtures/toolCallLog.js"

interface RunOptions {
  readonly callId?: string
  readonly rootCallId?: string
  /** `null`: no agent. */
  readonly agent?: string | null
  readonly signal?: AbortSignal
}

const runInput = (code: string, options: RunOptions = {}): ExecuteInput => ({
  callId: options.callId ?? "call-1",
  rootCallId: options.rootCallId,
  name: "run_code",
  agent: options.agent === null ? undefined : options.agent ?? "main",
  arguments: { description: "Run the program", code },
  signal: options.signal
})

const runCode = (code: string, options: RunOptions = {}) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) => runtime.execute(runInput(code, options)))

const records = Effect.flatMap(ToolCallLog, (log) => log.records)

/** `start <subCallId>` / `settle <subCallId> <isError>` for the dispatch records, in append order. */
const dispatchEvents = (all: ReadonlyArray<LogRecord>): Array<string> =>
  all.flatMap((r) =>
    r._tag === "tool/code-dispatch-start"
      ? [`start ${r.subCallId}`]
      : r._tag === "tool/code-dispatch"
      ? [`settle ${r.subCallId} ${r.isError}`]
      : []
  )

const valueOf = (result: ToolResult): unknown => (result.isError ? result.error : result.value)

/** The message a binding call failed with, or `resolved`. */
const failureOf = (exit: Exit.Exit<unknown, { readonly message: string }>): string => {
  if (Exit.isSuccess(exit)) return "resolved"
  const failure = Cause.failureOption(exit.cause)
  return Option.isSome(failure) ? failure.value.message : "no failure"
}

const gate = (): Deferred.Deferred<void> => Deferred.unsafeMake<void>(FiberId.none)

const open = (deferred: Deferred.Deferred<void>) => Deferred.succeed(deferred, undefined)

/** Lets every runnable fiber make progress. */
const settle = Effect.repeatN(Effect.yieldNow(), 200)

/** Yields until `condition` holds (fails the test after many rounds instead of hanging). */
const until = (condition: () => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 20_000; i++) {
      if (condition()) return
      yield* Effect.yieldNow()
    }
    assert.fail(`never happened: ${what}`)
  })

const register = <R>(definition: Tool.ToolDefinition<R>, agent?: string) =>
  Effect.flatMap(ToolRegistry, (registry) => registry.register(definition, { agent }))

/** Registers `definition` in its own scope; closing the scope unregisters it. */
const registerScoped = (definition: Tool.ToolDefinition<never>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Scope.extend(register(definition), scope)
    return scope
  })

/** Pre and post hooks recording `pre <callId>` / `post <callId>` for sub-calls. */
const recordHooks = (trace: Code.Trace) =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry
    yield* registry.onPreExecute((exec, next) =>
      Effect.suspend(() => {
        if (exec.parent !== undefined) trace.events.push(`pre ${exec.callId}`)
        return next
      })
    )
    yield* registry.onPostExecute((exec, _result, next) =>
      Effect.suspend(() => {
        if (exec.parent !== undefined) trace.events.push(`post ${exec.callId}`)
        return next
      })
    )
  })

/** `Promise.all` over calls: every call is submitted first, then each is awaited in order. */
const all = (guest: Code.Guest, calls: ReadonlyArray<readonly [string, unknown]>) =>
  Effect.gen(function*() {
    const pending: Array<Code.Pending> = []
    for (const [name, args] of calls) pending.push(yield* guest.call(name, args))
    const values: Array<unknown> = []
    for (const p of pending) values.push(yield* guest.await(p))
    return values
  })

const caught = <A>(effect: Effect.Effect<A, Code.ToolCallError>) =>
  Effect.map(Effect.either(effect), (either) =>
    either._tag === "Left" ? `caught: ${either.left.message} (${either.left.toolName})` : either.right)

describe("binding set (PTC-6)", () => {
  it.scoped("PTC-6 / T-PTC-012: one null-prototype namespace of the visible tools but run_code; odd names are ordinary", () => {
    const fake = Code.make({
      inspect: (guest) =>
        Effect.gen(function*() {
          const namespaces = guest.request.bindings
          assert.strictEqual(namespaces.length, 1)
          const tools = namespaces[0]
          assert.strictEqual(tools.global, "tools")
          assert.deepStrictEqual(tools.errorClass, { name: "ToolCallError", memberNameProperty: "toolName" })
          assert.isNull(Object.getPrototypeOf(tools.functions))
          assert.isUndefined((tools.functions as Record<string, Binding | undefined>).run_code)
          assert.isTrue(Object.isFrozen(tools.functions))
          const proto = yield* guest.invoke("__proto__", { text: "p" })
          const ctor = yield* guest.invoke("constructor", { text: "c" })
          return { names: guest.names, proto, ctor }
        })
    })
    return Effect.gen(function*() {
      yield* register(echo())
      yield* register(echo({ name: "__proto__" }))
      yield* register(echo({ name: "constructor" }))
      yield* register(echo({ name: "scoped" }), "main")
      yield* register(echo({ name: "elsewhere" }), "other")
      const result = yield* runCode("inspect")
      assert.deepStrictEqual(valueOf(result), {
        logs: [],
        result: { names: ["echo", "__proto__", "constructor", "scoped"], proto: "p", ctor: "c" }
      })
    }).pipe(Effect.provide(Code.layer(fake, { mode: "both" })))
  })

  it.scoped("PTC-6 / T-PTC-027: the set is fixed at run start; a tool gone mid-run fails as unknown and never runs", () => {
    const resume = gate()
    let ran = 0
    const fake = Code.make({
      late: (guest) =>
        Effect.gen(function*() {
          yield* Deferred.await(resume)
          return { names: guest.names, outcome: yield* caught(guest.invoke("ephemeral", {})) }
        })
    })
    return Effect.gen(function*() {
      const scope = yield* registerScoped(rawTool("ephemeral", () => Effect.sync(() => ++ran)))
      const fiber = yield* Effect.fork(runCode("late"))
      yield* until(() => fake.runs.length === 1, "the run started")
      yield* Scope.close(scope, Exit.void)
      yield* register(echo({ name: "newcomer" }))
      yield* open(resume)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(valueOf(result), {
        logs: [],
        result: { names: ["ephemeral"], outcome: "caught: unknown tool \"ephemeral\" (ephemeral)" }
      })
      assert.strictEqual(ran, 0)
    }).pipe(Effect.provide(Code.layer(fake)))
  })
})

describe("binding calls (PTC-8)", () => {
  it.scoped("PTC-8: sub-call ids, root id, agent, parent token and signal come from the outer execution and the run", () => {
    const seen: Array<RunContext> = []
    const outer: Array<ToolExecution> = []
    const fake = Code.make({
      two: (guest) => all(guest, [["probe", { n: 1 }], ["probe", { n: 2 }]])
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.onPreExecute((exec, next) =>
        Effect.suspend(() => {
          if (exec.name === "run_code") outer.push(exec)
          return next
        })
      )
      yield* register(rawTool("probe", (args, ctx) => Effect.sync(() => (seen.push(ctx), args))))
      const result = yield* runCode("two", { callId: "outer-7", rootCallId: "root-3" })
      assert.deepStrictEqual(valueOf(result), { logs: [], result: [{ n: 1 }, { n: 2 }] })
      assert.deepStrictEqual(seen.map((ctx) => ctx.callId), ["outer-7:code:1", "outer-7:code:2"])
      for (const ctx of seen) {
        assert.strictEqual(ctx.rootCallId, "root-3")
        assert.strictEqual(ctx.agent, "main")
        assert.strictEqual(ctx.parent, outer[0].token)
        assert.strictEqual(typeof ctx.parent, "symbol")
        assert.notStrictEqual(ctx.signal, outer[0].signal)
        assert.isTrue(ctx.signal.aborted)
        assert.strictEqual((ctx.signal.reason as Error).message, "run_code settled")
      }
      assert.isFalse(outer[0].signal.aborted)
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-8: without an outer agent the sub-calls carry none", () => {
    const agents: Array<boolean> = []
    const fake = Code.make({ one: (guest) => guest.invoke("probe", {}) })
    return Effect.gen(function*() {
      yield* register(rawTool("probe", (_args, ctx) => Effect.sync(() => (agents.push("agent" in ctx), "ok"))))
      const result = yield* runCode("one", { agent: null })
      assert.deepStrictEqual(valueOf(result), { logs: [], result: "ok" })
      assert.deepStrictEqual(agents, [false])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-8: the dispatched and logged copies are independent snapshots taken at the call", () => {
    const first = gate()
    const argsSeen: Array<JsonValue> = []
    const program: { args?: { list: Array<number>; __proto__?: unknown } } = {}
    const fake = Code.make({
      mutate: (guest) =>
        Effect.gen(function*() {
          const blocker = yield* guest.call("block", {})
          const args = JSON.parse("{\"list\":[1,2],\"__proto__\":{\"polluted\":true}}")
          program.args = args
          const later = yield* guest.call("probe", args)
          args.list.push(3)
          yield* open(first)
          yield* guest.await(blocker)
          return yield* guest.await(later)
        })
    })
    return Effect.gen(function*() {
      yield* register(rawTool("block", () => Effect.zipRight(Deferred.await(first), Effect.succeed("unblocked"))))
      yield* register(rawTool("probe", (args) =>
        Effect.sync(() => {
          argsSeen.push(args)
          return args
        })))
      const result = yield* runCode("mutate")
      assert.deepStrictEqual(argsSeen.map((a) => (a as { list: Array<number> }).list), [[1, 2]])
      assert.isTrue(Object.isFrozen(argsSeen[0]))
      assert.isTrue(Object.prototype.hasOwnProperty.call(argsSeen[0], "__proto__"))
      assert.strictEqual(Object.getPrototypeOf(argsSeen[0]), Object.prototype)
      assert.isUndefined(({} as Record<string, unknown>).polluted)
      const value = valueOf(result) as { result: { list: Array<number> } }
      assert.deepStrictEqual(value.result.list, [1, 2])
      const logged = (yield* records).filter((r) => r._tag === "tool/code-dispatch-start" && r.name === "probe")
      assert.strictEqual(logged.length, 1)
      const loggedArgs = (logged[0] as ToolCallLogModule.CodeDispatchStartRecord).arguments as { list: Array<number> }
      assert.deepStrictEqual(loggedArgs.list, [1, 2])
      assert.notStrictEqual(loggedArgs, argsSeen[0])
      assert.deepStrictEqual(program.args?.list, [1, 2, 3])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-041 / T-PTC-059 / PTC-8: non-lossless arguments reject before dispatch; nothing is logged or numbered", () => {
    const throwingGetter = (thrown: unknown) =>
      Object.defineProperty({}, "x", {
        enumerable: true,
        get: () => {
          throw thrown
        }
      })
    const bad: ReadonlyArray<readonly [string, () => unknown]> = [
      ["undefined", () => undefined],
      ["bigint", () => ({ big: 10n })],
      ["raw throw", () => throwingGetter("raw boom")],
      ["Error throw", () => throwingGetter(new Error("getter boom"))],
      ["Date", () => new Date(0)],
      ["function", () => () => 1],
      ["bare bigint", () => 5n],
      ["throwing proxy", () => Hostile.throwingProxy()],
      ["revoked proxy", () => Hostile.revokedProxy()],
      ["cyclic", () => Hostile.cyclic()],
      ["NaN", () => ({ n: Number.NaN })],
      ["-0", () => ({ n: -0 })]
    ]
    let dispatched = 0
    const fake = Code.make({
      bad: (guest) =>
        Effect.gen(function*() {
          const messages: Array<string> = []
          for (const [, make] of bad) {
            const outcome = yield* Effect.either(guest.invoke("probe", make()))
            messages.push(outcome._tag === "Left" ? outcome.left.message : "resolved")
          }
          const good = yield* guest.invoke("probe", Hostile.nullProto({ ok: true }))
          return { messages, good }
        })
    })
    return Effect.gen(function*() {
      yield* register(rawTool("probe", (args) => Effect.sync(() => (dispatched++, args))))
      const result = yield* runCode("bad")
      const { good, messages } = (valueOf(result) as { result: { messages: Array<string>; good: unknown } }).result
      assert.deepStrictEqual(messages.slice(0, 4), [
        "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)",
        "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)",
        "tool arguments must be lossless JSON: raw boom",
        "tool arguments must be lossless JSON: getter boom"
      ])
      for (const message of messages) assert.match(message, /^tool arguments must be lossless JSON/)
      assert.strictEqual(messages.filter((m) => m.includes("tool arguments must be lossless JSON")).length, bad.length)
      assert.include(messages[0], "call the tool with an arguments object")
      assert.deepStrictEqual(good, { ok: true })
      assert.strictEqual(dispatched, 1)
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1", "settle call-1:code:1 false"])
    }).pipe(Effect.provide(Code.layer(fake)))
  })
})

describe("the per-run lane (PTC-9)", () => {
  it.scoped("T-PTC-025 / PTC-9: safe calls overlap; an exclusive call waits for both and bars the trailing one", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      mixed: (guest) => all(guest, [["read", { text: "r1" }], ["read", { text: "r2" }], ["write", {}], ["read", { text: "r3" }]])
    })
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true }))
      yield* register(Code.gated(trace, "write"))
      const fiber = yield* Effect.fork(runCode("mixed"))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      yield* Deferred.await(trace.entered("call-1:code:2"))
      yield* settle
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1", "enter call-1:code:2"])
      assert.strictEqual(trace.live, 2)
      yield* trace.release("call-1:code:2")
      yield* settle
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1", "enter call-1:code:2", "exit call-1:code:2"])
      yield* trace.release("call-1:code:1")
      yield* Deferred.await(trace.entered("call-1:code:3"))
      yield* settle
      assert.strictEqual(trace.events.at(-1), "enter call-1:code:3")
      assert.strictEqual(trace.live, 1)
      yield* trace.release("call-1:code:3")
      yield* Deferred.await(trace.entered("call-1:code:4"))
      yield* trace.release("call-1:code:4")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(valueOf(result), { logs: [], result: ["r1", "r2", "write", "r3"] })
      assert.deepStrictEqual(trace.events, [
        "enter call-1:code:1",
        "enter call-1:code:2",
        "exit call-1:code:2",
        "exit call-1:code:1",
        "enter call-1:code:3",
        "exit call-1:code:3",
        "enter call-1:code:4",
        "exit call-1:code:4"
      ])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-026 / PTC-9: with maxParallelSubCalls 2 the third safe call waits for a slot; peak 2", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      three: (guest) => all(guest, [["read", { text: "a" }], ["read", { text: "b" }], ["read", { text: "c" }]])
    })
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true }))
      const fiber = yield* Effect.fork(runCode("three"))
      yield* Deferred.await(trace.entered("call-1:code:2"))
      yield* settle
      assert.strictEqual(trace.live, 2)
      assert.isFalse(trace.events.includes("enter call-1:code:3"))
      yield* trace.release("call-1:code:2")
      yield* Deferred.await(trace.entered("call-1:code:3"))
      yield* trace.release("call-1:code:1")
      yield* trace.release("call-1:code:3")
      assert.deepStrictEqual(valueOf(yield* Fiber.join(fiber)), { logs: [], result: ["a", "b", "c"] })
      assert.strictEqual(trace.peak, 2)
    }).pipe(Effect.provide(Code.layer(fake, { maxParallelSubCalls: 2 })))
  })

  it.scoped("PTC-9: maxParallelSubCalls 1 runs safe calls one at a time", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      two: (guest) => all(guest, [["read", { text: "a" }], ["read", { text: "b" }]])
    })
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true }))
      const fiber = yield* Effect.fork(runCode("two"))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      yield* settle
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1"])
      yield* trace.release("call-1:code:1")
      yield* Deferred.await(trace.entered("call-1:code:2"))
      yield* trace.release("call-1:code:2")
      yield* Fiber.join(fiber)
      assert.strictEqual(trace.peak, 1)
    }).pipe(Effect.provide(Code.layer(fake, { maxParallelSubCalls: 1 })))
  })

  it.scoped("T-PTC-028 / PTC-9: a sub-call's pre-execute starts only after the previous one's finished, even for safe calls", () => {
    const trace = Code.makeTrace()
    const preGate = gate()
    const fake = Code.make({
      two: (guest) => all(guest, [["read", { text: "a" }], ["read", { text: "b" }]])
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(Code.gated(trace, "read", { parallel: true, gated: false }))
      yield* registry.onPreExecute((exec, next) =>
        Effect.gen(function*() {
          if (exec.parent === undefined) return yield* next
          trace.events.push(`pre ${exec.callId}`)
          if (exec.callId === "call-1:code:1") yield* Deferred.await(preGate)
          trace.events.push(`pre done ${exec.callId}`)
          return yield* next
        })
      )
      const fiber = yield* Effect.fork(runCode("two"))
      yield* until(() => trace.events.includes("pre call-1:code:1"), "the first pre-execute")
      yield* settle
      assert.deepStrictEqual(trace.events, ["pre call-1:code:1"])
      yield* open(preGate)
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(trace.events.slice(0, 3), ["pre call-1:code:1", "pre done call-1:code:1", "pre call-1:code:2"])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-029 / PTC-9: an exclusive sub-call holds its barrier through its post-execute", () => {
    const trace = Code.makeTrace()
    const postGate = gate()
    const fake = Code.make({
      two: (guest) => all(guest, [["write", {}], ["read", { text: "r" }]])
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(Code.gated(trace, "write", { gated: false }))
      yield* register(Code.gated(trace, "read", { parallel: true, gated: false }))
      yield* recordHooks(trace)
      yield* registry.onPostExecute((exec, _result, next) =>
        exec.callId === "call-1:code:1" ? Effect.zipRight(Deferred.await(postGate), next) : next
      )
      const fiber = yield* Effect.fork(runCode("two"))
      yield* until(() => trace.events.includes("post call-1:code:1"), "the exclusive call's post-execute")
      yield* settle
      assert.deepStrictEqual(trace.events, ["pre call-1:code:1", "enter call-1:code:1", "exit call-1:code:1", "post call-1:code:1"])
      yield* open(postGate)
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(trace.events.slice(4), ["pre call-1:code:2", "enter call-1:code:2", "exit call-1:code:2", "post call-1:code:2"])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-031 / PTC-10: post-execute and contexts follow submission order under out-of-order completion", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      two: (guest) => all(guest, [["read", { text: "a" }], ["read", { text: "b" }]])
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(Code.gated(trace, "read", { parallel: true }))
      yield* recordHooks(trace)
      yield* registry.onPostExecute((exec, _result, next) =>
        exec.parent === undefined
          ? next
          : Effect.succeed(PostDecision.Accept({ additionalContexts: [{ content: text(`context for ${exec.callId}`) }] }))
      )
      const fiber = yield* Effect.fork(runCode("two"))
      yield* Deferred.await(trace.entered("call-1:code:2"))
      yield* trace.release("call-1:code:2")
      yield* settle
      assert.isFalse(trace.events.includes("post call-1:code:2"))
      yield* trace.release("call-1:code:1")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(trace.events.filter((e) => e.startsWith("post")), ["post call-1:code:1", "post call-1:code:2"])
      assert.deepStrictEqual(
        result.additionalContexts?.map((c) => c.content),
        [text("context for call-1:code:1"), text("context for call-1:code:2")]
      )
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-036 / PTC-9: Promise.all over exclusive tools runs them one at a time in submission order", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      three: (guest) =>
        Effect.map(all(guest, [["a", {}], ["b", {}], ["c", {}]]), (values) => values.join(","))
    })
    return Effect.gen(function*() {
      for (const name of ["a", "b", "c"]) yield* register(Code.gated(trace, name, { gated: false }))
      const result = yield* runCode("three")
      assert.deepStrictEqual(trace.events, [
        "enter call-1:code:1",
        "exit call-1:code:1",
        "enter call-1:code:2",
        "exit call-1:code:2",
        "enter call-1:code:3",
        "exit call-1:code:3"
      ])
      assert.deepStrictEqual(result.content, text("a,b,c"))
      assert.strictEqual(trace.peak, 1)
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-9 / SCHED-6: each queued call is re-classified against the live registry right before it starts", () => {
    const trace = Code.makeTrace()
    const flag = { parallel: true }
    const fake = Code.make({
      two: (guest) => all(guest, [["first", {}], ["flip", {}], ["third", {}]])
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(Code.gated(trace, "first", { parallel: true }))
      yield* register(Tool.defineTool({
        name: "flip",
        description: "classified live",
        parameters: {},
        output: { schema: { type: "string" }, render: (_a, v) => text(v) },
        isConcurrencySafe: () => flag.parallel,
        execute: (_args, ctx) =>
          Effect.gen(function*() {
            trace.events.push(`enter ${ctx.callId}`)
            yield* Deferred.await(trace.gate(ctx.callId))
            trace.events.push(`exit ${ctx.callId}`)
            return "flip"
          })
      }))
      yield* register(Code.gated(trace, "third", { parallel: true, gated: false }))
      yield* registry.onResult((exec) => Effect.sync(() => {
        if (exec.callId === "call-1:code:1") flag.parallel = false
      }))
      flag.parallel = false
      const fiber = yield* Effect.fork(runCode("two"))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      yield* settle
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1"])
      yield* trace.release("call-1:code:1")
      yield* until(() => trace.events.includes("enter call-1:code:2"), "the flipped call")
      yield* settle
      assert.isFalse(trace.events.includes("enter call-1:code:3"))
      yield* trace.release("call-1:code:2")
      assert.deepStrictEqual(valueOf(yield* Fiber.join(fiber)), { logs: [], result: ["first", "flip", "third"] })
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-9: a classifier that throws makes the call exclusive (fail closed)", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({ two: (guest) => all(guest, [["odd", {}], ["odd", {}]]) })
    return Effect.gen(function*() {
      yield* register({
        ...rawTool("odd", (_args, ctx) =>
          Effect.gen(function*() {
            trace.events.push(`enter ${ctx.callId}`)
            yield* Deferred.await(trace.gate(ctx.callId))
            return "odd"
          })),
        isConcurrencySafe: () => {
          throw new Error("hostile classifier")
        }
      })
      const fiber = yield* Effect.fork(runCode("two"))
      yield* until(() => trace.events.length === 1, "the first call")
      yield* settle
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1"])
      yield* trace.release("call-1:code:1")
      yield* until(() => trace.events.length === 2, "the second call")
      yield* trace.release("call-1:code:2")
      yield* Fiber.join(fiber)
    }).pipe(Effect.provide(Code.layer(fake)))
  })
})

describe("commits (PTC-10…12, PTC-17)", () => {
  it.scoped("T-PTC-037 / PTC-11: a failed sub-call rejects with its message only (no content, code or info)", () => {
    const fake = Code.make({
      fail: (guest) => Effect.all([caught(guest.invoke("boom", {})), caught(guest.invoke("coded", {}))])
    })
    return Effect.gen(function*() {
      yield* register(rawTool("boom", () => Effect.fail(new Error("deliberate failure"))))
      yield* register(rawTool("coded", () => Effect.fail(new HarnessError({ message: "coded failure", code: "X" }))))
      const result = yield* runCode("fail")
      assert.deepStrictEqual(valueOf(result), {
        logs: [],
        result: ["caught: deliberate failure (boom)", "caught: coded failure (coded)"]
      })
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-039: a throwing pre-execute is a final result — the body and post-execute never run; settle is an error", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({ gate: (guest) => caught(guest.invoke("guarded", {})) })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(Code.gated(trace, "guarded", { gated: false }))
      yield* recordHooks(trace)
      yield* registry.onPreExecute((exec, next) =>
        exec.parent === undefined ? next : Effect.die(new Error("gate exploded"))
      )
      const result = yield* runCode("gate")
      assert.deepStrictEqual(valueOf(result), { logs: [], result: "caught: gate exploded (guarded)" })
      assert.deepStrictEqual(trace.events, ["pre call-1:code:1"])
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1", "settle call-1:code:1 true"])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-11: a post-execute value replacement reaches the program; a content replacement does not", () => {
    const fake = Code.make({
      two: (guest) => all(guest, [["value", { text: "v" }], ["content", { text: "c" }]])
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(echo({ name: "value" }))
      yield* register(echo({ name: "content" }))
      yield* registry.onPostExecute((exec, _result, next) =>
        exec.name === "value"
          ? Effect.succeed(PostDecision.Accept({ value: "replaced value" }))
          : exec.name === "content"
          ? Effect.succeed(PostDecision.Accept({ content: text("replaced content") }))
          : next
      )
      assert.deepStrictEqual(valueOf(yield* runCode("two")), { logs: [], result: ["replaced value", "c"] })
      const settled = (yield* records).filter((r) => r._tag === "tool/code-dispatch") as Array<
        ToolCallLogModule.CodeDispatchRecord
      >
      assert.deepStrictEqual(settled.map((r) => r.content), [text("replaced value"), text("replaced content")])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-043 / PTC-10: nested contexts (body and post) are deferred on the outer result in order", () => {
    const fake = Code.make({ two: (guest) => all(guest, [["ctx", { text: "1" }], ["ctx", { text: "2" }]]) })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(rawTool("ctx", (args, ctx) =>
        Effect.sync(() => {
          ctx.deferContext({ content: text(`body ${ctx.callId}`) })
          return args
        })))
      yield* registry.onPostExecute((exec, _result, next) =>
        exec.parent === undefined
          ? next
          : Effect.succeed(PostDecision.Accept({ additionalContexts: [{ content: text(`context for ${exec.callId}`) }] }))
      )
      const result = yield* runCode("two")
      assert.deepStrictEqual(result.additionalContexts?.map((c) => c.content), [
        text("body call-1:code:1"),
        text("context for call-1:code:1"),
        text("body call-1:code:2"),
        text("context for call-1:code:2")
      ])
      assert.isTrue(result.additionalContexts!.every((c) => c.role === "user" && typeof c.id === "string"))
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  const image = { type: "image", data: "aGk=", mimeType: "image/png" } as const
  const pictureTool = rawTool("picture", () => Effect.succeed("pic"), {
    output: { schema: {}, render: () => [{ type: "text", text: "a picture" }, image] }
  })

  it.scoped("T-PTC-044 / PTC-10: an image-bearing result is deferred as one user message with the whole final content", () => {
    const fake = Code.make({ pic: (guest) => guest.invoke("picture", {}) })
    return Effect.gen(function*() {
      yield* register(pictureTool)
      const result = yield* runCode("pic")
      assert.deepStrictEqual(valueOf(result), { logs: [], result: "pic" })
      assert.strictEqual(result.additionalContexts?.length, 1)
      const [message] = result.additionalContexts!
      assert.deepStrictEqual(message.source, { kind: "plugin", plugin: "tools-code-mode" })
      assert.deepStrictEqual(message.content, [{ type: "text", text: "a picture" }, image])
      assert.strictEqual(message.role, "user")
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-045 / PTC-12: an image removed by nested post-execute (block or content) is not ferried", () => {
    const fake = Code.make({ pic: (guest) => Effect.either(guest.invoke("picture", {})) })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(pictureTool)
      const mode = { block: true }
      yield* registry.onPostExecute((exec, _result, next) =>
        exec.name !== "picture"
          ? next
          : Effect.succeed(
            mode.block
              ? PostDecision.Block({ feedback: [image] })
              : PostDecision.Accept({ content: text("no picture") })
          )
      )
      const blocked = yield* runCode("pic")
      assert.isUndefined(blocked.additionalContexts)
      mode.block = false
      const replaced = yield* runCode("pic", { callId: "call-2" })
      assert.isUndefined(replaced.additionalContexts)
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-12: ferried contexts survive CODE_RUN_FAILED; a block of run_code drops them; conclusion needs outer success", () => {
    const fake = Code.make({
      fails: (guest) => Effect.zipRight(guest.invoke("ctx", {}), Effect.fail(new Code.Thrown({ message: "late throw" }))),
      concludes: (guest) => guest.invoke("ctx", {})
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(rawTool("ctx", (_args, ctx) =>
        Effect.sync(() => {
          ctx.deferContext({ content: text("kept") })
          ctx.concludeTurn()
          return "done"
        })))
      const failed = yield* runCode("fails")
      assert.strictEqual(failed.isError && failed.error.info?.code, "CODE_RUN_FAILED")
      assert.deepStrictEqual(failed.additionalContexts?.map((c) => c.content), [text("kept")])
      assert.isFalse("concludesTurn" in failed)
      const concluded = yield* runCode("concludes", { callId: "call-2" })
      assert.strictEqual(concluded.isError === false && concluded.concludesTurn, true)
      yield* registry.onPostExecute((exec, _result, next) =>
        exec.name === "run_code" ? Effect.succeed(PostDecision.Block({ feedback: text("blocked") })) : next
      )
      const blocked = yield* runCode("concludes", { callId: "call-3" })
      assert.isTrue(blocked.isError)
      assert.isUndefined(blocked.additionalContexts)
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-058 / PTC-13: the settle record keeps the full sub-result content; the program gets the value", () => {
    const long = "x".repeat(10_000)
    const fake = Code.make({ rich: (guest) => guest.invoke("rich", {}) })
    return Effect.gen(function*() {
      yield* register(rawTool("rich", () => Effect.succeed({ n: 1 }), {
        output: {
          schema: {},
          render: () => [{ type: "text", text: long }, { type: "reasoning", text: "thinking" }]
        }
      }))
      const result = yield* runCode("rich")
      assert.deepStrictEqual(valueOf(result), { logs: [], result: { n: 1 } })
      const settled = (yield* records).find((r) => r._tag === "tool/code-dispatch") as ToolCallLogModule.CodeDispatchRecord
      assert.deepStrictEqual(settled.content, [{ type: "text", text: long }, { type: "reasoning", text: "thinking" }])
      assert.isFalse("value" in settled)
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-17 / T-PTC-034: a sub-call runs the whole pipeline under the outer agent, with an opaque parent and no meta", () => {
    const stages: Array<string> = []
    const parents: Array<unknown> = []
    const fake = Code.make({ one: (guest) => guest.invoke("full", { text: "t" }) })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(echo({
        name: "full",
        execute: (args) => Effect.sync(() => (stages.push("body"), (args as { text: string }).text)),
        finalizeContent: () => (stages.push("finalizer"), undefined),
        output: {
          schema: { type: "string" },
          render: (_a, v) => text(v as string),
          presentationMeta: () => ({ card: "meta" })
        }
      }))
      yield* registry.onPreExecute((exec, next) =>
        exec.name === "full" ? Effect.sync(() => (stages.push("pre"), PreDecision.Ask({}))) : next
      )
      yield* registry.guard((exec) => (exec.name === "full" ? (stages.push("guard"), undefined) : undefined))
      yield* registry.onExecute((exec, next) =>
        exec.name === "full"
          ? Effect.suspend(() => {
            stages.push("around")
            parents.push(exec.parent)
            Object.freeze(exec.parent)
            return next
          })
          : next, { agent: "main" })
      yield* registry.onPostExecute((exec, _r, next) => exec.name === "full" ? (stages.push("post"), next) : next)
      const observed: Array<ToolResult> = []
      yield* registry.onResult((exec, result) =>
        Effect.sync(() => {
          if (exec.name === "full") {
            stages.push("observer")
            observed.push(result)
          }
        })
      )
      const result = yield* runCode("one")
      assert.deepStrictEqual(valueOf(result), { logs: [], result: "t" })
      assert.deepStrictEqual(stages, ["pre", "guard", "around", "body", "post", "finalizer", "observer"])
      assert.strictEqual(typeof parents[0], "symbol")
      assert.deepStrictEqual(observed, [{ isError: false, value: "t", content: text("t") }])
      assert.isFalse("meta" in observed[0])
    }).pipe(Effect.provide(Code.layer(fake, { approval: ApprovalLayers.layerApproveAll })))
  })

  it.scoped("PTC-17: ask without an approval answer is denied inside the program like anywhere else", () => {
    const fake = Code.make({ one: (guest) => caught(guest.invoke("echo", {})) })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(echo())
      yield* registry.onPreExecute((exec, next) => exec.name === "echo" ? Effect.succeed(PreDecision.Ask({})) : next)
      const result = yield* runCode("one")
      assert.deepStrictEqual(valueOf(result), {
        logs: [],
        result: "caught: tool \"echo\" requires approval, but no approval channel is available (echo)"
      })
    }).pipe(Effect.provide(Code.layer(fake)))
  })
})

describe("durable sub-call events (PTC-13)", () => {
  it.scoped("PTC-13 / OQ-32: start before the sub-call's pre-execute, settle after; a denied call has both", () => {
    const order: Array<string> = []
    const fake = Code.make({ two: (guest) => Effect.zipRight(caught(guest.invoke("denied", {})), guest.invoke("echo", {})) })
    const log = Layer.effect(
      ToolCallLog,
      Effect.map(ToolCallLogMemory.make, (inner) => ({
        ...inner,
        append: (record: LogRecord) =>
          Effect.zipRight(
            Effect.sync(() =>
              order.push(
                record._tag === "tool/code-dispatch-start" ? `start ${record.subCallId}` : `settle ${"subCallId" in record ? record.subCallId : ""}`
              )
            ),
            inner.append(record)
          )
      }))
    )
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(echo())
      yield* register(echo({ name: "denied" }))
      yield* registry.onPreExecute((exec, next) =>
        Effect.suspend(() => {
          if (exec.parent !== undefined) order.push(`pre ${exec.callId}`)
          return exec.name === "denied" ? Effect.succeed(PreDecision.Deny({ reason: "no" })) : next
        })
      )
      yield* runCode("two")
      assert.deepStrictEqual(order, [
        "start call-1:code:1",
        "pre call-1:code:1",
        "settle call-1:code:1",
        "start call-1:code:2",
        "pre call-1:code:2",
        "settle call-1:code:2"
      ])
      const all = yield* records
      assert.deepStrictEqual(all[0], {
        _tag: "tool/code-dispatch-start",
        rootCallId: "call-1",
        parentCallId: "call-1",
        subCallId: "call-1:code:1",
        name: "denied",
        arguments: {}
      })
      assert.deepStrictEqual(all[1], {
        _tag: "tool/code-dispatch",
        rootCallId: "call-1",
        parentCallId: "call-1",
        subCallId: "call-1:code:1",
        name: "denied",
        arguments: {},
        isError: true,
        content: text("Error: no")
      })
    }).pipe(Effect.provide(Code.layer(fake, { log })))
  })

  it.scoped("PTC-13: without an outer agent nothing is written", () => {
    const fake = Code.make({ one: (guest) => guest.invoke("echo", { text: "x" }) })
    return Effect.gen(function*() {
      yield* register(echo())
      assert.deepStrictEqual(valueOf(yield* runCode("one", { agent: null })), { logs: [], result: "x" })
      assert.deepStrictEqual(yield* records, [])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-13: the settle append never delays the program, but run_code returns only after it", () => {
    const appendGate = gate()
    const programSaw = gate()
    const fake = Code.make({
      one: (guest) => Effect.tap(guest.invoke("echo", { text: "fast" }), () => open(programSaw))
    })
    const log = Layer.effect(
      ToolCallLog,
      Effect.map(ToolCallLogMemory.make, (inner) => ({
        ...inner,
        append: (record: LogRecord) =>
          record._tag === "tool/code-dispatch" ? Effect.zipRight(Deferred.await(appendGate), inner.append(record)) : inner.append(record)
      }))
    )
    return Effect.gen(function*() {
      yield* register(echo())
      const fiber = yield* Effect.fork(runCode("one"))
      yield* Deferred.await(programSaw)
      yield* settle
      assert.isNull(fiber.unsafePoll())
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1"])
      yield* open(appendGate)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(valueOf(result), { logs: [], result: "fast" })
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1", "settle call-1:code:1 false"])
    }).pipe(Effect.provide(Code.layer(fake, { log })))
  })

  it.scoped("PTC-10: while more settle appends than the cap are pending, the lane waits", () => {
    const appendGate = gate()
    const fake = Code.make({
      three: (guest) =>
        Effect.gen(function*() {
          yield* guest.invoke("echo", { text: "1" })
          yield* guest.invoke("echo", { text: "2" })
          return yield* guest.invoke("echo", { text: "3" })
        })
    })
    const log = Layer.effect(
      ToolCallLog,
      Effect.map(ToolCallLogMemory.make, (inner) => ({
        ...inner,
        append: (record: LogRecord) =>
          record._tag === "tool/code-dispatch" ? Effect.zipRight(Deferred.await(appendGate), inner.append(record)) : inner.append(record)
      }))
    )
    return Effect.gen(function*() {
      yield* register(echo())
      const fiber = yield* Effect.fork(runCode("three"))
      yield* until(() => fake.calls.length === 3, "the third call")
      yield* settle
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1", "start call-1:code:2"])
      yield* open(appendGate)
      assert.deepStrictEqual(valueOf(yield* Fiber.join(fiber)), { logs: [], result: "3" })
      assert.deepStrictEqual(dispatchEvents(yield* records), [
        "start call-1:code:1",
        "start call-1:code:2",
        "settle call-1:code:1 false",
        "settle call-1:code:2 false",
        "start call-1:code:3",
        "settle call-1:code:3 false"
      ])
    }).pipe(Effect.provide(Code.layer(fake, { log, maxParallelSubCalls: 1 })))
  })

  it.scoped("T-PTC-067: dispatch records never become model messages or cards (replay shows run_code only)", () => {
    const fake = Code.make({ one: (guest) => guest.invoke("echo", { text: "x" }) })
    return Effect.gen(function*() {
      yield* register(echo())
      const batch = yield* Scheduler.runBatch([
        { callId: "m1", name: "run_code", arguments: JSON.stringify({ description: "Echo once", code: "one" }) }
      ], { agent: "main" })
      assert.strictEqual(batch.results.length, 1)
      const all = yield* records
      assert.deepStrictEqual(all.map((r) => r._tag), ["tool/call", "tool/code-dispatch-start", "tool/code-dispatch", "tool/result"])
      const registry = yield* ToolRegistry
      const presented = Presentation.replay(all, (name) => registry.unsafeView("main").get(name)?.definition)
      assert.deepStrictEqual(presented.map((p) => p.callId), ["m1"])
      assert.deepStrictEqual(batch.contexts, [])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-13 / D-16: a failing log stops the run; started sub-calls still finish; run_code names the failure", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      many: (guest) =>
        Effect.gen(function*() {
          const first = yield* guest.call("read", { text: "a" })
          yield* Deferred.await(trace.entered("call-1:code:1"))
          const second = yield* guest.call("read", { text: "b" })
          yield* Effect.either(guest.await(second))
          return yield* Effect.either(guest.await(first))
        })
    })
    const log = layerFailing({
      failWhen: (record) => record._tag === "tool/code-dispatch-start" && record.subCallId === "call-1:code:2",
      message: "disk full"
    })
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true }))
      const fiber = yield* Effect.fork(runCode("many"))
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result, errorResult("run_code could not record its sub-calls: disk full"))
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1", "interrupted call-1:code:1"])
      assert.strictEqual(trace.live, 0)
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1"])
    }).pipe(Effect.provide(Code.layer(fake, { log })))
  })
})

describe("completion, abandonment and cancellation (PTC-14…16)", () => {
  it.scoped("PTC-14: a program failure is CODE_RUN_FAILED with the captured output appended only when there is some", () => {
    const fake = Code.make({
      loud: (guest) => Effect.zipRight(Effect.all([guest.log("step 1"), guest.log("step 2")]), Effect.fail(new Code.Thrown({ message: "bad" }))),
      quiet: () => Effect.fail(new Code.Thrown({ message: "bad" })),
      misuse: () => Effect.fail(new CodeRuntimeError({ message: "the runtime was disposed" }))
    })
    return Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* runCode("loud"),
        errorResult(
          "code run failed (exception): Error: bad\nCaptured output:\nstep 1\nstep 2",
          info("CodeRunFailedError", "CODE_RUN_FAILED")
        )
      )
      assert.deepStrictEqual(
        yield* runCode("quiet"),
        errorResult("code run failed (exception): Error: bad", info("CodeRunFailedError", "CODE_RUN_FAILED"))
      )
      assert.deepStrictEqual(yield* runCode("misuse"), errorResult("the runtime was disposed"))
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-030 / PTC-14: run_code waits for a commit in progress; the run's end aborts it (settle is an error)", () => {
    const postEntered = gate()
    const postGate = gate()
    const returnGate = gate()
    const fake = Code.make({
      early: (guest) =>
        Effect.gen(function*() {
          yield* guest.call("echo", { text: "slow" })
          yield* Deferred.await(returnGate)
          return "returned early"
        })
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(echo())
      yield* registry.onPostExecute((exec, _r, next) =>
        exec.parent === undefined ? next : Effect.zipRight(Effect.zipRight(open(postEntered), Deferred.await(postGate)), next)
      )
      const fiber = yield* Effect.fork(runCode("early"))
      yield* Deferred.await(postEntered)
      yield* open(returnGate)
      yield* settle
      assert.isNull(fiber.unsafePoll())
      yield* open(postGate)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(valueOf(result), { logs: [], result: "returned early" })
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1", "settle call-1:code:1 true"])
      const settled = (yield* records).find((r) => r._tag === "tool/code-dispatch") as ToolCallLogModule.CodeDispatchRecord
      assert.deepStrictEqual(settled.content, text("Error: tool call aborted"))
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-032 / PTC-15: a queued call is abandoned when the program fails; the in-flight one is drained and logged", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      fails: (guest) =>
        Effect.gen(function*() {
          yield* guest.call("writer", { text: "first" })
          yield* guest.call("writer", { text: "second" })
          yield* Deferred.await(trace.entered("call-1:code:1"))
          return yield* Effect.fail(new Code.Thrown({ message: "gave up" }))
        })
    }, { detachedBindings: true })
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "writer"))
      const fiber = yield* Effect.fork(runCode("fails"))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      yield* until(() => fake.runs.length === 1 && trace.events.includes("interrupted call-1:code:1"), "the drain")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        result,
        errorResult("code run failed (exception): Error: gave up", info("CodeRunFailedError", "CODE_RUN_FAILED"))
      )
      const exits = yield* Effect.all(fake.calls.map((call) => Fiber.await(call.fiber)))
      assert.deepStrictEqual(exits.map(failureOf), [
        "run_code run is over (run_code settled); writer result discarded",
        "run_code run is over (run_code settled); writer tool call abandoned"
      ])
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1", "settle call-1:code:1 true"])
      assert.isFalse(trace.events.includes("enter call-1:code:2"))
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-14: an unawaited call that started is drained, logged and discarded; the program's value stands", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      forgets: (guest) =>
        Effect.gen(function*() {
          yield* guest.call("read", { text: "never awaited" })
          yield* Deferred.await(trace.entered("call-1:code:1"))
          return "done"
        })
    })
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true }))
      const result = yield* runCode("forgets")
      assert.deepStrictEqual(valueOf(result), { logs: [], result: "done" })
      assert.strictEqual(trace.live, 0)
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1", "interrupted call-1:code:1"])
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1", "settle call-1:code:1 true"])
      assert.deepStrictEqual(fake.interrupted, ["read"])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-16: cancelling the outer call stops the program, drains every started sub-call and abandons queued ones", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      busy: (guest) => all(guest, [["read", { text: "a" }], ["read", { text: "b" }], ["write", {}]])
    })
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true }))
      yield* register(Code.gated(trace, "write"))
      const controller = new AbortController()
      const fiber = yield* Effect.fork(runCode("busy", { signal: controller.signal }))
      yield* Deferred.await(trace.entered("call-1:code:2"))
      controller.abort("user pressed stop")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        result,
        errorResult("code run failed (abort): the run was aborted", info("CodeRunFailedError", "CODE_RUN_FAILED"))
      )
      assert.strictEqual(trace.live, 0)
      assert.deepStrictEqual(trace.events.filter((e) => e.startsWith("interrupted")), [
        "interrupted call-1:code:1",
        "interrupted call-1:code:2"
      ])
      assert.deepStrictEqual(dispatchEvents(yield* records), [
        "start call-1:code:1",
        "start call-1:code:2",
        "settle call-1:code:1 true",
        "settle call-1:code:2 true"
      ])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-16 / D-14: interrupting the calling fiber is the same cancellation; it returns only after the drain", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({ busy: (guest) => guest.invoke("read", { text: "a" }) })
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true }))
      const observed: Array<ToolResult> = []
      const registry = yield* ToolRegistry
      yield* registry.onResult((exec, result) => Effect.sync(() => void (exec.name === "run_code" && observed.push(result))))
      const fiber = yield* Effect.fork(runCode("busy"))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(trace.live, 0)
      assert.deepStrictEqual(observed, [
        errorResult("code run failed (abort): the run was aborted", info("CodeRunFailedError", "CODE_RUN_FAILED"))
      ])
      assert.deepStrictEqual(dispatchEvents(yield* records), ["start call-1:code:1", "settle call-1:code:1 true"])
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("T-PTC-066 / PTC-7 / PTC-8: after an abort a call is not dispatched; a program that still returns ends ABORTED", () => {
    const aborted = gate()
    let ran = 0
    const fake = Code.make({
      stubborn: (guest) =>
        Effect.gen(function*() {
          yield* Deferred.await(aborted)
          return yield* caught(guest.invoke("echo", {}))
        })
    }, { ignoreAbort: true })
    return Effect.gen(function*() {
      yield* register(echo({ execute: () => Effect.sync(() => `${++ran}`) }))
      const controller = new AbortController()
      const fiber = yield* Effect.fork(runCode("stubborn", { signal: controller.signal }))
      yield* until(() => fake.runs.length === 1, "the run")
      controller.abort("stop now")
      yield* open(aborted)
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
      assert.strictEqual(ran, 0)
      assert.deepStrictEqual(yield* records, [])
      assert.strictEqual(fake.runs[0].signal?.reason, "stop now")
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-7 / PTC-8: the abort reason is formatted safely in the program's error", () => {
    const reasons: ReadonlyArray<readonly [unknown, string]> = [
      ["stop now", "stop now"],
      [new DOMException("gone", "AbortError"), "gone"],
      [new TypeError("typed"), "TypeError: typed"],
      [42, "42"],
      [Hostile.throwingProxy(), "<unprintable abort reason>"],
      [Hostile.nullProto({ a: 1 }), "[object Object]"]
    ]
    return Effect.gen(function*() {
      for (const [reason, shown] of reasons) {
        const aborted = gate()
        const fake = Code.make({
          stubborn: (guest) => Effect.zipRight(Deferred.await(aborted), caught(guest.invoke("echo", {})))
        }, { ignoreAbort: true })
        yield* Effect.gen(function*() {
          yield* register(echo())
          const controller = new AbortController()
          const fiber = yield* Effect.fork(runCode("stubborn", { signal: controller.signal }))
          yield* until(() => fake.runs.length === 1, "the run")
          controller.abort(reason)
          yield* open(aborted)
          yield* Fiber.join(fiber)
          const value = yield* Fiber.join(fake.calls[0].fiber).pipe(Effect.flip)
          assert.strictEqual(value.message, `run_code run is over (${shown}); echo not dispatched`)
        }).pipe(Effect.provide(Code.layer(fake)), Effect.scoped)
      }
    })
  })

  it.scoped("PTC-7: the listener on the outer signal is removed when the body ends", () => {
    const signals: Array<AbortSignal> = []
    const fake = Code.make({ quick: () => Effect.succeed(1) })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.onPreExecute((exec, next) => Effect.suspend(() => (signals.push(exec.signal), next)))
      const controller = new AbortController()
      yield* runCode("quick", { signal: controller.signal })
      assert.strictEqual(signals.length, 1)
      assert.strictEqual(getEventListeners(signals[0], "abort").length, 0)
      assert.strictEqual(getEventListeners(controller.signal, "abort").length, 0)
    }).pipe(Effect.provide(Code.layer(fake)))
  })
})

describe("hostile values (PTC-2, PTC-14)", () => {
  it.scoped("PTC-2: a program value that is not lossless JSON is INVALID_TOOL_OUTPUT; null prototypes and __proto__ keys are data", () => {
    const fake = Code.make({
      proxy: () => Effect.succeed(Hostile.throwingProxy()),
      bigint: () => Effect.succeed({ big: 10n }),
      nullProto: () => Effect.succeed(Hostile.nullProto({ a: 1 })),
      proto: () => Effect.succeed(Hostile.ownProtoKey())
    })
    return Effect.gen(function*() {
      const proxy = yield* runCode("proxy")
      assert.strictEqual(proxy.isError && proxy.error.info?.code, "INVALID_TOOL_OUTPUT")
      assert.match(proxy.isError ? proxy.error.message : "", /^tool "run_code" returned invalid output: value snapshot failed: hostile/)
      assert.deepStrictEqual(
        yield* runCode("bigint"),
        errorResult("tool \"run_code\" returned invalid output: value is not lossless JSON", info("ToolOutputError", "INVALID_TOOL_OUTPUT"))
      )
      assert.deepStrictEqual(valueOf(yield* runCode("nullProto")), { logs: [], result: { a: 1 } })
      const proto = yield* runCode("proto")
      const result = (valueOf(proto) as { result: object }).result
      assert.isTrue(Object.prototype.hasOwnProperty.call(result, "__proto__"))
      assert.strictEqual(Object.getPrototypeOf(result), Object.prototype)
      assert.deepStrictEqual(proto.content, text("{\n  \"__proto__\": {\n    \"polluted\": true\n  }\n}"))
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-14: a malformed runtime result is a plain error, read once and never converted", () => {
    const malformed: ReadonlyArray<unknown> = [
      Hostile.throwingProxy(),
      null,
      { logs: "x" },
      { logs: [1] },
      { logs: [], error: { kind: 1, message: "m" } },
      { logs: [], error: "boom" },
      Hostile.nullProto({ logs: Hostile.throwingProxy([]) })
    ]
    const programs: Record<string, Code.Script> = {}
    malformed.forEach((raw, i) => {
      programs[`m${i}`] = () => Effect.fail(new Code.RawResult({ result: raw }))
    })
    const fake = Code.make(programs)
    return Effect.gen(function*() {
      for (let i = 0; i < malformed.length; i++) {
        assert.deepStrictEqual(
          yield* runCode(`m${i}`, { callId: `m${i}` }),
          errorResult("the code runtime returned a malformed result"),
          `case ${i}`
        )
      }
    }).pipe(Effect.provide(Code.layer(fake)))
  })

  it.scoped("PTC-11: a sub-tool's hostile value reaches the program as its INVALID_TOOL_OUTPUT message", () => {
    const fake = Code.make({ one: (guest) => caught(guest.invoke("bad", {})) })
    return Effect.gen(function*() {
      yield* register(rawTool("bad", () => Effect.succeed(Hostile.throwingProxy())))
      const result = yield* runCode("one")
      assert.match(
        (valueOf(result) as { result: string }).result,
        /^caught: tool "bad" returned invalid output: value snapshot failed: hostile .* \(bad\)$/
      )
    }).pipe(Effect.provide(Code.layer(fake)))
  })
})

describe("parent tokens (D-5)", () => {
  it.scoped("D-5: the outer token is a valid parent only while run_code's body runs", () => {
    const tokens: Array<symbol> = []
    const fake = Code.make({ one: (guest) => guest.invoke("echo", { text: "inside" }) })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* register(echo())
      yield* registry.onPreExecute((exec, next) =>
        Effect.suspend(() => {
          if (exec.name === "run_code") tokens.push(exec.token)
          return next
        })
      )
      assert.deepStrictEqual(valueOf(yield* runCode("one")), { logs: [], result: "inside" })
      const runtime = yield* ToolRuntime.ToolRuntime
      const forged = yield* runtime.execute({ callId: "f", name: "echo", agent: "main", parent: tokens[0], arguments: {} })
      assert.deepStrictEqual(forged, errorResult(
        "tool \"echo\" was called with an invalid parent: a parent must be the token of a running execution of this runtime",
        info("InvalidParentError", "INVALID_PARENT")
      ))
    }).pipe(Effect.provide(Code.layer(fake)))
  })
})
