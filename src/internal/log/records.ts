/** @internal */
import * as Arbitrary from "effect/Arbitrary"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import { writeJson } from "../schema/jsonText.js"

const IGNORE: AST.ParseOptions = { onExcessProperty: "ignore" }

/**
 * `schema` (a schema without transformations) as a log field that keeps undeclared keys (JSON-5):
 * the input is checked against `schema` with undeclared keys ignored, must be lossless JSON, and
 * is returned itself. Nothing is copied, so every key — one named `__proto__` included — stays an
 * own data property. (Schema's `onExcessProperty: "preserve"` assigns undeclared keys onto a
 * fresh object, which makes an own `__proto__` key the copy's prototype.) Callers hand it
 * detached values: a `Json.snapshot` copy or `JSON.parse` output.
 *
 * @internal
 */
export const keepingUndeclaredKeys = <A>(schema: Schema.Schema<A>, identifier: string): Schema.Schema<A> => {
  const check = ParseResult.validateEither(schema)
  const parse = (input: unknown, options: AST.ParseOptions | undefined, ast: AST.Declaration) => {
    const checked = check(input, options === undefined ? IGNORE : { ...options, onExcessProperty: "ignore" })
    if (Either.isLeft(checked)) return checked
    return Json.isLossless(input)
      ? Either.right(input as A)
      : Either.left(new ParseResult.Type(ast, input, "Expected lossless JSON"))
  }
  return Schema.declare([], { decode: () => parse, encode: () => parse }, {
    identifier,
    arbitrary: () => Arbitrary.makeLazy(schema)
  })
}

/**
 * `JSON.stringify` for lossless JSON values, falling back to an iterative writer (same output)
 * when the value is too deep for the native recursive one.
 *
 * @internal
 */
export const stringify = (value: JsonValue): string => {
  try {
    return JSON.stringify(value)
  } catch {
    return writeJson(value, false)
  }
}

/**
 * Renders a Schema issue path as `a.b[0].c`.
 *
 * @internal
 */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string => {
  let out = ""
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`
    else out += out === "" ? String(key) : `.${String(key)}`
  }
  return out
}

/**
 * The message of a thrown value, total (hostile getters are contained).
 *
 * @internal
 */
export const messageOf = (thrown: unknown): string => {
  try {
    if (thrown instanceof Error) return String(thrown.message)
    return String(thrown)
  } catch {
    return "unknown error"
  }
}

const describeActual = (actual: unknown): string => {
  if (actual === null || typeof actual === "number" || typeof actual === "boolean") return String(actual)
  if (typeof actual === "string") return actual.length <= 40 ? JSON.stringify(actual) : "a string"
  if (Array.isArray(actual)) return "an array"
  return typeof actual === "object" ? "an object" : typeof actual
}

/**
 * The first leaf of a Schema issue as `{ path, message }`, without formatting the offending value
 * itself (only its kind), for values too deep or too large for Schema's own formatter.
 *
 * @internal
 */
export const plainIssue = (
  root: ParseResult.ParseIssue
): { readonly path: ReadonlyArray<PropertyKey>; readonly message: string } => {
  const path: Array<PropertyKey> = []
  let issue = root
  for (;;) {
    switch (issue._tag) {
      case "Pointer": {
        if (Array.isArray(issue.path)) path.push(...(issue.path as ReadonlyArray<PropertyKey>))
        else path.push(issue.path as PropertyKey)
        issue = issue.issue
        continue
      }
      case "Composite": {
        const issues = issue.issues
        issue = Array.isArray(issues)
          ? (issues as ReadonlyArray<ParseResult.ParseIssue>)[0]!
          : issues as ParseResult.ParseIssue
        continue
      }
      case "Refinement":
      case "Transformation": {
        issue = issue.issue
        continue
      }
      case "Type":
        return { path, message: `Expected ${String(issue.ast)}, actual ${describeActual(issue.actual)}` }
      case "Missing":
        return { path, message: "is missing" }
      case "Unexpected":
        return { path, message: "is unexpected" }
      case "Forbidden":
        return { path, message: "is forbidden" }
    }
  }
}
