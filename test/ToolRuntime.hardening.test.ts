/**
 * Issue 8 — every call ends with exactly one result whatever the callbacks and callers hand in:
 * hostile policy answers (items 1, 2), hostile inputs (item 3, 13d), Promise bodies aborted in
 * their synchronous part (item 5), listener hygiene (item 6), and an approval service that never
 * answers (item 10).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema } from "effect"
import { Approval } from "../src/Approval.js"
import type { ExecuteInput, ToolExecution } from "../src/Execution.js"
import { sharedListeners } from "../src/internal/base/signals.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { Guard } from "../src/Policy.js"
import * as Tool from "../src/Tool.js"
import { HarnessError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as Presets from "../layers/Presets.js"
import * as Hostile from "./fixtures/hostile.js"
import {
  ABORTED,
  ABORTED_BEFORE_DISPATCH,
  echo,
  echoed,
  errorResult,
  execute,
  info,
  isDeepFrozen,
  layerWithApproval,
  rawTool,
  setup,
  text
} from "./fixtures/runtime.js"

const UNPRINTABLE = "<unprintable thrown value>"

/** The runtime's own check on every result of these tests: frozen, and observed exactly once. */
const observedOnce = Effect.gen(function*() {
  const registry = yield* ToolRegistry
  const seen: Array<ToolResult> = []
  yield* registry.onResult((_exec, result) => Effect.sync(() => seen.push(result)))
  return seen
})

const hostileKinds = Hostile.kinds

describe("issue 8 item 1 / D-2: a policy answer that cannot be inspected is a final error for that call only", () => {
  for (const kind of hostileKinds) {
    it.scoped(`PRE-7 / D-2: a pre-execute decision that is a ${kind}`, () =>
      Effect.gen(function*() {
        const { probe, tools } = yield* setup
        const seen = yield* observedOnce
        yield* tools.onPreExecute(() => Effect.sync(() => Hostile.make(kind) as PreDecision))
        const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
        assert.isTrue(result.isError)
        assert.isTrue(isDeepFrozen(result))
        assert.deepStrictEqual(seen, [result])
        assert.strictEqual(probe.count("body"), 0)
        assert.strictEqual(probe.count("post"), 0, "a pipeline error is final: post-execute is skipped")
        assert.strictEqual(typeof (result.isError && result.error.message), "string")
      }).pipe(Effect.provide(Presets.layerTest())))

    it.scoped(`GUARD-2 / D-2: a guard answer that is a ${kind}`, () =>
      Effect.gen(function*() {
        const { probe, tools } = yield* setup
        yield* tools.guard((() => Hostile.make(kind)) as Guard)
        const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
        assert.isTrue(result.isError)
        assert.isTrue(isDeepFrozen(result))
        assert.strictEqual(probe.count("body"), 0)
        assert.strictEqual(probe.count("post"), 0)
      }).pipe(Effect.provide(Presets.layerTest())))

    it.scoped(`POST-7 / D-2: a post-execute decision that is a ${kind}`, () =>
      Effect.gen(function*() {
        const { probe, tools } = yield* setup
        yield* tools.onPostExecute(() => Effect.sync(() => Hostile.make(kind) as PostDecision))
        const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
        assert.isTrue(result.isError)
        assert.isTrue(isDeepFrozen(result))
        assert.strictEqual(probe.count("body"), 1)
        assert.strictEqual(probe.count("fin"), 1)
      }).pipe(Effect.provide(Presets.layerTest())))

    it.scoped(`APPR-4 / D-2: an approval outcome that is a ${kind} is the unreachable-variant error`, () =>
      Effect.gen(function*() {
        const { probe, tools } = yield* setup
        yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
        const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
        assert.isTrue(result.isError)
        const message = result.isError ? result.error.message : ""
        assert.isTrue(message.startsWith("unreachable variant in ApprovalOutcome: "), message)
        assert.strictEqual(probe.count("body"), 0)
      }).pipe(Effect.provide(Presets.layerTest([() => Effect.sync(() => Hostile.make(kind) as never)]))))
  }

  it.scoped("D-2: the messages describe hostile answers without converting them (exact texts)", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const answers: ReadonlyArray<readonly [unknown, string]> = [
        [Hostile.nullProto(), "tools/pre-execute returned a malformed decision: {}"],
        [Hostile.nullProto({ _tag: "Bogus" }), "tools/pre-execute returned a malformed decision: {\"_tag\":\"Bogus\"}"],
        [Hostile.withBigint({ _tag: "Deny" }), "tools/pre-execute returned a malformed decision: <unprintable value>"],
        [Hostile.cyclic(), "tools/pre-execute returned a malformed decision: <unprintable value>"],
        [7n, "tools/pre-execute returned a malformed decision: 7n"],
        [Symbol("s"), "tools/pre-execute returned a malformed decision: a symbol"],
        [Hostile.throwingProxy(), "hostile get"],
        [Hostile.revokedProxy(), "Cannot perform 'get' on a proxy that has been revoked"]
      ]
      let index = 0
      yield* tools.onPreExecute(() => Effect.sync(() => answers[index]![0] as PreDecision))
      for (; index < answers.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "echo", arguments: {} })
        assert.deepStrictEqual(result, errorResult(answers[index]![1]))
      }
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-2: a well-formed decision on a null-prototype object is honoured (read by its own fields)", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPreExecute(() =>
        Effect.sync(() => Hostile.nullProto({ _tag: "Deny", reason: "no", info: Hostile.nullProto({ name: "N", code: "C" }) }) as PreDecision)
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("no", info("N", "C")))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PRE-7 / POST-7: hooks that fail, die or throw with hostile values are final errors", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const seen = yield* observedOnce
      let mode = 0
      yield* tools.onPreExecute((_exec, next) => {
        if (mode === 0) return Effect.fail(Hostile.nullProto())
        if (mode === 1) return Effect.die(Hostile.nullProto())
        if (mode === 2) throw Hostile.throwingProxy()
        if (mode === 3) return Effect.fail(Hostile.throwingProxy())
        return next
      })
      yield* tools.onPostExecute(() => {
        if (mode === 4) return Effect.fail(Hostile.throwingConversions())
        if (mode === 5) return Effect.die(Hostile.revokedProxy())
        throw Hostile.revokedProxy()
      })
      const expected = [
        UNPRINTABLE,
        UNPRINTABLE,
        UNPRINTABLE,
        "hostile has", // Effect.fail itself inspects its argument, so the hook throws while building it
        UNPRINTABLE,
        "Cannot perform 'has' on a proxy that has been revoked",
        UNPRINTABLE
      ]
      for (; mode < expected.length; mode++) {
        const result = yield* execute({ callId: `c${mode}`, name: "echo", arguments: {} })
        assert.deepStrictEqual(result, errorResult(expected[mode]!), `mode ${mode}`)
      }
      assert.strictEqual(seen.length, expected.length)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("issue 8 item 2 / D-2: each field of a policy answer is read once", () => {
  it.scoped("PRE-4: a deny reason read once: a getter that changes cannot smuggle an object into a canonical result", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const decision = Hostile.counted({ _tag: "Deny" })
      let reads = 0
      Object.defineProperty(decision.value, "reason", {
        enumerable: true,
        get: () => reads++ === 0 ? "denied" : { smuggled: true }
      })
      yield* tools.onPreExecute(() => Effect.succeed(decision.value as PreDecision))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("denied"))
      assert.strictEqual(reads, 1)
      assert.strictEqual(decision.reads.get("_tag"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PRE-4: deny info fields are read once", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const infoValue = Hostile.counted({ name: "N", code: "C" })
      const decision = Hostile.counted({ _tag: "Deny", reason: "r", info: infoValue.value })
      yield* tools.onPreExecute(() => Effect.succeed(decision.value as PreDecision))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("r", info("N", "C")))
      assert.deepStrictEqual([...decision.reads.values()], [1, 1, 1])
      assert.deepStrictEqual([...infoValue.reads.values()], [1, 1])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-2 / POST-4: block feedback and accept content are read once; a getter changing later changes nothing", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      let reads = 0
      const block = Hostile.changing({ _tag: "Block" }, "feedback", text("first"), 5)
      const accept = { _tag: "Accept" } as Record<string, unknown>
      Object.defineProperty(accept, "content", {
        enumerable: true,
        get: () => reads++ === 0 ? text("replaced") : "not content"
      })
      let which = 0
      yield* tools.onPostExecute(() => Effect.succeed((which === 0 ? block : accept) as PostDecision))
      const blocked = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(blocked, { isError: true, error: { message: "first" }, content: text("first") })
      which = 1
      const accepted = yield* execute({ callId: "c2", name: "echo", arguments: { text: "v" } })
      assert.deepStrictEqual(accepted, { isError: false, value: "v", content: text("replaced") })
      assert.strictEqual(reads, 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("AROUND-6: a wrapper result's fields are read once", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const authored = Hostile.counted({ isError: true, error: { message: "w" }, content: text("Error: w") })
      yield* tools.onExecute(() => Effect.succeed(authored.value as ToolResult))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("w"))
      for (const [key, count] of authored.reads) assert.strictEqual(count, 1, key)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("issue 8 item 3 / 13d: bad inputs are error results from both entry points", () => {
  const cases: ReadonlyArray<readonly [string, () => unknown, string]> = [
    ["null", () => null, "tool execution input must be an object"],
    ["undefined", () => undefined, "tool execution input must be an object"],
    ["a string", () => "echo", "tool execution input must be an object"],
    ["a throwing proxy", () => Hostile.throwingProxy(), "hostile get"],
    ["a revoked proxy", () => Hostile.revokedProxy(), "Cannot perform 'get' on a proxy that has been revoked"],
    ["a non-string agent", () => ({ callId: "c", name: "echo", agent: 5, arguments: {} }), "tool execution input agent must be a string when present"],
    ["a non-string rootCallId", () => ({ callId: "c", name: "echo", rootCallId: 1, arguments: {} }), "tool execution input rootCallId must be a string when present"],
    ["a non-symbol parent", () => ({ callId: "c", name: "echo", parent: "p", arguments: {} }), "tool execution input parent must be an execution token (a symbol) when present"],
    ["a fake signal", () => ({ callId: "c", name: "echo", arguments: {}, signal: { aborted: false, addEventListener() {} } }), "tool execution input signal must be an AbortSignal when present"],
    ["a signal forged over AbortSignal.prototype", () => ({ callId: "c", name: "echo", arguments: {}, signal: Object.create(AbortSignal.prototype) }), "tool execution input signal must be an AbortSignal when present"],
    ["a proxy around a real signal", () => ({ callId: "c", name: "echo", arguments: {}, signal: new Proxy(new AbortController().signal, {}) }), "tool execution input signal must be an AbortSignal when present"],
    ["an object inheriting from a real signal", () => ({ callId: "c", name: "echo", arguments: {}, signal: Object.create(new AbortController().signal) }), "tool execution input signal must be an AbortSignal when present"],
    ["a throwing signal getter", () => ({ callId: "c", name: "echo", arguments: {}, get signal() { throw new Error("no signal") } }), "no signal"],
    ["a throwing callId getter", () => ({ get callId() { throw new Error("no id") }, name: "echo", arguments: {} }), "no id"],
    ["a throwing arguments getter", () => ({ callId: "c", name: "echo", get arguments() { throw new Error("no args") } }), "no args"]
  ]

  for (const [label, input, message] of cases) {
    it.scoped(`CREATE-1 / D-15: execute with ${label} is an error result`, () =>
      Effect.gen(function*() {
        const { probe } = yield* setup
        const seen = yield* observedOnce
        const result = yield* execute(input() as ExecuteInput)
        assert.deepStrictEqual(result, errorResult(message))
        assert.deepStrictEqual(seen, [result])
        assert.strictEqual(probe.count("body"), 0)
      }).pipe(Effect.provide(Presets.layerTest())))
  }

  it.scoped("CREATE-1…4: identity fields are read once each, in order, and arguments after the probe", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(echo())
      const reads: Array<string> = []
      const input = {} as Record<string, unknown>
      const fields: Record<string, unknown> = { callId: "c1", rootCallId: undefined, name: "echo", agent: undefined, parent: undefined, signal: undefined, arguments: { text: "x" } }
      for (const key of Object.keys(fields)) {
        Object.defineProperty(input, key, { enumerable: true, get: () => (reads.push(key), fields[key]) })
      }
      const result = yield* execute(input as unknown as ExecuteInput)
      assert.deepStrictEqual(result, echoed("x"))
      assert.deepStrictEqual(reads, ["callId", "rootCallId", "name", "agent", "parent", "signal", "arguments"])
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("issue 8 item 5 / D-14: a Promise body aborted in its synchronous part is never abandoned", () => {
  const unhandled = () => {
    const seen: Array<unknown> = []
    const listener = (reason: unknown) => seen.push(reason)
    process.on("unhandledRejection", listener)
    return { seen, stop: () => process.off("unhandledRejection", listener) }
  }
  const macrotask = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

  it.scoped("PREC-1 row 10: a raw Promise body that aborts the caller, then rejects, keeps its own error", () =>
    Effect.gen(function*() {
      const watch = unhandled()
      const controller = new AbortController()
      const registry = yield* ToolRegistry
      yield* registry.register(rawTool("sync_abort", () => {
        controller.abort()
        return (async () => {
          await null
          throw new HarnessError({ message: "own failure", code: "OWN" })
        })() as never
      }))
      const result = yield* execute({ callId: "c1", name: "sync_abort", arguments: {}, signal: controller.signal })
      yield* macrotask
      watch.stop()
      assert.deepStrictEqual(result, errorResult("own failure", info("HarnessError", "OWN")))
      assert.deepStrictEqual(watch.seen, [])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 9: the same body resolving after the abort is ABORTED (body invoked)", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const registry = yield* ToolRegistry
      yield* registry.register(rawTool("sync_abort", () => {
        controller.abort()
        return Promise.resolve("late") as never
      }))
      const result = yield* execute({ callId: "c1", name: "sync_abort", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 10: a defineTool Promise body that aborts the caller, then rejects, keeps its own error", () =>
    Effect.gen(function*() {
      const watch = unhandled()
      const controller = new AbortController()
      const registry = yield* ToolRegistry
      yield* registry.register(Tool.defineTool({
        name: "typed_abort",
        description: "aborts its caller, then fails",
        parameters: {},
        output: { schema: { type: "string" }, render: (_args, value) => text(value) },
        execute: async () => {
          controller.abort()
          await null
          throw new HarnessError({ message: "typed failure", code: "OWN" })
        }
      }))
      const result = yield* execute({ callId: "c1", name: "typed_abort", arguments: {}, signal: controller.signal })
      yield* macrotask
      watch.stop()
      assert.deepStrictEqual(result, errorResult("typed failure", info("HarnessError", "OWN")))
      assert.deepStrictEqual(watch.seen, [])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 10: a fromSchema Promise body that aborts the caller, then rejects, keeps its own error", () =>
    Effect.gen(function*() {
      const watch = unhandled()
      const controller = new AbortController()
      const registry = yield* ToolRegistry
      yield* registry.register(Tool.fromSchema({
        name: "schema_abort",
        description: "aborts its caller, then fails",
        parameters: Schema.Struct({}),
        output: { schema: Schema.String, render: (_args, value) => text(value) },
        execute: async () => {
          controller.abort()
          await null
          throw new HarnessError({ message: "schema failure", code: "OWN" })
        }
      }))
      const result = yield* execute({ callId: "c1", name: "schema_abort", arguments: {}, signal: controller.signal })
      yield* macrotask
      watch.stop()
      assert.deepStrictEqual(result, errorResult("schema failure", info("HarnessError", "OWN")))
      assert.deepStrictEqual(watch.seen, [])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 10: Tool.fromPromise aborted while its function runs keeps the function's rejection", () =>
    Effect.gen(function*() {
      const watch = unhandled()
      const controller = new AbortController()
      let signalSeen: AbortSignal | undefined
      const registry = yield* ToolRegistry
      yield* registry.register(rawTool("from_promise", () =>
        Tool.fromPromise((signal) => {
          signalSeen = signal
          controller.abort()
          return new Promise((_resolve, reject) => {
            signal.addEventListener("abort", () => reject(new HarnessError({ message: "saw abort", code: "SAW" })))
          })
        })))
      const result = yield* execute({ callId: "c1", name: "from_promise", arguments: {}, signal: controller.signal })
      yield* macrotask
      watch.stop()
      assert.deepStrictEqual(result, errorResult("saw abort", info("HarnessError", "SAW")))
      assert.isTrue(signalSeen?.aborted)
      assert.deepStrictEqual(watch.seen, [])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.effect("Tool.fromPromise: interruption aborts the function's signal and waits for the settlement", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<AbortSignal>()
      let settle: (value: string) => void = () => {}
      const fiber = yield* Effect.fork(Tool.fromPromise((signal) => {
        Deferred.unsafeDone(started, Exit.succeed(signal))
        return new Promise<string>((resolve) => {
          settle = resolve
        })
      }))
      const signal = yield* Deferred.await(started)
      const abortSeen = yield* Deferred.make<void>()
      signal.addEventListener("abort", () => Deferred.unsafeDone(abortSeen, Exit.void), { once: true })
      const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* Deferred.await(abortSeen)
      yield* Effect.repeatN(Effect.yieldNow(), 5)
      assert.isTrue(signal.aborted)
      assert.strictEqual(signal.reason.name, "AbortError")
      assert.isNull(interrupting.unsafePoll(), "interruption waits for the promise")
      settle("late")
      const exit = yield* Fiber.join(interrupting)
      assert.isTrue(Exit.isInterrupted(exit))
    }))

  it.effect("Tool.fromPromise: a synchronous throw is a failure, a non-thenable is the value", () =>
    Effect.gen(function*() {
      const thrown = yield* Effect.exit(Tool.fromPromise(() => {
        throw new Error("sync")
      }))
      assert.isTrue(Exit.isFailure(thrown))
      const plain = yield* Tool.fromPromise(() => 5 as unknown as PromiseLike<number>)
      assert.strictEqual(plain, 5)
    }))
})

describe("issue 8 item 6 / D-20: every listener on the caller's signal is removed", () => {
  it.scoped("D-20: an observer that first reads exec.signal after finishing adds no listener to the caller's signal", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(echo())
      const signals: Array<AbortSignal> = []
      yield* registry.onResult((exec: ToolExecution) => Effect.sync(() => signals.push(exec.signal)))
      const controller = new AbortController()
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, echoed(""))
      assert.strictEqual(signals.length, 1)
      assert.notStrictEqual(signals[0], controller.signal, "exec.signal is the call's own signal")
      assert.strictEqual(sharedListeners(controller.signal), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-20: 50 concurrent calls on one caller signal share one listener; no MaxListenersExceededWarning", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const onWarning = (warning: Error) => warnings.push(warning.name)
      process.on("warning", onWarning)
      const gate = yield* Deferred.make<void>()
      let entered = 0
      const allIn = yield* Deferred.make<void>()
      const registry = yield* ToolRegistry
      yield* registry.register(rawTool("gated", () =>
        Effect.zipRight(
          Effect.sync(() => {
            if (++entered === 50) Deferred.unsafeDone(allIn, Exit.void)
          }),
          Effect.as(Deferred.await(gate), "ok")
        )))
      const controller = new AbortController()
      const fibers = yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => i),
        (i) => Effect.fork(execute({ callId: `c${i}`, name: "gated", arguments: {}, signal: controller.signal }))
      )
      yield* Deferred.await(allIn)
      assert.strictEqual(sharedListeners(controller.signal), 1, "one shared listener while calls run")
      controller.abort()
      const results = yield* Effect.forEach(fibers, Fiber.join)
      yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
      process.off("warning", onWarning)
      assert.deepStrictEqual(results, Array.from({ length: 50 }, () => ABORTED))
      assert.strictEqual(sharedListeners(controller.signal), 0)
      assert.deepStrictEqual(warnings.filter((name) => name === "MaxListenersExceededWarning"), [])
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("issue 8 item 10 / APPR-5: an approval service that never answers cannot hang an aborted call", () => {
  const stuck = (entered: Deferred.Deferred<void>) =>
    Layer.succeed(Approval, {
      request: () => Effect.uninterruptible(Effect.zipRight(Deferred.succeed(entered, undefined), Effect.never))
    })

  const asking = Effect.gen(function*() {
    const { probe, tools } = yield* setup
    yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
    return probe
  })

  it.live("APPR-5 / D-14: the caller's abort settles the wait as cancelled at once (ABORTED_BEFORE_DISPATCH)", () => {
    const entered = Deferred.unsafeMake<void>(undefined as never)
    return Effect.gen(function*() {
      const probe = yield* asking
      const controller = new AbortController()
      const fiber = yield* Effect.fork(
        execute({ callId: "c1", name: "echo", agent: "a", arguments: {}, signal: controller.signal })
      )
      yield* Deferred.await(entered)
      controller.abort()
      const result = yield* Fiber.join(fiber).pipe(Effect.timeoutFail({ duration: "2 seconds", onTimeout: () => "hung" }))
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(probe.count("body"), 0)
      assert.strictEqual(probe.count("post"), 1, "a pre-stage cancellation is a post-result")
    }).pipe(Effect.scoped, Effect.provide(layerWithApproval(stuck(entered))))
  })

  it.live("APPR-5 / D-14: interrupting the calling fiber during a stuck approval completes", () => {
    const entered = Deferred.unsafeMake<void>(undefined as never)
    return Effect.gen(function*() {
      const probe = yield* asking
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", agent: "a", arguments: {} }))
      yield* Deferred.await(entered)
      const exit = yield* Fiber.interrupt(fiber).pipe(Effect.timeoutFail({ duration: "2 seconds", onTimeout: () => "hung" }))
      assert.isTrue(Exit.isInterrupted(exit))
      assert.strictEqual(probe.count("observe"), 1, "the call still finished with one result")
      assert.deepStrictEqual(probe.observed[0]!.result, ABORTED_BEFORE_DISPATCH)
    }).pipe(Effect.scoped, Effect.provide(layerWithApproval(stuck(entered))))
  })

  it.live("APPR-5: an answer the service gives in the same step as the abort stands (a rejection stays a denial)", () => {
    const controller = new AbortController()
    return Effect.gen(function*() {
      const probe = yield* asking
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {}, signal: controller.signal })
      assert.isTrue(controller.signal.aborted)
      assert.deepStrictEqual(result, errorResult("the user rejected tool \"echo\""))
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(
      Effect.scoped,
      Effect.provide(Presets.layerTest([() =>
        Effect.sync(() => {
          controller.abort()
          return "rejected" as const
        })
      ]))
    )
  })
})
