/**
 * An adversarial pass over the audited approval service and its interactive answerer, through
 * their public APIs: hostile Promise answers, hostile `remember` values, hostile management
 * arguments and layer options, hostile grants services. Every request decides exactly one
 * outcome with one audited pair; management misuse is an `IllegalArgumentException` defect.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Layer, Option, Stream } from "effect"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import type * as Approval from "../src/Approval.js"
import * as ApprovalGrants from "../src/ApprovalGrants.js"
import * as ApprovalService from "../src/ApprovalService.js"
import type * as IdGenerator from "../src/IdGenerator.js"
import type * as ToolCallLog from "../src/ToolCallLog.js"
import {
  approvalRecords,
  ask,
  askedFor,
  captureWarnings,
  layerService,
  layerServiceWithGrants,
  makeRequest,
  pair
} from "./fixtures/approval.js"
import * as Hostile from "./fixtures/hostile.js"

const service = ApprovalService.ApprovalService

const answering = <E, R>(answerer: ApprovalService.Answerer<E, R>, options?: ApprovalService.AnswerOptions) =>
  Effect.flatMap(service, (s) => s.answer(answerer, options))

/** The defect of a management call, which must be an IllegalArgumentException with `message`. */
const illegal = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), "a defect")
    const defect = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined
    assert.instanceOf(defect, Cause.IllegalArgumentException)
    return (defect as Cause.IllegalArgumentException).message
  })

const decided = (records: ReadonlyArray<ToolCallLog.ApprovalRecord>) => records[1] as ToolCallLog.ApprovalDecidedRecord

describe("ApprovalService hostile: Promise answerers (APPR-6, D-7)", () => {
  const thenables: ReadonlyArray<readonly [string, () => unknown, Approval.ApprovalOutcome, ToolCallLog.ApprovalDecider]> =
    [
      ["a thenable whose `then` throws a throwing proxy", () => ({
        then: () => {
          throw Hostile.throwingProxy()
        }
      }), "unavailable", "error"],
      ["a thenable whose `then` getter throws", () =>
        Object.defineProperty({}, "then", {
          get: () => {
            throw new Error("hostile then")
          }
        }), "unavailable", "error"],
      ["a Promise rejecting with a revoked proxy", () => Promise.reject(Hostile.revokedProxy()), "unavailable", "error"],
      ["a Promise resolving to a throwing proxy", () => Promise.resolve(Hostile.throwingProxy()), "unavailable", "error"],
      ["a Promise resolving to a bare bigint", () => Promise.resolve(7n), "unavailable", "error"],
      ["a thenable resolving to a thenable whose `then` throws", () => ({
        then: (resolve: (value: unknown) => void) =>
          resolve({
            then: () => {
              throw Hostile.revokedProxy()
            }
          })
      }), "unavailable", "error"],
      ["a thenable that resolves twice (first wins)", () => ({
        then: (resolve: (value: unknown) => void) => {
          resolve("rejected")
          resolve("allowed-once")
        }
      }), "rejected", "answerer"],
      ["a Promise resolving to a null-prototype answer", () =>
        Promise.resolve(Hostile.nullProto({ outcome: "allowed-once" })), "allowed-once", "answerer"],
      ["a function Proxy whose call throws", () => {
        throw Hostile.throwingProxy()
      }, "unavailable", "error"]
    ]
  for (const [label, make, outcome, by] of thenables) {
    it.scoped(`APPR-6 / D-7: ${label} decides \`${outcome}\` (by ${by}), one audited pair`, () =>
      Effect.gen(function*() {
        yield* answering<never, never>(() => make() as PromiseLike<ApprovalService.Answer>)
        assert.strictEqual(yield* ask(), outcome)
        assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), outcome, by))
      }).pipe(Effect.provide(layerService())))
  }

  it.scoped("APPR-6 / D-7: an answerer that is a Proxy of a function whose apply trap throws decides `unavailable`", () =>
    Effect.gen(function*() {
      const answerer = new Proxy(() => undefined, {
        apply: () => {
          throw Hostile.throwingProxy()
        }
      })
      yield* answering(answerer as unknown as ApprovalService.Answerer)
      assert.strictEqual(yield* ask(), "unavailable")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "unavailable", "error"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / D-7: an outcome getter that changes is read once; a throwing-proxy remember is outside the vocabulary", () =>
    Effect.gen(function*() {
      const answers = [
        Hostile.changing({}, "outcome", "rejected", "allowed-once"),
        { outcome: "allowed-once", remember: Hostile.throwingProxy() },
        { outcome: "allowed-once", remember: Hostile.revokedProxy() },
        { outcome: "allowed-once", remember: Hostile.changing({ match: "tool" }, "scope", "world", "global") }
      ]
      let next = 0
      yield* answering(() => Effect.sync(() => answers[next++] as ApprovalService.Answer))
      const outcomes: Array<Approval.ApprovalOutcome> = []
      for (let i = 0; i < answers.length; i++) outcomes.push(yield* ask(makeRequest({ callId: `c${i}` })))
      assert.deepStrictEqual(outcomes, ["rejected", "unavailable", "unavailable", "unavailable"])
      const bys = (yield* approvalRecords).filter((r) => r._tag === "approval/decided").map((r) =>
        (r as ToolCallLog.ApprovalDecidedRecord).by
      )
      assert.deepStrictEqual(bys, ["answerer", "error", "error", "error"])
    }).pipe(Effect.provide(layerService())))
})

describe("ApprovalService hostile: remember (APPR-6)", () => {
  const ttls: ReadonlyArray<readonly [string, () => unknown]> = [
    ["a throwing proxy", () => Hostile.throwingProxy()],
    ["a revoked proxy", () => Hostile.revokedProxy()],
    ["a null-prototype object", () => Hostile.nullProto({ millis: 5 })],
    ["an object holding a bigint", () => Hostile.withBigint()],
    ["throwing conversions", () => Hostile.throwingConversions()],
    ["a symbol", () => Symbol("ttl")],
    ["NaN", () => Number.NaN],
    ["a proxy over an array", () => Hostile.throwingProxy([1, 2])]
  ]
  for (const [label, make] of ttls) {
    it.scoped(`APPR-6: a remember ttl that is ${label} counts once with one warning; nothing is stored`, () => {
      const { layer, lines } = captureWarnings()
      return Effect.gen(function*() {
        yield* answering(() =>
          Effect.sync((): ApprovalService.Answer => ({
            outcome: "allowed-once",
            remember: { scope: "global", match: "tool", ttl: make() as ApprovalService.Remember["ttl"] }
          }))
        )
        assert.strictEqual(yield* ask(), "allowed-once")
        assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "allowed-once", "answerer"))
        assert.deepStrictEqual(yield* (yield* ApprovalGrants.ApprovalGrants).list, [])
        assert.strictEqual(lines.length, 1)
        assert.match(lines[0]!, /^approval: the remembered grant could not be stored \(the answer counts once\): /)
        assert.strictEqual(yield* ask(makeRequest({ callId: "c2" })), "allowed-once", "the next one is asked again")
      }).pipe(Effect.provide(Layer.merge(layerServiceWithGrants(), layer)))
    })
  }

  const brokenGrants: ReadonlyArray<readonly [string, () => never, () => never]> = [
    ["throw hostile values synchronously", () => {
      throw Hostile.throwingProxy()
    }, () => {
      throw Hostile.revokedProxy()
    }],
    ["return hostile values that are not Effects", () => Hostile.throwingProxy() as never, () => 7n as never]
  ]
  for (const [how, grant, find] of brokenGrants) {
    it.scoped(`APPR-6: a grants service whose grant and find ${how} is contained with two warnings`, () => {
      const { layer, lines } = captureWarnings()
      const broken = Layer.succeed(ApprovalGrants.ApprovalGrants, {
        grant,
        find,
        revoke: () => Effect.succeed(false),
        list: Effect.succeed([])
      })
      return Effect.gen(function*() {
        yield* answering(() =>
          Effect.succeed<ApprovalService.Answer>({ outcome: "allowed-once", remember: { scope: "agent", match: "tool" } })
        )
        assert.strictEqual(yield* ask(), "allowed-once")
        assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "allowed-once", "answerer"))
        assert.strictEqual(lines.length, 2)
        assert.match(lines[0]!, /^approval grants could not be read, so the answerers are asked: /)
        assert.match(lines[1]!, /^approval: the remembered grant could not be stored \(the answer counts once\): /)
      }).pipe(Effect.provide(Layer.merge(layerService().pipe(Layer.provide(broken)), layer)))
    })
  }
})

describe("ApprovalService hostile: management and options (APPR-6, T-APPR-033)", () => {
  it.scoped("T-APPR-033: hostile policies and options are IllegalArgumentException defects with fixed messages", () =>
    Effect.gen(function*() {
      const s = yield* service
      const messages: Array<string> = []
      for (const kind of Hostile.kinds) {
        messages.push(yield* illegal(s.setPolicy(Hostile.make(kind) as ApprovalService.Policy)))
      }
      assert.deepStrictEqual(new Set(messages), new Set(["ApprovalService.setPolicy needs \"ask\" or \"never\""]))
      const agentGetter = Object.defineProperty({}, "agent", {
        get: () => {
          throw new Error("hostile agent")
        }
      })
      assert.strictEqual(
        yield* illegal(s.setPolicy("never", Hostile.revokedProxy() as ApprovalService.PolicyOptions)),
        "ApprovalService.setPolicy options could not be read"
      )
      assert.strictEqual(
        yield* illegal(s.setPolicy("never", agentGetter as ApprovalService.PolicyOptions)),
        "ApprovalService.setPolicy options could not be read"
      )
      assert.strictEqual(
        yield* illegal(s.setPolicy("never", { agent: Hostile.nullProto() as unknown as string })),
        "ApprovalService.setPolicy option \"agent\" must be a string"
      )
      assert.strictEqual(
        yield* illegal(s.answer(() => Effect.succeed(undefined), { prepend: 10n as unknown as boolean })),
        "ApprovalService.answer option \"prepend\" must be a boolean"
      )
      assert.strictEqual(
        yield* illegal(s.answer(Hostile.throwingProxy() as ApprovalService.Answerer)),
        "ApprovalService.answer needs a function"
      )
      assert.strictEqual(
        yield* illegal(s.answer(() => Effect.succeed(undefined), 7n as ApprovalService.AnswerOptions)),
        "ApprovalService.answer options must be an object"
      )
      for (const kind of Hostile.kinds) {
        assert.strictEqual(yield* s.policy(Hostile.make(kind) as string), "ask")
      }
      yield* s.setPolicy("never", { agent: "main" })
      assert.strictEqual(yield* ask(), "rejected", "a valid setting after hostile ones still applies")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "rejected", "policy"))
    }).pipe(Effect.provide(layerService())))

  it.effect("T-APPR-033: hostile layer options are a defect at build with a fixed message", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [Hostile.throwingProxy(), "ApprovalService.layer options could not be read"],
        [Hostile.revokedProxy(), "ApprovalService.layer options could not be read"],
        [10n, "ApprovalService.layer options must be an object"],
        [{ policy: Hostile.nullProto() }, "ApprovalService.layer option \"policy\" must be \"ask\" or \"never\""],
        [{ ids: Hostile.throwingProxy() }, "ApprovalService.layer options could not be read"],
        [{ ids: { next: 7n } }, "ApprovalService.layer option \"ids\" must be an IdGenerator service"]
      ]
      for (const [options, message] of cases) {
        const built = Layer.build(
          ApprovalService.layer(options as ApprovalService.Options).pipe(
            Layer.provide(Layer.mergeAll(ToolCallLogMemory.layer, InMemoryToolRegistry.layer))
          )
        )
        assert.strictEqual(yield* illegal(Effect.scoped(built)), message)
      }
    }))

  it.scoped("APPR-6: an id generator that answers hostile values falls back to random ids; the pair still matches", () => {
    const answers: ReadonlyArray<unknown> = [Hostile.throwingProxy(), 10n, Hostile.nullProto()]
    let n = 0
    const ids = { next: () => answers[n++ % answers.length] } as unknown as IdGenerator.Service
    return Effect.gen(function*() {
      yield* answering(() => Effect.succeed("allowed-once"))
      assert.strictEqual(yield* ask(), "allowed-once")
      const records = yield* approvalRecords
      assert.strictEqual(records.length, 2)
      assert.match(records[0]!.id, /^[0-9a-f-]{36}$/)
      assert.strictEqual(decided(records).id, records[0]!.id)
    }).pipe(Effect.provide(layerService({ ids })))
  })

  it.scoped("APPR-6: an id generator that throws decides like any request: one pair with a fallback id", () => {
    const ids: IdGenerator.Service = {
      next: () => {
        throw Hostile.throwingProxy()
      }
    }
    return Effect.gen(function*() {
      yield* answering(() => Effect.succeed("rejected"))
      assert.strictEqual(yield* ask(), "rejected")
      const records = yield* approvalRecords
      assert.strictEqual(records.length, 2)
      assert.match(records[0]!.id, /^[0-9a-f-]{36}$/)
      assert.deepStrictEqual(decided(records), { _tag: "approval/decided", id: records[0]!.id, outcome: "rejected", by: "answerer" })
    }).pipe(Effect.provide(layerService({ ids })))
  })
})

describe("ApprovalService hostile: the interactive answerer", () => {
  const layer = () =>
    ApprovalLayers.layerInteractiveAnswerer().pipe(Layer.provideMerge(layerServiceWithGrants()))
  const nextArrival = Effect.flatMap(
    ApprovalLayers.InteractiveApprovals,
    (i) => Effect.map(Stream.runHead(i.arrivals), Option.getOrThrow)
  )

  it.scoped("an answer whose remember ttl is a throwing proxy counts once; nothing is stored; the request left the channel", () => {
    const { layer: warnings, lines } = captureWarnings()
    return Effect.gen(function*() {
      const interactive = yield* ApprovalLayers.InteractiveApprovals
      const fiber = yield* Effect.fork(ask())
      const pending = yield* nextArrival
      yield* interactive.answer(pending.id, {
        outcome: "allowed-once",
        remember: { scope: "global", match: "tool", ttl: Hostile.throwingProxy() as ApprovalService.Remember["ttl"] }
      })
      assert.strictEqual(yield* Fiber.join(fiber), "allowed-once")
      assert.deepStrictEqual(yield* interactive.pending, [])
      assert.deepStrictEqual(yield* (yield* ApprovalGrants.ApprovalGrants).list, [])
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "allowed-once", "answerer"))
      assert.strictEqual(lines.length, 1)
      assert.match(lines[0]!, /^approval: the remembered grant could not be stored/)
    }).pipe(Effect.provide(Layer.merge(layer(), warnings)))
  })

  it.scoped("hostile ids fail `unknown` with id \"\" and a fixed message; the pending request still takes a real answer", () =>
    Effect.gen(function*() {
      const interactive = yield* ApprovalLayers.InteractiveApprovals
      const fiber = yield* Effect.fork(ask())
      const pending = yield* nextArrival
      const hostileIds: ReadonlyArray<unknown> = [
        Hostile.throwingProxy(),
        Hostile.revokedProxy(),
        Hostile.nullProto(),
        Hostile.throwingConversions(),
        10n,
        Symbol("id"),
        `${pending.id}\n`,
        "approval-01",
        "approval-99999999999999999999",
        "x".repeat(100_000)
      ]
      for (const id of hostileIds) {
        const error = yield* Effect.flip(interactive.answer(id as string, "allowed-once"))
        assert.strictEqual(error.reason, "unknown")
        if (typeof id !== "string") {
          assert.strictEqual(error.id, "")
          assert.strictEqual(
            error.message,
            "approval request with a non-string id is unknown: no request with this id was ever pending"
          )
        } else {
          assert.isAtMost(error.message.length, 140)
        }
      }
      yield* interactive.answer(pending.id, "rejected")
      assert.strictEqual(yield* Fiber.join(fiber), "rejected")
    }).pipe(Effect.provide(layer())))
})
