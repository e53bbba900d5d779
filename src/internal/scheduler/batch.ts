/**
 * One model message's tool calls (spec §16 with D-14/D-16): a closed lane whose entries are the
 * calls, its `tool/call` and `tool/result` records, the commit events, the calls that never
 * started (SCHED-9) and the batch's outcome.
 *
 * @internal
 */
import { setMaxListeners } from "node:events"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { UserMessage } from "../../Content.js"
import type { AgentId, ExecuteInput } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { ExecutionMode } from "../../Policy.js"
import type { BatchOptions, BatchResult, CommitEvent, CommittedResult, ModelToolCall } from "../../Scheduler.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import * as ToolResult from "../../ToolResult.js"
import { ToolRuntime } from "../../ToolRuntime.js"
import type * as ToolRuntimeNs from "../../ToolRuntime.js"
import { ToolTelemetry } from "../../ToolTelemetry.js"
import { parseArguments } from "../schema/arguments.js"
import { queuedAt, stagedOf } from "../pipeline/pipeline.js"
import { driveLane } from "./driver.js"
import { type Call, readCalls, readOptions } from "./input.js"
import { appendOrFail, type Begun, Lane, type Probe } from "./lane.js"
import { callCommit } from "./onCommit.js"

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

const emptyResult: BatchResult = Object.freeze({
  results: Object.freeze([]),
  contexts: Object.freeze([]),
  concluded: false,
  aborted: false
})

const INTERRUPTED_REASON = "the tool-call batch was interrupted"
const FAILED_REASON = "the tool-call batch failed"

const parallel: Effect.Effect<ExecutionMode> = Effect.succeed("parallel")

/** @internal */
export const synthetic = (): ToolResult.ToolResult => Json.deepFreeze(ToolResult.abortedBeforeDispatch())

/** One model message's calls: a closed lane. @internal */
export class Batch extends Lane {
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
    this.keep(index, result)
    return notify(this, { callId: this.calls[index].callId, index, result, synthetic })
  }

  /** A committed result into the batch's outcome: its place, its contexts, its conclusion. */
  keep(index: number, result: ToolResult.ToolResult): void {
    this.results[index] = { callId: this.calls[index].callId, index, result }
    const contexts = result.additionalContexts
    if (contexts !== undefined) for (const context of contexts) this.contexts.push(context)
    if (!result.isError && result.concludesTurn === true) this.concluded = true
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

/** The commit event to the stream's tap, then to the caller's `onCommit`. @internal */
export const notify = (b: Batch, event: CommitEvent): Effect.Effect<void> => {
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

/** @internal */
export const idsOf = (b: Batch, from: number, to: number): Array<string> => {
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
  if (failure._tag === "Suspend") return Effect.dieMessage("a batch lane cannot suspend")
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
