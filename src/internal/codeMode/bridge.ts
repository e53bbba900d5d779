/**
 * The `run_code` bridge (PTC-5…16): the body of the Code Mode transport. It fixes the binding set
 * from the calling agent's view, runs the program in the mounted code runtime, and runs every
 * binding call as a sub-call through the whole pipeline on the run's own ordered lane (the batch
 * scheduler's lane, open: sub-calls arrive while the program runs). No sub-call outlives the
 * body: when the program ends (or the outer call is cancelled) queued sub-calls are abandoned,
 * in-flight ones are drained and committed, and every durable append is awaited.
 *
 * @internal
 */
import { setMaxListeners } from "node:events"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import { BindingFailure, type Binding, CodeRuntime, type CodeRunResult } from "../../CodeRuntime.js"
import type * as CodeRuntimeNs from "../../CodeRuntime.js"
import type { ContextSource } from "../../Content.js"
import type { AgentId, ExecuteInput, RunContext } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import type { ExecutionMode } from "../../Policy.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import { CodeRunFailedError, detailOf } from "../../ToolError.js"
import { RUN_CODE_NAME } from "../../ToolRegistry.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import type * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import { formatReason, INVALID_DESCRIPTION_MESSAGE, requireRuntime } from "./modes.js"
import { nestedOf } from "../pipeline/pipeline.js"
import { driveLane } from "../scheduler/driver.js"
import { appendOrFail, type Begun, type Failure, Lane } from "../scheduler/lane.js"

/** The `run_code` arguments after validation (PTC-1). @internal */
export interface RunCodeArgs {
  readonly description: string
  readonly code: string
}

/** The canonical `run_code` value (PTC-2). @internal */
export interface RunCodeOutput {
  readonly logs: ReadonlyArray<string>
  readonly result?: JsonValue
}

/** The bridge's configuration (TYPES-11). @internal */
export interface BridgeOptions {
  readonly maxParallelSubCalls: number
}

/** PTC-6. @internal */
export const NAMESPACE_GLOBAL = "tools"
/** PTC-6. @internal */
export const ERROR_CLASS: CodeRuntimeNs.ErrorClass = Object.freeze({
  name: "ToolCallError",
  memberNameProperty: "toolName"
})

/** PTC-10: the source of the deferred message carrying an image-bearing sub-result. @internal */
export const IMAGE_SOURCE: ContextSource = Object.freeze({ kind: "plugin", plugin: "tools-code-mode" })

/** PTC-7: the run controller's reason once the program has ended. @internal */
export const SETTLED_REASON = "run_code settled"

const LOG_FAILED_REASON = "run_code could not record its sub-calls"
const FAILED_REASON = "the run_code lane failed"

/** @internal */
export const NOT_LOSSLESS_MESSAGE =
  "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"

const abortError = (message: string) => new DOMException(message, "AbortError")

const over = (reason: unknown, name: string, what: string): BindingFailure =>
  new BindingFailure({ message: `run_code run is over (${formatReason(reason)}); ${name} ${what}` })

/** The program's answer to one binding call: set once, awaited by the binding. */
class Answer {
  exit: Exit.Exit<unknown, BindingFailure> | undefined = undefined
  private waiters: Array<(exit: Exit.Exit<unknown, BindingFailure>) => void> = []
  readonly await: Effect.Effect<unknown, BindingFailure> = Effect.async((resume) => {
    if (this.exit !== undefined) return resume(this.exit)
    this.waiters.push(resume)
    return Effect.sync(() => {
      this.waiters = this.waiters.filter((waiter) => waiter !== resume)
    })
  })
  settle(exit: Exit.Exit<unknown, BindingFailure>): void {
    if (this.exit !== undefined) return
    this.exit = exit
    const waiters = this.waiters
    this.waiters = []
    for (const waiter of waiters) waiter(exit)
  }
}

/** One binding call: its identity, what it dispatches and logs, and the program's answer. */
interface Entry {
  readonly name: string
  readonly subCallId: string
  readonly input: ExecuteInput
  readonly logged: JsonValue
  readonly answer: Answer
}

/** The outer execution, as the bridge needs it. */
interface Outer {
  readonly callId: string
  readonly rootCallId: string
  readonly agent: AgentId | undefined
  readonly token: symbol
}

/**
 * PTC-10/13: the settle records of one run, appended off the lane by one fiber, in commit order.
 * Nothing is appended after the run's first failure.
 */
class Appender {
  private readonly queue: Array<ToolCallLog.LogRecord> = []
  private busy = false
  private closing = false
  private fiber: Fiber.RuntimeFiber<void> | undefined = undefined
  private wake: ((resume: Effect.Effect<void>) => void) | undefined = undefined
  private progress: ((resume: Effect.Effect<void>) => void) | undefined = undefined

  constructor(readonly run: CodeRun, readonly log: ToolCallLog.Service) {}

  private get pending(): number {
    return this.queue.length + (this.busy ? 1 : 0)
  }

  private readonly loop: Effect.Effect<void> = Effect.suspend(() => {
    if (this.run.failure !== undefined) this.queue.length = 0
    const record = this.queue.shift()
    if (record !== undefined) {
      this.busy = true
      return Effect.flatMap(appendOrFail(this.run, this.log, record), () => {
        this.busy = false
        const progress = this.progress
        this.progress = undefined
        progress?.(Effect.void)
        return this.loop
      })
    }
    if (this.closing) return Effect.void
    return Effect.flatMap(
      Effect.async<void>((resume) => {
        if (this.queue.length > 0 || this.closing) return resume(Effect.void)
        this.wake = resume
      }),
      () => this.loop
    )
  })

  push(record: ToolCallLog.LogRecord): void {
    if (this.run.failure !== undefined) return
    this.queue.push(record)
    const wake = this.wake
    this.wake = undefined
    wake?.(Effect.void)
  }

  /** While more appends than the cap are pending, the lane waits (PTC-10). */
  readonly backpressure: Effect.Effect<void> = Effect.suspend(() => {
    if (this.fiber === undefined && this.queue.length > 0) {
      return Effect.flatMap(Effect.forkDaemon(this.loop), (fiber) => {
        this.fiber = fiber
        return this.backpressure
      })
    }
    if (this.pending <= this.run.maxParallel) return Effect.void
    return Effect.flatMap(
      Effect.async<void>((resume) => {
        if (this.pending <= this.run.maxParallel) return resume(Effect.void)
        this.progress = resume
      }),
      () => this.backpressure
    )
  })

  /** Every pending append, awaited (PTC-14). */
  readonly close: Effect.Effect<void> = Effect.suspend(() => {
    this.closing = true
    const wake = this.wake
    this.wake = undefined
    wake?.(Effect.void)
    return this.fiber === undefined ? Effect.void : Effect.asVoid(Fiber.await(this.fiber))
  })
}

/**
 * One program's sub-calls: an open lane whose entries are binding calls in submission order
 * (PTC-8/9). Its signal is the run controller's.
 */
class CodeRun extends Lane {
  readonly entries: Array<Entry> = []
  readonly appender: Appender | undefined
  override readonly inlineExclusive = true

  constructor(
    maxParallel: number,
    controller: AbortController,
    runtime: ToolRuntime.Service,
    registry: RegistryService,
    readonly ctx: RunContext,
    readonly outer: Outer,
    readonly log: ToolCallLog.Service | undefined
  ) {
    super(maxParallel, controller, runtime, registry, undefined)
    this.appender = log === undefined ? undefined : new Appender(this, log)
  }

  size(): number {
    return this.entries.length
  }

  /** The run's entries stop coming once its controller aborted. */
  closed(): boolean {
    return this.signal.aborted
  }

  classify(index: number): Effect.Effect<ExecutionMode> {
    const input = this.entries[index].input
    return this.registry.executionMode({
      name: input.name,
      arguments: input.arguments,
      agent: input.agent,
      parent: input.parent
    })
  }

  /** PTC-13: the start record, before the sub-call's pre-execute (only with an outer agent). */
  begin(index: number): Effect.Effect<Begun> {
    const log = this.log
    if (log === undefined) return Effect.succeed("prepare")
    const entry = this.entries[index]
    return Effect.map(
      appendOrFail(this, log, {
        _tag: "tool/code-dispatch-start",
        rootCallId: this.outer.rootCallId,
        parentCallId: this.outer.callId,
        subCallId: entry.subCallId,
        name: entry.name,
        arguments: entry.logged
      }),
      (ok): Begun => ok ? "prepare" : "failed"
    )
  }

  input(index: number): ExecuteInput {
    return this.entries[index].input
  }

  record(): Effect.Effect<boolean> {
    return Effect.succeed(true)
  }

  /** PTC-10/11/13: ferry to the outer execution, answer the program, log the settlement. */
  committed(index: number, result: ToolResult.ToolResult): Effect.Effect<void> {
    return Effect.suspend(() => {
      const entry = this.entries[index]
      this.ferry(result)
      entry.answer.settle(this.answerOf(entry, result))
      const appender = this.appender
      if (appender === undefined) return Effect.void
      appender.push({
        _tag: "tool/code-dispatch",
        rootCallId: this.outer.rootCallId,
        parentCallId: this.outer.callId,
        subCallId: entry.subCallId,
        name: entry.name,
        arguments: entry.logged,
        isError: result.isError,
        content: result.content
      })
      return appender.backpressure
    })
  }

  /** PTC-15: queued calls that never started are abandoned; then every append is awaited (PTC-14). */
  finish(): Effect.Effect<void> {
    return Effect.suspend(() => {
      for (const entry of this.entries) {
        if (entry.answer.exit === undefined) {
          entry.answer.settle(Exit.fail(over(this.signal.reason, entry.name, "tool call abandoned")))
        }
      }
      return this.appender === undefined ? Effect.void : this.appender.close
    })
  }

  deathReason(): unknown {
    return abortError(FAILED_REASON)
  }

  /** A log failure stops new starts but every started sub-call still commits (one result each). */
  override commitsAfter(failure: Failure): boolean {
    return failure._tag === "Log"
  }

  /** Any failure ends the run: the program is stopped through the run controller. */
  override fail(failure: Failure): void {
    const first = this.failure === undefined
    super.fail(failure)
    if (first) this.controller.abort(abortError(failure._tag === "Log" ? LOG_FAILED_REASON : FAILED_REASON))
  }

  /** PTC-8: a binding call, from the program. */
  submit(name: string, raw: unknown): Effect.Effect<unknown, BindingFailure> {
    if (this.signal.aborted) return Effect.fail(over(this.signal.reason, name, "not dispatched"))
    const dispatched = Json.snapshotFrozen(raw)
    if (dispatched._tag === "NotLossless") return Effect.fail(new BindingFailure({ message: NOT_LOSSLESS_MESSAGE }))
    if (dispatched._tag === "Threw") {
      return Effect.fail(
        new BindingFailure({ message: `tool arguments must be lossless JSON: ${detailOf(dispatched.error).message}` })
      )
    }
    const logged = Json.snapshotFrozen(dispatched.value)
    if (logged._tag !== "Lossless") return Effect.fail(new BindingFailure({ message: NOT_LOSSLESS_MESSAGE }))
    const { agent, callId, rootCallId, token } = this.outer
    const subCallId = `${callId}:code:${this.entries.length + 1}`
    const input: ExecuteInput = agent === undefined
      ? { callId: subCallId, rootCallId, name, arguments: dispatched.value, parent: token, signal: this.signal }
      : { callId: subCallId, rootCallId, name, arguments: dispatched.value, agent, parent: token, signal: this.signal }
    const entry: Entry = { name, subCallId, input, logged: logged.value, answer: new Answer() }
    this.entries.push(entry)
    this.wakeUp()
    return entry.answer.await
  }

  private answerOf(entry: Entry, result: ToolResult.ToolResult): Exit.Exit<unknown, BindingFailure> {
    if (this.signal.aborted) return Exit.fail(over(this.signal.reason, entry.name, "result discarded"))
    return result.isError
      ? Exit.fail(new BindingFailure({ message: result.error.message }))
      : Exit.succeed(result.value)
  }

  /** PTC-10 (a)…(c), through the outer body's own `deferContext` / `concludeTurn` (CTX-5). */
  private ferry(result: ToolResult.ToolResult): void {
    try {
      if (!result.isError && result.content.some((block) => block.type === "image")) {
        this.ctx.deferContext({ content: result.content, source: IMAGE_SOURCE })
      }
      const contexts = result.additionalContexts
      if (contexts !== undefined) for (const context of contexts) this.ctx.deferContext(context)
      if (!result.isError && result.concludesTurn === true) this.ctx.concludeTurn()
    } catch (error) {
      this.fail({ _tag: "Defect", cause: Cause.die(error) })
    }
  }

}

/** PTC-6: one own property per visible tool but `run_code`, on a null-prototype map. */
const bindingsOf = (run: CodeRun, registry: RegistryService, agent: AgentId | undefined): CodeRuntimeNs.Namespace => {
  const functions: Record<string, Binding> = Object.create(null)
  for (const tool of registry.unsafeView(agent).tools) {
    const name = tool.definition.name
    if (name === RUN_CODE_NAME) continue
    Object.defineProperty(functions, name, {
      value: (args: unknown) => Effect.suspend(() => run.submit(name, args)),
      enumerable: true
    })
  }
  return Object.freeze({ global: NAMESPACE_GLOBAL, functions: Object.freeze(functions), errorClass: ERROR_CLASS })
}

type Read =
  | { readonly _tag: "Ok"; readonly logs: ReadonlyArray<string>; readonly hasValue: boolean; readonly value: unknown }
  | { readonly _tag: "Failed"; readonly kind: string; readonly message: string; readonly logs: ReadonlyArray<string> }
  | { readonly _tag: "Malformed" }

const MALFORMED_RESULT = "the code runtime returned a malformed result"

const readLogs = (logs: unknown): ReadonlyArray<string> | undefined => {
  if (!Array.isArray(logs)) return undefined
  const length = logs.length
  const out: Array<string> = []
  for (let i = 0; i < length; i++) {
    const line: unknown = logs[i]
    if (typeof line !== "string") return undefined
    out.push(line)
  }
  return out
}

/** The runtime's result, each field read once; anything unexpected is malformed. Total. */
const readResult = (raw: unknown): Read => {
  try {
    if (typeof raw !== "object" || raw === null) return { _tag: "Malformed" }
    const record = raw as CodeRunResult
    const rawLogs: unknown = record.logs
    const error: unknown = record.error
    const value: unknown = record.value
    const logs = readLogs(rawLogs)
    if (logs === undefined) return { _tag: "Malformed" }
    if (error === undefined) return { _tag: "Ok", logs, hasValue: value !== undefined, value }
    if (typeof error !== "object" || error === null) return { _tag: "Malformed" }
    const failure = error as { readonly kind?: unknown; readonly message?: unknown }
    const kind = failure.kind
    const message = failure.message
    if (typeof kind !== "string" || typeof message !== "string") return { _tag: "Malformed" }
    return { _tag: "Failed", kind, message, logs }
  } catch {
    return { _tag: "Malformed" }
  }
}

const plainError = (message: string): Effect.Effect<never, Error> => Effect.fail(new Error(message))

const runRequest = (
  runtime: CodeRuntimeNs.Service,
  request: CodeRuntimeNs.CodeRunRequest
): Effect.Effect<CodeRunResult, unknown> =>
  Effect.suspend(() => {
    try {
      const out: unknown = runtime.run(request)
      if (Effect.isEffect(out)) return out as Effect.Effect<CodeRunResult, unknown>
    } catch (error) {
      return Effect.die(error)
    }
    return Effect.die(new Error("the code runtime's run did not return an Effect"))
  })

/**
 * PTC-14: what the body ends with once the program and the lane have both ended.
 */
const conclude = (run: CodeRun, exit: Exit.Exit<CodeRunResult, unknown>): Effect.Effect<RunCodeOutput, unknown> => {
  const failure = run.failure
  if (failure !== undefined) {
    return failure._tag === "Log"
      ? plainError(`${LOG_FAILED_REASON}: ${failure.error.message}`)
      : Effect.failCause(failure.cause)
  }
  if (Exit.isFailure(exit)) {
    return Cause.isInterruptedOnly(exit.cause)
      ? plainError("the code runtime was interrupted")
      : Effect.failCause(exit.cause)
  }
  const read = readResult(exit.value)
  switch (read._tag) {
    case "Malformed":
      return plainError(MALFORMED_RESULT)
    case "Failed":
      return Effect.fail(new CodeRunFailedError({ kind: read.kind, detail: read.message, logs: read.logs }))
    case "Ok":
      return Effect.succeed(
        read.hasValue ? { logs: read.logs, result: read.value as JsonValue } : { logs: read.logs }
      )
  }
}

/** PTC-7: the run controller follows the outer signal; returns the listener's remover. */
const follow = (outer: AbortSignal, controller: AbortController): () => void => {
  if (outer.aborted) {
    controller.abort(outer.reason)
    return () => {}
  }
  const onAbort = () => controller.abort(outer.reason)
  outer.addEventListener("abort", onAbort, { once: true })
  return () => outer.removeEventListener("abort", onAbort)
}

/**
 * The `run_code` body (PTC-5…16). Runs uninterruptibly: the outer call's cancellation reaches it
 * through `ctx.signal` (the run controller aborts, the runtime stops the program, sub-calls are
 * drained), so the outcome is what the program's end produced (PTC-16) and nothing it started is
 * left running.
 *
 * @internal
 */
export const runProgram = (
  args: RunCodeArgs,
  ctx: RunContext,
  options: BridgeOptions
): Effect.Effect<RunCodeOutput, unknown> =>
  Effect.uninterruptible(Effect.gen(function*() {
    if (args.description.trim() === "") return yield* plainError(INVALID_DESCRIPTION_MESSAGE)
    const nested = nestedOf(ctx)
    if (nested === undefined) return yield* plainError("run_code runs only inside this library's ToolRuntime")
    const mounted = yield* Effect.serviceOption(CodeRuntime)
    const required = requireRuntime(nested.registry.unsafeView().mode, Option.getOrUndefined(mounted))
    if (!required.ok) return yield* Effect.fail(required.error)
    const runtime = Option.getOrThrow(mounted)
    const outer: Outer = { callId: ctx.callId, rootCallId: ctx.rootCallId, agent: ctx.agent, token: ctx.token }
    const log = outer.agent === undefined
      ? undefined
      : Option.getOrUndefined(yield* Effect.serviceOption(ToolCallLog.ToolCallLog))
    const controller = new AbortController()
    setMaxListeners(0, controller.signal)
    const run = new CodeRun(
      options.maxParallelSubCalls,
      controller,
      nested.staged,
      nested.registry,
      ctx,
      outer,
      log
    )
    controller.signal.addEventListener("abort", () => run.wakeUp(), { once: true })
    const namespace = bindingsOf(run, nested.registry, outer.agent)
    const unfollow = follow(ctx.signal, controller)
    const lane = yield* Effect.forkDaemon(Effect.scoped(driveLane(run)))
    const program = yield* Effect.forkDaemon(
      Effect.interruptible(
        runRequest(runtime, { program: args.code, bindings: [namespace], signal: controller.signal })
      )
    )
    const exit = yield* Fiber.await(program)
    controller.abort(abortError(SETTLED_REASON))
    yield* Fiber.await(lane)
    unfollow()
    return yield* conclude(run, exit)
  }))
