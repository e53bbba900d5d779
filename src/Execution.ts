/**
 * One execution's identity and its three views (TYPES-4, DECISIONS D-4).
 *
 * @since 0.1.0
 */
import type { UserMessageInput } from "./Content.js"
import type { JsonValue } from "./Json.js"

/**
 * An opaque, unique per-execution value (a fresh `Symbol`); equality only, never serialized.
 *
 * @since 0.1.0
 * @category models
 */
export type ExecutionToken = symbol

/**
 * An agent identity (a scope key).
 *
 * @since 0.1.0
 * @category models
 */
export type AgentId = string

/**
 * What a caller hands to the runtime for one tool call (TYPES-3). `signal` is optional for
 * Effect callers: interrupting the calling fiber is the same event as aborting it (D-14).
 *
 * @since 0.1.0
 * @category models
 */
export interface ExecuteInput {
  readonly callId: string
  readonly rootCallId?: string | undefined
  readonly name: string
  readonly arguments: unknown
  readonly agent?: AgentId | undefined
  readonly parent?: ExecutionToken | undefined
  readonly signal?: AbortSignal | undefined
}

/**
 * The read-only execution seen by pre-execute hooks, guards, post-execute hooks, finalizers
 * and observers. `agent` and `parent` are absent when not supplied. `arguments` is the frozen
 * snapshot (`undefined` only after an argument failure).
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolExecution {
  readonly token: ExecutionToken
  readonly callId: string
  readonly rootCallId: string
  readonly name: string
  readonly agent?: AgentId
  readonly parent?: ExecutionToken
  readonly arguments: JsonValue | undefined
  /** The caller signal (or, inside dispatch, whatever a wrapper installed). */
  readonly signal: AbortSignal
}

/**
 * The around-dispatch view: identical, except a wrapper may install another `signal` for the
 * body (it is fused with the caller's; the caller's cancellation cannot be removed).
 *
 * @since 0.1.0
 * @category models
 */
export interface DispatchExecution extends Omit<ToolExecution, "signal"> {
  signal: AbortSignal
}

/**
 * The body's view: adds deferred context and turn conclusion (only the body has them, D-4).
 *
 * @since 0.1.0
 * @category models
 */
export interface RunContext extends ToolExecution {
  /**
   * Defers a user message to be appended after this call's result. The message is
   * snapshotted and validated now (D-13): an invalid message throws `InvalidContextError`.
   */
  readonly deferContext: (message: UserMessageInput) => void
  /** Marks this execution as concluding the turn if it ends as a success (OUT-7). */
  readonly concludeTurn: () => void
  /**
   * Inside a durable batch (D-22): a key stable for this call across runs of its batch (session,
   * batch and call), the same when a cut body runs again. Pass it to an external API so that an
   * action is taken once. Absent outside durable batches.
   */
  readonly idempotencyKey?: string | undefined
}
