/**
 * The conversion of a projected JSON Schema into the enforced subset (`JsonSchema`): `$ref`s
 * resolved, a union kept as a `oneOf` only when its branches are provably disjoint, and whatever
 * the subset cannot say loosened.
 *
 * @internal
 */
import type { JsonObject, JsonValue } from "../../../Json.js"
import { hasOwn, isRecord } from "./objects.js"

type Mutable = { [key: string]: JsonValue }

const setKey = (target: Mutable, key: string, value: JsonValue): void => {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
}

const SCALAR_TYPES: ReadonlySet<string> = new Set(["string", "number", "integer", "boolean", "null"])
const SUBSET_TYPES: ReadonlySet<string> = new Set(["object", "array", ...SCALAR_TYPES])

const matchesScalar = (type: string, v: JsonValue): boolean => {
  switch (type) {
    case "string":
      return typeof v === "string"
    case "number":
      return typeof v === "number" && Number.isFinite(v) && !Object.is(v, -0)
    case "integer":
      return typeof v === "number" && Number.isInteger(v) && !Object.is(v, -0)
    case "boolean":
      return typeof v === "boolean"
    case "null":
      return v === null
  }
  return false
}

interface Literals {
  readonly enumValues: ReadonlyArray<JsonValue> | undefined
  readonly constValue: { readonly value: JsonValue } | undefined
}

const literalsOf = (node: JsonObject, type: string): Literals => {
  const rawEnum = node.enum
  let enumValues: ReadonlyArray<JsonValue> | undefined = Array.isArray(rawEnum) && rawEnum.length > 0 &&
      (rawEnum as ReadonlyArray<JsonValue>).every((v) => matchesScalar(type, v))
    ? rawEnum as ReadonlyArray<JsonValue>
    : undefined
  const constValue = hasOwn(node, "const") && matchesScalar(type, node.const!) ? { value: node.const! } : undefined
  if (enumValues !== undefined && constValue !== undefined && !enumValues.includes(constValue.value)) {
    enumValues = undefined
  }
  return { enumValues, constValue }
}

const literalSet = (literals: Literals): ReadonlyArray<JsonValue> | undefined =>
  literals.constValue !== undefined ? [literals.constValue.value] : literals.enumValues

const subsetType = (node: JsonObject): string | undefined =>
  typeof node.type === "string" && SUBSET_TYPES.has(node.type) ? node.type : undefined

const requiredNames = (node: JsonObject): ReadonlyArray<string> => {
  const properties = node.properties
  const required = node.required
  if (!isRecord(properties) || !Array.isArray(required)) return []
  const out: Array<string> = []
  for (const name of required as ReadonlyArray<JsonValue>) {
    if (typeof name === "string" && hasOwn(properties, name) && !out.includes(name)) out.push(name)
  }
  return out
}

interface Facts {
  readonly type: string | undefined
  readonly literals: ReadonlyArray<JsonValue> | undefined
  readonly tags: ReadonlyMap<string, ReadonlyArray<JsonValue>>
}

const factsOf = (node: JsonValue): Facts => {
  const tags = new Map<string, ReadonlyArray<JsonValue>>()
  if (!isRecord(node) || hasOwn(node, "$ref")) return { type: undefined, literals: undefined, tags }
  const type = subsetType(node)
  if (type === undefined) return { type, literals: undefined, tags }
  if (SCALAR_TYPES.has(type)) return { type, literals: literalSet(literalsOf(node, type)), tags }
  if (type === "object") {
    const properties = node.properties as JsonObject
    for (const name of requiredNames(node)) {
      const p = properties[name]
      if (!isRecord(p) || hasOwn(p, "$ref")) continue
      const pType = subsetType(p)
      if (pType === undefined || !SCALAR_TYPES.has(pType)) continue
      const set = literalSet(literalsOf(p, pType))
      if (set !== undefined) tags.set(name, set)
    }
  }
  return { type, literals: undefined, tags }
}

const intersects = (a: ReadonlyArray<JsonValue>, b: ReadonlyArray<JsonValue>): boolean => a.some((v) => b.includes(v))

const isNumeric = (type: string): boolean => type === "number" || type === "integer"

const disjoint = (a: Facts, b: Facts): boolean => {
  if (a.type === undefined || b.type === undefined) return false
  if (a.type !== b.type && !(isNumeric(a.type) && isNumeric(b.type))) return true
  if (a.type === "object") {
    for (const [key, la] of a.tags) {
      const lb = b.tags.get(key)
      if (lb !== undefined && !intersects(la, lb)) return true
    }
    return false
  }
  return a.literals !== undefined && b.literals !== undefined && !intersects(a.literals, b.literals)
}

const unionMembers = (node: JsonObject): ReadonlyArray<JsonValue> | undefined => {
  if (Array.isArray(node.type)) {
    const types = node.type as ReadonlyArray<JsonValue>
    const seen = new Set<string>()
    for (const t of types) {
      if (typeof t !== "string" || !SUBSET_TYPES.has(t) || seen.has(t)) return undefined
      seen.add(t)
    }
    return types.map((t): JsonValue => ({ type: t }))
  }
  const direct = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined
  if (direct === undefined) return undefined
  const out: Array<JsonValue> = []
  const stack: Array<JsonValue> = [...(direct as ReadonlyArray<JsonValue>)].reverse()
  while (stack.length > 0) {
    const member = stack.pop()!
    if (isRecord(member) && member.type === undefined && !hasOwn(member, "$ref")) {
      const nested = Array.isArray(member.anyOf) ? member.anyOf : Array.isArray(member.oneOf) ? member.oneOf : undefined
      if (nested !== undefined) {
        for (let i = nested.length - 1; i >= 0; i--) stack.push((nested as ReadonlyArray<JsonValue>)[i]!)
        continue
      }
    }
    out.push(member)
  }
  return out
}

const copyAnnotations = (raw: JsonObject, target: Mutable): void => {
  for (const key of Object.keys(raw)) {
    const value = raw[key]!
    if ((key === "description" || key === "title") && typeof value === "string") setKey(target, key, value)
    else if (key === "default" || key === "examples") setKey(target, key, value)
  }
}

interface Task {
  readonly raw: JsonValue
  readonly target: Mutable
  readonly chain: ReadonlyArray<string>
}

const REF_PREFIX = "#/$defs/"

/**
 * Converts a JSON Schema projected by `effect/JSONSchema` into the enforced subset, loosening
 * whatever the subset cannot say. Iterative.
 *
 * @internal
 */
export const toSubset = (root: JsonObject, definitions: JsonObject): JsonObject => {
  const result: Mutable = {}
  const stack: Array<Task> = [{ raw: root, target: result, chain: [] }]
  while (stack.length > 0) {
    const task = stack.pop()!
    let raw = task.raw
    let chain = task.chain
    const { target } = task
    if (!isRecord(raw)) continue
    if (typeof raw.$ref === "string") {
      const name = raw.$ref.startsWith(REF_PREFIX) ? raw.$ref.slice(REF_PREFIX.length) : undefined
      const resolved = name !== undefined && hasOwn(definitions, name) && !chain.includes(name)
        ? definitions[name]
        : undefined
      if (resolved === undefined || !isRecord(resolved)) {
        copyAnnotations(raw, target)
        continue
      }
      const siblings = raw
      raw = resolved
      chain = [...chain, name!]
      copyAnnotations(raw, target)
      copyAnnotations(siblings, target)
    } else {
      copyAnnotations(raw, target)
    }
    const type = subsetType(raw)
    if (type === undefined) {
      const members = unionMembers(raw)
      if (members === undefined || members.length === 0) continue
      if (members.length === 1) {
        stack.push({ raw: members[0]!, target, chain })
        continue
      }
      const facts = members.map(factsOf)
      let ok = true
      for (let i = 0; ok && i < facts.length; i++) {
        for (let j = i + 1; ok && j < facts.length; j++) ok = disjoint(facts[i]!, facts[j]!)
      }
      if (!ok) continue
      const branches: Array<Mutable> = members.map(() => ({}))
      setKey(target, "oneOf", branches)
      for (let i = members.length - 1; i >= 0; i--) stack.push({ raw: members[i]!, target: branches[i]!, chain })
      continue
    }
    setKey(target, "type", type)
    if (type === "object") {
      const properties = raw.properties
      if (isRecord(properties)) {
        const out: Mutable = {}
        const keys = Object.keys(properties)
        for (const key of keys) setKey(out, key, {})
        setKey(target, "properties", out)
        for (let i = keys.length - 1; i >= 0; i--) {
          stack.push({ raw: properties[keys[i]!]!, target: out[keys[i]!] as Mutable, chain })
        }
        const required = requiredNames(raw)
        if (required.length > 0) setKey(target, "required", [...required])
      }
      const additional = raw.additionalProperties
      if (typeof additional === "boolean") setKey(target, "additionalProperties", additional)
    } else if (type === "array") {
      if (isRecord(raw.items)) {
        const items: Mutable = {}
        setKey(target, "items", items)
        stack.push({ raw: raw.items, target: items, chain })
      }
    } else {
      const literals = literalsOf(raw, type)
      if (literals.enumValues !== undefined) setKey(target, "enum", [...literals.enumValues])
      if (literals.constValue !== undefined) setKey(target, "const", literals.constValue.value)
    }
  }
  return result
}
