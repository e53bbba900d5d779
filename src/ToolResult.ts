/**
 * The result union of one tool call (TYPES-5) and the fixed error results (ERR-2…4).
 *
 * @since 0.1.0
 */
import type { Content, UserMessage } from "./Content.js"
import type { JsonValue } from "./Json.js"
import { Codes, type ErrorDetail } from "./ToolError.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolSuccess {
  readonly isError: false
  readonly value: JsonValue
  readonly content: Content
  readonly meta?: JsonValue
  readonly additionalContexts?: ReadonlyArray<UserMessage>
  readonly concludesTurn?: true
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolFailure {
  readonly isError: true
  readonly error: ErrorDetail
  readonly content: Content
  readonly meta?: JsonValue
  readonly additionalContexts?: ReadonlyArray<UserMessage>
}

/**
 * One call's result. Call identity is never inside the result.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolResult = ToolSuccess | ToolFailure

/**
 * `Error: <message>` content for an error detail.
 *
 * @since 0.1.0
 * @category constructors
 */
export const errorContent = (message: string): Content => [{ type: "text", text: `Error: ${message}` }]

/**
 * An error result whose content is `Error: <message>` (ERR-1/2).
 *
 * @since 0.1.0
 * @category constructors
 */
export const failure = (error: ErrorDetail): ToolFailure => ({
  isError: true,
  error,
  content: errorContent(error.message)
})

/**
 * ERR-2: a denial.
 *
 * @since 0.1.0
 * @category constructors
 */
export const denial = (reason: string, info?: ErrorDetail["info"]): ToolFailure =>
  failure(info === undefined ? { message: reason } : { message: reason, info })

/**
 * ERR-4: `ABORTED`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const aborted = (): ToolFailure =>
  failure({ message: "tool call aborted", info: { name: "AbortError", code: Codes.ABORTED } })

/**
 * ERR-4: `ABORTED_BEFORE_DISPATCH`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const abortedBeforeDispatch = (): ToolFailure =>
  failure({
    message: "tool call aborted before dispatch",
    info: { name: "AbortError", code: Codes.ABORTED_BEFORE_DISPATCH }
  })

/**
 * TIMEOUT-4: `TOOL_TIMEOUT` after `timeoutMs`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const timedOut = (timeoutMs: number): ToolFailure =>
  failure({
    message: `tool call timed out after ${timeoutMs}ms`,
    info: { name: "ToolTimeoutError", code: Codes.TOOL_TIMEOUT }
  })

/**
 * A durable batch's call whose body was running when its process stopped and that is not run
 * again (D-22, replay `never`, or the batch was stopped): `detail` says why when a journal row
 * could not be read.
 *
 * @since 0.1.0
 * @category constructors
 */
export const outcomeUnknown = (detail?: string): ToolFailure =>
  failure({
    message: detail === undefined
      ? OUTCOME_UNKNOWN_MESSAGE
      : `${OUTCOME_UNKNOWN_MESSAGE} (${detail})`,
    info: { name: "OutcomeUnknownError", code: Codes.OUTCOME_UNKNOWN }
  })

/**
 * The message of {@link outcomeUnknown}.
 *
 * @since 0.1.0
 * @category constants
 */
export const OUTCOME_UNKNOWN_MESSAGE =
  "the outcome of this tool call is unknown: it was interrupted while it ran, so its action may or may not " +
  "have taken effect, and it was not run again"

/**
 * The code of an error result, if it has one.
 *
 * @since 0.1.0
 * @category getters
 */
export const codeOf = (result: ToolResult): string | undefined => result.isError ? result.error.info?.code : undefined
