/** @internal */
import * as Json from "../../Json.js"
import type { AssertOptions } from "../../JsonSchema.js"

/** @internal */
export const SCHEMA_TYPES: ReadonlyArray<string> = ["object", "array", "string", "number", "integer", "boolean", "null"]

const SIBLING_KEYWORDS: ReadonlyArray<string> = [
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const"
]
const CONSTRAINT_KEYWORDS: ReadonlySet<string> = new Set(["type", "oneOf", ...SIBLING_KEYWORDS])
const ANNOTATION_KEYWORDS: ReadonlySet<string> = new Set(["description", "title", "default", "examples"])
const SCALAR_TYPES: ReadonlyArray<string> = ["string", "number", "integer", "boolean", "null"]
const PLACEMENT: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
  ["properties", ["object"]],
  ["required", ["object"]],
  ["additionalProperties", ["object"]],
  ["items", ["array"]],
  ["enum", SCALAR_TYPES],
  ["const", SCALAR_TYPES]
]
const SUBSET = "(subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"
const OBJECT_ROOT = "schema.type must be \"object\" (structured output is object-rooted)"

const propertyIsEnumerable = Object.prototype.propertyIsEnumerable
const arrayPrototype = Array.prototype
const intrinsicArrayPrototypes = new WeakSet<object>()

/**
 * Whether `proto` is an intrinsic `Array.prototype` of some realm, as `Json` decides it: an
 * empty array given that prototype is lossless exactly when the prototype is intrinsic.
 *
 * @internal
 */
export const isIntrinsicArrayPrototype = (proto: unknown): boolean => {
  if (proto === arrayPrototype) return true
  if (typeof proto !== "object" || proto === null) return false
  if (intrinsicArrayPrototypes.has(proto)) return true
  try {
    if (!Json.isLossless(Object.setPrototypeOf([], proto))) return false
  } catch {
    return false
  }
  intrinsicArrayPrototypes.add(proto)
  return true
}

/**
 * SCHEMA-2: a plain record whose own keys are all enumerable strings. Never throws.
 *
 * @internal
 */
export const isSchemaRecord = (input: unknown): input is Record<string, unknown> => {
  if (!Json.isPlainRecord(input)) return false
  try {
    const keys = Reflect.ownKeys(input)
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]
      if (typeof key !== "string" || !propertyIsEnumerable.call(input, key)) return false
    }
    return true
  } catch {
    return false
  }
}

/**
 * The elements of a dense plain array with no extra own keys (each read once), or `undefined`.
 * Never throws.
 *
 * @internal
 */
export const readPlainArray = (input: unknown): ReadonlyArray<unknown> | undefined => {
  try {
    if (!Array.isArray(input) || !isIntrinsicArrayPrototype(Object.getPrototypeOf(input))) return undefined
    const length = input.length
    const own = Reflect.ownKeys(input)
    if (own.length !== length + 1 || own[length] !== "length") return undefined
    const out: Array<unknown> = new Array(length)
    for (let i = 0; i < length; i++) {
      if (!Object.hasOwn(input, i)) return undefined
      out[i] = input[i]
    }
    return out
  } catch {
    return undefined
  }
}

const isArraySafe = (input: unknown): boolean => {
  try {
    return Array.isArray(input)
  } catch {
    return false
  }
}

const isJsonNumber = (value: unknown): value is number =>
  typeof value === "number" && Number.isFinite(value) && !Object.is(value, -0)

/**
 * SCHEMA-11 "matches": the literal `value` is a legal `enum`/`const` entry of scalar type `type`.
 *
 * @internal
 */
export const scalarMatches = (type: string, value: unknown): boolean => {
  switch (type) {
    case "string":
      return typeof value === "string"
    case "number":
      return isJsonNumber(value)
    case "integer":
      return isJsonNumber(value) && Number.isInteger(value)
    case "boolean":
      return typeof value === "boolean"
    case "null":
      return value === null
    default:
      return false
  }
}

const THREW: unique symbol = Symbol("effect-tool-runtime/JsonSchema/threw")

interface Fields {
  readonly keys: ReadonlyArray<string>
  readonly values: ReadonlyMap<string, unknown>
}

const readFields = (node: Record<string, unknown>): Fields | undefined => {
  try {
    const keys = Object.keys(node)
    const values = new Map<string, unknown>()
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]
      if (CONSTRAINT_KEYWORDS.has(key)) {
        values.set(key, node[key])
      } else if (ANNOTATION_KEYWORDS.has(key)) {
        let value: unknown
        try {
          value = node[key]
        } catch {
          value = THREW
        }
        values.set(key, value)
      }
    }
    return { keys, values }
  } catch {
    return undefined
  }
}

const readEntries = (input: unknown): ReadonlyArray<readonly [string, unknown]> | undefined => {
  if (!isSchemaRecord(input)) return undefined
  try {
    return Object.entries(input)
  } catch {
    return undefined
  }
}

type Task =
  | { readonly _tag: "Enter"; readonly node: unknown; readonly path: string }
  | { readonly _tag: "Leave"; readonly node: object }
  | { readonly _tag: "OneOfTail"; readonly fields: Fields; readonly path: string }
  | {
    readonly _tag: "ObjectTail"
    readonly fields: Fields
    readonly path: string
    readonly declared: ReadonlySet<string>
  }

const checkObjectTail = (
  fields: Fields,
  path: string,
  declared: ReadonlySet<string>,
  out: Array<string>
): void => {
  const values = fields.values
  if (values.has("required")) {
    const required = readPlainArray(values.get("required"))
    if (required === undefined || required.some((entry) => typeof entry !== "string")) {
      out.push(`${path}.required must be an array of strings`)
    } else {
      for (let i = 0; i < required.length; i++) {
        const name = required[i] as string
        if (!declared.has(name)) out.push(`${path}.required names "${name}" which is not in properties`)
      }
    }
  }
  if (values.has("additionalProperties") && typeof values.get("additionalProperties") !== "boolean") {
    out.push(`${path}.additionalProperties must be a boolean`)
  }
}

const checkScalar = (fields: Fields, path: string, type: string, out: Array<string>): void => {
  const values = fields.values
  const hasEnum = values.has("enum")
  const allowed = hasEnum ? readPlainArray(values.get("enum")) : undefined
  const enumValid = allowed !== undefined && allowed.length > 0 && allowed.every((entry) => scalarMatches(type, entry))
  if (hasEnum && !enumValid) out.push(`${path}.enum must be a non-empty array of ${type} values`)
  if (values.has("const")) {
    const declared = values.get("const")
    if (!scalarMatches(type, declared)) {
      out.push(`${path}.const must be a ${type} value`)
    } else if (enumValid && !allowed.includes(declared)) {
      out.push(`${path}.const must be one of ${path}.enum when both are declared`)
    }
  }
}

const enter = (
  node: unknown,
  path: string,
  tasks: Array<Task>,
  ancestors: Set<object>,
  out: Array<string>
): Fields | undefined => {
  if (!isSchemaRecord(node)) {
    out.push(`${path} must be a schema object`)
    return undefined
  }
  if (ancestors.has(node)) {
    out.push(`${path} is circular`)
    return undefined
  }
  const fields = readFields(node)
  if (fields === undefined) {
    out.push(`${path} must be a schema object`)
    return undefined
  }
  ancestors.add(node)
  tasks.push({ _tag: "Leave", node })
  const { keys, values } = fields
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]
    if (CONSTRAINT_KEYWORDS.has(key)) continue
    if (ANNOTATION_KEYWORDS.has(key)) {
      if (!Json.isLossless(values.get(key))) out.push(`${path}.${key} annotation must be lossless JSON data`)
      continue
    }
    out.push(`${path}.${key} is not a supported keyword ${SUBSET}`)
  }
  if (values.has("description") && typeof values.get("description") !== "string") {
    out.push(`${path}.description must be a string`)
  }
  if (values.has("title") && typeof values.get("title") !== "string") out.push(`${path}.title must be a string`)

  const hasType = values.has("type")
  const hasOneOf = values.has("oneOf")
  if (hasType && hasOneOf) {
    out.push(`${path} cannot declare both type and oneOf`)
    return fields
  }
  if (!hasType && !hasOneOf) {
    for (const key of SIBLING_KEYWORDS) {
      if (values.has(key)) out.push(`${path}.${key} requires type or oneOf`)
    }
    return fields
  }
  if (hasOneOf) {
    tasks.push({ _tag: "OneOfTail", fields, path })
    const branches = readPlainArray(values.get("oneOf"))
    if (branches === undefined || branches.length < 2) {
      out.push(`${path}.oneOf must be an array of at least two schemas`)
    } else {
      for (let i = branches.length - 1; i >= 0; i--) {
        tasks.push({ _tag: "Enter", node: branches[i], path: `${path}.oneOf[${i}]` })
      }
    }
    return fields
  }
  const type = values.get("type")
  if (typeof type !== "string" || !SCHEMA_TYPES.includes(type)) {
    out.push(
      isArraySafe(type)
        ? `${path}.type must be a single type string (type arrays are not supported)`
        : `${path}.type must be one of ${SCHEMA_TYPES.join("/")}`
    )
    return fields
  }
  for (const [key, types] of PLACEMENT) {
    if (values.has(key) && !types.includes(type)) out.push(`${path}.${key} is not supported on type "${type}"`)
  }
  switch (type) {
    case "object": {
      const entries = values.has("properties") ? readEntries(values.get("properties")) : undefined
      const declared = new Set<string>()
      if (entries !== undefined) for (const [key] of entries) declared.add(key)
      tasks.push({ _tag: "ObjectTail", fields, path, declared })
      if (values.has("properties")) {
        if (entries === undefined) {
          out.push(`${path}.properties must be an object of schemas`)
        } else {
          for (let i = entries.length - 1; i >= 0; i--) {
            const [key, child] = entries[i]
            tasks.push({ _tag: "Enter", node: child, path: `${path}.properties.${key}` })
          }
        }
      }
      break
    }
    case "array": {
      if (values.has("items")) tasks.push({ _tag: "Enter", node: values.get("items"), path: `${path}.items` })
      break
    }
    default:
      checkScalar(fields, path, type, out)
  }
  return fields
}

/** @internal */
export const violations = (schema: unknown, options?: AssertOptions): ReadonlyArray<string> => {
  const out: Array<string> = []
  let rootType: unknown = undefined
  try {
    const ancestors = new Set<object>()
    const tasks: Array<Task> = []
    const rootFields = enter(schema, "schema", tasks, ancestors, out)
    if (rootFields !== undefined) rootType = rootFields.values.get("type")
    for (let task = tasks.pop(); task !== undefined; task = tasks.pop()) {
      switch (task._tag) {
        case "Enter":
          enter(task.node, task.path, tasks, ancestors, out)
          break
        case "Leave":
          ancestors.delete(task.node)
          break
        case "OneOfTail":
          for (const key of SIBLING_KEYWORDS) {
            if (task.fields.values.has(key)) out.push(`${task.path}.${key} is not supported beside oneOf`)
          }
          break
        case "ObjectTail":
          checkObjectTail(task.fields, task.path, task.declared, out)
          break
      }
    }
  } catch {
    if (out.length === 0) out.push("schema must be a schema object")
  }
  if (options?.objectRoot === true && out.length === 0 && rootType !== "object") out.push(OBJECT_ROOT)
  return out
}
