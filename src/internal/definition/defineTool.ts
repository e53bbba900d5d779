/** @internal */
import * as Effect from "effect/Effect"
import type { Content } from "../../Content.js"
import type { InferParameters, InferValue, ParameterSpec, ValueSpec } from "../../Dsl.js"
import type { RunContext, ToolExecution } from "../../Execution.js"
import type { JsonValue } from "../../Json.js"
import * as JsonSchema from "../../JsonSchema.js"
import type { CallView, ResultProjection, ResultView } from "../../Presentation.js"
import type { ReplayPolicy, ToolDefinition, ToolOutput } from "../../Tool.js"
import { detailOf, sanitizeThrown, ToolArgsError, ToolDefinitionError } from "../../ToolError.js"
import type { ToolResult } from "../../ToolResult.js"
import * as dsl from "../schema/dsl.js"
import { adoptReturned } from "../base/promise.js"
import { isObjectLike, isReplayPolicy, REPLAY_MESSAGE } from "./fields.js"

const MAX_TIMEOUT_MS = 2147483647

/** @internal */
export type BodyResult<A> = Effect.Effect<A, unknown, unknown> | PromiseLike<A>

/** @internal */
export type BodyError<Out> = Out extends Effect.Effect<infer _A, infer E, infer _R> ? E : unknown

/** @internal */
export type BodyContext<Out> = Out extends Effect.Effect<infer _A, infer _E, infer R> ? R : never

/** @internal */
export interface DefineToolOutput<Args, Value> {
  readonly render: (args: Args, value: Value) => Content
  readonly presentationMeta?: ((args: Args, value: Value) => JsonValue) | undefined
}

/** @internal */
export interface DefineToolOptions<
  P extends ParameterSpec,
  O extends ValueSpec,
  Out extends BodyResult<InferValue<O>>
> {
  readonly name: string
  readonly description: string
  readonly parameters: P
  readonly output: DefineToolOutput<InferParameters<P>, InferValue<O>> & { readonly schema: O }
  readonly execute: (args: InferParameters<P>, ctx: RunContext) => Out
  readonly timeoutMs?: number | undefined
  /** What a durable batch does with a body cut mid-run (D-22); default `never`. */
  readonly replay?: ReplayPolicy | undefined
  readonly deferLoading?: boolean | undefined
  readonly isConcurrencySafe?: ((args: InferParameters<P>) => boolean) | undefined
  readonly finalizeContent?: ((exec: ToolExecution, result: ToolResult) => Content | undefined) | undefined
  readonly projectContent?: ((exec: ToolExecution, result: ToolResult) => Content | undefined) | undefined
  readonly presentCall?: ((args: InferParameters<P>) => CallView | undefined) | undefined
  readonly presentResult?:
    | ((args: InferParameters<P>, result: ResultProjection) => ResultView | undefined)
    | undefined
}

/** @internal */
export interface TypedTool<A, E, R> extends ToolDefinition<R> {
  readonly execute: (args: JsonValue, ctx: RunContext) => Effect.Effect<A, ToolArgsError | E, R>
}

type AnyFunction = (...args: ReadonlyArray<never>) => unknown

const refuse = (message: string): ToolDefinitionError => new ToolDefinitionError({ message })

const optionalFunction = (name: string, key: string, value: unknown): AnyFunction | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "function") throw refuse(`defineTool(${name}): ${key} must be a function`)
  return value as AnyFunction
}

const missingOutput = (name: string): ToolDefinitionError =>
  refuse(`defineTool(${name}): must declare output { schema, render, presentationMeta? }`)

/** Every option `defineTool` uses, each read exactly once (DEF-1 a). */
interface ReadOptions {
  readonly description: unknown
  readonly output: unknown
  readonly schema: unknown
  readonly render: unknown
  readonly presentationMeta: unknown
  readonly execute: unknown
  readonly finalizeContent: unknown
  readonly projectContent: unknown
  readonly presentCall: unknown
  readonly presentResult: unknown
  readonly isConcurrencySafe: unknown
  readonly timeoutMs: unknown
  readonly replay: unknown
  readonly deferLoading: unknown
  readonly parameters: unknown
}

const readName = (options: unknown): unknown => {
  if (!isObjectLike(options)) throw refuse("defineTool(): options must be an object")
  try {
    return (options as { readonly name?: unknown }).name
  } catch (error) {
    throw refuse(`defineTool(): options could not be read: ${detailOf(error).message}`)
  }
}

const readOptions = (name: string, options: object): ReadOptions => {
  try {
    const o = options as { readonly [key: string]: unknown }
    const description = o.description
    const output = o.output
    let schema: unknown, render: unknown, presentationMeta: unknown
    if (isObjectLike(output)) {
      const out = output as { readonly [key: string]: unknown }
      schema = out.schema
      render = out.render
      presentationMeta = out.presentationMeta
    }
    return {
      description,
      output,
      schema,
      render,
      presentationMeta,
      execute: o.execute,
      finalizeContent: o.finalizeContent,
      projectContent: o.projectContent,
      presentCall: o.presentCall,
      presentResult: o.presentResult,
      isConcurrencySafe: o.isConcurrencySafe,
      timeoutMs: o.timeoutMs,
      replay: o.replay,
      deferLoading: o.deferLoading,
      parameters: o.parameters
    }
  } catch (error) {
    throw refuse(`defineTool(${name}): options could not be read: ${detailOf(error).message}`)
  }
}

/** @internal */
export const defineTool = <
  const P extends ParameterSpec,
  const O extends ValueSpec,
  Out extends BodyResult<InferValue<O>>
>(options: DefineToolOptions<P, O, Out>): TypedTool<InferValue<O>, BodyError<Out>, BodyContext<Out>> => {
  const name: unknown = readName(options)
  if (typeof name !== "string" || name.length === 0) throw refuse("defineTool(): name must be a non-empty string")
  const read = readOptions(name, options)
  const description = read.description
  if (typeof description !== "string") throw refuse(`defineTool(${name}): description must be a string`)
  if (!isObjectLike(read.output)) throw missingOutput(name)
  const outputSchema = read.schema
  if (typeof read.render !== "function") throw missingOutput(name)
  const render = read.render as (args: JsonValue, value: JsonValue) => Content
  const presentationMeta = optionalFunction(name, "output.presentationMeta", read.presentationMeta) as
    | ((args: JsonValue, value: JsonValue) => JsonValue)
    | undefined
  const body = read.execute
  if (typeof body !== "function") throw refuse(`defineTool(${name}): execute must be a function`)
  const author = body as (args: JsonValue, ctx: RunContext) => unknown
  const finalizeContent = optionalFunction(name, "finalizeContent", read.finalizeContent) as
    | ToolDefinition["finalizeContent"]
    | undefined
  const projectContent = optionalFunction(name, "projectContent", read.projectContent) as
    | ToolDefinition["projectContent"]
    | undefined
  const presentCall = optionalFunction(name, "presentCall", read.presentCall) as
    | ((args: JsonValue) => CallView | undefined)
    | undefined
  const presentResult = optionalFunction(name, "presentResult", read.presentResult) as
    | ((args: JsonValue, result: ResultProjection) => ResultView | undefined)
    | undefined
  const isConcurrencySafe = optionalFunction(name, "isConcurrencySafe", read.isConcurrencySafe) as
    | ((args: JsonValue) => boolean)
    | undefined
  const timeoutMs = read.timeoutMs
  const deferLoading = read.deferLoading
  const parameterSpec = read.parameters

  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw refuse(`defineTool(${name}): timeoutMs must be a positive finite number`)
    }
    if (timeoutMs > MAX_TIMEOUT_MS) {
      throw refuse(`defineTool(${name}): timeoutMs must be a positive finite number no greater than 2147483647`)
    }
  }
  if (deferLoading !== undefined && typeof deferLoading !== "boolean") {
    throw refuse(`defineTool(${name}): deferLoading must be a boolean`)
  }
  const replay = read.replay
  if (replay !== undefined && !isReplayPolicy(replay)) throw refuse(`defineTool(${name}): ${REPLAY_MESSAGE}`)
  const parameters = dsl.compileParameters(parameterSpec)
  const schema = dsl.compileValue(outputSchema)
  const validator = JsonSchema.compile(parameters)
  const isValid = (args: unknown): boolean => validator(args, "").length === 0

  const execute = (args: JsonValue, ctx: RunContext): Effect.Effect<unknown, unknown, unknown> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const found = validator(args, "")
        if (found.length > 0) return Effect.fail(new ToolArgsError({ violations: found }))
        let returned: unknown
        try {
          returned = author(args, ctx)
        } catch (error) {
          return Effect.die(sanitizeThrown(error))
        }
        return adoptReturned(returned, restore)
      })
    )

  const toolOutput: ToolOutput = presentationMeta === undefined
    ? { schema, render: (args, value) => render(args, value) }
    : {
      schema,
      render: (args, value) => render(args, value),
      presentationMeta: (args, value) => presentationMeta(args, value)
    }

  const definition: {
    -readonly [K in keyof ToolDefinition<unknown>]: ToolDefinition<unknown>[K]
  } = { name, description, parameters, output: Object.freeze(toolOutput), execute }
  if (deferLoading !== undefined) definition.deferLoading = deferLoading as boolean
  if (timeoutMs !== undefined) definition.timeoutMs = timeoutMs as number
  if (replay !== undefined) definition.replay = replay
  if (isConcurrencySafe !== undefined) {
    definition.isConcurrencySafe = (args) => {
      if (!isValid(args)) return false
      try {
        return isConcurrencySafe(args) === true
      } catch {
        return false
      }
    }
  }
  if (finalizeContent !== undefined) definition.finalizeContent = finalizeContent
  if (projectContent !== undefined) definition.projectContent = projectContent
  if (presentCall !== undefined) {
    definition.presentCall = (args) => {
      if (!isValid(args)) return undefined
      try {
        return presentCall(args as JsonValue)
      } catch {
        return undefined
      }
    }
  }
  if (presentResult !== undefined) {
    definition.presentResult = (args, result) => {
      if (!isValid(args)) return undefined
      try {
        return presentResult(args as JsonValue, result)
      } catch {
        return undefined
      }
    }
  }
  return Object.freeze(definition) as unknown as TypedTool<InferValue<O>, BodyError<Out>, BodyContext<Out>>
}

/** @internal */
export const validateArgs = (spec: ParameterSpec, args: unknown): ReadonlyArray<string> =>
  JsonSchema.validate(dsl.compileParameters(spec), args, "")
