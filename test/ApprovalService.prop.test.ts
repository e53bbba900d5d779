/**
 * The audit pairing invariant under random interleavings (issue 10 tests): however answers and
 * aborts interleave — with Effect answerers (interrupted by an abort) and Promise answerers
 * (which may answer late) — every `approval/asked` gets exactly one `approval/decided`, with the
 * outcome of whichever came first, and a late record exactly when a Promise answer followed the
 * abort. An answer given first is let arrive before the next step (it travels on the answerer's
 * own fiber or a Promise job); aborts are synchronous.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, FastCheck, Fiber } from "effect"
import * as Approval from "../src/Approval.js"
import * as ApprovalService from "../src/ApprovalService.js"
import type * as ToolCallLog from "../src/ToolCallLog.js"
import { approvalRecords, ask, layerService, makeRequest } from "./fixtures/approval.js"
import { settle } from "./fixtures/runtime.js"

type Kind = "effect" | "promise"

type Action =
  | { readonly _tag: "answer"; readonly target: number; readonly outcome: Approval.ApprovalOutcome }
  | { readonly _tag: "abort"; readonly target: number }

const scenario = FastCheck.integer({ min: 1, max: 4 }).chain((n) =>
  FastCheck.record({
    kinds: FastCheck.array(FastCheck.constantFrom<Kind>("effect", "promise"), { minLength: n, maxLength: n }),
    steps: FastCheck.array(
      FastCheck.record({
        action: FastCheck.oneof(
          FastCheck.record({
            _tag: FastCheck.constant("answer" as const),
            target: FastCheck.integer({ min: 0, max: n - 1 }),
            outcome: FastCheck.constantFrom(...Approval.outcomes)
          }),
          FastCheck.record({ _tag: FastCheck.constant("abort" as const), target: FastCheck.integer({ min: 0, max: n - 1 }) })
        ) as FastCheck.Arbitrary<Action>,
        yieldAfter: FastCheck.boolean()
      }),
      { maxLength: 12 }
    )
  })
)

interface Gate {
  answer: (answer: ApprovalService.Answer) => void
}

describe("ApprovalService (property)", () => {
  it.live.prop(
    "APPR-6: random answer/abort interleavings give exactly one decided per asked, with the first event's outcome",
    [scenario],
    ([{ kinds, steps }]) =>
      Effect.gen(function*() {
        const n = kinds.length
        const gates: Array<Gate | undefined> = Array.from({ length: n }, () => undefined)
        const entered = yield* Deferred.make<void>()
        let arrived = 0
        const arrive = (index: number, gate: Gate) => {
          gates[index] = gate
          if (++arrived === n) Deferred.unsafeDone(entered, Effect.void)
        }
        const service = yield* ApprovalService.ApprovalService
        yield* service.answer((request) => {
          const index = Number(request.callId.slice(1))
          if (kinds[index] === "promise") {
            return new Promise<ApprovalService.Answer>((resolve) => arrive(index, { answer: resolve }))
          }
          return Effect.flatMap(Deferred.make<ApprovalService.Answer>(), (answered) =>
            Effect.zipRight(
              Effect.sync(() => arrive(index, { answer: (answer) => Deferred.unsafeDone(answered, Effect.succeed(answer)) })),
              Deferred.await(answered)
            ))
        })
        const controllers = kinds.map(() => new AbortController())
        const fibers = yield* Effect.forEach(
          controllers,
          (controller, i) => Effect.fork(ask(makeRequest({ callId: `c${i}`, signal: controller.signal })))
        )
        yield* Deferred.await(entered)

        const first: Array<Action | undefined> = kinds.map(() => undefined)
        const answeredWith: Array<Approval.ApprovalOutcome | undefined> = kinds.map(() => undefined)
        const answer = (target: number, outcome: Approval.ApprovalOutcome) => {
          if (answeredWith[target] === undefined) answeredWith[target] = outcome
          gates[target]!.answer(outcome)
        }
        for (const { action, yieldAfter } of steps) {
          first[action.target] ??= action
          if (action._tag === "answer") {
            answer(action.target, action.outcome)
            // An answer is delivered on the answerer's own fiber (or a Promise job): let it arrive.
            if (first[action.target] === action) yield* Fiber.await(fibers[action.target]!)
          } else {
            controllers[action.target]!.abort()
          }
          if (yieldAfter) yield* Effect.yieldNow()
        }
        for (let i = 0; i < n; i++) {
          if (first[i] === undefined) {
            first[i] = { _tag: "abort", target: i }
            controllers[i]!.abort()
          }
        }
        const outcomes = yield* Fiber.joinAll(fibers)
        for (let i = 0; i < n; i++) {
          if (kinds[i] === "promise" && answeredWith[i] === undefined) answer(i, "rejected")
        }

        const expectedLate = kinds.map((kind, i) => kind === "promise" && first[i]!._tag === "abort")
        const total = 2 * n + expectedLate.filter(Boolean).length
        let records = yield* approvalRecords
        for (let i = 0; i < 1_000 && records.length < total; i++) {
          yield* Effect.yieldNow()
          records = yield* approvalRecords
        }
        yield* settle
        records = yield* approvalRecords

        const asked = records.filter((r): r is ToolCallLog.ApprovalAskedRecord => r._tag === "approval/asked")
        const decided = records.filter((r): r is ToolCallLog.ApprovalDecidedRecord => r._tag === "approval/decided")
        const late = records.filter((r): r is ToolCallLog.ApprovalLateRecord => r._tag === "approval/late")
        assert.strictEqual(asked.length, n)
        assert.strictEqual(new Set(asked.map((r) => r.id)).size, n, "ids are unique")
        for (let i = 0; i < n; i++) {
          const id = asked.find((r) => r.callId === `c${i}`)!.id
          const decisions = decided.filter((r) => r.id === id)
          assert.strictEqual(decisions.length, 1, `exactly one decided for c${i}`)
          const action = first[i]!
          const expected = action._tag === "answer"
            ? { outcome: action.outcome, by: "answerer" }
            : { outcome: "cancelled", by: "abort" }
          assert.deepStrictEqual({ outcome: decisions[0]!.outcome, by: decisions[0]!.by }, expected)
          assert.strictEqual(outcomes[i], expected.outcome)
          const lates = late.filter((r) => r.id === id)
          assert.deepStrictEqual(
            lates.map((r) => r.outcome),
            expectedLate[i] ? [answeredWith[i]] : [],
            `late records of c${i} (${kinds[i]})`
          )
          if (lates.length > 0) {
            assert.isTrue(records.indexOf(lates[0]!) > records.indexOf(decisions[0]!), "late comes after decided")
          }
        }
        assert.strictEqual(records.length, total)
      }).pipe(Effect.scoped, Effect.provide(layerService())),
    { fastCheck: { numRuns: 200 } }
  )
})
