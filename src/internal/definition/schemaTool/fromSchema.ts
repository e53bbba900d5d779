/**
 * `Tool.fromSchema`: a tool definition from Effect Schemas. Both schemas are projected to JSON
 * Schema once, at definition; each call decodes its arguments and encodes the body's value into
 * canonical JSON through the `__proto__`-safe AST.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { Content } from "../../../Content.js"
import type { RunContext, ToolExecution } from "../../../Execution.js"
import * as Json from "../../../Json.js"
import type { JsonValue } from "../../../Json.js"
import * as JsonSchema from "../../../JsonSchema.js"
import type { CallView, ResultProjection, ResultView } from "../../../Presentation.js"
import type { ReplayPolicy, ToolDefinition, ToolOutput } from "../../../Tool.js"
import { JsonSchemaError, sanitizeThrown, ToolArgsError, ToolOutputError } from "../../../ToolError.js"
import type { ToolResult } from "../../../ToolResult.js"
import { adoptReturned } from "../../base/promise.js"
import { readFromSchemaOptions } from "./options.js"
import { formatError, messageOf, SYNC_ONLY } from "./parseErrors.js"
import { isEmptyStruct, project } from "./projection.js"
import { protoSafe } from "./protoSafe.js"
import { toSubset } from "./subset.js"

/**
 * The output declaration of {@link fromSchema}: an Effect Schema for the value and pure
 * projections that receive the decoded (typed) arguments and value.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromSchemaOutput<A, V, VI> {
  /** The value schema; its encoded side (`VI`) is the canonical JSON value. */
  readonly schema: Schema.Schema<V, VI, never>
  readonly render: (args: A, value: V) => Content
  readonly presentationMeta?: ((args: A, value: V) => JsonValue) | undefined
}

/**
 * Options of {@link fromSchema}. `A`/`I` are the parameters' decoded/encoded types, `V`/`VI`
 * the output's, `E`/`R` the body's error and requirements.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromSchemaOptions<A, I, V, VI, E = never, R = never> {
  readonly name: string
  readonly description: string
  /** An object schema (e.g. `Schema.Struct`) whose encoded side is plain JSON. */
  readonly parameters: Schema.Schema<A, I, never>
  readonly output: FromSchemaOutput<A, V, VI>
  /** The body: an Effect, or a Promise (awaited until it settles, even on interruption). */
  readonly execute: (args: A, ctx: RunContext) => Effect.Effect<NoInfer<V>, E, R> | PromiseLike<NoInfer<V>>
  readonly timeoutMs?: number | undefined
  /** What a durable batch does with a body cut mid-run (D-22); default `never`. */
  readonly replay?: ReplayPolicy | undefined
  readonly isConcurrencySafe?: ((args: A) => boolean) | undefined
  readonly finalizeContent?: ((exec: ToolExecution, result: ToolResult) => Content | undefined) | undefined
  readonly projectContent?: ((exec: ToolExecution, result: ToolResult) => Content | undefined) | undefined
  readonly presentCall?: ((args: A) => CallView | undefined) | undefined
  readonly presentResult?: ((args: A, result: ResultProjection) => ResultView | undefined) | undefined
  readonly deferLoading?: boolean | undefined
}

const NOT_AN_OBJECT = "\"arguments\" must be an object"

type ArgsCheck<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly violations: ReadonlyArray<string>; readonly forbidden: ReadonlyArray<string> }

/** @internal */
export const fromSchema = <A, I, V, VI, E = never, R = never>(
  options: FromSchemaOptions<A, I, V, VI, E, R>
): ToolDefinition<R> => {
  const read = readFromSchemaOptions(options)
  const name = read.name
  const description = read.description as string
  const body = read.execute as FromSchemaOptions<A, I, V, VI, E, R>["execute"]
  const render = read.render as FromSchemaOutput<A, V, VI>["render"]
  const presentationMeta = read.presentationMeta as FromSchemaOutput<A, V, VI>["presentationMeta"]
  const timeoutMs = read.timeoutMs as number | undefined
  const replay = read.replay as ReplayPolicy | undefined
  const isConcurrencySafe = read.isConcurrencySafe as FromSchemaOptions<A, I, V, VI, E, R>["isConcurrencySafe"]
  const finalizeContent = read.finalizeContent as ToolDefinition["finalizeContent"]
  const projectContent = read.projectContent as ToolDefinition["projectContent"]
  const presentCall = read.presentCall as FromSchemaOptions<A, I, V, VI, E, R>["presentCall"]
  const presentResult = read.presentResult as FromSchemaOptions<A, I, V, VI, E, R>["presentResult"]
  const deferLoading = read.deferLoading as boolean | undefined

  const parametersJson = project("parameters", name, read.parametersAst).schema
  const outputProjection = project("output", name, read.schemaAst)
  const subset = Json.deepFreeze(toSubset(outputProjection.schema, outputProjection.definitions))
  const subsetViolations = JsonSchema.violations(subset)
  if (subsetViolations.length > 0) {
    throw new JsonSchemaError({
      violations: subsetViolations.map((v) => `output: tool "${name}" projects outside the schema subset: ${v}`)
    })
  }

  const emptyParameters = isEmptyStruct(read.parametersAst)
  const safeParameters = Schema.make<A, I, never>(protoSafe(read.parametersAst))
  const safeOutput = Schema.make<V, VI, never>(protoSafe(read.schemaAst))
  const decodeArgs = Schema.decodeUnknownEither(safeParameters, { errors: "all", onExcessProperty: "error" })
  const decodeValue = Schema.decodeUnknownEither(safeOutput, { errors: "all", onExcessProperty: "error" })
  const encodeValue = Schema.encodeEither(safeOutput, { errors: "all" })

  const checkArgs = (args: unknown): ArgsCheck<A> => {
    if (!Json.isPlainRecord(args)) return { ok: false, violations: [NOT_AN_OBJECT], forbidden: [] }
    if (emptyParameters) {
      const keys = Object.keys(args)
      if (keys.length > 0) {
        return {
          ok: false,
          violations: keys.map((key) => `"${key}" is not a declared property (additionalProperties: false)`),
          forbidden: []
        }
      }
    }
    const decoded = decodeArgs(args)
    if (Either.isRight(decoded)) return { ok: true, value: decoded.right }
    return { ok: false, ...formatError(decoded.left, "") }
  }

  const softArgs = (args: unknown): ArgsCheck<A> => {
    try {
      return checkArgs(args)
    } catch {
      return { ok: false, violations: [], forbidden: [] }
    }
  }

  const typedArgs = (args: JsonValue, where: string): A => {
    const checked = checkArgs(args)
    if (checked.ok) return checked.value
    throw new Error(
      `fromSchema(${name}): ${where} received arguments that do not decode: ${checked.violations.join("; ")}`
    )
  }

  const typedValue = (value: JsonValue, where: string): V => {
    const decoded = decodeValue(value)
    if (Either.isRight(decoded)) return decoded.right
    throw new Error(
      `fromSchema(${name}): ${where} received a value that does not decode: ${
        formatError(decoded.left, "value").violations.join("; ")
      }`
    )
  }

  const encodeCanonical = (value: V): Effect.Effect<VI, ToolOutputError> => {
    let encoded: Either.Either<VI, ParseResult.ParseError>
    try {
      encoded = encodeValue(value)
    } catch (e) {
      const violations = [`value encoding failed: ${messageOf(e)}`]
      return Effect.fail(new ToolOutputError({ toolName: name, violations }))
    }
    return Either.isRight(encoded)
      ? Effect.succeed(encoded.right)
      : Effect.fail(new ToolOutputError({ toolName: name, violations: formatError(encoded.left, "value").violations }))
  }

  /** Calls the body and adopts what it returns, uninterruptibly until then (D-14). */
  const runBody = (args: A, ctx: RunContext): Effect.Effect<V, unknown, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        let out: unknown
        try {
          out = body(args, ctx)
        } catch (e) {
          return Effect.fail(sanitizeThrown(e))
        }
        return adoptReturned(out, restore) as Effect.Effect<V, unknown, R>
      })
    )

  const execute = (args: JsonValue, ctx: RunContext): Effect.Effect<unknown, unknown, R> =>
    Effect.suspend(() => {
      const checked = checkArgs(args)
      if (!checked.ok) {
        if (checked.forbidden.length > 0) {
          return Effect.fail(
            new JsonSchemaError({
              violations: checked.forbidden.map((path) =>
                `parameters: tool "${name}" needs an asynchronous transformation at "${path}" ${SYNC_ONLY}`
              )
            })
          )
        }
        return Effect.fail(new ToolArgsError({ violations: checked.violations }))
      }
      return Effect.flatMap(runBody(checked.value, ctx), encodeCanonical)
    })

  const validate = (value: JsonValue): ReadonlyArray<string> => {
    try {
      const decoded = decodeValue(value)
      return Either.isRight(decoded) ? [] : formatError(decoded.left, "value").violations
    } catch (e) {
      return [`"value" could not be validated: ${messageOf(e)}`]
    }
  }

  const output: ToolOutput = {
    schema: subset,
    render: (args, value) => render(typedArgs(args, "output.render"), typedValue(value, "output.render")),
    ...(presentationMeta === undefined ? {} : {
      presentationMeta: (args: JsonValue, value: JsonValue) =>
        presentationMeta(typedArgs(args, "output.presentationMeta"), typedValue(value, "output.presentationMeta"))
    }),
    validate
  }

  return {
    name,
    description,
    parameters: parametersJson,
    ...(deferLoading === undefined ? {} : { deferLoading }),
    output,
    execute,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(replay === undefined ? {} : { replay }),
    ...(isConcurrencySafe === undefined ? {} : {
      isConcurrencySafe: (args: JsonValue) => {
        const decoded = softArgs(args)
        if (!decoded.ok) return false
        try {
          return isConcurrencySafe(decoded.value)
        } catch {
          return false
        }
      }
    }),
    ...(finalizeContent === undefined ? {} : { finalizeContent }),
    ...(projectContent === undefined ? {} : { projectContent }),
    ...(presentCall === undefined ? {} : {
      presentCall: (args: unknown) => {
        const decoded = softArgs(args)
        if (!decoded.ok) return undefined
        try {
          return presentCall(decoded.value)
        } catch {
          return undefined
        }
      }
    }),
    ...(presentResult === undefined ? {} : {
      presentResult: (args: unknown, result: ResultProjection) => {
        const decoded = softArgs(args)
        if (!decoded.ok) return undefined
        try {
          return presentResult(decoded.value, result)
        } catch {
          return undefined
        }
      }
    })
  }
}
