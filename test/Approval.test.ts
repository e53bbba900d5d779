/**
 * The approval contract (src/Approval.ts) and its Layers (layers/ApprovalLayers.ts), tested directly
 * against the service (the pipeline side is in ToolRuntime.approval.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Chunk, Context, Effect, Either, Exit, FastCheck, Fiber, Layer, Option, Runtime, Scope, Stream } from "effect"
import { getEventListeners } from "node:events"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as Approval from "../src/Approval.js"
import * as ApprovalGrants from "../src/ApprovalGrants.js"
import type * as ApprovalService from "../src/ApprovalService.js"
import * as IdGenerator from "../src/IdGenerator.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import { PreDecision } from "../src/Policy.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import {
  approvalRecords,
  ask as askService,
  askedFor,
  layerService,
  layerServiceWithGrants,
  makeRequest,
  pair
} from "./fixtures/approval.js"
import * as Hostile from "./fixtures/hostile.js"
import { ABORTED_BEFORE_DISPATCH, echo, execute, isPending, layerWithApproval } from "./fixtures/runtime.js"

const shown = {
  arguments: {},
  argumentsDigest: Approval.argumentsDigest({})!,
  visible: true,
  call: { card: "generic", title: "echo", rawInput: {} }
} as const

const request = (signal: AbortSignal = new AbortController().signal, reason?: string): Approval.ApprovalRequest =>
  reason === undefined
    ? { agent: "a", toolName: "echo", callId: "c1", signal, ...shown }
    : { agent: "a", toolName: "echo", callId: "c1", reason, signal, ...shown }

/** The reason an interactive answer was refused with (it must fail with ApprovalAnswerError). */
const refused = <R>(answered: Effect.Effect<void, ApprovalLayers.ApprovalAnswerError, R>) =>
  Effect.map(Effect.flip(answered), (error) => {
    assert.instanceOf(error, ApprovalLayers.ApprovalAnswerError)
    return error.reason
  })

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

describe("issue 10 item 2: canonical JSON and the arguments digest", () => {
  it("sorted keys by plain `<` (UTF-16 code units), no whitespace, JSON.stringify scalars", () => {
    assert.strictEqual(
      Approval.canonicalJson({ b: { d: "é\n", c: -1.5e-7 }, a: [1, "x", null, true] }),
      "{\"a\":[1,\"x\",null,true],\"b\":{\"c\":-1.5e-7,\"d\":\"é\\n\"}}"
    )
    assert.strictEqual(Approval.canonicalJson({ Z: 1, a: 2, "\u00e9": 3, "\ud83d\ude00": 4, "\uffff": 5 }), "{\"Z\":1,\"a\":2,\"é\":3,\"😀\":4,\"\uffff\":5}")
    assert.strictEqual(Approval.canonicalJson([]), "[]")
    assert.strictEqual(Approval.canonicalJson({}), "{}")
    assert.strictEqual(Approval.canonicalJson("x"), "\"x\"")
  })

  it("the digest is SHA-256 (lowercase hex) of the canonical text, independent of key order", () => {
    const digest = "b893391f5a7b7989aa2bd23728cab881e6438875746aa6d3b91e5b2a881cea48"
    assert.strictEqual(Approval.argumentsDigest({ a: [1, "x", null, true], b: { c: -1.5e-7, d: "é\n" } }), digest)
    assert.strictEqual(Approval.argumentsDigest({ b: { d: "é\n", c: -1.5e-7 }, a: [1, "x", null, true] }), digest)
    assert.strictEqual(Approval.argumentsDigest({}), "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a")
  })

  it("an own `__proto__` key is an ordinary key; a 100,000-deep value is written iteratively", () => {
    const proto = Hostile.ownProtoKey({ polluted: true })
    assert.strictEqual(Approval.canonicalJson({ z: 1, ...proto }), "{\"__proto__\":{\"polluted\":true},\"z\":1}")
    assert.strictEqual(({} as Record<string, unknown>).polluted, undefined)
    let deep: unknown = "leaf"
    for (let i = 0; i < 100_000; i++) deep = { k: deep }
    const text = Approval.canonicalJson(deep)!
    assert.strictEqual(text.length, 100_000 * 6 + 6)
    assert.match(Approval.argumentsDigest(deep)!, /^[0-9a-f]{64}$/)
  })

  for (const kind of Hostile.kinds) {
    const lossless = kind === "null prototype" || kind === "null prototype with fields" || kind === "__proto__ key"
    it(`a ${kind}: ${lossless ? "canonical JSON and a digest like a plain object" : "no canonical JSON and no digest"} (never throws)`, () => {
      const canonical = Approval.canonicalJson(Hostile.make(kind, { a: 1 }))
      const digest = Approval.argumentsDigest(Hostile.make(kind, { a: 1 }))
      if (lossless) {
        assert.isString(canonical)
        assert.match(digest!, /^[0-9a-f]{64}$/)
      } else {
        assert.isUndefined(canonical)
        assert.isUndefined(digest)
      }
    })
  }
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
    const { InteractiveApprovals } = ApprovalLayers

    /** The oldest pending request (waits for one to arrive). */
    const nextArrival = Effect.flatMap(
      InteractiveApprovals,
      ({ arrivals }) => Effect.map(Stream.runHead(arrivals), Option.getOrThrow)
    )

    const pendingCallIds = Effect.flatMap(
      InteractiveApprovals,
      ({ pending }) => Effect.map(pending, (all) => all.map((p) => p.request.callId))
    )

    /** Yields until exactly `n` requests are pending. */
    const untilPending = (n: number) =>
      Effect.gen(function*() {
        const { pending } = yield* InteractiveApprovals
        for (let i = 0; i < 100_000; i++) {
          if ((yield* pending).length === n) return
          yield* Effect.yieldNow()
        }
        throw new Error(`never reached ${n} pending requests`)
      })

    const abortListeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length

    const requestFor = (callId: string, signal: AbortSignal = new AbortController().signal) => ({
      ...request(signal),
      callId
    })

    it.scoped("offers the request and resolves with the application's answer; a second answer is refused", () =>
      Effect.gen(function*() {
        const req = request(undefined, "please")
        const fiber = yield* Effect.fork(ask(req))
        const offered = yield* nextArrival
        assert.strictEqual(offered.request, req)
        assert.strictEqual(offered.id, "approval-1")
        assert.isTrue(yield* isPending(fiber))
        yield* offered.answer("rejected")
        assert.strictEqual(yield* Fiber.join(fiber), "rejected")
        assert.strictEqual(yield* refused(offered.answer("allowed-once")), "answered")
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("APPR-6: a caller abort while pending resolves `cancelled`; a late answer is refused", () =>
      Effect.gen(function*() {
        const controller = new AbortController()
        const fiber = yield* Effect.fork(ask(request(controller.signal)))
        const offered = yield* nextArrival
        controller.abort()
        assert.strictEqual(yield* Fiber.join(fiber), "cancelled")
        assert.strictEqual(yield* refused(offered.answer("allowed-once")), "cancelled")
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("APPR-6: an already-aborted signal is `cancelled` at once and never pending", () =>
      Effect.gen(function*() {
        const controller = new AbortController()
        controller.abort()
        assert.strictEqual(yield* ask(request(controller.signal)), "cancelled")
        assert.deepStrictEqual(yield* pendingCallIds, [])
        assert.strictEqual(abortListeners(controller.signal), 0)
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("arrivals are delivered in arrival order; each run of the stream is its own consumer", () =>
      Effect.gen(function*() {
        const { arrivals } = yield* InteractiveApprovals
        const a = yield* Effect.fork(ask(requestFor("a")))
        yield* untilPending(1)
        const b = yield* Effect.fork(ask(requestFor("b")))
        yield* untilPending(2)
        const first = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(arrivals, 2)))
        const again = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(arrivals, 2)))
        assert.deepStrictEqual(first.map((p) => [p.id, p.request.callId]), [["approval-1", "a"], ["approval-2", "b"]])
        assert.deepStrictEqual(again.map((p) => p.id), ["approval-1", "approval-2"])
        yield* first[1]!.answer("rejected")
        yield* first[0]!.answer("allowed-once")
        assert.deepStrictEqual([yield* Fiber.join(a), yield* Fiber.join(b)], ["allowed-once", "rejected"])
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("arrivals waits for the next request; answer(id) works from another fiber", () =>
      Effect.gen(function*() {
        const interactive = yield* InteractiveApprovals
        const consumer = yield* Effect.fork(Stream.runCollect(Stream.take(interactive.arrivals, 1)))
        assert.isTrue(yield* isPending(consumer))
        const fiber = yield* Effect.fork(ask(requestFor("late")))
        const [seen] = Chunk.toReadonlyArray(yield* Fiber.join(consumer))
        assert.strictEqual(seen!.request.callId, "late")
        const answerer = yield* Effect.fork(interactive.answer(seen!.id, "allowed-once"))
        yield* Fiber.join(answerer)
        assert.strictEqual(yield* Fiber.join(fiber), "allowed-once")
        const again = yield* Effect.flip(interactive.answer(seen!.id, "rejected"))
        assert.deepStrictEqual(
          again,
          new ApprovalLayers.ApprovalAnswerError({
            id: "approval-1",
            reason: "answered",
            message: "approval request \"approval-1\" was already answered"
          })
        )
        const unknown = yield* Effect.flip(interactive.answer("approval-999", "rejected"))
        assert.deepStrictEqual(
          unknown,
          new ApprovalLayers.ApprovalAnswerError({
            id: "approval-999",
            reason: "unknown",
            message: "approval request \"approval-999\" is unknown: no request with this id was ever pending"
          })
        )
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("issue 8 item 9 / APPR-5: 2,000 aborted requests leave nothing pending and no abort listener", () =>
      Effect.gen(function*() {
        const n = 2_000
        const controllers = Array.from({ length: n }, () => new AbortController())
        const fibers = yield* Effect.forEach(
          controllers,
          (controller, i) => Effect.fork(ask(requestFor(`c${i}`, controller.signal)))
        )
        yield* untilPending(n)
        for (const controller of controllers) controller.abort()
        const outcomes = yield* Fiber.joinAll(fibers)
        assert.isTrue(outcomes.every((outcome) => outcome === "cancelled"))
        assert.deepStrictEqual(yield* pendingCallIds, [])
        assert.strictEqual(controllers.filter((c) => abortListeners(c.signal) > 0).length, 0)
        const fresh = yield* Effect.fork(ask(requestFor("fresh")))
        const next = yield* nextArrival
        assert.strictEqual(next.request.callId, "fresh")
        assert.strictEqual(next.id, `approval-${n + 1}`)
        yield* next.answer("rejected")
        assert.strictEqual(yield* Fiber.join(fresh), "rejected")
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("issue 8 item 9: a request removed before a consumer pulls it is skipped by arrivals", () =>
      Effect.gen(function*() {
        const { arrivals } = yield* InteractiveApprovals
        const b = new AbortController()
        const fa = yield* Effect.fork(ask(requestFor("a")))
        yield* untilPending(1)
        const fb = yield* Effect.fork(ask(requestFor("b", b.signal)))
        yield* untilPending(2)
        const fc = yield* Effect.fork(ask(requestFor("c")))
        yield* untilPending(3)
        b.abort()
        assert.strictEqual(yield* Fiber.join(fb), "cancelled")
        assert.deepStrictEqual(yield* pendingCallIds, ["a", "c"])
        const seen = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(arrivals, 2)))
        assert.deepStrictEqual(seen.map((p) => p.request.callId), ["a", "c"])
        yield* Fiber.interrupt(fa)
        yield* Fiber.interrupt(fc)
        assert.deepStrictEqual(yield* pendingCallIds, [])
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("issue 8 item 9 / D-14: a request whose wait is interrupted is removed; a late answer is refused", () =>
      Effect.gen(function*() {
        const { answer } = yield* InteractiveApprovals
        const controller = new AbortController()
        const fiber = yield* Effect.fork(ask(request(controller.signal)))
        const offered = yield* nextArrival
        assert.strictEqual(abortListeners(controller.signal), 1)
        yield* Fiber.interrupt(fiber)
        assert.deepStrictEqual(yield* pendingCallIds, [])
        assert.strictEqual(abortListeners(controller.signal), 0)
        assert.strictEqual(yield* refused(offered.answer("allowed-once")), "cancelled")
        assert.strictEqual(yield* refused(answer(offered.id, "allowed-once")), "cancelled")
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("issue 8 item 9: a request answered normally is removed (and its abort listener with it)", () =>
      Effect.gen(function*() {
        const { answer } = yield* InteractiveApprovals
        const controller = new AbortController()
        const fiber = yield* Effect.fork(ask(request(controller.signal)))
        const offered = yield* nextArrival
        yield* answer(offered.id, "allowed-once")
        assert.deepStrictEqual(yield* pendingCallIds, [])
        assert.strictEqual(abortListeners(controller.signal), 0)
        assert.strictEqual(yield* Fiber.join(fiber), "allowed-once")
        controller.abort()
        assert.strictEqual(yield* refused(offered.answer("rejected")), "answered")
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("issue 8 item 9 / APPR-5: an abort racing an answer gives exactly one outcome (abort first → cancelled)", () =>
      Effect.gen(function*() {
        const controller = new AbortController()
        const fiber = yield* Effect.fork(ask(request(controller.signal)))
        const offered = yield* nextArrival
        const [, answered] = yield* Effect.zip(
          Effect.sync(() => controller.abort()),
          Effect.either(offered.answer("allowed-once"))
        )
        assert.isTrue(Either.isLeft(answered) && answered.left.reason === "cancelled")
        assert.strictEqual(yield* Fiber.join(fiber), "cancelled")
        assert.deepStrictEqual(yield* pendingCallIds, [])
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("issue 8 item 9 / APPR-5: an abort racing an answer gives exactly one outcome (answer first → the answer)", () =>
      Effect.gen(function*() {
        const controller = new AbortController()
        const fiber = yield* Effect.fork(ask(request(controller.signal)))
        const offered = yield* nextArrival
        const [answered] = yield* Effect.zip(
          Effect.either(offered.answer("allowed-once")),
          Effect.sync(() => controller.abort())
        )
        assert.isTrue(Either.isRight(answered))
        assert.strictEqual(yield* Fiber.join(fiber), "allowed-once")
        assert.strictEqual(yield* refused(offered.answer("rejected")), "answered")
        assert.deepStrictEqual(yield* pendingCallIds, [])
        assert.strictEqual(abortListeners(controller.signal), 0)
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    it.scoped("issue 8 item 9: an answer given by an abort listener that runs before the layer's wins; the abort adds nothing", () =>
      Effect.gen(function*() {
        const controller = new AbortController()
        const runtime = yield* Effect.runtime<never>()
        const results: Array<boolean> = []
        let offered: ApprovalLayers.PendingApproval | undefined
        controller.signal.addEventListener("abort", () => {
          if (offered !== undefined) {
            results.push(Either.isRight(Runtime.runSync(runtime)(Effect.either(offered.answer("rejected")))))
          }
        })
        const fiber = yield* Effect.fork(ask(request(controller.signal)))
        offered = yield* nextArrival
        controller.abort()
        assert.deepStrictEqual(results, [true])
        assert.strictEqual(yield* Fiber.join(fiber), "rejected")
        assert.deepStrictEqual(yield* pendingCallIds, [])
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    const requestError = "an interactive approval request needs a real AbortSignal as `signal`"
    const hostileRequests: ReadonlyArray<readonly [string, () => unknown]> = [
      ["null", () => null],
      ["undefined", () => undefined],
      ["a throwing proxy", () => Hostile.throwingProxy()],
      ["a revoked proxy", () => Hostile.revokedProxy()],
      ["a null-prototype object without a signal", () => Hostile.nullProto({ agent: "a", toolName: "t", callId: "c" })],
      ["a throwing `signal` getter", () =>
        Object.defineProperty({ agent: "a", toolName: "t", callId: "c" }, "signal", {
          get: () => {
            throw new Error("hostile signal")
          }
        })],
      ["a fake signal object", () => ({ ...request(), signal: { aborted: false, addEventListener: () => {} } })],
      ["a signal that is a throwing proxy", () => ({ ...request(), signal: Hostile.throwingProxy() })],
      ["a signal that is a revoked proxy", () => ({ ...request(), signal: Hostile.revokedProxy() })],
      ["a signal with AbortSignal's prototype but no brand", () =>
        ({ ...request(), signal: Object.create(AbortSignal.prototype) })],
      ["a proxy over a real signal whose traps throw", () =>
        ({ ...request(), signal: Hostile.throwingProxy(new AbortController().signal) })],
      ["a bigint signal", () => ({ ...request(), signal: 10n })]
    ]
    for (const [label, make] of hostileRequests) {
      it.scoped(`issue 8 item 9 / D-7: a request with ${label} fails with ApprovalRequestError and leaves nothing pending`, () =>
        Effect.gen(function*() {
          const service = yield* Approval.Approval
          const exit = yield* Effect.exit(service.request(make() as Approval.ApprovalRequest))
          assert.deepStrictEqual(
            exit,
            Exit.fail(new ApprovalLayers.ApprovalRequestError({ message: requestError }))
          )
          assert.deepStrictEqual(yield* pendingCallIds, [])
        }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))
    }

    it.scoped("issue 8 item 9: the request's `signal` is read exactly once, and nothing else of it", () =>
      Effect.gen(function*() {
        const controller = new AbortController()
        const { reads, value } = Hostile.counted({ agent: "a", toolName: "t", callId: "c", signal: controller.signal })
        const fiber = yield* Effect.fork(ask(value as Approval.ApprovalRequest))
        const offered = yield* nextArrival
        assert.strictEqual(offered.request, value)
        controller.abort()
        assert.strictEqual(yield* Fiber.join(fiber), "cancelled")
        assert.deepStrictEqual(Object.fromEntries(reads), { signal: 1 })
      }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))

    for (const kind of Hostile.kinds) {
      it.scoped(`issue 8 item 9 / D-7: answering with a ${kind} decides \`unavailable\`; a ${kind} id answers nothing`, () =>
        Effect.gen(function*() {
          const { answer } = yield* InteractiveApprovals
          const fiber = yield* Effect.fork(ask())
          const offered = yield* nextArrival
          assert.strictEqual(yield* refused(answer(Hostile.make(kind) as string, "allowed-once")), "unknown")
          assert.isTrue(yield* isPending(fiber))
          yield* offered.answer(Hostile.make(kind) as Approval.ApprovalOutcome)
          assert.strictEqual(yield* Fiber.join(fiber), "unavailable")
          assert.strictEqual(yield* refused(offered.answer("allowed-once")), "answered")
          assert.deepStrictEqual(yield* pendingCallIds, [])
        }).pipe(Effect.provide(ApprovalLayers.layerInteractive)))
    }

    it.effect("closing the layer decides pending requests `unavailable`, ends arrivals, and refuses new requests", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(ApprovalLayers.layerInteractive, scope)
        const service = Context.get(context, Approval.Approval)
        const interactive = Context.get(context, InteractiveApprovals)
        const controller = new AbortController()
        const fiber = yield* Effect.fork(service.request(request(controller.signal)))
        const consumer = yield* Effect.fork(Stream.runCollect(interactive.arrivals))
        yield* Effect.provide(untilPending(1), context)
        assert.isTrue(yield* isPending(consumer))
        yield* Scope.close(scope, Exit.void)
        assert.strictEqual(yield* Fiber.join(fiber), "unavailable")
        assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Fiber.join(consumer)).map((p) => p.id), ["approval-1"])
        assert.strictEqual(abortListeners(controller.signal), 0)
        assert.strictEqual(yield* service.request(request()), "unavailable")
        assert.deepStrictEqual(yield* interactive.pending, [])
        assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(interactive.arrivals)), [])
      }))

    type Action =
      | { readonly _tag: "answer"; readonly target: number; readonly outcome: Approval.ApprovalOutcome }
      | { readonly _tag: "answerById"; readonly target: number; readonly outcome: Approval.ApprovalOutcome }
      | { readonly _tag: "abort"; readonly target: number }
      | { readonly _tag: "interrupt"; readonly target: number }

    const scenario = FastCheck.integer({ min: 1, max: 4 }).chain((n) =>
      FastCheck.record({
        n: FastCheck.constant(n),
        steps: FastCheck.array(
          FastCheck.record({
            action: FastCheck.oneof(
              FastCheck.record({
                _tag: FastCheck.constantFrom("answer" as const, "answerById" as const),
                target: FastCheck.integer({ min: 0, max: n - 1 }),
                outcome: FastCheck.constantFrom(...Approval.outcomes)
              }),
              FastCheck.record({
                _tag: FastCheck.constantFrom("abort" as const, "interrupt" as const),
                target: FastCheck.integer({ min: 0, max: n - 1 })
              })
            ) as FastCheck.Arbitrary<Action>,
            yieldAfter: FastCheck.boolean()
          }),
          { maxLength: 10 }
        )
      })
    )

    it.live.prop(
      "issue 8 item 9 / APPR-5: any interleaving of answers, aborts and interrupts decides each request once and leaves nothing pending",
      [scenario],
      ([{ n, steps }]) =>
        Effect.gen(function*() {
          const interactive = yield* InteractiveApprovals
          const controllers = Array.from({ length: n }, () => new AbortController())
          const fibers = yield* Effect.forEach(
            controllers,
            (controller, i) => Effect.fork(ask(requestFor(`r${i}`, controller.signal)))
          )
          yield* untilPending(n)
          const views = new Map((yield* interactive.pending).map((p) => [p.request.callId, p]))
          const first: Array<Action | undefined> = Array.from({ length: n }, () => undefined)
          const wins: Array<number> = Array.from({ length: n }, () => 0)
          for (const { action, yieldAfter } of steps) {
            const target = action.target
            const view = views.get(`r${target}`)!
            const isFirst = first[target] === undefined
            if (isFirst) first[target] = action
            switch (action._tag) {
              case "answer":
              case "answerById": {
                const answered = Either.isRight(
                  yield* Effect.either(
                    action._tag === "answer" ? view.answer(action.outcome) : interactive.answer(view.id, action.outcome)
                  )
                )
                assert.strictEqual(answered, isFirst, "an answer decides only a request nothing decided yet")
                if (answered) wins[target]!++
                break
              }
              case "abort":
                controllers[target]!.abort()
                break
              case "interrupt":
                yield* Fiber.interrupt(fibers[target]!)
                break
            }
            if (yieldAfter) yield* Effect.yieldNow()
          }
          for (const fiber of fibers) yield* Fiber.interrupt(fiber)
          for (let i = 0; i < n; i++) {
            const exit = yield* Fiber.await(fibers[i]!)
            const action = first[i]
            assert.isAtMost(wins[i]!, 1)
            if (action === undefined || action._tag === "interrupt") {
              assert.isTrue(Exit.isInterrupted(exit), `r${i} was interrupted before anything decided it`)
            } else if (Exit.isSuccess(exit)) {
              assert.strictEqual(exit.value, action._tag === "abort" ? "cancelled" : action.outcome)
            } else {
              assert.isTrue(Cause.isInterruptedOnly(exit.cause), `r${i} ends only by its outcome or an interruption`)
            }
          }
          assert.deepStrictEqual(yield* interactive.pending, [])
          assert.strictEqual(controllers.filter((c) => abortListeners(c.signal) > 0).length, 0)
        }).pipe(Effect.provide(ApprovalLayers.layerInteractive)),
      { fastCheck: { numRuns: 200 } }
    )

    it.scoped("issue 8 item 9 / APPR-5: through the runtime, aborted and interrupted callers leave nothing pending", () =>
      Effect.gen(function*() {
        const tools = yield* ToolRegistry
        yield* tools.register(echo())
        yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({ reason: "please" })))
        const n = 200
        const controllers = Array.from({ length: n }, () => new AbortController())
        const calls = yield* Effect.forEach(controllers, (controller, i) =>
          Effect.fork(execute({ callId: `c${i}`, name: "echo", agent: "a", arguments: {}, signal: controller.signal })))
        yield* untilPending(n)
        controllers.forEach((controller, i) => {
          if (i % 2 === 0) controller.abort()
        })
        yield* Effect.forEach(calls, (call, i) => i % 2 === 1 ? Fiber.interrupt(call) : Effect.void)
        const aborted = yield* Effect.forEach(calls.filter((_, i) => i % 2 === 0), (call) => Fiber.join(call))
        assert.deepStrictEqual(aborted, Array.from({ length: n / 2 }, () => ABORTED_BEFORE_DISPATCH))
        const exits = yield* Effect.forEach(calls, (call) => Fiber.await(call))
        assert.isTrue(exits.every((exit, i) => i % 2 === 0 || Exit.isInterrupted(exit)))
        assert.deepStrictEqual(yield* pendingCallIds, [])
        assert.strictEqual(controllers.filter((c) => abortListeners(c.signal) > 0).length, 0)
      }).pipe(Effect.provide(layerWithApproval(ApprovalLayers.layerInteractive))))
  })
})

describe("issue 10 item 2: the interactive channel as an answerer of ApprovalService", () => {
  const { InteractiveApprovals } = ApprovalLayers
  const layer = () =>
    ApprovalLayers.layerInteractiveAnswerer().pipe(Layer.provideMerge(layerServiceWithGrants()))

  const nextArrival = Effect.flatMap(
    InteractiveApprovals,
    ({ arrivals }) => Effect.map(Stream.runHead(arrivals), Option.getOrThrow)
  )

  it.scoped("a pending request answered from another fiber decides; a second answer fails `answered`", () =>
    Effect.gen(function*() {
      const interactive = yield* InteractiveApprovals
      const request = makeRequest({ reason: "rm -rf" })
      const fiber = yield* Effect.fork(askService(request))
      const pending = yield* nextArrival
      assert.strictEqual(pending.request, request, "the person sees the runtime's request itself")
      const answerer = yield* Effect.fork(interactive.answer(pending.id, "rejected"))
      yield* Fiber.join(answerer)
      assert.strictEqual(yield* Fiber.join(fiber), "rejected")
      assert.strictEqual(yield* refused(interactive.answer(pending.id, "allowed-once")), "answered")
      assert.strictEqual(yield* refused(pending.answer("allowed-once")), "answered")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1", request), "rejected", "answerer"))
    }).pipe(Effect.provide(layer())))

  it.scoped("an answer after the call aborted fails `cancelled`; the service decided `cancelled` by abort", () =>
    Effect.gen(function*() {
      const interactive = yield* InteractiveApprovals
      const controller = new AbortController()
      const fiber = yield* Effect.fork(askService(makeRequest({ signal: controller.signal })))
      const pending = yield* nextArrival
      controller.abort()
      assert.strictEqual(yield* Fiber.join(fiber), "cancelled")
      assert.strictEqual(yield* refused(interactive.answer(pending.id, "allowed-once")), "cancelled")
      assert.deepStrictEqual(yield* interactive.pending, [])
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "cancelled", "abort"))
      assert.deepStrictEqual(yield* (yield* ApprovalGrants.ApprovalGrants).list, [])
    }).pipe(Effect.provide(layer())))

  it.scoped("\"always allow\" flows to the service: the grant is stored and answers the next request", () =>
    Effect.gen(function*() {
      const interactive = yield* InteractiveApprovals
      const fiber = yield* Effect.fork(askService(makeRequest({ arguments: { path: "a" } })))
      const pending = yield* nextArrival
      yield* interactive.answer(pending.id, {
        outcome: "allowed-once",
        remember: { scope: "global", match: "arguments", ttl: "1 hour" }
      })
      assert.strictEqual(yield* Fiber.join(fiber), "allowed-once")
      assert.strictEqual(yield* askService(makeRequest({ callId: "c2", arguments: { path: "a" } })), "allowed-once")
      assert.deepStrictEqual(yield* interactive.pending, [], "the second request never reached the person")
      const audit = yield* ToolCallLog.approvals
      assert.deepStrictEqual(audit.map((entry) => entry.decided?.by), ["answerer", "grant:grant-1"])
      const other = yield* Effect.fork(askService(makeRequest({ callId: "c3", arguments: { path: "b" } })))
      const next = yield* nextArrival
      assert.strictEqual(next.request.callId, "c3", "other arguments are asked again")
      yield* next.answer("rejected")
      assert.strictEqual(yield* Fiber.join(other), "rejected")
    }).pipe(Effect.provide(layer())))

  it.scoped("an answer outside the vocabulary decides `unavailable`, audited as the answerer's error", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(askService())
      const pending = yield* nextArrival
      yield* pending.answer(Hostile.throwingProxy() as ApprovalService.Answer)
      assert.strictEqual(yield* Fiber.join(fiber), "unavailable")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "unavailable", "error"))
    }).pipe(Effect.provide(layer())))

  it.effect("closing the channel answers its pending requests `unavailable` and removes the answerer", () =>
    Effect.gen(function*() {
      const base = yield* Layer.build(layerService())
      const scope = yield* Scope.make()
      const channel = yield* Layer.buildWithScope(ApprovalLayers.layerInteractiveAnswerer(), scope).pipe(
        Effect.provide(base)
      )
      const fiber = yield* Effect.fork(Effect.provide(askService(), base))
      yield* Effect.provide(nextArrival, channel)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* Fiber.join(fiber), "unavailable")
      assert.strictEqual(yield* Effect.provide(askService(makeRequest({ callId: "c2" })), base), "unavailable")
      const records = yield* Effect.provide(approvalRecords, base)
      assert.deepStrictEqual(records, [
        ...pair(askedFor("a-1"), "unavailable", "answerer"),
        ...pair(askedFor("a-2", makeRequest({ callId: "c2" })), "unavailable", "policy")
      ])
    }).pipe(Effect.scoped))

  it.scoped("layerInteractiveService: the audited service with the person as its global answerer", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(askService())
      const pending = yield* nextArrival
      yield* pending.answer("allowed-once")
      assert.strictEqual(yield* Fiber.join(fiber), "allowed-once")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "allowed-once", "answerer"))
    }).pipe(
      Effect.provide(
        ApprovalLayers.layerInteractiveService({ ids: IdGenerator.counter("a-") }).pipe(
          Layer.provideMerge(Layer.mergeAll(ToolCallLogMemory.layer, InMemoryToolRegistry.layer))
        )
      )
    ))
})
