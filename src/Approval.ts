/**
 * The approval seam asked when a pre-execute policy answers `ask` (spec §9.1, APPR-1…5,
 * DECISIONS D-7). Absent service, absent agent and service failures never approve. The audited
 * approval service with answerers, policies and remembered grants is `ApprovalService`;
 * ready-made Layers of this seam are in `ApprovalLayers` (`effect-tool-runtime/layers`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { AgentId } from "./Execution.js"
import * as digest from "./internal/schema/jsonText.js"
import * as Json from "./Json.js"
import type { JsonValue } from "./Json.js"
import type { CallView } from "./Presentation.js"

/**
 * What the runtime asks (APPR-3), with what a person needs to decide. `signal` is the call's
 * signal. `arguments` is the call's frozen argument snapshot (the object policies saw);
 * `argumentsDigest` is the SHA-256 (lowercase hex) of its canonical JSON (see
 * {@link canonicalJson}). `visible` tells whether the calling agent can see the tool;
 * `description` is the visible tool's description (absent when it is not visible); `call` is the
 * tool's pending-call card (`presentCall`, or the generic card when the tool has no presenter,
 * the presenter throws or the tool is not visible). The request is never persisted: audit
 * records keep only the digest.
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
  readonly arguments: JsonValue
  readonly argumentsDigest: string
  readonly visible: boolean
  readonly description?: string
  readonly call: CallView
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
 * A service refused a request it cannot use: not an object with string `agent`, `toolName`,
 * `callId` and `argumentsDigest`, an optional string `reason` and a real `AbortSignal` as
 * `signal` (the runtime maps the failure to `unavailable`, D-7). Also exported as
 * `ApprovalLayers.ApprovalRequestError`.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalRequestError extends Schema.TaggedError<ApprovalRequestError>(
  "effect-tool-runtime/layers/ApprovalRequestError"
)("ApprovalRequestError", { message: Schema.String }) {}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = (request: Service["request"]): Service => ({ request })

/**
 * The canonical JSON text of a value: object keys sorted by plain `<` (UTF-16 code units), no
 * whitespace, strings and numbers as `JSON.stringify` writes them. `undefined` when the value is
 * not lossless JSON. Never throws.
 *
 * @since 0.1.0
 * @category constructors
 */
export const canonicalJson = (value: unknown): string | undefined => {
  const snap = Json.snapshot(value)
  return snap._tag === "Lossless" ? digest.canonicalJson(snap.value) : undefined
}

/**
 * The `argumentsDigest` of a request with these arguments: SHA-256 (lowercase hex) of their
 * {@link canonicalJson}; `undefined` when they are not lossless JSON. Never throws.
 *
 * @since 0.1.0
 * @category constructors
 */
export const argumentsDigest = (value: unknown): string | undefined => {
  const snap = Json.snapshot(value)
  return snap._tag === "Lossless" ? digest.argumentsDigest(snap.value) : undefined
}
