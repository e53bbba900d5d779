/**
 * `@effect/ai` tools in: registers the tools of an `@effect/ai` `Toolkit`, with the handlers
 * of `toolkit.toLayer(...)`, as runtime tools, so they run under the runtime's policy,
 * approval, ordering and log.
 *
 * - Parameters are decoded with the tool's parameters schema; the model sees the JSON Schema
 *   `@effect/ai` would send. Arguments that do not decode are an `INVALID_ARGS` result and the
 *   handler does not run.
 * - The success value is encoded with the success schema and becomes the canonical JSON value
 *   (a `void` success is `null`); the content is its JSON text unless a renderer is given.
 * - A failure of the handler's error channel is validated against the failure schema and becomes
 *   an error result whose code is the failure's `_tag` (or `TOOL_FAILURE`); a failure outside
 *   the schema is `INVALID_TOOL_OUTPUT`. Defects stay defects.
 * - Tools annotated `Tool.Readonly` are parallel-safe.
 *
 * Requires the optional peer `@effect/ai`.
 *
 * @since 0.1.0
 */
import type * as AiTool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Content } from "./Content.js"
import type { AgentId } from "./Execution.js"
import * as internal from "./internal/ai/toolkit.js"
import * as failure from "./internal/ai/toolkitFailure.js"
import type { JsonValue } from "./Json.js"
import type { ToolDefinition } from "./Tool.js"
import type { JsonSchemaError, ToolDefinitionError } from "./ToolError.js"
import type { ToolRegistrationError, ToolRegistry } from "./ToolRegistry.js"

/**
 * The code of a handler failure without a string `_tag`.
 *
 * @since 0.1.0
 * @category constants
 */
export const FAILURE_CODE: "TOOL_FAILURE" = failure.FAILURE_CODE

/**
 * A handler's typed failure as the model sees it: `error.info` is
 * `{ name: "AiToolFailure", code }` with `code` the failure's `_tag` (or {@link FAILURE_CODE});
 * the message is the failure itself when it is a string, else its `message` when that is a
 * non-empty string, else the JSON text of the failure encoded with the failure schema, else
 * `tool "<name>" failed`.
 *
 * @since 0.1.0
 * @category errors
 */
export const AiToolFailure: typeof failure.AiToolFailure = failure.AiToolFailure

/**
 * @since 0.1.0
 * @category errors
 */
export type AiToolFailure = failure.AiToolFailure

/**
 * Per-tool overrides.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOptions<T extends AiTool.Any> {
  /**
   * Whether calls may overlap other parallel-safe calls: a flag, or a classifier of the
   * decoded parameters (arguments that do not decode are exclusive). Default: the tool's
   * `Tool.Readonly` annotation.
   */
  readonly concurrencySafe?: boolean | ((params: AiTool.Parameters<T>) => boolean) | undefined
  /** Model content of a success, from the decoded parameters and success value. */
  readonly render?: ((params: AiTool.Parameters<T>, success: AiTool.Success<T>) => Content) | undefined
  /** A cooperative budget for the timeout policy, in milliseconds. */
  readonly timeoutMs?: number | undefined
}

/**
 * Options of {@link register}, {@link layer} and {@link definitions}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<Tools extends Record<string, AiTool.Any>> {
  /** Register for this agent only (default: globally). */
  readonly agent?: AgentId | undefined
  /** Prepended to every tool name. */
  readonly prefix?: string | undefined
  /** Model content of a success from its canonical JSON value. Default: the value's JSON text. */
  readonly render?: ((value: JsonValue, name: string) => Content) | undefined
  /** Overrides by tool name. */
  readonly tools?: { readonly [Name in keyof Tools]?: ToolOptions<Tools[Name]> | undefined } | undefined
}

/**
 * What registering a toolkit needs: the handlers of every tool and the services the tools
 * declare.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements<Tools extends Record<string, AiTool.Any>> =
  | AiTool.HandlersFor<Tools>
  | AiTool.Requirements<Tools[keyof Tools]>

/**
 * Why a toolkit could not be registered: a tool or option that cannot be used (provider-defined
 * tool, missing handler, bad option), a schema that cannot be projected, or a refusal of the
 * registry (e.g. a duplicate name).
 *
 * @since 0.1.0
 * @category errors
 */
export type RegisterError = ToolDefinitionError | JsonSchemaError | ToolRegistrationError

/**
 * The runtime definitions of every tool of `toolkit`, without registering them (e.g. for
 * `Presets.layer({ tools })`). Needs the handlers in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const definitions = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>,
  options?: Omit<Options<Tools>, "agent"> | undefined
): Effect.Effect<
  ReadonlyArray<ToolDefinition<AiTool.Requirements<Tools[keyof Tools]>>>,
  ToolDefinitionError | JsonSchemaError,
  AiTool.HandlersFor<Tools>
> => internal.definitions(toolkit, options) as never

/**
 * Registers every tool of `toolkit` (globally, or for `options.agent`) for the lifetime of the
 * current scope. All or nothing: if one tool is refused, none stays registered.
 *
 * @since 0.1.0
 * @category constructors
 */
export const register = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>,
  options?: Options<Tools> | undefined
): Effect.Effect<void, RegisterError, ToolRegistry | Scope.Scope | Requirements<Tools>> =>
  internal.register(toolkit, options) as never

/**
 * {@link register} as a Layer: the tools stay registered while the Layer is alive.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>,
  options?: Options<Tools> | undefined
): Layer.Layer<never, RegisterError, ToolRegistry | Requirements<Tools>> =>
  Layer.scopedDiscard(register(toolkit, options))
