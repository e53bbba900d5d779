/**
 * The audited approval service (spec APPR-6, DECISIONS D-7/D-14/D-18): a Layer that provides
 * the `Approval` seam and decides every request once, auditing it in the durable
 * `ToolCallLog`.
 *
 * **Deciding.** In this order: the call's signal already aborted → `cancelled` (no one is
 * asked, `by: "abort"`); the effective policy is `never` → `rejected` (`by: "policy"`); a live
 * remembered grant matches (when an `ApprovalGrants` service is provided) → `allowed-once`
 * (`by: "grant:<id>"`); otherwise the answerers are asked in order — the global ones, then those
 * of the calling agent's chain, farthest ancestor first and the agent itself last, each in
 * registration order — and the first that answers wins. An answerer delegates by answering
 * `undefined`; when none answers the outcome is `unavailable` (`by: "policy"`). An answerer that
 * fails, dies, throws or answers anything outside the vocabulary decides `unavailable`
 * (`by: "error"`), and so does one interrupted by the layer closing. The answer races the call's
 * signal: an abort decides `cancelled` at once (`by: "abort"`) and the answerer still running is
 * interrupted. A Promise answerer cannot be stopped: what it settles with later — an answer, or a
 * rejection counted as `unavailable` (`by: "error"`) — is discarded and audited as
 * `approval/late` (a later `undefined` is not). An Effect answerer cannot answer late: its
 * interruption wins, even over an uninterruptible region.
 *
 * **Auditing.** `approval/asked` `{ id, toolName, callId, agent, reason?, argumentsDigest }`
 * before deciding, then exactly one `approval/decided` `{ id, outcome, by, remembered? }`. Only
 * the digest of the arguments is written, never their values. An audit that cannot be written
 * never approves (D-7, D-22): when the `approval/asked` append fails (or dies) no answerer is
 * asked and the request decides `unavailable` (`by: "error"`); when the `approval/decided` append
 * fails the request resolves `unavailable` and a grant the answer asked to remember is revoked.
 * Either way one warning is logged.
 *
 * **Remembering.** An `allowed-once` answer may carry `remember`; with an `ApprovalGrants`
 * service the grant is stored (agent scope = the calling agent; match `arguments` = this
 * request's digest) and its id is written as `remembered`. Without that service, or when storing
 * fails, the answer counts once and a warning is logged. A grant only answers an `ask`: a deny of
 * a pre-execute policy and a guard still win.
 *
 * **Policies.** `ask` or `never`, set per agent or globally with scoped contributions (the most
 * recent live one of a scope wins); the calling agent's own setting, then its ancestors' nearest
 * first, then the global setting, then the layer's default.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Approval, ApprovalOutcome, ApprovalRequest } from "./Approval.js"
import type { AgentId } from "./Execution.js"
import type * as IdGenerator from "./IdGenerator.js"
import * as internal from "./internal/approval/service.js"
import type { ToolCallLog } from "./ToolCallLog.js"
import type { ToolRegistry } from "./ToolRegistry.js"

/**
 * Whether an `ask` is put to the answerers (`ask`) or rejected without asking anyone (`never`).
 *
 * @since 0.1.0
 * @category models
 */
export type Policy = "ask" | "never"

/**
 * @since 0.1.0
 * @category models
 */
export const policies: ReadonlyArray<Policy> = ["ask", "never"]

/**
 * "Always allow": `scope` `agent` (the calling agent and the agents below it) or `global`;
 * `match` `tool` (any arguments) or `arguments` (only these arguments, by digest); an optional
 * time to live.
 *
 * @since 0.1.0
 * @category models
 */
export interface Remember {
  readonly scope: "agent" | "global"
  readonly match: "tool" | "arguments"
  readonly ttl?: Duration.DurationInput | undefined
}

/**
 * An outcome with an optional {@link Remember} (honoured for `allowed-once` only).
 *
 * @since 0.1.0
 * @category models
 */
export interface RememberedAnswer {
  readonly outcome: ApprovalOutcome
  readonly remember?: Remember | undefined
}

/**
 * What an answerer answers.
 *
 * @since 0.1.0
 * @category models
 */
export type Answer = ApprovalOutcome | RememberedAnswer

/**
 * Answers a request, or delegates to the next answerer by answering `undefined` — as an Effect
 * (interrupted when the call aborts) or a Promise (for callers without Effect; watch
 * `request.signal`). It receives the runtime's request object itself (frozen). Its failures never
 * approve (`unavailable`).
 *
 * @since 0.1.0
 * @category models
 */
export type Answerer<E = never, R = never> = (
  request: ApprovalRequest
) => Effect.Effect<Answer | undefined, E, R> | PromiseLike<Answer | undefined>

/**
 * @since 0.1.0
 * @category models
 */
export interface AnswerOptions {
  /** The agent whose requests (and whose descendants' requests) it answers; absent = every request. */
  readonly agent?: AgentId | undefined
  /** Put it in front of the answerers of its scope already registered. */
  readonly prepend?: boolean | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PolicyOptions {
  /** The agent (and the agents below it) the policy is for; absent = the global setting. */
  readonly agent?: AgentId | undefined
}

/**
 * The service's management side. Contributions are scoped: closing the scope removes exactly
 * that contribution. Options that cannot be used (an agent that is not a string, a policy
 * outside `ask | never`, an answerer that is not a function) are a defect
 * (`Cause.IllegalArgumentException`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Adds an answerer for the scope's lifetime; the services it needs are captured now. */
  readonly answer: <E, R>(answerer: Answerer<E, R>, options?: AnswerOptions) => Effect.Effect<void, never, Scope.Scope | R>
  /** Sets a policy for the scope's lifetime. */
  readonly setPolicy: (policy: Policy, options?: PolicyOptions) => Effect.Effect<void, never, Scope.Scope>
  /** The effective policy for a call of `agent`. */
  readonly policy: (agent: AgentId) => Effect.Effect<Policy>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ApprovalService extends Context.Tag("effect-tool-runtime/ApprovalService")<ApprovalService, Service>() {}

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The deployment default policy. Default: `ask`. */
  readonly policy?: Policy | undefined
  /** Approval ids (they pair the audit records). Default: random UUIDs. */
  readonly ids?: IdGenerator.Service | undefined
}

/**
 * The service as a Layer: provides `Approval` (give it to `ToolRuntime.layer`) and
 * {@link ApprovalService}. Needs the `ToolCallLog` it audits to and the `ToolRegistry` whose agent
 * chains scope answerers and policies; uses `ApprovalGrants` when one is provided. Closing the
 * layer interrupts the answerers still running. A bad option is a defect raised at build.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Approval | ApprovalService, never, ToolCallLog | ToolRegistry> =>
  internal.layer(ApprovalService, options)
