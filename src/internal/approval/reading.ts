/**
 * Reading what user code hands the approval service, each field once and never trusting a
 * getter: an answerer's answer (an outcome, `{ outcome, remember }`, `undefined` to delegate, or
 * a value outside the vocabulary), a request, a registration's target and the layer's options.
 *
 * @internal
 */
import type { ApprovalOutcome } from "../../Approval.js"
import * as Approval from "../../Approval.js"
import type * as ApprovalService from "../../ApprovalService.js"
import type { AgentId } from "../../Execution.js"
import type * as IdGenerator from "../../IdGenerator.js"
import { isAbortSignal } from "../base/signals.js"

/** @internal */
export interface ReadRemember {
  readonly scope: "agent" | "global"
  readonly match: "tool" | "arguments"
  readonly ttl: unknown
}

/**
 * An answer read once: delegate, an outcome (with what to remember), or a value outside the vocabulary.
 *
 * @internal
 */
export type ReadAnswer =
  | { readonly _tag: "Next" }
  | { readonly _tag: "Answer"; readonly outcome: ApprovalOutcome; readonly remember: ReadRemember | undefined }
  | { readonly _tag: "Rogue" }
  | { readonly _tag: "Suspend" }
  | { readonly _tag: "Expired" }

/**
 * What the durable answerer (D-22) answers when nobody has answered yet: the batch suspends until
 * the answer arrives, and this request decides nothing (no `approval/decided`). Not reachable from
 * user answerers: only this library holds the object.
 *
 * @internal
 */
export const SUSPEND_ANSWER: object = Object.freeze({ _tag: "effect-tool-runtime/approval/suspend" })

/** What the durable answerer answers when the request expired unanswered: `unavailable`, by `expiry`. @internal */
export const EXPIRED_ANSWER: object = Object.freeze({ _tag: "effect-tool-runtime/approval/expired" })

const NEXT: ReadAnswer = { _tag: "Next" }

/** @internal */
export const ROGUE: ReadAnswer = { _tag: "Rogue" }

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const readRemember = (remember: unknown): ReadRemember | undefined | "rogue" => {
  if (remember === undefined) return undefined
  if (!isRecord(remember)) return "rogue"
  const scope = remember.scope
  const match = remember.match
  const ttl = remember.ttl
  if (scope !== "agent" && scope !== "global") return "rogue"
  if (match !== "tool" && match !== "arguments") return "rogue"
  return { scope, match, ttl }
}

/**
 * Reads an answerer's answer: each field once; a read that throws is a value outside the vocabulary.
 *
 * @internal
 */
export const readAnswer = (answer: unknown): ReadAnswer => {
  if (answer === undefined) return NEXT
  if (Approval.isOutcome(answer)) return { _tag: "Answer", outcome: answer, remember: undefined }
  if (answer === SUSPEND_ANSWER) return { _tag: "Suspend" }
  if (answer === EXPIRED_ANSWER) return { _tag: "Expired" }
  try {
    if (!isRecord(answer)) return ROGUE
    const outcome = answer.outcome
    const remember = answer.remember
    if (!Approval.isOutcome(outcome)) return ROGUE
    const read = readRemember(remember)
    return read === "rogue" ? ROGUE : { _tag: "Answer", outcome, remember: read }
  } catch {
    return ROGUE
  }
}

/** @internal */
export interface ReadRequest {
  readonly agent: AgentId
  readonly toolName: string
  readonly callId: string
  readonly reason: string | undefined
  readonly argumentsDigest: string
  readonly signal: AbortSignal
}

/** @internal */
export const INVALID_REQUEST = "an approval request needs string `agent`, `toolName`, `callId` and `argumentsDigest`, " +
  "an optional string `reason` and a real AbortSignal as `signal`"

/** @internal */
export const readRequest = (request: unknown): ReadRequest | undefined => {
  try {
    if (typeof request !== "object" || request === null) return undefined
    const r = request as Record<string, unknown>
    const agent = r.agent
    const toolName = r.toolName
    const callId = r.callId
    const reason = r.reason
    const argumentsDigest = r.argumentsDigest
    const signal = r.signal
    if (typeof agent !== "string" || typeof toolName !== "string" || typeof callId !== "string") return undefined
    if (typeof argumentsDigest !== "string" || (reason !== undefined && typeof reason !== "string")) return undefined
    if (!isAbortSignal(signal)) return undefined
    return { agent, toolName, callId, reason, argumentsDigest, signal }
  } catch {
    return undefined
  }
}

/** @internal */
export const readTarget = (
  label: string,
  options: unknown
): { readonly agent: AgentId | undefined; readonly prepend: boolean } | string => {
  if (options === undefined) return { agent: undefined, prepend: false }
  try {
    if (typeof options !== "object" || options === null) return `${label} options must be an object`
    const { agent, prepend } = options as { readonly agent?: unknown; readonly prepend?: unknown }
    if (agent !== undefined && typeof agent !== "string") return `${label} option "agent" must be a string`
    if (prepend !== undefined && typeof prepend !== "boolean") return `${label} option "prepend" must be a boolean`
    return { agent, prepend: prepend === true }
  } catch {
    return `${label} options could not be read`
  }
}

const randomIds: IdGenerator.Service = { next: () => globalThis.crypto.randomUUID() }

/** @internal */
export const readOptions = (
  options: unknown
): { readonly policy: ApprovalService.Policy; readonly ids: IdGenerator.Service } | string => {
  if (options === undefined) return { policy: "ask", ids: randomIds }
  try {
    if (typeof options !== "object" || options === null) return "ApprovalService.layer options must be an object"
    const { ids, policy } = options as { readonly policy?: unknown; readonly ids?: unknown }
    if (policy !== undefined && policy !== "ask" && policy !== "never") {
      return "ApprovalService.layer option \"policy\" must be \"ask\" or \"never\""
    }
    if (ids === undefined) return { policy: policy ?? "ask", ids: randomIds }
    const next = typeof ids === "object" && ids !== null ? (ids as { readonly next?: unknown }).next : undefined
    if (typeof next !== "function") return "ApprovalService.layer option \"ids\" must be an IdGenerator service"
    return {
      policy: policy ?? "ask",
      ids: {
        next: () => {
          let id: unknown
          try {
            id = next.call(ids)
          } catch {
            return randomIds.next()
          }
          return typeof id === "string" ? id : randomIds.next()
        }
      }
    }
  } catch {
    return "ApprovalService.layer options could not be read"
  }
}
