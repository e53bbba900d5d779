/**
 * The projection of an Effect Schema to JSON Schema (`effect/JSONSchema`), with the checks a tool's
 * schemas must pass: a JSON encoded side, lossless JSON, no recursion in the parameters, and an
 * object at the parameters' root.
 *
 * @internal
 */
import * as JSONSchema from "effect/JSONSchema"
import * as AST from "effect/SchemaAST"
import * as Json from "../../../Json.js"
import type { JsonObject, JsonValue } from "../../../Json.js"
import { JsonSchemaError } from "../../../ToolError.js"
import { isRecord } from "./objects.js"
import { messageOf } from "./parseErrors.js"

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

/** @internal */
export const isEmptyStruct = (ast: AST.AST): boolean =>
  AST.isTypeLiteral(ast) && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0

/** @internal */
export const project = (role: Role, toolName: string, ast: AST.AST): Projection => {
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
