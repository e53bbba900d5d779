/**
 * Layers of the `Approval` service (the Tag lives in the root module `Approval`): deny-all,
 * unavailable, approve-all, scripted answers, and an interactive channel an application
 * answers. Providing no Approval at all means every `ask` is denied (APPR-1).
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
import { Approval, type ApprovalOutcome, type ApprovalRequest, isOutcome, make } from "../src/Approval.js"

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
  /** Stable for the lifetime of the layer (`approval-<n>`, in arrival order). */
  readonly id: string
  readonly request: ApprovalRequest
  /**
   * Answers the request: `true` when this answer decided it, `false` when it was already
   * answered, cancelled or removed. A value outside the four outcomes decides `unavailable`
   * (D-7).
   */
  readonly answer: (outcome: ApprovalOutcome) => Effect.Effect<boolean>
}

/**
 * The application's side of the interactive approval channel. Everything here can be used from
 * any fiber (or an HTTP handler running its own runtime).
 *
 * A request is pending from the moment it arrives until it is answered, its signal aborts
 * (`cancelled`), its request Effect ends any other way (interrupted: `cancelled`) or the layer
 * closes (`unavailable`); it is then removed, so nothing is retained for callers that left.
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
  /** Answers the pending request `id`, as `PendingApproval.answer`; `false` for any other id. */
  readonly answer: (id: string, outcome: ApprovalOutcome) => Effect.Effect<boolean>
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
 * a real `AbortSignal` as `signal` (the runtime maps the failure to `unavailable`, D-7).
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalRequestError extends Schema.TaggedError<ApprovalRequestError>(
  "effect-tool-runtime/layers/ApprovalRequestError"
)("ApprovalRequestError", { message: Schema.String }) {}

const INVALID_REQUEST = "an interactive approval request needs a real AbortSignal as `signal`"
const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!
const addListener = EventTarget.prototype.addEventListener
const removeListener = EventTarget.prototype.removeEventListener

class Entry {
  readonly id: string
  readonly view: PendingApproval
  readonly decided = Deferred.unsafeMake<ApprovalOutcome>(FiberId.none)
  private done = false
  private readonly onAbort = () => {
    this.settle("cancelled")
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
      answer: (outcome) => Effect.sync(() => this.settle(outcome))
    }
    addListener.call(signal, "abort", this.onAbort, { once: true })
  }

  /** Decides the request once; every later call (answer, abort, end) is a no-op `false`. */
  settle(outcome: unknown): boolean {
    if (this.done) return false
    this.done = true
    this.channel.remove(this)
    try {
      removeListener.call(this.signal, "abort", this.onAbort)
    } catch {
      // the signal was checked at arrival; nothing is left to undo
    }
    Deferred.unsafeDone(this.decided, Exit.succeed(isOutcome(outcome) ? outcome : "unavailable"))
    return true
  }
}

type Waiter = (entry: Entry | undefined) => void

class Channel {
  private readonly bySeq = new Map<number, Entry>()
  private readonly byId = new Map<string, Entry>()
  private readonly waiters = new Set<Waiter>()
  private lastSeq = 0
  private closed = false

  /**
   * A new pending entry, or the outcome without one (`unavailable` once the layer closed,
   * `cancelled` for an aborted signal); `undefined` when the request has no usable signal.
   */
  open(request: ApprovalRequest): Entry | "cancelled" | "unavailable" | undefined {
    if (this.closed) return "unavailable"
    let entry: Entry
    try {
      const signal: unknown = request.signal
      if (abortedGetter.call(signal) === true) return "cancelled"
      entry = new Entry(this.lastSeq + 1, request, signal as AbortSignal, this)
    } catch {
      return undefined
    }
    this.lastSeq = entry.seq
    this.bySeq.set(entry.seq, entry)
    this.byId.set(entry.id, entry)
    const waiters = Array.from(this.waiters)
    this.waiters.clear()
    for (const waiter of waiters) waiter(entry)
    return entry
  }

  remove(entry: Entry): void {
    this.bySeq.delete(entry.seq)
    this.byId.delete(entry.id)
  }

  get(id: unknown): Entry | undefined {
    return typeof id === "string" ? this.byId.get(id) : undefined
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
    for (const entry of Array.from(this.bySeq.values())) entry.settle("unavailable")
    const waiters = Array.from(this.waiters)
    this.waiters.clear()
    for (const waiter of waiters) waiter(undefined)
  }
}

/**
 * Approval through an application-answered channel: each request becomes pending on
 * `InteractiveApprovals` (`pending`, `arrivals`) and waits for an answer. Its signal aborting,
 * or the request Effect being interrupted, resolves it `cancelled` and removes it; an already
 * aborted signal is `cancelled` without becoming pending. Exactly one outcome per request: the
 * first of answer, abort, interruption or layer close wins; later answers return `false`.
 * Requests after the layer closed, and those pending when it closes, are `unavailable`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerInteractive: Layer.Layer<Approval | InteractiveApprovals> = Layer.scopedContext(
  Effect.gen(function*() {
    const channel = yield* Effect.acquireRelease(Effect.sync(() => new Channel()), (c) => Effect.sync(() => c.close()))
    const service = make((request) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          const opened = channel.open(request)
          if (opened === undefined) return Effect.fail(new ApprovalRequestError({ message: INVALID_REQUEST }))
          if (typeof opened === "string") return Effect.succeed(opened)
          return Effect.ensuring(
            restore(Deferred.await(opened.decided)),
            Effect.sync(() => opened.settle("cancelled"))
          )
        })
      )
    )
    const interactive: Interactive = {
      pending: Effect.sync(() => channel.snapshot()),
      arrivals: Stream.unfoldEffect(0, (cursor) => channel.next(cursor)),
      answer: (id, outcome) => Effect.sync(() => channel.get(id)?.settle(outcome) ?? false)
    }
    return Context.make(Approval, service).pipe(Context.add(InteractiveApprovals, interactive))
  })
)
