/**
 * What user code sees of an execution (D-4; AROUND-1…8, BODY-1…7): the read-only execution,
 * frozen at creation; the around-dispatch view, whose `signal` a wrapper may replace; and the
 * body's run context, the only view that can defer context or conclude the turn.
 *
 * @internal
 */
import * as Content from "../../Content.js"
import type { UserMessageInput } from "../../Content.js"
import type { AgentId, DispatchExecution, RunContext, ToolExecution } from "../../Execution.js"
import type { JsonValue } from "../../Json.js"
import { InvalidContextError } from "../../ToolError.js"
import type { BodyCancellation, Caller } from "../base/signals.js"
import type { State } from "./execution.js"

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
  get idempotencyKey(): string | undefined {
    return this.#state.idempotencyKey
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

/**
 * The read-only execution: frozen at creation (D-4); `signal` is the caller's, made on first read.
 *
 * @internal
 */
export class ExecutionView implements ToolExecution {
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
