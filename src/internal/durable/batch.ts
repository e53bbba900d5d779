/**
 * A durable batch's lane (D-22, D-24): the batch lane whose per-call rows are journaled with group
 * commit — a call's `tool/call` and its intent are stored before its body starts, its gate's
 * decision, its body's settle and its result after — and whose calls, when the batch runs again,
 * are resolved from the journal instead of being run again.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type { AgentId } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { CommitEvent } from "../../Scheduler.js"
import type { ReplayPolicy } from "../../Tool.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntimeNs from "../../ToolRuntime.js"
import type { Durable } from "../pipeline/pipeline.js"
import { Batch, idsOf, type LogFailure, notify, synthetic } from "../scheduler/batch.js"
import { dispatchLater } from "../scheduler/dispatches.js"
import type { Call } from "../scheduler/input.js"
import { type Begun, type Failure, stagedFailure } from "../scheduler/lane.js"
import { stringify } from "../log/records.js"
import type { JournalKey, Row, Service as Journal } from "./journal.js"
import type { Journaled, Resolution } from "./replay.js"
import { encodeIntent, encodeOutcome, encodeResult, entry } from "./rows.js"

/** What a suspended run waits for: the approval of one call. @internal */
export interface Suspension {
  /** The batch entry that cannot go on (the asking call, or the `run_code` call whose sub-call asks). */
  readonly index: number
  readonly approvalId: string
}

/** How a durable batch run ended. @internal */
export type RunOutcome =
  | { readonly _tag: "Done"; readonly batch: Batch }
  | { readonly _tag: "Suspended"; readonly suspension: Suspension }

/** The stable key a call's body gets as `ctx.idempotencyKey`, the same on every run of the batch. @internal */
export const idempotencyKeyOf = (key: JournalKey, slot: string): string =>
  createHash("sha256").update(JSON.stringify([key.sessionId, key.batchId, slot])).digest("hex")

const TRUE: Effect.Effect<boolean> = Effect.succeed(true)

const journalFailure = (cause: Cause.Cause<unknown>): Failure => {
  const failure = Cause.failureOption(cause)
  const message = failure._tag === "Some" && typeof (failure.value as { message?: unknown }).message === "string"
    ? (failure.value as { message: string }).message
    : "durable journal write failed"
  return failure._tag === "Some"
    ? { _tag: "Log", error: new ToolCallLog.ToolCallLogError({ message }) }
    : { _tag: "Defect", cause: cause as Cause.Cause<never> }
}

/** @internal */
export interface DurableParts {
  readonly key: JournalKey
  readonly journal: Journal
  readonly journaled: Journaled
  readonly durable: Durable
  readonly replayOf: (name: string, agent: AgentId | undefined) => ReplayPolicy
}

/** @internal */
export class DurableBatch extends Batch {
  /** Rows waiting for the next write, in the order they arose. */
  rows: Array<Row> = []
  /** The entry keys written or waiting in this run (a key is written once). */
  readonly pushed = new Set<string>()
  /** Dispatches waiting for their intent to be stored. */
  held: Array<readonly [number, ToolRuntimeNs.Execution]> = []
  /** Commit events waiting for their result to be stored. */
  events: Array<CommitEvent> = []
  /** Entries whose body ran in this run and whose outcome is not journaled yet. */
  readonly unsettled = new Set<number>()
  /** Cut entries that run again, with their idempotency key. */
  readonly rerun = new Map<number, string>()
  /** The entry whose prepare runs now (an approval that suspends the run is this entry's). */
  preparing: number | undefined = undefined
  suspension: Suspension | undefined = undefined
  /** The run was abandoned (its process is shutting down): nothing more is written or announced. */
  detached = false
  /** Entries before it have their result stored. */
  stored = 0

  constructor(
    calls: ReadonlyArray<Call>,
    agent: AgentId | undefined,
    maxParallel: number,
    controller: AbortController,
    onCommit: ((event: CommitEvent) => unknown) | undefined,
    runtime: ToolRuntimeNs.Service,
    registry: RegistryService,
    log: ToolCallLog.Service,
    readonly parts: DurableParts
  ) {
    super(calls, parts.key.batchId, agent, maxParallel, controller, onCommit, undefined, runtime, registry, log, undefined)
    this.groupCommit = {
      hold: (index, handle) => {
        this.held.push([index, handle])
      },
      pending: () => this.rows.length > 0 || this.held.length > 0 || this.events.length > 0 || this.unsettled.size > 0,
      write: Effect.suspend(() => this.write())
    }
    this.restoreCommitted()
  }

  /** The committed prefix of an earlier run: its results, without running anything. */
  private restoreCommitted(): void {
    while (this.cursor < this.n) {
      const resolution = this.resolve(this.cursor)
      if (resolution === undefined || resolution._tag !== "Committed") break
      const index = this.cursor
      this.keep(index, resolution.result)
      this.events.push(Object.freeze({ callId: this.calls[index].callId, index, result: resolution.result, synthetic: false }))
      this.cursor = this.next = this.stored = index + 1
    }
  }

  private resolve(index: number): Resolution | undefined {
    return this.calls[index].malformed === undefined ? this.parts.journaled.resolve(String(index)) : undefined
  }

  private push(key: string, payload: () => string): void {
    if (this.detached || this.pushed.has(key) || this.parts.journaled.has(key)) return
    this.pushed.add(key)
    this.rows.push({ entry: key, payload: payload() })
  }

  private pushCall(index: number): void {
    this.push(entry.call(String(index)), () => stringify(this.callRecord(index) as unknown as Json.JsonValue))
  }

  /** A recorded outcome finished through the runtime, or taken as it is when the call cannot be created now. */
  private fill(index: number, final: boolean, result: ToolResult.ToolResult): Effect.Effect<Begun> {
    return Effect.map(
      Effect.suspend(() => this.parts.durable.prepareDecided(this.input(index))).pipe(
        Effect.catchAllCause(stagedFailure(this))
      ),
      (prepared): Begun => {
        if (prepared === undefined) return "failed"
        this.ready[index] = prepared._tag === "Dispatch"
          ? { handle: prepared.handle, final, result }
          : { handle: undefined, final: true, result }
        return "filled"
      }
    )
  }

  override begin(index: number): Effect.Effect<Begun> {
    return Effect.suspend(() => {
      this.pushCall(index)
      const malformed = this.calls[index].malformed
      if (malformed !== undefined) {
        this.ready[index] = { handle: undefined, final: true, result: malformed }
        return Effect.succeed<Begun>("filled")
      }
      const resolution = this.resolve(index)!
      switch (resolution._tag) {
        case "Committed":
          this.ready[index] = { handle: undefined, final: true, result: resolution.result }
          return Effect.succeed<Begun>("filled")
        case "Decided":
        case "Settled":
          return this.fill(index, resolution.outcome.tag === "FinalResult", resolution.outcome.result)
        case "Unreadable":
          return this.fill(index, true, Json.deepFreeze(ToolResult.outcomeUnknown(resolution.reason)))
        case "Cut": {
          const call = this.calls[index]
          const policy = this.parts.replayOf(call.name, this.agent)
          if (policy === "never" || this.signal.aborted) return this.fill(index, true, unknown())
          this.rerun.set(index, resolution.idempotencyKey ?? idempotencyKeyOf(this.parts.key, String(index)))
          return Effect.succeed<Begun>("prepare")
        }
        case "Begun":
        case "Fresh":
          return Effect.succeed<Begun>("prepare")
      }
    })
  }

  override prepareEntry(index: number): Effect.Effect<ToolRuntimeNs.Prepared> {
    const rerun = this.rerun.get(index)
    const durable = this.parts.durable
    this.preparing = index
    if (rerun !== undefined) {
      return Effect.map(durable.prepareDecided(this.input(index)), (prepared) => {
        this.preparing = undefined
        if (prepared._tag === "Dispatch") {
          durable.setIdempotencyKey(prepared.handle, rerun)
          this.unsettled.add(index)
        }
        return prepared
      })
    }
    return Effect.map(this.runtime.prepare(this.input(index)), (prepared) => {
      this.preparing = undefined
      if (this.failure !== undefined) return prepared
      const slot = String(index)
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

  override record(index: number, result: ToolResult.ToolResult): Effect.Effect<boolean> {
    this.unsettled.delete(index)
    this.push(entry.result(String(index)), () => encodeResult(result))
    return TRUE
  }

  override committed(index: number, result: ToolResult.ToolResult, synthetic: boolean): Effect.Effect<void> {
    this.keep(index, result)
    if (!this.detached) this.events.push(Object.freeze({ callId: this.calls[index].callId, index, result, synthetic }))
    return Effect.void
  }

  override commitsAfter(failure: Failure, index: number): boolean {
    return failure._tag === "Suspend" && index < failure.index
  }

  /** Stops starting calls: this run waits for `approvalId`'s answer; `false` when the call is not this batch's. */
  suspendFor(callId: string, approvalId: string): boolean {
    let index = this.preparing !== undefined && this.calls[this.preparing].callId === callId ? this.preparing : undefined
    if (index === undefined) {
      const cut = callId.indexOf(":code:")
      const outer = cut < 0 ? undefined : callId.slice(0, cut)
      for (const running of this.running) if (this.calls[running].callId === outer) index = running
    }
    if (index === undefined) return false
    if (this.suspension === undefined) this.suspension = { index, approvalId }
    this.fail({ _tag: "Suspend", index })
    return true
  }

  /** A stopped batch's calls that did not start in this run: each ends from what its journal says. */
  override finish(): Effect.Effect<void> {
    return Effect.zipRight(this.failure === undefined ? this.stopRest() : Effect.void, Effect.suspend(() => this.write()))
  }

  private stopRest(): Effect.Effect<void> {
    const self = this
    return Effect.gen(function*() {
      while (self.failure === undefined && self.next < self.n) {
        const index = self.next
        self.next = index + 1
        const resolution = self.resolve(index)
        if (resolution?._tag === "Fresh") {
          self.pushCall(index)
          const result = synthetic()
          yield* self.record(index, result)
          self.cursor = index + 1
          yield* self.committed(index, result, true)
          continue
        }
        const begun = resolution?._tag === "Begun" ? yield* self.prepareStopped(index) : yield* self.begin(index)
        if (begun === "failed") return
        yield* commitOne(self, index)
      }
    })
  }

  /** A call begun in an earlier run of a batch stopped since: its gate runs again, under the aborted signal. */
  private prepareStopped(index: number): Effect.Effect<Begun> {
    this.pushCall(index)
    return Effect.map(
      Effect.suspend(() => this.runtime.prepare(this.input(index))).pipe(Effect.catchAllCause(stagedFailure(this))),
      (prepared): Begun => {
        if (prepared === undefined) return "failed"
        this.ready[index] = prepared._tag === "Dispatch"
          ? { handle: prepared.handle, final: true, result: Json.deepFreeze(ToolResult.aborted()) }
          : { handle: prepared.handle, final: prepared._tag === "FinalResult", result: prepared.result }
        return "filled"
      }
    )
  }

  /** The group write: pending rows and the settles of bodies that ended, then held dispatches and events. */
  private write(): Effect.Effect<void> {
    if (this.detached) {
      this.rows = []
      this.events = []
      this.drop()
      return Effect.void
    }
    for (const index of this.unsettled) {
      const ready = this.ready[index]
      if (ready === undefined || index === this.suspension?.index) continue
      this.unsettled.delete(index)
      this.push(
        entry.settle(String(index)),
        () => encodeOutcome({ tag: ready.final ? "FinalResult" : "PostResult", result: ready.result })
      )
    }
    const rows = this.rows
    const held = this.held
    const events = this.events
    const cursor = this.cursor
    this.rows = []
    this.held = []
    this.events = []
    const stored = rows.length === 0 ? Effect.void : this.parts.journal.write(this.parts.key, rows)
    return Effect.matchCauseEffect(stored, {
      onFailure: (cause) =>
        Effect.sync(() => {
          this.fail(journalFailure(cause))
          this.held = held
          this.drop()
        }),
      onSuccess: () => {
        this.stored = cursor
        for (const [index, handle] of held) dispatchLater(this, index, handle)
        return Effect.forEach(events, (event) => notify(this, event), { discard: true })
      }
    })
  }

  /** Held dispatches that will never start: out of the pool's count. */
  private drop(): void {
    for (const [index] of this.held) {
      this.inFlight--
      this.running.delete(index)
      this.handles.delete(index)
      this.unsettled.delete(index)
    }
    this.held = []
  }

  /** The outcome of this run: the batch, a suspension, or the failure (D-16). */
  outcomeOf(): Effect.Effect<RunOutcome, LogFailure> {
    const failure = this.failure
    if (failure === undefined) return Effect.succeed({ _tag: "Done", batch: this })
    switch (failure._tag) {
      case "Suspend":
        return Effect.succeed({ _tag: "Suspended", suspension: this.suspension! })
      case "Defect":
        return Effect.failCause(failure.cause)
      case "Log":
        return Effect.fail({
          batchId: this.batchId,
          logError: failure.error,
          unrecorded: idsOf(this, this.stored, this.n),
          notStarted: idsOf(this, this.next, this.n)
        })
    }
  }
}

const unknown = (): ToolResult.ToolResult => Json.deepFreeze(ToolResult.outcomeUnknown())

/** One commit outside the driver's loop (a stopped batch's remaining calls, in order). */
const commitOne = (b: DurableBatch, index: number): Effect.Effect<void> => {
  const ready = b.ready[index]!
  b.ready[index] = undefined
  const handle = ready.handle
  const finished = handle === undefined
    ? Effect.succeed<ToolResult.ToolResult | undefined>(ready.result)
    : Effect.suspend(() => ready.final ? b.runtime.finish(handle, ready.result) : b.runtime.finalize(handle, ready.result))
      .pipe(Effect.catchAllCause(stagedFailure(b)))
  return Effect.flatMap(finished, (result) => {
    if (result === undefined) return Effect.void
    return Effect.flatMap(b.record(index, result), () => {
      b.cursor = index + 1
      return b.committed(index, result, false)
    })
  })
}
