/**
 * Agent sessions as `@effect/cluster` entities (issue 27): `ToolSession`, sharded by session id,
 * owns the session's durable batches and approvals — run a batch, start one, list and answer the
 * pending approvals, read the records, stop a batch — and `DurableBatchControl`, keyed by a batch
 * workflow's execution id (so it lives on the runner that runs that workflow), aborts a lane there.
 * Any process sends; the cluster routes to the shard's owner.
 *
 * @internal
 */
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import type { Sharding } from "@effect/cluster/Sharding"
import * as Rpc from "@effect/rpc/Rpc"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Answer } from "../../ApprovalService.js"
import { DurableApprovals, DurableTurns, RemoteStop } from "../durable/contracts.js"
import type { DurableTurnError } from "../durable/errors.js"
import { keyString } from "../durable/local.js"
import { hostedOf, localOf } from "../durable/service.js"
import { stringify } from "../log/records.js"
import type { JsonValue } from "../../Json.js"

/**
 * A session operation failed: the runner's tool set is not the one the sender expects
 * (`ToolSetMismatch`), or a durable turn error (its reason kept).
 *
 * @internal
 */
export class ToolSessionError extends Schema.TaggedError<ToolSessionError>("effect-tool-runtime/ToolSessionError")(
  "ToolSessionError",
  {
    message: Schema.String,
    reason: Schema.Literal(
      "ToolSetMismatch",
      "InvalidOption",
      "NotFound",
      "Mismatch",
      "Storage",
      "Answered",
      "InvalidAnswer",
      "LogFailed"
    )
  }
) {}

const Call = Schema.Struct({ callId: Schema.String, name: Schema.String, arguments: Schema.String })

const batchPayload = {
  batchId: Schema.String,
  calls: Schema.Array(Call),
  agent: Schema.optional(Schema.String),
  maxParallel: Schema.optional(Schema.Number),
  toolSet: Schema.optional(Schema.String)
}

const AnswerPayload = Schema.Struct({
  outcome: Schema.Literal("allowed-once", "rejected", "cancelled", "unavailable"),
  remember: Schema.optional(Schema.Struct({
    scope: Schema.Literal("agent", "global"),
    match: Schema.Literal("tool", "arguments"),
    ttlMillis: Schema.optional(Schema.Number)
  }))
})

/** @internal */
export const ToolSession = Entity.make("effect-tool-runtime/ToolSession", [
  Rpc.make("RunBatch", {
    payload: batchPayload,
    success: Schema.String,
    error: ToolSessionError,
    primaryKey: (payload) => `run/${payload.batchId}`
  }).annotate(ClusterSchema.Persisted, true),
  Rpc.make("Start", {
    payload: batchPayload,
    success: Schema.String,
    error: ToolSessionError,
    primaryKey: (payload) => `start/${payload.batchId}`
  }).annotate(ClusterSchema.Persisted, true),
  Rpc.make("Pending", { success: Schema.String, error: ToolSessionError }),
  Rpc.make("Answer", { payload: { id: Schema.String, answer: AnswerPayload }, error: ToolSessionError }),
  Rpc.make("Records", { success: Schema.String, error: ToolSessionError }),
  Rpc.make("Stop", { payload: { batchId: Schema.String, reason: Schema.String }, error: ToolSessionError })
])

/** @internal */
export const DurableBatchControl = Entity.make("effect-tool-runtime/DurableBatchControl", [
  Rpc.make("Stop", { payload: { sessionId: Schema.String, batchId: Schema.String, reason: Schema.String } })
])

const fromTurn = (error: DurableTurnError): ToolSessionError =>
  new ToolSessionError({ message: error.message, reason: error.reason })

const asSessionError = (error: { readonly _tag: string; readonly message: string }): ToolSessionError =>
  error._tag === "DurableTurnError"
    ? fromTurn(error as DurableTurnError)
    : new ToolSessionError({ message: error.message, reason: "LogFailed" })

/** The answer as the approval service reads it. */
const answerOf = (answer: Schema.Schema.Type<typeof AnswerPayload>): Answer =>
  answer.remember === undefined
    ? answer.outcome
    : {
      outcome: answer.outcome,
      remember: {
        scope: answer.remember.scope,
        match: answer.remember.match,
        ...(answer.remember.ttlMillis === undefined ? {} : { ttl: answer.remember.ttlMillis })
      }
    }

/** A batch outcome or status as text (results in full), for the message's reply. */
const asText = (value: unknown): string => stringify(value as JsonValue)

/**
 * The session entity's handlers on a runner: each message goes to the durable turns service of the
 * process that owns the session's shard. `toolSet` names the runner's tools and policies: a message
 * sent for another tool set is refused, never run against the wrong tools.
 *
 * @internal
 */
export const layerHandlers = (toolSet: string | undefined) =>
  ToolSession.toLayer(
    Effect.gen(function*() {
      const turns = yield* DurableTurns
      const hosted = hostedOf.get(turns) ?? turns
      const approvals = yield* DurableApprovals
      const address = yield* Entity.CurrentAddress
      const sessionId = address.entityId
      const checkToolSet = (expected: string | undefined): Effect.Effect<void, ToolSessionError> =>
        expected === undefined || expected === toolSet
          ? Effect.void
          : Effect.fail(
            new ToolSessionError({
              reason: "ToolSetMismatch",
              message: `this runner's tool set is ${JSON.stringify(toolSet ?? "(unnamed)")}, the message was sent for ${
                JSON.stringify(expected)
              }: deploy the same tools and policies to every runner (and the same toolSet name)`
            })
          )
      const options = (payload: Schema.Schema.Type<Schema.Struct<typeof batchPayload>>) => ({
        sessionId,
        batchId: payload.batchId,
        ...(payload.agent === undefined ? {} : { agent: payload.agent }),
        ...(payload.maxParallel === undefined ? {} : { maxParallel: payload.maxParallel })
      })
      return ToolSession.of({
        RunBatch: ({ payload }) =>
          Effect.zipRight(
            checkToolSet(payload.toolSet),
            hosted.runBatch(payload.calls, options(payload)).pipe(Effect.map(asText), Effect.mapError(asSessionError))
          ),
        Start: ({ payload }) =>
          Effect.zipRight(
            checkToolSet(payload.toolSet),
            hosted.start(payload.calls, options(payload)).pipe(Effect.map(asText), Effect.mapError(asSessionError))
          ),
        Pending: () =>
          approvals.pending.pipe(
            Effect.map((all) => asText(all.filter((request) => request.sessionId === sessionId))),
            Effect.mapError(fromTurn)
          ),
        Answer: ({ payload }) =>
          Effect.flatMap(Effect.mapError(approvals.pending, fromTurn), (all) =>
            all.some((request) => request.id === payload.id && request.sessionId === sessionId)
              ? Effect.mapError(approvals.answer(payload.id, answerOf(payload.answer)), fromTurn)
              : Effect.fail(
                new ToolSessionError({
                  reason: "NotFound",
                  message: `no pending approval ${JSON.stringify(payload.id)} in session ${JSON.stringify(sessionId)}`
                })
              )),
        Records: () => turns.records(sessionId).pipe(Effect.map(asText), Effect.mapError(fromTurn)),
        Stop: ({ payload }) => Effect.mapError(turns.stop({ sessionId, batchId: payload.batchId }, payload.reason), fromTurn)
      })
    }),
    { concurrency: "unbounded" }
  )

/**
 * The batch-control entity's handler: aborts the lane this runner runs for a batch. It provides
 * `RemoteStop` to the durable turns service, which reaches a lane in another process through it.
 *
 * @internal
 */
export const layerControl: Layer.Layer<never, never, Sharding | DurableTurns> = DurableBatchControl.toLayer(
  Effect.map(DurableTurns, (turns) => {
    const local = localOf.get(turns)
    return DurableBatchControl.of({
      Stop: ({ payload }) =>
        Effect.sync(() => {
          local?.running.get(keyString({ sessionId: payload.sessionId, batchId: payload.batchId }))?.controller.abort(
            new DOMException(payload.reason, "AbortError")
          )
        })
    })
  }),
  { concurrency: "unbounded" }
)

/** `RemoteStop` through the batch-control entity of the batch's workflow. @internal */
export const layerRemoteStop: Layer.Layer<RemoteStop, never, Sharding> = Layer.effect(
  RemoteStop,
  Effect.map(DurableBatchControl.client, (client) => ({
    stop: (key, executionId, reason) =>
      client(executionId).Stop({ sessionId: key.sessionId, batchId: key.batchId, reason }, { discard: true }).pipe(
        Effect.ignore
      )
  }))
)
