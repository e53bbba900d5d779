/**
 * The interactive approval channel: each request a person must answer becomes a pending entry
 * (`approval-<n>`), watched through its call's signal, and leaves the channel however it ends
 * (answered, cancelled by its call, or closed with the layer). The person's side reads pending
 * entries, their arrivals, and answers them by id.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import {
  type ApprovalOutcome,
  type ApprovalRequest,
  ApprovalRequestError as RequestError
} from "../../../src/Approval.js"
import type * as ApprovalService from "../../../src/ApprovalService.js"
import { readAnswer } from "../../../src/internal/approval/reading.js"
import type { ApprovalAnswerErrorReason as Reason, Interactive, PendingApproval } from "../../ApprovalLayers.js"
import { type ApprovalAnswerError, answerError } from "./answerError.js"

const INVALID_REQUEST = "an interactive approval request needs a real AbortSignal as `signal`"
const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!
const addListener = EventTarget.prototype.addEventListener
const removeListener = EventTarget.prototype.removeEventListener

/**
 * How an entry ended.
 *
 * @internal
 */
export type Resolution =
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

const reasonOf = (state: number): Reason =>
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

/**
 * A channel for the layer's lifetime: closing the layer closes it.
 *
 * @internal
 */
export const makeChannel = Effect.acquireRelease(Effect.sync(() => new Channel()), (c) => Effect.sync(() => c.close()))

/** @internal */
export const outcomeOf = (resolution: Resolution): ApprovalOutcome => {
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
