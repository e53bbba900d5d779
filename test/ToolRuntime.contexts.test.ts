/**
 * Deferred contexts and conclusion: CTX-1…3 (with D-13, which replaces the spec's CTX-3 "no"
 * rows for wrapper, post and finishing failures), CTX-6 / OUT-7.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import * as Presets from "../layers/Presets.js"
import type { RunContext } from "../src/Execution.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED,
  ABORTED_BEFORE_DISPATCH,
  awaitTimer,
  closeNow,
  context,
  echo,
  echoed,
  errorResult,
  execute,
  info,
  message,
  outputError,
  registerScoped,
  text,
  timedOut,
  withContexts
} from "./fixtures/runtime.js"

/** A tool whose body defers `body-1`, `body-2`, then runs `then`. */
const deferring = (
  then: (ctx: RunContext) => Effect.Effect<unknown, unknown> = () => Effect.succeed("ok"),
  overrides: Partial<ToolDefinition<never>> = {}
): ToolDefinition<never> =>
  echo({
    execute: (_args, ctx) =>
      Effect.zipRight(
        Effect.sync(() => {
          ctx.deferContext(message("body-1"))
          ctx.deferContext(message("body-2"))
        }),
        Effect.suspend(() => then(ctx))
      ),
    ...overrides
  })

const BODY = [context("ctx-1", "body-1"), context("ctx-2", "body-2")]

describe("CTX-1 / D-13 (deferral)", () => {
  it.scoped("CTX-1: contexts keep their id, source and order; ids are minted when absent", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        execute: (_args, ctx) =>
          Effect.sync(() => {
            ctx.deferContext({ content: text("a"), source: { kind: "reminder", level: 2 } })
            ctx.deferContext({ id: "mine", content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] })
            return "v"
          })
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(echoed("v"), [
        { id: "ctx-1", role: "user", content: text("a"), source: { kind: "reminder", level: 2 } },
        { id: "mine", role: "user", content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }
      ]))
    }).pipe(Effect.provide(Presets.layerTest())))

  const invalid: ReadonlyArray<readonly [string, unknown, string]> = [
    ["not an object", "hello", "a deferred context must be a lossless JSON user message object"],
    ["not lossless", { content: text("x"), extra: () => 1 }, "a deferred context must be a lossless JSON user message object"],
    ["bad content", { content: "x" }, "content must be an array of content blocks"],
    ["bad id", { id: 3, content: [] }, "a deferred context id must be a string"],
    ["bad source", { content: [], source: { level: 1 } }, "a deferred context source must be an object with a string kind"]
  ]
  for (const [label, bad, reason] of invalid) {
    it.scoped(`D-13: an invalid deferred context (${label}) fails the body right there`, () =>
      Effect.gen(function*() {
        const tools = yield* ToolRegistry
        const after: Array<string> = []
        yield* tools.register(echo({
          execute: (_args, ctx) =>
            Effect.sync(() => {
              ctx.deferContext(message("good"))
              ctx.deferContext(bad as never)
              after.push("continued")
              return "v"
            })
        }))
        const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
        assert.deepStrictEqual(
          result,
          withContexts(errorResult(`invalid deferred context: ${reason}`), [context("ctx-1", "good")])
        )
        assert.deepStrictEqual(after, [])
      }).pipe(Effect.provide(Presets.layerTest())))
  }

  it.scoped("D-13: a deferred message is snapshotted when deferred (later mutation has no effect)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        execute: (_args, ctx) =>
          Effect.sync(() => {
            const mutable = { content: [{ type: "text" as const, text: "before" }] }
            ctx.deferContext(mutable)
            mutable.content[0]!.text = "after"
            return "v"
          })
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(echoed("v"), [context("ctx-1", "before")]))
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("CTX-2 (merge order)", () => {
  it.scoped("CTX-2: body-deferred, then wrapper-carried, then the post decision's contexts", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring(() => Effect.succeed("v")))
      yield* tools.onExecute((_exec, next) =>
        Effect.map(next, (result) =>
          ({ isError: false, value: result.isError ? "" : result.value, content: [], additionalContexts: [message("wrapper")] }) as unknown as ToolResult)
      )
      yield* tools.onPostExecute(() => Effect.succeed(PostDecision.Accept({ additionalContexts: [message("post")] })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(
        result.additionalContexts?.map((c) => c.content[0]!.type === "text" ? c.content[0]!.text : ""),
        ["body-1", "body-2", "wrapper", "post"]
      )
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("CTX-3 (survival matrix, with D-13)", () => {
  it.scoped("CTX-3 row: body success, accepted → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(echoed("ok"), BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row: body throws → kept (those deferred before the throw)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring(() => Effect.fail(new Error("exploded"))))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(errorResult("exploded"), BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row: cancellation replaces a success (AROUND-8) → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(deferring())
      yield* tools.onExecute((_exec, next) => Effect.tap(next, () => Effect.sync(() => controller.abort())))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, withContexts(ABORTED, BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row: cancellation replaces a success (POST-8) → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(deferring())
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, withContexts(ABORTED, BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row: cancellation replaces a success (BODY-6) → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(deferring(() => Effect.uninterruptible(Effect.sync(() => {
        controller.abort()
        return "late"
      }))))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, withContexts(ABORTED, BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row: post-execute block → only the block's contexts", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      yield* tools.onPostExecute(() =>
        Effect.succeed(PostDecision.Block({ feedback: text("no"), additionalContexts: [message("blocker")] }))
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, {
        isError: true,
        error: { message: "no" },
        content: text("no"),
        additionalContexts: [context("ctx-3", "blocker")]
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row: post-execute block without contexts → none at all", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      yield* tools.onPostExecute(() => Effect.succeed(PostDecision.Block({ feedback: text("no") })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: true, error: { message: "no" }, content: text("no") })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row (D-13): wrapper throws → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      yield* tools.onExecute((_exec, next) => Effect.zipRight(next, Effect.fail(new Error("wrapper broke"))))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(errorResult("wrapper broke"), BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row (D-13): wrapper-result normalization throws (AROUND-6) → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      yield* tools.onExecute((_exec, next) =>
        Effect.as(next, { isError: false, value: 42, content: [] } as unknown as ToolResult)
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(outputError("echo", "\"value\" must be a string"), BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row (D-13): post listener throws → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      yield* tools.onPostExecute(() => Effect.fail(new Error("post hook broke")))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(errorResult("post hook broke"), BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row (D-13): malformed post decision → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      yield* tools.onPostExecute(() => Effect.succeed({ _tag: "Maybe" } as unknown as PostDecision))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(
        result,
        withContexts(errorResult("tools/post-execute returned a malformed decision: {\"_tag\":\"Maybe\"}"), BODY)
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row (D-13): POST-3 both replacements → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      yield* tools.onPostExecute(() =>
        Effect.succeed({ _tag: "Accept", content: text("c"), value: "v" } as unknown as PostDecision)
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(
        result,
        withContexts(errorResult("tools/post-execute accept decision cannot replace both value and content"), BODY)
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row (D-13): POST-5 value replacement failure (vanished tool) → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const scope = yield* registerScoped(deferring())
      yield* tools.onPostExecute(() =>
        Effect.sync(() => {
          closeNow(scope)
          return PostDecision.Accept({ value: "x" })
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(
        result,
        withContexts(errorResult("unknown tool \"echo\"", info("ToolNotFoundError", "UNKNOWN_TOOL")), BODY)
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row (D-13): finalizer throws → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring(undefined, {
        finalizeContent: () => {
          throw new Error("finalizer violated its total contract")
        }
      }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(errorResult("finalizer violated its total contract"), BODY))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row (D-13): result materialization failure → kept", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      yield* tools.onExecute((_exec, next) =>
        Effect.as(next, {
          isError: true,
          error: { message: "authored", info: { name: 1 } },
          content: text("x")
        } as unknown as ToolResult)
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.isTrue(result.isError)
      assert.deepStrictEqual(result.additionalContexts, BODY)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CTX-3 row: denial / pre-stage cancellation → nothing to merge (the body never ran)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(deferring())
      const mode = { value: "deny" }
      yield* tools.onPreExecute(() =>
        Effect.succeed(mode.value === "deny" ? PreDecision.Deny({ reason: "no" }) : PreDecision.Cancel())
      )
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), errorResult("no"))
      mode.value = "cancel"
      assert.deepStrictEqual(yield* execute({ callId: "c2", name: "echo", arguments: {} }), ABORTED_BEFORE_DISPATCH)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("CTX-6 / OUT-7 (conclusion only on a final success)", () => {
  const concluding = (then: (ctx: RunContext) => Effect.Effect<unknown, unknown>, overrides: Partial<ToolDefinition<never>> = {}) =>
    echo({
      execute: (_args, ctx) => Effect.zipRight(Effect.sync(() => ctx.concludeTurn()), Effect.suspend(() => then(ctx))),
      ...overrides
    })

  it.scoped("OUT-7: a success after concludeTurn carries concludesTurn: true", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(concluding(() => Effect.succeed("done")))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: false, value: "done", content: text("done"), concludesTurn: true })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-7: no conclusion after a throw", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(concluding(() => Effect.fail(new Error("exploded"))))
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: {} }), errorResult("exploded"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-7: no conclusion after an abort", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      yield* tools.register(concluding(() => Effect.succeed("done")))
      yield* tools.onExecute((_exec, next) => Effect.tap(next, () => Effect.sync(() => controller.abort())))
      assert.deepStrictEqual(
        yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }),
        ABORTED
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-7: no conclusion after a timeout", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const started = yield* Deferred.make<void>()
      yield* tools.register(concluding(() => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never), {
        timeoutMs: 50
      }))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {} }))
      yield* Deferred.await(started)
      yield* awaitTimer
      yield* TestClock.adjust("50 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(50))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-7: no conclusion after invalid output", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(concluding(() => Effect.succeed(42)))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.isTrue(result.isError)
      assert.isFalse("concludesTurn" in result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-7: no conclusion after a block or a post failure", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(concluding(() => Effect.succeed("done")))
      const mode = { value: "block" }
      yield* tools.onPostExecute(() =>
        mode.value === "block"
          ? Effect.succeed(PostDecision.Block({ feedback: text("no") }))
          : Effect.fail(new Error("post broke"))
      )
      const block = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(block, { isError: true, error: { message: "no" }, content: text("no") })
      mode.value = "fail"
      assert.deepStrictEqual(yield* execute({ callId: "c2", name: "echo", arguments: {} }), errorResult("post broke"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-7: a wrapper-authored success re-reads the marker the body set", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(concluding(() => Effect.succeed("done")))
      yield* tools.onExecute((_exec, next) =>
        Effect.as(next, { isError: false, value: "wrapped", content: [] } as unknown as ToolResult)
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: false, value: "wrapped", content: text("wrapped"), concludesTurn: true })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-7: a concludeTurn from a retried first attempt still marks the final success", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      let attempts = 0
      yield* tools.register(echo({
        execute: (_args, ctx) =>
          Effect.suspend(() => {
            attempts++
            if (attempts === 1) {
              ctx.concludeTurn()
              return Effect.fail(new Error("retry me"))
            }
            return Effect.succeed("second")
          })
      }))
      yield* tools.onExecute((_exec, next) => Effect.flatMap(next, (result) => result.isError ? next : Effect.succeed(result)))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: false, value: "second", content: text("second"), concludesTurn: true })
    }).pipe(Effect.provide(Presets.layerTest())))
})
