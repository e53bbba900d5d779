/**
 * Tool definitions: the raw definition the registry stores, `defineTool` over the author DSL,
 * a constructor from Effect Schema, and the Promise-body adapter.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Content } from "./Content.js"
import type { RunContext, ToolExecution } from "./Execution.js"
import type { JsonValue } from "./Json.js"
import type { JsonSchema } from "./JsonSchema.js"
import type { CallView, ResultProjection, ResultView } from "./Presentation.js"
import type { ToolResult } from "./ToolResult.js"
import { sanitizeThrown } from "./ToolError.js"
import { settlement, thenOf } from "./internal/base/promise.js"

/**
 * The output declaration: a subset schema for the canonical value and pure projections of the
 * value to model content and UI metadata (TYPES-2).
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOutput {
  readonly schema: JsonSchema
  readonly render: (args: JsonValue, value: JsonValue) => Content
  readonly presentationMeta?: ((args: JsonValue, value: JsonValue) => JsonValue) | undefined
  /**
   * Extra validation of the canonical (encoded JSON) value, run after the subset `schema`:
   * returns violation messages with root label `value` (empty means valid). Used when the
   * subset schema is a lossy projection of a richer schema (e.g. `fromSchema`).
   */
  readonly validate?: ((value: JsonValue) => ReadonlyArray<string>) | undefined
}

/**
 * What a durable batch does with a call whose body was running when its process stopped (an
 * intent journaled, no settle; D-22): `never` (the default) ends the call with an
 * `OUTCOME_UNKNOWN` error result and does not run the body again; `idempotent` runs it again
 * with the same `ctx.idempotencyKey`; `safe` runs it again.
 *
 * @since 0.1.0
 * @category models
 */
export type ReplayPolicy = "never" | "idempotent" | "safe"

/**
 * The replay policies, in order of permissiveness.
 *
 * @since 0.1.0
 * @category models
 */
export const replayPolicies: ReadonlyArray<ReplayPolicy> = ["never", "idempotent", "safe"]

/**
 * A registered tool (TYPES-2, DECISIONS D-1). The body is an Effect; `R` is what it needs and
 * is captured when the tool is registered.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolDefinition<R = never> {
  readonly name: string
  readonly description: string
  /** Raw JSON-Schema object sent to the model (a `type: "object"` root). */
  readonly parameters: JsonSchema
  readonly deferLoading?: boolean | undefined
  readonly output: ToolOutput
  readonly execute: (args: JsonValue, ctx: RunContext) => Effect.Effect<unknown, unknown, R>
  /** Cooperative budget enforced by the timeout policy layer (TIMEOUT-1). */
  readonly timeoutMs?: number | undefined
  readonly isConcurrencySafe?: ((args: JsonValue) => boolean) | undefined
  /** What a durable batch does with a body cut mid-run (D-22); absent means `never`. */
  readonly replay?: ReplayPolicy | undefined
  /** Last-mile, content-only transform; runs exactly once per outcome (FIN-3). */
  readonly finalizeContent?: ((exec: ToolExecution, result: ToolResult) => Content | undefined) | undefined
  /** Content projection of every post-result, before post-execute (D-1). */
  readonly projectContent?: ((exec: ToolExecution, result: ToolResult) => Content | undefined) | undefined
  readonly presentCall?: ((args: unknown) => CallView | undefined) | undefined
  readonly presentResult?: ((args: unknown, result: ResultProjection) => ResultView | undefined) | undefined
}

/**
 * Any definition, whatever its requirements.
 *
 * @since 0.1.0
 * @category models
 */
export type Any = ToolDefinition<unknown>

/**
 * Adapts a Promise-returning function into an Effect body step: `run` is called at once with an
 * `AbortSignal` that aborts (with an `AbortError` `DOMException`) when the fiber is interrupted,
 * and the step always waits until the promise settles (a started body is never abandoned,
 * D-14). If the promise rejects after an interruption, the rejection is kept as the step's
 * failure (PREC-1 row 10: a body's own error survives cancellation); if it resolves, the step
 * ends interrupted. A synchronous throw of `run` is a failure.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromPromise = <A>(run: (signal: AbortSignal) => PromiseLike<A>): Effect.Effect<A, unknown> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.suspend(() => {
      const controller = new AbortController()
      let returned: unknown
      try {
        returned = run(controller.signal)
      } catch (error) {
        return Effect.fail(sanitizeThrown(error))
      }
      const then = thenOf(returned)
      if (then === undefined) return Effect.succeed(returned as A)
      const settled = settlement(returned as PromiseLike<A>, then)
      return Effect.flatMap(Effect.exit(restore(settled)), (exit) => {
        if (Exit.isSuccess(exit) || !Cause.isInterruptedOnly(exit.cause)) return exit
        controller.abort(new DOMException("the fiber was interrupted", "AbortError"))
        return settled
      })
    })
  )

export {
  /**
   * Defines a tool over the author DSL (spec §5, DEF-1…9): compiles `parameters` and
   * `output.schema` once, types the body, renderer and presenters from the specs, and returns a
   * frozen {@link ToolDefinition} whose `execute` validates arguments strictly (failing with
   * `ToolArgsError` without calling the body, D-11) and adapts Promise bodies (awaited until they
   * settle, even when interrupted). Throws synchronously: a `ToolDefinitionError` for an empty
   * name, a bad `timeoutMs`, a missing or non-callable callback or options that cannot be read,
   * and a `JsonSchemaError` for a DSL error.
   *
   * @since 0.1.0
   * @category constructors
   */
  defineTool,
  /**
   * @since 0.1.0
   * @category models
   */
  type DefineToolOptions,
  /**
   * What a body may return: an Effect of the value, or a Promise of it.
   *
   * @since 0.1.0
   * @category models
   */
  type BodyResult,
  /**
   * The definition produced by {@link defineTool}: a {@link ToolDefinition} whose `execute` keeps
   * the value type, the body's error type (`unknown` for Promise bodies) plus `ToolArgsError`, and
   * the body's requirements.
   *
   * @since 0.1.0
   * @category models
   */
  type TypedTool,
  /**
   * DEF-8: compiles a parameter spec and returns the violations of `args` (root label `""`).
   * Throws `JsonSchemaError` for an invalid spec.
   *
   * @since 0.1.0
   * @category combinators
   */
  validateArgs
} from "./internal/definition/defineTool.js"

export {
  /**
   * Defines a tool from Effect Schemas: `parameters` is projected to JSON Schema, `output.schema`
   * to the subset plus a full `output.validate`; `execute` decodes the arguments, runs the body
   * and encodes the value. An own `__proto__` key stays an own data key through decoding and
   * encoding (JSON-4). Throws `ToolDefinitionError` for bad options and `JsonSchemaError` for
   * schemas that cannot be projected.
   *
   * @since 0.1.0
   * @category constructors
   */
  fromSchema,
  /**
   * @since 0.1.0
   * @category models
   */
  type FromSchemaOptions,
  /**
   * @since 0.1.0
   * @category models
   */
  type FromSchemaOutput
} from "./internal/definition/schemaTool/fromSchema.js"
