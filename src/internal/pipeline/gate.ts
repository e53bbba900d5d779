/**
 * Pre-execute, approval and guards (PRE-1…7, APPR-1…5, GUARD-1/2, D-1, D-2, D-7).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import type * as Approval from "../../Approval.js"
import type { JsonValue } from "../../Json.js"
import type { PreDecision } from "../../Policy.js"
import * as Presentation from "../../Presentation.js"
import { detailOfCause } from "../../ToolError.js"
import * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import { argumentsDigest } from "../schema/jsonText.js"
import { describe, failWith, final, frozen, observed, post, type Runtime, type State, succeedNow } from "./execution.js"
import { suspendUser } from "../base/promise.js"
import { waterfall } from "./waterfall.js"

const ALLOW: PreDecision = Object.freeze({ _tag: "Allow" }) as PreDecision
const CANCEL: PreDecision = Object.freeze({ _tag: "Cancel" }) as PreDecision
const ASK: PreDecision = Object.freeze({ _tag: "Ask" }) as PreDecision

/** A policy answer read once: the fresh decision, a malformed answer, or the throw of a read. */
type Read<A> =
  | { readonly _tag: "Valid"; readonly value: A }
  | { readonly _tag: "Malformed" }
  | { readonly _tag: "Threw"; readonly error: unknown }

const MALFORMED: Read<never> = { _tag: "Malformed" }
const valid = <A>(value: A): Read<A> => ({ _tag: "Valid", value })

/**
 * D-2 over a decision read once: each field is read exactly once into a fresh frozen decision,
 * so nothing validated can change before it is used. A read that throws is a pipeline error.
 */
const readPre = (decision: unknown): Read<PreDecision> => {
  if (decision === ALLOW) return valid(ALLOW)
  if (typeof decision !== "object" || decision === null) return MALFORMED
  try {
    const d = decision as { readonly _tag?: unknown; readonly reason?: unknown; readonly info?: unknown }
    switch (d._tag) {
      case "Allow":
        return valid(ALLOW)
      case "Cancel":
        return valid(CANCEL)
      case "Ask": {
        const reason = d.reason
        if (reason === undefined) return valid(ASK)
        return typeof reason === "string" ? valid(Object.freeze({ _tag: "Ask", reason }) as PreDecision) : MALFORMED
      }
      case "Deny": {
        const reason = d.reason
        if (typeof reason !== "string") return MALFORMED
        const info = d.info
        if (info === undefined) return valid(Object.freeze({ _tag: "Deny", reason }) as PreDecision)
        if (typeof info !== "object" || info === null) return MALFORMED
        const { code, name } = info as { readonly name?: unknown; readonly code?: unknown }
        if (typeof name !== "string" || typeof code !== "string") return MALFORMED
        return valid(Object.freeze({ _tag: "Deny", reason, info: Object.freeze({ name, code }) }) as PreDecision)
      }
      default:
        return MALFORMED
    }
  } catch (error) {
    return { _tag: "Threw", error }
  }
}

type Gate = { readonly _tag: "Allow" } | { readonly _tag: "Deny"; readonly reason: string } | {
  readonly _tag: "Prepared"
  readonly prepared: ToolRuntime.Prepared
}

const noop = () => {}

const denyGate = (reason: string): Gate => ({ _tag: "Deny", reason })

const UNAVAILABLE = "unavailable"
const CANCELLED = "cancelled"

/**
 * APPR-3/5 with D-14: the service runs on its own fiber; the caller's abort settles the wait as
 * `cancelled` at once, interrupting the service's fiber without waiting for it (it runs no tool
 * body; an uninterruptible service finishes in the background under the runtime's scope).
 */
const awaitApproval = (state: State, ask: Effect.Effect<unknown>): Effect.Effect<unknown> =>
  Effect.flatMap(Effect.forkDaemon(Effect.interruptible(ask)), (fiber) => {
    const background = state.runtime.background
    background.add(fiber)
    fiber.addObserver(() => background.delete(fiber))
    return Effect.async<unknown>((resume) => {
      let removeWaiter = noop
      const onExit = (exit: Exit.Exit<unknown>) => {
        removeWaiter()
        resume(Effect.succeed(Exit.isSuccess(exit) ? exit.value : UNAVAILABLE))
      }
      const abandon = () => {
        fiber.removeObserver(onExit)
        resume(Effect.zipRight(Effect.yieldNow(), Effect.sync(() => settleAbandoned(fiber))))
      }
      fiber.addObserver(onExit)
      if (fiber.unsafePoll() !== null) return
      if (state.caller.aborted) abandon()
      else removeWaiter = state.caller.onAbort(abandon)
    })
  })

/**
 * After the caller's abort: an answer the service gave in the same step as the abort (it
 * aborted, then answered) stands (APPR-5); otherwise its fiber is interrupted, not awaited.
 */
const settleAbandoned = (fiber: Fiber.RuntimeFiber<unknown>): unknown => {
  const exit = fiber.unsafePoll()
  if (exit !== null && Exit.isSuccess(exit)) return exit.value
  fiber.unsafeInterruptAsFork(FiberId.none)
  return CANCELLED
}

/** Runtimes that already warned about an `ask` without an approval service (APPR-1, issue 10 item 4). */
const warnedMissing = new WeakSet<Runtime>()

const MISSING_SERVICE = "a tool call asked for approval, but this runtime has no Approval service, so every ask is " +
  "denied: provide one to ToolRuntime.layer (ApprovalService.layer, an ApprovalLayers layer, or " +
  "Presets.layerApproval, which wires it in one call); this warning is logged once per runtime"

const missingService = (state: State, denial: Gate): Effect.Effect<Gate> => {
  if (warnedMissing.has(state.runtime)) return Effect.succeed(denial)
  warnedMissing.add(state.runtime)
  return Effect.as(
    Effect.annotateLogs(Effect.logWarning(MISSING_SERVICE), { toolName: state.name, missingLayer: "Approval" }),
    denial
  )
}

/**
 * APPR-3 with what a person needs to decide (issue 10 item 2): the frozen arguments, their
 * digest, the tool's visibility, description and call card (D-10: the presenter never throws).
 */
const makeRequest = (state: State, agent: string, reason: string | undefined): Approval.ApprovalRequest => {
  const { execution, name } = state
  const args = execution.arguments as JsonValue
  const definition = state.runtime.registry.unsafeView(agent).get(name)?.definition
  const call = Presentation.presentCall(definition, args) ?? Object.freeze(Presentation.genericCall(name, args))
  const description = definition === undefined ? undefined : definition.description
  const request: {
    -readonly [K in keyof Approval.ApprovalRequest]: Approval.ApprovalRequest[K]
  } = {
    agent,
    toolName: name,
    callId: execution.callId,
    signal: execution.signal,
    arguments: args,
    argumentsDigest: argumentsDigest(args),
    visible: definition !== undefined,
    call
  }
  if (reason !== undefined) request.reason = reason
  if (typeof description === "string") request.description = description
  return Object.freeze(request)
}

const askApproval = (state: State, reason: string | undefined): Effect.Effect<Gate> => {
  const { runtime, name } = state
  const approval = runtime.approval
  if (approval === undefined) {
    return missingService(state, denyGate(reason ?? `tool "${name}" requires approval (not yet supported)`))
  }
  const agent = state.agent
  if (agent === undefined) {
    return Effect.succeed(denyGate(`tool "${name}" requires approval, but the call has no agent to route it through`))
  }
  const request = makeRequest(state, agent, reason)
  const asked = suspendUser(() => approval.request(request)).pipe(
    Effect.catchAllCause(() => Effect.succeed<unknown>(UNAVAILABLE))
  )
  return Effect.map(observed(state, "approval", awaitApproval(state, asked)), (outcome): Gate => {
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

/** GUARD-1/2 as an observed stage when the call has a probe. */
const guardsThen = (state: State): Effect.Effect<ToolRuntime.Prepared> =>
  state.probe === undefined
    ? succeedNow(afterGate(state, runGuards(state)))
    : Effect.map(state.probe.stage("guards", Effect.sync(() => runGuards(state))), (gate) => afterGate(state, gate))

const afterGate = (state: State, outcome: Gate): ToolRuntime.Prepared => {
  if (outcome._tag === "Prepared") return outcome.prepared
  if (outcome._tag === "Deny") {
    state.denied = true
    return post(state, frozen(state.runtime, state.token, ToolResult.denial(outcome.reason)))
  }
  if (state.caller.aborted) return post(state, ToolResult.abortedBeforeDispatch())
  return { _tag: "Dispatch", handle: state }
}

const decide = (state: State, decision: PreDecision): Effect.Effect<ToolRuntime.Prepared> => {
  switch (decision._tag) {
    case "Deny":
      state.denied = true
      return succeedNow(
        post(state, frozen(state.runtime, state.token, ToolResult.denial(decision.reason, decision.info)))
      )
    case "Cancel":
      return succeedNow(post(state, ToolResult.abortedBeforeDispatch()))
    case "Ask":
      return Effect.flatMap(
        askApproval(state, decision.reason),
        (outcome) => outcome._tag === "Allow" ? guardsThen(state) : succeedNow(afterGate(state, outcome))
      )
    case "Allow":
      return guardsThen(state)
  }
}

/**
 * The gate of a call with no pre-execute hook and no probe: guards only, synchronously.
 *
 * @internal
 */
export const gateSync = (state: State): ToolRuntime.Prepared => afterGate(state, runGuards(state))

/** @internal */
export const gate = (state: State): Effect.Effect<ToolRuntime.Prepared> => {
  const hooks = state.runtime.registry.unsafeView(state.agent).preExecute
  if (hooks.length === 0) return decide(state, ALLOW)
  const execution = state.execution
  return Effect.flatMap(
    Effect.exit(observed(
      state,
      "pre-execute",
      waterfall("tools/pre-execute", hooks, Effect.succeed(ALLOW), (hook, next) => hook(execution, next))
    )),
    (exit) => {
      if (Exit.isFailure(exit)) return succeedNow(final(state, ToolResult.failure(detailOfCause(exit.cause))))
      const read = readPre(exit.value)
      switch (read._tag) {
        case "Valid":
          return decide(state, read.value)
        case "Threw":
          return succeedNow(final(state, failWith(read.error)))
        case "Malformed":
          return succeedNow(final(
            state,
            ToolResult.failure({ message: `tools/pre-execute returned a malformed decision: ${describe(exit.value)}` })
          ))
      }
    }
  )
}
