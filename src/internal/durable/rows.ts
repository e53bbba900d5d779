/**
 * What a durable batch journals per call and how it reads it back: entry keys, the JSON payload of
 * each row kind, and the checks that turn a stored row into a trusted value (a row that fails
 * them is reported, never trusted).
 *
 * @internal
 */
import type { UserMessage } from "../../Content.js"
import * as Content from "../../Content.js"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import type { ToolResult } from "../../ToolResult.js"
import { stringify } from "../log/records.js"

/**
 * The entry keys of a batch's rows. A slot is a call's place: its index in the batch (`"3"`), or
 * the call path of a Code Mode sub-call (`"c1:code:2"`).
 *
 * @internal
 */
export const entry = {
  batch: "batch",
  stop: "stop",
  call: (slot: string) => `call:${slot}`,
  gate: (slot: string) => `gate:${slot}`,
  intent: (slot: string) => `intent:${slot}`,
  settle: (slot: string) => `settle:${slot}`,
  result: (slot: string) => `result:${slot}`,
  log: (tag: string, key: string) => `log:${tag}:${key}`,
  step: (step: number) => `step:${step}`
} as const

/** The kinds of per-call rows, in the order a call passes them. @internal */
export type Kind = "call" | "gate" | "intent" | "settle" | "result"

const KINDS: ReadonlySet<string> = new Set(["call", "gate", "intent", "settle", "result"])

/** An entry key split into its kind and slot; `undefined` for batch-level entries. @internal */
export const parseEntry = (key: string): { readonly kind: Kind; readonly slot: string } | undefined => {
  const colon = key.indexOf(":")
  if (colon < 0) return undefined
  const kind = key.slice(0, colon)
  return KINDS.has(kind) ? { kind: kind as Kind, slot: key.slice(colon + 1) } : undefined
}

/** A decoded row or why it could not be trusted. @internal */
export type Decoded<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly reason: string }

const bad = (reason: string): Decoded<never> => ({ ok: false, reason })

const parse = (text: string): Decoded<JsonValue> => {
  try {
    const value: unknown = JSON.parse(text)
    return { ok: true, value: value as JsonValue }
  } catch {
    return bad("the row is not JSON")
  }
}

const isRecord = (value: JsonValue | undefined): value is { readonly [key: string]: JsonValue } =>
  value !== undefined && Json.isPlainRecord(value)

const checkMessages = (value: JsonValue | undefined): string | undefined => {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) return "additionalContexts must be an array"
  for (const message of value as ReadonlyArray<JsonValue>) {
    if (!isRecord(message) || typeof message.id !== "string" || message.role !== "user") {
      return "additionalContexts must hold user messages"
    }
    const content = Content.checkShape(message.content ?? null)
    if (content._tag === "Invalid") return content.reason
  }
  return undefined
}

const checkError = (value: JsonValue | undefined): string | undefined => {
  if (!isRecord(value) || typeof value.message !== "string") return "error must have a string message"
  const info = value.info
  if (info === undefined) return undefined
  return isRecord(info) && typeof info.name === "string" && typeof info.code === "string"
    ? undefined
    : "error.info must have string name and code"
}

/** Checks a parsed value as a list of deferred user messages; deep-frozen on success. @internal */
export const checkContexts = (value: JsonValue): Decoded<ReadonlyArray<UserMessage>> => {
  const problem = checkMessages(value)
  return problem === undefined ? { ok: true, value: Json.deepFreeze(value as unknown as ReadonlyArray<UserMessage>) } : bad(problem)
}

/** Checks a parsed value as a tool result (the runtime's own shape); deep-frozen on success. @internal */
export const checkResult = (value: JsonValue): Decoded<ToolResult> => {
  if (!isRecord(value)) return bad("a result must be an object")
  const content = Content.checkShape(value.content ?? null)
  if (content._tag === "Invalid") return bad(content.reason)
  const contexts = checkMessages(value.additionalContexts)
  if (contexts !== undefined) return bad(contexts)
  if (value.isError === false) {
    if (!("value" in value)) return bad("a success must have a value")
    if (value.concludesTurn !== undefined && value.concludesTurn !== true) return bad("concludesTurn must be true")
  } else if (value.isError === true) {
    const error = checkError(value.error)
    if (error !== undefined) return bad(error)
  } else {
    return bad("isError must be a boolean")
  }
  return { ok: true, value: Json.deepFreeze(value as unknown as ToolResult) }
}

/** A staged outcome as journaled: a post-result (post-execute still runs) or a final one. @internal */
export interface Outcome {
  readonly tag: "PostResult" | "FinalResult"
  readonly result: ToolResult
}

/** @internal */
export const encodeOutcome = (outcome: Outcome): string =>
  stringify({ tag: outcome.tag, result: outcome.result as unknown as JsonValue })

/** @internal */
export const decodeOutcome = (text: string): Decoded<Outcome> => {
  const parsed = parse(text)
  if (!parsed.ok) return parsed
  const value = parsed.value
  if (!isRecord(value) || (value.tag !== "PostResult" && value.tag !== "FinalResult")) {
    return bad("an outcome row needs tag PostResult or FinalResult")
  }
  const result = checkResult(value.result ?? null)
  return result.ok ? { ok: true, value: { tag: value.tag, result: result.value } } : result
}

/** @internal */
export const encodeResult = (result: ToolResult): string => stringify(result as unknown as JsonValue)

/** @internal */
export const decodeResult = (text: string): Decoded<ToolResult> => {
  const parsed = parse(text)
  return parsed.ok ? checkResult(parsed.value) : parsed
}

/** The intent row: the body may start; the key it runs with. @internal */
export const encodeIntent = (idempotencyKey: string): string => stringify({ idempotencyKey })

/** @internal */
export const decodeIntent = (text: string): Decoded<string> => {
  const parsed = parse(text)
  if (!parsed.ok) return parsed
  const value = parsed.value
  return isRecord(value) && typeof value.idempotencyKey === "string"
    ? { ok: true, value: value.idempotencyKey }
    : bad("an intent row needs a string idempotencyKey")
}

/** A model call as the batch row keeps it. @internal */
export interface StoredCall {
  readonly callId: string
  readonly name: string
  readonly arguments: string
  /** A malformed call's error result (JSON text): the scheduler's own, never sent to the runtime. */
  readonly malformed?: string | undefined
}

/** The batch row: the calls and settings a resume needs, with a digest to compare a re-run by. @internal */
export interface BatchRow {
  readonly calls: ReadonlyArray<StoredCall>
  readonly agent: string | undefined
  readonly maxParallel: number
}

/** @internal */
export const encodeBatch = (batch: BatchRow): string => {
  const calls = batch.calls.map((call) =>
    call.malformed === undefined
      ? { callId: call.callId, name: call.name, arguments: call.arguments }
      : { callId: call.callId, name: call.name, arguments: call.arguments, malformed: call.malformed }
  )
  return stringify(
    batch.agent === undefined
      ? { calls, maxParallel: batch.maxParallel }
      : { calls, agent: batch.agent, maxParallel: batch.maxParallel }
  )
}

/** @internal */
export const decodeBatch = (text: string): Decoded<BatchRow> => {
  const parsed = parse(text)
  if (!parsed.ok) return parsed
  const value = parsed.value
  if (!isRecord(value) || !Array.isArray(value.calls)) return bad("a batch row needs calls")
  const calls: Array<StoredCall> = []
  for (const call of value.calls as ReadonlyArray<JsonValue>) {
    if (
      !isRecord(call) || typeof call.callId !== "string" || typeof call.name !== "string" ||
      typeof call.arguments !== "string" || (call.malformed !== undefined && typeof call.malformed !== "string")
    ) return bad("a batch row's calls need string callId, name and arguments")
    calls.push(
      call.malformed === undefined
        ? { callId: call.callId, name: call.name, arguments: call.arguments }
        : { callId: call.callId, name: call.name, arguments: call.arguments, malformed: call.malformed }
    )
  }
  const agent = value.agent
  if (agent !== undefined && typeof agent !== "string") return bad("a batch row's agent must be a string")
  const maxParallel = value.maxParallel
  if (typeof maxParallel !== "number" || !Number.isInteger(maxParallel) || maxParallel < 1) {
    return bad("a batch row's maxParallel must be a positive integer")
  }
  return { ok: true, value: { calls, agent, maxParallel } }
}

/** The stop row: the caller's reason, as text. @internal */
export const encodeStop = (reason: string): string => stringify({ reason })

/** @internal */
export const decodeStop = (text: string): Decoded<string> => {
  const parsed = parse(text)
  if (!parsed.ok) return parsed
  const value = parsed.value
  return isRecord(value) && typeof value.reason === "string"
    ? { ok: true, value: value.reason }
    : bad("a stop row needs a string reason")
}
