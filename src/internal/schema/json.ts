/** @internal */
import type { JsonValue, SnapshotResult } from "../../Json.js"

const objectPrototype = Object.prototype
const arrayPrototype = Array.prototype
const isArray = Array.isArray
const getPrototypeOf = Object.getPrototypeOf
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor
const defineProperty = Object.defineProperty
const getOwnPropertyNames = Object.getOwnPropertyNames
const getOwnPropertySymbols = Object.getOwnPropertySymbols
const arraySlice = Array.prototype.slice
const freeze = Object.freeze
const objectKeys = Object.keys
const ownKeys = Reflect.ownKeys
const functionToString = Function.prototype.toString

const nativeObjectSource = /^function Object\(\) \{\s*\[native code\]\s*\}$/
const nativeArraySource = /^function Array\(\) \{\s*\[native code\]\s*\}$/

const foreignObjectPrototypes = new WeakSet<object>()
const foreignArrayPrototypes = new WeakSet<object>()

/**
 * `proto` is the `prototype` of a native function named `name` (the realm's `Object` or `Array`
 * constructor; `prototype` is non-writable and non-configurable on both, so the back link cannot
 * be forged). Reads descriptors only, never invokes getters.
 */
const isIntrinsicPrototypeOf = (proto: object, name: string, source: RegExp): boolean => {
  const ctorDescriptor = getOwnPropertyDescriptor(proto, "constructor")
  if (ctorDescriptor === undefined) return false
  const ctor: unknown = ctorDescriptor.value
  if (typeof ctor !== "function") return false
  const nameDescriptor = getOwnPropertyDescriptor(ctor, "name")
  if (nameDescriptor === undefined || nameDescriptor.value !== name) return false
  if (!source.test(functionToString.call(ctor))) return false
  const protoDescriptor = getOwnPropertyDescriptor(ctor, "prototype")
  return protoDescriptor !== undefined && protoDescriptor.value === proto
}

const isIntrinsicObjectPrototype = (proto: unknown): boolean => {
  if (proto === objectPrototype) return true
  if (typeof proto !== "object" || proto === null) return false
  if (foreignObjectPrototypes.has(proto)) return true
  if (getPrototypeOf(proto) !== null || !isIntrinsicPrototypeOf(proto, "Object", nativeObjectSource)) return false
  foreignObjectPrototypes.add(proto)
  return true
}

const isIntrinsicArrayPrototype = (proto: unknown): boolean => {
  if (proto === arrayPrototype) return true
  if (typeof proto !== "object" || proto === null) return false
  if (foreignArrayPrototypes.has(proto)) return true
  if (
    !isArray(proto) || !isIntrinsicObjectPrototype(getPrototypeOf(proto)) ||
    !isIntrinsicPrototypeOf(proto, "Array", nativeArraySource)
  ) return false
  foreignArrayPrototypes.add(proto)
  return true
}

/** @internal */
export const isPlainRecord = (input: unknown): input is Record<string, unknown> => {
  if (typeof input !== "object" || input === null) return false
  try {
    if (isArray(input)) return false
    const proto = getPrototypeOf(input)
    return proto === objectPrototype || proto === null || isIntrinsicObjectPrototype(proto)
  } catch {
    return false
  }
}

const NOT_LOSSLESS: SnapshotResult = freeze({ _tag: "NotLossless" })
const LOSSLESS_CHECKED: SnapshotResult = freeze({ _tag: "Lossless", value: null })

const MODE_CHECK = 0
const MODE_COPY = 1
const MODE_FREEZE = 2

const LEAF = 0
const CONTAINER = 1
const BAD = 2

type Container = Record<string | number, unknown>

const STRIDE = 5
const LINEAR_ANCESTORS = 32

const kindOf = (value: unknown): number => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return LEAF
    case "number":
      return value - value === 0 && (value !== 0 || 1 / value > 0) ? LEAF : BAD
    case "object":
      return value === null ? LEAF : CONTAINER
    default:
      return BAD
  }
}

/**
 * Shallow copy by assignment. Spread copies are faster to make but much slower to freeze, so
 * `snapshotFrozen` builds its records this way.
 */
const copyRecord = (source: Container, keys: Array<string>): Container => {
  const copy: Container = {}
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]
    if (key === "__proto__") {
      defineProperty(copy, key, { value: source[key], writable: true, enumerable: true, configurable: true })
    } else {
      copy[key] = source[key]
    }
  }
  return copy
}

/**
 * Depth-first walk with an explicit frame stack, `STRIDE` slots per frame: the source (an
 * ancestor for cycle detection), the target (the shallow copy in copy modes, the source itself
 * when only checking), the record keys (null for arrays), the next index and the length.
 *
 * Opening a container checks its prototype and own keys, then reads every own property exactly
 * once: the copy modes take a shallow copy (spread for records, slice for arrays) and from then
 * on read and patch only that copy. Ancestors are the sources on the stack: the shallowest
 * `LINEAR_ANCESTORS` are scanned linearly, deeper ones are kept in a Set.
 */
const walk = (input: unknown, mode: number): SnapshotResult => {
  const rootKind = kindOf(input)
  if (rootKind === BAD) return NOT_LOSSLESS
  if (rootKind === LEAF) return { _tag: "Lossless", value: input as JsonValue }
  try {
    const stack: Array<unknown> = []
    let deep: Set<unknown> | undefined
    let depth = 0
    let root: unknown
    let next: object | undefined = input as object
    let nextSlot: string | number = 0
    for (;;) {
      if (next !== undefined) {
        const source: object = next
        next = undefined
        let target: Container
        let keys: Array<string> | null
        let length: number
        if (isArray(source)) {
          if (!isIntrinsicArrayPrototype(getPrototypeOf(source))) return NOT_LOSSLESS
          length = source.length
          if (typeof length !== "number") return NOT_LOSSLESS
          const own = ownKeys(source)
          if (own.length !== length + 1 || own[length] !== "length") return NOT_LOSSLESS
          keys = null
          if (mode === MODE_CHECK) {
            target = source as unknown as Container
          } else {
            const copy: Array<unknown> = arraySlice.call(source)
            length = copy.length
            target = copy as unknown as Container
          }
        } else {
          const proto = getPrototypeOf(source)
          if (proto !== objectPrototype && proto !== null && !isIntrinsicObjectPrototype(proto)) return NOT_LOSSLESS
          const names = getOwnPropertyNames(source)
          if (getOwnPropertySymbols(source).length !== 0) return NOT_LOSSLESS
          if (mode === MODE_COPY) {
            target = { ...source } as Container
            keys = objectKeys(target)
          } else {
            keys = objectKeys(source)
            target = mode === MODE_CHECK ? source as Container : copyRecord(source as Container, keys)
          }
          length = keys.length
          if (length !== names.length) return NOT_LOSSLESS
        }
        if (mode !== MODE_CHECK) {
          if (depth === 0) root = target
          else (stack[(depth - 1) * STRIDE + 1] as Container)[nextSlot] = target
        }
        if (depth >= LINEAR_ANCESTORS) (deep ??= new Set()).add(source)
        const base = depth * STRIDE
        stack[base] = source
        stack[base + 1] = target
        stack[base + 2] = keys
        stack[base + 3] = 0
        stack[base + 4] = length
        depth++
      }
      if (depth === 0) break
      const top = (depth - 1) * STRIDE
      const target = stack[top + 1] as Container
      const keys = stack[top + 2] as Array<string> | null
      const length = stack[top + 4] as number
      let i = stack[top + 3] as number
      while (i < length) {
        const slot = keys === null ? i : keys[i]
        const value: unknown = target[slot]
        i++
        const kind = kindOf(value)
        if (kind === LEAF) continue
        if (kind === BAD) return NOT_LOSSLESS
        const limit = depth < LINEAR_ANCESTORS ? depth : LINEAR_ANCESTORS
        for (let j = 0; j < limit; j++) {
          if (stack[j * STRIDE] === value) return NOT_LOSSLESS
        }
        if (deep !== undefined && deep.has(value)) return NOT_LOSSLESS
        stack[top + 3] = i
        nextSlot = slot
        next = value as object
        break
      }
      if (next !== undefined) continue
      depth--
      if (depth >= LINEAR_ANCESTORS) deep!.delete(stack[top])
      if (mode === MODE_FREEZE) freeze(target)
    }
    return mode === MODE_CHECK ? LOSSLESS_CHECKED : { _tag: "Lossless", value: root as JsonValue }
  } catch (error) {
    return { _tag: "Threw", error }
  }
}

/** @internal */
export const snapshot = (input: unknown): SnapshotResult => walk(input, MODE_COPY)

/** @internal */
export const snapshotFrozen = (input: unknown): SnapshotResult => walk(input, MODE_FREEZE)

/** @internal */
export const isLossless = (input: unknown): boolean => walk(input, MODE_CHECK)._tag === "Lossless"

const isAbortSignal: (value: object) => boolean = typeof AbortSignal === "function"
  ? (value) => value instanceof AbortSignal
  : () => false

/** @internal */
export const deepFreeze = <A>(value: A): A => {
  if (typeof value !== "object" || value === null) return value
  const pending: Array<object> = [value]
  const seen = new Set<object>()
  while (pending.length > 0) {
    const current = pending.pop()!
    if (seen.has(current)) continue
    seen.add(current)
    try {
      if (isAbortSignal(current)) continue
      freeze(current)
      const keys = objectKeys(current)
      for (let i = keys.length - 1; i >= 0; i--) {
        const descriptor = getOwnPropertyDescriptor(current, keys[i])
        if (descriptor === undefined) continue
        const child: unknown = descriptor.value
        if (typeof child === "object" && child !== null && !seen.has(child)) pending.push(child)
      }
    } catch {
      continue
    }
  }
  return value
}
