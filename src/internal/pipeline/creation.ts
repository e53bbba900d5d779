/**
 * Creation (CREATE-1…6, PRE-1, D-5): an execution input, read once, becomes a `State`, or a final
 * result when the input, its arguments, its parent or the deployment mode refuse it before any
 * policy runs.
 *
 * @internal
 */
import type { AgentId, ExecuteInput } from "../../Execution.js"
import * as Json from "../../Json.js"
import * as Registry from "../../ToolRegistry.js"
import { InvalidParentError, ToolNotFoundError } from "../../ToolError.js"
import * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import { Caller, isAbortSignal } from "../base/signals.js"
import { type Callback, failWith, final, type Runtime, State } from "./execution.js"
import { ExecutionView } from "./views.js"

const callbackOf = (
  definition: object | undefined,
  key: "finalizeContent" | "projectContent"
): Callback | undefined => {
  if (definition === undefined) return undefined
  const fn = (definition as { readonly [k: string]: unknown })[key]
  return typeof fn === "function" ? (exec, result) => fn.call(definition, exec, result) : undefined
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
