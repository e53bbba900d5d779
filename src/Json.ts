/**
 * Lossless JSON: the value model shared by arguments, canonical values, content, meta and
 * contexts (spec §2, JSON-1…7).
 *
 * @since 0.1.0
 */
import * as internal from "./internal/schema/json.js"

/**
 * A JSON value as the pipeline stores it: deep-frozen, ordinary arrays and records.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonValue = null | boolean | number | string | JsonArray | JsonObject

/**
 * @since 0.1.0
 * @category models
 */
export interface JsonArray extends ReadonlyArray<JsonValue> {}

/**
 * @since 0.1.0
 * @category models
 */
export interface JsonObject {
  readonly [key: string]: JsonValue
}

/**
 * The outcome of {@link snapshot}: a detached copy, a "not lossless" verdict, or the value
 * thrown by a getter or proxy trap while reading the input (JSON-3).
 *
 * @since 0.1.0
 * @category models
 */
export type SnapshotResult =
  | { readonly _tag: "Lossless"; readonly value: JsonValue }
  | { readonly _tag: "NotLossless" }
  | { readonly _tag: "Threw"; readonly error: unknown }

/**
 * Detaches a lossless-JSON copy of `input` (JSON-1…6). Every accessor is read exactly once,
 * the copy is made of fresh ordinary arrays and objects, and `__proto__` stays an ordinary own
 * key. Iterative: nesting depth is bounded only by memory. Never throws.
 *
 * @since 0.1.0
 * @category constructors
 */
export const snapshot: (input: unknown) => SnapshotResult = internal.snapshot

/**
 * Deep-freezes `value` in place through own enumerable string keys (JSON-7). Cycle-safe,
 * iterative, skips `AbortSignal` instances. Returns its argument.
 *
 * @since 0.1.0
 * @category combinators
 */
export const deepFreeze: <A>(value: A) => A = internal.deepFreeze

/**
 * {@link snapshot} followed by {@link deepFreeze} of the copy.
 *
 * @since 0.1.0
 * @category constructors
 */
export const snapshotFrozen: (input: unknown) => SnapshotResult = internal.snapshotFrozen

/**
 * Validation-only check that `input` is lossless JSON, without copying. Never throws: a
 * throwing getter or proxy trap makes the answer `false`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isLossless: (input: unknown) => boolean = internal.isLossless

/**
 * True for a plain record: prototype `null` or an intrinsic `Object.prototype` of any realm,
 * not an array. Does not inspect keys. Never throws.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPlainRecord: (input: unknown) => input is Record<string, unknown> = internal.isPlainRecord
