/**
 * A durable batch's lane (D-22, D-24): the batch lane whose per-call rows are journaled with group
 * commit (see `entries.ts`) and whose calls, when the batch runs again, are resolved from the
 * journal: the committed prefix is restored, recorded outcomes are finished, cut bodies follow
 * their replay policy. A stopped batch's remaining calls end from what their journal says.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { AgentId } from "../../Execution.js"
import type * as Json from "../../Json.js"
import * as ToolResult from "../../ToolResult.js"
import type { CommitEvent } from "../../Scheduler.js"
import type * as ToolCallLog from "../../ToolCallLog.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import type * as ToolRuntimeNs from "../../ToolRuntime.js"
import { stringify } from "../log/records.js"
import { Batch, idsOf, type LogFailure, notify, synthetic } from "../scheduler/batch.js"
import type { Call } from "../scheduler/input.js"
import { type Begun, type Failure, stagedFailure } from "../scheduler/lane.js"
import { type DurableParts, EntryJournal } from "./entries.js"
import { entry } from "./rows.js"

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

/** A `run_code` program of this batch, as a suspension reaches it. @internal */
export interface SubLane {
  /** Stops the program: sub-call `callId` waits for an approval. */
  readonly suspendAt: (callId: string) => void
  /** The batch's run was abandoned: the program's sub-calls journal nothing more either. */
  readonly detach: () => void
}

const TRUE: Effect.Effect<boolean> = Effect.succeed(true)

/** @internal */
export class DurableBatch extends Batch {
  readonly entries: EntryJournal
  suspension: Suspension | undefined = undefined
  /** The `run_code` programs running in this run, by their call id. */
  readonly subLanes = new Map<string, SubLane>()

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
    this.entries = new EntryJournal(this, parts, String, (index) => ({ name: calls[index].name, agent }))
    this.restoreCommitted()
  }

  get detached(): boolean {
    return this.entries.detached
  }

  set detached(value: boolean) {
    this.entries.detached = value
    if (value) for (const lane of this.subLanes.values()) lane.detach()
  }

  /** The committed prefix of an earlier run: its results, announced again, nothing run. */
  private restoreCommitted(): void {
    while (this.cursor < this.n && this.calls[this.cursor].malformed === undefined) {
      const resolution = this.entries.resolve(this.cursor)
      if (resolution._tag !== "Committed") break
      const index = this.cursor
      this.keep(index, resolution.result)
      this.announce(index, resolution.result, false)
      this.cursor = this.next = this.entries.stored = index + 1
    }
  }

  private announce(index: number, result: ToolResult.ToolResult, synthetic: boolean): void {
    const event = Object.freeze({ callId: this.calls[index].callId, index, result, synthetic })
    this.entries.announce(Effect.suspend(() => notify(this, event)))
  }

  private pushCall(index: number): void {
    this.entries.push(entry.call(String(index)), () => stringify(this.callRecord(index) as unknown as Json.JsonValue))
  }

  override begin(index: number): Effect.Effect<Begun> {
    return Effect.suspend(() => {
      this.pushCall(index)
      const malformed = this.calls[index].malformed
      if (malformed === undefined) return this.entries.begin(index)
      this.ready[index] = { handle: undefined, final: true, result: malformed }
      return Effect.succeed<Begun>("filled")
    })
  }

  override prepareEntry(index: number): Effect.Effect<ToolRuntimeNs.Prepared> {
    return this.entries.prepare(index)
  }

  override record(index: number, result: ToolResult.ToolResult): Effect.Effect<boolean> {
    this.entries.record(index, result)
    return TRUE
  }

  override committed(index: number, result: ToolResult.ToolResult, synthetic: boolean): Effect.Effect<void> {
    this.keep(index, result)
    this.announce(index, result, synthetic)
    return Effect.void
  }

  override commitsAfter(failure: Failure, index: number): boolean {
    return failure._tag === "Suspend" && index < failure.index
  }

  /**
   * Stops starting calls: this run waits for `approvalId`'s answer. The asking call is the entry
   * being prepared, or a sub-call of a running `run_code` entry (whose program is stopped).
   * `false` when the call is not this batch's.
   */
  suspendFor(callId: string, approvalId: string): boolean {
    const preparing = this.entries.preparing
    let index = preparing !== undefined && this.calls[preparing].callId === callId ? preparing : undefined
    if (index === undefined) {
      const cut = callId.indexOf(":code:")
      const outer = cut < 0 ? undefined : callId.slice(0, cut)
      for (const running of this.running) if (this.calls[running].callId === outer) index = running
      if (outer !== undefined) this.subLanes.get(outer)?.suspendAt(callId)
    }
    if (index === undefined) return false
    if (this.suspension === undefined) {
      this.suspension = { index, approvalId }
      this.entries.suspendedAt = index
    }
    this.fail({ _tag: "Suspend", index })
    return true
  }

  override finish(): Effect.Effect<void> {
    return Effect.zipRight(
      this.failure === undefined ? this.stopRest() : Effect.void,
      Effect.suspend(() => this.entries.write())
    )
  }

  /** A stopped batch's calls that did not start in this run: each ends from what its journal says. */
  private stopRest(): Effect.Effect<void> {
    const self = this
    return Effect.gen(function*() {
      while (self.failure === undefined && self.next < self.n) {
        const index = self.next
        self.next = index + 1
        const resolution = self.calls[index].malformed === undefined ? self.entries.resolve(index) : undefined
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
          ? { handle: prepared.handle, final: true, result: aborted() }
          : { handle: prepared.handle, final: prepared._tag === "FinalResult", result: prepared.result }
        return "filled"
      }
    )
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
          unrecorded: idsOf(this, this.entries.stored, this.n),
          notStarted: idsOf(this, this.next, this.n)
        })
    }
  }
}

const aborted = (): ToolResult.ToolResult => ToolResult.aborted()

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
