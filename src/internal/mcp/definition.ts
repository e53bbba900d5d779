/**
 * One MCP tool as a runtime definition: raw parameters, local argument checks when the input
 * schema is in the supported subset, the output contract (structured content or rendered
 * content), and the body that calls the server with the caller's cancellation forwarded.
 *
 * @internal
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js"
import * as Effect from "effect/Effect"
import type { Content } from "../../Content.js"
import type { RunContext, ToolExecution } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { JsonObject, JsonValue } from "../../Json.js"
import * as JsonSchema from "../../JsonSchema.js"
import * as Tool from "../../Tool.js"
import { detailOf, ToolArgsError, ToolOutputError } from "../../ToolError.js"
import type { ToolResult } from "../../ToolResult.js"
import * as content from "./content.js"
import { McpProtocolError, McpToolError } from "./errors.js"
import { stripDialect, type ToolSpec, wire } from "./listing.js"

/** What every definition of one imported set shares. @internal */
export interface Shared {
  readonly client: Client
  readonly requestTimeoutMs: number | undefined
  readonly timeoutMs: number | undefined
  readonly readOnlyParallel: boolean
  readonly validators: () => jsonSchemaValidator
  /** Server content of structured successes, by execution token, until `projectContent` takes it. */
  readonly stash: Map<symbol, Content>
  readonly inFlight: Set<InFlight>
  closed: boolean
}

/** @internal */
export interface InFlight {
  readonly controller: AbortController
  closing: boolean
  done: Promise<unknown>
}

type CallOutcome =
  | { readonly _tag: "Done"; readonly raw: unknown }
  | { readonly _tag: "Failed"; readonly error: unknown }
  | { readonly _tag: "Cancelled" }
  | { readonly _tag: "Closed" }

const CANCELLED: CallOutcome = { _tag: "Cancelled" }
const CLOSED: CallOutcome = { _tag: "Closed" }
const CLOSED_DETAIL = "the MCP tool set was closed during the call"

/**
 * The content shape of the canonical value of a tool without an `outputSchema`: the rendered
 * blocks themselves.
 *
 * @internal
 */
export const CONTENT_VALUE_SCHEMA: JsonObject = Json.deepFreeze({
  type: "array",
  items: {
    oneOf: [
      {
        type: "object",
        properties: { type: { type: "string", const: "text" }, text: { type: "string" } },
        required: ["type", "text"],
        additionalProperties: false
      },
      {
        type: "object",
        properties: { type: { type: "string", const: "image" }, data: { type: "string" }, mimeType: { type: "string" } },
        required: ["type", "data", "mimeType"],
        additionalProperties: false
      }
    ]
  }
})

const objectOnly = JsonSchema.compile({ type: "object" })

/** Argument checks: the full input schema when it is in the subset, else only "an object". @internal */
export const argumentCheck = (inputSchema: JsonObject): {
  readonly validates: boolean
  readonly check: (args: JsonValue) => ReadonlyArray<string>
} => {
  const stripped = stripDialect(inputSchema)
  if (JsonSchema.violations(stripped, { objectRoot: true }).length === 0) {
    const validator = JsonSchema.compile(stripped)
    return { validates: true, check: (args) => validator(args, "") }
  }
  return { validates: false, check: (args) => objectOnly(args, "") }
}

type OutputContract =
  | { readonly _tag: "Output"; readonly output: Tool.ToolOutput }
  | { readonly _tag: "Invalid"; readonly reason: string }

const renderJson = (_args: JsonValue, value: JsonValue): Content => [{ type: "text", text: JSON.stringify(value) }]

const structuredOutput = (schema: JsonObject, shared: Shared): OutputContract => {
  const stripped = stripDialect(schema)
  if (JsonSchema.violations(stripped).length === 0) {
    return { _tag: "Output", output: { schema: stripped, render: renderJson } }
  }
  let validate: (input: unknown) => { readonly valid: boolean; readonly errorMessage?: string | undefined }
  try {
    validate = shared.validators().getValidator(stripped as never)
    if (typeof validate !== "function") return { _tag: "Invalid", reason: "the outputSchema could not be compiled" }
  } catch (error) {
    return { _tag: "Invalid", reason: `the outputSchema could not be compiled: ${detailOf(error).message}` }
  }
  return {
    _tag: "Output",
    output: {
      schema: {},
      render: renderJson,
      validate: (value) => {
        try {
          const verdict = validate(value)
          if (verdict.valid === true) return []
          const message = verdict.errorMessage
          return [`value does not match the outputSchema: ${typeof message === "string" ? message : "invalid"}`]
        } catch (error) {
          return [`value could not be checked against the outputSchema: ${detailOf(error).message}`]
        }
      }
    }
  }
}

const renderContent = (_args: JsonValue, value: JsonValue): Content => value as unknown as Content

const linkAbort = (controller: AbortController, signals: ReadonlyArray<AbortSignal>): () => void => {
  const abort = () => controller.abort(new DOMException("tool call aborted", "AbortError"))
  if (signals.some((signal) => signal.aborted)) {
    abort()
    return () => {}
  }
  for (const signal of signals) signal.addEventListener("abort", abort, { once: true })
  return () => {
    for (const signal of signals) signal.removeEventListener("abort", abort)
  }
}

const callServer = (
  shared: Shared,
  serverName: string,
  args: JsonValue,
  signals: ReadonlyArray<AbortSignal>
): Promise<CallOutcome> => {
  const controller = new AbortController()
  const unlink = linkAbort(controller, signals)
  const flight: InFlight = { controller, closing: false, done: Promise.resolve() }
  const options = shared.requestTimeoutMs === undefined
    ? { signal: controller.signal }
    : { signal: controller.signal, timeout: shared.requestTimeoutMs }
  const params = { name: serverName, arguments: args as Record<string, unknown> }
  const outcome = Promise.resolve()
    .then(() => shared.client.request({ method: "tools/call", params }, ResultSchema, options))
    .then(
      (raw): CallOutcome => ({ _tag: "Done", raw }),
      (error): CallOutcome =>
        controller.signal.aborted ? (flight.closing ? CLOSED : CANCELLED) : { _tag: "Failed", error }
    )
    .finally(() => {
      unlink()
      shared.inFlight.delete(flight)
    })
  flight.done = outcome
  shared.inFlight.add(flight)
  return outcome
}

const interpret = (
  spec: ToolSpec,
  shared: Shared,
  token: symbol,
  raw: unknown
): Effect.Effect<JsonValue, McpToolError | McpProtocolError | ToolOutputError> => {
  const malformed = (why: string) =>
    Effect.fail(new McpProtocolError({ toolName: spec.serverName, detail: `the server sent a malformed result: ${why}` }))
  const value = wire(raw)
  if (!Json.isPlainRecord(value)) return malformed("not a JSON object")
  const record = value as JsonObject
  const isError = record.isError
  const blocks = record.content
  const structured = record.structuredContent
  if (isError !== undefined && typeof isError !== "boolean") return malformed("isError is not a boolean")
  if (blocks !== undefined && !Array.isArray(blocks)) return malformed("content is not an array")
  const rendered = content.render((blocks ?? []) as ReadonlyArray<JsonValue>)
  if (isError === true) {
    const text = content.textOf(rendered)
    return Effect.fail(
      new McpToolError({
        toolName: spec.serverName,
        detail: text.length > 0 ? text : `MCP tool "${spec.serverName}" reported an error`
      })
    )
  }
  if (spec.outputSchema === undefined) return Effect.succeed(rendered as unknown as JsonValue)
  if (structured === undefined) {
    return Effect.fail(
      new ToolOutputError({
        toolName: spec.name,
        violations: ["structuredContent is missing (the tool declares an outputSchema)"]
      })
    )
  }
  if (rendered.length > 0) shared.stash.set(token, rendered)
  return Effect.succeed(structured)
}

const body = (spec: ToolSpec, shared: Shared, check: (args: JsonValue) => ReadonlyArray<string>) =>
(
  args: JsonValue,
  ctx: RunContext
): Effect.Effect<JsonValue, unknown> =>
  Effect.suspend(() => {
    if (shared.closed) return Effect.fail(new McpProtocolError({ toolName: spec.serverName, detail: CLOSED_DETAIL }))
    const problems = check(args)
    if (problems.length > 0) return Effect.fail(new ToolArgsError({ violations: problems }))
    const token = ctx.token
    const callerSignal = ctx.signal
    return Effect.flatMap(
      Tool.fromPromise((signal) => callServer(shared, spec.serverName, args, [signal, callerSignal])),
      (outcome): Effect.Effect<JsonValue, unknown> => {
        switch (outcome._tag) {
          case "Cancelled":
            return Effect.interrupt
          case "Closed":
            return Effect.fail(new McpProtocolError({ toolName: spec.serverName, detail: CLOSED_DETAIL }))
          case "Failed":
            return Effect.fail(new McpProtocolError({ toolName: spec.serverName, detail: detailOf(outcome.error).message }))
          case "Done":
            return interpret(spec, shared, token, outcome.raw)
        }
      }
    )
  })

/** @internal */
export type Built =
  | { readonly _tag: "Definition"; readonly definition: Tool.ToolDefinition; readonly validatesArguments: boolean }
  | { readonly _tag: "Invalid"; readonly reason: string }

/** @internal */
export const build = (spec: ToolSpec, shared: Shared): Built => {
  const args = argumentCheck(spec.inputSchema)
  const structured = spec.outputSchema !== undefined
  const contract: OutputContract = spec.outputSchema === undefined
    ? { _tag: "Output", output: { schema: CONTENT_VALUE_SCHEMA, render: renderContent } }
    : structuredOutput(spec.outputSchema, shared)
  if (contract._tag === "Invalid") return contract
  const take = (exec: ToolExecution): symbol => exec.token
  const definition: Tool.ToolDefinition = {
    name: spec.name,
    description: spec.description,
    parameters: spec.inputSchema,
    output: contract.output,
    execute: body(spec, shared, args.check),
    ...(shared.timeoutMs === undefined ? {} : { timeoutMs: shared.timeoutMs }),
    ...(spec.readOnly && shared.readOnlyParallel ? { isConcurrencySafe: () => true } : {}),
    ...(structured
      ? {
        projectContent: (exec: ToolExecution, result: ToolResult): Content | undefined => {
          const token = take(exec)
          const stashed = shared.stash.get(token)
          shared.stash.delete(token)
          return result.isError ? undefined : stashed
        },
        finalizeContent: (exec: ToolExecution): undefined => {
          shared.stash.delete(take(exec))
          return undefined
        }
      }
      : {})
  }
  return { _tag: "Definition", definition, validatesArguments: args.validates }
}
