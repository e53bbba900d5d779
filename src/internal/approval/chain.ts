/**
 * The answerer chain and the decisions it reaches: which answerers and policies are in scope for
 * an agent's lineage, one answerer's answer read once (an Effect, a Promise adopted at once, or
 * a rogue value), and the chain where the first answer wins.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { ApprovalOutcome, ApprovalRequest } from "../../Approval.js"
import type { AgentId } from "../../Execution.js"
import type { ApprovalDecider } from "../../ToolCallLog.js"
import type { Then } from "../base/promise.js"
import { thenOf } from "../base/promise.js"
import { type ReadAnswer, readAnswer, type ReadRemember, ROGUE } from "./reading.js"

/** @internal */
export interface Decision {
  readonly outcome: ApprovalOutcome
  readonly by: ApprovalDecider
  readonly remember?: ReadRemember | undefined
  /** A durable batch suspends until the request is answered: nothing is decided now. */
  readonly suspended?: true | undefined
}

/** @internal */
export const ABORTED: Decision = { outcome: "cancelled", by: "abort" }

/** @internal */
export const NEVER: Decision = { outcome: "rejected", by: "policy" }

const NO_ANSWER: Decision = { outcome: "unavailable", by: "policy" }

/** @internal */
export const FAILED: Decision = { outcome: "unavailable", by: "error" }

/** @internal */
export const SUSPENDED: Decision = { outcome: "cancelled", by: "abort", suspended: true }

const EXPIRED: Decision = { outcome: "unavailable", by: "expiry" }

/** @internal */
export interface Entry<A> {
  readonly owner: AgentId | undefined
  readonly value: A
}

/** @internal */
export type RunAnswerer = (request: ApprovalRequest) => Effect.Effect<unknown, unknown>

/**
 * Global entries, then the chain's farthest ancestor first, the agent last; each in list order.
 *
 * @internal
 */
export const inScope = <A>(entries: ReadonlyArray<Entry<A>>, lineage: ReadonlyArray<AgentId>): Array<A> => {
  const out: Array<A> = []
  for (const entry of entries) if (entry.owner === undefined) out.push(entry.value)
  for (let i = lineage.length - 1; i >= 0; i--) {
    const agent = lineage[i]
    for (const entry of entries) if (entry.owner === agent) out.push(entry.value)
  }
  return out
}

/**
 * The nearest setting: the agent's own, its ancestors' nearest first, the global one; the latest of each.
 *
 * @internal
 */
export const nearest = <A>(entries: ReadonlyArray<Entry<A>>, lineage: ReadonlyArray<AgentId>): A | undefined => {
  for (const agent of [...lineage, undefined]) {
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i]!
      if (entry.owner === agent) return entry.value
    }
  }
  return undefined
}

/**
 * A Promise answer, adopted now: its settlement is observed by plain callbacks attached at once
 * (so a rejection is never unhandled). The returned Effect waits for it, interruptibly; a
 * settlement after the wait was interrupted goes to `late`.
 */
const adoptAnswer = (thenable: unknown, then: Then, late: (read: ReadAnswer) => void): Effect.Effect<ReadAnswer> => {
  let settled: ReadAnswer | undefined = undefined
  let resume: ((effect: Effect.Effect<ReadAnswer>) => void) | undefined = undefined
  let abandoned = false
  const settle = (read: ReadAnswer) => {
    if (settled !== undefined) return
    settled = read
    const waiting = resume
    resume = undefined
    if (waiting !== undefined) waiting(Effect.succeed(read))
    else if (abandoned) late(read)
  }
  try {
    new Promise<unknown>((res, rej) => then.call(thenable, res, rej)).then(
      (value) => settle(readAnswer(value)),
      () => settle(ROGUE)
    )
  } catch {
    settle(ROGUE)
  }
  return Effect.async<ReadAnswer>((cb) => {
    if (settled !== undefined) return cb(Effect.succeed(settled))
    resume = cb
    return Effect.sync(() => {
      resume = undefined
      abandoned = true
    })
  })
}

/** One answerer's answer, read once: a throw, a failure, a defect or a non-answer is `Rogue`. */
const runOne = (
  run: RunAnswerer,
  request: ApprovalRequest,
  late: (read: ReadAnswer) => void
): Effect.Effect<ReadAnswer> =>
  Effect.suspend(() => {
    let out: unknown
    try {
      out = run(request)
    } catch {
      return Effect.succeed(ROGUE)
    }
    if (Effect.isEffect(out)) {
      return Effect.matchCause(out as Effect.Effect<unknown, unknown>, { onFailure: () => ROGUE, onSuccess: readAnswer })
    }
    const then = thenOf(out)
    return then === undefined ? Effect.succeed(ROGUE) : adoptAnswer(out, then, late)
  })

/** @internal */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * The answerer chain: the first answer wins, `undefined` delegates, a failure or a rogue value
 * stops at `unavailable`. Each answerer runs under `restore` (interruptible); what it answered
 * is handled uninterruptibly, so an answer that completed in the same step as an abort is still
 * settled (as a late answer). A Promise answer that settles after the chain was interrupted goes
 * to `late`. `undefined` when the chain was interrupted, or stopped by the abort.
 *
 * @internal
 */
export const runChain = (
  answerers: ReadonlyArray<RunAnswerer>,
  request: ApprovalRequest,
  restore: Restore,
  stopped: () => boolean,
  late: (read: ReadAnswer) => void
): Effect.Effect<Decision | undefined> => {
  const step = (index: number): Effect.Effect<Decision | undefined> => {
    if (index >= answerers.length) return Effect.succeed(NO_ANSWER)
    return Effect.flatMap(Effect.exit(restore(runOne(answerers[index]!, request, late))), (exit) => {
      if (Exit.isFailure(exit)) return Effect.succeed(undefined)
      const read = exit.value
      switch (read._tag) {
        case "Next":
          return stopped() ? Effect.succeed(undefined) : step(index + 1)
        case "Rogue":
          return Effect.succeed(FAILED)
        case "Suspend":
          return Effect.succeed(SUSPENDED)
        case "Expired":
          return Effect.succeed(EXPIRED)
        case "Answer":
          return Effect.succeed<Decision>({ outcome: read.outcome, by: "answerer", remember: read.remember })
      }
    })
  }
  return step(0)
}
