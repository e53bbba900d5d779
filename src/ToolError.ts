/**
 * The error vocabulary of the pipeline (spec §7): coded errors with literal `name`/`code`
 * strings, and the ERR-1 normalization of any thrown value or failure into an error detail.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * Brand carried by every coded error: `ERR-1` copies `{ name, code }` into `error.info` only
 * for values carrying it.
 *
 * @since 0.1.0
 * @category symbols
 */
export const CodedErrorTypeId: unique symbol = Symbol.for("effect-tool-runtime/CodedError")

/**
 * @since 0.1.0
 * @category symbols
 */
export type CodedErrorTypeId = typeof CodedErrorTypeId

/**
 * A coded error: its `name` and `code` reach the model-facing `error.info`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CodedError extends Error {
  readonly [CodedErrorTypeId]: CodedErrorTypeId
  readonly code: string
}

/**
 * `{ name, code }` of a coded error, as carried by an error result.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorInfo {
  readonly name: string
  readonly code: string
}

/**
 * The `error` field of an error result.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorDetail {
  readonly message: string
  readonly info?: ErrorInfo
}

/**
 * @since 0.1.0
 * @category guards
 */
export const isCodedError = (u: unknown): u is CodedError =>
  typeof u === "object" && u !== null && (u as { [CodedErrorTypeId]?: unknown })[CodedErrorTypeId] === CodedErrorTypeId

/**
 * The generic coded error a tool body or a policy fails with to report a stable `code`
 * (the reference's `HarnessError`).
 *
 * @since 0.1.0
 * @category errors
 */
export class HarnessError extends Schema.TaggedError<HarnessError>("effect-tool-runtime/HarnessError")(
  "HarnessError",
  { message: Schema.String, code: Schema.String }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
}

/**
 * `INVALID_ARGS`: arguments failed the typed parameter schema (DEF-3).
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolArgsError extends Schema.TaggedError<ToolArgsError>("effect-tool-runtime/ToolArgsError")(
  "ToolArgsError",
  { violations: Schema.Array(Schema.String) }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  readonly code = "INVALID_ARGS" as const
  override get message(): string {
    return `invalid arguments: ${this.violations.join("; ")}`
  }
}

/**
 * `UNKNOWN_TOOL`: the name is not visible, or (with a `route`) a Code Mode collapse (CREATE-6).
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolNotFoundError extends Schema.TaggedError<ToolNotFoundError>("effect-tool-runtime/ToolNotFoundError")(
  "ToolNotFoundError",
  { toolName: Schema.String, route: Schema.optional(Schema.String) }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  readonly code = "UNKNOWN_TOOL" as const
  override get message(): string {
    return this.route === undefined
      ? `unknown tool "${this.toolName}"`
      : `unknown tool "${this.toolName}": ${this.route}`
  }
}

/**
 * `INVALID_TOOL_OUTPUT`: a canonical value failed snapshot, schema, render or meta (OUT-2…5).
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolOutputError extends Schema.TaggedError<ToolOutputError>("effect-tool-runtime/ToolOutputError")(
  "ToolOutputError",
  { toolName: Schema.String, violations: Schema.Array(Schema.String) }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  readonly code = "INVALID_TOOL_OUTPUT" as const
  override get message(): string {
    return `tool "${this.toolName}" returned invalid output: ${this.violations.join("; ")}`
  }
}

/**
 * `UNSUPPORTED_SCHEMA`: a schema or DSL node outside the supported subset (SCHEMA-12, DSL-5).
 *
 * @since 0.1.0
 * @category errors
 */
export class JsonSchemaError extends Schema.TaggedError<JsonSchemaError>("effect-tool-runtime/JsonSchemaError")(
  "JsonSchemaError",
  { violations: Schema.Array(Schema.String) }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  readonly code = "UNSUPPORTED_SCHEMA" as const
  override get message(): string {
    return `unsupported JSON schema: ${this.violations.join("; ")}`
  }
}

/**
 * `INVALID_PARENT`: a `parent` that is not the token of a running execution of this runtime
 * (DECISIONS D-5).
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidParentError extends Schema.TaggedError<InvalidParentError>(
  "effect-tool-runtime/InvalidParentError"
)(
  "InvalidParentError",
  { toolName: Schema.String }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  readonly code = "INVALID_PARENT" as const
  override get message(): string {
    return `tool "${this.toolName}" was called with an invalid parent: ` +
      "a parent must be the token of a running execution of this runtime"
  }
}

/**
 * `CODE_RUN_FAILED`: a `run_code` program or its runtime failed (PTC-14).
 *
 * @since 0.1.0
 * @category errors
 */
export class CodeRunFailedError extends Schema.TaggedError<CodeRunFailedError>(
  "effect-tool-runtime/CodeRunFailedError"
)(
  "CodeRunFailedError",
  { kind: Schema.String, detail: Schema.String, logs: Schema.Array(Schema.String) }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  readonly code = "CODE_RUN_FAILED" as const
  override get message(): string {
    const base = `code run failed (${this.kind}): ${this.detail}`
    return this.logs.length === 0 ? base : `${base}\nCaptured output:\n${this.logs.join("\n")}`
  }
}

/**
 * Error codes produced by the pipeline itself.
 *
 * @since 0.1.0
 * @category constants
 */
export const Codes = {
  ABORTED: "ABORTED",
  ABORTED_BEFORE_DISPATCH: "ABORTED_BEFORE_DISPATCH",
  TOOL_TIMEOUT: "TOOL_TIMEOUT",
  INVALID_ARGS: "INVALID_ARGS",
  UNKNOWN_TOOL: "UNKNOWN_TOOL",
  INVALID_TOOL_OUTPUT: "INVALID_TOOL_OUTPUT",
  UNSUPPORTED_SCHEMA: "UNSUPPORTED_SCHEMA",
  INVALID_PARENT: "INVALID_PARENT",
  CODE_RUN_FAILED: "CODE_RUN_FAILED",
  OUTCOME_UNKNOWN: "OUTCOME_UNKNOWN",
  CODE_REPLAY_DIVERGED: "CODE_REPLAY_DIVERGED"
} as const

const UNPRINTABLE = "<unprintable thrown value>"

/**
 * A thrown value that could not be handed to Effect as is (a hostile proxy): its ERR-1 detail
 * was computed when it was caught.
 *
 * @since 0.1.0
 * @category models
 */
export class NormalizedThrow {
  constructor(readonly detail: ErrorDetail) {}
}

const isNormalized = (thrown: unknown): thrown is NormalizedThrow => {
  try {
    return thrown instanceof NormalizedThrow
  } catch {
    return false
  }
}

/**
 * Makes a thrown value safe to pass to `Effect.fail` / `Effect.die`: values whose inspection
 * throws (hostile proxies) are replaced by a {@link NormalizedThrow} carrying their detail.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sanitizeThrown = (thrown: unknown): unknown => {
  if ((typeof thrown !== "object" && typeof thrown !== "function") || thrown === null) return thrown
  try {
    void ("stack" in thrown)
    void Object.getPrototypeOf(thrown)
    return thrown
  } catch {
    return new NormalizedThrow(detailOf(thrown))
  }
}

const messageOf = (thrown: unknown): string => {
  try {
    if (thrown instanceof Error) return String(thrown.message)
    if (typeof thrown === "object" && thrown !== null) {
      const message = (thrown as { message?: unknown }).message
      if (typeof message === "string") return message
    }
    return String(thrown)
  } catch {
    return UNPRINTABLE
  }
}

const infoOf = (thrown: unknown): ErrorInfo | undefined => {
  try {
    if (!isCodedError(thrown)) return undefined
    const name = thrown.name
    const code = thrown.code
    return typeof name === "string" && typeof code === "string" ? { name, code } : undefined
  } catch {
    return undefined
  }
}

/**
 * ERR-1: the error detail of any thrown value or typed failure. Total: never throws.
 *
 * @since 0.1.0
 * @category constructors
 */
export const detailOf = (thrown: unknown): ErrorDetail => {
  if (isNormalized(thrown)) return thrown.detail
  const message = messageOf(thrown)
  const info = infoOf(thrown)
  return info === undefined ? { message } : { message, info }
}

/**
 * ERR-1 over an Effect `Cause`: the first failure, else the first defect, else a generic
 * interruption message.
 *
 * @since 0.1.0
 * @category constructors
 */
export const detailOfCause = (cause: Cause.Cause<unknown>): ErrorDetail => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return detailOf(failure.value)
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) return detailOf(defect.value)
  return { message: "interrupted" }
}

/**
 * A deferred context message was not a lossless user message with valid content (D-13).
 * Thrown by `deferContext`, so the body fails right there.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidContextError extends Schema.TaggedError<InvalidContextError>(
  "effect-tool-runtime/InvalidContextError"
)("InvalidContextError", { reason: Schema.String }) {
  override get message(): string {
    return `invalid deferred context: ${this.reason}`
  }
}

/**
 * A tool definition was refused at definition time by `Tool.defineTool` or `Tool.fromSchema`
 * (DEF-1, D-6): a bad `timeoutMs`, a missing or non-callable callback, an empty name, options
 * that cannot be read. Thrown synchronously; no definition is produced. Schema and DSL errors
 * stay {@link JsonSchemaError}.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolDefinitionError extends Schema.TaggedError<ToolDefinitionError>(
  "effect-tool-runtime/ToolDefinitionError"
)("ToolDefinitionError", { message: Schema.String }) {}
