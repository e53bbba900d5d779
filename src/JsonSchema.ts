/**
 * The enforced raw JSON-Schema subset (spec §3): definition-time assertion (SCHEMA-1…14) and
 * run-time validation (VAL-1…10). Both are iterative and total.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as internal from "./internal/schema/jsonSchema.js"
import type { JsonObject } from "./Json.js"
import { JsonSchemaError } from "./ToolError.js"

export {
  /**
   * @since 0.1.0
   * @category errors
   */
  JsonSchemaError
} from "./ToolError.js"

/**
 * A raw schema record. Values of this type are not necessarily in the subset; use
 * {@link assert} to check.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonSchema = JsonObject

/**
 * @since 0.1.0
 * @category models
 */
export interface AssertOptions {
  /** SCHEMA-13: additionally require an object root (only when nothing else is wrong). */
  readonly objectRoot?: boolean | undefined
}

/**
 * Every subset violation of `schema`, depth-first in declaration order, with root label
 * `schema` (SCHEMA-1…14). Empty means the schema is supported. Never throws.
 *
 * @since 0.1.0
 * @category guards
 */
export const violations: (schema: unknown, options?: AssertOptions) => ReadonlyArray<string> = internal.violations

/**
 * Asserts the subset: the schema itself, or a `JsonSchemaError` listing every violation.
 *
 * @since 0.1.0
 * @category constructors
 */
export const assert = (schema: unknown, options?: AssertOptions): Either.Either<JsonSchema, JsonSchemaError> => {
  const found = violations(schema, options)
  return found.length === 0
    ? Either.right(schema as JsonSchema)
    : Either.left(new JsonSchemaError({ violations: found }))
}

/**
 * A compiled validator: the ordered violations of `value` (VAL-1…10). `rootLabel` is `""`
 * for arguments (displayed as `arguments`) and `"value"` for canonical outputs. Never throws.
 *
 * @since 0.1.0
 * @category models
 */
export type Validator = (value: unknown, rootLabel: string) => ReadonlyArray<string>

/**
 * Compiles an asserted schema into a {@link Validator}. The schema is read once here; later
 * mutation of the schema object has no effect on the validator.
 *
 * @since 0.1.0
 * @category constructors
 */
export const compile: (schema: JsonSchema) => Validator = internal.compile

/**
 * Validates `value` against an asserted schema (compiling it, cached per schema object).
 *
 * @since 0.1.0
 * @category combinators
 */
export const validate: (schema: JsonSchema, value: unknown, rootLabel: string) => ReadonlyArray<string> =
  internal.validate
