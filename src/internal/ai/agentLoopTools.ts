/**
 * The registry's model-facing schemas as `@effect/ai` tool definitions (raw JSON Schema passed
 * through), and the model's tool-call parts turned back into the scheduler's raw arguments.
 *
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import * as Json from "../../Json.js"
import type { ModelToolCall } from "../../Scheduler.js"
import type { ToolSchema } from "../../ToolRegistry.js"

/**
 * A parameters "schema" that accepts any value unchanged (so non-object arguments and own
 * `__proto__` keys reach the scheduler) and whose JSON Schema is the registry's raw schema,
 * returned by `Tool.getJsonSchema` as the very same object.
 *
 * @internal
 */
export interface RawParameters extends Tool.AnyStructSchema {
  readonly Type: unknown
  readonly Encoded: unknown
  readonly Context: never
}

const rawParameters = (jsonSchema: object): RawParameters => {
  const schema = Schema.Unknown.annotations({ jsonSchema })
  return {
    [Schema.TypeId]: schema[Schema.TypeId],
    ast: schema.ast,
    fields: {},
    make: identity,
    Type: undefined,
    Encoded: undefined,
    Context: undefined as never,
    annotations: () => rawParameters(jsonSchema),
    pipe() {
      return pipeArguments(this, arguments)
    }
  }
}

/**
 * One registry tool as `@effect/ai` sees it.
 *
 * @internal
 */
export type WireTool = Tool.Tool<string, {
  readonly parameters: RawParameters
  readonly success: typeof Schema.Unknown
  readonly failure: typeof Schema.Never
  readonly failureMode: "return"
}>

/** @internal */
export type WireTools = Record<string, WireTool>

/** @internal */
export type WireToolkit = Toolkit.WithHandler<WireTools>

const neverHandled = (): Effect.Effect<never> =>
  Effect.dieMessage("effect-tool-runtime/AgentLoop: @effect/ai must never resolve a tool call itself")

/**
 * The toolkit handed to `generateText` / `streamText`: one tool per schema, in view order. Its
 * handler is never run (the loop always sets `disableToolCallResolution`).
 *
 * @internal
 */
export const toolkitOf = (schemas: ReadonlyArray<ToolSchema>): WireToolkit => {
  const tools: WireTools = {}
  for (const schema of schemas) {
    tools[schema.name] = Tool.make(schema.name, {
      description: schema.description,
      success: Schema.Unknown,
      failureMode: "return"
    }).setParameters(rawParameters(schema.parameters))
  }
  return { tools, handle: neverHandled }
}

/**
 * A tool call of the model's message, before it becomes a scheduler input.
 *
 * @internal
 */
export interface CallPart {
  readonly id: string
  readonly name: string
  readonly params: unknown
  readonly providerExecuted: boolean
}

const readField = (record: object, key: string): unknown => {
  try {
    return (record as Record<string, unknown>)[key]
  } catch {
    return undefined
  }
}

const lenientCall = (part: object): Response.ToolCallPart<string, unknown> | undefined => {
  const id = readField(part, "id")
  const name = readField(part, "name")
  if (typeof id !== "string" || typeof name !== "string") return undefined
  const params = readField(part, "params")
  return Response.toolCallPart({ id, name, params, providerExecuted: readField(part, "providerExecuted") === true })
}

const genericPart = Schema.decodeUnknownEither(Response.Part(Toolkit.empty))
const genericStreamPart = Schema.decodeUnknownEither(Response.StreamPart(Toolkit.empty))

const recoverParts = (
  actual: unknown,
  decode: (u: unknown) => Either.Either<Response.AnyPart, ParseResult.ParseError>
): Option.Option<Array<Response.AnyPart>> => {
  const items = Array.isArray(actual) ? actual : Chunk.isChunk(actual) ? Chunk.toReadonlyArray(actual) : undefined
  if (items === undefined) return Option.none()
  const parts: Array<Response.AnyPart> = []
  for (const item of items) {
    if (typeof item !== "object" || item === null) return Option.none()
    if (readField(item, "type") === "tool-call") {
      const call = lenientCall(item)
      if (call === undefined) return Option.none()
      parts.push(call)
      continue
    }
    const decoded = decode(item)
    if (Either.isLeft(decoded)) return Option.none()
    parts.push(decoded.right)
  }
  return Option.some(parts)
}

/**
 * `@effect/ai` decodes a response against the toolkit, so a call to a name that was not offered
 * fails the whole response with `MalformedOutput`. When that failure is the response decode's own
 * (its cause is the `ParseError` of the parts), the parts are decoded again with the names left
 * open, so the call reaches the scheduler and gets its `UNKNOWN_TOOL` result. Any other failure,
 * or a part that is malformed for another reason, keeps the original error.
 *
 * @internal
 */
export const recoverResponse = (
  error: AiError.AiError,
  streaming: boolean
): Option.Option<Array<Response.AnyPart>> => {
  if (error._tag !== "MalformedOutput" || !ParseResult.isParseError(error.cause)) return Option.none()
  return recoverParts(error.cause.issue.actual, streaming ? genericStreamPart : genericPart)
}

/**
 * The model's raw argument text for one call, as the scheduler takes it (SCHED-1): the streamed
 * argument text when the provider streamed it; a string `params` as it is (a provider that
 * could not parse the text hands it on unparsed); any other value as its JSON text. A value that
 * is not lossless JSON (a bigint, a cycle, a throwing getter or proxy) has no argument text:
 * the scheduler then gives the call its own error result.
 *
 * @internal
 */
export const toModelCall = (part: CallPart, streamed: string | undefined): ModelToolCall => {
  if (streamed !== undefined) return { callId: part.id, name: part.name, arguments: streamed }
  const params = part.params
  if (typeof params === "string") return { callId: part.id, name: part.name, arguments: params }
  const snap = Json.snapshot(params)
  if (snap._tag === "Lossless") return { callId: part.id, name: part.name, arguments: JSON.stringify(snap.value) }
  return malformed(part.id, part.name)
}

const malformed = (callId: string, name: string): ModelToolCall =>
  ({ callId, name, arguments: undefined }) as unknown as ModelToolCall
