/**
 * A `run_code` program inside a durable batch (D-22): its sub-calls are keyed by their call path
 * (`<callId>:code:<n>`) and the digest of their arguments. A program run again (after a crash, or
 * once an approval it waited for is answered) starts from the beginning in a fresh sandbox; a
 * committed sub-call answers it from the journal without running, and a sub-call whose tool or
 * arguments differ from the recorded run at the same place ends the run with a divergence error.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type { RunContext } from "../../Execution.js"
import type * as ToolCallLog from "../../ToolCallLog.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import type * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import type { DurableBatch } from "../durable/batch.js"
import { type DurableParts, EntryJournal } from "../durable/entries.js"
import { entry } from "../durable/rows.js"
import { stringify } from "../log/records.js"
import { argumentsDigest } from "../schema/jsonText.js"
import type { Begun, Failure } from "../scheduler/lane.js"
import { CodeRun, type Outer } from "./codeRun.js"

const TRUE: Effect.Effect<boolean> = Effect.succeed(true)

/** The divergence text: the program did not call what its recorded run called at this place. @internal */
export const divergence = (subCallId: string, recorded: string, now: string): string =>
  `run_code diverged from its recorded run at ${subCallId}: it was ${recorded}, it is now ${now} ` +
  "(a program run again must make the same tool calls in the same order)"

const describe = (name: string, digest: string) => `${JSON.stringify(name)} (arguments ${digest.slice(0, 12)})`

const recordedCall = (payload: string | undefined): { readonly name: string; readonly digest: string } | undefined => {
  if (payload === undefined) return undefined
  try {
    const value = JSON.parse(payload) as { readonly name?: unknown; readonly argumentsDigest?: unknown }
    return typeof value.name === "string" && typeof value.argumentsDigest === "string"
      ? { name: value.name, digest: value.argumentsDigest }
      : undefined
  } catch {
    return undefined
  }
}

/** @internal */
export class DurableCodeRun extends CodeRun {
  readonly journal: EntryJournal
  constructor(
    maxParallel: number,
    controller: AbortController,
    runtime: ToolRuntime.Service,
    registry: RegistryService,
    ctx: RunContext,
    outer: Outer,
    log: ToolCallLog.Service | undefined,
    parts: DurableParts,
    readonly batch: DurableBatch
  ) {
    super(maxParallel, controller, runtime, registry, ctx, outer, log)
    this.journal = new EntryJournal(
      this,
      parts,
      (index) => this.entries[index].subCallId,
      (index) => ({ name: this.entries[index].name, agent: outer.agent })
    )
    this.journal.detached = batch.detached
    batch.subLanes.set(outer.callId, {
      suspendAt: (callId) => this.suspendAt(callId),
      detach: () => {
        this.journal.detached = true
      }
    })
  }

  override begin(index: number): Effect.Effect<Begun> {
    const entryOf = this.entries[index]
    const digest = argumentsDigest(entryOf.logged)
    const key = entry.call(entryOf.subCallId)
    const recorded = recordedCall(this.journal.parts.journaled.payloadOf(key))
    if (recorded !== undefined && (recorded.name !== entryOf.name || recorded.digest !== digest)) {
      this.diverged = divergence(
        entryOf.subCallId,
        describe(recorded.name, recorded.digest),
        describe(entryOf.name, digest)
      )
      this.fail({ _tag: "Defect", cause: Cause.die(new Error(this.diverged)) })
      return Effect.succeed<Begun>("failed")
    }
    this.journal.push(key, () => stringify({ name: entryOf.name, argumentsDigest: digest }))
    return Effect.flatMap(super.begin(index), (begun) => begun === "prepare" ? this.journal.begin(index) : Effect.succeed(begun))
  }

  override prepareEntry(index: number): Effect.Effect<ToolRuntime.Prepared> {
    return this.journal.prepare(index)
  }

  override record(index: number, result: ToolResult.ToolResult): Effect.Effect<boolean> {
    this.journal.record(index, result)
    return TRUE
  }

  /** The program is answered (and the outer call's contexts ferried) once the sub-call's result is stored. */
  override committed(index: number, result: ToolResult.ToolResult): Effect.Effect<void> {
    this.journal.announce(Effect.suspend(() => super.committed(index, result)))
    return Effect.void
  }

  override commitsAfter(failure: Failure, index: number): boolean {
    return failure._tag === "Suspend" ? index < failure.index : super.commitsAfter(failure, index)
  }

  override finish(): Effect.Effect<void> {
    return Effect.zipRight(Effect.suspend(() => this.journal.write()), Effect.suspend(() => super.finish())).pipe(
      Effect.ensuring(Effect.sync(() => this.batch.subLanes.delete(this.outer.callId)))
    )
  }

  /** Sub-call `callId` waits for an approval: no later sub-call starts, and the program stops. */
  suspendAt(callId: string): void {
    const index = this.entries.findIndex((e) => e.subCallId === callId)
    if (index < 0) return
    this.journal.suspendedAt = index
    this.fail({ _tag: "Suspend", index })
  }
}
