/**
 * Reads an SDK tool list once into detached, trusted records: every field of every entry is read
 * exactly once, schemas are snapshotted as lossless JSON and checked against the enforced
 * subset, and anything unreadable degrades instead of throwing.
 *
 * @internal
 */
import * as Json from "../../Json.js"
import type { JsonObject, JsonValue } from "../../Json.js"
import { violations } from "../schema/jsonSchemaAssert.js"

/**
 * A schema root as the renderers see it: a detached schema in the subset, a root that could not
 * be read or is outside the subset (`unknown` / `Any`), or no schema at all (any JSON value).
 *
 * @internal
 */
export type SdkRoot =
  | { readonly _tag: "Schema"; readonly schema: JsonValue }
  | { readonly _tag: "Unsupported" }
  | { readonly _tag: "Absent" }

/** @internal */
export interface SdkEntry {
  readonly name: string
  readonly description: string | undefined
  readonly parameters: SdkRoot
  readonly output: SdkRoot
}

const UNSUPPORTED: SdkRoot = { _tag: "Unsupported" }
const ABSENT: SdkRoot = { _tag: "Absent" }
const MAX_LENGTH = 4294967295

const readRoot = (read: () => unknown, absentWhenUndefined: boolean): SdkRoot => {
  let raw: unknown
  try {
    raw = read()
  } catch {
    return UNSUPPORTED
  }
  if (raw === undefined && absentWhenUndefined) return ABSENT
  const copy = Json.snapshot(raw)
  if (copy._tag !== "Lossless") return UNSUPPORTED
  return violations(copy.value).length === 0 ? { _tag: "Schema", schema: copy.value } : UNSUPPORTED
}

const readEntry = (entry: unknown): SdkEntry | undefined => {
  if ((typeof entry !== "object" || entry === null) && typeof entry !== "function") return undefined
  const record = entry as Record<string, unknown>
  let name: unknown
  try {
    name = record.name
  } catch {
    return undefined
  }
  if (typeof name !== "string") return undefined
  let description: unknown
  try {
    description = record.description
  } catch {
    description = undefined
  }
  const parameters = readRoot(() => record.parameters, false)
  const output = readRoot(() => record.output, true)
  return { name, description: typeof description === "string" ? description : undefined, parameters, output }
}

const byName = (a: SdkEntry, b: SdkEntry): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/**
 * The readable entries of `tools`, sorted by name with plain `<` (stable for equal names). An
 * entry that is not an object or whose `name` is not a readable string is left out. Never throws.
 *
 * @internal
 */
export const readTools = (tools: unknown): ReadonlyArray<SdkEntry> => {
  const out: Array<SdkEntry> = []
  try {
    if (!Array.isArray(tools)) return out
    const length: unknown = tools.length
    if (typeof length !== "number" || !Number.isSafeInteger(length) || length < 0 || length > MAX_LENGTH) return out
    for (let i = 0; i < length; i++) {
      let item: unknown
      try {
        item = tools[i]
      } catch {
        continue
      }
      const entry = readEntry(item)
      if (entry !== undefined) out.push(entry)
    }
  } catch {
    return out.sort(byName)
  }
  return out.sort(byName)
}

/**
 * An own field of a detached schema record (`__proto__` and inherited names are ordinary keys).
 *
 * @internal
 */
export const field = (node: JsonObject, key: string): JsonValue | undefined =>
  Object.hasOwn(node, key) ? node[key] : undefined

/** @internal */
export const isRecord = (value: JsonValue | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * How a detached subset node reads to a renderer.
 *
 * @internal
 */
export type SdkNode =
  | { readonly _tag: "Any" }
  | { readonly _tag: "OneOf"; readonly branches: ReadonlyArray<JsonValue> }
  | { readonly _tag: "Scalar"; readonly type: string; readonly literals: ReadonlyArray<JsonValue> | undefined }
  | { readonly _tag: "Array"; readonly items: JsonValue | undefined }
  | { readonly _tag: "Object"; readonly properties: ReadonlyArray<SdkProperty>; readonly open: boolean }

/** @internal */
export interface SdkProperty {
  readonly name: string
  readonly schema: JsonValue
  readonly required: boolean
  readonly description: string | undefined
}

const ANY: SdkNode = { _tag: "Any" }

/**
 * Classifies one node of a schema that passed the subset assertion: `const` beats `enum` for
 * scalars, an object's properties keep declaration order.
 *
 * @internal
 */
export const classify = (node: JsonValue): SdkNode => {
  if (!isRecord(node)) return ANY
  const oneOf = field(node, "oneOf")
  if (Array.isArray(oneOf)) return { _tag: "OneOf", branches: oneOf }
  const type = field(node, "type")
  switch (type) {
    case "array":
      return { _tag: "Array", items: field(node, "items") }
    case "object": {
      const properties = field(node, "properties")
      const required = field(node, "required")
      const requiredNames = new Set<string>()
      if (Array.isArray(required)) for (const name of required) if (typeof name === "string") requiredNames.add(name)
      const list: Array<SdkProperty> = []
      if (isRecord(properties)) {
        for (const name of Object.keys(properties)) {
          const schema = properties[name]
          const description = isRecord(schema) ? field(schema, "description") : undefined
          list.push({
            name,
            schema,
            required: requiredNames.has(name),
            description: typeof description === "string" ? description : undefined
          })
        }
      }
      return { _tag: "Object", properties: list, open: field(node, "additionalProperties") !== false }
    }
    case "string":
    case "number":
    case "integer":
    case "boolean":
    case "null": {
      if (Object.hasOwn(node, "const")) return { _tag: "Scalar", type, literals: [node.const] }
      const allowed = field(node, "enum")
      return { _tag: "Scalar", type, literals: Array.isArray(allowed) ? allowed : undefined }
    }
    default:
      return ANY
  }
}
