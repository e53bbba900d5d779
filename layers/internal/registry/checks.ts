/**
 * Definition-time checks of the in-memory registry (REG-1 with D-6, REG-4, REG-7) and the
 * per-definition output validator cache. Every function here is total: hostile getters and
 * proxies are contained.
 *
 * @internal
 */
import * as Json from "../../../src/Json.js"
import type { JsonValue } from "../../../src/Json.js"
import * as JsonSchema from "../../../src/JsonSchema.js"
import type { Validator } from "../../../src/JsonSchema.js"
import type * as Tool from "../../../src/Tool.js"
import { RUN_CODE_NAME } from "../../../src/ToolRegistry.js"
import type { PresentationMode, Restriction } from "../../../src/ToolRegistry.js"
import { isObjectLike, isReplayPolicy, OPTIONAL_CALLBACKS, REPLAY_MESSAGE } from "../../../src/internal/definition/fields.js"
import { messageOf, stringify } from "../../../src/internal/log/records.js"

/** The largest delay a timer accepts (TIMEOUT-3, D-6). @internal */
export const MAX_TIMEOUT_MS = 2147483647

/** @internal */
export const describeError: (error: unknown) => string = messageOf

/** @internal */
export const displayName = (name: unknown): string => {
  if (typeof name === "string") return name
  try {
    return String(name)
  } catch {
    return "<unprintable>"
  }
}

/** @internal */
export type Problem =
  | { readonly _tag: "Registration"; readonly message: string }
  | { readonly _tag: "Schema"; readonly violations: ReadonlyArray<string> }

/**
 * What registration keeps from a checked definition: the registry-owned, frozen snapshot of
 * every field (read once), and what its output validator is compiled from.
 *
 * @internal
 */
export interface CheckedDefinition {
  readonly name: string
  /** The frozen snapshot stored as `RegisteredTool.definition`; callbacks call the user's functions. */
  readonly snapshot: Tool.Any
  /** The user's definition object: the validator cache key (never read again). */
  readonly source: object
  /** The frozen snapshot of `output.schema` that passed the subset assertion. */
  readonly schema: JsonSchema.JsonSchema
  /** Canonical text of {@link schema}: the cache key of the compiled validator. */
  readonly schemaKey: string
  readonly extraValidate: ((value: JsonValue) => ReadonlyArray<string>) | undefined
}

/** @internal */
export const reservedNameMessage =
  `tool name "${RUN_CODE_NAME}" is reserved for the Code Mode presentation transport ` +
  "and cannot be registered or shadowed"

type AnyFunction = (...args: ReadonlyArray<never>) => unknown

/** Every definition field the registry uses, each read exactly once. */
interface Fields {
  readonly name: unknown
  readonly description: unknown
  readonly parameters: Json.SnapshotResult
  readonly deferLoading: unknown
  readonly output: unknown
  readonly schema: unknown
  readonly schemaSnapshot: Json.SnapshotResult
  readonly render: unknown
  readonly presentationMeta: unknown
  readonly validate: unknown
  readonly execute: unknown
  readonly timeoutMs: unknown
  readonly replay: unknown
  readonly isConcurrencySafe: unknown
  readonly finalizeContent: unknown
  readonly projectContent: unknown
  readonly presentCall: unknown
  readonly presentResult: unknown
}

const readFields = (definition: unknown, setLabel: (label: string) => void): Fields => {
  const d = (isObjectLike(definition) ? definition : {}) as { readonly [key: string]: unknown }
  const name = d.name
  setLabel(displayName(name))
  const description = d.description
  const parameters = Json.snapshotFrozen(d.parameters)
  const deferLoading = d.deferLoading
  const output = d.output
  let schema: unknown, render: unknown, presentationMeta: unknown, validate: unknown
  let schemaSnapshot: Json.SnapshotResult = { _tag: "NotLossless" }
  if (isObjectLike(output)) {
    const o = output as { readonly [key: string]: unknown }
    schema = o.schema
    schemaSnapshot = Json.snapshotFrozen(schema)
    render = o.render
    presentationMeta = o.presentationMeta
    validate = o.validate
  }
  return {
    name,
    description,
    parameters,
    deferLoading,
    output,
    schema,
    schemaSnapshot,
    render,
    presentationMeta,
    validate,
    execute: d.execute,
    timeoutMs: d.timeoutMs,
    replay: d.replay,
    isConcurrencySafe: d.isConcurrencySafe,
    finalizeContent: d.finalizeContent,
    projectContent: d.projectContent,
    presentCall: d.presentCall,
    presentResult: d.presentResult
  }
}

const schemaViolations = (fields: Fields): ReadonlyArray<string> => {
  const snap = fields.schemaSnapshot
  if (snap._tag === "Lossless") return JsonSchema.violations(snap.value)
  const found = JsonSchema.violations(fields.schema)
  return found.length > 0 ? found : ["schema must be lossless JSON data"]
}

const bind = (fn: unknown, owner: object) => (...args: ReadonlyArray<unknown>): unknown =>
  Reflect.apply(fn as AnyFunction, owner, args)

/**
 * The registry's own copy of a checked definition: data fields are the values read once (JSON
 * fields snapshotted and frozen); each callback calls the user's function with the user's
 * definition (or, for `output.*`, the user's output object) as `this`, exactly as a method call
 * on the definition would. Frozen; optional keys present only when supplied.
 */
const makeSnapshot = (fields: Fields, definition: object, name: string, schema: JsonSchema.JsonSchema): Tool.Any => {
  const owner = fields.output as object
  const output: { -readonly [K in keyof Tool.ToolOutput]: Tool.ToolOutput[K] } = {
    schema,
    render: bind(fields.render, owner) as Tool.ToolOutput["render"]
  }
  if (fields.presentationMeta !== undefined) {
    output.presentationMeta = bind(fields.presentationMeta, owner) as Tool.ToolOutput["presentationMeta"]
  }
  if (fields.validate !== undefined) output.validate = bind(fields.validate, owner) as Tool.ToolOutput["validate"]
  const snapshot: Record<string, unknown> = {
    name,
    description: fields.description,
    parameters: (fields.parameters as { readonly value: JsonValue }).value
  }
  if (fields.deferLoading !== undefined) snapshot.deferLoading = fields.deferLoading
  snapshot.output = Object.freeze(output)
  snapshot.execute = bind(fields.execute, definition)
  if (fields.timeoutMs !== undefined) snapshot.timeoutMs = fields.timeoutMs
  if (fields.replay !== undefined) snapshot.replay = fields.replay
  for (const key of OPTIONAL_CALLBACKS) {
    if (fields[key] !== undefined) snapshot[key] = bind(fields[key], definition)
  }
  return Object.freeze(snapshot) as unknown as Tool.Any
}

/**
 * REG-1 with D-6 and the kind checks of every other field, in order: output shape
 * (`render`, optional `presentationMeta` and `validate` functions), output schema subset,
 * non-empty name, string description, `timeoutMs`, `replay`, `parameters` root, callable `execute`,
 * optional callbacks, boolean `deferLoading`, reserved name. Every field is read exactly once,
 * first (a throwing getter or proxy trap is a registration problem); nothing is read from the
 * definition afterwards. The duplicate check (step 5) needs the layer and is done by the caller.
 * Total.
 *
 * @internal
 */
export const checkDefinition = (definition: unknown): CheckedDefinition | Problem => {
  let label = "undefined"
  let fields: Fields
  try {
    fields = readFields(definition, (read) => {
      label = read
    })
  } catch (error) {
    return { _tag: "Registration", message: `tool "${label}" definition could not be read: ${describeError(error)}` }
  }
  const refuse = (message: string): Problem => ({ _tag: "Registration", message })
  const { name } = fields
  if (
    !isObjectLike(fields.output) || typeof fields.render !== "function" ||
    (fields.presentationMeta !== undefined && typeof fields.presentationMeta !== "function")
  ) {
    return refuse(`tool "${label}" must declare output { schema, render, presentationMeta? }`)
  }
  if (fields.validate !== undefined && typeof fields.validate !== "function") {
    return refuse(`tool "${label}" output.validate must be a function`)
  }
  const violations = schemaViolations(fields)
  if (violations.length > 0) return { _tag: "Schema", violations }
  if (typeof name !== "string" || name.length === 0) return refuse("tool name must be a non-empty string")
  if (typeof fields.description !== "string") return refuse(`tool "${name}" description must be a string`)
  const timeoutMs = fields.timeoutMs
  if (
    timeoutMs !== undefined &&
    !(typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)
  ) {
    return refuse(`tool "${name}" timeoutMs must be a positive finite number no greater than ${MAX_TIMEOUT_MS}`)
  }
  if (fields.replay !== undefined && !isReplayPolicy(fields.replay)) return refuse(`tool "${name}" ${REPLAY_MESSAGE}`)
  const parameters = fields.parameters
  if (parameters._tag !== "Lossless" || !Json.isPlainRecord(parameters.value) || parameters.value.type !== "object") {
    return refuse(`tool "${name}" parameters must be a lossless JSON object schema with type "object"`)
  }
  if (typeof fields.execute !== "function") return refuse(`tool "${name}" execute must be a function`)
  for (const key of OPTIONAL_CALLBACKS) {
    if (fields[key] !== undefined && typeof fields[key] !== "function") {
      return refuse(`tool "${name}" ${key} must be a function`)
    }
  }
  if (fields.deferLoading !== undefined && typeof fields.deferLoading !== "boolean") {
    return refuse(`tool "${name}" deferLoading must be a boolean`)
  }
  if (name === RUN_CODE_NAME) return refuse(reservedNameMessage)
  const schema = (fields.schemaSnapshot as { readonly value: JsonValue }).value as JsonSchema.JsonSchema
  const snapshot = makeSnapshot(fields, definition as object, name, schema)
  return {
    name,
    snapshot,
    source: definition as object,
    schema,
    schemaKey: stringify(schema),
    extraValidate: snapshot.output.validate
  }
}

/** @internal */
export const isProblem = (value: CheckedDefinition | Problem): value is Problem => "_tag" in value

const MAX_SCHEMAS_PER_DEFINITION = 16

/** Compiled subset validators per definition object, keyed by the checked schema's text. */
const validators = new WeakMap<object, Map<string, Validator>>()

const compiledFor = (source: object, schemaKey: string, schema: JsonSchema.JsonSchema): Validator => {
  let perDefinition = validators.get(source)
  if (perDefinition === undefined) {
    perDefinition = new Map()
    validators.set(source, perDefinition)
  }
  let compiled = perDefinition.get(schemaKey)
  if (compiled === undefined) {
    if (perDefinition.size >= MAX_SCHEMAS_PER_DEFINITION) perDefinition.clear()
    compiled = JsonSchema.compile(schema)
    perDefinition.set(schemaKey, compiled)
  }
  return compiled
}

const composeValidator = (
  compiled: Validator,
  extra: ((value: JsonValue) => ReadonlyArray<string>) | undefined
): Validator => {
  if (extra === undefined) return compiled
  return (value, rootLabel) => {
    const found = compiled(value, rootLabel)
    if (found.length > 0) return found
    try {
      const more: unknown = extra(value as JsonValue)
      if (!Array.isArray(more)) return []
      return more.map((violation) => typeof violation === "string" ? violation : displayName(violation))
    } catch (error) {
      return [`output.validate failed: ${describeError(error)}`]
    }
  }
}

/**
 * The output validator of a checked definition: the subset violations of the schema that was
 * checked at this registration, then (only if there are none) the optional `output.validate`.
 * The subset validator is compiled once per (definition object, schema): re-registering the
 * same definition with another `output.schema` compiles the new schema (issue 8 item 11).
 *
 * @internal
 */
export const validatorFor = (checked: CheckedDefinition): Validator =>
  composeValidator(compiledFor(checked.source, checked.schemaKey, checked.schema), checked.extraValidate)

/**
 * A validator for a definition that was not checked (the transport): its output is read once,
 * on first use, and compiled like {@link validatorFor}. A schema that cannot be read reports one
 * violation instead of throwing.
 *
 * @internal
 */
export const lazyValidatorFor = (definition: Tool.Any): Validator => {
  let validator: Validator | undefined
  return (value, rootLabel) => {
    if (validator === undefined) {
      try {
        const output: unknown = definition.output
        const raw = output as { readonly schema?: unknown; readonly validate?: unknown }
        const schema = Json.snapshotFrozen(raw.schema)
        const validate = raw.validate
        if (schema._tag !== "Lossless") throw new Error("output schema is not lossless JSON")
        const compiled = compiledFor(definition, stringify(schema.value), schema.value as JsonSchema.JsonSchema)
        const extra = typeof validate === "function"
          ? bind(validate, output as object) as (value: JsonValue) => ReadonlyArray<string>
          : undefined
        validator = composeValidator(compiled, extra)
      } catch (error) {
        const message = `output schema could not be read: ${describeError(error)}`
        validator = () => [message]
      }
    }
    return validator(value, rootLabel)
  }
}

/** REG-1 step 5. @internal */
export const duplicateMessage = (name: string, agent: string | undefined): string =>
  agent === undefined
    ? `tool "${name}" is already registered ` +
      "(for a per-agent variant, register through `register(definition, { agent })` instead)"
    : `tool "${name}" is already registered in this scope`

/** REG-4 messages. @internal */
export const restrictMessages = {
  unscoped:
    "tools.restrict() requires a scoped context (`restrict(restriction, { agent })`): " +
    "a context-global restriction would mask every agent — " +
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
    "tools.presentAs() requires a scoped context (`presentAs(mode, { agent })`): " +
    "a context-global presentation is the registry's deployment `mode` (`InMemoryToolRegistry.layerWith({ mode })`)",
  conflict: (mode: string, existing: string) =>
    `tools.presentAs("${mode}") conflicts with "${existing}" already declared for this scope; ` +
    "one composition selects one presentation",
  invalid: (mode: string) =>
    `tools.presentAs("${mode}") is not a presentation mode (expected "native", "code" or "both")`
} as const

/** @internal */
export const isPresentationMode = (mode: unknown): mode is PresentationMode =>
  mode === "native" || mode === "code" || mode === "both"
