/**
 * Policy vocabulary: pre-execute decisions, post-execute decisions, guards, around-dispatch
 * wrappers and result observers (TYPES-6…8, TYPES-14, DECISIONS D-1/D-2).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type { Content, UserMessageInput } from "./Content.js"
import type { DispatchExecution, ToolExecution } from "./Execution.js"
import type { JsonValue } from "./Json.js"
import type { ErrorInfo } from "./ToolError.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * The pre-execute decision (D-1): allow, deny with a reason (and optional `info` copied into
 * `error.info`), cancel (an ABORTED_BEFORE_DISPATCH post-result), or ask a human.
 *
 * @since 0.1.0
 * @category models
 */
export type PreDecision = Data.TaggedEnum<{
  Allow: {}
  Deny: { readonly reason: string; readonly info?: ErrorInfo | undefined }
  Cancel: {}
  Ask: { readonly reason?: string | undefined }
}>

/**
 * @since 0.1.0
 * @category constructors
 */
export const PreDecision = Data.taggedEnum<PreDecision>()

/**
 * The post-execute decision: accept (optionally replacing content XOR value, plus contexts)
 * or block with feedback (ERR-3).
 *
 * @since 0.1.0
 * @category models
 */
export type PostDecision = Data.TaggedEnum<{
  Accept: {
    readonly content?: Content | undefined
    readonly value?: JsonValue | undefined
    readonly additionalContexts?: ReadonlyArray<UserMessageInput> | undefined
  }
  Block: {
    readonly feedback: Content
    readonly additionalContexts?: ReadonlyArray<UserMessageInput> | undefined
  }
}>

/**
 * @since 0.1.0
 * @category constructors
 */
export const PostDecision = Data.taggedEnum<PostDecision>()

/**
 * A pre-execute hook. `next` runs the rest of the chain below (re-entrant, D-8); returning
 * without running it short-circuits. A failure is a final-result pipeline error (PRE-7).
 *
 * @since 0.1.0
 * @category models
 */
export type PreExecuteHook<E = never, R = never> = (
  exec: ToolExecution,
  next: Effect.Effect<PreDecision>
) => Effect.Effect<PreDecision, E, R>

/**
 * An around-dispatch wrapper. `next` re-runs everything beneath (inner wrappers and body
 * dispatch) each time it is run. A wrapper may install a new `exec.signal` for the body.
 *
 * @since 0.1.0
 * @category models
 */
export type AroundHook<E = never, R = never> = (
  exec: DispatchExecution,
  next: Effect.Effect<ToolResult>
) => Effect.Effect<ToolResult, E, R>

/**
 * A post-execute hook over the (read-only) result.
 *
 * @since 0.1.0
 * @category models
 */
export type PostExecuteHook<E = never, R = never> = (
  exec: ToolExecution,
  result: ToolResult,
  next: Effect.Effect<PostDecision>
) => Effect.Effect<PostDecision, E, R>

/**
 * A monotonic guard: returns a denial reason, or `undefined` to stay silent. It can only deny.
 *
 * @since 0.1.0
 * @category models
 */
export type Guard = (exec: ToolExecution) => string | undefined

/**
 * An observer of final results. Failures are contained and never change the outcome.
 *
 * @since 0.1.0
 * @category models
 */
export type ResultObserver<E = never, R = never> = (
  exec: ToolExecution,
  result: ToolResult
) => Effect.Effect<void, E, R>

/**
 * `parallel` only when the classifier returned exactly `true` (SCHED-2).
 *
 * @since 0.1.0
 * @category models
 */
export type ExecutionMode = "parallel" | "exclusive"
