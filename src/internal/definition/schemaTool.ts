/** @internal */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import type { Content } from "../../Content.js"
import type { RunContext, ToolExecution } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { JsonObject, JsonValue } from "../../Json.js"
import * as JsonSchema from "../../JsonSchema.js"
import type { CallView, ResultProjection, ResultView } from "../../Presentation.js"
import type { ToolDefinition, ToolOutput } from "../../Tool.js"
import { detailOf, JsonSchemaError, sanitizeThrown, ToolArgsError, ToolDefinitionError, ToolOutputError } from "../../ToolError.js"
import type { ToolResult } from "../../ToolResult.js"
import { adoptReturned } from "../base/promise.js"
import { OPTIONAL_CALLBACKS, isObjectLike } from "./fields.js"

/**
 * The output declaration of {@link fromSchema}: an Effect Schema for the value and pure
 * projections that receive the decoded (typed) arguments and value.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromSchemaOutput<A, V, VI> {
  /** The value schema; its encoded side (`VI`) is the canonical JSON value. */
  readonly schema: Schema.Schema<V, VI, never>
  readonly render: (args: A, value: V) => Content
  readonly presentationMeta?: ((args: A, value: V) => JsonValue) | undefined
}

/**
 * Options of {@link fromSchema}. `A`/`I` are the parameters' decoded/encoded types, `V`/`VI`
 * the output's, `E`/`R` the body's error and requirements.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromSchemaOptions<A, I, V, VI, E = never, R = never> {
  readonly name: string
  readonly description: string
  /** An object schema (e.g. `Schema.Struct`) whose encoded side is plain JSON. */
  readonly parameters: Schema.Schema<A, I, never>
  readonly output: FromSchemaOutput<A, V, VI>
  /** The body: an Effect, or a Promise (awaited until it settles, even on interruption). */
  readonly execute: (args: A, ctx: RunContext) => Effect.Effect<NoInfer<V>, E, R> | PromiseLike<NoInfer<V>>
  readonly timeoutMs?: number | undefined
  readonly isConcurrencySafe?: ((args: A) => boolean) | undefined
  readonly finalizeContent?: ((exec: ToolExecution, result: ToolResult) => Content | undefined) | undefined
  readonly projectContent?: ((exec: ToolExecution, result: ToolResult) => Content | undefined) | undefined
  readonly presentCall?: ((args: A) => CallView | undefined) | undefined
  readonly presentResult?: ((args: A, result: ResultProjection) => ResultView | undefined) | undefined
  readonly deferLoading?: boolean | undefined
}

const MAX_TIMEOUT_MS = 2147483647
const NOT_AN_OBJECT = "\"arguments\" must be an object"

type ArgsCheck<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly violations: ReadonlyArray<string>; readonly forbidden: ReadonlyArray<string> }

type Mutable = { [key: string]: JsonValue }

const hasOwn = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key)

const isRecord = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const setKey = (target: Mutable, key: string, value: JsonValue): void => {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
}

const messageOf = (e: unknown): string => {
  try {
    const raw = e instanceof Error ? e.message : String(e)
    return raw.replace(/\s+/g, " ").trim()
  } catch {
    return "<unprintable error>"
  }
}

const renderPath = (root: string, path: ReadonlyArray<PropertyKey>): string => {
  let out = root
  for (const key of path) {
    if (typeof key === "number") {
      out = `${out}[${key}]`
    } else {
      const name = typeof key === "symbol" ? String(key) : key
      out = out === "" ? name : `${out}.${name}`
    }
  }
  return out === "" ? "arguments" : out
}

const SYNC_ONLY = "(only synchronous schemas are supported)"
const UNDEFINED_BRANCH = "Expected undefined, actual "

interface Formatted {
  readonly violations: ReadonlyArray<string>
  readonly forbidden: ReadonlyArray<string>
}

const formatError = (error: ParseResult.ParseError, root: string): Formatted => {
  const violations: Array<string> = []
  const forbidden: Array<string> = []
  const seen = new Set<string>()
  const push = (line: string) => {
    if (!seen.has(line)) {
      seen.add(line)
      violations.push(line)
    }
  }
  let issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>
  try {
    issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  } catch (e) {
    return { violations: [`"${renderPath(root, [])}": ${messageOf(e)}`], forbidden }
  }
  const paths = issues.map((issue) => renderPath(root, issue.path))
  const perPath = new Map<string, number>()
  for (const path of paths) perPath.set(path, (perPath.get(path) ?? 0) + 1)
  for (let i = 0; i < issues.length; i++) {
    const issue = issues[i]!
    const path = paths[i]!
    if (issue._tag === "Type" && issue.message.startsWith(UNDEFINED_BRANCH) && perPath.get(path)! > 1) continue
    const last = issue.path.length === 0 ? undefined : issue.path[issue.path.length - 1]
    switch (issue._tag) {
      case "Missing":
        push(`missing required property "${path}"`)
        break
      case "Unexpected":
        push(
          typeof last === "string"
            ? `"${path}" is not a declared property (additionalProperties: false)`
            : `"${path}": ${issue.message}`
        )
        break
      case "Forbidden":
        forbidden.push(path)
        push(`"${path}": the schema needs an asynchronous transformation ${SYNC_ONLY}`)
        break
      default:
        push(`"${path}": ${issue.message}`)
    }
  }
  if (violations.length === 0) push(`"${renderPath(root, [])}": ${messageOf(error)}`)
  return { violations, forbidden }
}

type Role = "parameters" | "output"

const definitionError = (violation: string): JsonSchemaError => new JsonSchemaError({ violations: [violation] })

interface Projection {
  readonly schema: JsonObject
  readonly definitions: JsonObject
}

const EMPTY_PARAMETERS: JsonObject = Json.deepFreeze({
  type: "object",
  properties: {},
  required: [],
  additionalProperties: false
})

const isEmptyStruct = (ast: AST.AST): boolean =>
  AST.isTypeLiteral(ast) && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0

const project = (role: Role, toolName: string, ast: AST.AST): Projection => {
  const who = `${role}: tool "${toolName}"`
  if (role === "parameters" && isEmptyStruct(ast)) return { schema: EMPTY_PARAMETERS, definitions: {} }
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  let raw: JSONSchema.JsonSchema7
  try {
    raw = JSONSchema.fromAST(ast, { definitions, topLevelReferenceStrategy: "skip" })
  } catch (e) {
    const detail = messageOf(e)
    if (detail.includes("requires a \"jsonSchema\" annotation")) {
      throw definitionError(`${who} has a non-JSON encoded side (${detail})`)
    }
    if (detail.includes("requires an \"identifier\" annotation")) {
      throw definitionError(
        role === "parameters"
          ? `${who} is recursive; recursive parameter schemas are not supported (${detail})`
          : `${who} is recursive without an "identifier" annotation on the suspended schema (${detail})`
      )
    }
    throw definitionError(`${who} cannot be projected to JSON Schema (${detail})`)
  }
  const snap = Json.snapshotFrozen({ schema: raw, definitions })
  if (snap._tag !== "Lossless" || !isRecord(snap.value)) {
    throw definitionError(`${who} does not project to lossless JSON`)
  }
  const both = snap.value as { readonly schema: JsonObject; readonly definitions: JsonObject }
  const schema = both.schema
  const scan = scanSchema(schema, both.definitions)
  if (scan.void) throw definitionError(`${who} has a non-JSON encoded side (void)`)
  if (role === "parameters") {
    if (scan.ref !== undefined) {
      throw definitionError(
        `${who} is recursive; recursive parameter schemas are not supported (emits $ref "${scan.ref}")`
      )
    }
    if (schema.type !== "object") {
      throw definitionError(
        `${who} must project to an object schema (root type "object"), got ${describeRoot(schema)}`
      )
    }
  }
  return { schema, definitions: both.definitions }
}

const describeRoot = (schema: JsonObject): string => {
  if (typeof schema.type === "string") return `type "${schema.type}"`
  if (Array.isArray(schema.anyOf)) return "anyOf"
  if (Array.isArray(schema.oneOf)) return "oneOf"
  return "no type"
}

interface Scan {
  readonly ref: string | undefined
  readonly void: boolean
}

const VALUE_KEYS: ReadonlySet<string> = new Set(["default", "examples", "enum", "const"])
const MAP_KEYS: ReadonlySet<string> = new Set(["properties", "patternProperties", "$defs", "definitions"])

const scanSchema = (schema: JsonObject, definitions: JsonObject): Scan => {
  const defined = Object.keys(definitions)
  let ref: string | undefined = defined.length > 0 ? `#/$defs/${defined[0]}` : undefined
  let isVoid = false
  const stack: Array<{ readonly node: JsonValue; readonly map: boolean }> = [
    { node: schema, map: false },
    { node: definitions, map: true }
  ]
  while (stack.length > 0) {
    const { map, node } = stack.pop()!
    if (Array.isArray(node)) {
      for (const item of node as ReadonlyArray<JsonValue>) stack.push({ node: item, map: false })
    } else if (isRecord(node)) {
      if (map) {
        for (const key of Object.keys(node)) stack.push({ node: node[key]!, map: false })
        continue
      }
      if (ref === undefined && typeof node.$ref === "string") ref = node.$ref
      if (node.$id === "/schemas/void") isVoid = true
      for (const key of Object.keys(node)) {
        if (!VALUE_KEYS.has(key)) stack.push({ node: node[key]!, map: MAP_KEYS.has(key) })
      }
    }
  }
  return { ref, void: isVoid }
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
 */
const toSubset = (root: JsonObject, definitions: JsonObject): JsonObject => {
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

// ---------------------------------------------------------------------------------------------
// JSON-4 / JSON-5: an own "__proto__" key stays an own data key through decoding and encoding
// ---------------------------------------------------------------------------------------------

const PROTO = "__proto__"

type Parse = (input: unknown, options?: AST.ParseOptions) => Either.Either<unknown, ParseResult.ParseIssue>
type Parsed = Either.Either<unknown, ParseResult.ParseIssue> | Effect.Effect<unknown, ParseResult.ParseIssue>

const parserOf = (ast: AST.AST, isDecoding: boolean): Parse => {
  const schema = Schema.make(ast)
  return isDecoding ? ParseResult.decodeUnknownEither(schema) : ParseResult.encodeUnknownEither(schema)
}

const isStringParameter = (parameter: AST.AST): boolean => {
  let current = parameter
  while (AST.isRefinement(current)) current = current.from
  return AST.isStringKeyword(current) || AST.isTemplateLiteral(current)
}

const isRecordInput = (u: unknown): u is Record<PropertyKey, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const defineData = (target: object, key: PropertyKey, value: unknown): void => {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
}

type Order = readonly [number, number]

const byOrder = <T extends { readonly order: Order }>(a: T, b: T): number =>
  a.order[0] - b.order[0] || a.order[1] - b.order[1]

const issuesOf = (issue: ParseResult.ParseIssue): ReadonlyArray<ParseResult.ParseIssue> => {
  if (issue._tag !== "Composite") return [issue]
  return Array.isArray(issue.issues) ? issue.issues : [issue.issues as ParseResult.ParseIssue]
}

/**
 * The parser of one TypeLiteral that keeps an own `__proto__` key of the input as an own data
 * key of the output. Effect's TypeLiteral parser assembles its output with assignments, so
 * `output["__proto__"] = v` would set the prototype of the output to `v` (or drop a primitive
 * `v`). Keys of a TypeLiteral are checked independently, so the input is split: every other key
 * goes through Effect's own parser; the `__proto__` key goes through exactly the checks Effect
 * applies to it (excess check, a property signature of that name, the index signatures whose
 * key schema accepts it), and the output is assembled with `defineProperty` in Effect's order.
 */
const protoSafeParser = (literal: AST.AST, isDecoding: boolean) => {
  const whole = parserOf(literal, isDecoding)
  if (!AST.isTypeLiteral(literal)) return (input: unknown, options: AST.ParseOptions): Parsed => whole(input, options)
  const signatures = literal.propertySignatures
  const psIndex = new Map<PropertyKey, number>()
  for (let i = 0; i < signatures.length; i++) psIndex.set(signatures[i]!.name, i)
  const protoIndex = psIndex.get(PROTO)
  const protoSignature = protoIndex === undefined ? undefined : parserOf(signatures[protoIndex]!.type, isDecoding)
  const indexParsers: Array<Parse> = []
  let expected = protoSignature !== undefined
  for (const index of literal.indexSignatures) {
    if (!Either.isRight(parserOf(index.parameter, isDecoding)(PROTO))) continue
    expected = true
    if (isStringParameter(index.parameter)) indexParsers.push(parserOf(index.type, isDecoding))
  }
  let expectedText: string | undefined
  const unexpected = (): string => {
    if (expectedText === undefined) {
      const keys = literal.indexSignatures.map((index): AST.AST => index.parameter).concat(
        signatures.map((ps) =>
          typeof ps.name === "symbol" ? new AST.UniqueSymbol(ps.name) : new AST.Literal(ps.name as string | number)
        )
      )
      expectedText = `is unexpected, expected: ${String(AST.Union.make(keys))}`
    }
    return expectedText
  }

  return (input: unknown, options: AST.ParseOptions): Parsed => {
    if (!isRecordInput(input) || !hasOwn(input, PROTO)) return whole(input, options)
    const keys = Reflect.ownKeys(input)
    const position = new Map<PropertyKey, number>()
    for (let i = 0; i < keys.length; i++) position.set(keys[i]!, i)
    const rest: object = Object.create(Object.getPrototypeOf(input))
    for (const key of keys) {
      if (key !== PROTO) Object.defineProperty(rest, key, Object.getOwnPropertyDescriptor(input, key)!)
    }
    const value = input[PROTO]
    const protoPosition = position.get(PROTO)!
    const enumerable = Object.prototype.propertyIsEnumerable.call(input, PROTO)
    const orderOf = (key: PropertyKey, unexpectedKey: boolean): Order => {
      if (unexpectedKey) return [0, position.get(key) ?? keys.length]
      const ps = psIndex.get(key)
      return ps !== undefined ? [1, ps] : [2, position.get(key) ?? keys.length]
    }
    const own: Array<{ readonly order: Order; readonly result: Parsed }> = []
    let preserved = false
    if (!expected) {
      if (options?.onExcessProperty === "error") {
        own.push({
          order: [0, protoPosition],
          result: Either.left(new ParseResult.Pointer(PROTO, input, new ParseResult.Unexpected(value, unexpected())))
        })
      } else if (options?.onExcessProperty === "preserve") {
        preserved = true
      }
    }
    if (protoSignature !== undefined) own.push({ order: [1, protoIndex!], result: protoSignature(value, options) })
    if (enumerable) {
      for (const parse of indexParsers) own.push({ order: [2, protoPosition], result: parse(value, options) })
    }
    const assemble = (
      restResult: Either.Either<unknown, ParseResult.ParseIssue>,
      ownResults: ReadonlyArray<Either.Either<unknown, ParseResult.ParseIssue>>
    ): Either.Either<unknown, ParseResult.ParseIssue> => {
      const failures: Array<{ readonly order: Order; readonly issue: ParseResult.ParseIssue }> = []
      if (Either.isLeft(restResult)) {
        for (const issue of issuesOf(restResult.left)) {
          failures.push({
            order: issue._tag === "Pointer" && !Array.isArray(issue.path)
              ? orderOf(issue.path as PropertyKey, issue.issue._tag === "Unexpected")
              : [3, 0],
            issue
          })
        }
      }
      let protoValue: { readonly value: unknown } | undefined = preserved ? { value } : undefined
      for (let i = 0; i < own.length; i++) {
        const result = ownResults[i]!
        if (Either.isLeft(result)) {
          const issue = result.left
          failures.push({
            order: own[i]!.order,
            issue: issue._tag === "Pointer" ? issue : new ParseResult.Pointer(PROTO, input, issue)
          })
        } else if (own[i]!.order[0] === 1 || protoSignature === undefined) {
          protoValue = { value: result.right }
        }
      }
      if (failures.length > 0) {
        failures.sort(byOrder)
        const issues = failures.map((failure) => failure.issue) as [
          ParseResult.ParseIssue,
          ...Array<ParseResult.ParseIssue>
        ]
        return Either.left(new ParseResult.Composite(literal, input, options?.errors === "all" ? issues : issues[0]))
      }
      const output = (restResult as Either.Right<unknown, ParseResult.ParseIssue>).right as object
      const entries: Array<{ readonly order: Order; readonly key: PropertyKey; readonly value: unknown }> = []
      for (const key of Reflect.ownKeys(output)) {
        entries.push({ order: orderOf(key, false), key, value: (output as Record<PropertyKey, unknown>)[key] })
      }
      if (protoValue !== undefined) {
        entries.push({ order: orderOf(PROTO, preserved), key: PROTO, value: protoValue.value })
      }
      entries.sort(byOrder)
      const out: object = {}
      for (const entry of entries) defineData(out, entry.key, entry.value)
      return Either.right(out)
    }
    const restResult = whole(rest, options) as Parsed
    if (Either.isEither(restResult) && own.every((entry) => Either.isEither(entry.result))) {
      return assemble(restResult, own.map((entry) => entry.result as Either.Either<unknown, ParseResult.ParseIssue>))
    }
    return Effect.flatMap(
      Effect.all([Effect.either(restResult), Effect.all(own.map((entry) => Effect.either(entry.result)))]),
      ([restEither, ownEithers]) => assemble(restEither, ownEithers)
    )
  }
}

const needsProtoGuard = (literal: AST.TypeLiteral): boolean =>
  literal.indexSignatures.length > 0 || literal.propertySignatures.some((ps) => ps.name === PROTO)

const protoSafeNode = (literal: AST.TypeLiteral, expected: string): AST.AST =>
  new AST.Declaration(
    [literal],
    (inner) => protoSafeParser(inner, true),
    (inner) => protoSafeParser(inner, false),
    { [AST.IdentifierAnnotationId]: expected, [AST.SurrogateAnnotationId]: literal }
  )

const sameNodes = (a: ReadonlyArray<unknown>, b: ReadonlyArray<unknown>): boolean => a.every((x, i) => x === b[i])

/**
 * The AST used for decoding and encoding: `ast` with every TypeLiteral that could meet an own
 * `__proto__` key (index signatures, or a property of that name) replaced by a declaration
 * running {@link protoSafeParser}. Messages, paths and union candidates are unchanged. The JSON
 * Schema projection still uses the original AST.
 */
const protoSafe = (root: AST.AST): AST.AST => {
  const memo = new Map<AST.AST, AST.AST>()
  const go = (ast: AST.AST): AST.AST => {
    const hit = memo.get(ast)
    if (hit !== undefined) return hit
    let out: AST.AST
    switch (ast._tag) {
      case "Declaration": {
        const parameters = ast.typeParameters.map(go)
        out = sameNodes(parameters, ast.typeParameters)
          ? ast
          : new AST.Declaration(parameters, ast.decodeUnknown, ast.encodeUnknown, ast.annotations)
        break
      }
      case "Refinement": {
        const from = go(ast.from)
        out = from === ast.from ? ast : new AST.Refinement(from, ast.filter, ast.annotations)
        break
      }
      case "TupleType": {
        const elements = ast.elements.map((e) => {
          const type = go(e.type)
          return type === e.type ? e : new AST.OptionalType(type, e.isOptional, e.annotations)
        })
        const rest = ast.rest.map((r) => {
          const type = go(r.type)
          return type === r.type ? r : new AST.Type(type, r.annotations)
        })
        out = sameNodes(elements, ast.elements) && sameNodes(rest, ast.rest)
          ? ast
          : new AST.TupleType(elements, rest, ast.isReadonly, ast.annotations)
        break
      }
      case "TypeLiteral": {
        const signatures = ast.propertySignatures.map((ps) => {
          const type = go(ps.type)
          return type === ps.type
            ? ps
            : new AST.PropertySignature(ps.name, type, ps.isOptional, ps.isReadonly, ps.annotations)
        })
        const indexes = ast.indexSignatures.map((index) => {
          const type = go(index.type)
          return type === index.type ? index : new AST.IndexSignature(index.parameter, type, index.isReadonly)
        })
        const inner = sameNodes(signatures, ast.propertySignatures) && sameNodes(indexes, ast.indexSignatures)
          ? ast
          : new AST.TypeLiteral(signatures, indexes, ast.annotations)
        out = needsProtoGuard(ast) ? protoSafeNode(inner, String(ast)) : inner
        break
      }
      case "Union": {
        const types = ast.types.map(go)
        out = sameNodes(types, ast.types) ? ast : AST.Union.make(types, ast.annotations)
        break
      }
      case "Suspend": {
        const original = ast
        const suspended = new AST.Suspend(() => go(original.f()), ast.annotations)
        memo.set(ast, suspended)
        return suspended
      }
      case "Transformation": {
        const from = go(ast.from)
        const to = go(ast.to)
        out = from === ast.from && to === ast.to
          ? ast
          : new AST.Transformation(from, to, ast.transformation, ast.annotations)
        break
      }
      default:
        out = ast
    }
    memo.set(ast, out)
    return out
  }
  return go(root)
}

const refuse = (message: string): ToolDefinitionError => new ToolDefinitionError({ message })

interface ReadFromSchema {
  readonly name: string
  readonly description: unknown
  readonly parameters: unknown
  readonly schema: unknown
  readonly render: unknown
  readonly presentationMeta: unknown
  readonly execute: unknown
  readonly timeoutMs: unknown
  readonly isConcurrencySafe: unknown
  readonly finalizeContent: unknown
  readonly projectContent: unknown
  readonly presentCall: unknown
  readonly presentResult: unknown
  readonly deferLoading: unknown
}

/** The AST of an Effect Schema (read once), or `undefined` for anything else. Total. */
const astOf = (value: unknown): AST.AST | undefined => {
  try {
    if (!Schema.isSchema(value)) return undefined
    const ast: unknown = value.ast
    return typeof ast === "object" && ast !== null && typeof (ast as { readonly _tag?: unknown })._tag === "string"
      ? ast as AST.AST
      : undefined
  } catch {
    return undefined
  }
}

/**
 * Reads every option exactly once and checks its kind (DEF-1, D-6): each failure is a
 * {@link ToolDefinitionError}; a throwing getter or proxy trap is one too.
 */
const readFromSchemaOptions = (
  options: unknown
): ReadFromSchema & { readonly parametersAst: AST.AST; readonly schemaAst: AST.AST } => {
  if (!isObjectLike(options)) throw refuse("fromSchema(): options must be an object")
  let name: unknown
  try {
    name = (options as { readonly name?: unknown }).name
  } catch (error) {
    throw refuse(`fromSchema(): options could not be read: ${detailOf(error).message}`)
  }
  if (typeof name !== "string" || name.length === 0) throw refuse("fromSchema(): name must be a non-empty string")
  let read: ReadFromSchema
  let output: unknown
  try {
    const o = options as { readonly [key: string]: unknown }
    const description = o.description
    const parameters = o.parameters
    output = o.output
    let schema: unknown, render: unknown, presentationMeta: unknown
    if (isObjectLike(output)) {
      const out = output as { readonly [key: string]: unknown }
      schema = out.schema
      render = out.render
      presentationMeta = out.presentationMeta
    }
    read = {
      name,
      description,
      parameters,
      schema,
      render,
      presentationMeta,
      execute: o.execute,
      timeoutMs: o.timeoutMs,
      isConcurrencySafe: o.isConcurrencySafe,
      finalizeContent: o.finalizeContent,
      projectContent: o.projectContent,
      presentCall: o.presentCall,
      presentResult: o.presentResult,
      deferLoading: o.deferLoading
    }
  } catch (error) {
    throw refuse(`fromSchema(${name}): options could not be read: ${detailOf(error).message}`)
  }
  if (typeof read.description !== "string") throw refuse(`fromSchema(${name}): description must be a string`)
  const parametersAst = astOf(read.parameters)
  if (parametersAst === undefined) throw refuse(`fromSchema(${name}): parameters must be an Effect Schema`)
  if (
    !isObjectLike(output) || typeof read.render !== "function" ||
    (read.presentationMeta !== undefined && typeof read.presentationMeta !== "function")
  ) {
    throw refuse(`fromSchema(${name}): must declare output { schema, render, presentationMeta? }`)
  }
  const schemaAst = astOf(read.schema)
  if (schemaAst === undefined) throw refuse(`fromSchema(${name}): output.schema must be an Effect Schema`)
  if (typeof read.execute !== "function") throw refuse(`fromSchema(${name}): execute must be a function`)
  for (const key of OPTIONAL_CALLBACKS) {
    if (read[key] !== undefined && typeof read[key] !== "function") {
      throw refuse(`fromSchema(${name}): ${key} must be a function`)
    }
  }
  const timeoutMs = read.timeoutMs
  if (
    timeoutMs !== undefined &&
    !(typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)
  ) {
    throw refuse(`fromSchema(${name}): timeoutMs must be a positive finite number no greater than ${MAX_TIMEOUT_MS}`)
  }
  if (read.deferLoading !== undefined && typeof read.deferLoading !== "boolean") {
    throw refuse(`fromSchema(${name}): deferLoading must be a boolean`)
  }
  return { ...read, parametersAst, schemaAst }
}

/** @internal */
export const fromSchema = <A, I, V, VI, E = never, R = never>(
  options: FromSchemaOptions<A, I, V, VI, E, R>
): ToolDefinition<R> => {
  const read = readFromSchemaOptions(options)
  const name = read.name
  const description = read.description as string
  const body = read.execute as FromSchemaOptions<A, I, V, VI, E, R>["execute"]
  const render = read.render as FromSchemaOutput<A, V, VI>["render"]
  const presentationMeta = read.presentationMeta as FromSchemaOutput<A, V, VI>["presentationMeta"]
  const timeoutMs = read.timeoutMs as number | undefined
  const isConcurrencySafe = read.isConcurrencySafe as FromSchemaOptions<A, I, V, VI, E, R>["isConcurrencySafe"]
  const finalizeContent = read.finalizeContent as ToolDefinition["finalizeContent"]
  const projectContent = read.projectContent as ToolDefinition["projectContent"]
  const presentCall = read.presentCall as FromSchemaOptions<A, I, V, VI, E, R>["presentCall"]
  const presentResult = read.presentResult as FromSchemaOptions<A, I, V, VI, E, R>["presentResult"]
  const deferLoading = read.deferLoading as boolean | undefined

  const parametersJson = project("parameters", name, read.parametersAst).schema
  const outputProjection = project("output", name, read.schemaAst)
  const subset = Json.deepFreeze(toSubset(outputProjection.schema, outputProjection.definitions))
  const subsetViolations = JsonSchema.violations(subset)
  if (subsetViolations.length > 0) {
    throw new JsonSchemaError({
      violations: subsetViolations.map((v) => `output: tool "${name}" projects outside the schema subset: ${v}`)
    })
  }

  const emptyParameters = isEmptyStruct(read.parametersAst)
  const safeParameters = Schema.make<A, I, never>(protoSafe(read.parametersAst))
  const safeOutput = Schema.make<V, VI, never>(protoSafe(read.schemaAst))
  const decodeArgs = Schema.decodeUnknownEither(safeParameters, { errors: "all", onExcessProperty: "error" })
  const decodeValue = Schema.decodeUnknownEither(safeOutput, { errors: "all", onExcessProperty: "error" })
  const encodeValue = Schema.encodeEither(safeOutput, { errors: "all" })

  const checkArgs = (args: unknown): ArgsCheck<A> => {
    if (!Json.isPlainRecord(args)) return { ok: false, violations: [NOT_AN_OBJECT], forbidden: [] }
    if (emptyParameters) {
      const keys = Object.keys(args)
      if (keys.length > 0) {
        return {
          ok: false,
          violations: keys.map((key) => `"${key}" is not a declared property (additionalProperties: false)`),
          forbidden: []
        }
      }
    }
    const decoded = decodeArgs(args)
    if (Either.isRight(decoded)) return { ok: true, value: decoded.right }
    return { ok: false, ...formatError(decoded.left, "") }
  }

  const softArgs = (args: unknown): ArgsCheck<A> => {
    try {
      return checkArgs(args)
    } catch {
      return { ok: false, violations: [], forbidden: [] }
    }
  }

  const typedArgs = (args: JsonValue, where: string): A => {
    const checked = checkArgs(args)
    if (checked.ok) return checked.value
    throw new Error(
      `fromSchema(${name}): ${where} received arguments that do not decode: ${checked.violations.join("; ")}`
    )
  }

  const typedValue = (value: JsonValue, where: string): V => {
    const decoded = decodeValue(value)
    if (Either.isRight(decoded)) return decoded.right
    throw new Error(
      `fromSchema(${name}): ${where} received a value that does not decode: ${
        formatError(decoded.left, "value").violations.join("; ")
      }`
    )
  }

  const encodeCanonical = (value: V): Effect.Effect<VI, ToolOutputError> => {
    let encoded: Either.Either<VI, ParseResult.ParseError>
    try {
      encoded = encodeValue(value)
    } catch (e) {
      const violations = [`value encoding failed: ${messageOf(e)}`]
      return Effect.fail(new ToolOutputError({ toolName: name, violations }))
    }
    return Either.isRight(encoded)
      ? Effect.succeed(encoded.right)
      : Effect.fail(new ToolOutputError({ toolName: name, violations: formatError(encoded.left, "value").violations }))
  }

  /** Calls the body and adopts what it returns, uninterruptibly until then (D-14). */
  const runBody = (args: A, ctx: RunContext): Effect.Effect<V, unknown, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        let out: unknown
        try {
          out = body(args, ctx)
        } catch (e) {
          return Effect.fail(sanitizeThrown(e))
        }
        return adoptReturned(out, restore) as Effect.Effect<V, unknown, R>
      })
    )

  const execute = (args: JsonValue, ctx: RunContext): Effect.Effect<unknown, unknown, R> =>
    Effect.suspend(() => {
      const checked = checkArgs(args)
      if (!checked.ok) {
        if (checked.forbidden.length > 0) {
          return Effect.fail(
            new JsonSchemaError({
              violations: checked.forbidden.map((path) =>
                `parameters: tool "${name}" needs an asynchronous transformation at "${path}" ${SYNC_ONLY}`
              )
            })
          )
        }
        return Effect.fail(new ToolArgsError({ violations: checked.violations }))
      }
      return Effect.flatMap(runBody(checked.value, ctx), encodeCanonical)
    })

  const validate = (value: JsonValue): ReadonlyArray<string> => {
    try {
      const decoded = decodeValue(value)
      return Either.isRight(decoded) ? [] : formatError(decoded.left, "value").violations
    } catch (e) {
      return [`"value" could not be validated: ${messageOf(e)}`]
    }
  }

  const output: ToolOutput = {
    schema: subset,
    render: (args, value) => render(typedArgs(args, "output.render"), typedValue(value, "output.render")),
    ...(presentationMeta === undefined ? {} : {
      presentationMeta: (args: JsonValue, value: JsonValue) =>
        presentationMeta(typedArgs(args, "output.presentationMeta"), typedValue(value, "output.presentationMeta"))
    }),
    validate
  }

  return {
    name,
    description,
    parameters: parametersJson,
    ...(deferLoading === undefined ? {} : { deferLoading }),
    output,
    execute,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(isConcurrencySafe === undefined ? {} : {
      isConcurrencySafe: (args: JsonValue) => {
        const decoded = softArgs(args)
        if (!decoded.ok) return false
        try {
          return isConcurrencySafe(decoded.value)
        } catch {
          return false
        }
      }
    }),
    ...(finalizeContent === undefined ? {} : { finalizeContent }),
    ...(projectContent === undefined ? {} : { projectContent }),
    ...(presentCall === undefined ? {} : {
      presentCall: (args: unknown) => {
        const decoded = softArgs(args)
        if (!decoded.ok) return undefined
        try {
          return presentCall(decoded.value)
        } catch {
          return undefined
        }
      }
    }),
    ...(presentResult === undefined ? {} : {
      presentResult: (args: unknown, result: ResultProjection) => {
        const decoded = softArgs(args)
        if (!decoded.ok) return undefined
        try {
          return presentResult(decoded.value, result)
        } catch {
          return undefined
        }
      }
    })
  }
}
