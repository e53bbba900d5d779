/**
 * The options of `fromSchema`, read: every option exactly once, each checked for its kind
 * (DEF-1, D-6), the two schemas read down to their ASTs.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import { detailOf, ToolDefinitionError } from "../../../ToolError.js"
import { isObjectLike, isReplayPolicy, OPTIONAL_CALLBACKS, REPLAY_MESSAGE } from "../fields.js"

const MAX_TIMEOUT_MS = 2147483647

const refuse = (message: string): ToolDefinitionError => new ToolDefinitionError({ message })

interface ReadFromSchema {
  readonly name: string
  readonly description: unknown
  readonly parameters: unknown
  readonly schema: unknown
  readonly render: unknown
  readonly presentationMeta: unknown
  readonly execute: unknown
  readonly timeoutMs: unknown
  readonly replay: unknown
  readonly isConcurrencySafe: unknown
  readonly finalizeContent: unknown
  readonly projectContent: unknown
  readonly presentCall: unknown
  readonly presentResult: unknown
  readonly deferLoading: unknown
}

/** The AST of an Effect Schema (read once), or `undefined` for anything else. Total. */
const astOf = (value: unknown): AST.AST | undefined => {
  try {
    if (!Schema.isSchema(value)) return undefined
    const ast: unknown = value.ast
    return typeof ast === "object" && ast !== null && typeof (ast as { readonly _tag?: unknown })._tag === "string"
      ? ast as AST.AST
      : undefined
  } catch {
    return undefined
  }
}

/**
 * Reads every option exactly once and checks its kind (DEF-1, D-6): each failure is a
 * {@link ToolDefinitionError}; a throwing getter or proxy trap is one too.
 *
 * @internal
 */
export const readFromSchemaOptions = (
  options: unknown
): ReadFromSchema & { readonly parametersAst: AST.AST; readonly schemaAst: AST.AST } => {
  if (!isObjectLike(options)) throw refuse("fromSchema(): options must be an object")
  let name: unknown
  try {
    name = (options as { readonly name?: unknown }).name
  } catch (error) {
    throw refuse(`fromSchema(): options could not be read: ${detailOf(error).message}`)
  }
  if (typeof name !== "string" || name.length === 0) throw refuse("fromSchema(): name must be a non-empty string")
  let read: ReadFromSchema
  let output: unknown
  try {
    const o = options as { readonly [key: string]: unknown }
    const description = o.description
    const parameters = o.parameters
    output = o.output
    let schema: unknown, render: unknown, presentationMeta: unknown
    if (isObjectLike(output)) {
      const out = output as { readonly [key: string]: unknown }
      schema = out.schema
      render = out.render
      presentationMeta = out.presentationMeta
    }
    read = {
      name,
      description,
      parameters,
      schema,
      render,
      presentationMeta,
      execute: o.execute,
      timeoutMs: o.timeoutMs,
      replay: o.replay,
      isConcurrencySafe: o.isConcurrencySafe,
      finalizeContent: o.finalizeContent,
      projectContent: o.projectContent,
      presentCall: o.presentCall,
      presentResult: o.presentResult,
      deferLoading: o.deferLoading
    }
  } catch (error) {
    throw refuse(`fromSchema(${name}): options could not be read: ${detailOf(error).message}`)
  }
  if (typeof read.description !== "string") throw refuse(`fromSchema(${name}): description must be a string`)
  const parametersAst = astOf(read.parameters)
  if (parametersAst === undefined) throw refuse(`fromSchema(${name}): parameters must be an Effect Schema`)
  if (
    !isObjectLike(output) || typeof read.render !== "function" ||
    (read.presentationMeta !== undefined && typeof read.presentationMeta !== "function")
  ) {
    throw refuse(`fromSchema(${name}): must declare output { schema, render, presentationMeta? }`)
  }
  const schemaAst = astOf(read.schema)
  if (schemaAst === undefined) throw refuse(`fromSchema(${name}): output.schema must be an Effect Schema`)
  if (typeof read.execute !== "function") throw refuse(`fromSchema(${name}): execute must be a function`)
  for (const key of OPTIONAL_CALLBACKS) {
    if (read[key] !== undefined && typeof read[key] !== "function") {
      throw refuse(`fromSchema(${name}): ${key} must be a function`)
    }
  }
  const timeoutMs = read.timeoutMs
  if (
    timeoutMs !== undefined &&
    !(typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)
  ) {
    throw refuse(`fromSchema(${name}): timeoutMs must be a positive finite number no greater than ${MAX_TIMEOUT_MS}`)
  }
  if (read.deferLoading !== undefined && typeof read.deferLoading !== "boolean") {
    throw refuse(`fromSchema(${name}): deferLoading must be a boolean`)
  }
  if (read.replay !== undefined && !isReplayPolicy(read.replay)) throw refuse(`fromSchema(${name}): ${REPLAY_MESSAGE}`)
  return { ...read, parametersAst, schemaAst }
}
