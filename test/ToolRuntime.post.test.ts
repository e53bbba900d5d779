/**
 * Post-execute policy: POST-1…9 (with D-2 fail-closed decisions and D-3 content validation).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Presets from "../layers/Presets.js"
import type { Content } from "../src/Content.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { PostExecuteHook } from "../src/Policy.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolResultModule from "../src/ToolResult.js"
import {
  ABORTED,
  ABORTED_BEFORE_DISPATCH,
  context,
  echo,
  echoed,
  errorResult,
  execute,
  instrument,
  message,
  outputError,
  rawTool,
  setup,
  text,
  withContexts
} from "./fixtures/runtime.js"

const decide = (decision: unknown): PostExecuteHook => () => Effect.succeed(decision as PostDecision)

const blocked = (message: string, content: Content): ToolResult => ({ isError: true, error: { message }, content })

const objectTool = rawTool("obj", () => Effect.succeed({ text: "body" }), {
  output: {
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["text"],
      properties: { text: { type: "string" } }
    },
    render: (_args, value) => text(`render:${(value as { readonly text: string }).text}`),
    presentationMeta: (_args, value) => ({ projected: (value as { readonly text: string }).text })
  }
})

describe("POST-1 (every post-result reaches post-execute)", () => {
  it.scoped("POST-1: denials, cancellations, body errors, unknown tools, invalid output and timeouts all reach post", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.register(rawTool("boom", () => Effect.fail(new Error("exploded"))))
      yield* tools.register(rawTool("bad", () => Effect.succeed(undefined), { output: { schema: {}, render: () => [] } }))
      const mode = { value: "" }
      yield* tools.onPreExecute((_exec, next) =>
        mode.value === "deny"
          ? Effect.succeed(PreDecision.Deny({ reason: "no" }))
          : mode.value === "cancel"
          ? Effect.succeed(PreDecision.Cancel())
          : next
      )
      yield* tools.onExecute((_exec, next) =>
        mode.value === "timeout" ? Effect.succeed(ToolResultModule.timedOut(5)) : next
      )
      const calls: ReadonlyArray<readonly [string, string]> = [
        ["deny", "echo"],
        ["cancel", "echo"],
        ["", "boom"],
        ["", "ghost"],
        ["", "bad"],
        ["timeout", "echo"],
        ["", "echo"]
      ]
      for (const [m, name] of calls) {
        mode.value = m
        yield* execute({ callId: name, name, arguments: {} })
      }
      assert.deepStrictEqual(
        probe.postSeen.map((result) => result.isError ? result.error.info?.code ?? result.error.message : "success"),
        ["no", "ABORTED_BEFORE_DISPATCH", "exploded", "UNKNOWN_TOOL", "INVALID_TOOL_OUTPUT", "TOOL_TIMEOUT", "success"]
      )
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-1: the default accept returns the incoming canonical success unchanged (same frozen object)", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, echoed("hi"))
      assert.strictEqual(probe.postSeen[0], result)
      assert.isTrue(Object.isFrozen(probe.postSeen[0]))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-POST-011: a body failure passed through by a wrapper still reaches post", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("boom", () => Effect.fail(new Error("exploded"))))
      yield* tools.onExecute((_exec, next) => next)
      const result = yield* execute({ callId: "c1", name: "boom", arguments: {} })
      assert.deepStrictEqual(result, errorResult("exploded"))
      assert.deepStrictEqual(probe.postSeen.map((r) => r.isError), [true])
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("POST-2 (block)", () => {
  it.scoped("POST-2 / T-POST-010: a block on a success is the ERR-3 error with the raw feedback as content", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPostExecute(decide(PostDecision.Block({ feedback: text("output rejected: try again") })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, blocked("output rejected: try again", text("output rejected: try again")))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-2 / T-CTX-001 / T-CTX-004: a block keeps only its own contexts (on errors too)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("boom", (_args, ctx) =>
        Effect.zipRight(Effect.sync(() => ctx.deferContext(message("nested"))), Effect.fail(new Error("exploded")))))
      const block = { on: false }
      yield* tools.onPostExecute((_exec, _result, next) =>
        block.on
          ? Effect.succeed(PostDecision.Block({ feedback: text("rejected"), additionalContexts: [message("blocker")] }))
          : next
      )
      const failed = yield* execute({ callId: "c1", name: "boom", arguments: {} })
      assert.deepStrictEqual(failed, withContexts(errorResult("exploded"), [context("ctx-1", "nested")]))
      block.on = true
      const result = yield* execute({ callId: "c2", name: "boom", arguments: {} })
      assert.deepStrictEqual(result, withContexts(blocked("rejected", text("rejected")), [context("ctx-3", "blocker")]))
    }).pipe(Effect.provide(Presets.layerTest())))

  const messages: ReadonlyArray<readonly [string, Content, string]> = [
    ["empty feedback", [], "tool result blocked by post-execute policy"],
    ["reasoning only", [{ type: "reasoning", text: "thinking" }], "[reasoning content]"],
    ["an image", [{ type: "image", data: "AAAA", mimeType: "image/png" }], "[image content]"],
    [
      "text and image",
      [{ type: "text", text: "a" }, { type: "image", data: "AAAA", mimeType: "image/png" }, { type: "text", text: "b" }],
      "a\n[image content]\nb"
    ],
    ["an empty text", [{ type: "text", text: "" }], "tool result blocked by post-execute policy"]
  ]
  for (const [label, feedback, expected] of messages) {
    it.scoped(`ERR-3 / T-POST-005: the block message for ${label}`, () =>
      Effect.gen(function*() {
        const { tools } = yield* setup
        yield* tools.onPostExecute(decide(PostDecision.Block({ feedback })))
        const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
        assert.deepStrictEqual(result, blocked(expected, feedback))
      }).pipe(Effect.provide(Presets.layerTest())))
  }

  it.scoped("D-3 / T-POST-006 / issue 8 item 13c: non-lossless block feedback gives the spec's message; malformed is a final error", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const feedbacks: ReadonlyArray<unknown> = [
        [{ type: "text", text: "x", f: () => 1 }],
        [{ type: "text", text: "x", big: 1n }],
        "text",
        [{ type: "link" }]
      ]
      const messages = [
        "tool result must be losslessly JSON-serializable",
        "tool result must be losslessly JSON-serializable",
        "tools/post-execute block feedback: content must be an array of content blocks",
        "tools/post-execute block feedback: content[0].type must be \"text\", \"image\" or \"reasoning\""
      ]
      let index = 0
      yield* tools.onPostExecute(() => Effect.sync(() => PostDecision.Block({ feedback: feedbacks[index] as Content })))
      for (; index < feedbacks.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "echo", arguments: {} })
        assert.deepStrictEqual(result, errorResult(messages[index]!))
      }
      assert.strictEqual(probe.count("fin"), feedbacks.length)
      assert.strictEqual(probe.count("observe"), feedbacks.length)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("POST-3…6 (accept)", () => {
  it.scoped("POST-3 / T-POST-002: replacing both value and content is a final TypeError, even with one undefined", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const decisions: ReadonlyArray<unknown> = [
        { _tag: "Accept", content: text("c"), value: "v" },
        { _tag: "Accept", content: undefined, value: "v" },
        { _tag: "Accept", content: text("c"), value: undefined }
      ]
      let index = 0
      yield* tools.onPostExecute(() => Effect.sync(() => decisions[index] as PostDecision))
      for (; index < decisions.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "echo", arguments: {} })
        assert.deepStrictEqual(result, errorResult("tools/post-execute accept decision cannot replace both value and content"))
      }
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-4 / T-POST-001: content replacement keeps value and meta", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(objectTool)
      yield* tools.onPostExecute(decide(PostDecision.Accept({ content: text("policy content") })))
      const result = yield* execute({ callId: "c1", name: "obj", arguments: {} })
      assert.deepStrictEqual(result, {
        isError: false,
        value: { text: "body" },
        content: text("policy content"),
        meta: { projected: "body" }
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-5 / T-POST-001: value replacement is revalidated and both projections recomputed", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(objectTool)
      yield* tools.onPostExecute(decide(PostDecision.Accept({
        value: { text: "policy value" },
        additionalContexts: [{ content: text("note"), source: { kind: "policy" } }]
      })))
      const result = yield* execute({ callId: "c1", name: "obj", arguments: {} })
      assert.deepStrictEqual(result, {
        isError: false,
        value: { text: "policy value" },
        content: text("render:policy value"),
        meta: { projected: "policy value" },
        additionalContexts: [{ id: "ctx-1", role: "user", content: text("note"), source: { kind: "policy" } }]
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-5 / T-POST-002: an invalid replacement value is INVALID_TOOL_OUTPUT with no value key", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPostExecute(decide(PostDecision.Accept({ value: 1 })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, outputError("echo", "\"value\" must be a string"))
      assert.isFalse("value" in result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-5 / POST-9: replacing the value of a failed result is a final TypeError", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("boom", () => Effect.fail(new Error("exploded"))))
      yield* tools.onPostExecute(decide(PostDecision.Accept({ value: "rescued" })))
      const result = yield* execute({ callId: "c1", name: "boom", arguments: {} })
      assert.deepStrictEqual(result, errorResult("tools/post-execute cannot replace the value of a failed result"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-5: value replacement re-reads the conclusion marker", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        execute: (_args, ctx) =>
          Effect.sync(() => {
            ctx.concludeTurn()
            return "body"
          })
      }))
      yield* tools.onPostExecute(decide(PostDecision.Accept({ value: "replaced" })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: false, value: "replaced", content: text("replaced"), concludesTurn: true })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-4 / POST-9: content replacement on an error keeps it an error", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("boom", () => Effect.fail(new Error("exploded"))))
      yield* tools.onPostExecute(decide({ _tag: "Accept", content: text("softened"), isError: false }))
      const result = yield* execute({ callId: "c1", name: "boom", arguments: {} })
      assert.deepStrictEqual(result, { isError: true, error: { message: "exploded" }, content: text("softened") })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-4: an own `content: undefined` alone replaces nothing", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPostExecute(decide({ _tag: "Accept", content: undefined }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "kept" } })
      assert.deepStrictEqual(result, echoed("kept"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-3: a malformed replacement content is a final error", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPostExecute(decide({ _tag: "Accept", content: "plain string" }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.isTrue(result.isError)
      assert.isTrue(result.isError && result.error.message.startsWith("tools/post-execute accept content"))
      assert.isFalse(result.isError && "info" in result.error)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-6 / T-CTX-002: accept with only contexts keeps the result and appends them after the incoming ones", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        execute: (_args, ctx) => Effect.as(Effect.sync(() => ctx.deferContext(message("body"))), "v")
      }))
      yield* tools.onPostExecute(decide(PostDecision.Accept({ additionalContexts: [message("p1"), message("p2")] })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, withContexts(echoed("v"), [
        context("ctx-1", "body"),
        context("ctx-2", "p1"),
        context("ctx-3", "p2")
      ]))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-6 / D-2: unknown or non-object post decisions fail closed (final)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const decisions: ReadonlyArray<unknown> = [{ _tag: "Maybe" }, { kind: "accept" }, undefined, 3]
      const expected = ["{\"_tag\":\"Maybe\"}", "{\"kind\":\"accept\"}", "undefined", "3"]
      let index = 0
      yield* tools.onPostExecute(() => Effect.sync(() => decisions[index] as PostDecision))
      for (; index < decisions.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "echo", arguments: {} })
        assert.deepStrictEqual(result, errorResult(`tools/post-execute returned a malformed decision: ${expected[index]}`))
      }
      assert.strictEqual(probe.count("fin"), decisions.length)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-6: an invalid decision context is a final error naming the reason", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPostExecute(decide({ _tag: "Accept", additionalContexts: [{ content: "not blocks" }] }))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("invalid deferred context: content must be an array of content blocks"))
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("POST-7 / POST-8", () => {
  it.scoped("POST-7 / T-POST-012: a failing post listener is exactly the ERR-1 error, final", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPostExecute(() => Effect.fail(new Error("post hook broke")))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("post hook broke"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-8: an abort during post replaces a success, never an error", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo())
      yield* tools.register(rawTool("boom", () => Effect.fail(new Error("exploded"))))
      const controllers: Array<AbortController> = []
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => controllers.at(-1)!.abort()), next))
      const run = (name: string) =>
        Effect.suspend(() => {
          const controller = new AbortController()
          controllers.push(controller)
          return execute({ callId: name, name, arguments: {}, signal: controller.signal })
        })
      assert.deepStrictEqual(yield* run("echo"), ABORTED)
      assert.deepStrictEqual(yield* run("boom"), errorResult("exploded"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-8: a denial stays a denial when the caller aborts during post", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const controller = new AbortController()
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "no" })))
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, errorResult("no"))
      assert.notDeepEqual(result, ABORTED_BEFORE_DISPATCH)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("POST-9: errors are sticky — no decision turns an error into a success", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("boom", () => Effect.fail(new Error("exploded"))))
      const decisions: ReadonlyArray<unknown> = [
        PostDecision.Accept({}),
        PostDecision.Accept({ content: text("ok now") }),
        { _tag: "Accept", isError: false, value: "x" },
        PostDecision.Block({ feedback: text("still no") })
      ]
      let index = 0
      yield* tools.onPostExecute(() => Effect.sync(() => decisions[index] as PostDecision))
      for (; index < decisions.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "boom", arguments: {} })
        assert.isTrue(result.isError)
        assert.isFalse("value" in result)
      }
    }).pipe(Effect.provide(Presets.layerTest())))
})

