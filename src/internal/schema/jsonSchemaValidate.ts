/** @internal */
import * as Json from "../../Json.js"
import type { JsonObject, JsonValue } from "../../Json.js"
import type { JsonSchema, Validator } from "../../JsonSchema.js"
import { JsonSchemaError } from "../../ToolError.js"
import { isIntrinsicArrayPrototype, violations } from "./jsonSchemaAssert.js"

const ANY = 0
const STRING = 1
const NUMBER = 2
const INTEGER = 3
const BOOLEAN = 4
const NULL = 5
const OBJECT = 6
const ARRAY = 7
const ONE_OF = 8

interface LeafNode {
  readonly kind: typeof ANY | typeof STRING | typeof NUMBER | typeof INTEGER | typeof BOOLEAN | typeof NULL
  readonly enumSet: ReadonlySet<unknown> | undefined
  readonly enumSuffix: string
  readonly hasConst: boolean
  readonly constValue: unknown
  readonly constSuffix: string
}

interface ObjectNode {
  readonly kind: typeof OBJECT
  readonly keys: ReadonlyArray<string>
  readonly children: Array<Node>
  readonly index: ReadonlyMap<string, number>
  readonly required: ReadonlyArray<number>
  readonly closed: boolean
}

interface ArrayNode {
  readonly kind: typeof ARRAY
  items: Node | undefined
}

interface OneOfNode {
  readonly kind: typeof ONE_OF
  readonly branches: Array<Node>
}

type Node = LeafNode | ObjectNode | ArrayNode | OneOfNode
type FrameNode = ObjectNode | ArrayNode | OneOfNode

const isLeaf = (node: Node): node is LeafNode => node.kind <= NULL

const SCALAR_KINDS: Readonly<Record<string, LeafNode["kind"]>> = {
  string: STRING,
  number: NUMBER,
  integer: INTEGER,
  boolean: BOOLEAN,
  null: NULL
}

const makeLeaf = (kind: LeafNode["kind"], schema: JsonObject): LeafNode => {
  const allowed = Object.hasOwn(schema, "enum") ? schema.enum as ReadonlyArray<JsonValue> : undefined
  const hasConst = Object.hasOwn(schema, "const")
  return {
    kind,
    enumSet: allowed === undefined ? undefined : new Set(allowed),
    enumSuffix: allowed === undefined ? "" : ` must be one of ${JSON.stringify(allowed)}`,
    hasConst,
    constValue: hasConst ? schema.const : undefined,
    constSuffix: hasConst ? ` must be ${JSON.stringify(schema.const)}` : ""
  }
}

const ANY_NODE: LeafNode = {
  kind: ANY,
  enumSet: undefined,
  enumSuffix: "",
  hasConst: false,
  constValue: undefined,
  constSuffix: ""
}

/** Builds the compiled tree of an asserted, snapshotted schema with an explicit work stack. */
const build = (root: JsonObject): Node => {
  let result: Node = ANY_NODE
  const pending: Array<readonly [JsonObject, (node: Node) => void]> = [[root, (node) => {
    result = node
  }]]
  for (let work = pending.pop(); work !== undefined; work = pending.pop()) {
    const [schema, assign] = work
    if (Object.hasOwn(schema, "oneOf")) {
      const branches = schema.oneOf as ReadonlyArray<JsonObject>
      const node: OneOfNode = { kind: ONE_OF, branches: new Array(branches.length) }
      branches.forEach((branch, i) => pending.push([branch, (child) => node.branches[i] = child]))
      assign(node)
      continue
    }
    const type = Object.hasOwn(schema, "type") ? schema.type as string : undefined
    if (type === undefined) {
      assign(ANY_NODE)
    } else if (type === "object") {
      const properties = Object.hasOwn(schema, "properties") ? schema.properties as JsonObject : {}
      const keys = Object.keys(properties)
      const index = new Map(keys.map((key, i) => [key, i] as const))
      const required = Object.hasOwn(schema, "required") ? schema.required as ReadonlyArray<string> : []
      const node: ObjectNode = {
        kind: OBJECT,
        keys,
        children: new Array(keys.length),
        index,
        required: required.map((name) => index.get(name)!),
        closed: Object.hasOwn(schema, "additionalProperties") && schema.additionalProperties === false
      }
      keys.forEach((key, i) => pending.push([properties[key] as JsonObject, (child) => node.children[i] = child]))
      assign(node)
    } else if (type === "array") {
      const node: ArrayNode = { kind: ARRAY, items: undefined }
      if (Object.hasOwn(schema, "items")) pending.push([schema.items as JsonObject, (child) => node.items = child])
      assign(node)
    } else {
      assign(makeLeaf(SCALAR_KINDS[type], schema))
    }
  }
  return result
}

const isJsonNumber = (value: number): boolean => value - value === 0 && (value !== 0 || 1 / value > 0)

const LOSSLESS_VALUE = " must be a lossless JSON value"

/** The violation of a leaf node after the quoted path, or `undefined`. Never throws. */
const leafSuffix = (node: LeafNode, value: unknown): string | undefined => {
  switch (node.kind) {
    case ANY:
      return Json.isLossless(value) ? undefined : LOSSLESS_VALUE
    case STRING:
      if (typeof value !== "string") return " must be a string"
      break
    case NUMBER:
      if (typeof value !== "number") return " must be a number"
      if (!isJsonNumber(value)) return " must be a finite JSON number"
      break
    case INTEGER:
      if (typeof value !== "number" || !isJsonNumber(value) || !Number.isInteger(value)) return " must be an integer"
      break
    case BOOLEAN:
      if (typeof value !== "boolean") return " must be a boolean"
      break
    case NULL:
      if (value !== null) return " must be null"
      break
  }
  if (node.enumSet !== undefined && !node.enumSet.has(value)) return node.enumSuffix
  if (node.hasConst && value !== node.constValue) return node.constSuffix
  return undefined
}

const display = (path: string): string => `"${path === "" ? "arguments" : path}"`

const childPath = (path: string, key: string): string => path === "" ? key : `${path}.${key}`

class Frame {
  path: string | undefined = undefined
  started = false
  violations: Array<string> | undefined = undefined
  values: Array<unknown> | undefined = undefined
  undeclared: Array<string> | undefined = undefined
  scanned = false
  lossy = false
  index = 0
  length = 0
  matches = 0
  constructor(
    readonly node: FrameNode,
    readonly value: unknown,
    readonly parent: Frame | undefined,
    readonly segment: string | number | undefined
  ) {}
}

const pathOf = (frame: Frame): string => {
  if (frame.path !== undefined) return frame.path
  const pending: Array<Frame> = []
  let current = frame
  while (current.path === undefined) {
    pending.push(current)
    current = current.parent!
  }
  let path = current.path
  for (let i = pending.length - 1; i >= 0; i--) {
    const next = pending[i]
    const segment = next.segment
    if (segment !== undefined) path = typeof segment === "number" ? `${path}[${segment}]` : childPath(path, segment)
    next.path = path
  }
  return path
}

const report = (frame: Frame, violation: string): void => {
  if (frame.violations === undefined) frame.violations = [violation]
  else frame.violations.push(violation)
}

const objectIsLossless = (frame: Frame): boolean => {
  if (frame.lossy) return false
  try {
    const value = frame.value as Record<string, unknown>
    const undeclared = frame.undeclared
    if (undeclared === undefined) return true
    for (let i = 0; i < undeclared.length; i++) {
      if (!Json.isLossless(value[undeclared[i]])) return false
    }
    return true
  } catch {
    return false
  }
}

/**
 * Reads the declared members of a plain record once. Fast path: the own keys are exactly the
 * enumerable string keys, so one `Object.keys` pass finds declared and undeclared members; else
 * each declared key is probed with `Object.hasOwn` and the record is already known to be lossy.
 */
const readObject = (frame: Frame, node: ObjectNode, value: Record<string, unknown>): Array<unknown> => {
  const declared = node.keys
  const values: Array<unknown> = new Array(declared.length)
  let keys: Array<string> | undefined
  try {
    keys = Object.keys(value)
    if (Reflect.ownKeys(value).length !== keys.length) keys = undefined
  } catch {
    keys = undefined
  }
  if (keys === undefined) {
    frame.lossy = true
    for (let i = 0; i < declared.length; i++) {
      const key = declared[i]
      values[i] = Object.hasOwn(value, key) ? value[key] : undefined
    }
    return values
  }
  const index = node.index
  let undeclared: Array<string> | undefined
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]
    const at = index.get(key)
    if (at === undefined) {
      if (undeclared === undefined) undeclared = [key]
      else undeclared.push(key)
    } else {
      const member = value[key]
      if (member === undefined) frame.lossy = true
      values[at] = member
    }
  }
  frame.undeclared = undeclared
  frame.scanned = true
  return values
}

const arrayIsLossless = (frame: Frame): boolean => {
  if (frame.lossy) return false
  try {
    const value = frame.value as ReadonlyArray<unknown>
    const proto: unknown = Object.getPrototypeOf(value)
    if (proto !== Array.prototype && !isIntrinsicArrayPrototype(proto)) return false
    const own = Reflect.ownKeys(value)
    return own.length === frame.length + 1 && own[frame.length] === "length"
  } catch {
    return false
  }
}

/** Advances `frame`; returns the child frame to descend into, or `undefined` once it is finished. */
const step = (frame: Frame): Frame | undefined => {
  const node = frame.node
  const value = frame.value
  switch (node.kind) {
    case OBJECT: {
      const keys = node.keys
      if (!frame.started) {
        frame.started = true
        if (!Json.isPlainRecord(value)) {
          report(frame, `${display(pathOf(frame))} must be an object`)
          return undefined
        }
        const values = readObject(frame, node, value)
        frame.values = values
        const required = node.required
        for (let i = 0; i < required.length; i++) {
          if (values[required[i]] === undefined) {
            report(frame, `missing required property "${childPath(pathOf(frame), keys[required[i]])}"`)
          }
        }
      }
      const values = frame.values!
      while (frame.index < keys.length) {
        const i = frame.index++
        const member = values[i]
        if (member === undefined) continue
        const child = node.children[i]
        if (isLeaf(child)) {
          const suffix = leafSuffix(child, member)
          if (suffix !== undefined) report(frame, display(childPath(pathOf(frame), keys[i])) + suffix)
        } else {
          return new Frame(child, member, frame, keys[i])
        }
      }
      if (node.closed) {
        const extra = frame.scanned
          ? frame.undeclared
          : Object.keys(value as object).filter((key) => !node.index.has(key))
        if (extra !== undefined) {
          for (let i = 0; i < extra.length; i++) {
            const at = display(childPath(pathOf(frame), extra[i]))
            report(frame, `${at} is not a declared property (additionalProperties: false)`)
          }
        }
      }
      if (frame.violations === undefined && !objectIsLossless(frame)) {
        report(frame, `${display(pathOf(frame))} must be a lossless JSON object`)
      }
      return undefined
    }
    case ARRAY: {
      const items = node.items
      if (!frame.started) {
        frame.started = true
        if (!Array.isArray(value)) {
          report(frame, `${display(pathOf(frame))} must be an array`)
          return undefined
        }
        if (items === undefined) {
          if (!Json.isLossless(value)) report(frame, `${display(pathOf(frame))} must be a dense lossless JSON array`)
          return undefined
        }
        frame.length = value.length
      }
      const array = value as ReadonlyArray<unknown>
      const length = frame.length
      while (frame.index < length) {
        const i = frame.index++
        const element = array[i]
        if (element === undefined && !Object.hasOwn(array, i)) {
          frame.lossy = true
          continue
        }
        if (isLeaf(items!)) {
          const suffix = leafSuffix(items, element)
          if (suffix !== undefined) report(frame, `"${pathOf(frame)}[${i}]"${suffix}`)
        } else {
          return new Frame(items!, element, frame, i)
        }
      }
      if (frame.violations === undefined && !arrayIsLossless(frame)) {
        report(frame, `${display(pathOf(frame))} must be a dense lossless JSON array`)
      }
      return undefined
    }
    case ONE_OF: {
      const branches = node.branches
      while (frame.index < branches.length) {
        const branch = branches[frame.index++]
        if (isLeaf(branch)) {
          if (leafSuffix(branch, value) === undefined) frame.matches++
        } else {
          return new Frame(branch, value, frame, undefined)
        }
      }
      if (frame.matches !== 1) {
        report(frame, `${display(pathOf(frame))} must match exactly one oneOf branch (matched ${frame.matches})`)
      }
      return undefined
    }
  }
}

const run = (root: Node, value: unknown, label: string): ReadonlyArray<string> => {
  if (isLeaf(root)) {
    const suffix = leafSuffix(root, value)
    return suffix === undefined ? [] : [display(label) + suffix]
  }
  const first = new Frame(root, value, undefined, undefined)
  first.path = label
  let current: Frame | undefined = first
  while (current !== undefined) {
    const frame: Frame = current
    let child: Frame | undefined
    try {
      child = step(frame)
    } catch {
      frame.violations = [display(pathOf(frame)) + LOSSLESS_VALUE]
      child = undefined
    }
    if (child !== undefined) {
      current = child
      continue
    }
    const parent = frame.parent
    if (parent === undefined) return frame.violations ?? []
    const found = frame.violations
    if (parent.node.kind === ONE_OF) {
      if (found === undefined) parent.matches++
    } else if (found !== undefined) {
      if (parent.violations === undefined) parent.violations = found
      else for (let i = 0; i < found.length; i++) parent.violations.push(found[i])
    }
    current = parent
  }
  return []
}

/** @internal */
export const compile = (schema: JsonSchema): Validator => {
  const snapshot = Json.snapshot(schema)
  if (snapshot._tag !== "Lossless") {
    const found = violations(schema)
    throw new JsonSchemaError({ violations: found.length > 0 ? found : ["schema must be a schema object"] })
  }
  const found = violations(snapshot.value)
  if (found.length > 0) throw new JsonSchemaError({ violations: found })
  const root = build(snapshot.value as JsonObject)
  return (value, rootLabel) => {
    const label = typeof rootLabel === "string" ? rootLabel : ""
    try {
      return run(root, value, label)
    } catch {
      return [display(label) + LOSSLESS_VALUE]
    }
  }
}

const cache = new WeakMap<object, Validator>()

/** @internal */
export const validate = (schema: JsonSchema, value: unknown, rootLabel: string): ReadonlyArray<string> => {
  if (typeof schema !== "object" || schema === null) return compile(schema)(value, rootLabel)
  let validator = cache.get(schema)
  if (validator === undefined) {
    validator = compile(schema)
    cache.set(schema, validator)
  }
  return validator(value, rootLabel)
}
