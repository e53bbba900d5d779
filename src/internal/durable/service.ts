/**
 * The durable turns service (D-22, D-24): it registers the batch workflow and the durable
 * answerer, starts, resumes and awaits batches, turns a local caller's interruption or `signal`
 * into a journaled Stop, and reads a session's records and the pending approvals.
 *
 * @internal
 */
import { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import { ApprovalService } from "../../ApprovalService.js"
import type { Answer } from "../../ApprovalService.js"
import type * as DurableTurn from "../../DurableTurn.js"
import { DurableTurns as DurableTurnsTag, RemoteStop } from "./contracts.js"
import type { BatchResult, CommitEvent, ModelToolCall, SchedulerError } from "../../Scheduler.js"
import { ToolCallLog } from "../../ToolCallLog.js"
import { detailOf } from "../../ToolError.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import { ToolRuntime } from "../../ToolRuntime.js"
import { readAnswer } from "../approval/reading.js"
import { readCalls, readOptions as readBatchOptions } from "../scheduler/input.js"
import { answer as answerApproval, durableAnswerer, pending as listPending, redeliverAnswers } from "./approvals.js"
import { type DurableTurnError, turnError } from "./errors.js"
import { DurableJournal, type JournalKey, type Service as Journal } from "./journal.js"
import { keyString, LocalRuns } from "./local.js"
import { recordsOf } from "./log.js"
import { read } from "./replay.js"
import { encodeResult, type StoredCall } from "./rows.js"
import { type BatchPayload, type RunDeps, stopRow } from "./run.js"
import { batchWorkflow, type BatchWorkflow, body, decodeBatch, type StoredAnswer } from "./workflow.js"

const INTERRUPTED_REASON = "the tool-call batch was interrupted"

/** The lanes a durable turns service runs in its process (the cluster's batch control reaches them). @internal */
export const localOf = new WeakMap<DurableTurn.Service, LocalRuns>()

/**
 * `runBatch` and `start` for a caller that hosts batches for others (the session entity): its
 * interruption — its runner shutting down, its shard moving — leaves the batch running for the
 * next owner; the sender's own interruption arrives as a Stop.
 *
 * @internal
 */
export const hostedOf = new WeakMap<DurableTurn.Service, Pick<DurableTurn.Service, "runBatch" | "start">>()
const DEFAULT_POLL = Duration.seconds(1)
/** Every how many polls a runner sends again the answers no batch has consumed yet. */
const REDELIVERY_POLLS = 5
const DEFAULT_APPROVAL_TIMEOUT = Duration.days(1)

const storage = (error: { readonly message: string }): DurableTurnError => turnError("Storage", error.message)

const quote = (value: string): string => JSON.stringify(value.length <= 80 ? value : `${value.slice(0, 80)}…`)

const readDuration = (name: string, value: unknown, fallback: Duration.Duration): Duration.Duration => {
  if (value === undefined) return fallback
  const decoded = Duration.decodeUnknown(value)
  if (Option.isNone(decoded) || !Duration.isFinite(decoded.value) || Duration.toMillis(decoded.value) <= 0) {
    throw new Cause.IllegalArgumentException(`DurableTurn.layer option "${name}" must be a positive finite duration`)
  }
  return decoded.value
}

/** The layer's options, each read once; a bad one is a defect at build. */
const readLayerOptions = (options: unknown): { readonly pollInterval: Duration.Duration; readonly approvalTimeout: Duration.Duration } => {
  if (options === undefined) return { pollInterval: DEFAULT_POLL, approvalTimeout: DEFAULT_APPROVAL_TIMEOUT }
  if (typeof options !== "object" || options === null) {
    throw new Cause.IllegalArgumentException("DurableTurn.layer options must be an object")
  }
  let pollInterval: unknown
  let approvalTimeout: unknown
  try {
    ;({ approvalTimeout, pollInterval } = options as { pollInterval?: unknown; approvalTimeout?: unknown })
  } catch (error) {
    throw new Cause.IllegalArgumentException(`DurableTurn.layer options could not be read: ${detailOf(error).message}`)
  }
  return {
    pollInterval: readDuration("pollInterval", pollInterval, DEFAULT_POLL),
    approvalTimeout: readDuration("approvalTimeout", approvalTimeout, DEFAULT_APPROVAL_TIMEOUT)
  }
}

/** A key field, read once: a non-empty string. */
const readKey = (label: string, options: unknown): JournalKey | DurableTurnError => {
  if (typeof options !== "object" || options === null) return turnError("InvalidOption", `${label} needs { sessionId, batchId }`)
  let sessionId: unknown
  let batchId: unknown
  try {
    ;({ batchId, sessionId } = options as { sessionId?: unknown; batchId?: unknown })
  } catch (error) {
    return turnError("InvalidOption", `${label} could not read its key: ${detailOf(error).message}`)
  }
  if (typeof sessionId !== "string" || sessionId === "") {
    return turnError("InvalidOption", `${label} option "sessionId" must be a non-empty string`)
  }
  if (typeof batchId !== "string" || batchId === "") {
    return turnError("InvalidOption", `${label} option "batchId" must be a non-empty string`)
  }
  return { sessionId, batchId }
}

const sameCalls = (stored: ReadonlyArray<StoredCall>, given: ReadonlyArray<StoredCall>): boolean =>
  stored.length === given.length &&
  stored.every((call, i) =>
    call.callId === given[i].callId && call.name === given[i].name && call.arguments === given[i].arguments &&
    call.malformed === given[i].malformed
  )

/** The text a stop row keeps of the caller's reason (any value: read through the ERR-1 detail). */
const reasonText = (reason: unknown): string => detailOf(reason).message

const abortOf = (signal: AbortSignal): Effect.Effect<unknown> =>
  Effect.async<unknown>((resume) => {
    if (signal.aborted) return resume(Effect.succeed(signal.reason))
    const onAbort = () => resume(Effect.succeed(signal.reason))
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

type Wait =
  | { readonly _tag: "Done"; readonly exit: Exit.Exit<string, SchedulerError> }
  | { readonly _tag: "Abort"; readonly reason: unknown }
  | { readonly _tag: "Suspended" }

/** @internal */
export const makeApprovals = Effect.gen(function*() {
  const engine = yield* WorkflowEngine
  const journal = yield* DurableJournal
  return approvalsService(journal, engine, batchWorkflow(DEFAULT_POLL))
})

const approvalsService = (
  journal: Journal,
  engine: WorkflowEngine["Type"],
  workflow: BatchWorkflow
): DurableTurn.ApprovalsService => ({
  pending: Effect.map(
    Effect.mapError(listPending(journal), storage),
    (all) => Object.freeze(all.map(({ executionId: _, ...request }) => Object.freeze(request)))
  ),
  answer: (id, given) =>
    Effect.suspend(() => {
      if (typeof id !== "string") return Effect.fail(turnError("InvalidAnswer", "an approval id must be a string"))
      const stored = storedAnswer(given)
      if (stored === undefined) {
        return Effect.fail(
          turnError("InvalidAnswer", "an answer must be an approval outcome or { outcome, remember? }")
        )
      }
      return answerApproval(journal, workflow, id, stored).pipe(
        Effect.provideService(WorkflowEngine, engine),
        Effect.mapError(storage),
        Effect.flatMap((refusal) => {
          switch (refusal) {
            case undefined:
              return Effect.void
            case "unknown":
              return Effect.fail(turnError("NotFound", `no durable approval ${quote(id)}`))
            case "answered":
              return Effect.fail(turnError("Answered", `the durable approval ${quote(id)} was answered already`))
            case "unreadable":
              return Effect.fail(turnError("Storage", `the durable approval ${quote(id)} could not be read`))
          }
        })
      )
    })
})

/** An answer read once (as the approval service reads answerers'), in its stored form. */
const storedAnswer = (given: Answer): StoredAnswer | undefined => {
  const read = readAnswer(given)
  if (read._tag !== "Answer") return undefined
  const remember = read.remember
  if (remember === undefined) return { outcome: read.outcome }
  let ttlMillis: number | undefined = undefined
  if (remember.ttl !== undefined) {
    const decoded = Duration.decodeUnknown(remember.ttl)
    if (Option.isNone(decoded) || !Duration.isFinite(decoded.value)) return undefined
    ttlMillis = Duration.toMillis(decoded.value)
  }
  return {
    outcome: read.outcome,
    remember: ttlMillis === undefined
      ? { scope: remember.scope, match: remember.match }
      : { scope: remember.scope, match: remember.match, ttlMillis }
  }
}

/** @internal */
export const make = (options: DurableTurn.Options | undefined) =>
  Effect.gen(function*() {
    const settings = yield* Effect.try({
      try: () => readLayerOptions(options),
      catch: (error) => error
    }).pipe(Effect.orDie)
    const engine = yield* WorkflowEngine
    const journal = yield* DurableJournal
    const runtime = yield* ToolRuntime
    const registry = yield* ToolRegistry
    const log = yield* ToolCallLog
    const local = new LocalRuns()
    const workflow = batchWorkflow(settings.pollInterval)
    const deps: RunDeps = { journal, runtime, registry, log, local }
    yield* engine.register(workflow, body(deps))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => local.shutdown(new DOMException("the process is shutting down", "AbortError")))
    )
    yield* redeliverAnswers(journal, workflow).pipe(
      Effect.provideService(WorkflowEngine, engine),
      Effect.catchAll((error) => Effect.logDebug(`durable answers could not be sent again: ${error.message}`)),
      Effect.delay(Duration.times(settings.pollInterval, REDELIVERY_POLLS)),
      Effect.forever,
      Effect.interruptible,
      Effect.forkScoped
    )
    const remote = yield* Effect.serviceOption(RemoteStop)
    const approvalService = yield* Effect.serviceOption(ApprovalService)
    if (Option.isSome(approvalService)) {
      yield* approvalService.value.answer(durableAnswerer(journal, settings.approvalTimeout))
    }

    /** The requests a batch waits for (none: it is not waiting for a person). */
    const pendingOf = (key: JournalKey) =>
      Effect.map(listPending(journal), (waiting) =>
        waiting
          .filter((p) => p.sessionId === key.sessionId && p.batchId === key.batchId)
          .map(({ executionId: _, ...rest }): DurableTurn.PendingApproval => rest))

    /** Journals a Stop and makes it reach the batch: its lane here, or its suspended run. */
    const stop = (key: JournalKey, executionId: string, reason: unknown): Effect.Effect<void> =>
      Effect.gen(function*() {
        const written = yield* Effect.exit(journal.write(key, [stopRow(reasonText(reason))]))
        if (Exit.isFailure(written)) {
          yield* Effect.logWarning(
            `durable batch ${quote(key.batchId)}: its stop could not be journaled (it holds in this process only)`
          )
        }
        const lane = local.running.get(keyString(key))
        if (lane !== undefined) lane.controller.abort(reason)
        else if (Option.isSome(remote)) yield* remote.value.stop(key, executionId, reasonText(reason))
        yield* engine.resume(workflow, executionId)
      })

    /**
     * Completes once the journal holds a pending request of the batch: the batch waits for a person
     * even when its workflow runs in another process (a cluster's runner), where the local signal
     * of a suspension cannot reach.
     */
    const askedElsewhere = (key: JournalKey): Effect.Effect<void> =>
      Effect.sleep(settings.pollInterval).pipe(
        Effect.zipRight(Effect.either(pendingOf(key))),
        Effect.repeat({ until: (waiting) => waiting._tag === "Right" && waiting.right.length > 0 }),
        Effect.asVoid
      )

    const execute = (
      payload: BatchPayload,
      signal: AbortSignal | undefined,
      onCommit: ((event: CommitEvent) => unknown) | undefined,
      untilSuspended: boolean,
      stopOnInterrupt = true
    ): Effect.Effect<DurableTurn.BatchStatus, DurableTurnError | SchedulerError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const key: JournalKey = { sessionId: payload.sessionId, batchId: payload.batchId }
          const known = read(yield* Effect.mapError(journal.load(key), storage)).batch
          if (known !== undefined && known.ok && (!sameCalls(known.value.calls, payload.calls) || known.value.agent !== payload.agent)) {
            return yield* Effect.fail(
              turnError("Mismatch", `durable batch ${quote(key.batchId)} of session ${quote(key.sessionId)} was started with other calls`)
            )
          }
          const caller = local.attach(key, onCommit)
          if (untilSuspended) {
            const waiting = yield* Effect.mapError(pendingOf(key), storage).pipe(
              Effect.tapError(() => Effect.sync(() => local.detach(key, caller)))
            )
            if (waiting.length > 0) {
              local.detach(key, caller)
              return { _tag: "Suspended", pending: waiting } as DurableTurn.BatchStatus
            }
          }
          const executionId = yield* workflow.executionId(payload)
          const fiber = yield* Effect.fork(Effect.interruptible(Effect.provideService(workflow.execute(payload), WorkflowEngine, engine)))
          const waits: Array<Effect.Effect<Wait>> = [Effect.map(Fiber.await(fiber), (exit): Wait => ({ _tag: "Done", exit }))]
          if (signal !== undefined) waits.push(Effect.map(abortOf(signal), (reason): Wait => ({ _tag: "Abort", reason })))
          if (untilSuspended) {
            waits.push(Effect.as(Deferred.await(caller.suspended), { _tag: "Suspended" } as const))
            waits.push(Effect.as(askedElsewhere(key), { _tag: "Suspended" } as const))
          }
          const first = yield* Effect.exit(restore(Effect.raceAll(waits)))
          const finish = (exit: Exit.Exit<string, SchedulerError>) =>
            Effect.flatMap(exit, (text) => {
              const batch = decodeBatch(text)
              return batch === undefined
                ? Effect.fail(turnError("Storage", `the recorded outcome of durable batch ${quote(key.batchId)} could not be read`))
                : Effect.succeed<DurableTurn.BatchStatus>({ _tag: "Complete", batch })
            })
          const outcome = yield* Effect.gen(function*() {
            if (Exit.isFailure(first)) {
              if (stopOnInterrupt && !local.closing) {
                yield* stop(key, executionId, new DOMException(INTERRUPTED_REASON, "AbortError"))
                yield* Fiber.await(fiber)
              } else {
                yield* Fiber.interrupt(fiber)
              }
              return yield* Effect.failCause(first.cause)
            }
            const wait = first.value
            switch (wait._tag) {
              case "Done":
                return yield* finish(wait.exit)
              case "Abort": {
                yield* stop(key, executionId, wait.reason)
                return yield* finish(yield* Fiber.await(fiber))
              }
              case "Suspended": {
                yield* Fiber.interrupt(fiber)
                const pending = yield* Effect.mapError(pendingOf(key), storage)
                return { _tag: "Suspended", pending } as DurableTurn.BatchStatus
              }
            }
          }).pipe(Effect.ensuring(Effect.sync(() => local.detach(key, caller))))
          return outcome
        })
      )

    const payloadOf = (
      label: string,
      calls: ReadonlyArray<ModelToolCall>,
      options: DurableTurn.DurableBatchOptions
    ): Effect.Effect<
      { readonly payload: BatchPayload; readonly signal: AbortSignal | undefined; readonly onCommit: ((event: CommitEvent) => unknown) | undefined },
      DurableTurnError
    > =>
      Effect.suspend(() => {
        const key = readKey(label, options)
        if (!("sessionId" in key)) return Effect.fail(key)
        const settings = readBatchOptions(options)
        if (settings instanceof Cause.IllegalArgumentException) return Effect.die(settings)
        const items = readCalls(calls)
        if (items instanceof Cause.IllegalArgumentException) return Effect.die(items)
        const stored = items.map((call): StoredCall =>
          call.malformed === undefined
            ? { callId: call.callId, name: call.name, arguments: call.raw }
            : { callId: call.callId, name: call.name, arguments: call.raw, malformed: encodeResult(call.malformed) }
        )
        const payload: BatchPayload = settings.agent === undefined
          ? { ...key, calls: stored, maxParallel: settings.maxParallel }
          : { ...key, calls: stored, agent: settings.agent, maxParallel: settings.maxParallel }
        return Effect.succeed({ payload, signal: settings.signal, onCommit: settings.onCommit })
      })

    const complete = (status: DurableTurn.BatchStatus): Effect.Effect<BatchResult> =>
      status._tag === "Complete"
        ? Effect.succeed(status.batch)
        : Effect.dieMessage("a durable batch awaited to its end reported a suspension")

    const turns: DurableTurn.Service = {
      runBatch: (calls, options) =>
        Effect.flatMap(payloadOf("DurableTurn.runBatch", calls, options), ({ onCommit, payload, signal }) =>
          Effect.flatMap(execute(payload, signal, onCommit, false), complete)),
      start: (calls, options) =>
        Effect.flatMap(payloadOf("DurableTurn.start", calls, options), ({ onCommit, payload, signal }) =>
          execute(payload, signal, onCommit, true)),
      resume: (key, options) =>
        Effect.suspend(() => {
          const read_ = readKey("DurableTurn.resume", key)
          if (!("sessionId" in read_)) return Effect.fail(read_)
          return Effect.flatMap(Effect.mapError(journal.load(read_), storage), (rows) => {
            const batch = read(rows).batch
            if (batch === undefined) {
              return Effect.fail(
                turnError("NotFound", `no durable batch ${quote(read_.batchId)} in session ${quote(read_.sessionId)}`)
              )
            }
            if (!batch.ok) return Effect.fail(turnError("Storage", `the durable batch's row could not be read: ${batch.reason}`))
            const settings = readBatchOptions(options)
            if (settings instanceof Cause.IllegalArgumentException) return Effect.die(settings)
            const payload: BatchPayload = batch.value.agent === undefined
              ? { ...read_, calls: batch.value.calls, maxParallel: batch.value.maxParallel }
              : { ...read_, calls: batch.value.calls, agent: batch.value.agent, maxParallel: batch.value.maxParallel }
            return Effect.flatMap(execute(payload, settings.signal, settings.onCommit, false), complete)
          })
        }),
      records: (sessionId) =>
        typeof sessionId !== "string"
          ? Effect.fail(turnError("InvalidOption", "DurableTurn.records needs a string session id"))
          : Effect.flatMap(Effect.mapError(journal.session(sessionId), storage), recordsOf),
      stop: (key, reason) =>
        Effect.suspend(() => {
          const read_ = readKey("DurableTurn.stop", key)
          if (!("sessionId" in read_)) return Effect.fail(read_)
          const text = typeof reason === "string" ? reason : "the batch was stopped"
          return Effect.flatMap(Effect.mapError(journal.load(read_), storage), (rows) => {
            const batch = read(rows).batch
            if (batch === undefined || !batch.ok) {
              return Effect.fail(turnError("NotFound", `no durable batch ${quote(read_.batchId)} in session ${quote(read_.sessionId)}`))
            }
            const payload: BatchPayload = batch.value.agent === undefined
              ? { ...read_, calls: batch.value.calls, maxParallel: batch.value.maxParallel }
              : { ...read_, calls: batch.value.calls, agent: batch.value.agent, maxParallel: batch.value.maxParallel }
            return Effect.flatMap(workflow.executionId(payload), (executionId) =>
              stop(read_, executionId, new DOMException(text, "AbortError")))
          })
        })
    }
    localOf.set(turns, local)
    hostedOf.set(turns, {
      runBatch: (calls, options) =>
        Effect.flatMap(payloadOf("DurableTurn.runBatch", calls, options), ({ onCommit, payload, signal }) =>
          Effect.flatMap(execute(payload, signal, onCommit, false, false), complete)),
      start: (calls, options) =>
        Effect.flatMap(payloadOf("DurableTurn.start", calls, options), ({ onCommit, payload, signal }) =>
          execute(payload, signal, onCommit, true, false))
    })
    return { turns, approvals: approvalsService(journal, engine, workflow) }
  })

/** @internal */
export const loopSteps = (
  options: { readonly sessionId: string; readonly turnId: string }
): Effect.Effect<DurableTurn.LoopSteps, DurableTurnError, DurableTurn.DurableTurns | DurableJournal> =>
  Effect.gen(function*() {
    const read = readKey("DurableTurn.loopSteps", {
      sessionId: (options as { sessionId?: unknown } | null)?.sessionId,
      batchId: (options as { turnId?: unknown } | null)?.turnId
    })
    if (!("sessionId" in read)) return yield* Effect.fail(read)
    const turns = yield* DurableTurnsTag
    const journal = yield* DurableJournal
    const modelKey: JournalKey = { sessionId: read.sessionId, batchId: `${read.batchId}/model` }
    const stored = (step: number) =>
      Effect.map(Effect.mapError(journal.load(modelKey), storage), (rows) =>
        rows.find((row) => row.entry === `step:${step}`)?.payload)
    return {
      model: stored,
      recordModel: (step, message) =>
        Effect.zipRight(
          Effect.mapError(journal.write(modelKey, [{ entry: `step:${step}`, payload: message }]), storage),
          Effect.map(stored(step), (text) => text ?? message)
        ),
      runBatch: (step, calls, batch) =>
        turns.runBatch(calls, { ...batch, sessionId: read.sessionId, batchId: `${read.batchId}/${step}` })
    }
  })
