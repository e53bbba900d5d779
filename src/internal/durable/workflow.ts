/**
 * The workflow a durable batch is (D-24): keyed by session and batch, its payload the calls, its
 * result the batch's outcome as JSON. Its body runs the batch from the journal; when a call waits
 * for a person it suspends, and the engine runs it again once the answer (or the expiry) arrives.
 * The approval's deferred answer and expiry clock are named after the approval id.
 *
 * @internal
 */
import * as DurableClock from "@effect/workflow/DurableClock"
import * as DurableDeferred from "@effect/workflow/DurableDeferred"
import * as Workflow from "@effect/workflow/Workflow"
import { WorkflowEngine, WorkflowInstance } from "@effect/workflow/WorkflowEngine"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { JsonValue as Json } from "../../Json.js"
import type { BatchResult } from "../../Scheduler.js"
import { SchedulerError } from "../../Scheduler.js"
import { ToolCallLogError } from "../../ToolCallLog.js"
import type { ToolResult } from "../../ToolResult.js"
import type { Batch } from "../scheduler/batch.js"
import { stringify } from "../log/records.js"
import { type BatchPayload, type RunDeps, runOnce } from "./run.js"
import { checkContexts, checkResult } from "./rows.js"

const CallSchema = Schema.Struct({
  callId: Schema.String,
  name: Schema.String,
  arguments: Schema.String,
  malformed: Schema.optional(Schema.String)
})

/** @internal */
export const batchWorkflow = (pollInterval: Duration.DurationInput) =>
  Workflow.make({
    name: "effect-tool-runtime/DurableBatch",
    payload: {
      sessionId: Schema.String,
      batchId: Schema.String,
      calls: Schema.Array(CallSchema),
      agent: Schema.optional(Schema.String),
      maxParallel: Schema.Number
    },
    success: Schema.String,
    error: SchedulerError,
    idempotencyKey: (payload) => JSON.stringify([payload.sessionId, payload.batchId]),
    suspendedRetrySchedule: Schedule.exponential("50 millis", 2).pipe(Schedule.union(Schedule.spaced(pollInterval)))
  })

/** @internal */
export type BatchWorkflow = ReturnType<typeof batchWorkflow>

/** What a person answers a durable approval with. @internal */
export const AnswerSchema = Schema.Struct({
  outcome: Schema.Literal("allowed-once", "rejected", "cancelled", "unavailable"),
  remember: Schema.optional(Schema.Struct({
    scope: Schema.Literal("agent", "global"),
    match: Schema.Literal("tool", "arguments"),
    ttlMillis: Schema.optional(Schema.Number)
  }))
})

/** @internal */
export type StoredAnswer = Schema.Schema.Type<typeof AnswerSchema>

/** The engine's deferred answer of an approval. @internal */
export const approvalDeferred = (approvalId: string) =>
  DurableDeferred.make(`approval/${approvalId}`, { success: AnswerSchema })

/** The engine's clock that expires an unanswered approval. @internal */
export const expiryClock = (approvalId: string, duration: Duration.DurationInput) =>
  DurableClock.make({ name: `approval-expiry/${approvalId}`, duration })

/** The batch's outcome as the workflow's result: JSON text (results in full, D-22). @internal */
export const encodeBatch = (batch: Batch): string =>
  stringify({
    results: batch.results.map((r) => ({ callId: r.callId, index: r.index, result: r.result as unknown as Json })),
    contexts: batch.contexts as unknown as Json,
    concluded: batch.concluded,
    aborted: batch.signal.aborted
  })

/** The workflow's result read back as a frozen batch outcome; `undefined` when it cannot be read. @internal */
export const decodeBatch = (text: string): BatchResult | undefined => {
  try {
    const value = JSON.parse(text) as {
      results?: unknown
      contexts?: unknown
      concluded?: unknown
      aborted?: unknown
    }
    if (!Array.isArray(value.results) || !Array.isArray(value.contexts)) return undefined
    const results: Array<{ readonly callId: string; readonly index: number; readonly result: ToolResult }> = []
    for (const entry of value.results as ReadonlyArray<{ callId?: unknown; index?: unknown; result?: unknown }>) {
      if (typeof entry.callId !== "string" || typeof entry.index !== "number") return undefined
      const result = checkResult(entry.result as Json)
      if (!result.ok) return undefined
      results.push(Object.freeze({ callId: entry.callId, index: entry.index, result: result.value }))
    }
    const contexts = checkContexts(value.contexts as Json)
    if (!contexts.ok) return undefined
    return Object.freeze({
      results: Object.freeze(results),
      contexts: contexts.value,
      concluded: value.concluded === true,
      aborted: value.aborted === true
    })
  } catch {
    return undefined
  }
}

const asSchedulerError = (key: { readonly batchId: string }, calls: ReadonlyArray<{ readonly callId: string }>) =>
(
  failure: { readonly message: string } | {
    readonly batchId: string
    readonly logError: ToolCallLogError
    readonly unrecorded: ReadonlyArray<string>
    readonly notStarted: ReadonlyArray<string>
  }
): SchedulerError =>
  "logError" in failure
    ? new SchedulerError(failure)
    : new SchedulerError({
      batchId: key.batchId,
      logError: new ToolCallLogError({ message: failure.message }),
      unrecorded: calls.map((call) => call.callId),
      notStarted: calls.map((call) => call.callId)
    })

/**
 * The workflow's body: run the batch from its journal; when a run suspends for an approval whose
 * answer (or expiry) is already there, run again at once; otherwise suspend the workflow.
 *
 * @internal
 */
export const body = (deps: RunDeps) => (payload: BatchPayload): Effect.Effect<string, SchedulerError, WorkflowEngine | WorkflowInstance> =>
  Effect.gen(function*() {
    const engine = yield* WorkflowEngine
    const instance = yield* WorkflowInstance
    const key = { sessionId: payload.sessionId, batchId: payload.batchId }
    while (true) {
      const outcome = yield* Effect.mapError(runOnce(payload, deps), asSchedulerError(key, payload.calls))
      if (outcome._tag === "Done") {
        yield* Effect.ignore(deps.journal.closeBatch(key))
        return encodeBatch(outcome.batch)
      }
      const id = outcome.suspension.approvalId
      if ((yield* engine.deferredResult(approvalDeferred(id))) !== undefined) continue
      if ((yield* engine.deferredResult(expiryClock(id, 0).deferred)) !== undefined) continue
      deps.local.suspended(key, id)
      return yield* Workflow.suspend(instance)
    }
  })
