/**
 * Pre-execute, approval and guards (PRE-1…7, APPR-1…5, GUARD-1/2, D-1, D-2, D-7).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Approval from "../Approval.js"
import type { PreDecision } from "../Policy.js"
import { detailOfCause } from "../ToolError.js"
import * as ToolResult from "../ToolResult.js"
import type * as ToolRuntime from "../ToolRuntime.js"
import { describe, failWith, final, frozen, post, type State, succeedNow } from "./execution.js"
import { suspendUser } from "./promise.js"
import { awaitCaller } from "./signals.js"
import { waterfall } from "./waterfall.js"

const ALLOW: PreDecision = Object.freeze({ _tag: "Allow" }) as PreDecision

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

type Gate = { readonly _tag: "Allow" } | { readonly _tag: "Deny"; readonly reason: string } | {
  readonly _tag: "Prepared"
  readonly prepared: ToolRuntime.Prepared
}

const denyGate = (reason: string): Gate => ({ _tag: "Deny", reason })

const askApproval = (state: State, reason: string | undefined): Effect.Effect<Gate> => {
  const { runtime, name } = state
  const approval = runtime.approval
  if (approval === undefined) {
    return Effect.succeed(denyGate(reason ?? `tool "${name}" requires approval (not yet supported)`))
  }
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
      return succeedNow(
        post(state, frozen(state.runtime, state.token, ToolResult.denial(decision.reason, decision.info)))
      )
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

/** @internal */
export const gate = (state: State): Effect.Effect<ToolRuntime.Prepared> => {
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
