/**
 * PREC-1 (precedence, one test per row) and PREC-2 (stage matrix, one test per path).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Scope } from "effect"
import * as Presets from "../layers/Presets.js"
import type { ApprovalOutcome } from "../src/Approval.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import { defineTool } from "../src/Tool.js"
import { HarnessError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolResultModule from "../src/ToolResult.js"
import {
  ABORTED,
  aborted,
  ABORTED_BEFORE_DISPATCH,
  answer,
  ARGS_NOT_LOSSLESS,
  closeNow,
  collapsedRoute,
  context,
  echoed,
  errorResult,
  execute,
  info,
  instrument,
  layerCode,
  makeProbe,
  message,
  outputError,
  type Probe,
  probeTool,
  registerScoped,
  setup,
  setupWith,
  signalDone,
  text,
  timedOut,
  unknownTool,
  withContexts
} from "./fixtures/runtime.js"

/** The single observation equals the returned result by identity (EXEC-2). */
const assertObservedOnce = (probe: Probe, result: ToolResult) => {
  assert.strictEqual(probe.observed.length, 1)
  assert.strictEqual(probe.observed[0]!.result, result)
}

/**
 * `echo` for agent `a` behind an approval ask whose answer first aborts the caller, then gives
 * `outcome`; `check` sees the probe and the result (inside the test layer).
 */
const askWhileAborting = (
  outcome: ApprovalOutcome,
  ask: { readonly reason?: string },
  check: (probe: Probe, result: ToolResult) => void
) => {
  const probe = makeProbe()
  const controller = new AbortController()
  const answered = Effect.sync(() => {
    controller.abort()
    return outcome
  })
  return Effect.gen(function*() {
    const { tools } = yield* setupWith(probe)
    yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask(ask)))
    const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {}, signal: controller.signal })
    check(probe, result)
  }).pipe(Effect.provide(Presets.layerTest([answer(probe, answered)])))
}

const codeAgent = "coder"

const setupCode = Effect.tap(setup, ({ tools }) => tools.presentAs("code", { agent: codeAgent }))

describe("PREC-1 (precedence, highest first)", () => {
  it.scoped("PREC-1 row 1: argument materialization failure wins even when the caller already aborted", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "never seen" })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: new Map(), signal: aborted() })
      assert.deepStrictEqual(result, errorResult(ARGS_NOT_LOSSLESS))
      assert.deepStrictEqual(probe.log, ["fin", "observe"])
      assert.strictEqual(probe.observed[0]!.exec.arguments, undefined)
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 1: argument failure beats the Code Mode collapse (finalizer only if aborted)", () =>
    Effect.gen(function*() {
      const { probe } = yield* setupCode
      const live = yield* execute({ callId: "c1", name: "echo", agent: codeAgent, arguments: new Map() })
      assert.deepStrictEqual(live, errorResult(ARGS_NOT_LOSSLESS))
      assert.deepStrictEqual(probe.log, ["observe"])
      const dead = yield* execute({
        callId: "c2",
        name: "echo",
        agent: codeAgent,
        arguments: new Map(),
        signal: aborted()
      })
      assert.deepStrictEqual(dead, errorResult(ARGS_NOT_LOSSLESS))
      assert.deepStrictEqual(probe.log, ["observe", "fin", "observe"])
    }).pipe(Effect.provide(layerCode())))

  it.scoped("PREC-1 row 2: Code Mode collapse — aborted → ABORTED_BEFORE_DISPATCH, else UNKNOWN_TOOL, before policy", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setupCode
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "never seen" })))
      const live = yield* execute({ callId: "c1", name: "echo", agent: codeAgent, arguments: { text: "hi" } })
      assert.deepStrictEqual(live, errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL")))
      assert.deepStrictEqual(probe.log, ["observe"])
      const dead = yield* execute({
        callId: "c2",
        name: "echo",
        agent: codeAgent,
        arguments: { text: "hi" },
        signal: aborted()
      })
      assert.deepStrictEqual(dead, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["observe", "fin", "observe"])
    }).pipe(Effect.provide(layerCode())))

  it.scoped("PREC-1 row 3: pre-aborted entry → ABORTED_BEFORE_DISPATCH as a final-result (no policy at all)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "never seen" })))
      yield* tools.onPostExecute(() => Effect.succeed(PostDecision.Block({ feedback: text("never seen") })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" }, signal: aborted() })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 4: a pre-execute throw after the caller aborted stays that error, final", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPreExecute(() =>
        Effect.suspend(() => {
          controller.abort()
          return Effect.fail(new Error("gate interrupted"))
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, errorResult("gate interrupted"))
      assert.deepStrictEqual(probe.log, ["pre", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 4: a guard throw after the caller aborted stays that error, final", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.guard(() => {
        controller.abort()
        throw new HarnessError({ message: "guard broke", code: "GUARD_FAILURE" })
      })
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, errorResult("guard broke", info("HarnessError", "GUARD_FAILURE")))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 4: an approval outcome outside the vocabulary after the caller aborted is a final error", () =>
    askWhileAborting("maybe" as never, {}, (probe, result) => {
      assert.deepStrictEqual(result, errorResult("unreachable variant in ApprovalOutcome: \"maybe\""))
      assert.deepStrictEqual(probe.log, ["pre", "approval", "fin", "observe"])
    }))

  it.scoped("PREC-1 row 5: approval `cancelled` with the caller aborted → ABORTED_BEFORE_DISPATCH post-result", () =>
    askWhileAborting("cancelled", { reason: "check" }, (probe, result) => {
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["pre", "approval", "post", "fin", "observe"])
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
    }))

  it.scoped("PREC-1 row 6: a pre-execute denial beats a caller cancellation during the pre stage", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPreExecute(() =>
        Effect.sync(() => {
          controller.abort()
          return PreDecision.Deny({ reason: "policy denied the call" })
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, errorResult("policy denied the call"))
      assert.deepStrictEqual(probe.log, ["pre", "post", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 6: an approval rejection stays a denial even though the caller aborted", () =>
    askWhileAborting("rejected", {}, (probe, result) => {
      assert.deepStrictEqual(result, errorResult("the user rejected tool \"echo\""))
      assert.deepStrictEqual(probe.log, ["pre", "approval", "post", "fin", "observe"])
    }))

  it.scoped("PREC-1 row 6: a guard denial beats a caller cancellation", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.guard(() => {
        controller.abort()
        return "terminal policy"
      })
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, errorResult("terminal policy"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "post", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 7: caller aborted after the gate → ABORTED_BEFORE_DISPATCH post-result", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPreExecute((_exec, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["pre", "guard", "post", "fin", "observe"])
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 8: a wrapper failure after the caller aborted stays that error, final (T-CANCEL-007)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onExecute(() =>
        Effect.suspend(() => {
          controller.abort()
          return Effect.fail(new HarnessError({ message: "wrapper failed", code: "WRAPPER_FAILURE" }))
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, errorResult("wrapper failed", info("HarnessError", "WRAPPER_FAILURE")))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 8: a wrapper-authored invalid success is INVALID_TOOL_OUTPUT, final, even after abort", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onExecute(() =>
        Effect.sync(() => {
          controller.abort()
          return { isError: false, value: 42, content: text("forged") } as ToolResult
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, outputError("echo", "\"value\" must be a string"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 8: a wrapper-authored success for a vanished tool is UNKNOWN_TOOL, final", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const scope = yield* registerScoped(probeTool(probe))
      yield* tools.onExecute(() =>
        Effect.sync(() => {
          closeNow(scope)
          return { isError: false, value: "x", content: [] } as ToolResult
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, unknownTool("echo"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 9: a wrapper-authored TOOL_TIMEOUT is never overridden by cancellation", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onExecute(() =>
        Effect.sync(() => {
          controller.abort()
          return ToolResultModule.timedOut(100)
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, timedOut(100))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "post", "fin", "observe"])
      assert.deepStrictEqual(probe.postSeen, [timedOut(100)])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 10: UNKNOWN_TOOL at body start is kept over a later cancellation", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.onExecute((_exec, next) => Effect.tap(next, () => Effect.sync(() => controller.abort())))
      const result = yield* execute({ callId: "c1", name: "ghost", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, unknownTool("ghost"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "post", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 10: a tool's own error raised when it observes the abort is kept (Effect body, T-CANCEL-008)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(probeTool(probe, {
        execute: (_args, ctx) =>
          Effect.uninterruptible(Effect.async<never, HarnessError>((resume) => {
            ctx.signal.addEventListener("abort", () =>
              resume(Effect.fail(new HarnessError({ message: "tool failed", code: "TOOL_FAILURE" }))))
            controller.abort()
          }))
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, errorResult("tool failed", info("HarnessError", "TOOL_FAILURE")))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "post", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 10: a Promise body (defineTool async) rejecting with its own error on abort keeps it (T-CANCEL-008)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      yield* tools.register(defineTool({
        name: "echo",
        description: "A Promise body.",
        parameters: {},
        output: { schema: { type: "string" }, render: (_args, value) => text(value) },
        execute: (_args, ctx) =>
          new Promise<string>((_resolve, reject) => {
            ctx.signal.addEventListener("abort", () =>
              reject(new HarnessError({ message: "tool failed", code: "TOOL_FAILURE" })))
            signalDone(started)
          })
      }))
      const fiber = yield* Effect.fork(
        execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      )
      yield* Deferred.await(started)
      controller.abort()
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result, errorResult("tool failed", info("HarnessError", "TOOL_FAILURE")))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "post", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 11: a body success with the fused signal aborted at completion → ABORTED", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(probeTool(probe, {
        execute: () =>
          Effect.uninterruptible(Effect.sync(() => {
            controller.abort()
            return "done anyway"
          }))
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED)
      assert.deepStrictEqual(probe.postSeen, [ABORTED])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 11: a wrapper short-circuit success with the caller aborted → ABORTED_BEFORE_DISPATCH", () =>
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
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "post", "fin", "observe"])
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 11: a body success with the caller aborted after the waterfall → ABORTED, contexts kept", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(probeTool(probe, {
        execute: (_args, ctx) => Effect.as(Effect.sync(() => ctx.deferContext(message("child"))), "ok")
      }))
      yield* tools.onExecute((_exec, next) => Effect.tap(next, () => Effect.sync(() => controller.abort())))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, withContexts(ABORTED, [context("ctx-1", "child")]))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 12: a post-execute failure after the caller aborted stays that error, final", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPostExecute(() =>
        Effect.suspend(() => {
          controller.abort()
          return Effect.fail(new HarnessError({ message: "post failed", code: "POST_FAILURE" }))
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, errorResult("post failed", info("HarnessError", "POST_FAILURE")))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "body", "post", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 12: a post-execute block after the caller aborted stays the block", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPostExecute(() =>
        Effect.sync(() => {
          controller.abort()
          return PostDecision.Block({ feedback: text("output rejected: try again") })
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, {
        isError: true,
        error: { message: "output rejected: try again" },
        content: text("output rejected: try again")
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 13: a success after post with the caller aborted → ABORTED, contexts kept (T-CANCEL-006)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(probeTool(probe, {
        execute: (_args, ctx) => Effect.as(Effect.sync(() => ctx.deferContext(message("child"))), "ok")
      }))
      yield* tools.onPostExecute(() =>
        Effect.sync(() => {
          controller.abort()
          return PostDecision.Accept({ additionalContexts: [message("post")] })
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, withContexts(ABORTED, [context("ctx-1", "child"), context("ctx-2", "post")]))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 13: a short-circuit success after post with the caller aborted → ABORTED_BEFORE_DISPATCH", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onExecute(() => Effect.succeed({ isError: false, value: "cached", content: [] } as ToolResult))
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.postSeen, [{ isError: false, value: "cached", content: text("cached") }])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 14: a finalizer throw replaces every outcome, even a pre-aborted one", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      let calls = 0
      yield* tools.register(probeTool(probe, {
        finalizeContent: () => {
          calls++
          throw new Error("finalizer violated its total contract")
        }
      }))
      const ok = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" } })
      assert.deepStrictEqual(ok, errorResult("finalizer violated its total contract"))
      const dead = yield* execute({ callId: "c2", name: "echo", arguments: {}, signal: aborted() })
      assert.deepStrictEqual(dead, errorResult("finalizer violated its total contract"))
      assert.strictEqual(calls, 2)
      assert.strictEqual(probe.observed.length, 2)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-1 row 14: a result materialization failure becomes that error", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onExecute(() =>
        Effect.succeed(
          { isError: true, error: { message: "authored" }, content: text("x"), meta: () => 1 } as unknown as ToolResult
        )
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("tool result must be losslessly JSON-serializable"))
      assert.strictEqual(probe.count("fin"), 1)
      assert.strictEqual(probe.count("observe"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("PREC-2 (stage matrix)", () => {
  it.scoped("PREC-2 argument snapshot failure: only the finalizer and one notification", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { when: new Date(0) } })
      assert.deepStrictEqual(result, errorResult(ARGS_NOT_LOSSLESS))
      assert.deepStrictEqual(probe.log, ["fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 collapsed, not aborted: nothing runs, no finalizer, one notification", () =>
    Effect.gen(function*() {
      const { probe } = yield* setupCode
      const result = yield* execute({ callId: "c1", name: "echo", agent: codeAgent, arguments: {} })
      assert.deepStrictEqual(result, errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL")))
      assert.deepStrictEqual(probe.log, ["observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(layerCode())))

  it.scoped("PREC-2 collapsed, aborted: only the finalizer and one notification", () =>
    Effect.gen(function*() {
      const { probe } = yield* setupCode
      const result = yield* execute({ callId: "c1", name: "echo", agent: codeAgent, arguments: {}, signal: aborted() })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(layerCode())))

  it.scoped("PREC-2 pre-aborted: only the finalizer and one notification", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: aborted() })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 pre listener throws: pre, finalizer, notification", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPreExecute(() => Effect.die(new Error("pre broke")))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("pre broke"))
      assert.deepStrictEqual(probe.log, ["pre", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 deny: pre, post, finalizer, notification", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "denied by policy" })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("denied by policy"))
      assert.deepStrictEqual(probe.log, ["pre", "post", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 ask → non-grant: pre, approval, post, finalizer, notification (no guards)", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      const { tools } = yield* setupWith(probe)
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(result, errorResult("the user rejected tool \"echo\""))
      assert.deepStrictEqual(probe.log, ["pre", "approval", "post", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, "rejected")])))
  })

  it.scoped("PREC-2 allow → guard denies: pre, guards, post, finalizer, notification", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.guard(() => "terminal policy")
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("terminal policy"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "post", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 ask → allowed → guard denies: pre, approval, guards, post, finalizer, notification", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      const { tools } = yield* setupWith(probe)
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
      yield* tools.guard(() => "terminal policy")
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(result, errorResult("terminal policy"))
      assert.deepStrictEqual(probe.log, ["pre", "approval", "guard", "post", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, "allowed-once")])))
  })

  it.scoped("PREC-2 aborted during gate: pre, guards, post, finalizer, notification", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPreExecute((_exec, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["pre", "guard", "post", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 aborted during gate with ask: pre, approval, guards, post, finalizer, notification", () =>
    askWhileAborting("allowed-once", {}, (probe, result) => {
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["pre", "approval", "guard", "post", "fin", "observe"])
    }))

  it.scoped("PREC-2 wrapper short-circuit: pre, guards, around, post, finalizer, notification (no body)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onExecute(() => Effect.succeed({ isError: false, value: "cached", content: [] } as ToolResult))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, echoed("cached"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "post", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 wrapper throws (after the body ran): no post, finalizer and notification still run", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onExecute((_exec, next) => Effect.zipRight(next, Effect.fail(new Error("wrapper broke"))))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("wrapper broke"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "body", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 unknown name: everything but the body and the finalizer (none captured)", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const scope = yield* Effect.scope
      yield* tools.onPreExecute((exec, next) =>
        exec.callId === "c1"
          ? Effect.zipRight(Scope.extend(tools.register(probeTool(probe)), scope).pipe(Effect.orDie), next)
          : next
      )
      const late = yield* execute({ callId: "c1", name: "echo", arguments: { text: "late" } })
      assert.deepStrictEqual(late, echoed("late"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "body", "post", "observe"])
      assertObservedOnce(probe, late)
      const ghost = yield* execute({ callId: "c2", name: "ghost", arguments: {} })
      assert.deepStrictEqual(ghost, unknownTool("ghost"))
      assert.strictEqual(probe.count("body"), 1)
      assert.strictEqual(probe.count("fin"), 0)
      assert.strictEqual(probe.count("post"), 2)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 normal dispatch: every stage once, in order", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, echoed("hi"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "body", "post", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PREC-2 post listener throws: every stage, the error is final", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPostExecute(() => Effect.fail(new Error("post hook broke")))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, errorResult("post hook broke"))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "body", "post", "fin", "observe"])
      assertObservedOnce(probe, result)
    }).pipe(Effect.provide(Presets.layerTest())))
})
