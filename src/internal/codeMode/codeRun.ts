/**
 * One `run_code` program's sub-calls (PTC-8…15): an open lane of the batch scheduler whose
 * entries are the program's binding calls, in submission order. Each sub-call runs through the
 * whole pipeline as a nested call of the outer one; its result answers the program, its contexts
 * and conclusion are ferried to the outer body, and its settlement is logged.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { BindingFailure } from "../../CodeRuntime.js"
import type { ContextSource } from "../../Content.js"
import type { AgentId, ExecuteInput, RunContext } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import type { ExecutionMode } from "../../Policy.js"
import type * as ToolCallLog from "../../ToolCallLog.js"
import { detailOf } from "../../ToolError.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import type * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import { Appender } from "./appender.js"
import { formatReason } from "./modes.js"
import { appendOrFail, type Begun, type Failure, Lane } from "../scheduler/lane.js"

/** PTC-10: the source of the deferred message carrying an image-bearing sub-result. @internal */
export const IMAGE_SOURCE: ContextSource = Object.freeze({ kind: "plugin", plugin: "tools-code-mode" })

/** @internal */
export const LOG_FAILED_REASON = "run_code could not record its sub-calls"
const FAILED_REASON = "the run_code lane failed"

/** @internal */
export const NOT_LOSSLESS_MESSAGE =
  "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"

/** @internal */
export const abortError = (message: string) => new DOMException(message, "AbortError")

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

/** The outer execution, as the bridge needs it. @internal */
export interface Outer {
  readonly callId: string
  readonly rootCallId: string
  readonly agent: AgentId | undefined
  readonly token: symbol
}

/**
 * One program's sub-calls: an open lane whose entries are binding calls in submission order
 * (PTC-8/9). Its signal is the run controller's.
 *
 * @internal
 */
export class CodeRun extends Lane {
  readonly entries: Array<Entry> = []
  readonly appender: Appender | undefined
  override readonly inlineExclusive = true
  /** Set when a durable run's sub-call diverged from its recorded run: the run ends with this error. */
  diverged: string | undefined = undefined

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

  record(_index: number, _result: ToolResult.ToolResult): Effect.Effect<boolean> {
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
  override commitsAfter(failure: Failure, _index: number): boolean {
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
