/**
 * What one process knows of the durable batches it runs or waits for: the controller of a batch
 * whose lane runs here (so that a local Stop reaches its bodies at once), the commit callback of a
 * local caller (with the commits it already announced), and who waits for a batch to suspend.
 * Nothing here is durable: it is the process-local side of D-24's Stop contract.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type { CommitEvent } from "../../Scheduler.js"
import type { JournalKey } from "./journal.js"

/** A local caller of a batch. @internal */
export interface Caller {
  readonly onCommit: ((event: CommitEvent) => unknown) | undefined
  /** Commit indexes already announced to this caller (a batch that runs again announces each once). */
  readonly announced: Set<number>
  /** Completed when a run of the batch suspends, with the approval it waits for. */
  readonly suspended: Deferred.Deferred<string>
}

/** @internal */
export const keyString = (key: JournalKey): string => JSON.stringify([key.sessionId, key.batchId])

/** A lane running here: its controller, and how to abandon it (nothing more is journaled). @internal */
export interface RunningLane {
  readonly controller: AbortController
  readonly abandon: () => void
}

/** @internal */
export class LocalRuns {
  readonly running = new Map<string, RunningLane>()
  readonly callers = new Map<string, Caller>()
  /** The layer is closing: lanes that start now are abandoned at once. */
  closing = false

  /** The process is shutting down: every lane running here is abandoned; its batch resumes later. */
  shutdown(reason: unknown): void {
    this.closing = true
    for (const lane of this.running.values()) {
      lane.abandon()
      lane.controller.abort(reason)
    }
  }

  /** Registers a local caller for the batch; the first one keeps the commit callback. */
  attach(key: JournalKey, onCommit: ((event: CommitEvent) => unknown) | undefined): Caller {
    const id = keyString(key)
    const known = this.callers.get(id)
    if (known !== undefined) return known
    const caller: Caller = { onCommit, announced: new Set(), suspended: Deferred.unsafeMake<string>(FiberId.none) }
    this.callers.set(id, caller)
    return caller
  }

  detach(key: JournalKey, caller: Caller): void {
    const id = keyString(key)
    if (this.callers.get(id) === caller) this.callers.delete(id)
  }

  /** The local caller's `onCommit`, announcing each commit once. */
  onCommitOf(key: JournalKey): ((event: CommitEvent) => unknown) | undefined {
    const caller = this.callers.get(keyString(key))
    const onCommit = caller?.onCommit
    if (caller === undefined || onCommit === undefined) return undefined
    return (event) => {
      if (caller.announced.has(event.index)) return Effect.void
      caller.announced.add(event.index)
      return onCommit(event)
    }
  }

  suspended(key: JournalKey, approvalId: string): void {
    const caller = this.callers.get(keyString(key))
    if (caller !== undefined) Deferred.unsafeDone(caller.suspended, Exit.succeed(approvalId))
  }
}
