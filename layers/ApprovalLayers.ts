/**
 * Layers of the `Approval` service (the Tag lives in the root module `Approval`): deny-all,
 * unavailable, approve-all, scripted answers, and an interactive channel a person answers —
 * either as the whole approval service ({@link layerInteractive}) or as one answerer of the
 * audited `ApprovalService` ({@link layerInteractiveAnswerer}, {@link layerInteractiveService}).
 * Providing no Approval at all means every `ask` is denied (APPR-1).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import type * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import {
  Approval,
  type ApprovalOutcome,
  type ApprovalRequest,
  ApprovalRequestError as RequestError,
  make
} from "../src/Approval.js"
import * as ApprovalService from "../src/ApprovalService.js"
import type { ToolCallLog } from "../src/ToolCallLog.js"
import type { ToolRegistry } from "../src/ToolRegistry.js"
import { ApprovalAnswerError } from "./internal/approval/answerError.js"
import * as answerErrors from "./internal/approval/answerError.js"
import { makeChannel, outcomeOf } from "./internal/approval/channel.js"

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
 * A request waiting for an answer from a person.
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingApproval {
  /** Stable for the lifetime of the layer (`approval-<n>`, in arrival order). */
  readonly id: string
  readonly request: ApprovalRequest
  /**
   * Answers the request (see {@link Interactive.answer}); fails with {@link ApprovalAnswerError}
   * when it is no longer pending.
   */
  readonly answer: (answer: ApprovalService.Answer) => Effect.Effect<void, ApprovalAnswerError>
}

/**
 * The person's side of the interactive approval channel. Everything here can be used from any
 * fiber (or an HTTP handler running its own runtime).
 *
 * A request is pending from the moment it arrives until it is answered, its signal aborts, its
 * wait is interrupted or the layer closes; it is then removed, so nothing of it is retained (the
 * channel keeps one byte per request it issued, so it can say why an id is no longer pending).
 *
 * @since 0.1.0
 * @category models
 */
export interface Interactive {
  /** The requests pending now, oldest first (a snapshot). */
  readonly pending: Effect.Effect<ReadonlyArray<PendingApproval>>
  /**
   * Each pending request once, oldest first: those pending when the stream is pulled, then
   * each new arrival. Nothing is buffered per consumer: a request removed before it is pulled
   * is skipped. Ends when the layer closes. Every run is an independent consumer.
   */
  readonly arrivals: Stream.Stream<PendingApproval>
  /**
   * Answers the pending request `id` with an outcome, or `{ outcome, remember }` ("always
   * allow", honoured by the approval service when the outcome is `allowed-once`). The answer is
   * read once, when it is given; a value outside the vocabulary decides `unavailable` (D-7).
   * Fails with {@link ApprovalAnswerError} when `id` is not pending: never issued (`unknown`),
   * already answered (`answered`), abandoned by its call (`cancelled`) or ended by the layer
   * closing (`closed`).
   */
  readonly answer: (id: string, answer: ApprovalService.Answer) => Effect.Effect<void, ApprovalAnswerError>
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
 * The interactive layer refused a request it cannot watch: the request is not an object with
 * a real `AbortSignal` as `signal` (the runtime maps the failure to `unavailable`, D-7). The
 * same class as `Approval.ApprovalRequestError`.
 *
 * @since 0.1.0
 * @category errors
 */
export const ApprovalRequestError = RequestError

/**
 * @since 0.1.0
 * @category errors
 */
export type ApprovalRequestError = RequestError

/**
 * Why an answer was refused: the id was never issued by this channel (`unknown`), an answer
 * already decided it (`answered`), its call stopped waiting first — an abort or an interruption
 * (`cancelled`) — or the layer closed (`closed`).
 *
 * @since 0.1.0
 * @category errors
 */
export const ApprovalAnswerErrorReason = answerErrors.ApprovalAnswerErrorReason

/**
 * @since 0.1.0
 * @category errors
 */
export type ApprovalAnswerErrorReason = Schema.Schema.Type<typeof ApprovalAnswerErrorReason>

export {
  /**
   * An answer was given for a request that is not pending. `id` is the id given (`""` when it was
   * not a string). Nothing was decided by it.
   *
   * @since 0.1.0
   * @category errors
   */
  ApprovalAnswerError
}

/**
 * Approval through a channel a person answers, as the whole approval service (no audit, no
 * policies, no grants — for those use {@link layerInteractiveService}): each request becomes
 * pending on `InteractiveApprovals` (`pending`, `arrivals`) and waits for an answer; a
 * `remember` in the answer is ignored. Its signal aborting, or the request Effect being
 * interrupted, resolves it `cancelled` and removes it; an already aborted signal is `cancelled`
 * without becoming pending. Exactly one outcome per request: the first of answer, abort,
 * interruption or layer close wins; later answers fail with {@link ApprovalAnswerError}.
 * Requests after the layer closed, and those pending when it closes, are `unavailable`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerInteractive: Layer.Layer<Approval | InteractiveApprovals> = Layer.scopedContext(
  Effect.map(makeChannel, (channel) => {
    const service = make((request) => Effect.map(channel.ask(request), outcomeOf))
    return Context.make(Approval, service).pipe(Context.add(InteractiveApprovals, channel.interactive()))
  })
)

const ROGUE_ANSWER: unknown = Object.freeze({ rogue: true })

/**
 * The interactive channel as an answerer of the `ApprovalService` in context, registered for
 * the layer's lifetime (globally, or for `options.agent`'s requests): requests the service puts
 * to the answerers become pending on `InteractiveApprovals`, and the person's answer — with
 * `remember` for "always allow" — is the answerer's answer (a value outside the vocabulary is
 * the answerer's error: `unavailable`). When the call aborts, the service decides `cancelled`
 * and the request leaves the channel; answering it then fails (`cancelled`). When this layer
 * closes, the requests still pending are answered `unavailable`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerInteractiveAnswerer = (
  options?: ApprovalService.AnswerOptions
): Layer.Layer<InteractiveApprovals, never, ApprovalService.ApprovalService> =>
  Layer.scoped(
    InteractiveApprovals,
    Effect.gen(function*() {
      const channel = yield* makeChannel
      const service = yield* ApprovalService.ApprovalService
      yield* service.answer((request) =>
        Effect.flatMap(channel.ask(request), (resolution) => {
          switch (resolution._tag) {
            case "Answered":
              return Effect.succeed<ApprovalService.Answer | undefined>(resolution.answer)
            case "Rogue":
              return Effect.succeed(ROGUE_ANSWER as ApprovalService.Answer)
            case "Closed":
              return Effect.succeed<ApprovalService.Answer | undefined>("unavailable")
            case "Cancelled":
              return Effect.succeed(undefined)
          }
        }), options)
      return channel.interactive()
    })
  )

/**
 * The audited `ApprovalService` with a person answering through `InteractiveApprovals`: the
 * service's Layer (`options` as `ApprovalService.layer`) with {@link layerInteractiveAnswerer}
 * registered globally. Needs the log it audits to and the registry (`Presets.layerApproval`
 * wires both); uses an `ApprovalGrants` service when one is provided.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerInteractiveService = (
  options?: ApprovalService.Options
): Layer.Layer<
  Approval | ApprovalService.ApprovalService | InteractiveApprovals,
  never,
  ToolCallLog | ToolRegistry
> => layerInteractiveAnswerer().pipe(Layer.provideMerge(ApprovalService.layer(options)))
