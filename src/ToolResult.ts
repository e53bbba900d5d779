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
 * The code of an error result, if it has one.
 *
 * @since 0.1.0
 * @category getters
 */
export const codeOf = (result: ToolResult): string | undefined => result.isError ? result.error.info?.code : undefined
