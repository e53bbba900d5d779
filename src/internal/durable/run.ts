/**
 * One run of a durable batch inside its workflow (D-22, D-24): the journal read back, the lane
 * driven with its rows group-committed and its calls resolved from the journal, and how the run
 * ended — the batch done, suspended for an approval, or failed. A run interrupted by its process
 * shutting down writes nothing more: the batch resumes from the journal later.
 *
 * @internal
 */
import { setMaxListeners } from "node:events"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { AgentId } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { ReplayPolicy } from "../../Tool.js"
import type * as ToolCallLog from "../../ToolCallLog.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import { CurrentDurableScope, type DurableScope } from "../base/durableScope.js"
import { durableOf, stagedOf } from "../pipeline/pipeline.js"
import type { LogFailure } from "../scheduler/batch.js"
import { driveLane } from "../scheduler/driver.js"
import type { Call } from "../scheduler/input.js"
import { approvalIdOf } from "./approvalIds.js"
import { DurableBatch, type RunOutcome } from "./batch.js"
import type { DurableJournalError, JournalKey, Service as Journal } from "./journal.js"
import type { LocalRuns } from "./local.js"
import { keyString } from "./local.js"
import { read } from "./replay.js"
import { decodeResult, encodeBatch, encodeStop, entry, type StoredCall } from "./rows.js"

/** A model call as a durable batch's payload carries it (a malformed one with its error result). @internal */
export type PayloadCall = StoredCall

/** What a durable batch is: its key, its calls and its settings. @internal */
export interface BatchPayload {
  readonly sessionId: string
  readonly batchId: string
  readonly calls: ReadonlyArray<PayloadCall>
  readonly agent?: string | undefined
  readonly maxParallel: number
}

/** What a run needs from the layer that runs durable batches. @internal */
export interface RunDeps {
  readonly journal: Journal
  readonly runtime: ToolRuntime.Service
  readonly registry: RegistryService
  readonly log: ToolCallLog.Service
  readonly local: LocalRuns
}

/** The durable batch behind a durable scope, for the approval answerer. @internal */
export const batchOfScope = new WeakMap<DurableScope, DurableBatch>()

const SHUTDOWN_REASON = "the process running the durable batch is shutting down"

/**
 * A run abandoned by its closing process waits for the engine to stop it. Ending it interrupted
 * instead would not do: the engine runs a workflow interrupted while it is not shutting down
 * again at once (its run is uninterruptible on the server side), which spins until it shuts down.
 */
const abandonedRun: Effect.Effect<never> = Effect.never

const callsOf = (payload: BatchPayload): Array<Call> =>
  payload.calls.map((call): Call => {
    const malformed = call.malformed === undefined ? undefined : decodeResult(call.malformed)
    return {
      callId: call.callId,
      name: call.name,
      raw: call.arguments,
      malformed: malformed === undefined
        ? undefined
        : malformed.ok
        ? malformed.value
        : Json.deepFreeze({ isError: true, error: { message: malformed.reason }, content: [] })
    }
  })

const replayOf = (registry: RegistryService) => (name: string, agent: AgentId | undefined): ReplayPolicy => {
  try {
    return registry.unsafeView(agent).get(name)?.definition.replay ?? "never"
  } catch {
    return "never"
  }
}

/** The rows that make a batch known to the journal: its calls, before anything of it runs. @internal */
export const batchRow = (payload: BatchPayload) => ({
  entry: entry.batch,
  payload: encodeBatch({
    calls: payload.calls,
    agent: payload.agent,
    maxParallel: payload.maxParallel
  })
})

/**
 * Runs the batch once, from its journal. Fails with the log failure (D-16) or dies when the
 * runtime in context is not this library's.
 *
 * @internal
 */
export const runOnce = (
  payload: BatchPayload,
  deps: RunDeps
): Effect.Effect<RunOutcome, LogFailure | DurableJournalError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const key: JournalKey = { sessionId: payload.sessionId, batchId: payload.batchId }
      const staged = stagedOf(deps.runtime)
      const durable = durableOf.get(staged)
      if (durable === undefined) {
        return yield* Effect.dieMessage("durable turns need this library's ToolRuntime (ToolRuntime.layer)")
      }
      const controller = new AbortController()
      setMaxListeners(0, controller.signal)
      const id = keyString(key)
      let abandoned = false
      let batchOf: DurableBatch | undefined = undefined
      const lane = {
        controller,
        abandon: () => {
          abandoned = true
          if (batchOf !== undefined) batchOf.detached = true
        }
      }
      deps.local.running.set(id, lane)
      const release = Effect.sync(() => {
        if (deps.local.running.get(id) === lane) deps.local.running.delete(id)
      })
      return yield* Effect.gen(function*() {
        if (deps.local.closing) return yield* restore(abandonedRun)
        const journaled = read(yield* deps.journal.load(key))
        if (journaled.batch === undefined) yield* deps.journal.write(key, [batchRow(payload)])
        const stop = journaled.stop
        if (stop !== undefined) controller.abort(new DOMException(stop.ok ? stop.value : "stopped", "AbortError"))
        const calls = callsOf(payload)
        const batch = new DurableBatch(
          calls,
          payload.agent,
          Math.max(1, Math.min(payload.maxParallel, calls.length)),
          controller,
          deps.local.onCommitOf(key),
          staged,
          deps.registry,
          deps.log,
          { key, journal: deps.journal, journaled, durable, replayOf: replayOf(deps.registry) }
        )
        const scope: DurableScope = {
          sessionId: key.sessionId,
          batchId: key.batchId,
          approvalId: (callId) => approvalIdOf(key, callId)
        }
        batchOfScope.set(scope, batch)
        batchOf = batch
        if (abandoned) batch.detached = true
        const driver = yield* Effect.fork(
          Effect.scoped(Effect.zipRight(driveLane(batch), Effect.suspend(() => batch.outcomeOf()))).pipe(
            Effect.provideService(CurrentDurableScope, scope)
          )
        )
        const awaited = yield* Effect.exit(restore(Fiber.await(driver)))
        if (Exit.isSuccess(awaited)) {
          if (batch.detached) return yield* restore(abandonedRun)
          return yield* Fiber.join(driver)
        }
        batch.detached = true
        controller.abort(new DOMException(SHUTDOWN_REASON, "AbortError"))
        yield* Fiber.await(driver)
        return yield* Effect.failCause(awaited.cause)
      }).pipe(Effect.ensuring(release))
    })
  )

/** The journal's stop row for a batch, with the caller's reason as text. @internal */
export const stopRow = (reason: string) => ({ entry: entry.stop, payload: encodeStop(reason) })
