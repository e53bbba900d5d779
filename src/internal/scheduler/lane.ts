/**
 * The ordered lane (SCHED-3…5, PTC-9) and the steps of its driver that touch its state: absorbing
 * settlements, blocking until one arrives, the durable appends and the commit of the longest ready
 * prefix. A batch (`batch.ts`) and a `run_code` program (`codeMode/codeRun.ts`) are lanes;
 * `driver.ts` drives one.
 *
 * @internal
 */
import { types } from "node:util"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import type * as Runtime from "effect/Runtime"
import type * as Scheduler from "effect/Scheduler"
import type { ExecuteInput } from "../../Execution.js"
import type { ExecutionMode } from "../../Policy.js"
import type * as ToolCallLog from "../../ToolCallLog.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import type * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntimeNs from "../../ToolRuntime.js"
import { flushDispatches } from "./dispatches.js"

/**
 * Test probe: told, right before the driver blocks, which calls are in flight.
 *
 * @internal
 */
export interface Probe {
  readonly onWait: (inFlight: ReadonlyArray<number>) => Effect.Effect<void>
}

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

/**
 * Why a lane stopped starting entries (SCHED-10): the log failed, a staged step died, or a durable
 * batch waits for an answer it does not have (`Suspend`: entries before `index` still commit, the
 * rest end with the run and resume from the journal).
 *
 * @internal
 */
export type Failure =
  | { readonly _tag: "Log"; readonly error: ToolCallLog.ToolCallLogError }
  | { readonly _tag: "Defect"; readonly cause: Cause.Cause<never> }
  | { readonly _tag: "Suspend"; readonly index: number }

/**
 * Rows a lane writes together (group commit, D-24): while the lane holds dispatches or results for
 * the next write, the driver writes them before it blocks; held dispatches start once their intent
 * is stored.
 *
 * @internal
 */
export interface GroupCommit {
  /** Takes entry i's dispatch until the next write. */
  readonly hold: (index: number, handle: ToolRuntimeNs.Execution) => void
  /** Something waits for the next write. */
  readonly pending: () => boolean
  /** Writes what waits, then starts the held dispatches; a failure becomes the lane's. */
  readonly write: Effect.Effect<void>
}

/** How `begin` left an entry: go on to prepare, its slot already filled, or the lane failed. @internal */
export type Begun = "prepare" | "filled" | "failed"

/** @internal */
export const malformedOutcome = (step: string): Cause.Cause<never> =>
  Cause.die(new TypeError(`the staged runtime's ${step} returned a malformed outcome`))

const isObject = (value: unknown): value is object => typeof value === "object" && value !== null

/** A staged outcome, each field read once; `undefined` when it is not one. @internal */
export const readOutcome = (
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
  /** A durable lane's group commit; `undefined` for a lane whose records are written one by one. */
  groupCommit: GroupCommit | undefined = undefined

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

  /** Prepare (creation, pre-execute, approval, guards) for entry i. */
  prepareEntry(index: number): Effect.Effect<ToolRuntimeNs.Prepared> {
    return this.runtime.prepare(this.input(index))
  }

  /** Whether entry `index` may still commit after `failure` (a batch stops committing after any failure). */
  commitsAfter(_failure: Failure, _index: number): boolean {
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

/** Runs a driver step; any defect it dies with is recorded as the lane's failure (SCHED-10). @internal */
export const guarded = (l: Lane, effect: Effect.Effect<void>): Effect.Effect<void> =>
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
    const group = l.groupCommit
    if (group !== undefined && group.pending()) return Effect.flatMap(group.write, () => blockUnless(l, ready))
    return l.probe === undefined ? block : Effect.zipRight(l.probe.onWait([...l.running]), block)
  })
}

/**
 * Blocks the driver until at least one dispatch has settled, then absorbs every settlement.
 *
 * @internal
 */
export const waitSettlement = (l: Lane): Effect.Effect<void> =>
  Effect.suspend(function loop(): Effect.Effect<void> {
    if (l.settled.length > 0) {
      absorbAll(l)
      return Effect.void
    }
    return Effect.flatMap(blockUnless(l, () => l.settled.length > 0), loop)
  })

/** An open lane with nothing to start: waits for a new entry, a settlement or the end. @internal */
export const waitWork = (l: Lane): Effect.Effect<void> =>
  blockUnless(l, () => l.settled.length > 0 || l.next < l.size() || l.stopped())

/** @internal */
export const stagedFailure = (l: Lane) => (cause: Cause.Cause<never>): Effect.Effect<undefined> =>
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
  (l.failure === undefined || l.commitsAfter(l.failure, l.cursor)) && l.cursor < l.next &&
  l.ready[l.cursor] !== undefined

/** Commits the longest ready prefix (after a failure only where the lane allows it). */
const commitReady = (l: Lane): Effect.Effect<void> =>
  Effect.suspend(function loop(): Effect.Effect<void> {
    return committable(l) ? Effect.flatMap(commit(l, l.cursor), loop) : Effect.void
  })

/** Absorbs every settlement, then commits the longest ready prefix. @internal */
export const pump = (l: Lane): Effect.Effect<void> =>
  Effect.suspend(() => {
    absorbAll(l)
    return committable(l) ? commitReady(l) : Effect.void
  })
