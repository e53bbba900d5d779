/**
 * ERR-1 (thrown value normalization) and ERR-6 (one test per code and producing stage).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import * as Presets from "../layers/Presets.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import { defineTool } from "../src/Tool.js"
import { CodeRunFailedError, HarnessError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED,
  ABORTED_BEFORE_DISPATCH,
  answer,
  awaitTimer,
  bounded,
  closeNow,
  collapsedRoute,
  errorResult,
  execute,
  info,
  instrument,
  instrumentInto,
  layerCode,
  makeProbe,
  outputError,
  type Probe,
  probeTool,
  registerScoped,
  setup,
  setupTool,
  text,
  timedOut,
  unknownTool
} from "./fixtures/runtime.js"

const throwing = (thrown: unknown) =>
  Effect.gen(function*() {
    const { probe } = yield* setupTool({ execute: () => Effect.fail(thrown) })
    const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
    assert.deepStrictEqual(probe.postSeen, [result])
    return result
  })

const ranPost = (probe: Probe) => probe.count("post") === 1

describe("ERR-1 (thrown value → error result)", () => {
  it.scoped("ERR-1: an Error gives { message } only, no stack, cause or info (T-BODY-009)", () =>
    Effect.gen(function*() {
      const error = new Error("just a message", { cause: new Error("hidden") })
      const result = yield* throwing(error)
      assert.deepStrictEqual(result, errorResult("just a message"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-1: an Error with a `code` property is not a HarnessError: no info", () =>
    Effect.gen(function*() {
      const error = Object.assign(new Error("disk full"), { code: "ENOSPC" })
      assert.deepStrictEqual(yield* throwing(error), errorResult("disk full"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-1: a coded HarnessError keeps { name, code } (T-BODY-008)", () =>
    Effect.gen(function*() {
      const result = yield* throwing(new HarnessError({ message: "disk full", code: "ENOSPC" }))
      assert.deepStrictEqual(result, errorResult("disk full", info("HarnessError", "ENOSPC")))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-1: a non-Error object with a string message uses it (T-BODY-005)", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* throwing({ message: "denied by object" }), errorResult("denied by object"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-1: a thrown string is its own message (T-BODY-006)", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* throwing("kaboom"), errorResult("kaboom"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-1: an object without message is String(E) (T-BODY-007)", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* throwing({ reason: 1 }), errorResult("[object Object]"))
    }).pipe(Effect.provide(Presets.layerTest())))

  const hostile = () =>
    new Proxy({}, {
      get: () => {
        throw new Error("trap")
      },
      getPrototypeOf: () => {
        throw new Error("trap")
      },
      has: () => {
        throw new Error("trap")
      }
    })

  /**
   * `Effect.fail`/`Effect.die` themselves probe their argument with `in` (a `has` trap throwing
   * there makes the constructor throw Effect's own `Error("trap")`, which is then the thrown
   * value): the Effect-channel variants use a proxy whose `has` answers.
   */
  const hostileInEffect = () =>
    new Proxy({}, {
      get: () => {
        throw new Error("trap")
      },
      getPrototypeOf: () => {
        throw new Error("trap")
      },
      has: () => false
    })

  const hostileBodies: ReadonlyArray<readonly [string, () => unknown]> = [
    ["Effect.fail", () => Effect.fail(hostileInEffect())],
    ["Effect.die", () => Effect.die(hostileInEffect())],
    ["a synchronous throw", () => {
      throw hostile()
    }],
    ["a rejected Promise", () => Promise.reject(hostile())]
  ]

  for (const [how, body] of hostileBodies) {
    it.scopedLive(`ERR-1: a hostile proxy thrown by ${how} is \`<unprintable thrown value>\` and the call resolves (T-BODY-003)`, () =>
      Effect.gen(function*() {
        const { probe } = yield* setupTool({ execute: body as never })
        const result = yield* bounded(execute({ callId: "c1", name: "echo", arguments: {} }))
        assert.deepStrictEqual(result, errorResult("<unprintable thrown value>"))
        assert.strictEqual(probe.count("observe"), 1)
      }).pipe(Effect.provide(Presets.layerTest())))
  }

  it.scoped("ERR-1: a hostile proxy failing a pre-execute hook is `<unprintable thrown value>`", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPreExecute(() => Effect.fail(hostileInEffect()))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("<unprintable thrown value>"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-1: a thrown value whose message getter throws is `<unprintable thrown value>`", () =>
    Effect.gen(function*() {
      const thrown = {
        get message(): string {
          throw new Error("nope")
        }
      }
      assert.deepStrictEqual(yield* throwing(thrown), errorResult("<unprintable thrown value>"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-1: a defect (Effect.die) and a synchronous throw from execute are normalized alike", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setupTool({ execute: () => Effect.die(new Error("died")) })
      yield* tools.register(probeTool(probe, {
        name: "sync",
        execute: () => {
          throw new Error("thrown synchronously")
        }
      }))
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), errorResult("died"))
      assert.deepStrictEqual(
        yield* execute({ callId: "c2", name: "sync", arguments: {} }),
        errorResult("thrown synchronously")
      )
      assert.strictEqual(probe.count("post"), 2)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-1: a body interrupted by its own Effect.interrupt without cancellation → `tool body was interrupted`", () =>
    Effect.gen(function*() {
      const { probe } = yield* setupTool({ execute: () => Effect.interrupt })
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("tool body was interrupted"))
      assert.deepStrictEqual(probe.postSeen, [result])
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("ERR-6 (codes by producing stage)", () => {
  it.scoped("ERR-6: UNKNOWN_TOOL with route — Code Mode collapse — final (no post)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.presentAs("code", { agent: "coder" })
      const result = yield* execute({ callId: "c1", name: "echo", agent: "coder", arguments: {} })
      assert.deepStrictEqual(result, errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL")))
      assert.strictEqual(probe.count("post"), 0)
    }).pipe(Effect.provide(layerCode())))

  it.scoped("ERR-6: UNKNOWN_TOOL plain — body start — post runs (T-BODY-004)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const result = yield* execute({ callId: "c1", name: "ghost", arguments: {} })
      assert.deepStrictEqual(result, unknownTool("ghost"))
      assert.isTrue(ranPost(probe))
      assert.deepStrictEqual(probe.postSeen, [unknownTool("ghost")])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: UNKNOWN_TOOL plain — AROUND-6 wrapper-authored success for a vanished tool — final", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const scope = yield* registerScoped(probeTool(probe))
      yield* tools.onExecute((_exec, next) =>
        Effect.map(next, (result) => {
          closeNow(scope)
          return { ...result } as ToolResult
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, unknownTool("echo"))
      assert.strictEqual(probe.count("post"), 0)
      assert.strictEqual(probe.count("body"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: UNKNOWN_TOOL plain — POST-5 value replacement for a vanished tool — final (T-POST-008)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const scope = yield* registerScoped(probeTool(probe))
      yield* tools.onPostExecute(() =>
        Effect.sync(() => {
          closeNow(scope)
          return PostDecision.Accept({ value: "replaced" })
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, unknownTool("echo"))
      assert.strictEqual(probe.count("fin"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: INVALID_ARGS — typed execute wrapper — post runs, body not run (T-LAB-S01)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      let ran = 0
      yield* tools.register(defineTool({
        name: "typed",
        description: "typed",
        parameters: { text: { type: "string", required: true } },
        output: { schema: { type: "string" }, render: (_args, value) => text(value) },
        execute: (args) =>
          Effect.sync(() => {
            ran++
            return args.text
          })
      }))
      const result = yield* execute({ callId: "c1", name: "typed", arguments: { text: 7 } })
      assert.isTrue(result.isError)
      assert.deepStrictEqual(result.isError && result.error.info, info("ToolArgsError", "INVALID_ARGS"))
      assert.isTrue(result.isError && result.error.message.startsWith("invalid arguments: "))
      assert.deepStrictEqual(result.content, text(`Error: ${result.isError ? result.error.message : ""}`))
      assert.strictEqual(ran, 0)
      assert.deepStrictEqual(probe.postSeen, [result])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: INVALID_TOOL_OUTPUT — body value — post runs (T-OUT-004, T-LAB-S02)", () =>
    Effect.gen(function*() {
      const { probe } = yield* setupTool({ execute: () => Effect.succeed(42) })
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      const expected = outputError("echo", "\"value\" must be a string")
      assert.deepStrictEqual(result, expected)
      assert.deepStrictEqual(probe.postSeen, [expected])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: INVALID_TOOL_OUTPUT — AROUND-6 wrapper-authored success — final", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onExecute(() => Effect.succeed({ isError: false, value: [1], content: [] } as unknown as ToolResult))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, outputError("echo", "\"value\" must be a string"))
      assert.strictEqual(probe.count("post"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: INVALID_TOOL_OUTPUT — POST-5 value replacement — final, no value (T-POST-002)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPostExecute(() => Effect.succeed(PostDecision.Accept({ value: 1 })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, outputError("echo", "\"value\" must be a string"))
      assert.strictEqual(probe.count("fin"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: ABORTED_BEFORE_DISPATCH — pre-aborted entry — final", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const controller = new AbortController()
      controller.abort()
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(probe.count("post"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: ABORTED_BEFORE_DISPATCH — cancellation during pre-policy — post runs", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPreExecute((_exec, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: ABORTED_BEFORE_DISPATCH — cancellation during approval (APPR-5) — post runs", () => {
    const probe = makeProbe()
    const controller = new AbortController()
    const waitForever = Effect.zipRight(Effect.sync(() => controller.abort()), Effect.never)
    return Effect.gen(function*() {
      yield* instrumentInto(probe)
      const tools = yield* ToolRegistry
      yield* tools.register(probeTool(probe))
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
      const result = yield* execute({
        callId: "c1",
        name: "echo",
        agent: "a",
        arguments: {},
        signal: controller.signal
      })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, waitForever)])))
  })

  it.scoped("ERR-6: ABORTED_BEFORE_DISPATCH — BODY-1 fused signal already aborted — post runs, body not run", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          const replacement = new AbortController()
          replacement.abort()
          exec.signal = replacement.signal
          return next
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: ABORTED_BEFORE_DISPATCH — AROUND-8 success, body never invoked — post runs", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onExecute(() =>
        Effect.sync(() => {
          controller.abort()
          return { isError: false, value: "cached", content: [] } as ToolResult
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: ABORTED_BEFORE_DISPATCH — POST-8 success after post, body never invoked", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onExecute(() => Effect.succeed({ isError: false, value: "cached", content: [] } as ToolResult))
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: ABORTED — BODY-6 success while the fused (wrapper) signal aborted — post runs", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const replacement = new AbortController()
      yield* tools.register(probeTool(probe, {
        execute: () =>
          Effect.uninterruptible(Effect.sync(() => {
            replacement.abort()
            return "late"
          }))
      }))
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          exec.signal = replacement.signal
          return next
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, ABORTED)
      assert.deepStrictEqual(probe.postSeen, [ABORTED])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: ABORTED — AROUND-8 caller cancelled after a body success — post runs", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onExecute((_exec, next) => Effect.tap(next, () => Effect.sync(() => controller.abort())))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED)
      assert.deepStrictEqual(probe.postSeen, [ABORTED])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: ABORTED — POST-8 caller cancelled during post after a body success", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" }, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED)
      assert.deepStrictEqual(probe.postSeen, [{ isError: false, value: "hi", content: text("hi") }])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: TOOL_TIMEOUT — the timeout wrapper's own deadline — post runs", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      yield* tools.register(probeTool(probe, {
        timeoutMs: 100,
        execute: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("150 millis")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result, timedOut(100))
      assert.deepStrictEqual(probe.postSeen, [timedOut(100)])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: CODE_RUN_FAILED — body failure — post runs", () =>
    Effect.gen(function*() {
      const error = new CodeRunFailedError({ kind: "runtime", detail: "boom", logs: ["a", "b"] })
      const result = yield* throwing(error)
      assert.deepStrictEqual(
        result,
        errorResult("code run failed (runtime): boom\nCaptured output:\na\nb", info("CodeRunFailedError", "CODE_RUN_FAILED"))
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: any HarnessError code — thrown by the body → post runs", () =>
    Effect.gen(function*() {
      const result = yield* throwing(new HarnessError({ message: "nope", code: "CUSTOM" }))
      assert.deepStrictEqual(result, errorResult("nope", info("HarnessError", "CUSTOM")))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: any HarnessError code — from pre, guard, wrapper or post listener → final (T-PRE-013)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const coded = (code: string) => new HarnessError({ message: "denied", code })
      const stage = { value: "" }
      yield* tools.onPreExecute((_exec, next) => stage.value === "pre" ? Effect.fail(coded("PRE")) : next)
      yield* tools.guard(() => {
        if (stage.value === "guard") throw coded("GUARD")
        return undefined
      })
      yield* tools.onExecute((_exec, next) => stage.value === "around" ? Effect.fail(coded("AROUND")) : next)
      yield* tools.onPostExecute((_exec, _result, next) => stage.value === "post" ? Effect.fail(coded("POST")) : next)
      for (const [name, code] of [["pre", "PRE"], ["guard", "GUARD"], ["around", "AROUND"], ["post", "POST"]]) {
        stage.value = name!
        const before = probe.count("post")
        const result = yield* execute({ callId: name!, name: "echo", arguments: {} })
        assert.deepStrictEqual(result, errorResult("denied", info("HarnessError", code!)))
        assert.strictEqual(probe.count("post") - before, name === "post" ? 1 : 0)
      }
      assert.strictEqual(probe.count("fin"), 4)
      assert.strictEqual(probe.count("observe"), 4)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-6: any HarnessError code — a failing approval service degrades to `unavailable` (D-7)", () => {
    const probe = makeProbe()
    const failing = Effect.fail(new HarnessError({ message: "channel down", code: "APPROVAL_DOWN" }))
    return Effect.gen(function*() {
      yield* instrumentInto(probe)
      const tools = yield* ToolRegistry
      yield* tools.register(probeTool(probe))
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(
        result,
        errorResult("tool \"echo\" requires approval, but no approval channel is available")
      )
      assert.strictEqual(probe.count("post"), 1)
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, failing)])))
  })

  it.scoped("ERR-6: no code — denials (ERR-2), blocks (ERR-3) and plain pipeline errors", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const mode = { value: "deny" }
      yield* tools.onPreExecute((_exec, next) =>
        mode.value === "deny" ? Effect.succeed(PreDecision.Deny({ reason: "no" })) : next
      )
      yield* tools.onPostExecute((_exec, _result, next) =>
        mode.value === "block" ? Effect.succeed(PostDecision.Block({ feedback: text("blocked") })) : next
      )
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), errorResult("no"))
      mode.value = "block"
      assert.deepStrictEqual(yield* execute({ callId: "c2", name: "echo", arguments: {} }), {
        isError: true,
        error: { message: "blocked" },
        content: text("blocked")
      })
      mode.value = "args"
      assert.deepStrictEqual(
        yield* execute({ callId: "c3", name: "echo", arguments: [undefined] }),
        errorResult("tool execution arguments must be losslessly JSON-serializable")
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("ERR-4: a cancellation replacing a success keeps only its contexts (no value, meta, concludesTurn)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(probeTool(probe, {
        output: {
          schema: { type: "string" },
          render: (_args, value) => text(value as string),
          presentationMeta: () => ({ card: true })
        },
        execute: (_args, ctx) =>
          Effect.sync(() => {
            ctx.concludeTurn()
            return "done"
          })
      }))
      yield* tools.onExecute((_exec, next) => Effect.tap(next, () => Effect.sync(() => controller.abort())))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED)
    }).pipe(Effect.provide(Presets.layerTest())))
})
