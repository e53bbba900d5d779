/**
 * The ordered concurrent scheduler (spec §16): one driver fiber owns the ordered lane
 * (classification, `tool/call`, prepare, finalize/finish, `tool/result`, commit) in model order;
 * only `dispatch` overlaps, on fibers owned by the lane, bounded by the driver's own count. The same lane
 * drives a `run_code` program's sub-calls (PTC-9), whose entries arrive while it runs.
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
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type * as Scheduler from "effect/Scheduler"
import type * as Scope from "effect/Scope"
import type { UserMessage } from "../../Content.js"
import type { AgentId, ExecuteInput } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { ExecutionMode } from "../../Policy.js"
import type { BatchOptions, BatchResult, CommitEvent, CommittedResult, ModelToolCall } from "../../Scheduler.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import { detailOf, detailOfCause } from "../../ToolError.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import * as ToolResult from "../../ToolResult.js"
import { ToolRuntime } from "../../ToolRuntime.js"
import { ToolTelemetry } from "../../ToolTelemetry.js"
import { parseArguments } from "../schema/arguments.js"
import { interruptible } from "../base/fibers.js"
import { queuedAt, stagedOf, startedDispatch } from "../pipeline/pipeline.js"
import { isAbortSignal } from "../base/signals.js"
import type * as ToolRuntimeNs from "../../ToolRuntime.js"

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
// The lane: one ordered driver for a closed batch or an open submission queue
// ---------------------------------------------------------------------------------------------

/** A filled slot: a result waiting for its commit, in entry order. @internal */
export interface Ready {
  /** `undefined`: a result the lane made itself (a malformed call), committed without the runtime. */
  readonly handle: ToolRuntimeNs.Execution | undefined
  readonly final: boolean
  readonly result: ToolResult.ToolResult
}

interface Settlement {
  readonly index: number
  readonly exit: Exit.Exit<ToolRuntimeNs.Dispatched>
}

/** Why a lane stopped starting entries (SCHED-10): the log failed, or a staged step died. @internal */
export type Failure =
  | { readonly _tag: "Log"; readonly error: ToolCallLog.ToolCallLogError }
  | { readonly _tag: "Defect"; readonly cause: Cause.Cause<never> }

/** How `begin` left an entry: go on to prepare, its slot already filled, or the lane failed. @internal */
export type Begun = "prepare" | "filled" | "failed"

const exclusive: Effect.Effect<ExecutionMode> = Effect.succeed("exclusive")
const parallel: Effect.Effect<ExecutionMode> = Effect.succeed("parallel")

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
 * The ordered lane (SCHED-3…5, PTC-9): entries start strictly in order, each re-classified
 * against the live registry right before it starts; parallel-safe entries form a rolling pool
 * of at most `maxParallel` dispatches; an exclusive entry starts only when everything before it
 * committed and bars later starts until its own commit finished; results commit strictly in
 * entry order. Only the driver fiber touches the state (its pool count included); a dispatch
 * only pushes its settlement to `settled` and wakes the driver.
 *
 * A batch (a model message) is closed: every entry is known before it runs. A `run_code` program
 * is open: entries arrive (`wakeUp`) while the lane runs, and it idles until the next one, a
 * settlement, or the end (its signal aborting).
 *
 * @internal
 */
export abstract class Lane {
  readonly ready: Array<Ready | undefined> = []
  readonly running = new Set<number>()
  readonly handles = new Map<number, ToolRuntimeNs.Execution>()
  readonly signal: AbortSignal
  /** The next entry to start. */
  next = 0
  /** The next entry to commit. */
  cursor = 0
  inFlight = 0
  failure: Failure | undefined = undefined
  fibers: FiberSet.FiberSet<ToolRuntimeNs.Dispatched> | undefined = undefined
  /** The runtime dispatches start on: the driver's context and refs, interruptible. */
  dispatcher: Runtime.Runtime<never> | undefined = undefined
  /** The driver's clock, for dispatches started synchronously. */
  clock: unknown = undefined
  driverId: FiberId.FiberId = FiberId.none
  scheduler: Scheduler.Scheduler | undefined = undefined
  priority = 0
  /** Dispatches waiting for the scheduled start task (`flushing`: it is scheduled). */
  queued: Array<readonly [number, ToolRuntimeNs.Execution]> = []
  flushing = false
  readonly flush = (): void => flushDispatches(this)
  /** Settlements not yet absorbed by the driver, in settlement order. */
  settled: Array<Settlement> = []
  /** The driver's wake-up while it waits. */
  wake: ((resume: Effect.Effect<void>) => void) | undefined = undefined

  constructor(
    readonly maxParallel: number,
    readonly controller: AbortController,
    readonly runtime: ToolRuntimeNs.Service,
    readonly registry: RegistryService,
    readonly probe: Probe | undefined
  ) {
    this.signal = controller.signal
  }

  /** Entries known so far. */
  abstract size(): number
  /** No entry will be added any more. */
  abstract closed(): boolean
  /** SCHED-2 for one entry; total (any doubt is `exclusive`). */
  abstract classify(index: number): Effect.Effect<ExecutionMode>
  /** What happens before prepare (a durable start record); may fill the slot itself. */
  abstract begin(index: number): Effect.Effect<Begun>
  abstract input(index: number): ExecuteInput
  /** The durable record of a finished entry; `false` when it could not be written (the lane failed). */
  abstract record(index: number, result: ToolResult.ToolResult): Effect.Effect<boolean>
  /** After the commit (cursor advanced): hand the result on. */
  abstract committed(index: number, result: ToolResult.ToolResult, synthetic: boolean): Effect.Effect<void>
  /** After the drain: entries that never started. */
  abstract finish(): Effect.Effect<void>
  /** The abort reason when the driver dies with dispatches in flight. */
  abstract deathReason(): unknown

  /**
   * Whether an exclusive entry's dispatch runs on the driver itself instead of a pool fiber: an
   * exclusive entry runs alone anyway, so only a lane whose driver has nothing else to do while
   * it runs (no caller to answer, no interruption to observe) may say so.
   */
  readonly inlineExclusive: boolean = false

  /** Whether commits go on after `failure` (a batch stops committing after any failure). */
  commitsAfter(_failure: Failure): boolean {
    return false
  }

  fail(failure: Failure): void {
    if (this.failure === undefined) this.failure = failure
  }

  /** A failure was recorded; settlements that arrived meanwhile are absorbed first. */
  failed(): boolean {
    absorbAll(this)
    return this.failure !== undefined
  }

  /** No new entry may start: a failure was recorded or the lane's signal aborted (SCHED-9/10). */
  stopped(): boolean {
    return this.failed() || this.signal.aborted
  }

  /** Wakes the driver if it waits (a settlement, a new entry, the end). */
  wakeUp(): void {
    const wake = this.wake
    if (wake === undefined) return
    this.wake = undefined
    wake(Effect.void)
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

const absorbAll = (l: Lane): void => {
  if (l.settled.length === 0) return
  const settled = l.settled
  l.settled = []
  for (const settlement of settled) l.absorb(settlement)
}

/** Runs a driver step; any defect it dies with is recorded as the lane's failure (SCHED-10). */
const guarded = (l: Lane, effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.catchAllCause(effect, (cause) => Effect.sync(() => l.fail({ _tag: "Defect", cause })))

/**
 * Blocks the driver unless `ready()` already holds; the check and the installation of the
 * wake-up are one synchronous step, so no wake-up can be missed.
 */
const blockUnless = (l: Lane, ready: () => boolean): Effect.Effect<void> => {
  const block = Effect.async<void>((resume) => {
    if (ready()) return resume(Effect.void)
    l.wake = resume
    return Effect.sync(() => {
      if (l.wake === resume) l.wake = undefined
    })
  })
  return Effect.suspend(() => {
    if (ready()) return Effect.void
    return l.probe === undefined ? block : Effect.zipRight(l.probe.onWait([...l.running]), block)
  })
}

/** Blocks the driver until at least one dispatch has settled, then absorbs every settlement. */
const waitSettlement = (l: Lane): Effect.Effect<void> =>
  Effect.suspend(function loop(): Effect.Effect<void> {
    if (l.settled.length > 0) {
      absorbAll(l)
      return Effect.void
    }
    return Effect.flatMap(blockUnless(l, () => l.settled.length > 0), loop)
  })

/** An open lane with nothing to start: waits for a new entry, a settlement or the end. */
const waitWork = (l: Lane): Effect.Effect<void> =>
  blockUnless(l, () => l.settled.length > 0 || l.next < l.size() || l.stopped())

const stagedFailure = (l: Lane) => (cause: Cause.Cause<never>): Effect.Effect<undefined> =>
  Effect.sync(() => {
    l.fail({ _tag: "Defect", cause })
    return undefined
  })

/**
 * Appends a durable record; a failure (or defect) of the log is recorded as the lane's failure.
 *
 * @internal
 */
export const appendOrFail = (
  l: Lane,
  log: ToolCallLog.Service,
  record: ToolCallLog.LogRecord
): Effect.Effect<boolean> =>
  Effect.suspend(() => log.append(record)).pipe(
    Effect.as(true),
    Effect.catchAllCause((cause) =>
      Effect.sync(() => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) l.fail({ _tag: "Log", error: failure.value })
        else l.fail({ _tag: "Defect", cause: cause as Cause.Cause<never> })
        return false
      })
    )
  )

/** commit(i): finalize / finish, the durable record, then the lane's own hand-over. */
const commit = (l: Lane, index: number): Effect.Effect<void> => {
  const ready = l.ready[index]!
  l.ready[index] = undefined
  const handle = ready.handle
  if (handle === undefined) return recordAndHand(l, index, ready.result, true)
  return Effect.flatMap(
    Effect.suspend(() =>
      ready.final ? l.runtime.finish(handle, ready.result) : l.runtime.finalize(handle, ready.result)
    ).pipe(Effect.catchAllCause(stagedFailure(l))),
    (result) => result === undefined ? Effect.void : recordAndHand(l, index, result, false)
  )
}

const recordAndHand = (
  l: Lane,
  index: number,
  result: ToolResult.ToolResult,
  synthetic: boolean
): Effect.Effect<void> =>
  Effect.flatMap(l.record(index, result), (ok) => {
    if (!ok) return Effect.void
    l.cursor = index + 1
    return l.committed(index, result, synthetic)
  })

const committable = (l: Lane): boolean =>
  (l.failure === undefined || l.commitsAfter(l.failure)) && l.cursor < l.next && l.ready[l.cursor] !== undefined

/** Commits the longest ready prefix (after a failure only where the lane allows it). */
const commitReady = (l: Lane): Effect.Effect<void> =>
  Effect.suspend(function loop(): Effect.Effect<void> {
    return committable(l) ? Effect.flatMap(commit(l, l.cursor), loop) : Effect.void
  })

/** Absorbs every settlement, then commits the longest ready prefix. */
const pump = (l: Lane): Effect.Effect<void> =>
  Effect.suspend(() => {
    absorbAll(l)
    return committable(l) ? commitReady(l) : Effect.void
  })

/**
 * Starts entry i's dispatch on its own fiber, synchronously. A dispatch that completes without
 * suspending settles at once (no set membership, no observer); one that suspends joins the
 * lane's fiber set (interrupted and awaited should the driver die) and settles when it ends,
 * waking the driver.
 */
const dispatchNow = (l: Lane, index: number, handle: ToolRuntimeNs.Execution): void => {
  const start = startedDispatch.get(l.runtime)
  let effect: Effect.Effect<ToolRuntimeNs.Dispatched> | undefined = undefined
  if (start !== undefined) {
    try {
      const started = start(handle, l.clock)
      if (!Effect.isEffect(started)) {
        l.settled.push({ index, exit: Exit.succeed(started) })
        l.wakeUp()
        return
      }
      effect = started
    } catch (thrown) {
      effect = Effect.die(thrown)
    }
  }
  const fiber = Runtime.runFork(l.dispatcher!, effect ?? Effect.suspend(() => l.runtime.dispatch(handle)))
  const exit = fiber.unsafePoll()
  if (exit !== null) {
    l.settled.push({ index, exit })
    l.wakeUp()
    return
  }
  FiberSet.unsafeAdd(l.fibers!, fiber, { interruptAs: l.driverId })
  fiber.addObserver((exit) => {
    l.settled.push({ index, exit })
    l.wakeUp()
  })
}

/** Starts every queued dispatch, in start order. */
const flushDispatches = (l: Lane): void => {
  l.flushing = false
  const queued = l.queued
  if (queued.length === 0) return
  l.queued = []
  for (const [index, handle] of queued) dispatchNow(l, index, handle)
}

/**
 * Queues entry i's dispatch. Like a fork, the queued dispatches start on the driver's scheduler
 * once the driver yields, but all of them in one scheduled task.
 */
const dispatchLater = (l: Lane, index: number, handle: ToolRuntimeNs.Execution): void => {
  l.queued.push([index, handle])
  if (l.flushing) return
  l.flushing = true
  l.scheduler!.scheduleTask(l.flush, l.priority)
}

const STARTED: Effect.Effect<boolean> = Effect.succeed(true)
const NOT_STARTED: Effect.Effect<boolean> = Effect.succeed(false)

/**
 * start(i), with a pool place free: `begin` (a durable start record), prepare, then dispatch
 * into the pool or fill the slot. `false` (nothing done) when the lane had stopped before i
 * could start. A failure seen at any later point (after the record, after prepare) starts
 * nothing more: no prepare, no dispatch (SCHED-10).
 */
const start = (l: Lane, index: number, exclusive = false): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    if (l.stopped()) return NOT_STARTED
    l.next = index + 1
    return Effect.flatMap(l.begin(index), (begun) => {
      if (begun === "failed" || l.failed()) return STARTED
      if (begun === "filled") return Effect.as(pump(l), true)
      return Effect.flatMap(
        Effect.suspend(() => l.runtime.prepare(l.input(index))).pipe(Effect.catchAllCause(stagedFailure(l))),
        (prepared) => afterPrepare(l, index, exclusive, prepared)
      )
    })
  })

const afterPrepare = (
  l: Lane,
  index: number,
  exclusive: boolean,
  prepared: ToolRuntimeNs.Prepared | undefined
): Effect.Effect<boolean> => {
  const outcome = prepared === undefined ? undefined : readOutcome(prepared)
  if (prepared !== undefined && outcome === undefined) l.fail({ _tag: "Defect", cause: malformedOutcome("prepare") })
  if (outcome === undefined || l.failed()) return STARTED
  const handle = outcome.handle as ToolRuntimeNs.Execution
  if (outcome.tag === "Dispatch" && exclusive && l.inlineExclusive) {
    return Effect.flatMap(Effect.exit(Effect.suspend(() => l.runtime.dispatch(handle))), (exit) => {
      l.inFlight++
      l.handles.set(index, handle)
      l.absorb({ index, exit })
      return Effect.as(pump(l), true)
    })
  }
  if (outcome.tag === "Dispatch") {
    l.inFlight++
    l.running.add(index)
    l.handles.set(index, handle)
    dispatchLater(l, index, handle)
  } else {
    l.ready[index] = { final: outcome.tag === "FinalResult", handle, result: outcome.result as ToolResult.ToolResult }
  }
  return Effect.as(pump(l), true)
}

/** Waits (and commits) while the pool is full: the driver counts its places itself. */
const acquire = (l: Lane): Effect.Effect<void> =>
  Effect.flatMap(pump(l), function loop(): Effect.Effect<void> {
    if (l.inFlight < l.maxParallel) return Effect.void
    return Effect.flatMap(waitSettlement(l), () => Effect.flatMap(pump(l), loop))
  })

/** Group barrier: every started entry committed (or, after a failure, nothing left to commit). */
const awaitCommitted = (l: Lane): Effect.Effect<void> =>
  Effect.flatMap(pump(l), function loop(): Effect.Effect<void> {
    if ((l.failure === undefined || l.commitsAfter(l.failure)) && l.cursor < l.next && l.inFlight > 0) {
      return Effect.flatMap(waitSettlement(l), () => Effect.flatMap(pump(l), loop))
    }
    return Effect.void
  })

/**
 * Drain: await every in-flight dispatch, committing in order unless the lane failed. A defect of
 * a commit step is recorded and the wait goes on: no dispatch is left behind.
 */
const drain = (l: Lane): Effect.Effect<void> =>
  Effect.flatMap(guarded(l, pump(l)), function loop(): Effect.Effect<void> {
    if (l.inFlight === 0) return Effect.void
    return Effect.flatMap(waitSettlement(l), () => Effect.flatMap(guarded(l, pump(l)), loop))
  })

const classifyAt = (l: Lane, index: number): Effect.Effect<ExecutionMode> =>
  Effect.suspend(() => l.classify(index)).pipe(Effect.catchAllCause(() => exclusive))

/**
 * Groups (SCHED-3), rolling pool (SCHED-4), ordered lane (SCHED-5, PTC-9). Every start path
 * checks `stopped()` (which absorbs pending settlements first) right before the entry starts.
 * An open lane with nothing to start waits for the next entry, inside the current group.
 */
const schedule = (l: Lane): Effect.Effect<void> => {
  const more = () => l.next < l.size() || !l.closed()
  const group = (): Effect.Effect<void> => {
    if (!more()) return Effect.void
    return Effect.flatMap(awaitCommitted(l), () => {
      if (l.stopped()) return Effect.void
      if (l.next >= l.size()) return Effect.flatMap(waitWork(l), group)
      return Effect.flatMap(classifyAt(l, l.next), (mode) =>
        Effect.flatMap(start(l, l.next, mode !== "parallel"), (started) => {
          if (!started) return Effect.void
          return mode !== "parallel" ? group() : pool()
        }))
    })
  }
  /** The rest of a parallel group; back to `group` at the first entry that is not parallel. */
  const pool = (): Effect.Effect<void> => {
    if (!more()) return group()
    if (l.next >= l.size()) {
      return Effect.flatMap(waitWork(l), () => Effect.flatMap(pump(l), () => l.stopped() ? Effect.void : pool()))
    }
    return Effect.flatMap(acquire(l), () => {
      if (l.stopped()) return Effect.void
      return Effect.flatMap(classifyAt(l, l.next), (mode) => {
        if (mode !== "parallel") return group()
        return Effect.flatMap(start(l, l.next), (started) => started ? pool() : Effect.void)
      })
    })
  }
  return Effect.suspend(group)
}

/**
 * The driver of a lane: schedule, drain, then the lane's `finish` (SCHED-9/10, PTC-14/15). Needs
 * a scope (the dispatch fibers' set). Whatever happens, no dispatch is left behind.
 *
 * @internal
 */
export const driveLane = Effect.fnUntraced(function*(l: Lane) {
  const fibers = yield* FiberSet.make<ToolRuntimeNs.Dispatched>()
  l.fibers = fibers
  yield* Effect.withFiberRuntime<void>((driver, status) => {
    l.driverId = driver.id()
    l.scheduler = driver.currentScheduler
    l.priority = driver.getFiberRef(FiberRef.currentSchedulingPriority)
    l.clock = driver.currentDefaultServices.unsafeMap.get(Clock.Clock.key)
    l.dispatcher = Runtime.make({
      context: driver.currentContext,
      fiberRefs: driver.getFiberRefs(),
      runtimeFlags: interruptible(status.runtimeFlags)
    })
    return Effect.void
  })
  // Runs before the FiberSet's own finalizer: should the driver ever die with dispatches still in
  // flight, they see the lane's signal abort before they are interrupted and awaited.
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      if (l.inFlight > 0 || l.settled.length > 0) l.controller.abort(l.deathReason())
      flushDispatches(l)
    })
  )
  yield* guarded(l, schedule(l))
  yield* drain(l)
  yield* guarded(l, l.finish())
})

// ---------------------------------------------------------------------------------------------
// The batch (spec §16)
// ---------------------------------------------------------------------------------------------

const emptyResult: BatchResult = Object.freeze({
  results: Object.freeze([]),
  contexts: Object.freeze([]),
  concluded: false,
  aborted: false
})

const INTERRUPTED_REASON = "the tool-call batch was interrupted"
const FAILED_REASON = "the tool-call batch failed"

const synthetic = (): ToolResult.ToolResult => Json.deepFreeze(ToolResult.abortedBeforeDispatch())

/** One model message's calls: a closed lane. */
class Batch extends Lane {
  readonly n: number
  readonly args: Array<unknown>
  readonly parsed: Array<boolean>
  readonly results: Array<CommittedResult>
  readonly contexts: Array<UserMessage> = []
  concluded = false
  /** When the batch's calls arrived, for their `queue` stage (only with telemetry). */
  queuedSince: bigint | undefined = undefined

  constructor(
    readonly calls: ReadonlyArray<Call>,
    readonly batchId: string,
    readonly agent: AgentId | undefined,
    maxParallel: number,
    controller: AbortController,
    readonly onCommit: ((event: CommitEvent) => unknown) | undefined,
    readonly tap: ((event: CommitEvent) => Effect.Effect<void>) | undefined,
    runtime: ToolRuntimeNs.Service,
    registry: RegistryService,
    readonly log: ToolCallLog.Service,
    probe: Probe | undefined
  ) {
    super(maxParallel, controller, runtime, registry, probe)
    this.n = calls.length
    this.args = new Array(this.n)
    this.parsed = new Array(this.n).fill(false)
    this.results = new Array(this.n)
  }

  size(): number {
    return this.n
  }

  closed(): boolean {
    return true
  }

  /** SCHED-2, with any doubt (a failing or throwing registry) `exclusive`; a malformed call runs nothing. */
  classify(index: number): Effect.Effect<ExecutionMode> {
    const call = this.calls[index]
    if (call.malformed !== undefined) return parallel
    return this.registry.executionMode({ name: call.name, arguments: this.argumentsOf(index), agent: this.agent })
  }

  begin(index: number): Effect.Effect<Begun> {
    return Effect.map(appendOrFail(this, this.log, this.callRecord(index)), (ok): Begun => {
      if (!ok) return "failed"
      const malformed = this.calls[index].malformed
      if (malformed === undefined) return "prepare"
      if (this.failed()) return "failed"
      this.ready[index] = { handle: undefined, final: true, result: malformed }
      return "filled"
    })
  }

  record(index: number, result: ToolResult.ToolResult): Effect.Effect<boolean> {
    return appendOrFail(this, this.log, ToolCallLog.resultRecord(this.batchId, index, this.calls[index].callId, result))
  }

  committed(index: number, result: ToolResult.ToolResult, synthetic: boolean): Effect.Effect<void> {
    const callId = this.calls[index].callId
    this.results[index] = { callId, index, result }
    const contexts = result.additionalContexts
    if (contexts !== undefined) for (const context of contexts) this.contexts.push(context)
    if (!result.isError && result.concludesTurn === true) this.concluded = true
    return notify(this, { callId, index, result, synthetic })
  }

  finish(): Effect.Effect<void> {
    return commitSkipped(this)
  }

  deathReason(): unknown {
    return new DOMException(FAILED_REASON, "AbortError")
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
    const input = {
      callId: call.callId,
      name: call.name,
      arguments: this.argumentsOf(index),
      agent: this.agent,
      signal: this.signal
    }
    if (this.queuedSince !== undefined) queuedAt.set(input, this.queuedSince)
    return input
  }
}

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

/** SCHED-9: a `tool/call` + synthetic ABORTED_BEFORE_DISPATCH `tool/result` per never-started call. */
const commitSkipped = Effect.fnUntraced(function*(b: Batch) {
  while (b.failure === undefined && b.next < b.n) {
    const index = b.next
    b.next = index + 1
    if (!(yield* appendOrFail(b, b.log, b.callRecord(index)))) return
    const call = b.calls[index]
    const result = synthetic()
    if (!(yield* b.record(index, result))) return
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

/** The driver of a batch: the lane, then the batch outcome. */
const drive = (b: Batch): Effect.Effect<BatchResult, LogFailure, Scope.Scope> =>
  Effect.zipRight(driveLane(b), Effect.suspend(() => outcome(b)))

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
      (context) => {
        const telemetry = Context.getOption(context as Context.Context<unknown>, ToolTelemetry)
        const run = (queuedSince: bigint | undefined) =>
          Effect.uninterruptibleMask((restore) => {
          const controller = new AbortController()
          setMaxListeners(0, controller.signal) // every in-flight call of the batch listens to it
          const unlink = linkSignal(settings.signal, controller)
          return Effect.gen(function*() {
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
              probe
            )
            batch.queuedSince = queuedSince
            const driver = yield* Effect.fork(Effect.scoped(drive(batch)))
            const awaited = yield* Effect.exit(restore(Fiber.await(driver)))
            if (Exit.isSuccess(awaited)) return yield* Fiber.join(driver)
            controller.abort(new DOMException(INTERRUPTED_REASON, "AbortError"))
            yield* Fiber.await(driver)
            return yield* Effect.failCause(awaited.cause)
          }).pipe(Effect.ensuring(Effect.sync(unlink)))
        })
        if (Option.isNone(telemetry)) return run(undefined)
        const info = settings.agent === undefined ? { batchId, size: n } : { batchId, size: n, agent: settings.agent }
        return telemetry.value.batch(info, Effect.flatMap(Clock.currentTimeNanos, run))
      }
    )
  })
