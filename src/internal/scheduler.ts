/**
 * The ordered concurrent scheduler (spec §16): one driver fiber owns the ordered lane
 * (classification, `tool/call`, prepare, finalize/finish, `tool/result`, commit) in model order;
 * only `dispatch` overlaps, in fibers owned by the batch and bounded by a semaphore.
 *
 * Everything the caller hands in (the calls array, each call, the options, `onCommit` and what it
 * returns) is read once and treated as hostile: nothing of it is converted, formatted or logged
 * unguarded (issue 8 item 7).
 *
 * @internal
 */
import { setMaxListeners } from "node:events"
import { types } from "node:util"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import type { UserMessage } from "../Content.js"
import type { AgentId, ExecuteInput } from "../Execution.js"
import * as Json from "../Json.js"
import type { ExecutionMode } from "../Policy.js"
import type { BatchOptions, BatchResult, CommitEvent, CommittedResult, ModelToolCall } from "../Scheduler.js"
import * as ToolCallLog from "../ToolCallLog.js"
import { detailOf, detailOfCause } from "../ToolError.js"
import { ToolRegistry } from "../ToolRegistry.js"
import type { Service as RegistryService } from "../ToolRegistry.js"
import * as ToolResult from "../ToolResult.js"
import { ToolRuntime } from "../ToolRuntime.js"
import { parseArguments } from "./arguments.js"
import { stagedOf } from "./pipeline.js"
import { isAbortSignal } from "./signals.js"
import type * as ToolRuntimeNs from "../ToolRuntime.js"

/**
 * The data of a durable-log failure (D-16); the public module wraps it in `SchedulerError`.
 *
 * @internal
 */
export interface LogFailure {
  readonly batchId: string
  readonly logError: ToolCallLog.ToolCallLogError
  readonly unrecorded: ReadonlyArray<string>
  readonly notStarted: ReadonlyArray<string>
}

/** @internal */
export const DEFAULT_MAX_PARALLEL = 10

/** @internal */
export const MAX_PARALLEL_MESSAGE = "maxParallelToolCalls must be a positive integer"

/** @internal */
export const isValidMaxParallel = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value > 0

/**
 * The error text of a malformed call whose `callId` or `name` is not a string (or that is not an
 * object at all): the text `ToolRuntime.execute` gives an input with the same fault.
 *
 * @internal
 */
export const MALFORMED_IDENTITY_MESSAGE = "tool execution input needs string callId and name"

/** @internal */
export const MALFORMED_ARGUMENTS_MESSAGE = "tool call arguments must be a string"

/** @internal */
export const CALLS_MESSAGE = "runBatch needs an array of tool calls"

/**
 * Test probe: told, right before the driver blocks, which calls are in flight.
 *
 * @internal
 */
export interface Probe {
  readonly onWait: (inFlight: ReadonlyArray<number>) => Effect.Effect<void>
}

// ---------------------------------------------------------------------------------------------
// Reading what the caller handed in: each field once, nothing formatted unguarded
// ---------------------------------------------------------------------------------------------

interface Call {
  readonly callId: string
  readonly name: string
  readonly raw: string
  /** The scheduler's own error result for a malformed call (never sent to the runtime). */
  readonly malformed: ToolResult.ToolResult | undefined
}

type Field = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }

const readField = (target: object, key: string): Field => {
  try {
    return { ok: true, value: (target as Record<string, unknown>)[key] }
  } catch (error) {
    return { ok: false, error }
  }
}

const stringOr = (field: Field): string => field.ok && typeof field.value === "string" ? field.value : ""

const malformedCall = (callId: string, name: string, raw: string, detail: ReturnType<typeof detailOf>): Call => ({
  callId,
  name,
  raw,
  malformed: Json.deepFreeze(ToolResult.failure(detail))
})

/**
 * One model call, each field read exactly once. A malformed call keeps the fields that were
 * strings (`""` for the others) and gets: the ERR-1 result of the first thrown value (entry,
 * then `callId`, `name`, `arguments`), else the identity text when the entry is not an object or
 * its `callId`/`name` is not a string, else the arguments text.
 */
const readCall = (calls: ReadonlyArray<unknown>, index: number): Call => {
  let entry: unknown
  try {
    entry = calls[index]
  } catch (error) {
    return malformedCall("", "", "", detailOf(error))
  }
  if ((typeof entry !== "object" && typeof entry !== "function") || entry === null) {
    return malformedCall("", "", "", { message: MALFORMED_IDENTITY_MESSAGE })
  }
  const callId = readField(entry, "callId")
  const name = readField(entry, "name")
  const args = readField(entry, "arguments")
  const id = stringOr(callId)
  const named = stringOr(name)
  const raw = stringOr(args)
  const threw = !callId.ok ? callId : !name.ok ? name : !args.ok ? args : undefined
  if (threw !== undefined && !threw.ok) return malformedCall(id, named, raw, detailOf(threw.error))
  if (
    !callId.ok || typeof callId.value !== "string" || !name.ok || typeof name.value !== "string"
  ) {
    return malformedCall(id, named, raw, { message: MALFORMED_IDENTITY_MESSAGE })
  }
  if (!args.ok || typeof args.value !== "string") {
    return malformedCall(id, named, raw, { message: MALFORMED_ARGUMENTS_MESSAGE })
  }
  return { callId: id, name: named, raw, malformed: undefined }
}

const MAX_CALLS = 2 ** 32 - 1

const illegal = (message: string) => new Cause.IllegalArgumentException(message)

const readCalls = (calls: unknown): Array<Call> | Cause.IllegalArgumentException => {
  let length: unknown
  try {
    if (!Array.isArray(calls)) return illegal(CALLS_MESSAGE)
    length = calls.length
  } catch (error) {
    return illegal(`runBatch could not read the tool-call array: ${detailOf(error).message}`)
  }
  if (typeof length !== "number" || !Number.isInteger(length) || length < 0 || length > MAX_CALLS) {
    return illegal("runBatch could not read the tool-call array: invalid length")
  }
  const out: Array<Call> = []
  for (let i = 0; i < length; i++) out.push(readCall(calls as ReadonlyArray<unknown>, i))
  return out
}

interface Settings {
  readonly agent: AgentId | undefined
  readonly maxParallel: number
  readonly signal: AbortSignal | undefined
  readonly batchId: string | undefined
  readonly onCommit: ((event: CommitEvent) => unknown) | undefined
}

const defaults: Settings = {
  agent: undefined,
  maxParallel: DEFAULT_MAX_PARALLEL,
  signal: undefined,
  batchId: undefined,
  onCommit: undefined
}

const OPTION_KEYS = ["agent", "maxParallel", "signal", "batchId", "onCommit"] as const

/** The batch options, each read exactly once and validated. */
const readOptions = (options: unknown): Settings | Cause.IllegalArgumentException => {
  if (options === undefined || options === null) return defaults
  if (typeof options !== "object" && typeof options !== "function") return illegal("runBatch options must be an object")
  const read: Record<string, unknown> = {}
  for (const key of OPTION_KEYS) {
    const field = readField(options, key)
    if (!field.ok) return illegal(`runBatch could not read option "${key}": ${detailOf(field.error).message}`)
    read[key] = field.value
  }
  const maxParallel = read.maxParallel ?? DEFAULT_MAX_PARALLEL
  if (!isValidMaxParallel(maxParallel)) return illegal(MAX_PARALLEL_MESSAGE)
  const { agent, batchId, onCommit, signal } = read
  if (signal !== undefined && !isAbortSignal(signal)) {
    return illegal("runBatch option \"signal\" must be an AbortSignal")
  }
  if (agent !== undefined && typeof agent !== "string") return illegal("runBatch option \"agent\" must be a string")
  if (batchId !== undefined && typeof batchId !== "string") {
    return illegal("runBatch option \"batchId\" must be a string")
  }
  if (onCommit !== undefined && typeof onCommit !== "function") {
    return illegal("runBatch option \"onCommit\" must be a function")
  }
  return {
    agent,
    maxParallel,
    signal,
    batchId,
    onCommit: onCommit as ((event: CommitEvent) => unknown) | undefined
  }
}

// ---------------------------------------------------------------------------------------------
// The batch
// ---------------------------------------------------------------------------------------------

interface Ready {
  /** `undefined`: a result the scheduler made itself (a malformed call), committed without the runtime. */
  readonly handle: ToolRuntimeNs.Execution | undefined
  readonly final: boolean
  readonly result: ToolResult.ToolResult
}

interface Settlement {
  readonly index: number
  readonly exit: Exit.Exit<ToolRuntimeNs.Dispatched>
}

type Failure =
  | { readonly _tag: "Log"; readonly error: ToolCallLog.ToolCallLogError }
  | { readonly _tag: "Defect"; readonly cause: Cause.Cause<never> }

const emptyResult: BatchResult = Object.freeze({
  results: Object.freeze([]),
  contexts: Object.freeze([]),
  concluded: false,
  aborted: false
})

const exclusive: Effect.Effect<ExecutionMode> = Effect.succeed("exclusive")
const parallel: Effect.Effect<ExecutionMode> = Effect.succeed("parallel")

const INTERRUPTED_REASON = "the tool-call batch was interrupted"
const FAILED_REASON = "the tool-call batch failed"

const synthetic = (): ToolResult.ToolResult => Json.deepFreeze(ToolResult.abortedBeforeDispatch())

const malformedOutcome = (step: string): Cause.Cause<never> =>
  Cause.die(new TypeError(`the staged runtime's ${step} returned a malformed outcome`))

const isObject = (value: unknown): value is object => typeof value === "object" && value !== null

/** A staged outcome, each field read once; `undefined` when it is not one. */
const readOutcome = (
  value: unknown
):
  | { readonly tag: "Dispatch" | "PostResult" | "FinalResult"; readonly handle: unknown; readonly result: unknown }
  | undefined =>
{
  try {
    if (!isObject(value) || types.isProxy(value)) return undefined
    const { _tag: tag, handle, result } = value as { _tag?: unknown; handle?: unknown; result?: unknown }
    if (tag !== "Dispatch" && tag !== "PostResult" && tag !== "FinalResult") return undefined
    if (tag !== "Dispatch" && !isObject(result)) return undefined
    return { tag, handle, result }
  } catch {
    return undefined
  }
}

/**
 * One batch: the driver's mutable state and the ordered-lane steps. Only the driver fiber
 * touches it; dispatch fibers only push to `settled`, wake the driver and release their permit.
 */
class Batch {
  readonly n: number
  readonly args: Array<unknown>
  readonly parsed: Array<boolean>
  readonly ready: Array<Ready | undefined>
  readonly results: Array<CommittedResult>
  readonly contexts: Array<UserMessage> = []
  readonly running = new Set<number>()
  readonly handles = new Map<number, ToolRuntimeNs.Execution>()
  readonly signal: AbortSignal
  next = 0
  cursor = 0
  inFlight = 0
  concluded = false
  failure: Failure | undefined = undefined
  fibers: FiberSet.FiberSet<void> | undefined = undefined
  /** Settlements not yet absorbed by the driver, in settlement order. */
  settled: Array<Settlement> = []
  /** The driver's wake-up while it waits for a settlement. */
  wake: Deferred.Deferred<void> | undefined = undefined

  constructor(
    readonly calls: ReadonlyArray<Call>,
    readonly batchId: string,
    readonly agent: AgentId | undefined,
    readonly maxParallel: number,
    readonly controller: AbortController,
    readonly onCommit: ((event: CommitEvent) => unknown) | undefined,
    readonly tap: ((event: CommitEvent) => Effect.Effect<void>) | undefined,
    readonly runtime: ToolRuntimeNs.Service,
    readonly registry: RegistryService,
    readonly log: ToolCallLog.Service,
    readonly semaphore: Effect.Semaphore,
    readonly probe: Probe | undefined
  ) {
    this.n = calls.length
    this.signal = controller.signal
    this.args = new Array(this.n)
    this.parsed = new Array(this.n).fill(false)
    this.ready = new Array(this.n)
    this.results = new Array(this.n)
  }

  /** A failure was recorded; settlements that arrived meanwhile are absorbed first. */
  failed(): boolean {
    absorbAll(this)
    return this.failure !== undefined
  }

  /** No new call may start: a failure was recorded or the batch was cancelled (SCHED-9/10). */
  stopped(): boolean {
    return this.failed() || this.signal.aborted
  }

  argumentsOf(index: number): unknown {
    if (!this.parsed[index]) {
      this.args[index] = parseArguments(this.calls[index].raw)
      this.parsed[index] = true
    }
    return this.args[index]
  }

  callRecord(index: number): ToolCallLog.ToolCallRecord {
    const call = this.calls[index]
    return this.agent === undefined
      ? { _tag: "tool/call", batchId: this.batchId, index, callId: call.callId, name: call.name, arguments: call.raw }
      : {
        _tag: "tool/call",
        batchId: this.batchId,
        index,
        callId: call.callId,
        name: call.name,
        agent: this.agent,
        arguments: call.raw
      }
  }

  input(index: number): ExecuteInput {
    const call = this.calls[index]
    return {
      callId: call.callId,
      name: call.name,
      arguments: this.argumentsOf(index),
      agent: this.agent,
      signal: this.signal
    }
  }

  fail(failure: Failure): void {
    if (this.failure === undefined) this.failure = failure
  }

  /** Total: a malformed dispatch outcome is recorded as the runtime's defect, never thrown. */
  absorb(settlement: Settlement): void {
    const index = settlement.index
    this.inFlight--
    this.running.delete(index)
    const handle = this.handles.get(index)
    this.handles.delete(index)
    const exit = settlement.exit
    if (Exit.isFailure(exit)) {
      this.fail({ _tag: "Defect", cause: exit.cause })
      return
    }
    const outcome = readOutcome(exit.value)
    if (outcome === undefined || outcome.tag === "Dispatch" || handle === undefined) {
      this.fail({ _tag: "Defect", cause: malformedOutcome("dispatch") })
      return
    }
    this.ready[index] = {
      final: outcome.tag === "FinalResult",
      handle,
      result: outcome.result as ToolResult.ToolResult
    }
  }
}

const absorbAll = (b: Batch): void => {
  if (b.settled.length === 0) return
  const settled = b.settled
  b.settled = []
  for (const settlement of settled) b.absorb(settlement)
}

/** Runs a driver step; any defect it dies with is recorded as the batch's failure (SCHED-10). */
const guarded = (b: Batch, effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.catchAllCause(effect, (cause) => Effect.sync(() => b.fail({ _tag: "Defect", cause })))

/** Called by a dispatch fiber: hand the settlement to the driver and wake it if it waits. */
const settle = (b: Batch, settlement: Settlement): Effect.Effect<void> =>
  Effect.suspend(() => {
    b.settled.push(settlement)
    const wake = b.wake
    if (wake === undefined) return Effect.void
    b.wake = undefined
    return Deferred.succeed(wake, undefined)
  })

/** Blocks the driver until at least one dispatch has settled, then absorbs every settlement. */
const waitSettlement = (b: Batch): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (b.settled.length > 0) {
      absorbAll(b)
      return Effect.void
    }
    const announce = b.probe === undefined ? Effect.void : b.probe.onWait([...b.running])
    return Effect.flatMap(Deferred.make<void>(), (wake) => {
      b.wake = wake
      return announce.pipe(Effect.zipRight(Deferred.await(wake)), Effect.map(() => absorbAll(b)))
    })
  })

// ---------------------------------------------------------------------------------------------
// onCommit: logged and ignored whatever it does (item 7b)
// ---------------------------------------------------------------------------------------------

/** Only the scheduler's own text is logged: never the user's value, nor a Cause holding it. */
const commitFailed = (callId: string, detail: string): Effect.Effect<void> =>
  Effect.catchAllCause(
    Effect.logWarning(`scheduler onCommit failed for tool call "${callId}": ${detail}`),
    () => Effect.void
  )

const isGenuineEffect = (value: unknown): value is Effect.Effect<unknown, unknown> => {
  try {
    return !types.isProxy(value) && Effect.isEffect(value)
  } catch {
    return false
  }
}

const callCommit = (
  onCommit: (event: CommitEvent) => unknown,
  event: CommitEvent
): Effect.Effect<void> => {
  const callId = event.callId
  let returned: unknown
  try {
    returned = onCommit(event)
  } catch (thrown) {
    return commitFailed(callId, detailOf(thrown).message)
  }
  if (!isGenuineEffect(returned)) return commitFailed(callId, "onCommit must return an Effect")
  return Effect.catchAllCause(
    Effect.asVoid(returned),
    (cause) => commitFailed(callId, detailOfCause(cause).message)
  )
}

const notify = (b: Batch, event: CommitEvent): Effect.Effect<void> => {
  const frozen = Object.freeze(event)
  const tap = b.tap === undefined ? Effect.void : b.tap(frozen)
  const onCommit = b.onCommit
  return onCommit === undefined ? tap : Effect.zipRight(tap, Effect.suspend(() => callCommit(onCommit, frozen)))
}

// ---------------------------------------------------------------------------------------------
// The ordered lane
// ---------------------------------------------------------------------------------------------

const stagedFailure = (b: Batch) => (cause: Cause.Cause<never>): Effect.Effect<undefined> =>
  Effect.sync(() => {
    b.fail({ _tag: "Defect", cause })
    return undefined
  })

const appendOrFail = (b: Batch, record: ToolCallLog.LogRecord): Effect.Effect<boolean> =>
  Effect.suspend(() => b.log.append(record)).pipe(
    Effect.as(true),
    Effect.catchAllCause((cause) =>
      Effect.sync(() => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) b.fail({ _tag: "Log", error: failure.value })
        else b.fail({ _tag: "Defect", cause: cause as Cause.Cause<never> })
        return false
      })
    )
  )

/** commit(i): finalize / finish, durable `tool/result`, contexts, conclusion, commit event. */
const commit = Effect.fnUntraced(function*(b: Batch, index: number) {
  const ready = b.ready[index]!
  b.ready[index] = undefined
  const handle = ready.handle
  const result = handle === undefined ? ready.result : yield* Effect.suspend(() =>
    ready.final ? b.runtime.finish(handle, ready.result) : b.runtime.finalize(handle, ready.result)
  ).pipe(Effect.catchAllCause(stagedFailure(b)))
  if (result === undefined) return
  const call = b.calls[index]
  if (!(yield* appendOrFail(b, ToolCallLog.resultRecord(b.batchId, index, call.callId, result)))) return
  b.results[index] = { callId: call.callId, index, result }
  const contexts = result.additionalContexts
  if (contexts !== undefined) for (const context of contexts) b.contexts.push(context)
  if (!result.isError && result.concludesTurn === true) b.concluded = true
  b.cursor = index + 1
  yield* notify(b, { callId: call.callId, index, result, synthetic: handle === undefined })
})

const committable = (b: Batch): boolean =>
  b.failure === undefined && b.cursor < b.next && b.ready[b.cursor] !== undefined

/** Commits the longest ready prefix (never after a failure). */
const commitReady = Effect.fnUntraced(function*(b: Batch) {
  while (committable(b)) yield* commit(b, b.cursor)
})

/** Absorbs every settlement, then commits the longest ready prefix. */
const pump = (b: Batch): Effect.Effect<void> =>
  Effect.suspend(() => {
    absorbAll(b)
    return committable(b) ? commitReady(b) : Effect.void
  })

const dispatchFiber = (b: Batch, index: number, handle: ToolRuntimeNs.Execution): Effect.Effect<void> =>
  Effect.interruptible(Effect.suspend(() => b.runtime.dispatch(handle))).pipe(
    Effect.exit,
    Effect.flatMap((exit) => settle(b, { index, exit })),
    Effect.ensuring(b.semaphore.release(1)),
    Effect.asVoid
  )

/**
 * start(i), with a pool permit held: `tool/call`, prepare, then dispatch into the pool or fill the
 * slot. `false` (permit returned, nothing done) when the batch had stopped before i could start.
 * A failure seen at any later point (after the append, after prepare) starts nothing more: no
 * prepare, no dispatch (SCHED-10).
 */
const start = Effect.fnUntraced(function*(b: Batch, index: number) {
  if (b.stopped()) {
    yield* b.semaphore.release(1)
    return false
  }
  b.next = index + 1
  if (!(yield* appendOrFail(b, b.callRecord(index))) || b.failed()) {
    yield* b.semaphore.release(1)
    return true
  }
  const malformed = b.calls[index].malformed
  if (malformed !== undefined) {
    b.ready[index] = { handle: undefined, final: true, result: malformed }
    yield* b.semaphore.release(1)
    yield* pump(b)
    return true
  }
  const prepared = yield* Effect.suspend(() => b.runtime.prepare(b.input(index))).pipe(
    Effect.catchAllCause(stagedFailure(b))
  )
  const outcome = prepared === undefined ? undefined : readOutcome(prepared)
  if (prepared !== undefined && outcome === undefined) b.fail({ _tag: "Defect", cause: malformedOutcome("prepare") })
  if (outcome === undefined || b.failed()) {
    yield* b.semaphore.release(1)
    return true
  }
  const handle = outcome.handle as ToolRuntimeNs.Execution
  if (outcome.tag === "Dispatch") {
    b.inFlight++
    b.running.add(index)
    b.handles.set(index, handle)
    yield* FiberSet.run(b.fibers!, dispatchFiber(b, index, handle))
  } else {
    b.ready[index] = { final: outcome.tag === "FinalResult", handle, result: outcome.result as ToolResult.ToolResult }
    yield* b.semaphore.release(1)
  }
  yield* pump(b)
  return true
})

/** Takes a pool permit, waiting (and committing) while the pool is full. */
const acquire = Effect.fnUntraced(function*(b: Batch) {
  yield* pump(b)
  if (b.inFlight >= b.maxParallel && b.probe !== undefined) yield* b.probe.onWait([...b.running])
  yield* b.semaphore.take(1)
  yield* pump(b)
})

/** Group barrier: every started call committed (or, after a failure, nothing left to commit). */
const awaitCommitted = Effect.fnUntraced(function*(b: Batch) {
  yield* pump(b)
  while (b.failure === undefined && b.cursor < b.next && b.inFlight > 0) {
    yield* waitSettlement(b)
    yield* pump(b)
  }
})

/**
 * Drain: await every in-flight dispatch, committing in order unless the batch failed. A defect of
 * a commit step is recorded and the wait goes on: no dispatch is left behind.
 */
const drain = Effect.fnUntraced(function*(b: Batch) {
  yield* guarded(b, pump(b))
  while (b.inFlight > 0) {
    yield* waitSettlement(b)
    yield* guarded(b, pump(b))
  }
})

/** SCHED-2, with any doubt (a failing or throwing registry) `exclusive`; a malformed call runs nothing. */
const classify = (b: Batch, index: number): Effect.Effect<ExecutionMode> => {
  const call = b.calls[index]
  if (call.malformed !== undefined) return parallel
  return Effect.suspend(() =>
    b.registry.executionMode({ name: call.name, arguments: b.argumentsOf(index), agent: b.agent })
  ).pipe(Effect.catchAllCause(() => exclusive))
}

/** SCHED-9: a `tool/call` + synthetic ABORTED_BEFORE_DISPATCH `tool/result` per never-started call. */
const commitSkipped = Effect.fnUntraced(function*(b: Batch) {
  while (b.failure === undefined && b.next < b.n) {
    const index = b.next
    b.next = index + 1
    if (!(yield* appendOrFail(b, b.callRecord(index)))) return
    const call = b.calls[index]
    const result = synthetic()
    if (!(yield* appendOrFail(b, ToolCallLog.resultRecord(b.batchId, index, call.callId, result)))) return
    b.results[index] = { callId: call.callId, index, result }
    b.cursor = index + 1
    yield* notify(b, { callId: call.callId, index, result, synthetic: true })
  }
})

const idsOf = (b: Batch, from: number, to: number): Array<string> => {
  const out: Array<string> = []
  for (let i = from; i < to; i++) out.push(b.calls[i].callId)
  return out
}

const outcome = (b: Batch): Effect.Effect<BatchResult, LogFailure> => {
  const failure = b.failure
  if (failure === undefined) {
    return Effect.succeed(Object.freeze({
      results: Object.freeze(b.results),
      contexts: Object.freeze(b.contexts),
      concluded: b.concluded,
      aborted: b.signal.aborted
    }))
  }
  if (failure._tag === "Defect") return Effect.failCause(failure.cause)
  return Effect.fail({
    batchId: b.batchId,
    logError: failure.error,
    unrecorded: idsOf(b, b.cursor, b.n),
    notStarted: idsOf(b, b.next, b.n)
  })
}

/**
 * Groups (SCHED-3), rolling pool (SCHED-4), ordered lane (SCHED-5). Every start path checks
 * `stopped()` (which absorbs pending settlements first) right before the call starts.
 */
const schedule = Effect.fnUntraced(function*(b: Batch) {
  const n = b.n
  main: while (b.next < n) {
    yield* awaitCommitted(b)
    if (b.stopped()) break
    const mode = yield* classify(b, b.next)
    yield* b.semaphore.take(1)
    if (!(yield* start(b, b.next))) break
    if (mode !== "parallel") continue
    while (b.next < n) {
      yield* acquire(b)
      if (b.stopped()) {
        yield* b.semaphore.release(1)
        break main
      }
      if ((yield* classify(b, b.next)) !== "parallel") {
        yield* b.semaphore.release(1)
        break
      }
      if (!(yield* start(b, b.next))) break main
    }
  }
})

/** The driver: schedule, drain (SCHED-9/10), synthetic results, outcome. */
const drive = Effect.fnUntraced(function*(b: Batch) {
  const fibers = yield* FiberSet.make<void>()
  b.fibers = fibers
  // Runs before the FiberSet's own finalizer: should the driver ever die with dispatches still in
  // flight, they see the batch signal abort before they are interrupted and awaited.
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      if (b.inFlight > 0 || b.settled.length > 0) b.controller.abort(new DOMException(FAILED_REASON, "AbortError"))
    })
  )
  yield* guarded(b, schedule(b))
  yield* drain(b)
  yield* guarded(b, commitSkipped(b))
  return yield* outcome(b)
})

const linkSignal = (source: AbortSignal | undefined, controller: AbortController): () => void => {
  if (source === undefined) return () => {}
  if (source.aborted) {
    controller.abort(source.reason)
    return () => {}
  }
  const onAbort = () => controller.abort(source.reason)
  source.addEventListener("abort", onAbort, { once: true })
  return () => source.removeEventListener("abort", onAbort)
}

/**
 * Runs one model message's tool calls (spec §16 with D-14/D-16). `tap` (trusted, for the stream)
 * runs on the lane before the caller's `onCommit` for each commit.
 *
 * @internal
 */
export const runBatch = (
  calls: ReadonlyArray<ModelToolCall>,
  options?: BatchOptions | undefined,
  probe?: Probe | undefined,
  tap?: ((event: CommitEvent) => Effect.Effect<void>) | undefined
): Effect.Effect<BatchResult, LogFailure, ToolRuntime | ToolRegistry | ToolCallLog.ToolCallLog> =>
  Effect.suspend(() => {
    const settings = readOptions(options)
    if (settings instanceof Cause.IllegalArgumentException) return Effect.die(settings)
    const items = readCalls(calls)
    if (items instanceof Cause.IllegalArgumentException) return Effect.die(items)
    const n = items.length
    if (n === 0) return Effect.succeed(emptyResult)
    const batchId = settings.batchId ?? items[0].callId
    const cap = Math.min(settings.maxParallel, n)
    return Effect.flatMap(
      Effect.context<ToolRuntime | ToolRegistry | ToolCallLog.ToolCallLog>(),
      (context) =>
        Effect.uninterruptibleMask((restore) => {
          const controller = new AbortController()
          setMaxListeners(0, controller.signal) // every in-flight call of the batch listens to it
          const unlink = linkSignal(settings.signal, controller)
          return Effect.gen(function*() {
            const semaphore = yield* Effect.makeSemaphore(cap)
            const batch = new Batch(
              items,
              batchId,
              settings.agent,
              cap,
              controller,
              settings.onCommit,
              tap,
              stagedOf(Context.get(context, ToolRuntime)),
              Context.get(context, ToolRegistry),
              Context.get(context, ToolCallLog.ToolCallLog),
              semaphore,
              probe
            )
            const driver = yield* Effect.fork(Effect.scoped(drive(batch)))
            const awaited = yield* Effect.exit(restore(Fiber.await(driver)))
            if (Exit.isSuccess(awaited)) return yield* Fiber.join(driver)
            controller.abort(new DOMException(INTERRUPTED_REASON, "AbortError"))
            yield* Fiber.await(driver)
            return yield* Effect.failCause(awaited.cause)
          }).pipe(Effect.ensuring(Effect.sync(unlink)))
        })
    )
  })
