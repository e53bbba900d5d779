/** @internal */
import type { Binding } from "../../../src/CodeRuntime.js"
import { namespaceProblem } from "../../../src/CodeRuntime.js"

/** A namespace read once into a detached copy. @internal */
export interface ReadNamespace {
  readonly global: string
  readonly names: ReadonlyArray<string>
  readonly functions: ReadonlyMap<string, Binding>
  readonly errorClass: { readonly name: string; readonly memberNameProperty: string } | undefined
}

/** @internal */
export interface ReadRequest {
  readonly program: string
  readonly namespaces: ReadonlyArray<ReadNamespace>
  readonly signal: AbortSignal | undefined
}

type Fields = Record<string, unknown>

const quote = (value: string): string => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)

const readNamespace = (value: unknown, index: number): ReadNamespace | string => {
  if (typeof value !== "object" || value === null) return "a namespace must be an object"
  let global: unknown, functions: unknown, errorClass: unknown
  try {
    const fields = value as Fields
    global = fields.global
    functions = fields.functions
    errorClass = fields.errorClass
  } catch {
    return `namespace ${index} could not be read`
  }
  let errorCopy: unknown = errorClass
  if (typeof errorClass === "object" && errorClass !== null) {
    try {
      const fields = errorClass as Fields
      errorCopy = { name: fields.name, memberNameProperty: fields.memberNameProperty }
    } catch {
      return `namespace ${index} has an errorClass that could not be read`
    }
  }
  const problem = namespaceProblem({ global, functions, errorClass: errorCopy })
  if (problem !== undefined) return problem
  const label = global as string
  const table = new Map<string, Binding>()
  try {
    for (const name of Object.keys(functions as object)) {
      const binding: unknown = (functions as Fields)[name]
      if (typeof binding !== "function") return `namespace ${quote(label)} member ${quote(name)} is not a function`
      table.set(name, binding as Binding)
    }
  } catch {
    return `namespace ${quote(label)} has functions that could not be read`
  }
  return {
    global: label,
    names: Array.from(table.keys()),
    functions: table,
    errorClass: errorCopy === undefined ? undefined : errorCopy as ReadNamespace["errorClass"]
  }
}

/**
 * Reads a run request once (program, namespaces, signal) into a detached copy, or says what is
 * wrong with it. Never throws.
 *
 * @internal
 */
export const readRequest = (request: unknown): ReadRequest | string => {
  if (typeof request !== "object" || request === null) return "a run request must be an object"
  let program: unknown, bindings: unknown, signal: unknown
  try {
    const fields = request as Fields
    program = fields.program
    bindings = fields.bindings
    signal = fields.signal
  } catch {
    return "the run request could not be read"
  }
  if (typeof program !== "string") return "program must be a string"
  let items: Array<unknown>
  try {
    if (!Array.isArray(bindings)) return "bindings must be an array of namespaces"
    items = Array.from(bindings as ReadonlyArray<unknown>)
  } catch {
    return "bindings could not be read"
  }
  try {
    if (signal !== undefined && !(signal instanceof AbortSignal)) return "signal must be an AbortSignal"
  } catch {
    return "signal must be an AbortSignal"
  }
  const namespaces: Array<ReadNamespace> = []
  const globals = new Map<string, string | undefined>()
  for (let index = 0; index < items.length; index++) {
    const namespace = readNamespace(items[index], index)
    if (typeof namespace === "string") return namespace
    if (globals.has(namespace.global)) return `namespace global ${quote(namespace.global)} is used twice`
    globals.set(namespace.global, undefined)
    namespaces.push(namespace)
  }
  for (const namespace of namespaces) {
    const errorClass = namespace.errorClass
    if (errorClass === undefined) continue
    if (globals.has(errorClass.name)) {
      const member = globals.get(errorClass.name)
      if (member !== errorClass.memberNameProperty) {
        return `error class ${quote(errorClass.name)} collides with another global`
      }
    }
    globals.set(errorClass.name, errorClass.memberNameProperty)
  }
  return { program, namespaces, signal: signal as AbortSignal | undefined }
}
