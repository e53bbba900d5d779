/**
 * A `CodeRunRequest` read once into plain data: the program text, the signal, and per namespace
 * what the guest sees (global, binding names, error class) next to the host's binding functions.
 * Every field is read exactly once; a hostile request gives a problem message, never a throw.
 *
 * @internal
 */
import type { Binding } from "../../../src/CodeRuntime.js"
import { namespaceProblem } from "../../../src/CodeRuntime.js"
import { isAbortSignal } from "../../../src/internal/base/signals.js"
import type { NamespacePlan } from "./session.js"

/** @internal */
export interface RunInput {
  readonly program: string
  readonly signal: AbortSignal | undefined
  readonly namespaces: ReadonlyArray<NamespacePlan>
  readonly functions: ReadonlyArray<ReadonlyMap<string, Binding>>
}

type Problem = { readonly problem: string }

const readNamespace = (
  raw: unknown
): { readonly plan: NamespacePlan; readonly functions: ReadonlyMap<string, Binding> } | Problem => {
  if (typeof raw !== "object" || raw === null) return { problem: namespaceProblem(raw) ?? "a namespace must be an object" }
  let global: unknown, functions: unknown, errorClass: unknown
  try {
    const record = raw as Record<string, unknown>
    global = record.global
    functions = record.functions
    errorClass = record.errorClass
  } catch {
    return { problem: "a namespace could not be read" }
  }
  let copiedClass: unknown = errorClass
  if (typeof errorClass === "object" && errorClass !== null) {
    try {
      const record = errorClass as Record<string, unknown>
      copiedClass = { name: record.name, memberNameProperty: record.memberNameProperty }
    } catch {
      return { problem: "a namespace has an errorClass that could not be read" }
    }
  }
  const problem = namespaceProblem({ global, functions, errorClass: copiedClass })
  if (problem !== undefined) return { problem }
  const name = global as string
  const bindings = new Map<string, Binding>()
  try {
    for (const key of Reflect.ownKeys(functions as object)) {
      if (typeof key !== "string") continue
      const value: unknown = (functions as Record<string, unknown>)[key]
      if (typeof value !== "function") {
        return { problem: `namespace ${JSON.stringify(name)} binding ${JSON.stringify(key)} is not a function` }
      }
      bindings.set(key, value as Binding)
    }
  } catch {
    return { problem: `namespace ${JSON.stringify(name)} has functions that could not be read` }
  }
  const cls = copiedClass as { readonly name: string; readonly memberNameProperty: string } | undefined
  return {
    plan: {
      global: name,
      names: [...bindings.keys()],
      errorClass: cls === undefined ? null : { name: cls.name, member: cls.memberNameProperty }
    },
    functions: bindings
  }
}

/**
 * Reads `request` once, or says how it misuses the contract: a program that is not a string,
 * bindings that are not an array, an invalid namespace, two namespaces on one global, an error
 * class that collides with a namespace or is declared twice differently, a signal that is not
 * an `AbortSignal`.
 *
 * @internal
 */
export const readRequest = (request: unknown): RunInput | Problem => {
  if (typeof request !== "object" || request === null) return { problem: "a run request must be an object" }
  let program: unknown, bindings: unknown, signal: unknown
  try {
    const record = request as Record<string, unknown>
    program = record.program
    bindings = record.bindings
    signal = record.signal
  } catch {
    return { problem: "the run request could not be read" }
  }
  if (typeof program !== "string") return { problem: "the program must be a string" }
  if (signal !== undefined && !isAbortSignal(signal)) return { problem: "signal must be an AbortSignal" }
  if (!Array.isArray(bindings)) return { problem: "bindings must be an array of namespaces" }
  let raws: Array<unknown>
  try {
    raws = Array.from({ length: bindings.length }, (_, i) => bindings[i])
  } catch {
    return { problem: "bindings could not be read" }
  }
  const namespaces: Array<NamespacePlan> = []
  const functions: Array<ReadonlyMap<string, Binding>> = []
  const globals = new Set<string>()
  const classes = new Map<string, string>()
  for (const raw of raws) {
    const read = readNamespace(raw)
    if ("problem" in read) return read
    const { plan } = read
    if (globals.has(plan.global)) return { problem: `namespace global ${JSON.stringify(plan.global)} is used twice` }
    globals.add(plan.global)
    if (plan.errorClass !== null) {
      const member = classes.get(plan.errorClass.name)
      if (member !== undefined && member !== plan.errorClass.member) {
        return { problem: `error class ${JSON.stringify(plan.errorClass.name)} is declared twice differently` }
      }
      classes.set(plan.errorClass.name, plan.errorClass.member)
    }
    namespaces.push(plan)
    functions.push(read.functions)
  }
  for (const name of classes.keys()) {
    if (globals.has(name)) return { problem: `error class ${JSON.stringify(name)} has the name of a namespace global` }
    if (name === "console") return { problem: `error class "console" is reserved` }
  }
  return { program, signal: signal as AbortSignal | undefined, namespaces, functions }
}
