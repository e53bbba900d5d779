/** @internal */
import * as AiTool from "@effect/ai/Tool"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import * as Scope from "effect/Scope"
import type { Content } from "../../Content.js"
import type { AgentId } from "../../Execution.js"
import type { JsonValue } from "../../Json.js"
import * as Tool from "../../Tool.js"
import { JsonSchemaError, sanitizeThrown, ToolDefinitionError } from "../../ToolError.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import type { ToolRegistrationError } from "../../ToolRegistry.js"
import { failureMapper } from "./toolkitFailure.js"
import { mergeCached } from "../base/context.js"
import { isObjectLike } from "../definition/fields.js"

/** @internal */
export type Classifier = boolean | ((params: never) => boolean)

/** @internal */
export interface ReadToolOptions {
  readonly concurrencySafe: Classifier | undefined
  readonly render: ((params: never, success: never) => Content) | undefined
  readonly timeoutMs: number | undefined
}

/** @internal */
export interface ReadOptions {
  readonly agent: AgentId | undefined
  readonly prefix: string
  readonly render: ((value: JsonValue, name: string) => Content) | undefined
  readonly tools: ReadonlyMap<string, ReadToolOptions>
}

type AnySchema = Schema.Schema<unknown, unknown, never>

interface ReadTool {
  readonly id: string
  readonly name: string
  readonly description: string
  readonly parameters: AnySchema
  readonly success: AnySchema
  readonly failure: AnySchema
  readonly readonly: boolean
}

interface Handler {
  readonly handler: (params: unknown) => unknown
  readonly context: Context.Context<never>
}

const refuse = (message: string): ToolDefinitionError => new ToolDefinitionError({ message })

const isInstance = (error: unknown, of: abstract new(...args: never) => unknown): boolean => {
  try {
    return error instanceof of
  } catch {
    return false
  }
}

const read = <A>(what: string, f: () => A): A => {
  try {
    return f()
  } catch (error) {
    if (isInstance(error, ToolDefinitionError)) throw error
    throw refuse(`AiToolkit: ${what} could not be read`)
  }
}

const readToolOptions = (name: string, raw: unknown): ReadToolOptions => {
  if (raw === undefined) return { concurrencySafe: undefined, render: undefined, timeoutMs: undefined }
  if (!isObjectLike(raw)) throw refuse(`AiToolkit: options.tools.${name} must be an object`)
  const o = raw as { readonly [key: string]: unknown }
  const { concurrencySafe, render, timeoutMs } = read(`options.tools.${name}`, () => ({
    concurrencySafe: o.concurrencySafe,
    render: o.render,
    timeoutMs: o.timeoutMs
  }))
  if (concurrencySafe !== undefined && typeof concurrencySafe !== "boolean" && typeof concurrencySafe !== "function") {
    throw refuse(`AiToolkit: options.tools.${name}.concurrencySafe must be a boolean or a function`)
  }
  if (render !== undefined && typeof render !== "function") {
    throw refuse(`AiToolkit: options.tools.${name}.render must be a function`)
  }
  if (timeoutMs !== undefined && typeof timeoutMs !== "number") {
    throw refuse(`AiToolkit: options.tools.${name}.timeoutMs must be a number`)
  }
  return {
    concurrencySafe: concurrencySafe as Classifier | undefined,
    render: render as ReadToolOptions["render"],
    timeoutMs
  }
}

/**
 * Reads every option exactly once and checks its kind; a throwing getter or proxy trap is a
 * {@link ToolDefinitionError}.
 *
 * @internal
 */
export const readOptions = (options: unknown): ReadOptions => {
  if (options === undefined) return { agent: undefined, prefix: "", render: undefined, tools: new Map() }
  if (!isObjectLike(options)) throw refuse("AiToolkit: options must be an object")
  const o = options as { readonly [key: string]: unknown }
  const { agent, prefix, render, tools } = read("options", () => ({
    agent: o.agent,
    prefix: o.prefix,
    render: o.render,
    tools: o.tools
  }))
  if (agent !== undefined && typeof agent !== "string") throw refuse("AiToolkit: options.agent must be a string")
  if (prefix !== undefined && typeof prefix !== "string") throw refuse("AiToolkit: options.prefix must be a string")
  if (render !== undefined && typeof render !== "function") throw refuse("AiToolkit: options.render must be a function")
  const byName = new Map<string, ReadToolOptions>()
  if (tools !== undefined) {
    if (!isObjectLike(tools)) throw refuse("AiToolkit: options.tools must be an object")
    const entries = read("options.tools", () => Object.keys(tools).map((key) => [key, (tools as never)[key]] as const))
    for (const [key, value] of entries) byName.set(key, readToolOptions(key, value))
  }
  return {
    agent,
    prefix: prefix ?? "",
    render: render as ReadOptions["render"],
    tools: byName
  }
}

const isSchema = (u: unknown): u is AnySchema => {
  try {
    return Schema.isSchema(u)
  } catch {
    return false
  }
}

const isVoidLike = (schema: AnySchema): boolean => {
  try {
    const ast = schema.ast
    return AST.isVoidKeyword(ast) || AST.isUndefinedKeyword(ast)
  } catch {
    return false
  }
}

/** A `void`/`undefined` success (the `@effect/ai` default) is the canonical JSON value `null`. */
const canonicalSuccess = (schema: AnySchema): AnySchema =>
  isVoidLike(schema)
    ? Schema.transform(Schema.Null, schema, { strict: false, decode: () => undefined, encode: () => null }) as never
    : schema

const readTool = (key: string, tool: unknown): ReadTool => {
  if (!isObjectLike(tool)) throw refuse(`AiToolkit: tool "${key}" is not an @effect/ai Tool`)
  const fields = read(`tool "${key}"`, () => {
    const t = tool as { readonly [k: string]: unknown }
    return {
      userDefined: AiTool.isUserDefined(tool),
      providerDefined: AiTool.isProviderDefined(tool),
      id: t.id,
      name: t.name,
      description: t.description,
      parameters: t.parametersSchema,
      success: t.successSchema,
      failure: t.failureSchema,
      annotations: t.annotations
    }
  })
  if (fields.providerDefined) {
    throw refuse(`AiToolkit: tool "${key}" is provider-defined; only user-defined tools can run in the runtime`)
  }
  if (!fields.userDefined) throw refuse(`AiToolkit: tool "${key}" is not an @effect/ai Tool`)
  const { id, name } = fields
  if (typeof name !== "string" || name.length === 0) throw refuse(`AiToolkit: tool "${key}" has no name`)
  if (typeof id !== "string") throw refuse(`AiToolkit: tool "${name}" has no id`)
  if (!isSchema(fields.parameters) || !isSchema(fields.success) || !isSchema(fields.failure)) {
    throw refuse(`AiToolkit: tool "${name}" must have parameters, success and failure schemas`)
  }
  const parameters = fields.parameters
  const description = read(`tool "${name}"`, () =>
    typeof fields.description === "string"
      ? fields.description
      : AiTool.getDescriptionFromSchemaAst(parameters.ast) ?? "")
  if (typeof description !== "string") throw refuse(`AiToolkit: tool "${name}" has a description that is not a string`)
  const readonly = read(`tool "${name}" annotations`, () =>
    Context.isContext(fields.annotations) && Context.get(fields.annotations as Context.Context<never>, AiTool.Readonly))
  return {
    id,
    name,
    description,
    parameters,
    success: fields.success,
    failure: fields.failure,
    readonly: readonly === true
  }
}

const handlerOf = (context: Context.Context<never>, tool: ReadTool): Handler => {
  const found = Context.getOption(context, Context.GenericTag<never, unknown>(tool.id))
  const value = found._tag === "Some" ? found.value : undefined
  const { handler, handlerContext } = isObjectLike(value)
    ? read(`the handler of tool "${tool.name}"`, () => ({
      handler: (value as { readonly handler?: unknown }).handler,
      handlerContext: (value as { readonly context?: unknown }).context
    }))
    : { handler: undefined, handlerContext: undefined }
  if (typeof handler !== "function" || !Context.isContext(handlerContext)) {
    throw refuse(
      `AiToolkit: no handler for tool "${tool.name}" in context (provide the Layer of toolkit.toLayer(...))`
    )
  }
  return { handler: handler as Handler["handler"], context: handlerContext as Context.Context<never> }
}

const defaultRender = (value: JsonValue): Content => [{ type: "text", text: JSON.stringify(value) }]

const makeDefinition = (
  tool: ReadTool,
  found: Handler,
  options: ReadOptions
): Tool.ToolDefinition<unknown> => {
  const overrides = options.tools.get(tool.name)
  const name = `${options.prefix}${tool.name}`
  const toFailure = failureMapper(name, tool.failure)
  const { handler, context } = found
  const execute = (params: unknown): Effect.Effect<unknown, unknown> => {
    let out: unknown
    try {
      out = handler(params)
    } catch (thrown) {
      return Effect.die(sanitizeThrown(thrown))
    }
    let isEffect = false
    try {
      isEffect = Effect.isEffect(out)
    } catch {
      isEffect = false
    }
    if (!isEffect) return Effect.dieMessage(`AiToolkit: the handler of tool "${name}" did not return an Effect`)
    return (out as Effect.Effect<unknown, unknown>).pipe(
      Effect.catchAll((failure) => Effect.fail(toFailure(failure))),
      Effect.mapInputContext((input: Context.Context<never>) => mergeCached(context, input))
    )
  }
  const classifier = overrides?.concurrencySafe ?? tool.readonly
  const isConcurrencySafe = typeof classifier === "function"
    ? classifier as (params: unknown) => boolean
    : classifier
    ? () => true
    : undefined
  const typedRender = overrides?.render as ((params: unknown, success: unknown) => Content) | undefined
  const definition = Tool.fromSchema<unknown, unknown, unknown, unknown, unknown, never>({
    name,
    description: tool.description,
    parameters: tool.parameters,
    output: { schema: canonicalSuccess(tool.success), render: typedRender ?? (() => []) },
    execute,
    timeoutMs: overrides?.timeoutMs,
    isConcurrencySafe
  })
  if (typedRender !== undefined) return definition
  const render = options.render
  return {
    ...definition,
    output: {
      ...definition.output,
      render: render === undefined ? (_args, value) => defaultRender(value) : (_args, value) => render(value, name)
    }
  }
}

const toolsOf = (toolkit: unknown): ReadonlyArray<readonly [string, unknown]> => {
  if (!isObjectLike(toolkit)) throw refuse("AiToolkit: expected an @effect/ai Toolkit")
  return read("the toolkit", () => {
    const tools = (toolkit as { readonly tools?: unknown }).tools
    if (!isObjectLike(tools)) throw refuse("AiToolkit: expected an @effect/ai Toolkit")
    return Object.keys(tools).map((key) => [key, (tools as never)[key]] as const)
  })
}

const build = (
  toolkit: unknown,
  rawOptions: unknown,
  context: Context.Context<never>
): { readonly agent: AgentId | undefined; readonly definitions: ReadonlyArray<Tool.ToolDefinition<unknown>> } => {
  const entries = toolsOf(toolkit)
  const options = readOptions(rawOptions)
  const tools = entries.map(([key, tool]) => readTool(key, tool))
  const known = new Set(tools.map((tool) => tool.name))
  for (const name of options.tools.keys()) {
    if (!known.has(name)) throw refuse(`AiToolkit: options.tools names "${name}", which is not a tool of the toolkit`)
  }
  return {
    agent: options.agent,
    definitions: tools.map((tool) => makeDefinition(tool, handlerOf(context, tool), options))
  }
}

const attempt = <A>(f: () => A): Effect.Effect<A, ToolDefinitionError | JsonSchemaError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(f())
    } catch (error) {
      if (isInstance(error, ToolDefinitionError) || isInstance(error, JsonSchemaError)) {
        return Effect.fail(error as ToolDefinitionError | JsonSchemaError)
      }
      return Effect.die(sanitizeThrown(error))
    }
  })

/** @internal */
export const definitions = (
  toolkit: unknown,
  options: unknown
): Effect.Effect<ReadonlyArray<Tool.ToolDefinition<unknown>>, ToolDefinitionError | JsonSchemaError> =>
  Effect.flatMap(Effect.context<never>(), (context) => attempt(() => build(toolkit, options, context).definitions))

/** @internal */
export const register = (
  toolkit: unknown,
  options: unknown
): Effect.Effect<
  void,
  ToolDefinitionError | JsonSchemaError | ToolRegistrationError,
  ToolRegistry | Scope.Scope
> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const built = yield* attempt(() => build(toolkit, options, context))
    const registry = yield* ToolRegistry
    const outer = yield* Effect.scope
    const inner = yield* Scope.fork(outer, ExecutionStrategy.sequential)
    const target = built.agent === undefined ? undefined : { agent: built.agent }
    const registerOne = (definition: Tool.Any) => registry.register(definition as Tool.ToolDefinition<never>, target)
    yield* Effect.forEach(built.definitions, registerOne, { discard: true }).pipe(
      Scope.extend(inner),
      Effect.onError((cause) => Scope.close(inner, Exit.failCause(cause)))
    )
  })
