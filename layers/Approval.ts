/**
 * Approval Layers: deny-all, unavailable, approve-all, scripted answers, and an interactive
 * queue an application answers. (Providing no Approval at all means every `ask` is denied,
 * APPR-1.)
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import { Approval, type ApprovalOutcome, type ApprovalRequest, make } from "../src/Approval.js"

/**
 * Answers every request with `outcome`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConstant = (outcome: ApprovalOutcome): Layer.Layer<Approval> =>
  Layer.succeed(Approval, make(() => Effect.succeed(outcome)))

/**
 * Rejects every request (`the user rejected tool "<name>"`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDenyAll: Layer.Layer<Approval> = layerConstant("rejected")

/**
 * A mounted service with no channel: every request is `unavailable`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerUnavailable: Layer.Layer<Approval> = layerConstant("unavailable")

/**
 * Approves every request once. For tests and local development only.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerApproveAll: Layer.Layer<Approval> = layerConstant("allowed-once")

/**
 * One scripted answer: an outcome, or an Effect computing it from the request.
 *
 * @since 0.1.0
 * @category models
 */
export type ScriptedAnswer = ApprovalOutcome | ((request: ApprovalRequest) => Effect.Effect<ApprovalOutcome, unknown>)

/**
 * A scripted service and the requests it received (signals included), in order.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scripted {
  readonly requests: Effect.Effect<ReadonlyArray<ApprovalRequest>>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ScriptedApprovals extends Context.Tag("effect-tool-runtime/layers/ScriptedApprovals")<
  ScriptedApprovals,
  Scripted
>() {}

/**
 * Answers requests from `answers` in order; once exhausted, `unavailable`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerScripted = (answers: ReadonlyArray<ScriptedAnswer>): Layer.Layer<Approval | ScriptedApprovals> =>
  Layer.effectContext(Effect.gen(function*() {
    const cursor = yield* Ref.make(0)
    const seen = yield* Ref.make<ReadonlyArray<ApprovalRequest>>([])
    const service = make((request) =>
      Effect.gen(function*() {
        yield* Ref.update(seen, (all) => [...all, request])
        const index = yield* Ref.getAndUpdate(cursor, (n) => n + 1)
        const answer = answers[index]
        if (answer === undefined) return "unavailable" as const
        return typeof answer === "function" ? yield* answer(request) : answer
      })
    )
    return Context.make(Approval, service).pipe(Context.add(ScriptedApprovals, { requests: Ref.get(seen) }))
  }))

/**
 * A request waiting for an answer from the application.
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingApproval {
  readonly request: ApprovalRequest
  /** Answers the request; `false` when it was already answered or cancelled. */
  readonly answer: (outcome: ApprovalOutcome) => Effect.Effect<boolean>
}

/**
 * The application's side of the interactive approval channel.
 *
 * @since 0.1.0
 * @category models
 */
export interface Interactive {
  /** Pending requests, in arrival order. A request whose caller aborted is answered `cancelled`. */
  readonly pending: Queue.Dequeue<PendingApproval>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class InteractiveApprovals extends Context.Tag("effect-tool-runtime/layers/InteractiveApprovals")<
  InteractiveApprovals,
  Interactive
>() {}

/**
 * Approval through an application-answered queue: each request is offered to
 * `InteractiveApprovals.pending` and waits for `answer`; the caller aborting (or the wait being
 * interrupted) resolves it as `cancelled`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerInteractive: Layer.Layer<Approval | InteractiveApprovals> = Layer.scopedContext(
  Effect.gen(function*() {
    const queue = yield* Effect.acquireRelease(Queue.unbounded<PendingApproval>(), Queue.shutdown)
    const service = make((request) =>
      Effect.gen(function*() {
        const decided = yield* Deferred.make<ApprovalOutcome>()
        yield* Queue.offer(queue, { request, answer: (outcome) => Deferred.succeed(decided, outcome) })
        return yield* Effect.raceFirst(
          Deferred.await(decided),
          Effect.async<ApprovalOutcome>((resume) => {
            const signal = request.signal
            if (signal.aborted) {
              Deferred.unsafeDone(decided, Exit.succeed("cancelled"))
              return resume(Effect.succeed("cancelled"))
            }
            const onAbort = () => {
              Deferred.unsafeDone(decided, Exit.succeed("cancelled"))
              resume(Effect.succeed("cancelled"))
            }
            signal.addEventListener("abort", onAbort, { once: true })
            return Effect.sync(() => signal.removeEventListener("abort", onAbort))
          })
        ).pipe(Effect.onInterrupt(() => Deferred.succeed(decided, "cancelled")))
      })
    )
    return Context.make(Approval, service).pipe(Context.add(InteractiveApprovals, { pending: queue }))
  })
)
