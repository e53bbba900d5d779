/**
 * A single execution's state and views: the runtime's shared parts, the per-call `State`, the
 * read-only execution (D-4), the around-dispatch and body views, the result helpers (D-13, ERR-4)
 * and creation (CREATE-1…6, PRE-1, D-5).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Approval from "../../Approval.js"
import * as Content from "../../Content.js"
import type { UserMessage } from "../../Content.js"
import type { UserMessageInput } from "../../Content.js"
import type { AgentId, DispatchExecution, ExecuteInput, RunContext, ToolExecution } from "../../Execution.js"
import type * as IdGenerator from "../../IdGenerator.js"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import * as Registry from "../../ToolRegistry.js"
import { detailOf, InvalidContextError, InvalidParentError, ToolNotFoundError } from "../../ToolError.js"
import * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import type * as ToolTelemetry from "../../ToolTelemetry.js"
import type { CanonicalMarks } from "./output.js"
import { type BodyCancellation, Caller, isAbortSignal } from "../base/signals.js"

/** @internal */
export type Result = ToolResult.ToolResult
type Callback = (exec: ToolExecution, result: Result) => unknown

/** @internal */
export interface Runtime {
  readonly registry: Registry.Service
  readonly approval: Approval.Service | undefined
  readonly ids: IdGenerator.Service
  readonly marks: CanonicalMarks
  /**
   * Executions whose body is running, for parent verification (D-5). Keyed by the execution
   * (an object key hashes far cheaper than a symbol); a parent token is looked up by a scan,
   * which only a nested call pays.
   */
  readonly running: Set<State>
  /** Approval fibers still running after their call stopped waiting for them (APPR-5, D-14). */
  readonly background: Set<Fiber.RuntimeFiber<unknown>>
  /** The telemetry captured at build; `undefined` makes no probe at all. */
  readonly telemetry: ToolTelemetry.Service | undefined
  /** The fast paths (inline calls, native deadlines, Exit bodies); off only to test them against the general path. */
  readonly fast: boolean
}

/** @internal */
export class State implements ToolRuntime.Execution {
  bodyInvoked = false
  concluded = false
  /** How many dispatches of this execution have a body running. */
  runningBodies = 0
  /** A policy denied the call (pre-execute, approval or a guard): for telemetry. */
  denied = false
  finished: Result | undefined = undefined
  probe: ToolTelemetry.CallProbe | undefined = undefined
  /**
   * How a call running on its caller's fiber waits for its body: the caller's interruption
   * aborts the call and the wait goes on (D-14). `undefined` on a call's own fiber.
   */
  guard: (<A>(wait: Effect.Effect<A>) => Effect.Effect<A>) | undefined = undefined
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

/**
 * `effect` as one observed stage of the call when the call has a probe.
 *
 * @internal
 */
export const observed = <A, E>(
  state: State,
  stage: ToolTelemetry.Stage,
  effect: Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  state.probe === undefined ? effect : state.probe.stage(stage, effect)

/** @internal */
export const final = (handle: State, result: Result): ToolRuntime.Prepared => ({ _tag: "FinalResult", handle, result })
/** @internal */
export const post = (handle: State, result: Result): ToolRuntime.Prepared => ({ _tag: "PostResult", handle, result })

/** @internal */
export const frozen = <A extends Result>(runtime: Runtime, token: symbol, result: A): A => {
  Json.deepFreeze(result)
  runtime.marks.results.set(result, token)
  return result
}

/** @internal */
export const failWith = (thrown: unknown): ToolResult.ToolFailure => ToolResult.failure(detailOf(thrown))

/**
 * D-13: contexts deferred by the body survive every failure except a block.
 *
 * @internal
 */
export const withDeferred = (state: State, result: ToolResult.ToolFailure): ToolResult.ToolFailure =>
  state.deferred.length === 0 ? result : { ...result, additionalContexts: state.deferred.slice() }

/** @internal */
export const withContexts = <A extends Result>(result: A, contexts: ReadonlyArray<UserMessage>): A =>
  contexts.length === 0 ? result : { ...result, additionalContexts: contexts }

/**
 * ERR-4: a cancellation replacing a success keeps only its contexts.
 *
 * @internal
 */
export const cancelled = (state: State, replaced: Result): Result => {
  const result = state.bodyInvoked ? ToolResult.aborted() : ToolResult.abortedBeforeDispatch()
  const contexts = replaced.additionalContexts
  let keep = false
  try {
    keep = Array.isArray(contexts) && contexts.length > 0
  } catch {
    keep = false
  }
  return keep ? { ...result, additionalContexts: contexts! } : result
}

/**
 * `[...first, ...carried]` when `carried` (contexts a wrapper or policy result carried, not yet
 * validated) reads as an array; `undefined` when it does not, so FIN-2 reports it.
 *
 * @internal
 */
export const concatContexts = (
  first: ReadonlyArray<UserMessage>,
  carried: unknown,
  carriedFirst = false
): Array<UserMessage> | undefined => {
  if (carried === undefined) return first.slice()
  try {
    if (!Array.isArray(carried)) return undefined
    return carriedFirst ? [...carried, ...first] : [...first, ...carried]
  } catch {
    return undefined
  }
}

/** @internal */
export const succeedNow = <A>(value: A): Effect.Effect<A> => Effect.succeed(value)

const UNPRINTABLE_VALUE = "<unprintable value>"

/**
 * A short text for a value a user callback produced, for error messages: JSON when the value
 * is lossless (read through one snapshot), else a best-effort JSON, else a fixed text. Total:
 * never throws and never converts an object to a primitive.
 *
 * @internal
 */
export const describe = (value: unknown): string => {
  switch (typeof value) {
    case "string":
    case "number":
    case "boolean":
      return JSON.stringify(value) ?? String(value)
    case "undefined":
      return "undefined"
    case "bigint":
      return `${value}n`
    case "symbol":
      return "a symbol"
    case "function":
      return "a function"
  }
  if (value === null) return "null"
  const snap = Json.snapshot(value)
  if (snap._tag === "Lossless") return JSON.stringify(snap.value)
  try {
    const json = JSON.stringify(value)
    if (typeof json === "string") return json
  } catch {
    // fall through
  }
  return UNPRINTABLE_VALUE
}

// ---------------------------------------------------------------------------------------------
// Around-dispatch and body views (AROUND-1…8, BODY-1…7, D-4)
// ---------------------------------------------------------------------------------------------

type Identity = Omit<ToolExecution, "signal" | "agent" | "parent"> & {
  readonly agent?: AgentId | undefined
  readonly parent?: symbol | undefined
}

/** Installs identity fields as own properties; `agent` and `parent` only when present (TYPES-4). */
const assignIdentity = (target: object, identity: Identity): void => {
  const self = target as { -readonly [K in keyof ToolExecution]: ToolExecution[K] }
  self.token = identity.token
  self.callId = identity.callId
  self.rootCallId = identity.rootCallId
  self.name = identity.name
  if (identity.agent !== undefined) self.agent = identity.agent
  if (identity.parent !== undefined) self.parent = identity.parent
  self.arguments = identity.arguments
}

/**
 * The around-dispatch view: identity read-only, `signal` writable (defaults to the caller's).
 *
 * @internal
 */
export class DispatchView implements DispatchExecution {
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
  readonly #state: State
  readonly deferContext: (message: UserMessageInput) => void
  readonly concludeTurn: () => void
  constructor(state: State, cancellation: BodyCancellation) {
    assignIdentity(this, state.execution)
    this.#cancellation = cancellation
    this.#state = state
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
  /** The state behind a body's run context; `undefined` for anything else (a copy, a Proxy). */
  static stateOf(ctx: unknown): State | undefined {
    return typeof ctx === "object" && ctx !== null && #state in ctx ? (ctx as BodyContext).#state : undefined
  }
}

/**
 * The execution whose body received `ctx`, when `ctx` is a run context this library made.
 *
 * @internal
 */
export const stateOfRunContext = (ctx: unknown): State | undefined => BodyContext.stateOf(ctx)

/** @internal */
export const makeRunContext = (state: State, cancellation: BodyCancellation): RunContext =>
  new BodyContext(state, cancellation)

// ---------------------------------------------------------------------------------------------
// Creation (CREATE-1…6, PRE-1, D-5)
// ---------------------------------------------------------------------------------------------

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
    assignIdentity(this, { token, callId, rootCallId, name, agent, parent, arguments: args })
    this.#caller = caller
    Object.freeze(this)
  }
  get signal(): AbortSignal {
    return this.#caller.signal
  }
}

/** Why a call's input was rejected before anything else ran (CREATE-1, D-20). */
const identityProblem = (
  callId: unknown,
  rootCallId: unknown,
  name: unknown,
  agent: unknown,
  parent: unknown,
  signal: unknown
): string | undefined => {
  if (typeof callId !== "string" || typeof name !== "string") return "tool execution input needs string callId and name"
  if (rootCallId !== undefined && typeof rootCallId !== "string") {
    return "tool execution input rootCallId must be a string when present"
  }
  if (agent !== undefined && typeof agent !== "string") return "tool execution input agent must be a string when present"
  if (parent !== undefined && typeof parent !== "symbol") {
    return "tool execution input parent must be an execution token (a symbol) when present"
  }
  if (signal !== undefined && !isAbortSignal(signal)) {
    return "tool execution input signal must be an AbortSignal when present"
  }
  return undefined
}

/**
 * CREATE-1…6: reads the input's identity fields once, probes the definition, captures the
 * finalizer, then reads and snapshots the arguments. A bad input (not an object, a field of the
 * wrong type, a signal that is not a genuine `AbortSignal`, a getter that throws) is a
 * final-result error; nothing else of it is read.
 *
 * @internal
 */
export const create = (
  runtime: Runtime,
  input: ExecuteInput,
  pending: { readonly set: (caller: Caller) => void }
): ToolRuntime.Prepared | State => {
  let callId: unknown, rootCallId: unknown, name: unknown, agent: unknown, parent: unknown, signal: unknown
  let identityError: unknown = undefined
  if ((typeof input !== "object" && typeof input !== "function") || input === null) {
    identityError = new TypeError("tool execution input must be an object")
  } else {
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
  }
  const problem = identityError === undefined
    ? identityProblem(callId, rootCallId, name, agent, parent, signal)
    : undefined
  const valid = identityError === undefined && problem === undefined
  const caller = new Caller(valid ? signal as AbortSignal | undefined : undefined)
  pending.set(caller)
  const token = Symbol("effect-tool-runtime.execution")
  if (!valid) {
    const exec = new ExecutionView(
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
    return final(state, failWith(identityError ?? new TypeError(problem)))
  }
  const identity = { callId, rootCallId, name, agent, parent } as CheckedIdentity
  return createChecked(runtime, input, caller, token, identity)
}

/** Whether `token` is an execution of `runtime` whose body is running (D-5). */
const isRunning = (runtime: Runtime, token: symbol): boolean => {
  for (const state of runtime.running) if (state.token === token) return true
  return false
}

interface CheckedIdentity {
  readonly callId: string
  readonly rootCallId: string | undefined
  readonly name: string
  readonly agent: AgentId | undefined
  readonly parent: symbol | undefined
}

const createChecked = (
  runtime: Runtime,
  input: ExecuteInput,
  caller: Caller,
  token: symbol,
  { agent, callId, name, parent, rootCallId }: CheckedIdentity
): ToolRuntime.Prepared | State => {
  const view = runtime.registry.unsafeView(agent)
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
  const exec = new ExecutionView(
    token,
    callId,
    rootCallId ?? callId,
    name,
    agent,
    parent,
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
  if (parent !== undefined && !isRunning(runtime, parent)) {
    const state = new State(runtime, exec, caller, finalizer, undefined)
    return final(state, failWith(new InvalidParentError({ toolName: name })))
  }
  if (collapsed) {
    if (aborted) {
      return final(new State(runtime, exec, caller, finalizer, undefined), ToolResult.abortedBeforeDispatch())
    }
    const route = "only `run_code` is callable directly — " +
      `call \`${name}\` from inside a \`run_code\` program instead`
    return final(
      new State(runtime, exec, caller, undefined, undefined),
      failWith(new ToolNotFoundError({ toolName: name, route }))
    )
  }
  const state = new State(runtime, exec, caller, finalizer, projector)
  if (aborted) return final(state, ToolResult.abortedBeforeDispatch())
  return state
}
