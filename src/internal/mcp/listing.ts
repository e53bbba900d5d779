/**
 * Reading a server's `tools/list` answers: each page is detached first (every field read once,
 * hostile values rejected), then every entry is checked on the copy and becomes either a tool
 * spec or a skipped entry with a reason.
 *
 * @internal
 */
import * as Json from "../../Json.js"
import type { JsonObject, JsonValue } from "../../Json.js"
import { RUN_CODE_NAME } from "../../ToolRegistry.js"

/** @internal */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/

/** @internal */
export const PREFIX_PATTERN = /^[A-Za-z0-9_.-]{0,64}$/

/** @internal */
export interface ToolSpec {
  readonly serverName: string
  readonly name: string
  readonly description: string
  readonly inputSchema: JsonObject
  readonly outputSchema: JsonObject | undefined
  readonly readOnly: boolean
  readonly destructive: boolean | undefined
  /** Equal fingerprints mean an unchanged tool across listings. */
  readonly fingerprint: string
}

/** @internal */
export interface Skipped {
  readonly name: string
  readonly reason: string
}

/** @internal */
export type Page =
  | { readonly _tag: "Page"; readonly entries: ReadonlyArray<JsonValue>; readonly nextCursor: string | undefined }
  | { readonly _tag: "Malformed"; readonly reason: string }

/**
 * A safe display of a server-supplied name: the name itself when it is a string (clipped),
 * otherwise a description of its kind.
 *
 * @internal
 */
export const displayName = (name: JsonValue | undefined): string => {
  if (typeof name === "string") return name.length <= 128 ? name : `${name.slice(0, 128)}…`
  if (name === undefined) return "<missing name>"
  return name === null ? "<null name>" : `<${Array.isArray(name) ? "array" : typeof name} name>`
}

/**
 * What a real wire would carry: the value serialized and parsed again (every getter read once,
 * `undefined` and functions dropped), or `undefined` when it cannot be serialized (a throwing
 * getter or proxy, a `bigint`, a cycle).
 *
 * @internal
 */
export const wire = (raw: unknown): JsonValue | undefined => {
  try {
    const text = JSON.stringify(raw)
    return text === undefined ? undefined : JSON.parse(text) as JsonValue
  } catch {
    return undefined
  }
}

/** @internal */
export const readPage = (raw: unknown): Page => {
  const value = wire(raw)
  if (!Json.isPlainRecord(value)) {
    return { _tag: "Malformed", reason: "the tools/list result is not a JSON object" }
  }
  const record = value as JsonObject
  const tools = record.tools
  if (!Array.isArray(tools)) return { _tag: "Malformed", reason: "the tools/list result has no tools array" }
  const cursor = record.nextCursor
  if (cursor !== undefined && typeof cursor !== "string") {
    return { _tag: "Malformed", reason: "the tools/list nextCursor is not a string" }
  }
  return { _tag: "Page", entries: tools as ReadonlyArray<JsonValue>, nextCursor: cursor }
}

const withoutDialect = (schema: JsonObject): JsonObject => {
  if (!Object.prototype.hasOwnProperty.call(schema, "$schema")) return schema
  const out: Record<string, JsonValue> = {}
  for (const key of Object.keys(schema)) {
    if (key !== "$schema") Object.defineProperty(out, key, { value: schema[key], enumerable: true, writable: true })
  }
  return out
}

/**
 * A schema without its root `$schema` dialect marker (the subset has no such keyword); own
 * keys only, so an own `__proto__` key stays a key.
 *
 * @internal
 */
export const stripDialect = withoutDialect

/** @internal */
export const readTool = (entry: JsonValue, prefix: string): ToolSpec | Skipped => {
  if (!Json.isPlainRecord(entry)) return { name: "<not an object>", reason: "the tool entry is not an object" }
  const record = entry as JsonObject
  const serverName = record.name
  const name = displayName(serverName)
  if (typeof serverName !== "string" || !NAME_PATTERN.test(serverName)) {
    return { name, reason: "the tool name must be 1 to 128 characters of A-Z, a-z, 0-9, _, - and ." }
  }
  const registered = prefix + serverName
  if (registered === RUN_CODE_NAME) return { name, reason: `"${RUN_CODE_NAME}" is reserved` }
  const description = record.description
  if (description !== undefined && typeof description !== "string") {
    return { name, reason: "the tool description is not a string" }
  }
  const input = record.inputSchema
  if (!Json.isPlainRecord(input) || (input as JsonObject).type !== "object") {
    return { name, reason: "the inputSchema must be a JSON Schema object with type \"object\"" }
  }
  const output = record.outputSchema
  if (output !== undefined && !Json.isPlainRecord(output)) {
    return { name, reason: "the outputSchema must be a JSON Schema object" }
  }
  const execution = record.execution
  if (Json.isPlainRecord(execution) && (execution as JsonObject).taskSupport === "required") {
    return { name, reason: "the tool requires task-based execution, which is not supported" }
  }
  const annotations = Json.isPlainRecord(record.annotations) ? record.annotations as JsonObject : undefined
  const readOnly = annotations?.readOnlyHint === true
  const destructiveHint = annotations?.destructiveHint
  const destructive = typeof destructiveHint === "boolean" ? destructiveHint : undefined
  const spec = {
    serverName,
    name: registered,
    description: description ?? "",
    inputSchema: input as JsonObject,
    outputSchema: output as JsonObject | undefined,
    readOnly,
    destructive
  }
  return { ...spec, fingerprint: JSON.stringify([description ?? "", input, output ?? null, readOnly, destructive ?? null]) }
}

/** @internal */
export const isSkipped = (read: ToolSpec | Skipped): read is Skipped => !("fingerprint" in read)
