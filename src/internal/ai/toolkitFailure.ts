/** @internal */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Json from "../../Json.js"
import { CodedErrorTypeId, detailOf, ToolOutputError } from "../../ToolError.js"

/**
 * The code of a failure that has no `_tag`.
 *
 * @internal
 */
export const FAILURE_CODE = "TOOL_FAILURE"

/**
 * A handler's typed failure, as the model sees it: `code` is the failure's `_tag` (or
 * `TOOL_FAILURE`), the message is read once from the failure.
 *
 * @internal
 */
export class AiToolFailure extends Schema.TaggedError<AiToolFailure>("effect-tool-runtime/AiToolFailure")(
  "AiToolFailure",
  { toolName: Schema.String, code: Schema.String, detail: Schema.String }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  override get message(): string {
    return this.detail
  }
}

const renderPath = (path: ReadonlyArray<PropertyKey>): string => {
  let out = "failure"
  for (const key of path) {
    out = typeof key === "number" ? `${out}[${key}]` : typeof key === "symbol" ? `${out}.<symbol>` : `${out}.${key}`
  }
  return out
}

const violationsOf = (error: ParseResult.ParseError): ReadonlyArray<string> => {
  try {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
    const lines = issues.map((issue) => `"${renderPath(issue.path)}": ${issue.message}`)
    return lines.length === 0 ? ["\"failure\" does not match the failure schema"] : lines
  } catch {
    return ["\"failure\" does not match the failure schema (the value could not be described)"]
  }
}

const nonEmptyString = (u: unknown): string | undefined => typeof u === "string" && u.length > 0 ? u : undefined

const readField = (value: unknown, key: "_tag" | "message"): unknown => {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return undefined
  try {
    return (value as { readonly [k: string]: unknown })[key]
  } catch {
    return undefined
  }
}

/**
 * Turns a handler's failures into model-facing errors, with the failure schema's validator and
 * encoder compiled once. Total: never throws, whatever the failure is.
 *
 * @internal
 */
export const failureMapper = (
  toolName: string,
  schema: Schema.Schema<unknown, unknown, never>
): (failure: unknown) => AiToolFailure | ToolOutputError => {
  const validate = Schema.validateEither(schema)
  const encode = Schema.encodeEither(schema)
  const invalid = (violations: ReadonlyArray<string>) => new ToolOutputError({ toolName, violations })
  const jsonText = (failure: unknown): string | undefined => {
    try {
      const encoded = encode(failure)
      if (Either.isLeft(encoded)) return undefined
      const snap = Json.snapshot(encoded.right)
      return snap._tag === "Lossless" ? JSON.stringify(snap.value) : undefined
    } catch {
      return undefined
    }
  }
  return (failure) => {
    let checked: Either.Either<unknown, ParseResult.ParseError>
    try {
      checked = validate(failure)
    } catch (error) {
      return invalid([`"failure" could not be validated: ${detailOf(error).message}`])
    }
    if (Either.isLeft(checked)) return invalid(violationsOf(checked.left))
    const valid = checked.right
    const code = nonEmptyString(readField(valid, "_tag")) ?? FAILURE_CODE
    const detail = nonEmptyString(valid) ??
      nonEmptyString(readField(valid, "message")) ??
      jsonText(valid) ??
      `tool "${toolName}" failed`
    return new AiToolFailure({ toolName, code, detail })
  }
}
