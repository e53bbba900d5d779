/**
 * A single execution's state: the runtime's shared parts, the per-call `State`, and the result
 * helpers every stage uses (D-13, ERR-4). Its views are `views.ts`; its creation is `creation.ts`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Approval from "../../Approval.js"
import type { UserMessage } from "../../Content.js"
import type { AgentId, ToolExecution } from "../../Execution.js"
import type * as IdGenerator from "../../IdGenerator.js"
import * as Json from "../../Json.js"
import type * as Registry from "../../ToolRegistry.js"
import { detailOf } from "../../ToolError.js"
import * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import type * as ToolTelemetry from "../../ToolTelemetry.js"
import type { CanonicalMarks } from "./output.js"
import type { Caller } from "../base/signals.js"

/** @internal */
export type Result = ToolResult.ToolResult
/** @internal */
export type Callback = (exec: ToolExecution, result: Result) => unknown

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
  /** The body's `ctx.idempotencyKey`: set by a durable batch before it dispatches the call. */
  idempotencyKey: string | undefined = undefined
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
