/**
 * The author DSL (spec §4, DSL-1…8): a small, typed way to describe tool parameters and
 * canonical values. Specs compile to the enforced raw JSON-Schema subset (§3) and drive static
 * inference of the argument and value types used by `Tool.defineTool`.
 *
 * @since 0.1.0
 */
import * as internal from "./internal/schema/dsl.js"
import type { JsonValue } from "./Json.js"
import type { JsonSchema } from "./JsonSchema.js"

/**
 * Annotations accepted on every node form. They are copied into the compiled schema and never
 * affect validation. `default` and `examples` must be lossless JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface Annotations {
  readonly description?: string
  readonly title?: string
  readonly default?: JsonValue
  readonly examples?: ReadonlyArray<JsonValue>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface StringSpec extends Annotations {
  readonly type: "string"
  readonly enum?: ReadonlyArray<string>
  readonly const?: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface NumberSpec extends Annotations {
  readonly type: "number"
  readonly enum?: ReadonlyArray<number>
  readonly const?: number
}

/**
 * An integral number (finite, not `-0`). Infers as `number`.
 *
 * @since 0.1.0
 * @category models
 */
export interface IntegerSpec extends Annotations {
  readonly type: "integer"
  readonly enum?: ReadonlyArray<number>
  readonly const?: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface BooleanSpec extends Annotations {
  readonly type: "boolean"
  readonly enum?: ReadonlyArray<boolean>
  readonly const?: boolean
}

/**
 * @since 0.1.0
 * @category models
 */
export interface NullSpec extends Annotations {
  readonly type: "null"
  readonly enum?: ReadonlyArray<null>
  readonly const?: null
}

/**
 * The five scalar node forms.
 *
 * @since 0.1.0
 * @category models
 */
export type ScalarSpec = StringSpec | NumberSpec | IntegerSpec | BooleanSpec | NullSpec

/**
 * An array; without `items` every element is any lossless JSON value.
 *
 * @since 0.1.0
 * @category models
 */
export interface ArraySpec extends Annotations {
  readonly type: "array"
  readonly items?: ValueSpec
}

/**
 * An object. `additionalProperties` is mandatory: `true` accepts undeclared keys (any lossless
 * JSON), `false` rejects them.
 *
 * @since 0.1.0
 * @category models
 */
export interface ObjectSpec extends Annotations {
  readonly type: "object"
  readonly additionalProperties: boolean
  readonly properties?: PropertyMap
}

/**
 * Any lossless JSON value. Compiles to an annotation-only (unconstrained) node.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonSpec extends Annotations {
  readonly type: "json"
}

/**
 * Exactly one of at least two branches must match (overlapping branches make a value invalid).
 *
 * @since 0.1.0
 * @category models
 */
export interface OneOfSpec extends Annotations {
  readonly oneOf: readonly [ValueSpec, ValueSpec, ...Array<ValueSpec>]
  readonly type?: never
}

/**
 * A value schema: the root of an output schema, an array's `items`, a `oneOf` branch.
 *
 * @since 0.1.0
 * @category models
 */
export type ValueSpec = ScalarSpec | ArraySpec | ObjectSpec | JsonSpec | OneOfSpec

/**
 * A property-map entry: a value schema that may be marked `required: true` (and only `true`).
 *
 * @since 0.1.0
 * @category models
 */
export type PropertySpec = ValueSpec & { readonly required?: true }

/**
 * A property map: `name → PropertySpec`. Only string keys are allowed; a key named
 * `__proto__` is an ordinary property.
 *
 * @since 0.1.0
 * @category models
 */
export interface PropertyMap {
  readonly [key: string]: PropertySpec
  readonly [key: symbol]: never
}

/**
 * The parameter spec of a tool: a property map compiled to an open `type: "object"` root
 * (DSL-2).
 *
 * @since 0.1.0
 * @category models
 */
export type ParameterSpec = PropertyMap

/**
 * Container levels inferred exactly before widening to `JsonValue` (DSL-8).
 *
 * @since 0.1.0
 * @category models
 */
export type MaxInferenceDepth = 16

interface Prev {
  16: 15
  15: 14
  14: 13
  13: 12
  12: 11
  11: 10
  10: 9
  9: 8
  8: 7
  7: 6
  6: 5
  5: 4
  4: 3
  3: 2
  2: 1
  1: 0
  0: 0
}

type Budget = keyof Prev

type Simplify<T> = { [K in keyof T]: T[K] } & {}

type IsRequired<S> = S extends { readonly required: true } ? true : false

type RequiredPart<P, D extends Budget> = {
  readonly [K in keyof P as K extends symbol ? never : IsRequired<P[K]> extends true ? K : never]: InferAt<P[K], D>
}

type OptionalPart<P, D extends Budget> = {
  readonly [K in keyof P as K extends symbol ? never : IsRequired<P[K]> extends true ? never : K]?: InferAt<P[K], D>
}

type InferMap<P, D extends Budget> = Simplify<RequiredPart<P, D> & OptionalPart<P, D>>

type InferObject<S, D extends Budget> = S extends { readonly properties: infer P } ?
  S extends { readonly additionalProperties: false } ? InferMap<P, D>
  : InferMap<P, D> & { readonly [key: string]: JsonValue }
  : S extends { readonly additionalProperties: false } ? { readonly [key: string]: never }
  : { readonly [key: string]: JsonValue }

type InferScalar<S, T> = S extends { readonly const: infer C } ? C
  : S extends { readonly enum: infer E extends ReadonlyArray<unknown> } ? E[number]
  : T extends "string" ? string
  : T extends "number" | "integer" ? number
  : T extends "boolean" ? boolean
  : T extends "null" ? null
  : JsonValue

type InferAt<S, D extends Budget> = S extends { readonly oneOf: infer B extends ReadonlyArray<unknown> } ?
  ValueSpec extends B[number] ? JsonValue : InferAt<B[number], D>
  : S extends { readonly type: infer T } ?
    T extends "json" ? JsonValue
    : T extends "array" ?
      [D] extends [0] ? JsonValue
      : S extends { readonly items: infer I } ? ReadonlyArray<InferAt<I, Prev[D]>>
      : ReadonlyArray<JsonValue>
    : T extends "object" ? [D] extends [0] ? JsonValue : InferObject<S, Prev[D]>
    : InferScalar<S, T>
  : JsonValue

/**
 * The static type of a value described by a value spec (DSL-8): `const` beats `enum` beats the
 * broad type; `integer` is `number`; `json` and bare arrays are `JsonValue` /
 * `ReadonlyArray<JsonValue>`; `oneOf` is a union; a closed object lists its properties
 * (`required: true` keys non-optional), an open one adds `{ readonly [key: string]: JsonValue }`,
 * a closed object without properties is `{ readonly [key: string]: never }`. Containers are
 * exact up to {@link MaxInferenceDepth} nested levels (the outermost container is level 1);
 * deeper containers are `JsonValue`. This is a type-checker limit only.
 *
 * @since 0.1.0
 * @category models
 */
export type InferValue<S> = InferAt<S, MaxInferenceDepth>

/**
 * The static argument type of a parameter spec (DSL-8): the declared properties, `required:
 * true` keys non-optional, the others optional. The root map counts as the first container
 * level.
 *
 * @since 0.1.0
 * @category models
 */
export type InferParameters<P> = InferMap<P, Prev[MaxInferenceDepth]>

/**
 * Compiles a parameter map to `{ type: "object", properties, required? }` with no
 * `additionalProperties` key (the root is open, DSL-2). `required` lists the `required: true`
 * names in map order and is omitted when empty. The result is deep-frozen and detached from the
 * spec.
 *
 * **Errors** (thrown `JsonSchemaError`): the first DSL error (DSL-5, paths rooted at
 * `parameters`), else every subset violation of the compiled schema (root label `schema`).
 *
 * @example
 * ```ts
 * import { Dsl } from "effect-tool-runtime"
 *
 * Dsl.compileParameters({ path: { type: "string", required: true }, limit: { type: "integer" } })
 * // { type: "object", properties: { path: { type: "string" }, limit: { type: "integer" } }, required: ["path"] }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const compileParameters: (spec: ParameterSpec) => JsonSchema = internal.compileParameters

/**
 * Compiles a value spec (DSL-4). Paths in DSL errors are rooted at `schema`. The result is
 * deep-frozen and detached from the spec.
 *
 * @example
 * ```ts
 * import { Dsl } from "effect-tool-runtime"
 *
 * Dsl.compileValue({ type: "array", items: { type: "json" } })
 * // { type: "array", items: {} }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const compileValue: (spec: ValueSpec) => JsonSchema = internal.compileValue
