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
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import {
  Approval,
  type ApprovalOutcome,
  type ApprovalRequest,
  ApprovalRequestError as RequestError,
  make
} from "../src/Approval.js"
import * as ApprovalService from "../src/ApprovalService.js"
import { readAnswer } from "../src/internal/approval/reading.js"
import type { ToolCallLog } from "../src/ToolCallLog.js"
import type { ToolRegistry } from "../src/ToolRegistry.js"

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
export const ApprovalAnswerErrorReason = Schema.Literal("unknown", "answered", "cancelled", "closed")

/**
 * @since 0.1.0
 * @category errors
 */
export type ApprovalAnswerErrorReason = Schema.Schema.Type<typeof ApprovalAnswerErrorReason>

/**
 * An answer was given for a request that is not pending. `id` is the id given (`""` when it was
 * not a string). Nothing was decided by it.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalAnswerError extends Schema.TaggedError<ApprovalAnswerError>(
  "effect-tool-runtime/layers/ApprovalAnswerError"
)("ApprovalAnswerError", { id: Schema.String, reason: ApprovalAnswerErrorReason, message: Schema.String }) {}

const INVALID_REQUEST = "an interactive approval request needs a real AbortSignal as `signal`"
const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!
const addListener = EventTarget.prototype.addEventListener
const removeListener = EventTarget.prototype.removeEventListener

/** How an entry ended. */
type Resolution =
  | { readonly _tag: "Answered"; readonly answer: ApprovalService.Answer }
  | { readonly _tag: "Rogue" }
  | { readonly _tag: "Cancelled" }
  | { readonly _tag: "Closed" }

const ROGUE: Resolution = { _tag: "Rogue" }
const CANCELLED: Resolution = { _tag: "Cancelled" }
const CLOSED: Resolution = { _tag: "Closed" }

const PENDING = 0
const ANSWERED = 1
const WAS_CANCELLED = 2
const WAS_CLOSED = 3

/** An answer read once into a fresh value (`remember.ttl` only when given). */
const resolve = (answer: unknown): Resolution => {
  const read = readAnswer(answer)
  if (read._tag !== "Answer") return ROGUE
  const remember = read.remember
  if (remember === undefined) return { _tag: "Answered", answer: read.outcome }
  const kept: ApprovalService.Remember = remember.ttl === undefined
    ? { scope: remember.scope, match: remember.match }
    : { scope: remember.scope, match: remember.match, ttl: remember.ttl as ApprovalService.Remember["ttl"] }
  return { _tag: "Answered", answer: { outcome: read.outcome, remember: kept } }
}

const quoteId = (id: unknown): string => {
  if (typeof id !== "string") return "with a non-string id"
  return JSON.stringify(id.length <= 60 ? id : `${id.slice(0, 60)}…`)
}

const answerError = (id: unknown, reason: ApprovalAnswerErrorReason): ApprovalAnswerError => {
  const q = quoteId(id)
  const message = reason === "unknown"
    ? `approval request ${q} is unknown: no request with this id was ever pending`
    : reason === "answered"
    ? `approval request ${q} was already answered`
    : reason === "cancelled"
    ? `approval request ${q} was cancelled: its call stopped waiting before an answer`
    : `approval request ${q} is no longer pending: the approval channel closed`
  return new ApprovalAnswerError({ id: typeof id === "string" ? id : "", reason, message })
}

const reasonOf = (state: number): ApprovalAnswerErrorReason =>
  state === ANSWERED ? "answered" : state === WAS_CANCELLED ? "cancelled" : state === WAS_CLOSED ? "closed" : "unknown"

class Entry {
  readonly id: string
  readonly view: PendingApproval
  readonly decided = Deferred.unsafeMake<Resolution>(FiberId.none)
  private state = PENDING
  private readonly onAbort = () => {
    this.settle(CANCELLED)
  }

  constructor(
    readonly seq: number,
    request: ApprovalRequest,
    private readonly signal: AbortSignal,
    private readonly channel: Channel
  ) {
    this.id = `approval-${seq}`
    this.view = {
      id: this.id,
      request,
      answer: (answer) => Effect.suspend(() => this.answer(answer))
    }
    addListener.call(signal, "abort", this.onAbort, { once: true })
  }

  answer(answer: unknown): Effect.Effect<void, ApprovalAnswerError> {
    if (this.state !== PENDING) return Effect.fail(answerError(this.id, reasonOf(this.state)))
    this.settle(resolve(answer))
    return Effect.void
  }

  /** Decides the entry once; later calls do nothing. */
  settle(resolution: Resolution): void {
    if (this.state !== PENDING) return
    this.state = resolution._tag === "Cancelled" ? WAS_CANCELLED : resolution._tag === "Closed" ? WAS_CLOSED : ANSWERED
    this.channel.remove(this, this.state)
    try {
      removeListener.call(this.signal, "abort", this.onAbort)
    } catch {
      // the signal was checked at arrival; nothing is left to undo
    }
    Deferred.unsafeDone(this.decided, Exit.succeed(resolution))
  }
}

type Waiter = (entry: Entry | undefined) => void

const ID = /^approval-([1-9][0-9]{0,15})$/

class Channel {
  private readonly bySeq = new Map<number, Entry>()
  private readonly waiters = new Set<Waiter>()
  /** How each issued request ended, by sequence number (`PENDING` while it is pending). */
  private ended = new Uint8Array(64)
  private lastSeq = 0
  private closed = false

  /**
   * A new pending entry, or the resolution without one (`Closed` once the layer closed,
   * `Cancelled` for an aborted signal); `undefined` when the request has no usable signal.
   */
  open(request: ApprovalRequest): Entry | Resolution | undefined {
    if (this.closed) return CLOSED
    let entry: Entry
    try {
      const signal: unknown = request.signal
      if (abortedGetter.call(signal) === true) return CANCELLED
      entry = new Entry(this.lastSeq + 1, request, signal as AbortSignal, this)
    } catch {
      return undefined
    }
    this.lastSeq = entry.seq
    if (entry.seq >= this.ended.length) {
      const grown = new Uint8Array(this.ended.length * 2)
      grown.set(this.ended)
      this.ended = grown
    }
    this.bySeq.set(entry.seq, entry)
    const waiters = Array.from(this.waiters)
    this.waiters.clear()
    for (const waiter of waiters) waiter(entry)
    return entry
  }

  remove(entry: Entry, state: number): void {
    this.bySeq.delete(entry.seq)
    this.ended[entry.seq] = state
  }

  answer(id: unknown, answer: unknown): Effect.Effect<void, ApprovalAnswerError> {
    const match = typeof id === "string" ? ID.exec(id) : null
    const seq = match === null ? 0 : Number(match[1])
    if (seq === 0 || seq > this.lastSeq) return Effect.fail(answerError(id, "unknown"))
    const entry = this.bySeq.get(seq)
    if (entry !== undefined) return entry.answer(answer)
    return Effect.fail(answerError(id, reasonOf(this.ended[seq]!)))
  }

  snapshot(): ReadonlyArray<PendingApproval> {
    return Array.from(this.bySeq.values(), (entry) => entry.view)
  }

  /** The oldest pending entry after `cursor` (a sequence number), scanning each gap once. */
  private after(cursor: number): Entry | undefined {
    const oldest = this.bySeq.values().next()
    if (oldest.done === true) return undefined
    if (oldest.value.seq > cursor) return oldest.value
    for (let seq = cursor + 1; seq <= this.lastSeq; seq++) {
      const entry = this.bySeq.get(seq)
      if (entry !== undefined) return entry
    }
    return undefined
  }

  next(cursor: number): Effect.Effect<Option.Option<readonly [PendingApproval, number]>> {
    return Effect.async<Entry | undefined>((resume) => {
      const found = this.after(cursor)
      if (found !== undefined || this.closed) return resume(Effect.succeed(found))
      const waiter: Waiter = (entry) => resume(Effect.succeed(entry))
      this.waiters.add(waiter)
      return Effect.sync(() => {
        this.waiters.delete(waiter)
      })
    }).pipe(Effect.map((entry) => entry === undefined ? Option.none() : Option.some([entry.view, entry.seq] as const)))
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    for (const entry of Array.from(this.bySeq.values())) entry.settle(CLOSED)
    const waiters = Array.from(this.waiters)
    this.waiters.clear()
    for (const waiter of waiters) waiter(undefined)
  }

  /**
   * Waits for a person's answer to `request`: the entry becomes pending and is removed however
   * the wait ends (an interruption settles it `Cancelled`).
   */
  ask(request: ApprovalRequest): Effect.Effect<Resolution, RequestError> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const opened = this.open(request)
        if (opened === undefined) return Effect.fail(new RequestError({ message: INVALID_REQUEST }))
        if (!(opened instanceof Entry)) return Effect.succeed(opened)
        return Effect.ensuring(restore(Deferred.await(opened.decided)), Effect.sync(() => opened.settle(CANCELLED)))
      })
    )
  }

  interactive(): Interactive {
    return {
      pending: Effect.sync(() => this.snapshot()),
      arrivals: Stream.unfoldEffect(0, (cursor) => this.next(cursor)),
      answer: (id, answer) => Effect.suspend(() => this.answer(id, answer))
    }
  }
}

const makeChannel = Effect.acquireRelease(Effect.sync(() => new Channel()), (c) => Effect.sync(() => c.close()))

const outcomeOf = (resolution: Resolution): ApprovalOutcome => {
  switch (resolution._tag) {
    case "Answered":
      return typeof resolution.answer === "string" ? resolution.answer : resolution.answer.outcome
    case "Cancelled":
      return "cancelled"
    case "Rogue":
    case "Closed":
      return "unavailable"
  }
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
