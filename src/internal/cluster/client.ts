/**
 * The client of `ToolSession` entities: the calls a process hands in, read like the scheduler
 * reads them; each operation sent to the session's owner and its reply read back into frozen
 * values; the caller's `signal` or interruption turned into the session's `Stop`.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { Answer } from "../../ApprovalService.js"
import type { BatchStatus, PendingApproval } from "../../DurableTurn.js"
import * as Json from "../../Json.js"
import type { ModelToolCall } from "../../Scheduler.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import type { Service } from "../../ToolSession.js"
import { readAnswer } from "../approval/reading.js"
import { decodeBatch } from "../durable/workflow.js"
import { readCalls, readOptions } from "../scheduler/input.js"
import { ToolSession, ToolSessionError } from "./session.js"

const INTERRUPTED_REASON = "the tool-call batch was interrupted"

const fail = (reason: ToolSessionError["reason"], message: string) =>
  Effect.fail(new ToolSessionError({ reason, message }))

/** Transport failures of the cluster (a full mailbox, storage) become `Storage` errors. */
const transport = (error: { readonly _tag: string; readonly message?: string }): ToolSessionError =>
  error._tag === "ToolSessionError"
    ? error as ToolSessionError
    : new ToolSessionError({ reason: "Storage", message: `cluster: ${error._tag}${error.message ? `: ${error.message}` : ""}` })

const readSession = (label: string, sessionId: unknown): string | ToolSessionError =>
  typeof sessionId === "string" && sessionId !== ""
    ? sessionId
    : new ToolSessionError({ reason: "InvalidOption", message: `${label} needs a non-empty string session id` })

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const readStatus = (text: string): BatchStatus | undefined => {
  const value = parse(text) as { readonly _tag?: unknown; readonly batch?: unknown; readonly pending?: unknown } | undefined
  if (value?._tag === "Complete") {
    const batch = decodeBatch(JSON.stringify(value.batch))
    return batch === undefined ? undefined : { _tag: "Complete", batch }
  }
  if (value?._tag === "Suspended" && Array.isArray(value.pending)) {
    return Json.deepFreeze({ _tag: "Suspended", pending: value.pending as ReadonlyArray<PendingApproval> })
  }
  return undefined
}

const unreadable = (what: string) => fail("Storage", `the session's ${what} could not be read`)

/** @internal */
export const make = (toolSet: string | undefined) =>
  Effect.map(ToolSession.client, (clientOf): Service => {
    const batchPayload = (label: string, calls: ReadonlyArray<ModelToolCall>, options: unknown) => {
      const settings = readOptions(options)
      if (settings instanceof Cause.IllegalArgumentException) {
        return new ToolSessionError({ reason: "InvalidOption", message: settings.message })
      }
      let batchId: unknown
      try {
        batchId = (options as { readonly batchId?: unknown }).batchId
      } catch {
        batchId = undefined
      }
      if (typeof batchId !== "string" || batchId === "") {
        return new ToolSessionError({ reason: "InvalidOption", message: `${label} option "batchId" must be a non-empty string` })
      }
      const items = readCalls(calls)
      if (items instanceof Cause.IllegalArgumentException) {
        return new ToolSessionError({ reason: "InvalidOption", message: items.message })
      }
      const malformed = items.find((call) => call.malformed !== undefined)
      if (malformed !== undefined) {
        return new ToolSessionError({
          reason: "InvalidOption",
          message: `${label} needs calls with string callId, name and arguments`
        })
      }
      return {
        signal: settings.signal,
        payload: {
          batchId,
          calls: items.map((call) => ({ callId: call.callId, name: call.name, arguments: call.raw })),
          ...(settings.agent === undefined ? {} : { agent: settings.agent }),
          maxParallel: settings.maxParallel,
          ...(toolSet === undefined ? {} : { toolSet })
        }
      }
    }

    /** Sends a batch message; the caller's abort or interruption stops the batch, then its outcome is awaited. */
    const send = <A>(
      sessionId: string,
      signal: AbortSignal | undefined,
      batchId: string,
      request: Effect.Effect<string, ToolSessionError>,
      read: (text: string) => A | undefined
    ): Effect.Effect<A, ToolSessionError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const fiber = yield* Effect.fork(Effect.interruptible(request))
          const stop = (reason: string) =>
            clientOf(sessionId).Stop({ batchId, reason }).pipe(Effect.mapError(transport), Effect.ignore)
          const waits: Array<Effect.Effect<"done" | "abort">> = [Effect.as(Fiber.await(fiber), "done" as const)]
          if (signal !== undefined) {
            waits.push(Effect.async<"abort">((resume) => {
              if (signal.aborted) return resume(Effect.succeed("abort"))
              const onAbort = () => resume(Effect.succeed("abort"))
              signal.addEventListener("abort", onAbort, { once: true })
              return Effect.sync(() => signal.removeEventListener("abort", onAbort))
            }))
          }
          const first = yield* Effect.exit(restore(Effect.raceAll(waits)))
          if (Exit.isFailure(first)) {
            yield* stop(INTERRUPTED_REASON)
            yield* Fiber.await(fiber)
            return yield* Effect.failCause(first.cause)
          }
          if (first.value === "abort") yield* stop("the batch was stopped by its caller")
          const text = yield* Fiber.join(fiber)
          const value = read(text)
          return value === undefined ? yield* unreadable("batch outcome") : value
        })
      )

    /** A batch message (`RunBatch`, `Start`): its input read once, sent, its outcome read. */
    const batch = <A, E extends { readonly _tag: string; readonly message?: string }>(
      label: string,
      sessionId: string,
      calls: ReadonlyArray<ModelToolCall>,
      options: unknown,
      rpc: (session: string, payload: Exclude<ReturnType<typeof batchPayload>, ToolSessionError>["payload"]) => Effect.Effect<string, E>,
      decode: (text: string) => A | undefined
    ): Effect.Effect<A, ToolSessionError> =>
      Effect.suspend(() => {
        const session = readSession(label, sessionId)
        if (typeof session !== "string") return Effect.fail(session)
        const read = batchPayload(label, calls, options)
        if (read instanceof ToolSessionError) return Effect.fail(read)
        return send(session, read.signal, read.payload.batchId, Effect.mapError(rpc(session, read.payload), transport), decode)
      })

    return {
      runBatch: (sessionId, calls, options) =>
        batch("ToolSession.runBatch", sessionId, calls, options, (session, payload) => clientOf(session).RunBatch(payload), decodeBatch),
      start: (sessionId, calls, options) =>
        batch("ToolSession.start", sessionId, calls, options, (session, payload) => clientOf(session).Start(payload), readStatus),
      pending: (sessionId) =>
        Effect.suspend(() => {
          const session = readSession("ToolSession.pending", sessionId)
          if (typeof session !== "string") return Effect.fail(session)
          return Effect.flatMap(clientOf(session).Pending().pipe(Effect.mapError(transport)), (text) => {
            const value = parse(text)
            return Array.isArray(value)
              ? Effect.succeed(Json.deepFreeze(value as ReadonlyArray<PendingApproval>))
              : unreadable("pending approvals")
          })
        }),
      answer: (sessionId, id, given: Answer) =>
        Effect.suspend(() => {
          const session = readSession("ToolSession.answer", sessionId)
          if (typeof session !== "string") return Effect.fail(session)
          if (typeof id !== "string") return fail("InvalidAnswer", "an approval id must be a string")
          const read = readAnswer(given)
          if (read._tag !== "Answer") return fail("InvalidAnswer", "an answer must be an approval outcome or { outcome, remember? }")
          let ttlMillis: number | undefined = undefined
          const remember = read.remember
          if (remember?.ttl !== undefined) {
            if (typeof remember.ttl !== "number" || !Number.isFinite(remember.ttl)) {
              return fail("InvalidAnswer", "a remembered grant's ttl must be a number of milliseconds here")
            }
            ttlMillis = remember.ttl
          }
          const answer = remember === undefined
            ? { outcome: read.outcome }
            : {
              outcome: read.outcome,
              remember: ttlMillis === undefined
                ? { scope: remember.scope, match: remember.match }
                : { scope: remember.scope, match: remember.match, ttlMillis }
            }
          return clientOf(session).Answer({ id, answer }).pipe(Effect.mapError(transport))
        }),
      records: (sessionId) =>
        Effect.suspend(() => {
          const session = readSession("ToolSession.records", sessionId)
          if (typeof session !== "string") return Effect.fail(session)
          return Effect.flatMap(clientOf(session).Records().pipe(Effect.mapError(transport)), (text) => {
            const value = parse(text) as { readonly records?: unknown; readonly corrupt?: unknown } | undefined
            if (value === undefined || !Array.isArray(value.records) || !Array.isArray(value.corrupt)) {
              return unreadable("records")
            }
            return Effect.map(
              Effect.forEach(value.records as ReadonlyArray<unknown>, (record) => Effect.either(ToolCallLog.validate(record))),
              (checked) => ({
                records: checked.flatMap((entry) => entry._tag === "Right" ? [entry.right] : []),
                corrupt: Json.deepFreeze(value.corrupt as ReadonlyArray<ToolCallLog.CorruptRecord>)
              })
            )
          })
        }),
      stop: (sessionId, batchId, reason) =>
        Effect.suspend(() => {
          const session = readSession("ToolSession.stop", sessionId)
          if (typeof session !== "string") return Effect.fail(session)
          if (typeof batchId !== "string") return fail("InvalidOption", "ToolSession.stop needs a string batch id")
          return clientOf(session).Stop({ batchId, reason: typeof reason === "string" ? reason : "the batch was stopped" }).pipe(
            Effect.mapError(transport)
          )
        })
    }
  })
