/** @internal */
import * as Json from "../../Json.js"
import * as JsonSchema from "../../JsonSchema.js"
import { JsonSchemaError } from "../../ToolError.js"

const ANNOTATIONS: ReadonlyArray<string> = ["description", "title", "default", "examples"]
const SCALARS: ReadonlySet<string> = new Set(["string", "number", "integer", "boolean", "null"])
const TYPE_MESSAGE = "type must be string/number/integer/boolean/null/array/object/json, or use oneOf"
const ABSENT_DATA = undefined

type Fields = Map<string, unknown>

interface Frame {
  readonly input: object | undefined
  readonly results: Array<unknown>
  readonly required: Array<boolean>
  readonly build: (frame: Frame) => unknown
  readonly parent: Frame
  readonly index: number
}

type Task =
  | {
    readonly _tag: "Node"
    readonly input: unknown
    readonly path: string
    readonly entry: boolean
    readonly parent: Frame
    readonly index: number
  }
  | {
    readonly _tag: "Map"
    readonly input: unknown
    readonly path: string
    readonly parent: Frame
    readonly index: number
  }
  | { readonly _tag: "Exit"; readonly frame: Frame }

class DslFailure {
  constructor(readonly message: string) {}
}

function fail(message: string): never {
  throw new DslFailure(message)
}

const define = (target: Record<string, unknown>, key: string, value: unknown): void => {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

const readRecord = (input: unknown): Fields | undefined => {
  try {
    if (!Json.isPlainRecord(input)) return undefined
    const keys = Object.keys(input)
    if (Reflect.ownKeys(input).length !== keys.length) return undefined
    const fields: Fields = new Map()
    for (let i = 0; i < keys.length; i++) fields.set(keys[i]!, input[keys[i]!])
    return fields
  } catch {
    return undefined
  }
}

const isIntrinsicArrayPrototype = (proto: unknown): boolean => {
  if (proto === Array.prototype) return true
  if (!Array.isArray(proto)) return false
  const objectProto = Object.getPrototypeOf(proto)
  return objectProto !== null && Object.getPrototypeOf(objectProto) === null
}

const readDenseArray = (input: unknown): ReadonlyArray<unknown> | undefined => {
  try {
    if (!Array.isArray(input) || !isIntrinsicArrayPrototype(Object.getPrototypeOf(input))) return undefined
    const length = input.length
    const keys = Reflect.ownKeys(input)
    if (keys.length !== length + 1) return undefined
    const out: Array<unknown> = new Array(length)
    for (let i = 0; i < length; i++) {
      const descriptor = Reflect.getOwnPropertyDescriptor(input, String(i))
      if (descriptor === undefined) return undefined
      out[i] = "value" in descriptor
        ? descriptor.value
        : descriptor.get === undefined
        ? undefined
        : descriptor.get.call(input)
    }
    return out
  } catch {
    return undefined
  }
}

const copyData = (value: unknown): unknown => {
  const snap = Json.snapshot(value)
  switch (snap._tag) {
    case "Lossless":
      return snap.value
    case "NotLossless":
      return value
    case "Threw":
      return ABSENT_DATA
  }
}

const annotationsOf = (fields: Fields, target: Record<string, unknown>): void => {
  for (const key of ANNOTATIONS) {
    if (fields.has(key)) define(target, key, copyData(fields.get(key)))
  }
}

const checkVocabulary = (fields: Fields, path: string, allowed: ReadonlySet<string>, entry: boolean): void => {
  for (const key of fields.keys()) {
    if (allowed.has(key) || ANNOTATIONS.includes(key) || (entry && key === "required")) continue
    fail(`${path}.${key} is not supported by the value schema DSL`)
  }
}

const ONE_OF_KEYS: ReadonlySet<string> = new Set(["oneOf"])
const SCALAR_KEYS: ReadonlySet<string> = new Set(["type", "enum", "const"])
const ARRAY_KEYS: ReadonlySet<string> = new Set(["type", "items"])
const OBJECT_KEYS: ReadonlySet<string> = new Set(["type", "properties", "additionalProperties"])
const JSON_KEYS: ReadonlySet<string> = new Set(["type"])

const compileTree = (root: unknown, rootPath: string, rootIsMap: boolean): unknown => {
  const sink: Frame = {
    input: undefined,
    results: [undefined],
    required: [],
    build: () => undefined,
    parent: undefined as unknown as Frame,
    index: 0
  }
  const ancestors = new Set<object>()
  const stack: Array<Task> = [
    rootIsMap
      ? { _tag: "Map", input: root, path: rootPath, parent: sink, index: 0 }
      : { _tag: "Node", input: root, path: rootPath, entry: false, parent: sink, index: 0 }
  ]
  const open = (
    input: object,
    parent: Frame,
    index: number,
    build: (frame: Frame) => unknown,
    size: number
  ): Frame => {
    const frame: Frame = { input, results: new Array(size), required: [], build, parent, index }
    ancestors.add(input)
    stack.push({ _tag: "Exit", frame })
    return frame
  }
  while (stack.length > 0) {
    const task = stack.pop()!
    switch (task._tag) {
      case "Exit": {
        const frame = task.frame
        ancestors.delete(frame.input!)
        frame.parent.results[frame.index] = frame.build(frame)
        break
      }
      case "Map": {
        const { input, path } = task
        const fields = readRecord(input)
        if (fields === undefined) fail(`${path} must be an object of value schemas`)
        if (ancestors.has(input as object)) fail(`${path} is circular`)
        const keys = Array.from(fields.keys())
        const frame = open(input as object, task.parent, task.index, (self) => {
          const properties: Record<string, unknown> = {}
          const required: Array<string> = []
          for (let i = 0; i < keys.length; i++) {
            define(properties, keys[i]!, self.results[i])
            if (self.required[i] === true) required.push(keys[i]!)
          }
          return { properties, required }
        }, keys.length)
        for (let i = keys.length - 1; i >= 0; i--) {
          const key = keys[i]!
          const child = fields.get(key)
          stack.push({ _tag: "Node", input: child, path: `${path}.${key}`, entry: true, parent: frame, index: i })
        }
        break
      }
      case "Node": {
        const { entry, input, path } = task
        const fields = readRecord(input)
        if (fields === undefined) fail(`${path} must be a value schema object`)
        if (ancestors.has(input as object)) fail(`${path} is circular`)
        if (entry) {
          task.parent.required[task.index] = fields.has("required")
          if (fields.has("required") && fields.get("required") !== true) {
            fail(`${path}.required must be true when present`)
          }
        }
        const hasType = fields.has("type")
        if (hasType && fields.has("oneOf")) fail(`${path} cannot declare both type and oneOf`)
        if (!hasType && fields.has("oneOf")) {
          checkVocabulary(fields, path, ONE_OF_KEYS, entry)
          const branches = readDenseArray(fields.get("oneOf"))
          if (branches === undefined) fail(`${path}.oneOf must be an array of at least two value schemas`)
          const frame = open(input as object, task.parent, task.index, (self) => {
            const out: Record<string, unknown> = { oneOf: self.results }
            annotationsOf(fields, out)
            return out
          }, branches.length)
          for (let i = branches.length - 1; i >= 0; i--) {
            stack.push({
              _tag: "Node",
              input: branches[i],
              path: `${path}.oneOf[${i}]`,
              entry: false,
              parent: frame,
              index: i
            })
          }
          break
        }
        const type = fields.get("type")
        if (typeof type === "string" && SCALARS.has(type)) {
          checkVocabulary(fields, path, SCALAR_KEYS, entry)
          let enumValues: unknown = ABSENT_DATA
          if (fields.has("enum")) {
            const values = readDenseArray(fields.get("enum"))
            if (values === undefined) fail(`${path}.enum must be a non-empty array of scalar values`)
            enumValues = values.map(copyData)
          }
          const out: Record<string, unknown> = { type }
          annotationsOf(fields, out)
          if (fields.has("enum")) out.enum = enumValues
          if (fields.has("const")) out.const = copyData(fields.get("const"))
          task.parent.results[task.index] = out
        } else if (type === "array") {
          checkVocabulary(fields, path, ARRAY_KEYS, entry)
          const hasItems = fields.has("items")
          const frame = open(input as object, task.parent, task.index, (self) => {
            const out: Record<string, unknown> = { type: "array" }
            annotationsOf(fields, out)
            if (hasItems) out.items = self.results[0]
            return out
          }, hasItems ? 1 : 0)
          if (hasItems) {
            const items = fields.get("items")
            stack.push({ _tag: "Node", input: items, path: `${path}.items`, entry: false, parent: frame, index: 0 })
          }
        } else if (type === "object") {
          checkVocabulary(fields, path, OBJECT_KEYS, entry)
          const additional = fields.get("additionalProperties")
          if (typeof additional !== "boolean") fail(`${path}.additionalProperties must be explicitly true or false`)
          const hasProperties = fields.has("properties")
          const frame = open(input as object, task.parent, task.index, (self) => {
            const out: Record<string, unknown> = { type: "object" }
            annotationsOf(fields, out)
            out.additionalProperties = additional
            if (hasProperties) {
              const map = self.results[0] as { properties: Record<string, unknown>; required: Array<string> }
              out.properties = map.properties
              if (map.required.length > 0) out.required = map.required
            }
            return out
          }, hasProperties ? 1 : 0)
          if (hasProperties) {
            const properties = fields.get("properties")
            stack.push({ _tag: "Map", input: properties, path: `${path}.properties`, parent: frame, index: 0 })
          }
        } else if (type === "json") {
          checkVocabulary(fields, path, JSON_KEYS, entry)
          const out: Record<string, unknown> = {}
          annotationsOf(fields, out)
          task.parent.results[task.index] = out
        } else {
          fail(`${path}.${TYPE_MESSAGE}`)
        }
        break
      }
    }
  }
  return sink.results[0]
}

const finish = (compiled: unknown): JsonSchema.JsonSchema => {
  const found = JsonSchema.violations(compiled)
  if (found.length > 0) throw new JsonSchemaError({ violations: found })
  return Json.deepFreeze(compiled as JsonSchema.JsonSchema)
}

const run = (root: unknown, rootPath: string, rootIsMap: boolean): unknown => {
  try {
    return compileTree(root, rootPath, rootIsMap)
  } catch (error) {
    if (error instanceof DslFailure) throw new JsonSchemaError({ violations: [error.message] })
    throw error
  }
}

/** @internal */
export const compileParameters = (spec: unknown): JsonSchema.JsonSchema => {
  const map = run(spec, "parameters", true) as { properties: Record<string, unknown>; required: Array<string> }
  const out: Record<string, unknown> = { type: "object", properties: map.properties }
  if (map.required.length > 0) out.required = map.required
  return finish(out)
}

/** @internal */
export const compileValue = (spec: unknown): JsonSchema.JsonSchema => finish(run(spec, "schema", false))
