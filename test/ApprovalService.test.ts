/**
 * The audited approval service (issue 10 items 1 and 3): APPR-6 without the session
 * precondition, D-7, D-14, D-18 — deciding, answerers, policies, remembered grants, the audit
 * records and their containment. The pipeline side is in ToolRuntime.approval.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Exit, Fiber, FiberId, Layer, Option, Scope, TestClock } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as Approval from "../src/Approval.js"
import * as ApprovalGrants from "../src/ApprovalGrants.js"
import * as ApprovalService from "../src/ApprovalService.js"
import * as IdGenerator from "../src/IdGenerator.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import {
  approvalRecords,
  ask,
  askedFor,
  audit,
  captureWarnings,
  layerService,
  layerServiceWithGrants,
  makeRequest,
  pair,
  untilRecords
} from "./fixtures/approval.js"
import * as Hostile from "./fixtures/hostile.js"
import { isPending, settle } from "./fixtures/runtime.js"
import { layerFailing } from "./fixtures/toolCallLog.js"

const service = ApprovalService.ApprovalService

/** Registers an answerer for the test's scope. */
const answering = <E, R>(answerer: ApprovalService.Answerer<E, R>, options?: ApprovalService.AnswerOptions) =>
  Effect.flatMap(service, (s) => s.answer(answerer, options))

const setPolicy = (policy: ApprovalService.Policy, options?: ApprovalService.PolicyOptions) =>
  Effect.flatMap(service, (s) => s.setPolicy(policy, options))

/** An answerer that counts its calls and answers `answer`. */
const counting = (answer: ApprovalService.Answer | undefined) => {
  const seen: Array<Approval.ApprovalRequest> = []
  const answerer: ApprovalService.Answerer = (request) =>
    Effect.sync(() => {
      seen.push(request)
      return answer
    })
  return { seen, answerer }
}

/** Declares `lead` with the child `worker`, and the unrelated `other`. */
const agents = Effect.gen(function*() {
  const registry = yield* ToolRegistry
  yield* registry.declareAgent("lead")
  yield* registry.declareAgent("worker", { parent: "lead" })
  yield* registry.declareAgent("other")
})

describe("ApprovalService: deciding (APPR-6)", () => {
  it.scoped("APPR-6 / T-APPR-003: no answerer → `unavailable`; asked, then decided with the same id", () =>
    Effect.gen(function*() {
      const request = makeRequest({ reason: "deletes files" })
      assert.strictEqual(yield* ask(request), "unavailable")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1", request), "unavailable", "policy"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / T-APPR-001 / T-APPR-002 (dropped): there is no session or turn; the service answers outside any", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      assert.deepStrictEqual(yield* approvalRecords, [], "nothing was ever logged: no turn was opened")
      assert.strictEqual(registry.unsafeView("main").lineage.length, 1)
      yield* answering(() => Effect.succeed("allowed-once"))
      assert.strictEqual(yield* ask(), "allowed-once")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "allowed-once", "answerer"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / T-APPR-005: an answerer of the agent's scope receives the exact request object and decides", () =>
    Effect.gen(function*() {
      const { answerer, seen } = counting("allowed-once")
      yield* answering(answerer, { agent: "main" })
      const request = makeRequest()
      assert.strictEqual(yield* ask(request), "allowed-once")
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(seen[0], request)
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "allowed-once", "answerer"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / T-APPR-009: the first answer wins; the second answerer is never consulted", () =>
    Effect.gen(function*() {
      const first = counting("rejected")
      const second = counting("allowed-once")
      yield* answering(first.answerer)
      yield* answering(second.answerer)
      assert.strictEqual(yield* ask(), "rejected")
      assert.strictEqual(first.seen.length, 1)
      assert.strictEqual(second.seen.length, 0)
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / T-APPR-010: an answerer that delegates (undefined) falls through to fail-closed `unavailable`", () =>
    Effect.gen(function*() {
      const delegating = counting(undefined)
      yield* answering(delegating.answerer)
      assert.strictEqual(yield* ask(), "unavailable")
      assert.strictEqual(delegating.seen.length, 1)
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "unavailable", "policy"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6: delegation passes to the next answerer, which decides", () =>
    Effect.gen(function*() {
      yield* answering(() => Effect.succeed(undefined))
      yield* answering(() => Effect.succeed("cancelled"))
      assert.strictEqual(yield* ask(), "cancelled")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "cancelled", "answerer"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / T-APPR-011: global answerers, then the agent's chain farthest first; never a foreign scope's", () =>
    Effect.gen(function*() {
      yield* agents
      const order: Array<string> = []
      const note = (label: string): ApprovalService.Answerer => () => Effect.sync(() => void order.push(label))
      yield* answering(note("worker"), { agent: "worker" })
      yield* answering(note("other"), { agent: "other" })
      yield* answering(note("lead"), { agent: "lead" })
      yield* answering(note("global-1"))
      yield* answering(note("global-0"), { prepend: true })
      assert.strictEqual(yield* ask(makeRequest({ agent: "worker" })), "unavailable")
      assert.deepStrictEqual(order, ["global-0", "global-1", "lead", "worker"])
      order.length = 0
      assert.strictEqual(yield* ask(makeRequest({ agent: "lead" })), "unavailable")
      assert.deepStrictEqual(order, ["global-0", "global-1", "lead"])
      order.length = 0
      assert.strictEqual(yield* ask(makeRequest({ agent: "stranger" })), "unavailable")
      assert.deepStrictEqual(order, ["global-0", "global-1"])
    }).pipe(Effect.provide(layerService())))

  const failures: ReadonlyArray<readonly [string, string, ApprovalService.Answerer<unknown>]> = [
    ["T-APPR-013", "fails", () => Effect.fail(new Error("channel down"))],
    ["T-APPR-013", "dies", () => Effect.die(new Error("channel crashed"))],
    ["T-APPR-013", "interrupts itself", () => Effect.interrupt],
    ["T-APPR-024", "throws synchronously", () => {
      throw new Error("not even an Effect")
    }],
    ["T-APPR-024", "throws a hostile value", () => {
      throw Hostile.throwingProxy()
    }],
    ["T-APPR-024", "returns something that is not an Effect", () => "allowed-once" as never],
    ["T-APPR-013", "fails with a revoked proxy", () => Effect.fail(Hostile.revokedProxy())]
  ]
  for (const [id, how, answerer] of failures) {
    it.scoped(`APPR-6 / D-7 / ${id}: an answerer that ${how} decides \`unavailable\` (by error); the next is not asked`, () =>
      Effect.gen(function*() {
        const next = counting("allowed-once")
        yield* answering(answerer)
        yield* answering(next.answerer)
        assert.strictEqual(yield* ask(), "unavailable")
        assert.strictEqual(next.seen.length, 0)
        assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "unavailable", "error"))
      }).pipe(Effect.provide(layerService())))
  }

  const answers: ReadonlySet<string> = new Set([
    "null prototype with fields",
    "cyclic",
    "bigint",
    "__proto__ key",
    "throwing conversions"
  ])
  const rogue: ReadonlyArray<readonly [string, () => unknown]> = [
    ["an unknown outcome", () => "allowed"],
    ["a number", () => 1],
    ["null", () => null],
    ["an object with an unknown outcome", () => ({ outcome: "yes" })],
    ["a remember with an unknown scope", () => ({ outcome: "allowed-once", remember: { scope: "world", match: "tool" } })],
    ["a remember with an unknown match", () => ({ outcome: "allowed-once", remember: { scope: "agent", match: "all" } })],
    ["a remember that is not an object", () => ({ outcome: "allowed-once", remember: "forever" })],
    ["an answer whose outcome getter throws", () =>
      Object.defineProperty({}, "outcome", {
        enumerable: true,
        get: () => {
          throw new Error("hostile outcome")
        }
      })],
    ...Hostile.kinds.map((kind) => [kind, () => Hostile.make(kind, { outcome: "allowed-once" })] as const)
  ]
  for (const [label, make] of rogue) {
    const kindOfValue = answers.has(label)
    it.scoped(`APPR-6 / D-7 / T-APPR-014: ${label} (holding \`allowed-once\`) as the answer ${kindOfValue ? "is an answer, read safely" : "is outside the vocabulary: \`unavailable\`"}`, () =>
      Effect.gen(function*() {
        yield* answering(() => Effect.sync(() => make() as ApprovalService.Answer))
        const outcome = yield* ask()
        const records = yield* approvalRecords
        const decided = records[1] as ToolCallLog.ApprovalDecidedRecord
        if (kindOfValue) {
          assert.strictEqual(outcome, "allowed-once", "a plain object holding a valid outcome is an answer")
          assert.strictEqual(decided.by, "answerer")
        } else {
          assert.strictEqual(outcome, "unavailable")
          assert.deepStrictEqual(records, pair(askedFor("a-1"), "unavailable", "error"))
        }
      }).pipe(Effect.provide(layerService())))
  }

  it.scoped("APPR-6 / D-7: an answer's fields are read exactly once", () =>
    Effect.gen(function*() {
      const remember = Hostile.counted({ scope: "global", match: "tool", ttl: undefined })
      const answer = Hostile.counted({ outcome: "allowed-once", remember: remember.value })
      yield* answering(() => Effect.succeed(answer.value as ApprovalService.Answer))
      assert.strictEqual(yield* ask(), "allowed-once")
      assert.deepStrictEqual(Object.fromEntries(answer.reads), { outcome: 1, remember: 1 })
      assert.deepStrictEqual(Object.fromEntries(remember.reads), { scope: 1, match: 1, ttl: 1 })
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("APPR-6 / T-APPR-020: once the answerer's owner is disposed, later requests are `unavailable`", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* Scope.extend(answering(() => Effect.succeed("allowed-once")), scope)
      assert.strictEqual(yield* ask(), "allowed-once")
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* ask(makeRequest({ callId: "c2" })), "unavailable")
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6: an answerer's services are captured when it is registered", () => {
    class Verdict extends Context.Tag("test/Verdict")<Verdict, { readonly outcome: Approval.ApprovalOutcome }>() {}
    return Effect.gen(function*() {
      yield* answering(() => Effect.map(Verdict, (v) => v.outcome)).pipe(
        Effect.provideService(Verdict, { outcome: "rejected" })
      )
      assert.strictEqual(yield* ask(), "rejected")
    }).pipe(Effect.provide(layerService()))
  })

  it.scoped("APPR-6: a request it cannot use fails with ApprovalRequestError and nothing is appended", () =>
    Effect.gen(function*() {
      const bad: ReadonlyArray<unknown> = [
        null,
        Hostile.throwingProxy(),
        { ...makeRequest(), signal: { aborted: false } },
        { ...makeRequest(), agent: 7 },
        { ...makeRequest(), argumentsDigest: undefined },
        { ...makeRequest(), reason: Hostile.nullProto() }
      ]
      for (const request of bad) {
        const exit = yield* Effect.exit(ask(request as Approval.ApprovalRequest))
        assert.isTrue(Exit.isFailure(exit))
        const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        assert.instanceOf(Option.getOrThrow(failure), Approval.ApprovalRequestError)
      }
      assert.deepStrictEqual(yield* approvalRecords, [])
    }).pipe(Effect.provide(layerService())))

  it.scoped("D-18: audit records hold the arguments' digest, never their values", () =>
    Effect.gen(function*() {
      const request = makeRequest({ arguments: { path: "/etc/secret-value-xyz", force: true } })
      yield* answering(() => Effect.succeed("rejected"))
      yield* ask(request)
      const records = yield* approvalRecords
      assert.strictEqual((records[0] as ToolCallLog.ApprovalAskedRecord).argumentsDigest, request.argumentsDigest)
      assert.match(request.argumentsDigest, /^[0-9a-f]{64}$/)
      assert.notInclude(JSON.stringify(records), "secret-value-xyz")
    }).pipe(Effect.provide(layerService())))
})

describe("ApprovalService: policies (APPR-6)", () => {
  it.scoped("APPR-6 / T-APPR-025: policy `never` rejects without consulting answerers; the pair is still recorded", () =>
    Effect.gen(function*() {
      const answerer = counting("allowed-once")
      yield* answering(answerer.answerer)
      yield* setPolicy("never")
      assert.strictEqual(yield* ask(), "rejected")
      assert.strictEqual(answerer.seen.length, 0)
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "rejected", "policy"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / T-APPR-026: `never` decides first, whatever was registered before it", () =>
    Effect.gen(function*() {
      const early = counting("allowed-once")
      yield* answering(early.answerer, { prepend: true })
      yield* setPolicy("never", { agent: "main" })
      assert.strictEqual(yield* ask(), "rejected")
      assert.strictEqual(early.seen.length, 0)
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / T-APPR-027: `never` is unbypassable: an answerer prepended later is never consulted", () =>
    Effect.gen(function*() {
      yield* setPolicy("never")
      const late = counting("allowed-once")
      yield* answering(late.answerer, { prepend: true })
      yield* answering(late.answerer, { agent: "main", prepend: true })
      assert.strictEqual(yield* ask(), "rejected")
      assert.strictEqual(late.seen.length, 0)
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "rejected", "policy"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6: the deployment default comes from the layer options", () =>
    Effect.gen(function*() {
      const s = yield* service
      assert.strictEqual(yield* s.policy("main"), "never")
      assert.strictEqual(yield* ask(), "rejected")
      yield* setPolicy("ask", { agent: "main" })
      assert.strictEqual(yield* s.policy("main"), "ask")
      assert.strictEqual(yield* ask(), "unavailable")
    }).pipe(Effect.provide(layerService({ policy: "never" }))))

  it.scoped("APPR-6: per agent at run time: the nearest setting in the chain wins, the latest of a scope, until its scope closes", () =>
    Effect.gen(function*() {
      yield* agents
      const s = yield* service
      const policyOf = (agent: string) => s.policy(agent)
      yield* setPolicy("never", { agent: "lead" })
      assert.deepStrictEqual(
        [yield* policyOf("lead"), yield* policyOf("worker"), yield* policyOf("other")],
        ["never", "never", "ask"]
      )
      const scope = yield* Scope.make()
      yield* Scope.extend(setPolicy("ask", { agent: "worker" }), scope)
      assert.deepStrictEqual([yield* policyOf("lead"), yield* policyOf("worker")], ["never", "ask"])
      const later = yield* Scope.make()
      yield* Scope.extend(setPolicy("never", { agent: "worker" }), later)
      assert.strictEqual(yield* policyOf("worker"), "never", "the latest contribution of a scope wins")
      yield* Scope.close(later, Exit.void)
      assert.strictEqual(yield* policyOf("worker"), "ask")
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* policyOf("worker"), "never")
      yield* setPolicy("never")
      assert.strictEqual(yield* policyOf("other"), "never", "the global setting covers agents without their own")
      assert.strictEqual(yield* ask(makeRequest({ agent: "worker" })), "rejected")
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / T-APPR-033: closed vocabularies — a policy or option outside them is a defect", () =>
    Effect.gen(function*() {
      const s = yield* service
      const defects = [
        s.setPolicy("sometimes" as ApprovalService.Policy),
        s.setPolicy("never", { agent: 7 as unknown as string }),
        s.answer("yes" as unknown as ApprovalService.Answerer),
        s.answer(() => Effect.succeed(undefined), Hostile.throwingProxy() as ApprovalService.AnswerOptions)
      ]
      for (const effect of defects) {
        const exit = yield* Effect.exit(effect)
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
        const defect = Exit.isFailure(exit) ? Option.getOrThrow(Cause.dieOption(exit.cause)) : undefined
        assert.instanceOf(defect, Cause.IllegalArgumentException)
      }
      assert.strictEqual(yield* s.policy("main"), "ask")
      const layerExit = yield* Effect.exit(
        Layer.build(layerService({ policy: "maybe" as ApprovalService.Policy }))
      )
      assert.isTrue(Exit.isFailure(layerExit) && Cause.isDie(layerExit.cause))
    }).pipe(Effect.provide(layerService())))
})

describe("ApprovalService: cancellation (APPR-6, D-14)", () => {
  it.scoped("APPR-6: a signal already aborted → `cancelled` without consulting anyone (by abort)", () =>
    Effect.gen(function*() {
      const answerer = counting("allowed-once")
      yield* answering(answerer.answerer)
      const controller = new AbortController()
      controller.abort()
      assert.strictEqual(yield* ask(makeRequest({ signal: controller.signal })), "cancelled")
      assert.strictEqual(answerer.seen.length, 0)
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "cancelled", "abort"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / D-14: an abort while waiting → `cancelled` at once; the waiting answerer is interrupted, nothing late", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      yield* answering(() =>
        Effect.zipRight(Deferred.succeed(entered, undefined), Effect.never).pipe(
          Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
        )
      )
      const controller = new AbortController()
      const fiber = yield* Effect.fork(ask(makeRequest({ signal: controller.signal })))
      yield* Deferred.await(entered)
      controller.abort()
      assert.strictEqual(yield* Fiber.join(fiber), "cancelled")
      yield* Deferred.await(interrupted)
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "cancelled", "abort"))
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / D-14: interrupting the request itself decides `cancelled` (by abort), audited", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      yield* answering(() => Effect.zipRight(Deferred.succeed(entered, undefined), Effect.never))
      const fiber = yield* Effect.fork(ask())
      yield* Deferred.await(entered)
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "cancelled", "abort"))
    }).pipe(Effect.provide(layerService())))

  /** A Promise answerer the test settles by hand. */
  const promised = () => {
    let settle: { resolve: (answer: ApprovalService.Answer) => void; reject: (error: unknown) => void } | undefined
    const entered = Deferred.unsafeMake<void>(FiberId.none)
    const answerer: ApprovalService.Answerer = () =>
      new Promise<ApprovalService.Answer>((resolve, reject) => {
        settle = { resolve, reject }
        Deferred.unsafeDone(entered, Exit.void)
      })
    return { answerer, entered, settle: () => settle! }
  }

  it.scoped("APPR-6: a Promise answer arriving after the abort is discarded, audited as `approval/late`; its remember stores nothing", () =>
    Effect.gen(function*() {
      const person = promised()
      yield* answering(person.answerer)
      const controller = new AbortController()
      const fiber = yield* Effect.fork(ask(makeRequest({ signal: controller.signal })))
      yield* Deferred.await(person.entered)
      controller.abort()
      assert.strictEqual(yield* Fiber.join(fiber), "cancelled", "decided at once, the answerer still running")
      person.settle().resolve({ outcome: "allowed-once", remember: { scope: "global", match: "tool" } })
      const records = yield* untilRecords(3)
      assert.deepStrictEqual(records, [
        ...pair(askedFor("a-1"), "cancelled", "abort"),
        { _tag: "approval/late", id: "a-1", outcome: "allowed-once", by: "answerer" }
      ])
      const grants = yield* ApprovalGrants.ApprovalGrants
      assert.deepStrictEqual(yield* grants.list, [])
      const [entry] = yield* audit
      assert.deepStrictEqual(entry!.late, [records[2] as ToolCallLog.ApprovalLateRecord])
      assert.strictEqual(entry!.decided!.outcome, "cancelled")
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("APPR-6 / T-APPR-017: a Promise answerer rejecting after the abort causes no unhandled rejection; audited late as error", () =>
    Effect.gen(function*() {
      const person = promised()
      yield* answering(person.answerer)
      const controller = new AbortController()
      const fiber = yield* Effect.fork(ask(makeRequest({ signal: controller.signal })))
      yield* Deferred.await(person.entered)
      controller.abort()
      assert.strictEqual(yield* Fiber.join(fiber), "cancelled")
      person.settle().reject(Hostile.throwingProxy())
      const records = yield* untilRecords(3)
      assert.deepStrictEqual(records[2], { _tag: "approval/late", id: "a-1", outcome: "unavailable", by: "error" })
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6: a Promise answerer answering in time decides; a rejecting one is `unavailable` (by error)", () =>
    Effect.gen(function*() {
      const person = promised()
      yield* answering(person.answerer)
      const fiber = yield* Effect.fork(ask())
      yield* Deferred.await(person.entered)
      person.settle().resolve("allowed-once")
      assert.strictEqual(yield* Fiber.join(fiber), "allowed-once")
      const second = yield* Effect.fork(ask(makeRequest({ callId: "c2" })))
      yield* isPending(second)
      person.settle().reject(new Error("no"))
      assert.strictEqual(yield* Fiber.join(second), "unavailable")
      const records = yield* approvalRecords
      assert.deepStrictEqual(records.map((r) => r._tag === "approval/decided" ? r.by : r._tag), [
        "approval/asked",
        "answerer",
        "approval/asked",
        "error"
      ])
    }).pipe(Effect.provide(layerService())))

  it.scoped("APPR-6 / D-14: an Effect answerer cannot answer late: its interruption wins over an uninterruptible region", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const finished = yield* Deferred.make<void>()
      yield* answering(() =>
        Effect.uninterruptible(
          Effect.zipRight(
            Effect.zipRight(Deferred.succeed(entered, undefined), Deferred.await(release)),
            Effect.as(Deferred.succeed(finished, undefined), "allowed-once" as const)
          )
        )
      )
      const controller = new AbortController()
      const fiber = yield* Effect.fork(ask(makeRequest({ signal: controller.signal })))
      yield* Deferred.await(entered)
      controller.abort()
      assert.strictEqual(yield* Fiber.join(fiber), "cancelled")
      yield* Deferred.succeed(release, undefined)
      yield* Deferred.await(finished)
      yield* settle
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "cancelled", "abort"))
    }).pipe(Effect.provide(layerService())))
})

describe("ApprovalService: audit containment (T-APPR-006/007)", () => {
  const failingOn = (tag: string, how: "fail" | "die") =>
    layerFailing({
      failWhen: (record) => {
        if (record._tag !== tag) return false
        if (how === "die") throw new Error("log observer exploded")
        return true
      },
      message: "tool call log append failed: disk full"
    })

  for (const how of ["fail", "die"] as const) {
    it.scoped(`D-7 / D-22: an asked append that ${how}s decides \`unavailable\` (by error) without asking anyone; one warning`, () => {
      const { layer, lines } = captureWarnings()
      return Effect.gen(function*() {
        const answerer = counting("allowed-once")
        yield* answering(answerer.answerer)
        assert.strictEqual(yield* ask(), "unavailable")
        assert.strictEqual(answerer.seen.length, 0, "an unaudited request is put to no answerer")
        assert.deepStrictEqual(yield* approvalRecords, [pair(askedFor("a-1"), "unavailable", "error")[1]])
        assert.strictEqual(lines.length, 1)
        assert.include(lines[0], "approval a-1: the audit record approval/asked could not be written (the request decides unavailable)")
        assert.include(lines[0], how === "fail" ? "disk full" : "log observer exploded")
      }).pipe(Effect.provide(Layer.merge(layerService({}, failingOn("approval/asked", how)), layer)))
    })

    it.scoped(`D-7 / D-22: a decided append that ${how}s turns an approval into \`unavailable\`; one warning`, () => {
      const { layer, lines } = captureWarnings()
      return Effect.gen(function*() {
        yield* answering(() => Effect.succeed("allowed-once"))
        assert.strictEqual(yield* ask(), "unavailable")
        assert.deepStrictEqual(yield* approvalRecords, [pair(askedFor("a-1"), "allowed-once", "answerer")[0]])
        assert.strictEqual(lines.length, 1)
        assert.include(lines[0], "approval a-1: the audit record approval/decided could not be written")
      }).pipe(Effect.provide(Layer.merge(layerService({}, failingOn("approval/decided", how)), layer)))
    })

    it.scoped(`D-22 (supersedes T-APPR-007): a decided append that ${how}s makes a rejection \`unavailable\` too`, () => {
      const { layer, lines } = captureWarnings()
      return Effect.gen(function*() {
        yield* answering(() => Effect.succeed("rejected"))
        assert.strictEqual(yield* ask(), "unavailable")
        assert.deepStrictEqual(yield* approvalRecords, [pair(askedFor("a-1"), "rejected", "answerer")[0]])
        assert.strictEqual(lines.length, 1)
      }).pipe(Effect.provide(Layer.merge(layerService({}, failingOn("approval/decided", how)), layer)))
    })
  }

  it.scoped("D-7 / D-22: the grant an unaudited \"always allow\" stored is revoked: it approves nothing later", () => {
    const { layer } = captureWarnings()
    return Effect.gen(function*() {
      yield* answering(() => Effect.succeed({ outcome: "allowed-once", remember: { scope: "global", match: "tool" } }))
      assert.strictEqual(yield* ask(), "unavailable")
      const grants = yield* ApprovalGrants.ApprovalGrants
      assert.deepStrictEqual(yield* grants.list, [], "the remembered grant was revoked")
    }).pipe(Effect.provide(Layer.merge(layerServiceWithGrants({}, failingOn("approval/decided", "fail")), layer)))
  })
})

describe("ApprovalService: remembered grants (issue 10 item 3)", () => {
  const grants = ApprovalGrants.ApprovalGrants

  it.scoped("a live matching grant decides `allowed-once` (by grant:<id>) without consulting the answerers", () =>
    Effect.gen(function*() {
      const g = yield* grants
      const granted = yield* g.grant({ toolName: "rm" })
      const answerer = counting("rejected")
      yield* answering(answerer.answerer)
      assert.strictEqual(yield* ask(), "allowed-once")
      assert.strictEqual(answerer.seen.length, 0)
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "allowed-once", `grant:${granted.id}`))
      assert.strictEqual(yield* ask(makeRequest({ toolName: "ls" })), "rejected", "a grant for another tool does not match")
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("`never` still rejects when a grant matches (a grant only answers an ask the policy lets through)", () =>
    Effect.gen(function*() {
      yield* (yield* grants).grant({ toolName: "rm" })
      yield* setPolicy("never")
      assert.strictEqual(yield* ask(), "rejected")
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "rejected", "policy"))
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("match by arguments: only a request with the same digest is granted (key order does not matter)", () =>
    Effect.gen(function*() {
      const args = { path: "a.txt", force: true }
      yield* (yield* grants).grant({ toolName: "rm", argumentsDigest: Approval.argumentsDigest(args)! })
      assert.strictEqual(yield* ask(makeRequest({ arguments: { force: true, path: "a.txt" } })), "allowed-once")
      assert.strictEqual(yield* ask(makeRequest({ arguments: { path: "b.txt", force: true } })), "unavailable")
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("agent scope: a grant of a parent covers its children, not its siblings", () =>
    Effect.gen(function*() {
      yield* agents
      yield* (yield* grants).grant({ toolName: "rm", agent: "lead" })
      assert.strictEqual(yield* ask(makeRequest({ agent: "worker" })), "allowed-once")
      assert.strictEqual(yield* ask(makeRequest({ agent: "lead" })), "allowed-once")
      assert.strictEqual(yield* ask(makeRequest({ agent: "other" })), "unavailable")
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("expiry (TestClock) and revocation put the answerers back in charge", () =>
    Effect.gen(function*() {
      const g = yield* grants
      yield* g.grant({ toolName: "rm", ttl: "1 minute" })
      const forever = yield* g.grant({ toolName: "ls" })
      assert.strictEqual(yield* ask(), "allowed-once")
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(yield* ask(), "unavailable")
      assert.strictEqual(yield* ask(makeRequest({ toolName: "ls" })), "allowed-once")
      assert.isTrue(yield* g.revoke(forever.id))
      assert.strictEqual(yield* ask(makeRequest({ toolName: "ls" })), "unavailable")
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("remember { scope: agent, match: arguments, ttl } stores the grant, named in the decided record", () =>
    Effect.gen(function*() {
      yield* answering(() =>
        Effect.succeed<ApprovalService.Answer>({
          outcome: "allowed-once",
          remember: { scope: "agent", match: "arguments", ttl: "10 minutes" }
        })
      )
      const request = makeRequest({ agent: "main", arguments: { path: "a.txt" } })
      assert.strictEqual(yield* ask(request), "allowed-once")
      const [grant] = yield* (yield* grants).list
      assert.deepStrictEqual(grant, {
        id: "grant-1",
        toolName: "rm",
        agent: "main",
        argumentsDigest: request.argumentsDigest,
        createdAt: 0,
        expiresAt: 600_000
      })
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1", request), "allowed-once", "answerer", "grant-1"))
      assert.strictEqual(yield* ask(makeRequest({ agent: "main", callId: "c2", arguments: { path: "a.txt" } })), "allowed-once")
      const records = yield* approvalRecords
      assert.strictEqual((records[3] as ToolCallLog.ApprovalDecidedRecord).by, "grant:grant-1")
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("remember { scope: global, match: tool } covers every agent and every argument", () =>
    Effect.gen(function*() {
      let asked = 0
      yield* answering(() =>
        Effect.sync((): ApprovalService.Answer => {
          asked++
          return { outcome: "allowed-once", remember: { scope: "global", match: "tool" } }
        })
      )
      yield* ask(makeRequest({ agent: "a", arguments: { n: 1 } }))
      assert.strictEqual(yield* ask(makeRequest({ agent: "b", arguments: { n: 2 } })), "allowed-once")
      assert.strictEqual(asked, 1)
      const [grant] = yield* (yield* grants).list
      assert.deepStrictEqual(grant, { id: "grant-1", toolName: "rm", createdAt: 0 })
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("remember is honoured for `allowed-once` only", () =>
    Effect.gen(function*() {
      yield* answering(() =>
        Effect.succeed<ApprovalService.Answer>({ outcome: "rejected", remember: { scope: "global", match: "tool" } })
      )
      assert.strictEqual(yield* ask(), "rejected")
      assert.deepStrictEqual(yield* (yield* grants).list, [])
      assert.deepStrictEqual(yield* approvalRecords, pair(askedFor("a-1"), "rejected", "answerer"))
    }).pipe(Effect.provide(layerServiceWithGrants())))

  it.scoped("without an ApprovalGrants service, remember counts once and one warning says so", () => {
    const { layer, lines } = captureWarnings()
    return Effect.gen(function*() {
      let asked = 0
      yield* answering(() =>
        Effect.sync((): ApprovalService.Answer => {
          asked++
          return { outcome: "allowed-once", remember: { scope: "global", match: "tool" } }
        })
      )
      assert.strictEqual(yield* ask(), "allowed-once")
      assert.strictEqual(yield* ask(), "allowed-once")
      assert.strictEqual(asked, 2)
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0], "no ApprovalGrants service is provided")
      assert.deepStrictEqual(
        yield* approvalRecords,
        [...pair(askedFor("a-1"), "allowed-once", "answerer"), ...pair(askedFor("a-2"), "allowed-once", "answerer")]
      )
    }).pipe(Effect.provide(Layer.merge(layerService(), layer)))
  })

  it.scoped("a remember the grants service refuses (a bad ttl) counts once with a warning; the answer stands", () => {
    const { layer, lines } = captureWarnings()
    return Effect.gen(function*() {
      yield* answering(() =>
        Effect.succeed<ApprovalService.Answer>({
          outcome: "allowed-once",
          remember: { scope: "global", match: "tool", ttl: -5 }
        })
      )
      assert.strictEqual(yield* ask(), "allowed-once")
      assert.deepStrictEqual(yield* (yield* grants).list, [])
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0], "the remembered grant could not be stored")
    }).pipe(Effect.provide(Layer.merge(layerServiceWithGrants(), layer)))
  })

  it.scoped("grants that cannot be read are skipped with a warning: the answerers decide", () => {
    const { layer, lines } = captureWarnings()
    const broken = Layer.succeed(ApprovalGrants.ApprovalGrants, {
      grant: () => Effect.fail(new ApprovalGrants.ApprovalGrantsError({ message: "grants store down" })),
      find: () => Effect.fail(new ApprovalGrants.ApprovalGrantsError({ message: "grants store down" })),
      revoke: () => Effect.succeed(false),
      list: Effect.succeed([])
    })
    return Effect.gen(function*() {
      yield* answering(() => Effect.succeed("rejected"))
      assert.strictEqual(yield* ask(), "rejected")
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0], "approval grants could not be read, so the answerers are asked: grants store down")
    }).pipe(Effect.provide(Layer.merge(layerService().pipe(Layer.provide(broken)), layer)))
  })
})

describe("ApprovalService: layer", () => {
  it.effect("closing the layer interrupts the answerers still running; their requests decide `unavailable` (by error)", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(layerService(), scope)
      const entered = yield* Deferred.make<void>()
      let interrupted = 0
      yield* Effect.flatMap(service, (s) =>
        s.answer(() =>
          Effect.zipRight(Deferred.succeed(entered, undefined), Effect.never).pipe(
            Effect.onInterrupt(() => Effect.sync(() => void interrupted++))
          )
        )).pipe(Effect.provide(context), Scope.extend(scope))
      const fiber = yield* Effect.fork(Effect.provide(ask(), context))
      yield* Deferred.await(entered)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(interrupted, 1)
      assert.strictEqual(yield* Fiber.join(fiber), "unavailable")
      assert.deepStrictEqual(
        yield* Effect.provide(approvalRecords, context),
        pair(askedFor("a-1"), "unavailable", "error")
      )
    }))

  it.scoped("approval ids are random UUIDs by default; `ids` makes them deterministic", () =>
    Effect.gen(function*() {
      yield* ask()
      const [asked] = yield* approvalRecords
      assert.match(asked!.id, /^[0-9a-f-]{36}$/)
    }).pipe(
      Effect.provide(
        ApprovalService.layer().pipe(Layer.provideMerge(Layer.mergeAll(InMemoryToolRegistry.layer, ToolCallLogMemory.layer)))
      )
    ))

  it.scoped("the audit query groups each approval's records by id", () =>
    Effect.gen(function*() {
      yield* answering(() => Effect.succeed("rejected"))
      yield* ask(makeRequest({ callId: "x" }))
      yield* ask(makeRequest({ callId: "y", reason: "why" }))
      const entries = yield* audit
      assert.deepStrictEqual(entries.map((e) => [e.id, e.asked?.callId, e.decided?.outcome]), [
        ["a-1", "x", "rejected"],
        ["a-2", "y", "rejected"]
      ])
    }).pipe(Effect.provide(layerService({ ids: IdGenerator.counter("a-") }))))
})
