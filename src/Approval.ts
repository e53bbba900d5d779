/**
 * The approval service asked when a pre-execute policy answers `ask` (spec §9.1, APPR-1…6,
 * DECISIONS D-7). Absent service, absent agent and service failures never approve. Ready-made
 * Layers of this service are in `ApprovalLayers` (`effect-tool-runtime/layers`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { AgentId } from "./Execution.js"

/**
 * What the runtime asks (APPR-3). `signal` is the execution's caller signal.
 *
 * @since 0.1.0
 * @category models
 */
export interface ApprovalRequest {
  readonly agent: AgentId
  readonly toolName: string
  readonly callId: string
  readonly reason?: string
  readonly signal: AbortSignal
}

/**
 * The four outcomes (APPR-4).
 *
 * @since 0.1.0
 * @category models
 */
export type ApprovalOutcome = "allowed-once" | "rejected" | "cancelled" | "unavailable"

/**
 * @since 0.1.0
 * @category models
 */
export const outcomes: ReadonlyArray<ApprovalOutcome> = ["allowed-once", "rejected", "cancelled", "unavailable"]

/**
 * @since 0.1.0
 * @category guards
 */
export const isOutcome = (u: unknown): u is ApprovalOutcome =>
  u === "allowed-once" || u === "rejected" || u === "cancelled" || u === "unavailable"

/**
 * The approval service. A failure (error or defect) of `request` becomes `unavailable` (D-7);
 * interrupting the request (the caller aborted) becomes `cancelled` (APPR-5).
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly request: (request: ApprovalRequest) => Effect.Effect<ApprovalOutcome, unknown>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class Approval extends Context.Tag("effect-tool-runtime/Approval")<Approval, Service>() {}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = (request: Service["request"]): Service => ({ request })
