/**
 * The streaming agent loop (streamText) and cancellation of the loop: event order, streamed
 * argument text, interruption reaching a running body, the caller's signal.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { Presets } from "../layers/index.js"
import * as AgentLoop from "../src/AgentLoop.js"
import type { RunContext } from "../src/Execution.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import { defineTool } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import { ABORTED, ABORTED_BEFORE_DISPATCH, echo, rawTool, text } from "./fixtures/runtime.js"
import * as Scripted from "./fixtures/scriptedModel.js"

const withModel = (script: ReadonlyArray<Scripted.ScriptEntry>) => {
  const model = Scripted.make(script)
  return { model, layer: Layer.merge(Presets.layerTest(), model.layer) }
}

const call = (id: string, name: string, args: string): Scripted.ScriptedCall => ({ id, name, arguments: args })

const typedEcho = defineTool({
  name: "echo",
  description: "Echo text.",
  parameters: { text: { type: "string" } },
  output: { schema: { type: "string" }, render: (_args, value) => text(value) },
  execute: ({ text }) => Effect.succeed(typeof text === "string" ? text : "")
})

const records = Effect.map(ToolCallLog.contents, (contents) => contents.records)

const describeEvent = (event: AgentLoop.Event): string => {
  switch (event._tag) {
    case "StepStarted":
      return `start ${event.step}`
    case "ModelPart":
      return event.part.type === "text-delta" ? `delta ${JSON.stringify(event.part.delta)}` : event.part.type
    case "ToolCall":
      return `call ${event.call.callId}`
    case "Committed":
      return `commit ${event.commit.callId}`
    case "StepEnded":
      return `end ${event.step.step}`
    case "Finished":
      return `finished ${event.summary.stopReason}`
  }
}

/** A body that waits for its signal to abort, then reports it and ends. */
const waitsForAbort = (started: Deferred.Deferred<void>, seen: { aborted: boolean; ended: boolean }) =>
  rawTool("wait", (_args, ctx: RunContext) =>
    Effect.zipRight(
      Deferred.succeed(started, undefined),
      Effect.async<string>((resume) => {
        const done = () => {
          seen.aborted = ctx.signal.aborted
          seen.ended = true
          resume(Effect.succeed("stopped"))
        }
        if (ctx.signal.aborted) return done()
        ctx.signal.addEventListener("abort", done, { once: true })
      }).pipe(Effect.uninterruptible)
    ))

describe("AgentLoop.stream", () => {
  it.scoped("stream: per step StepStarted, the model's parts, ToolCall per call, Committed per result in model order, StepEnded; then Finished", () => {
    const { layer } = withModel([
      { text: "two echoes", calls: [call("c1", "echo", "{\"text\":\"a\"}"), call("c2", "echo", "{\"text\":\"b\"}")] },
      { text: "all done" }
    ])
    return Effect.gen(function*() {
      yield* (yield* ToolRegistry).register(echo({ isConcurrencySafe: () => true }))
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(AgentLoop.stream({ agent: "main", prompt: "go" })))
      assert.deepStrictEqual(events.map(describeEvent), [
        "start 1",
        "text-start",
        "delta \"two \"",
        "delta \"echoes\"",
        "text-end",
        "tool-params-start",
        "tool-params-delta",
        "tool-params-end",
        "tool-params-start",
        "tool-params-delta",
        "tool-params-end",
        "finish",
        "call c1",
        "call c2",
        "commit c1",
        "commit c2",
        "end 1",
        "start 2",
        "text-start",
        "delta \"all \"",
        "delta \"done\"",
        "text-end",
        "finish",
        "end 2",
        "finished stop"
      ])
      const finished = events[events.length - 1]!
      assert.strictEqual(finished._tag === "Finished" && finished.summary.text, "all done")
      assert.strictEqual(finished._tag === "Finished" && finished.summary.steps[0]!.text, "two echoes")
    }).pipe(Effect.provide(layer))
  })

  it.scoped("SCHED-1 / SCHED-7: the streamed argument text is what the scheduler and the tool/call record get, byte for byte", () => {
    const { layer, model } = withModel([
      { calls: [call("c1", "echo", "{ \"text\" :  \"spaced\" }"), call("c2", "echo", ""), call("c3", "echo", "{\"text\": \"cut")] },
      { text: "ok" }
    ])
    return Effect.gen(function*() {
      yield* (yield* ToolRegistry).register(typedEcho)
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(AgentLoop.stream({ agent: "main", prompt: "go" })))
      const log = yield* records
      assert.deepStrictEqual(log.flatMap((r) => r._tag === "tool/call" ? [r.arguments] : []), [
        "{ \"text\" :  \"spaced\" }",
        "",
        "{\"text\": \"cut"
      ])
      const commits = events.flatMap((e) => e._tag === "Committed" ? [e.commit.result] : [])
      assert.deepStrictEqual(commits.slice(0, 2).map((r) => r.content), [text("spaced"), text("")])
      assert.deepStrictEqual(commits[2]!.isError && commits[2]!.error.info?.code, "INVALID_ARGS")
      assert.deepStrictEqual(Scripted.toolResults(model.requests[1]!).map((r) => [r.id, r.isFailure]), [
        ["c1", false],
        ["c2", false],
        ["c3", true]
      ])
    }).pipe(Effect.provide(layer))
  })

  it.scoped("SCHED-1: in a stream, a call to a tool the model was not offered still reaches the scheduler (UNKNOWN_TOOL)", () => {
    const { layer, model } = withModel([{ calls: [call("c1", "ghost", "{}")] }, { text: "ok" }])
    return Effect.gen(function*() {
      yield* (yield* ToolRegistry).register(echo())
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(AgentLoop.stream({ agent: "main", prompt: "go" })))
      const commit = events.find((e) => e._tag === "Committed")
      assert.strictEqual(commit?._tag === "Committed" && commit.commit.result.content[0]!.type === "text" && commit.commit.result.content[0]!.text, "Error: unknown tool \"ghost\"")
      assert.strictEqual(model.requests.length, 2)
    }).pipe(Effect.provide(layer))
  })
})

describe("AgentLoop cancellation", () => {
  it.scoped("D-14 / D-16: interrupting the loop's fiber aborts the running body's signal; when interrupt returns no body runs and every call has its record", () => {
    const seen = { aborted: false, ended: false }
    const { layer, model } = withModel([
      { calls: [call("c1", "wait", "{}"), call("c2", "wait", "{}")] },
      { text: "never asked" }
    ])
    return Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      yield* (yield* ToolRegistry).register(waitsForAbort(started, seen))
      const fiber = yield* Effect.fork(AgentLoop.run({ agent: "main", prompt: "wait" }))
      yield* Deferred.await(started)
      assert.isFalse(seen.ended)
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.deepStrictEqual(seen, { aborted: true, ended: true })
      const log = yield* records
      assert.deepStrictEqual(log.map((r) => `${r._tag} ${"callId" in r ? r.callId : ""}`), [
        "tool/call c1",
        "tool/result c1",
        "tool/call c2",
        "tool/result c2"
      ])
      const results = log.flatMap((r) => r._tag === "tool/result" ? [r.content] : [])
      assert.deepStrictEqual(results, [ABORTED.content, ABORTED_BEFORE_DISPATCH.content])
      assert.strictEqual(model.requests.length, 1)
    }).pipe(Effect.provide(layer))
  })

  it.scoped("interrupting the loop while the model request is in flight ends it with no record", () => {
    const { layer } = withModel([() => Effect.never])
    return Effect.gen(function*() {
      yield* (yield* ToolRegistry).register(echo())
      const fiber = yield* Effect.fork(Stream.runCollect(AgentLoop.stream({ agent: "main", prompt: "hang" })))
      yield* Effect.yieldNow()
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.deepStrictEqual(yield* records, [])
    }).pipe(Effect.provide(layer))
  })

  it.scoped("signal: aborting the caller's signal stops the batch (never-started calls ABORTED_BEFORE_DISPATCH) and ends the run with aborted", () => {
    const seen = { aborted: false, ended: false }
    const controller = new AbortController()
    const { layer, model } = withModel([
      { calls: [call("c1", "wait", "{}"), call("c2", "wait", "{}")] },
      { text: "never asked" }
    ])
    return Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      yield* (yield* ToolRegistry).register(waitsForAbort(started, seen))
      const fiber = yield* Effect.fork(AgentLoop.run({ agent: "main", prompt: "wait", signal: controller.signal }))
      yield* Deferred.await(started)
      controller.abort()
      const summary = yield* Fiber.join(fiber)
      assert.strictEqual(summary.stopReason, "aborted")
      assert.isTrue(summary.steps[0]!.aborted)
      assert.deepStrictEqual(summary.steps[0]!.results.map((r) => r.result), [ABORTED, ABORTED_BEFORE_DISPATCH])
      assert.deepStrictEqual(seen, { aborted: true, ended: true })
      assert.strictEqual(model.requests.length, 1)
    }).pipe(Effect.provide(layer))
  })

  it.scoped("signal: an abort during the model request ends the run with aborted and no step", () => {
    const controller = new AbortController()
    const { layer } = withModel([() => Effect.sync(() => controller.abort()).pipe(Effect.zipRight(Effect.never))])
    return Effect.gen(function*() {
      const summary = yield* AgentLoop.run({ agent: "main", prompt: "hang", signal: controller.signal })
      assert.strictEqual(summary.stopReason, "aborted")
      assert.deepStrictEqual(summary.steps, [])
    }).pipe(Effect.provide(layer))
  })
})
