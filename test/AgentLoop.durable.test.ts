/**
 * The durable agent loop (issue 28 item 7, D-22): each model step is recorded and each step's
 * calls run as a durable batch, so running the same turn again replays the answered steps without
 * asking the model, returns the recorded batches without running their bodies, and a turn cut
 * while a batch ran resumes that batch and goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import * as AgentLoop from "../src/AgentLoop.js"
import * as DurableTurn from "../src/DurableTurn.js"
import { appOver, libsqlEngine, memoryEngine, Probe, tempDatabase, toolsOf } from "./fixtures/durable.js"
import * as Scripted from "./fixtures/scriptedModel.js"

const call = (id: string, name: string, args: Record<string, string>): Scripted.ScriptedCall => ({
  id,
  name,
  arguments: JSON.stringify(args)
})

const turn = { sessionId: "s1", turnId: "t1" }

const runTurn = Effect.gen(function*() {
  const durable = yield* DurableTurn.loopSteps(turn)
  return yield* AgentLoop.run({ agent: "main", prompt: "read a then b", durable })
})

describe("AgentLoop durable mode (D-22)", () => {
  it.live("D-22: the same turn run again asks the model nothing and runs no body: the summary is the same", () => {
    const probe = new Probe()
    const model = Scripted.make([
      { text: "reading a", calls: [call("c1", "read", { path: "a" })] },
      { text: "reading b", calls: [call("c2", "read", { path: "b" })] },
      { text: "done" }
    ])
    return Effect.gen(function*() {
      const first = yield* runTurn
      assert.strictEqual(model.requests.length, 3)
      assert.deepStrictEqual(probe.runs.map((r) => r.arg), ["a", "b"])
      const again = yield* runTurn
      assert.strictEqual(model.requests.length, 3, "the model was not asked again")
      assert.deepStrictEqual(probe.runs.map((r) => r.arg), ["a", "b"], "no body ran again")
      assert.strictEqual(again.text, "done")
      assert.deepStrictEqual(again.steps.map((s) => s.results.map((r) => r.result)), first.steps.map((s) => s.results.map((r) => r.result)))
      assert.deepStrictEqual(again.steps.map((s) => s.text), ["reading a", "reading b", "done"])
    }).pipe(Effect.provide(Layer.merge(appOver(memoryEngine, toolsOf(probe)), model.layer)))
  })

  it.live("D-22: a turn cut while a step's batch ran resumes it; the answered steps are not asked again", () => {
    const probe = new Probe()
    const db = tempDatabase()
    const model = Scripted.make([
      { text: "reading a", calls: [call("c1", "read", { path: "a" })] },
      { text: "waiting", calls: [call("c2", "idempotent", { id: "w" })] },
      { text: "done" }
    ])
    const app = () => Layer.merge(appOver(libsqlEngine(db.url), toolsOf(probe)), model.layer)
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const first = yield* Layer.buildWithScope(app(), scope)
      const fiber = yield* Effect.fork(runTurn.pipe(Effect.provide(first)))
      yield* Deferred.await(probe.startedOf("w"))
      assert.strictEqual(model.requests.length, 2)
      yield* Scope.close(scope, Exit.void)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.succeed(probe.gate("w"), undefined)
      const summary = yield* Effect.scoped(Effect.flatMap(Layer.build(app()), (context) => runTurn.pipe(Effect.provide(context))))
      assert.strictEqual(model.requests.length, 3, "steps 1 and 2 were replayed; only step 3 was asked")
      assert.deepStrictEqual(probe.runs.map((r) => `${r.tool}:${r.arg}`), ["read:a", "idempotent:w", "idempotent:w"])
      assert.strictEqual(probe.runs[1]!.key, probe.runs[2]!.key, "the cut idempotent body ran again with its key")
      assert.strictEqual(summary.text, "done")
      assert.deepStrictEqual(summary.steps[1]!.results[0]!.result.content, [{ type: "text", text: "idempotent w" }])
    }).pipe(Effect.ensuring(Effect.sync(db.cleanup)))
  })
})
