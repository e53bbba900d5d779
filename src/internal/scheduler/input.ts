/**
 * What the caller hands to `runBatch`, read: the calls array, each call and the batch options.
 * Everything the caller hands in is read once and treated as hostile: nothing of it is converted,
 * formatted or logged unguarded (issue 8 item 7). What `onCommit` does is `onCommit.ts`'s.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type { AgentId } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { CommitEvent } from "../../Scheduler.js"
import { detailOf } from "../../ToolError.js"
import * as ToolResult from "../../ToolResult.js"
import { isAbortSignal } from "../base/signals.js"

/** @internal */
export const DEFAULT_MAX_PARALLEL = 10

/** @internal */
export const MAX_PARALLEL_MESSAGE = "maxParallelToolCalls must be a positive integer"

/** @internal */
export const isValidMaxParallel = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value > 0

/**
 * The error text of a malformed call whose `callId` or `name` is not a string (or that is not an
 * object at all): the text `ToolRuntime.execute` gives an input with the same fault.
 *
 * @internal
 */
export const MALFORMED_IDENTITY_MESSAGE = "tool execution input needs string callId and name"

/** @internal */
export const MALFORMED_ARGUMENTS_MESSAGE = "tool call arguments must be a string"

/** @internal */
export const CALLS_MESSAGE = "runBatch needs an array of tool calls"

/** One model call, each field read once. @internal */
export interface Call {
  readonly callId: string
  readonly name: string
  readonly raw: string
  /** The scheduler's own error result for a malformed call (never sent to the runtime). */
  readonly malformed: ToolResult.ToolResult | undefined
}

type Field = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }

const readField = (target: object, key: string): Field => {
  try {
    return { ok: true, value: (target as Record<string, unknown>)[key] }
  } catch (error) {
    return { ok: false, error }
  }
}

const stringOr = (field: Field): string => field.ok && typeof field.value === "string" ? field.value : ""

const malformedCall = (callId: string, name: string, raw: string, detail: ReturnType<typeof detailOf>): Call => ({
  callId,
  name,
  raw,
  malformed: Json.deepFreeze(ToolResult.failure(detail))
})

/**
 * One model call, each field read exactly once. A malformed call keeps the fields that were
 * strings (`""` for the others) and gets: the ERR-1 result of the first thrown value (entry,
 * then `callId`, `name`, `arguments`), else the identity text when the entry is not an object or
 * its `callId`/`name` is not a string, else the arguments text.
 */
const readCall = (calls: ReadonlyArray<unknown>, index: number): Call => {
  let entry: unknown
  try {
    entry = calls[index]
  } catch (error) {
    return malformedCall("", "", "", detailOf(error))
  }
  if ((typeof entry !== "object" && typeof entry !== "function") || entry === null) {
    return malformedCall("", "", "", { message: MALFORMED_IDENTITY_MESSAGE })
  }
  const callId = readField(entry, "callId")
  const name = readField(entry, "name")
  const args = readField(entry, "arguments")
  const id = stringOr(callId)
  const named = stringOr(name)
  const raw = stringOr(args)
  const threw = !callId.ok ? callId : !name.ok ? name : !args.ok ? args : undefined
  if (threw !== undefined && !threw.ok) return malformedCall(id, named, raw, detailOf(threw.error))
  if (
    !callId.ok || typeof callId.value !== "string" || !name.ok || typeof name.value !== "string"
  ) {
    return malformedCall(id, named, raw, { message: MALFORMED_IDENTITY_MESSAGE })
  }
  if (!args.ok || typeof args.value !== "string") {
    return malformedCall(id, named, raw, { message: MALFORMED_ARGUMENTS_MESSAGE })
  }
  return { callId: id, name: named, raw, malformed: undefined }
}

const MAX_CALLS = 2 ** 32 - 1

const illegal = (message: string) => new Cause.IllegalArgumentException(message)

/** @internal */
export const readCalls = (calls: unknown): Array<Call> | Cause.IllegalArgumentException => {
  let length: unknown
  try {
    if (!Array.isArray(calls)) return illegal(CALLS_MESSAGE)
    length = calls.length
  } catch (error) {
    return illegal(`runBatch could not read the tool-call array: ${detailOf(error).message}`)
  }
  if (typeof length !== "number" || !Number.isInteger(length) || length < 0 || length > MAX_CALLS) {
    return illegal("runBatch could not read the tool-call array: invalid length")
  }
  const out: Array<Call> = []
  for (let i = 0; i < length; i++) out.push(readCall(calls as ReadonlyArray<unknown>, i))
  return out
}

/** The batch options, read. @internal */
export interface Settings {
  readonly agent: AgentId | undefined
  readonly maxParallel: number
  readonly signal: AbortSignal | undefined
  readonly batchId: string | undefined
  readonly onCommit: ((event: CommitEvent) => unknown) | undefined
}

const defaults: Settings = {
  agent: undefined,
  maxParallel: DEFAULT_MAX_PARALLEL,
  signal: undefined,
  batchId: undefined,
  onCommit: undefined
}

const OPTION_KEYS = ["agent", "maxParallel", "signal", "batchId", "onCommit"] as const

/** The batch options, each read exactly once and validated. @internal */
export const readOptions = (options: unknown): Settings | Cause.IllegalArgumentException => {
  if (options === undefined || options === null) return defaults
  if (typeof options !== "object" && typeof options !== "function") return illegal("runBatch options must be an object")
  const read: Record<string, unknown> = {}
  for (const key of OPTION_KEYS) {
    const field = readField(options, key)
    if (!field.ok) return illegal(`runBatch could not read option "${key}": ${detailOf(field.error).message}`)
    read[key] = field.value
  }
  const maxParallel = read.maxParallel ?? DEFAULT_MAX_PARALLEL
  if (!isValidMaxParallel(maxParallel)) return illegal(MAX_PARALLEL_MESSAGE)
  const { agent, batchId, onCommit, signal } = read
  if (signal !== undefined && !isAbortSignal(signal)) {
    return illegal("runBatch option \"signal\" must be an AbortSignal")
  }
  if (agent !== undefined && typeof agent !== "string") return illegal("runBatch option \"agent\" must be a string")
  if (batchId !== undefined && typeof batchId !== "string") {
    return illegal("runBatch option \"batchId\" must be a string")
  }
  if (onCommit !== undefined && typeof onCommit !== "function") {
    return illegal("runBatch option \"onCommit\" must be a function")
  }
  return {
    agent,
    maxParallel,
    signal,
    batchId,
    onCommit: onCommit as ((event: CommitEvent) => unknown) | undefined
  }
}
