/**
 * The execution pipeline: creation, pre-execute, approval, guards, around-dispatch and body,
 * canonical output, post-execute and finishing (spec §8–§15, DECISIONS D-1…D-15).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Approval from "../Approval.js"
import * as Content from "../Content.js"
import type { UserMessage } from "../Content.js"
import type { UserMessageInput } from "../Content.js"
import type { AgentId, DispatchExecution, ExecuteInput, RunContext, ToolExecution } from "../Execution.js"
import * as IdGenerator from "../IdGenerator.js"
import * as Json from "../Json.js"
import type { JsonValue } from "../Json.js"
import type { PostDecision, PreDecision } from "../Policy.js"
import * as Registry from "../ToolRegistry.js"
import {
  detailOf,
  detailOfCause,
  type ErrorDetail,
  InvalidContextError,
  InvalidParentError,
  ToolArgsError,
  ToolNotFoundError
} from "../ToolError.js"
import * as ToolResult from "../ToolResult.js"
import type * as ToolRuntime from "../ToolRuntime.js"
import { type CanonicalMarks, createSuccess, makeMarks, materialize, type Outcome } from "./output.js"
import { withCaptured } from "./context.js"
import { awaitSettled, isThenable, suspendUser } from "./promise.js"
import { awaitCaller, type BodyCancellation, Caller, fuseCaller } from "./signals.js"

type Result = ToolResult.ToolResult
type Callback = (exec: ToolExecution, result: Result) => unknown

interface Runtime {
  readonly registry: Registry.Service
  readonly approval: Approval.Service | undefined
  readonly ids: IdGenerator.Service
  readonly marks: CanonicalMarks
  /** Tokens of executions whose body is running, for parent verification (D-5). */
  readonly running: Map<symbol, number>
}

class State implements ToolRuntime.Execution {
  bodyInvoked = false
  concluded = false
  finished: Result | undefined = undefined
  readonly deferred: Array<UserMessage> = []
  constructor(
    readonly runtime: Runtime,
    readonly execution: ToolExecution,
    readonly caller: Caller,
    readonly finalizer: Callback | undefined,
    readonly projector: Callback | undefined
  ) {}
  get token(): symbol {
    return this.execution.token
  }
  get name(): string {
    return this.execution.name
  }
  get agent(): AgentId | undefined {
    return this.execution.agent
  }
  get hasParent(): boolean {
    return this.execution.parent !== undefined
  }
}

const final = (handle: State, result: Result): ToolRuntime.Prepared => ({ _tag: "FinalResult", handle, result })
const post = (handle: State, result: Result): ToolRuntime.Prepared => ({ _tag: "PostResult", handle, result })

const frozen = <A extends Result>(runtime: Runtime, token: symbol, result: A): A => {
  Json.deepFreeze(result)
  runtime.marks.results.set(result, token)
  return result
}

const failWith = (thrown: unknown): ToolResult.ToolFailure => ToolResult.failure(detailOf(thrown))

/** D-13: contexts deferred by the body survive every failure except a block. */
const withDeferred = (state: State, result: ToolResult.ToolFailure): ToolResult.ToolFailure =>
  state.deferred.length === 0 ? result : { ...result, additionalContexts: state.deferred.slice() }

const withContexts = <A extends Result>(result: A, contexts: ReadonlyArray<UserMessage>): A =>
  contexts.length === 0 ? result : { ...result, additionalContexts: contexts }

/** ERR-4: a cancellation replacing a success keeps only its contexts. */
const cancelled = (state: State, replaced: Result): Result => {
  const result = state.bodyInvoked ? ToolResult.aborted() : ToolResult.abortedBeforeDispatch()
  const contexts = replaced.additionalContexts
  return contexts === undefined || contexts.length === 0 ? result : { ...result, additionalContexts: contexts }
}

const INTERRUPTED_REASON = "the calling fiber was interrupted"

const succeedNow = <A>(value: A): Effect.Effect<A> => Effect.succeed(value)

// ---------------------------------------------------------------------------------------------
// Creation (CREATE-1…6, PRE-1, D-5)
// ---------------------------------------------------------------------------------------------

const noop = () => {}

const callbackOf = (
  definition: object | undefined,
  key: "finalizeContent" | "projectContent"
): Callback | undefined => {
  if (definition === undefined) return undefined
  const fn = (definition as { readonly [k: string]: unknown })[key]
  return typeof fn === "function" ? (exec, result) => fn.call(definition, exec, result) : undefined
}

/** The read-only execution: frozen at creation (D-4); `signal` is the caller's, made on first read. */
class ExecutionView implements ToolExecution {
  declare readonly token: symbol
  declare readonly callId: string
  declare readonly rootCallId: string
  declare readonly name: string
  declare readonly agent?: AgentId
  declare readonly parent?: symbol
  declare readonly arguments: JsonValue | undefined
  readonly #caller: Caller
  constructor(
    token: symbol,
    callId: string,
    rootCallId: string,
    name: string,
    agent: AgentId | undefined,
    parent: symbol | undefined,
    args: JsonValue | undefined,
    caller: Caller
  ) {
    const self = this as { -readonly [K in keyof ToolExecution]: ToolExecution[K] }
    self.token = token
    self.callId = callId
    self.rootCallId = rootCallId
    self.name = name
    if (agent !== undefined) self.agent = agent
    if (parent !== undefined) self.parent = parent
    self.arguments = args
    this.#caller = caller
    Object.freeze(this)
  }
  get signal(): AbortSignal {
    return this.#caller.signal
  }
}

const makeExecution = (
  token: symbol,
  callId: string,
  rootCallId: string,
  name: string,
  agent: AgentId | undefined,
  parent: symbol | undefined,
  args: JsonValue | undefined,
  caller: Caller
): ToolExecution => new ExecutionView(token, callId, rootCallId, name, agent, parent, args, caller)

const create = (runtime: Runtime, input: ExecuteInput, setCaller: (caller: Caller) => void): ToolRuntime.Prepared | State => {
  let callId: unknown, rootCallId: unknown, name: unknown, agent: unknown, parent: unknown, signal: unknown
  let identityError: unknown = undefined
  try {
    callId = input.callId
    rootCallId = input.rootCallId
    name = input.name
    agent = input.agent
    parent = input.parent
    signal = input.signal
  } catch (error) {
    identityError = error
  }
  const caller = new Caller(signal instanceof AbortSignal ? signal : undefined)
  setCaller(caller)
  const token = Symbol("effect-tool-runtime.execution")
  if (
    identityError !== undefined || typeof callId !== "string" || typeof name !== "string" ||
    (rootCallId !== undefined && typeof rootCallId !== "string") ||
    (agent !== undefined && typeof agent !== "string") || (parent !== undefined && typeof parent !== "symbol")
  ) {
    const exec = makeExecution(
      token,
      typeof callId === "string" ? callId : "",
      typeof callId === "string" ? callId : "",
      typeof name === "string" ? name : "",
      undefined,
      undefined,
      undefined,
      caller
    )
    const state = new State(runtime, exec, caller, undefined, undefined)
    const error = identityError ?? new TypeError("tool execution input needs string callId and name")
    return final(state, failWith(error))
  }
  const view = runtime.registry.unsafeView(agent as AgentId | undefined)
  const probe = view.get(name)
  const definition = probe?.definition
  const finalizer = callbackOf(definition, "finalizeContent")
  const projector = callbackOf(definition, "projectContent")
  const collapsed = probe !== undefined && parent === undefined && view.mode === "code" &&
    name !== Registry.RUN_CODE_NAME
  let args: Json.SnapshotResult
  try {
    args = Json.snapshotFrozen(input.arguments)
  } catch (error) {
    args = { _tag: "Threw", error }
  }
  const exec = makeExecution(
    token,
    callId,
    (rootCallId as string | undefined) ?? callId,
    name,
    agent as AgentId | undefined,
    parent as symbol | undefined,
    args._tag === "Lossless" ? args.value : undefined,
    caller
  )
  const aborted = caller.aborted
  if (args._tag !== "Lossless") {
    const keepFinalizer = !collapsed || aborted
    const state = new State(runtime, exec, caller, keepFinalizer ? finalizer : undefined, undefined)
    return final(
      state,
      args._tag === "Threw"
        ? failWith(args.error)
        : ToolResult.failure({ message: "tool execution arguments must be losslessly JSON-serializable" })
    )
  }
  if (parent !== undefined && !runtime.running.has(parent as symbol)) {
    const state = new State(runtime, exec, caller, finalizer, undefined)
    return final(state, failWith(new InvalidParentError({ toolName: name })))
  }
  if (collapsed) {
    if (aborted) {
      return final(new State(runtime, exec, caller, finalizer, undefined), ToolResult.abortedBeforeDispatch())
    }
    const route = `only \`run_code\` is callable directly — call \`${name}\` from inside a \`run_code\` program instead`
    return final(
      new State(runtime, exec, caller, undefined, undefined),
      failWith(new ToolNotFoundError({ toolName: name, route }))
    )
  }
  const state = new State(runtime, exec, caller, finalizer, projector)
  if (aborted) return final(state, ToolResult.abortedBeforeDispatch())
  return state
}

// ---------------------------------------------------------------------------------------------
// Waterfalls (HOST-1, D-8): `next` re-runs the whole chain below each time it is run
// ---------------------------------------------------------------------------------------------

const notAnEffect = (stage: string) => new TypeError(`${stage} hook must return an Effect`)

const callHook = <A>(stage: string, run: () => unknown): Effect.Effect<A, unknown> =>
  suspendUser(() => {
    const out = run()
    return Effect.isEffect(out) ? out as Effect.Effect<A, unknown> : Effect.die(notAnEffect(stage))
  })

const waterfall = <A, H>(
  stage: string,
  hooks: ReadonlyArray<H>,
  innermost: Effect.Effect<A>,
  invoke: (hook: H, next: Effect.Effect<A>) => unknown
): Effect.Effect<A, unknown> => {
  let next: Effect.Effect<A, unknown> = innermost
  for (let i = hooks.length - 1; i >= 0; i--) {
    const hook = hooks[i]!
    const below = i === hooks.length - 1 ? next as Effect.Effect<A> : Effect.orDie(next)
    next = callHook<A>(stage, () => invoke(hook, below))
  }
  return next
}

// ---------------------------------------------------------------------------------------------
// Pre-execute, approval and guards (PRE-1…7, APPR-1…5, GUARD-1/2, D-1, D-2, D-7)
// ---------------------------------------------------------------------------------------------

const ALLOW: PreDecision = Object.freeze({ _tag: "Allow" }) as PreDecision
const ACCEPT: PostDecision = Object.freeze({ _tag: "Accept" }) as PostDecision

const checkPre = (decision: unknown): PreDecision | undefined => {
  if (typeof decision !== "object" || decision === null) return undefined
  const d = decision as { readonly _tag?: unknown; readonly reason?: unknown; readonly info?: unknown }
  switch (d._tag) {
    case "Allow":
    case "Cancel":
      return decision as PreDecision
    case "Ask":
      return d.reason === undefined || typeof d.reason === "string" ? decision as PreDecision : undefined
    case "Deny": {
      if (typeof d.reason !== "string") return undefined
      if (d.info === undefined) return decision as PreDecision
      const info = d.info as { readonly name?: unknown; readonly code?: unknown } | null
      return typeof info === "object" && info !== null && typeof info.name === "string" &&
          typeof info.code === "string"
        ? decision as PreDecision
        : undefined
    }
    default:
      return undefined
  }
}

const describe = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

type Gate = { readonly _tag: "Allow" } | { readonly _tag: "Deny"; readonly reason: string } | {
  readonly _tag: "Prepared"
  readonly prepared: ToolRuntime.Prepared
}

const denyGate = (reason: string): Gate => ({ _tag: "Deny", reason })

const askApproval = (state: State, reason: string | undefined): Effect.Effect<Gate> => {
  const { runtime, name } = state
  const approval = runtime.approval
  if (approval === undefined) return Effect.succeed(denyGate(reason ?? `tool "${name}" requires approval (not yet supported)`))
  const agent = state.agent
  if (agent === undefined) {
    return Effect.succeed(denyGate(`tool "${name}" requires approval, but the call has no agent to route it through`))
  }
  const request: Approval.ApprovalRequest = reason === undefined
    ? { agent, toolName: name, callId: state.execution.callId, signal: state.execution.signal }
    : { agent, toolName: name, callId: state.execution.callId, reason, signal: state.execution.signal }
  const asked = Effect.interruptible(suspendUser(() => approval.request(request))).pipe(
    Effect.catchAllCause(() => Effect.succeed<unknown>("unavailable"))
  )
  const abandoned = Effect.interruptible(Effect.as(awaitCaller(state.caller), "cancelled" as const))
  return Effect.map(Effect.raceFirst(asked, abandoned), (outcome): Gate => {
    switch (outcome) {
      case "allowed-once":
        return { _tag: "Allow" }
      case "rejected":
        return denyGate(`the user rejected tool "${name}"`)
      case "cancelled":
        return state.caller.aborted
          ? { _tag: "Prepared", prepared: post(state, ToolResult.abortedBeforeDispatch()) }
          : denyGate(`approval for tool "${name}" was cancelled`)
      case "unavailable":
        return denyGate(`tool "${name}" requires approval, but no approval channel is available`)
      default:
        return {
          _tag: "Prepared",
          prepared: final(state, failWith(new Error(`unreachable variant in ApprovalOutcome: ${describe(outcome)}`)))
        }
    }
  })
}

const runGuards = (state: State): Gate => {
  const guards = state.runtime.registry.unsafeView(state.agent).guards
  for (const guard of guards) {
    let answer: unknown
    try {
      answer = guard(state.execution)
    } catch (error) {
      return { _tag: "Prepared", prepared: final(state, failWith(error)) }
    }
    if (answer === undefined) continue
    if (typeof answer === "string") return denyGate(answer)
    return {
      _tag: "Prepared",
      prepared: final(state, ToolResult.failure({ message: `guard returned a non-string denial: ${describe(answer)}` }))
    }
  }
  return { _tag: "Allow" }
}

const afterGate = (state: State, outcome: Gate): ToolRuntime.Prepared => {
  if (outcome._tag === "Prepared") return outcome.prepared
  if (outcome._tag === "Deny") return post(state, frozen(state.runtime, state.token, ToolResult.denial(outcome.reason)))
  if (state.caller.aborted) return post(state, ToolResult.abortedBeforeDispatch())
  return { _tag: "Dispatch", handle: state }
}

const decide = (state: State, decision: PreDecision): Effect.Effect<ToolRuntime.Prepared> => {
  switch (decision._tag) {
    case "Deny":
      return succeedNow(post(state, frozen(state.runtime, state.token, ToolResult.denial(decision.reason, decision.info))))
    case "Cancel":
      return succeedNow(post(state, ToolResult.abortedBeforeDispatch()))
    case "Ask":
      return Effect.map(
        askApproval(state, decision.reason),
        (outcome) => afterGate(state, outcome._tag === "Allow" ? runGuards(state) : outcome)
      )
    case "Allow":
      return succeedNow(afterGate(state, runGuards(state)))
  }
}

const gate = (state: State): Effect.Effect<ToolRuntime.Prepared> => {
  const hooks = state.runtime.registry.unsafeView(state.agent).preExecute
  if (hooks.length === 0) return decide(state, ALLOW)
  const execution = state.execution
  return Effect.flatMap(
    Effect.exit(waterfall("tools/pre-execute", hooks, Effect.succeed(ALLOW), (hook, next) => hook(execution, next))),
    (exit) => {
      if (Exit.isFailure(exit)) return succeedNow(final(state, ToolResult.failure(detailOfCause(exit.cause))))
      const checked = checkPre(exit.value)
      if (checked === undefined) {
        return succeedNow(final(
          state,
          ToolResult.failure({ message: `tools/pre-execute returned a malformed decision: ${describe(exit.value)}` })
        ))
      }
      return decide(state, checked)
    }
  )
}

// ---------------------------------------------------------------------------------------------
// Body dispatch (BODY-1…7) and around-dispatch (AROUND-1…8)
// ---------------------------------------------------------------------------------------------

/** The around-dispatch view: identity read-only, `signal` writable (defaults to the caller's). */
class DispatchView implements DispatchExecution {
  readonly #exec: ToolExecution
  readonly #caller: Caller
  #installed: AbortSignal | undefined = undefined
  #replaced = false
  constructor(exec: ToolExecution, caller: Caller) {
    this.#exec = exec
    this.#caller = caller
  }
  /** The signal a wrapper installed (`undefined` when none did); may be anything for JS callers. */
  static installed(view: DispatchView): { readonly replaced: boolean; readonly signal: unknown } {
    return { replaced: view.#replaced, signal: view.#installed }
  }
  get token(): symbol {
    return this.#exec.token
  }
  get callId(): string {
    return this.#exec.callId
  }
  get rootCallId(): string {
    return this.#exec.rootCallId
  }
  get name(): string {
    return this.#exec.name
  }
  get agent(): AgentId {
    return this.#exec.agent as AgentId
  }
  get parent(): symbol {
    return this.#exec.parent as symbol
  }
  get arguments(): JsonValue | undefined {
    return this.#exec.arguments
  }
  get signal(): AbortSignal {
    return this.#replaced ? this.#installed as AbortSignal : this.#caller.signal
  }
  set signal(signal: AbortSignal) {
    this.#replaced = true
    this.#installed = signal
  }
}

/** The body's view (D-4): the execution's identity, the body's signal, deferral and conclusion. */
class BodyContext implements RunContext {
  declare readonly token: symbol
  declare readonly callId: string
  declare readonly rootCallId: string
  declare readonly name: string
  declare readonly agent?: AgentId
  declare readonly parent?: symbol
  declare readonly arguments: JsonValue | undefined
  readonly #cancellation: BodyCancellation
  readonly deferContext: (message: UserMessageInput) => void
  readonly concludeTurn: () => void
  constructor(state: State, cancellation: BodyCancellation) {
    const exec = state.execution
    const self = this as { -readonly [K in keyof ToolExecution]: ToolExecution[K] }
    self.token = exec.token
    self.callId = exec.callId
    self.rootCallId = exec.rootCallId
    self.name = exec.name
    if (exec.agent !== undefined) self.agent = exec.agent
    if (exec.parent !== undefined) self.parent = exec.parent
    self.arguments = exec.arguments
    this.#cancellation = cancellation
    this.deferContext = (message) => {
      const checked = Content.checkUserMessage(message, state.runtime.ids.next)
      if (checked._tag === "Invalid") throw new InvalidContextError({ reason: checked.reason })
      state.deferred.push(checked.value)
    }
    this.concludeTurn = () => {
      state.concluded = true
    }
    Object.freeze(this)
  }
  get signal(): AbortSignal {
    return this.#cancellation.signal()
  }
}

const makeRunContext = (state: State, cancellation: BodyCancellation): RunContext => new BodyContext(state, cancellation)

const invokeBody = (
  definition: Registry.RegisteredTool["definition"],
  args: JsonValue | undefined,
  ctx: RunContext
): Effect.Effect<unknown, unknown, unknown> =>
  suspendUser(() => {
    const out = definition.execute(args as JsonValue, ctx)
    if (Effect.isEffect(out)) return out
    return isThenable(out) ? awaitSettled(out) : Effect.succeed(out)
  })

const withContext = <A, E>(
  effect: Effect.Effect<A, E, unknown>,
  context: Context.Context<never>
): Effect.Effect<A, E> =>
  context.unsafeMap.size === 0 ? effect as Effect.Effect<A, E> : withCaptured(context, () => effect)

/** Waits for the body fiber's exit; cancellation interrupts it (and still waits for the exit). */
const awaitBody = <A, E>(
  fiber: Fiber.RuntimeFiber<A, E>,
  cancellation: BodyCancellation
): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.async<Exit.Exit<A, E>>((resume) => {
    const interrupt = () => fiber.unsafeInterruptAsFork(FiberId.none)
    let stopWatching = noop
    fiber.addObserver((exit) => {
      stopWatching()
      resume(Effect.succeed(exit))
    })
    if (cancellation.aborted()) interrupt()
    else stopWatching = cancellation.onAbort(interrupt)
  })

const isArgsFailure = (cause: Cause.Cause<unknown>): boolean => {
  const failure = Cause.failureOption(cause)
  try {
    return Option.isSome(failure) && failure.value instanceof ToolArgsError
  } catch {
    return false
  }
}

const releaseParent = (runtime: Runtime, token: symbol) => {
  const left = (runtime.running.get(token) ?? 1) - 1
  if (left === 0) runtime.running.delete(token)
  else runtime.running.set(token, left)
}

const bodyDispatch = (state: State, view: DispatchView): Effect.Effect<Result> =>
  Effect.suspend(() => {
    const { runtime, execution: exec } = state
    const mark = (result: Result) => frozen(runtime, state.token, result)
    const installed = DispatchView.installed(view)
    if (installed.replaced && !(installed.signal instanceof AbortSignal)) {
      return Effect.succeed(mark(ToolResult.failure({ message: "exec.signal must remain an AbortSignal" })))
    }
    const cancellation = fuseCaller(state.caller, installed.signal as AbortSignal | undefined)
    if (cancellation.aborted()) {
      cancellation.detach()
      return Effect.succeed(mark(ToolResult.abortedBeforeDispatch()))
    }
    const entry = runtime.registry.unsafeView(state.agent).resolve(state.name, state.hasParent)
    if (entry === undefined) {
      cancellation.detach()
      return Effect.succeed(mark(failWith(new ToolNotFoundError({ toolName: state.name }))))
    }
    const invokedBefore = state.bodyInvoked
    state.bodyInvoked = true
    runtime.running.set(state.token, (runtime.running.get(state.token) ?? 0) + 1)
    const ctx = makeRunContext(state, cancellation)
    const body = withContext(invokeBody(entry.definition, exec.arguments, ctx), entry.context)
    return Effect.fork(Effect.interruptible(body)).pipe(
      Effect.flatMap((fiber) => awaitBody(fiber, cancellation)),
      Effect.map((exit): Result => {
        cancellation.detach()
        releaseParent(runtime, state.token)
        if (Exit.isSuccess(exit)) {
          const success = createSuccess(entry, exec, exit.value, state.concluded, runtime.marks)
          if (!success.ok) return mark(failWith(success.error))
          return cancellation.aborted() ? mark(ToolResult.aborted()) : success.value
        }
        if (Cause.isInterruptedOnly(exit.cause)) {
          return mark(
            cancellation.aborted() ? ToolResult.aborted() : ToolResult.failure({ message: "tool body was interrupted" })
          )
        }
        if (!invokedBefore && isArgsFailure(exit.cause)) state.bodyInvoked = false
        return mark(ToolResult.failure(detailOfCause(exit.cause)))
      })
    )
  })

type Dispatched = ToolRuntime.Dispatched

const finalDispatched = (result: Result): Dispatched => ({ _tag: "FinalResult", result })

const readResult = (raw: unknown): Outcome<{ readonly isError: unknown; readonly record: Record<string, unknown> }> => {
  if (typeof raw !== "object" || raw === null) {
    return { ok: false, error: new TypeError("tools/execute returned a malformed result") }
  }
  try {
    return { ok: true, value: { isError: (raw as { isError?: unknown }).isError, record: raw as Record<string, unknown> } }
  } catch (error) {
    return { ok: false, error }
  }
}

/** AROUND-5/6: trust only this execution's canonical results; re-process everything else. */
const normalize = (state: State, raw: unknown): Outcome<Result> => {
  const { runtime } = state
  if (typeof raw === "object" && raw !== null && runtime.marks.results.get(raw) === state.token) {
    return { ok: true, value: raw as Result }
  }
  const read = readResult(raw)
  if (!read.ok) return read
  const { isError, record } = read.value
  try {
    if (isError === true) {
      const rebuilt: Record<string, unknown> = { isError: true, error: record.error, content: record.content }
      if (record.meta !== undefined) rebuilt.meta = record.meta
      if (record.additionalContexts !== undefined) rebuilt.additionalContexts = record.additionalContexts
      return { ok: true, value: Json.deepFreeze(rebuilt) as unknown as Result }
    }
    if (isError === false) {
      const entry = runtime.registry.unsafeView(state.agent).resolve(state.name, state.hasParent)
      if (entry === undefined) return { ok: false, error: new ToolNotFoundError({ toolName: state.name }) }
      const success = createSuccess(entry, state.execution, record.value, state.concluded, runtime.marks)
      if (!success.ok) return success
      const contexts = record.additionalContexts
      return {
        ok: true,
        value: contexts === undefined ? success.value : { ...success.value, additionalContexts: contexts as never }
      }
    }
  } catch (error) {
    return { ok: false, error }
  }
  return { ok: false, error: new TypeError("tools/execute returned a malformed result") }
}

const afterDispatch = (state: State, raw: unknown): Dispatched => {
  const normalized = normalize(state, raw)
  if (!normalized.ok) return finalDispatched(withDeferred(state, failWith(normalized.error)))
  let result = normalized.value
  if (state.deferred.length > 0) {
    const carried = result.additionalContexts
    result = withContexts(result, carried === undefined ? state.deferred.slice() : [...state.deferred, ...carried])
  }
  if (state.caller.aborted && !result.isError) result = cancelled(state, result)
  return { _tag: "PostResult", result }
}

const dispatchIn = (state: State): Effect.Effect<Dispatched> => {
  const wrappers = state.runtime.registry.unsafeView(state.agent).aroundExecute
  const view = new DispatchView(state.execution, state.caller)
  const body = bodyDispatch(state, view)
  if (wrappers.length === 0) return Effect.map(body, (raw) => afterDispatch(state, raw))
  return Effect.map(
    Effect.exit(waterfall("tools/execute", wrappers, body, (wrapper, next) => wrapper(view, next))),
    (exit) =>
      Exit.isFailure(exit)
        ? finalDispatched(withDeferred(state, ToolResult.failure(detailOfCause(exit.cause))))
        : afterDispatch(state, exit.value)
  )
}

// ---------------------------------------------------------------------------------------------
// Post-execute (POST-1…9, D-1 projectContent, D-2, D-3)
// ---------------------------------------------------------------------------------------------

const BLOCKED = "tool result blocked by post-execute policy"

const blockMessage = (feedback: Content.Content): string => {
  const message = feedback.map((block) => block.type === "text" ? block.text : `[${block.type} content]`).join("\n")
  return message === "" ? BLOCKED : message
}

const checkDecisionContexts = (
  state: State,
  contexts: unknown
): Outcome<ReadonlyArray<UserMessage>> => {
  if (contexts === undefined) return { ok: true, value: [] }
  if (!Array.isArray(contexts)) {
    return { ok: false, error: new TypeError("tools/post-execute additionalContexts must be an array") }
  }
  const out: Array<UserMessage> = []
  for (const context of contexts) {
    const checked = Content.checkUserMessage(context, state.runtime.ids.next)
    if (checked._tag === "Invalid") return { ok: false, error: new InvalidContextError({ reason: checked.reason }) }
    out.push(checked.value)
  }
  return { ok: true, value: out }
}

const hasOwn = (o: object, key: string) => Object.prototype.hasOwnProperty.call(o, key)

/** Applies a post decision; `Final` marks a pipeline failure (POST-3/5/7). */
const applyDecision = (state: State, incoming: Result, decision: unknown): Outcome<Result> => {
  if (typeof decision !== "object" || decision === null) {
    return { ok: false, error: new TypeError(`tools/post-execute returned a malformed decision: ${describe(decision)}`) }
  }
  const d = decision as {
    readonly _tag?: unknown
    readonly feedback?: unknown
    readonly content?: unknown
    readonly value?: unknown
    readonly additionalContexts?: unknown
  }
  const contexts = checkDecisionContexts(state, d.additionalContexts)
  if (!contexts.ok) return contexts
  if (d._tag === "Block") {
    const feedback = Content.check(d.feedback)
    if (feedback._tag === "Invalid") {
      return { ok: false, error: new TypeError(`tools/post-execute block feedback: ${feedback.reason}`) }
    }
    const blocked: ToolResult.ToolFailure = {
      isError: true,
      error: { message: blockMessage(feedback.value) },
      content: feedback.value
    }
    return { ok: true, value: withContexts(blocked, contexts.value) }
  }
  if (d._tag !== "Accept") {
    return { ok: false, error: new TypeError(`tools/post-execute returned a malformed decision: ${describe(decision)}`) }
  }
  const replacesContent = hasOwn(d, "content")
  const replacesValue = hasOwn(d, "value")
  if (replacesContent && replacesValue) {
    return { ok: false, error: new TypeError("tools/post-execute accept decision cannot replace both value and content") }
  }
  let result = incoming
  if (replacesValue) {
    if (incoming.isError) {
      return { ok: false, error: new TypeError("tools/post-execute cannot replace the value of a failed result") }
    }
    const entry = state.runtime.registry.unsafeView(state.agent).resolve(state.name, state.hasParent)
    if (entry === undefined) return { ok: false, error: new ToolNotFoundError({ toolName: state.name }) }
    const success = createSuccess(entry, state.execution, d.value, state.concluded, state.runtime.marks)
    if (!success.ok) return success
    result = incoming.additionalContexts === undefined
      ? success.value
      : { ...success.value, additionalContexts: incoming.additionalContexts }
  } else if (replacesContent && d.content !== undefined) {
    const content = Content.check(d.content)
    if (content._tag === "Invalid") {
      return { ok: false, error: new TypeError(`tools/post-execute accept content: ${content.reason}`) }
    }
    result = { ...incoming, content: content.value }
  }
  if (contexts.value.length > 0) {
    const carried = result.additionalContexts
    result = withContexts(result, carried === undefined ? contexts.value : [...carried, ...contexts.value])
  }
  return { ok: true, value: result }
}

const project = (state: State, result: Result): Outcome<Result> => {
  const projector = state.projector
  if (projector === undefined) return { ok: true, value: result }
  let out: unknown
  try {
    out = projector(state.execution, result)
  } catch (error) {
    return { ok: false, error }
  }
  if (out === undefined) return { ok: true, value: result }
  const content = Content.check(out)
  if (content._tag === "Invalid") return { ok: false, error: new TypeError(`projectContent: ${content.reason}`) }
  return { ok: true, value: Json.deepFreeze({ ...result, content: content.value }) }
}

const afterPost = (state: State, result: Result, decision: unknown): Effect.Effect<Result> => {
  const applied = decision === ACCEPT ? { ok: true as const, value: result } : applyDecision(state, result, decision)
  if (!applied.ok) return finishIn(state, withDeferred(state, failWith(applied.error)))
  const outcome = applied.value
  return finishIn(state, state.caller.aborted && !outcome.isError ? cancelled(state, outcome) : outcome)
}

const finalizeIn = (state: State, incoming: Result): Effect.Effect<Result> => {
  const projected = project(state, incoming)
  if (!projected.ok) return finishIn(state, withDeferred(state, failWith(projected.error)))
  const result = projected.value
  const hooks = state.runtime.registry.unsafeView(state.agent).postExecute
  if (hooks.length === 0) return afterPost(state, result, ACCEPT)
  const execution = state.execution
  return Effect.flatMap(
    Effect.exit(
      waterfall("tools/post-execute", hooks, Effect.succeed(ACCEPT), (hook, next) => hook(execution, result, next))
    ),
    (exit) =>
      Exit.isFailure(exit)
        ? finishIn(state, withDeferred(state, ToolResult.failure(detailOfCause(exit.cause))))
        : afterPost(state, result, exit.value)
  )
}

// ---------------------------------------------------------------------------------------------
// Finishing (FIN-1…4, OBS-1)
// ---------------------------------------------------------------------------------------------

const materialized = (state: State, candidate: unknown): Result => {
  const { marks, ids } = state.runtime
  const first = materialize(candidate, marks, ids.next)
  if (first.ok) return first.value
  const fallback = materialize(withDeferred(state, failWith(first.error)), marks, ids.next)
  return fallback.ok ? fallback.value : Json.deepFreeze(failWith(first.error))
}

const notifyObserver = (
  execution: ToolExecution,
  result: Result,
  observer: Registry.RegistryView["observers"][number]
): Effect.Effect<void> =>
  Effect.flatMap(Effect.exit(callHook<void>("tools/result", () => observer(execution, result))), (exit) =>
    Exit.isSuccess(exit) ? Effect.void : Effect.logWarning(
      `tool "${execution.name}" (${execution.callId}): tools/result observer failed: ${
        detailOfCause(exit.cause).message
      }`
    ))

const finishIn = (state: State, candidate: Result): Effect.Effect<Result> => {
  if (state.finished !== undefined) return succeedNow(state.finished)
  let result = materialized(state, candidate)
  const finalizer = state.finalizer
  if (finalizer !== undefined) {
    try {
      const content = finalizer(state.execution, result)
      if (content !== undefined) result = materialized(state, { ...result, content })
    } catch (error) {
      result = materialized(state, withDeferred(state, failWith(error)))
    }
  }
  state.finished = result
  state.caller.detach()
  const observers = state.runtime.registry.unsafeView(state.agent).observers
  if (observers.length === 0) return succeedNow(result)
  const execution = state.execution
  return Effect.as(
    Effect.forEach(observers, (observer) => notifyObserver(execution, result, observer), { discard: true }),
    result
  )
}

// ---------------------------------------------------------------------------------------------
// Envelope (D-14): the calling fiber's interruption is the caller's abort; the work finishes
// ---------------------------------------------------------------------------------------------

/** Waits for a fiber's exit without inheriting its fiber refs (cheaper than `Fiber.join`). */
const awaitExit = <A>(fiber: Fiber.RuntimeFiber<A>): Effect.Effect<A> =>
  Effect.async<A>((resume) => {
    const observer = (exit: Exit.Exit<A>) => resume(exit)
    fiber.addObserver(observer)
    return Effect.sync(() => fiber.removeObserver(observer))
  })

/**
 * The pipeline runs on its own fiber, detached from the caller's fiber so that interrupting the
 * caller does not propagate into it (a parent's interruption reaches its children at once);
 * it is always awaited, on both paths, so it never outlives the call.
 */
const envelope = <A>(abort: () => void, work: Effect.Effect<A>): Effect.Effect<A> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDaemon(work), (fiber) =>
      Effect.onInterrupt(
        restore(awaitExit(fiber)),
        () =>
          Effect.suspend(() => {
            abort()
            return Fiber.await(fiber)
          })
      ))
  )

const interruptedReason = () => new DOMException(INTERRUPTED_REASON, "AbortError")

/** The caller of a call that is being created: interruption may arrive before it exists. */
class PendingCaller {
  caller: Caller | undefined = undefined
  interrupted = false
  readonly set = (caller: Caller) => {
    this.caller = caller
    if (this.interrupted) caller.abort(interruptedReason())
  }
  readonly abort = () => {
    this.interrupted = true
    this.caller?.abort(interruptedReason())
  }
}

const prepareIn = (runtime: Runtime, input: ExecuteInput, pending: PendingCaller): Effect.Effect<ToolRuntime.Prepared> =>
  Effect.suspend(() => {
    const created = create(runtime, input, pending.set)
    return created instanceof State ? gate(created) : succeedNow(created)
  })

const continueWith = (prepared: ToolRuntime.Prepared): Effect.Effect<Result> => {
  const state = prepared.handle as State
  switch (prepared._tag) {
    case "FinalResult":
      return finishIn(state, prepared.result)
    case "PostResult":
      return finalizeIn(state, prepared.result)
    case "Dispatch":
      return Effect.flatMap(dispatchIn(state), (dispatched) =>
        dispatched._tag === "FinalResult"
          ? finishIn(state, dispatched.result)
          : finalizeIn(state, dispatched.result))
  }
}

const stateOf = (runtime: Runtime, handle: ToolRuntime.Execution): Effect.Effect<State> =>
  handle instanceof State && handle.runtime === runtime
    ? Effect.succeed(handle)
    : Effect.die(new TypeError("execution handle does not belong to this runtime"))

/**
 * Staged steps without the envelope fiber, for callers inside this library that own the
 * calls' cancellation themselves (the scheduler passes a batch signal it aborts on its own
 * interruption, and runs the steps on fibers it owns). Keyed by the public service.
 *
 * @internal
 */
export const unguardedStaged = new WeakMap<ToolRuntime.Service, ToolRuntime.Service>()

/**
 * The envelope-free staged steps of `service` when it is this library's runtime, else
 * `service` itself.
 *
 * @internal
 */
export const stagedOf = (service: ToolRuntime.Service): ToolRuntime.Service => unguardedStaged.get(service) ?? service

/** @internal */
export const make: Effect.Effect<ToolRuntime.Service, never, Registry.ToolRegistry> = Effect.gen(function*() {
  const registry = yield* Registry.ToolRegistry
  const approval = yield* Effect.serviceOption(Approval.Approval)
  const ids = yield* Effect.serviceOption(IdGenerator.IdGenerator)
  const runtime: Runtime = {
    registry,
    approval: Option.getOrUndefined(approval),
    ids: Option.getOrElse(ids, () => IdGenerator.random),
    marks: makeMarks(),
    running: new Map()
  }
  const staged = <A>(handle: ToolRuntime.Execution, stage: (state: State) => Effect.Effect<A>) =>
    Effect.flatMap(stateOf(runtime, handle), (state) =>
      envelope(() => state.caller.abort(interruptedReason()), stage(state)))
  const service: ToolRuntime.Service = {
    execute: (input) =>
      Effect.suspend(() => {
        const pending = new PendingCaller()
        return envelope(pending.abort, Effect.flatMap(prepareIn(runtime, input, pending), continueWith))
      }),
    prepare: (input) =>
      Effect.suspend(() => {
        const pending = new PendingCaller()
        return envelope(pending.abort, prepareIn(runtime, input, pending))
      }),
    dispatch: (handle) => staged(handle, dispatchIn),
    finalize: (handle, result) => staged(handle, (state) => finalizeIn(state, result)),
    finish: (handle, result) => staged(handle, (state) => finishIn(state, result))
  }
  const direct = <A>(handle: ToolRuntime.Execution, stage: (state: State) => Effect.Effect<A>) =>
    Effect.uninterruptible(Effect.flatMap(stateOf(runtime, handle), stage))
  unguardedStaged.set(service, {
    ...service,
    prepare: (input) => Effect.uninterruptible(Effect.suspend(() => prepareIn(runtime, input, new PendingCaller()))),
    dispatch: (handle) => direct(handle, dispatchIn),
    finalize: (handle, result) => direct(handle, (state) => finalizeIn(state, result)),
    finish: (handle, result) => direct(handle, (state) => finishIn(state, result))
  })
  return service
})

/** @internal */
export const layer = <I>(tag: Context.Tag<I, ToolRuntime.Service>): Layer.Layer<I, never, Registry.ToolRegistry> =>
  Layer.effect(tag, make)

/** @internal */
export type { ErrorDetail }
