/**
 * The approval contract (src/Approval.ts) and its Layers (layers/Approval.ts), tested directly
 * against the service (the pipeline side is in ToolRuntime.approval.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Queue } from "effect"
import * as ApprovalLayers from "../layers/Approval.js"
import * as Approval from "../src/Approval.js"
import { isPending } from "./fixtures/runtime.js"

const request = (signal: AbortSignal = new AbortController().signal, reason?: string): Approval.ApprovalRequest =>
  reason === undefined
    ? { agent: "a", toolName: "echo", callId: "c1", signal }
    : { agent: "a", toolName: "echo", callId: "c1", reason, signal }

const ask = (req: Approval.ApprovalRequest = request()) =>
  Effect.flatMap(Approval.Approval, (service) => service.request(req))

describe("Approval (contract)", () => {
  it("APPR-4: the four outcomes, in order, and the guard", () => {
    assert.deepStrictEqual(Approval.outcomes, ["allowed-once", "rejected", "cancelled", "unavailable"])
    for (const outcome of Approval.outcomes) assert.isTrue(Approval.isOutcome(outcome))
    for (const other of ["allowed", "ALLOWED-ONCE", "", null, undefined, 1, { outcome: "rejected" }]) {
      assert.isFalse(Approval.isOutcome(other))
    }
  })

  it.effect("make wraps a request function", () =>
    Effect.gen(function*() {
      const seen: Array<Approval.ApprovalRequest> = []
      const service = Approval.make((req) =>
        Effect.sync(() => {
          seen.push(req)
          return "rejected" as const
        })
      )
      const req = request(undefined, "why")
      assert.strictEqual(yield* service.request(req), "rejected")
      assert.deepStrictEqual(seen, [req])
    }))
})

describe("Approval layers", () => {
  const constants: ReadonlyArray<readonly [string, Layer.Layer<Approval.Approval>, Approval.ApprovalOutcome]> = [
    ["layerDenyAll", ApprovalLayers.layerDenyAll, "rejected"],
    ["layerUnavailable", ApprovalLayers.layerUnavailable, "unavailable"],
    ["layerApproveAll", ApprovalLayers.layerApproveAll, "allowed-once"],
    ["layerConstant(cancelled)", ApprovalLayers.layerConstant("cancelled"), "cancelled"]
  ]
  for (const [name, layer, outcome] of constants) {
    it.effect(`${name} answers every request \`${outcome}\``, () =>
      Effect.gen(function*() {
        assert.strictEqual(yield* ask(), outcome)
        assert.strictEqual(yield* ask(), outcome)
      }).pipe(Effect.provide(layer)))
  }

  it.effect("layerScripted answers in order, records requests (signals included), then `unavailable`", () =>
    Effect.gen(function*() {
      const signal = new AbortController().signal
      const first = request(signal, "r1")
      const second = request(signal)
      const third = request(signal)
      assert.strictEqual(yield* ask(first), "allowed-once")
      assert.strictEqual(yield* ask(second), "cancelled")
      assert.strictEqual(yield* ask(third), "unavailable")
      const scripted = yield* ApprovalLayers.ScriptedApprovals
      const seen = yield* scripted.requests
      assert.deepStrictEqual(seen, [first, second, third])
      assert.strictEqual(seen[0]!.signal, signal)
    }).pipe(Effect.provide(ApprovalLayers.layerScripted([
      "allowed-once",
      (req) => Effect.succeed(req.reason === undefined ? "cancelled" : "rejected")
    ]))))

  it.effect("layerScripted propagates a failing answer (the runtime maps it to `unavailable`, D-7)", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(ask())
      assert.isTrue(Exit.isFailure(exit))
    }).pipe(Effect.provide(ApprovalLayers.layerScripted([() => Effect.fail(new Error("down"))]))))

  describe("layerInteractive", () => {
    it.scoped("offers the request and resolves with the application's answer; a second answer is refused", () =>
      Effect.gen(function*() {
        const { pending } = yield* ApprovalLayers.InteractiveApprovals
        const req = request(undefined, "please")
        const fiber = yield* Effect.fork(ask(req))
        const offered = yield* Queue.take(pending)
        assert.strictEqual(offered.request, req)
        assert.isTrue(yield* isPending(fiber))
        assert.isTrue(yield* offered.answer("rejected"))
        assert.strictEqual(yield* Fiber.join(fiber), "rejected")
        assert.isFalse(yield* offered.answer("allowed-once"))
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("APPR-6: a caller abort while pending resolves `cancelled`; a late answer is refused", () =>
      Effect.gen(function*() {
        const { pending } = yield* ApprovalLayers.InteractiveApprovals
        const controller = new AbortController()
        const fiber = yield* Effect.fork(ask(request(controller.signal)))
        const offered = yield* Queue.take(pending)
        controller.abort()
        assert.strictEqual(yield* Fiber.join(fiber), "cancelled")
        assert.isFalse(yield* offered.answer("allowed-once"))
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("APPR-6: an already-aborted signal is `cancelled` at once", () =>
      Effect.gen(function*() {
        const controller = new AbortController()
        controller.abort()
        assert.strictEqual(yield* ask(request(controller.signal)), "cancelled")
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("interrupting the wait marks the request cancelled (a late answer is refused)", () =>
      Effect.gen(function*() {
        const { pending } = yield* ApprovalLayers.InteractiveApprovals
        const fiber = yield* Effect.fork(ask())
        const offered = yield* Queue.take(pending)
        yield* Fiber.interrupt(fiber)
        assert.isFalse(yield* offered.answer("allowed-once"))
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("requests are queued in arrival order", () =>
      Effect.gen(function*() {
        const { pending } = yield* ApprovalLayers.InteractiveApprovals
        const a = yield* Effect.fork(ask({ ...request(), callId: "a" }))
        yield* isPending(a)
        const b = yield* Effect.fork(ask({ ...request(), callId: "b" }))
        const first = yield* Queue.take(pending)
        const second = yield* Queue.take(pending)
        assert.deepStrictEqual([first.request.callId, second.request.callId], ["a", "b"])
        yield* second.answer("rejected")
        yield* first.answer("allowed-once")
        assert.deepStrictEqual([yield* Fiber.join(a), yield* Fiber.join(b)], ["allowed-once", "rejected"])
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))
  })
})
