/**
 * The ordered concurrent scheduler (spec §16): one driver fiber owns the ordered lane
 * (classification, `tool/call`, prepare, finalize/finish, `tool/result`, commit) in model order;
 * only `dispatch` overlaps, in fibers owned by the batch and bounded by a semaphore.
 *
 * @internal
 */
import { setMaxListeners } from "node:events"
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
import { ToolRegistry } from "../ToolRegistry.js"
import type { Service as RegistryService } from "../ToolRegistry.js"
import * as ToolResult from "../ToolResult.js"
import { ToolRuntime } from "../ToolRuntime.js"
import { parseArguments } from "./arguments.js"
import { stagedOf } from "./pipeline.js"
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
 * Test probe: told, right before the driver blocks, which calls are in flight.
 *
 * @internal
 */
export interface Probe {
  readonly onWait: (inFlight: ReadonlyArray<number>) => Effect.Effect<void>
}

interface Call {
  readonly callId: string
  readonly name: string
  readonly raw: string
}

interface Ready {
  readonly final: boolean
  readonly handle: ToolRuntimeNs.Execution
  readonly result: ToolResult.ToolResult
}

interface Settlement {
  readonly index: number
  readonly exit: Exit.Exit<ToolRuntimeNs.Dispatched>
}

type Failure =
  | { readonly _tag: "Log"; readonly error: ToolCallLog.ToolCallLogError }
  | { readonly _tag: "Defect"; readonly cause: Cause.Cause<never> }

const readCalls = (calls: ReadonlyArray<ModelToolCall>): Array<Call> => {
  const length = calls.length
  const out: Array<Call> = new Array(length)
  for (let i = 0; i < length; i++) {
    const call = calls[i]
    const raw: unknown = call.arguments
    out[i] = {
      callId: String(call.callId),
      name: String(call.name),
      raw: typeof raw === "string" ? raw : String(raw)
    }
  }
  return out
}

const emptyResult: BatchResult = Object.freeze({
  results: Object.freeze([]),
  contexts: Object.freeze([]),
  concluded: false,
  aborted: false
})

const exclusive: Effect.Effect<ExecutionMode> = Effect.succeed("exclusive")

const INTERRUPTED_REASON = "the tool-call batch was interrupted"

const synthetic = (): ToolResult.ToolResult => Json.deepFreeze(ToolResult.abortedBeforeDispatch())

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
    readonly signal: AbortSignal,
    readonly onCommit: ((event: CommitEvent) => Effect.Effect<void>) | undefined,
    readonly runtime: ToolRuntimeNs.Service,
    readonly registry: RegistryService,
    readonly log: ToolCallLog.Service,
    readonly semaphore: Effect.Semaphore,
    readonly probe: Probe | undefined
  ) {
    this.n = calls.length
    this.args = new Array(this.n)
    this.parsed = new Array(this.n).fill(false)
    this.ready = new Array(this.n)
    this.results = new Array(this.n)
  }

  stopped(): boolean {
    return this.failure !== undefined || this.signal.aborted
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

  absorb(settlement: Settlement): void {
    const index = settlement.index
    this.inFlight--
    this.running.delete(index)
    const exit = settlement.exit
    if (Exit.isSuccess(exit)) {
      const handle = this.handles.get(index)!
      this.handles.delete(index)
      this.ready[index] = { final: exit.value._tag === "FinalResult", handle, result: exit.value.result }
    } else {
      this.handles.delete(index)
      this.fail({ _tag: "Defect", cause: exit.cause })
    }
  }
}

const absorbAll = (b: Batch): void => {
  if (b.settled.length === 0) return
  const settled = b.settled
  b.settled = []
  for (const settlement of settled) b.absorb(settlement)
}

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

const notify = (b: Batch, event: CommitEvent): Effect.Effect<void> =>
  b.onCommit === undefined ? Effect.void : Effect.catchAllCause(
    Effect.suspend(() => b.onCommit!(event)),
    (cause) => Effect.logWarning(`scheduler onCommit failed for tool call "${event.callId}"`, cause)
  )

const stagedFailure = (b: Batch) => (cause: Cause.Cause<never>): Effect.Effect<undefined> =>
  Effect.sync(() => {
    b.fail({ _tag: "Defect", cause })
    return undefined
  })

const appendOrFail = (b: Batch, record: ToolCallLog.LogRecord): Effect.Effect<boolean> =>
  b.log.append(record).pipe(
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
  const result = yield* (ready.final ? b.runtime.finish(ready.handle, ready.result) : b.runtime.finalize(
    ready.handle,
    ready.result
  )).pipe(Effect.catchAllCause(stagedFailure(b)))
  if (result === undefined) return
  const call = b.calls[index]
  if (!(yield* appendOrFail(b, ToolCallLog.resultRecord(b.batchId, index, call.callId, result)))) return
  b.results[index] = { callId: call.callId, index, result }
  const contexts = result.additionalContexts
  if (contexts !== undefined) for (const context of contexts) b.contexts.push(context)
  if (!result.isError && result.concludesTurn === true) b.concluded = true
  b.cursor = index + 1
  yield* notify(b, { callId: call.callId, index, result, synthetic: false })
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
  Effect.interruptible(b.runtime.dispatch(handle)).pipe(
    Effect.exit,
    Effect.flatMap((exit) => settle(b, { index, exit })),
    Effect.ensuring(b.semaphore.release(1)),
    Effect.asVoid
  )

/** start(i), with a pool permit held: `tool/call`, prepare, then dispatch into the pool or fill the slot. */
const start = Effect.fnUntraced(function*(b: Batch, index: number) {
  b.next = index + 1
  if (!(yield* appendOrFail(b, b.callRecord(index)))) {
    yield* b.semaphore.release(1)
    return
  }
  const prepared = yield* b.runtime.prepare(b.input(index)).pipe(Effect.catchAllCause(stagedFailure(b)))
  if (prepared === undefined) {
    yield* b.semaphore.release(1)
    return
  }
  if (prepared._tag === "Dispatch") {
    b.inFlight++
    b.running.add(index)
    b.handles.set(index, prepared.handle)
    yield* FiberSet.run(b.fibers!, dispatchFiber(b, index, prepared.handle))
  } else {
    b.ready[index] = { final: prepared._tag === "FinalResult", handle: prepared.handle, result: prepared.result }
    yield* b.semaphore.release(1)
  }
  yield* pump(b)
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

/** Drain: await every in-flight dispatch, committing in order unless the batch failed. */
const drain = Effect.fnUntraced(function*(b: Batch) {
  yield* pump(b)
  while (b.inFlight > 0) {
    yield* waitSettlement(b)
    yield* pump(b)
  }
})

const classify = (b: Batch, index: number): Effect.Effect<ExecutionMode> => {
  const call = b.calls[index]
  return b.registry.executionMode({ name: call.name, arguments: b.argumentsOf(index), agent: b.agent }).pipe(
    Effect.catchAllCause(() => exclusive)
  )
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

/** The driver: groups (SCHED-3), rolling pool (SCHED-4), ordered lane (SCHED-5), drain (SCHED-9/10). */
const drive = Effect.fnUntraced(function*(b: Batch) {
  const n = b.n
  b.fibers = yield* FiberSet.make<void>()
  main: while (b.next < n && !b.stopped()) {
    yield* awaitCommitted(b)
    if (b.stopped()) break
    const mode = yield* classify(b, b.next)
    yield* b.semaphore.take(1)
    yield* start(b, b.next)
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
      yield* start(b, b.next)
    }
  }
  yield* drain(b)
  yield* commitSkipped(b)
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
 * Runs one model message's tool calls (spec §16 with D-14/D-16).
 *
 * @internal
 */
export const runBatch = (
  calls: ReadonlyArray<ModelToolCall>,
  options?: BatchOptions | undefined,
  probe?: Probe | undefined
): Effect.Effect<BatchResult, LogFailure, ToolRuntime | ToolRegistry | ToolCallLog.ToolCallLog> =>
  Effect.suspend(() => {
    const maxParallel = options?.maxParallel ?? DEFAULT_MAX_PARALLEL
    if (!isValidMaxParallel(maxParallel)) return Effect.die(new Cause.IllegalArgumentException(MAX_PARALLEL_MESSAGE))
    const items = readCalls(calls)
    const n = items.length
    if (n === 0) return Effect.succeed(emptyResult)
    const batchId = options?.batchId ?? items[0].callId
    const agent = options?.agent
    const onCommit = options?.onCommit
    const cap = Math.min(maxParallel, n)
    return Effect.flatMap(
      Effect.context<ToolRuntime | ToolRegistry | ToolCallLog.ToolCallLog>(),
      (context) =>
        Effect.uninterruptibleMask((restore) => {
          const controller = new AbortController()
          setMaxListeners(0, controller.signal) // every in-flight call of the batch listens to it
          const unlink = linkSignal(options?.signal, controller)
          return Effect.gen(function*() {
            const semaphore = yield* Effect.makeSemaphore(cap)
            const batch = new Batch(
              items,
              batchId,
              agent,
              cap,
              controller.signal,
              onCommit,
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
