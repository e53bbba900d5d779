/**
 * Definition-time checks of the in-memory registry (REG-1 with D-6, REG-4, REG-7) and the
 * per-definition output validator cache. Every function here is total: hostile getters and
 * proxies are contained.
 *
 * @internal
 */
import * as Json from "../../src/Json.js"
import type { JsonValue } from "../../src/Json.js"
import * as JsonSchema from "../../src/JsonSchema.js"
import type { Validator } from "../../src/JsonSchema.js"
import type * as Tool from "../../src/Tool.js"
import { RUN_CODE_NAME } from "../../src/ToolRegistry.js"
import type { PresentationMode, Restriction } from "../../src/ToolRegistry.js"

/** The largest delay a timer accepts (TIMEOUT-3, D-6). @internal */
export const MAX_TIMEOUT_MS = 2147483647

/** @internal */
export const describeError = (error: unknown): string => {
  try {
    if (error instanceof Error) return String(error.message)
    return String(error)
  } catch {
    return "unknown error"
  }
}

/** @internal */
export const displayName = (name: unknown): string => {
  if (typeof name === "string") return name
  try {
    return String(name)
  } catch {
    return "<unprintable>"
  }
}

const isObjectLike = (value: unknown): value is object =>
  (typeof value === "object" && value !== null) || typeof value === "function"

/** @internal */
export type Problem =
  | { readonly _tag: "Registration"; readonly message: string }
  | { readonly _tag: "Schema"; readonly violations: ReadonlyArray<string> }

/** What registration keeps from a checked definition. @internal */
export interface CheckedDefinition {
  readonly name: string
  readonly schema: JsonSchema.JsonSchema
  readonly extraValidate: ((value: JsonValue) => ReadonlyArray<string>) | undefined
}

/** @internal */
export const reservedNameMessage =
  `tool name "${RUN_CODE_NAME}" is reserved for the Code Mode presentation transport ` +
  "and cannot be registered or shadowed"

/**
 * REG-1 steps 1-4 with D-6, in order: output shape, output schema subset, non-empty name,
 * `timeoutMs`, `parameters` root, reserved name. The duplicate check (step 5) needs the layer
 * and is done by the caller.
 *
 * @internal
 */
export const checkDefinition = (definition: unknown): CheckedDefinition | Problem => {
  let label = "undefined"
  try {
    const name: unknown = isObjectLike(definition) ? (definition as { readonly name?: unknown }).name : undefined
    label = displayName(name)
    const output: unknown = isObjectLike(definition) ? (definition as { readonly output?: unknown }).output : undefined
    let render: unknown
    let presentationMeta: unknown
    let schema: unknown
    let validate: unknown
    if (isObjectLike(output)) {
      const o = output as {
        readonly render?: unknown
        readonly presentationMeta?: unknown
        readonly schema?: unknown
        readonly validate?: unknown
      }
      render = o.render
      presentationMeta = o.presentationMeta
      schema = o.schema
      validate = o.validate
    }
    if (
      !isObjectLike(output) || typeof render !== "function" ||
      (presentationMeta !== undefined && typeof presentationMeta !== "function")
    ) {
      return {
        _tag: "Registration",
        message: `tool "${label}" must declare output { schema, render, presentationMeta? }`
      }
    }
    const violations = JsonSchema.violations(schema)
    if (violations.length > 0) return { _tag: "Schema", violations }
    if (typeof name !== "string" || name.length === 0) {
      return { _tag: "Registration", message: "tool name must be a non-empty string" }
    }
    const timeoutMs: unknown = (definition as { readonly timeoutMs?: unknown }).timeoutMs
    if (
      timeoutMs !== undefined &&
      !(typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)
    ) {
      return {
        _tag: "Registration",
        message: `tool "${name}" timeoutMs must be a positive finite number no greater than ${MAX_TIMEOUT_MS}`
      }
    }
    if (!isObjectSchema((definition as { readonly parameters?: unknown }).parameters)) {
      return {
        _tag: "Registration",
        message: `tool "${name}" parameters must be a lossless JSON object schema with type "object"`
      }
    }
    if (name === RUN_CODE_NAME) return { _tag: "Registration", message: reservedNameMessage }
    return {
      name,
      schema: schema as JsonSchema.JsonSchema,
      extraValidate: typeof validate === "function"
        ? (validate as (value: JsonValue) => ReadonlyArray<string>)
        : undefined
    }
  } catch (error) {
    return { _tag: "Registration", message: `tool "${label}" definition could not be read: ${describeError(error)}` }
  }
}

const isObjectSchema = (parameters: unknown): boolean => {
  const snapshot = Json.snapshot(parameters)
  return snapshot._tag === "Lossless" && Json.isPlainRecord(snapshot.value) && snapshot.value.type === "object"
}

/** @internal */
export const isProblem = (value: CheckedDefinition | Problem): value is Problem => "_tag" in value

const validators = new WeakMap<object, Validator>()

const composeValidator = (
  compiled: Validator,
  extra: ((value: JsonValue) => ReadonlyArray<string>) | undefined
): Validator => {
  if (extra === undefined) return compiled
  return (value, rootLabel) => {
    const found = compiled(value, rootLabel)
    if (found.length > 0) return found
    try {
      const more = extra(value as JsonValue)
      if (!Array.isArray(more)) return []
      return more.map((violation) => typeof violation === "string" ? violation : displayName(violation))
    } catch (error) {
      return [`output.validate failed: ${describeError(error)}`]
    }
  }
}

/**
 * The output validator of `definition`, compiled once per definition object: the subset
 * violations, then (only if there are none) the optional `output.validate` extra check.
 *
 * @internal
 */
export const validatorFor = (definition: Tool.Any, checked: CheckedDefinition): Validator => {
  let validator = validators.get(definition)
  if (validator === undefined) {
    validator = composeValidator(JsonSchema.compile(checked.schema), checked.extraValidate)
    validators.set(definition, validator)
  }
  return validator
}

/** A validator for a definition that was not checked (the transport): compiled on first use. @internal */
export const lazyValidatorFor = (definition: Tool.Any): Validator => {
  let validator: Validator | undefined
  return (value, rootLabel) => {
    if (validator === undefined) {
      validator = validators.get(definition)
      if (validator === undefined) {
        const output = definition.output as Tool.ToolOutput & {
          readonly validate?: ((value: JsonValue) => ReadonlyArray<string>) | undefined
        }
        validator = composeValidator(
          JsonSchema.compile(output.schema),
          typeof output.validate === "function" ? output.validate : undefined
        )
        validators.set(definition, validator)
      }
    }
    return validator(value, rootLabel)
  }
}

/** REG-1 step 5. @internal */
export const duplicateMessage = (name: string, agent: string | undefined): string =>
  agent === undefined
    ? `tool "${name}" is already registered ` +
      "(for a per-agent variant, register through that agent's `agent.ctx` instead)"
    : `tool "${name}" is already registered in this scope`

/** REG-4 messages. @internal */
export const restrictMessages = {
  unscoped:
    "tools.restrict() requires a scoped context (agent.ctx): a context-global restriction would mask every agent — " +
    "deny the tool for the intended agent instead",
  noop:
    "tools.restrict({}) is a no-op: pass `allow` and/or `deny` " +
    "(an empty filter is almost always a materialized-empty-config bug)",
  reserved:
    `tools.restrict() cannot name reserved Code Mode presentation transport "${RUN_CODE_NAME}"; ` +
    "restrict end-capability tools instead",
  notNames: (key: string) => `tools.restrict() ${key} must be an array of tool names`,
  unknown: (unknown: ReadonlyArray<string>, known: Iterable<string>): string => {
    const sorted = Array.from(known).sort()
    const list = unknown.map((name) => `"${name}"`).join(", ")
    const noun = unknown.length === 1 ? "tool" : "tools"
    return `tools.restrict() names unknown global ${noun} ${list}; known global tools: ${
      sorted.length === 0 ? "(none)" : sorted.join(", ")
    }`
  }
} as const

/**
 * REG-4 step 3: copies a name list into a set now (later mutation has no effect). `undefined`
 * stays absent; anything but an array of strings is refused.
 *
 * @internal
 */
export const copyNames = (names: unknown): ReadonlySet<string> | undefined | "invalid" => {
  if (names === undefined) return undefined
  try {
    if (!Array.isArray(names)) return "invalid"
    const out = new Set<string>()
    const length = names.length
    for (let i = 0; i < length; i++) {
      const name: unknown = names[i]
      if (typeof name !== "string") return "invalid"
      out.add(name)
    }
    return out
  } catch {
    return "invalid"
  }
}

/** @internal */
export const readRestriction = (restriction: Restriction): { readonly allow: unknown; readonly deny: unknown } => {
  try {
    return { allow: restriction?.allow, deny: restriction?.deny }
  } catch {
    return { allow: "invalid", deny: undefined }
  }
}

/** REG-7 messages. @internal */
export const presentMessages = {
  unscoped:
    "tools.presentAs() requires a scoped context (agent.ctx): " +
    "a context-global presentation is the `mode` config field on the tools row",
  conflict: (mode: string, existing: string) =>
    `tools.presentAs("${mode}") conflicts with "${existing}" already declared for this scope; ` +
    "one composition selects one presentation",
  invalid: (mode: string) =>
    `tools.presentAs("${mode}") is not a presentation mode (expected "native", "code" or "both")`
} as const

/** @internal */
export const isPresentationMode = (mode: unknown): mode is PresentationMode =>
  mode === "native" || mode === "code" || mode === "both"
