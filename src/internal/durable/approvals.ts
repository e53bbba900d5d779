/**
 * Approvals that wait across restarts (D-22): the answerer that, inside a durable batch, gives the
 * person's answer once the engine holds it (or `unavailable` once the request expired), and
 * otherwise stores the pending request, schedules its expiry and suspends the batch; and the
 * person's side — the pending requests and `answer` — usable from any process on the database.
 *
 * @internal
 */
import * as DurableDeferred from "@effect/workflow/DurableDeferred"
import { WorkflowEngine, WorkflowInstance } from "@effect/workflow/WorkflowEngine"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ApprovalRequest } from "../../Approval.js"
import type { Answer } from "../../ApprovalService.js"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import { CurrentDurableScope } from "../base/durableScope.js"
import type { PendingApproval } from "./contracts.js"
import { EXPIRED_ANSWER, SUSPEND_ANSWER } from "../approval/reading.js"
import { stringify } from "../log/records.js"
import type { DurableJournalError, PendingRow, Service as Journal } from "./journal.js"
import { batchOfScope } from "./run.js"
import { AnswerSchema, approvalDeferred, type BatchWorkflow, expiryClock, type StoredAnswer } from "./workflow.js"

/** A pending approval as any process lists it, with the execution id its answer goes to. @internal */
export interface Pending extends PendingApproval {
  readonly executionId: string
}

const answerOf = (stored: StoredAnswer): Answer =>
  stored.remember === undefined
    ? stored.outcome
    : {
      outcome: stored.outcome,
      remember: {
        scope: stored.remember.scope,
        match: stored.remember.match,
        ...(stored.remember.ttlMillis === undefined ? {} : { ttl: Duration.millis(stored.remember.ttlMillis) })
      }
    }

const pendingPayload = (
  request: ApprovalRequest,
  fields: { readonly id: string; readonly askedAt: number; readonly expiresAt: number; readonly executionId: string }
): string => {
  const call = Json.snapshot(request.call)
  return stringify({
    toolName: request.toolName,
    agent: request.agent,
    ...(request.reason === undefined ? {} : { reason: request.reason }),
    argumentsDigest: request.argumentsDigest,
    call: call._tag === "Lossless" ? call.value : null,
    askedAt: fields.askedAt,
    expiresAt: fields.expiresAt,
    executionId: fields.executionId
  })
}

/**
 * The answerer a durable layer registers last on the approval service. Outside a durable batch it
 * delegates (`undefined`).
 *
 * @internal
 */
export const durableAnswerer = (journal: Journal, expiry: Duration.DurationInput) =>
(request: ApprovalRequest): Effect.Effect<Answer | undefined, DurableJournalError> =>
  Effect.gen(function*() {
    const scope = yield* CurrentDurableScope
    const batch = scope === undefined ? undefined : batchOfScope.get(scope)
    const engine = yield* Effect.serviceOption(WorkflowEngine)
    const instance = yield* Effect.serviceOption(WorkflowInstance)
    if (scope === undefined || batch === undefined || Option.isNone(engine) || Option.isNone(instance)) return undefined
    const id = scope.approvalId(request.callId)
    const resultOf = <S extends Schema.Schema.Any>(deferred: DurableDeferred.DurableDeferred<S>) =>
      Effect.provideService(engine.value.deferredResult(deferred), WorkflowInstance, instance.value)
    const answered = yield* resultOf(approvalDeferred(id))
    if (answered !== undefined) {
      yield* journal.transition(id, ["pending", "answered"], "closed")
      return answered._tag === "Success" ? answerOf(answered.value) : "unavailable"
    }
    const clock = expiryClock(id, expiry)
    if ((yield* resultOf(clock.deferred)) !== undefined) {
      yield* journal.transition(id, ["pending", "answered"], "closed")
      return EXPIRED_ANSWER as Answer
    }
    const known = yield* journal.approval(id)
    if (known === undefined) {
      const askedAt = Date.now()
      const row: PendingRow = {
        id,
        sessionId: scope.sessionId,
        batchId: scope.batchId,
        callId: request.callId,
        payload: pendingPayload(request, {
          id,
          askedAt,
          expiresAt: askedAt + Duration.toMillis(Duration.decode(expiry)),
          executionId: instance.value.executionId
        })
      }
      // The clock first: a process that dies between the two leaves no pending row without expiry.
      yield* engine.value.scheduleClock(instance.value.workflow, { executionId: instance.value.executionId, clock })
      yield* journal.ask(row)
    }
    return batch.suspendFor(request.callId, id) ? SUSPEND_ANSWER as Answer : undefined
  })

const readPending = (row: PendingRow): Pending | undefined => {
  try {
    const value = JSON.parse(row.payload) as Record<string, unknown>
    const { agent, argumentsDigest, askedAt, call, executionId, expiresAt, reason, toolName } = value
    if (
      typeof toolName !== "string" || typeof agent !== "string" || typeof argumentsDigest !== "string" ||
      typeof askedAt !== "number" || typeof expiresAt !== "number" || typeof executionId !== "string" ||
      (reason !== undefined && typeof reason !== "string")
    ) return undefined
    return Json.deepFreeze({
      id: row.id,
      sessionId: row.sessionId,
      batchId: row.batchId,
      callId: row.callId,
      toolName,
      agent,
      ...(reason === undefined ? {} : { reason }),
      argumentsDigest,
      call: (call ?? null) as JsonValue,
      askedAt,
      expiresAt,
      executionId
    })
  } catch {
    return undefined
  }
}

/** The requests waiting for a person, oldest first (rows that cannot be read are left out). @internal */
export const pending = (journal: Journal): Effect.Effect<ReadonlyArray<Pending>, DurableJournalError> =>
  Effect.map(journal.approvals("pending"), (rows) => {
    const out: Array<Pending> = []
    for (const row of rows) {
      const read = readPending(row)
      if (read !== undefined) out.push(read)
    }
    return out
  })

/** Why an answer was refused. @internal */
export type AnswerRefusal = "unknown" | "answered" | "unreadable"

/**
 * Sends a person's answer to the engine. The request moves from `pending` to `answered` with the
 * answer stored beside it first, so a second, different answer is refused; then the answer goes to
 * the engine. Sending the same answer again (a caller whose first try was cut) sends it again and
 * succeeds: the engine keeps the first delivery of a deferred.
 *
 * @internal
 */
export const answer = (
  journal: Journal,
  workflow: BatchWorkflow,
  id: string,
  stored: StoredAnswer
): Effect.Effect<AnswerRefusal | undefined, DurableJournalError, WorkflowEngine> =>
  Effect.gen(function*() {
    const text = JSON.stringify(stored)
    const known = yield* journal.approval(id)
    if (known === undefined) return "unknown"
    if (known.state !== "pending") return yield* sendAgain(workflow, id, known, text, stored)
    const read = readPending(known.row)
    if (read === undefined) return "unreadable"
    if (!(yield* journal.answer(id, text))) {
      return yield* sendAgain(workflow, id, yield* journal.approval(id), text, stored)
    }
    yield* deliver(workflow, id, read.executionId, stored)
    return undefined
  })

/** An answer to a request no longer pending: the answer it already holds is sent again, another refused. */
const sendAgain = (
  workflow: BatchWorkflow,
  id: string,
  known: { readonly row: PendingRow; readonly state: string } | undefined,
  text: string,
  stored: StoredAnswer
): Effect.Effect<AnswerRefusal | undefined, never, WorkflowEngine> => {
  if (known === undefined || known.state !== "answered" || known.row.answer !== text) return Effect.succeed("answered")
  const read = readPending(known.row)
  return read === undefined ? Effect.succeed("unreadable") : Effect.as(deliver(workflow, id, read.executionId, stored), undefined)
}

const decodeStored = (text: string): StoredAnswer | undefined => {
  try {
    return Option.getOrUndefined(Schema.decodeUnknownOption(AnswerSchema)(JSON.parse(text)))
  } catch {
    return undefined
  }
}

const deliver = (workflow: BatchWorkflow, id: string, executionId: string, stored: StoredAnswer) => {
  const deferred = approvalDeferred(id)
  const token = DurableDeferred.tokenFromExecutionId(deferred, { workflow, executionId })
  return DurableDeferred.succeed(deferred, { token, value: stored })
}

/**
 * Sends again every stored answer that no batch has consumed yet: an answer recorded just before
 * its process died never reached the engine, and its batch would wait for it forever. Harmless for
 * answers that did arrive (the engine keeps a deferred's first delivery).
 *
 * @internal
 */
export const redeliverAnswers = (
  journal: Journal,
  workflow: BatchWorkflow
): Effect.Effect<void, DurableJournalError, WorkflowEngine> =>
  Effect.flatMap(journal.approvals("answered"), (rows) =>
    Effect.forEach(rows, (row) => {
      const read = readPending(row)
      const stored = row.answer === undefined ? undefined : decodeStored(row.answer)
      return read === undefined || stored === undefined ? Effect.void : deliver(workflow, row.id, read.executionId, stored)
    }, { discard: true }))
