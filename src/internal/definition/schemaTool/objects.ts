/**
 * Own keys and JSON records: the two object tests the projection, the subset conversion and the
 * `__proto__`-safe parsers share.
 *
 * @internal
 */
import type { JsonObject } from "../../../Json.js"

/** @internal */
export const hasOwn = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key)

/** @internal */
export const isRecord = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)
