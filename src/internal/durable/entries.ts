/**
 * The journal side of a durable lane (D-22, D-24), shared by a durable batch and a durable
 * `run_code` program: each entry resolved from its rows, its gate decision and intent recorded
 * when it is prepared, its dispatch held until the intent is stored, its settle and result
 * written with group commit, and what the lane announces (commit events, a program's answers)
 * released only once the rows behind it are stored.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type { AgentId } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { ReplayPolicy } from "../../Tool.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntimeNs from "../../ToolRuntime.js"
import type { Durable } from "../pipeline/pipeline.js"
import { dispatchLater } from "../scheduler/dispatches.js"
import { type Begun, type Failure, type Lane, stagedFailure } from "../scheduler/lane.js"
import type { JournalKey, Row, Service as Journal } from "./journal.js"
import type { Journaled, Resolution } from "./replay.js"
import { encodeIntent, encodeOutcome, encodeResult, entry } from "./rows.js"

/** The stable key a call's body gets as `ctx.idempotencyKey`, the same on every run of the batch. @internal */
export const idempotencyKeyOf = (key: JournalKey, slot: string): string =>
  createHash("sha256").update(JSON.stringify([key.sessionId, key.batchId, slot])).digest("hex")

/** What a durable lane works with. @internal */
export interface DurableParts {
  readonly key: JournalKey
  readonly journal: Journal
  readonly journaled: Journaled
  readonly durable: Durable
  readonly replayOf: (name: string, agent: AgentId | undefined) => ReplayPolicy
}

/** @internal */
export const outcomeUnknown = (detail?: string): ToolResult.ToolResult =>
  Json.deepFreeze(ToolResult.outcomeUnknown(detail))

const journalFailure = (cause: Cause.Cause<unknown>): Failure => {
  const failure = Cause.failureOption(cause)
  if (failure._tag === "None") return { _tag: "Defect", cause: cause as Cause.Cause<never> }
  const message = (failure.value as { readonly message?: unknown }).message
  return {
    _tag: "Log",
    error: new ToolCallLog.ToolCallLogError({
      message: typeof message === "string" ? message : "durable journal write failed"
    })
  }
}

/** @internal */
export class EntryJournal {
  /** Rows waiting for the next write, in the order they arose. */
  rows: Array<Row> = []
  /** The entry keys written or waiting in this run (a key is written once). */
  readonly pushed = new Set<string>()
  /** Dispatches waiting for their intent to be stored. */
  held: Array<readonly [number, ToolRuntimeNs.Execution]> = []
  /** What the lane announces once the rows before it are stored. */
  announcements: Array<Effect.Effect<void>> = []
  /** Entries whose body ran in this run and whose outcome is not journaled yet. */
  readonly unsettled = new Set<number>()
  /** Cut entries that run again, with their idempotency key. */
  readonly rerun = new Map<number, string>()
  /** The entry whose prepare runs now. */
  preparing: number | undefined = undefined
  /** The entry that cannot go on in this run (waiting for an approval): its outcome is not journaled. */
  suspendedAt: number | undefined = undefined
  /** The run was abandoned (its process is shutting down): nothing more is written or announced. */
  detached = false
  /** Entries before it have their result stored. */
  stored = 0

  constructor(
    readonly lane: Lane,
    readonly parts: DurableParts,
    readonly slotOf: (index: number) => string,
    readonly callOf: (index: number) => { readonly name: string; readonly agent: AgentId | undefined }
  ) {
    lane.groupCommit = {
      hold: (index, handle) => {
        this.held.push([index, handle])
      },
      pending: () =>
        this.rows.length > 0 || this.held.length > 0 || this.announcements.length > 0 || this.settling(),
      write: Effect.suspend(() => this.write())
    }
  }

  /**
   * An entry whose body ran in this run has ended and its settle is not written yet. (A body still
   * running has nothing to write: counting it as pending made the driver write nothing and check
   * again, in a loop, for as long as the body ran.)
   */
  settling(): boolean {
    for (const index of this.unsettled) {
      if (this.lane.ready[index] !== undefined && index !== this.suspendedAt) return true
    }
    return false
  }

  push(key: string, payload: () => string): void {
    if (this.detached || this.pushed.has(key) || this.parts.journaled.has(key)) return
    this.pushed.add(key)
    this.rows.push({ entry: key, payload: payload() })
  }

  resolve(index: number): Resolution {
    return this.parts.journaled.resolve(this.slotOf(index))
  }

  /** A recorded outcome finished through the runtime, or taken as it is when the call cannot be created now. */
  fill(index: number, final: boolean, result: ToolResult.ToolResult): Effect.Effect<Begun> {
    const lane = this.lane
    return Effect.map(
      Effect.suspend(() => this.parts.durable.prepareDecided(lane.input(index))).pipe(
        Effect.catchAllCause(stagedFailure(lane))
      ),
      (prepared): Begun => {
        if (prepared === undefined) return "failed"
        lane.ready[index] = prepared._tag === "Dispatch"
          ? { handle: prepared.handle, final, result }
          : { handle: undefined, final: true, result }
        return "filled"
      }
    )
  }

  /** What the journal says of entry i: filled from it, or to prepare (afresh, or a cut body to run again). */
  begin(index: number): Effect.Effect<Begun> {
    const resolution = this.resolve(index)
    switch (resolution._tag) {
      case "Committed":
        this.lane.ready[index] = { handle: undefined, final: true, result: resolution.result }
        return Effect.succeed<Begun>("filled")
      case "Decided":
      case "Settled":
        return this.fill(index, resolution.outcome.tag === "FinalResult", resolution.outcome.result)
      case "Unreadable":
        return this.fill(index, true, outcomeUnknown(resolution.reason))
      case "Cut": {
        const { agent, name } = this.callOf(index)
        if (this.parts.replayOf(name, agent) === "never" || this.lane.signal.aborted) {
          return this.fill(index, true, outcomeUnknown())
        }
        this.rerun.set(index, resolution.idempotencyKey ?? idempotencyKeyOf(this.parts.key, this.slotOf(index)))
        return Effect.succeed<Begun>("prepare")
      }
      case "Begun":
      case "Fresh":
        return Effect.succeed<Begun>("prepare")
    }
  }

  /** Prepare for entry i, its gate's decision (or intent) journaled; a cut body's rerun skips the gate. */
  prepare(index: number): Effect.Effect<ToolRuntimeNs.Prepared> {
    const lane = this.lane
    const durable = this.parts.durable
    const rerun = this.rerun.get(index)
    this.preparing = index
    if (rerun !== undefined) {
      return Effect.map(durable.prepareDecided(lane.input(index)), (prepared) => {
        this.preparing = undefined
        if (prepared._tag === "Dispatch") {
          durable.setIdempotencyKey(prepared.handle, rerun)
          this.unsettled.add(index)
        }
        return prepared
      })
    }
    return Effect.map(lane.runtime.prepare(lane.input(index)), (prepared) => {
      this.preparing = undefined
      if (lane.failure !== undefined) return prepared
      const slot = this.slotOf(index)
      if (prepared._tag === "Dispatch") {
        const key = idempotencyKeyOf(this.parts.key, slot)
        durable.setIdempotencyKey(prepared.handle, key)
        this.push(entry.intent(slot), () => encodeIntent(key))
        this.unsettled.add(index)
      } else {
        this.push(entry.gate(slot), () => encodeOutcome({ tag: prepared._tag, result: prepared.result }))
      }
      return prepared
    })
  }

  record(index: number, result: ToolResult.ToolResult): void {
    this.unsettled.delete(index)
    this.push(entry.result(this.slotOf(index)), () => encodeResult(result))
  }

  announce(effect: Effect.Effect<void>): void {
    if (!this.detached) this.announcements.push(effect)
  }

  /** The group write: pending rows and the settles of bodies that ended, then held dispatches and announcements. */
  write(): Effect.Effect<void> {
    const lane = this.lane
    if (this.detached) {
      this.rows = []
      this.announcements = []
      this.drop()
      return Effect.void
    }
    for (const index of this.unsettled) {
      const ready = lane.ready[index]
      if (ready === undefined || index === this.suspendedAt) continue
      this.unsettled.delete(index)
      this.push(
        entry.settle(this.slotOf(index)),
        () => encodeOutcome({ tag: ready.final ? "FinalResult" : "PostResult", result: ready.result })
      )
    }
    const rows = this.rows
    const held = this.held
    const announcements = this.announcements
    const cursor = lane.cursor
    this.rows = []
    this.held = []
    this.announcements = []
    const stored = rows.length === 0 ? Effect.void : this.parts.journal.write(this.parts.key, rows)
    return Effect.matchCauseEffect(stored, {
      onFailure: (cause) =>
        Effect.sync(() => {
          lane.fail(journalFailure(cause))
          this.held = held
          this.drop()
        }),
      onSuccess: () => {
        this.stored = cursor
        for (const [index, handle] of held) dispatchLater(lane, index, handle)
        return Effect.forEach(announcements, (announcement) => announcement, { discard: true })
      }
    })
  }

  /** Held dispatches that will never start: out of the pool's count. */
  drop(): void {
    const lane = this.lane
    for (const [index] of this.held) {
      lane.inFlight--
      lane.running.delete(index)
      lane.handles.delete(index)
      this.unsettled.delete(index)
    }
    this.held = []
  }
}
