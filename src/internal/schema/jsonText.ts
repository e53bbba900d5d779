/**
 * JSON text written iteratively (canonical, or in key order as `JSON.stringify`) and the
 * arguments digest of an approval request.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import type { JsonObject, JsonValue } from "../../Json.js"

type Item = { readonly raw: string } | { readonly value: JsonValue }

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * The JSON text of a lossless JSON value as `JSON.stringify` writes it, object keys in their own
 * order or, with `sortKeys`, sorted by plain `<` (UTF-16 code units). Iterative, so depth is
 * bounded only by memory. An own `__proto__` key is an ordinary key; values are read from their
 * property descriptors (no getter runs).
 *
 * @internal
 */
export const writeJson = (root: JsonValue, sortKeys: boolean): string => {
  const out: Array<string> = []
  const stack: Array<Item> = [{ value: root }]
  while (stack.length > 0) {
    const item = stack.pop()!
    if ("raw" in item) {
      out.push(item.raw)
      continue
    }
    const value = item.value
    if (value === null || typeof value !== "object") {
      out.push(JSON.stringify(value))
    } else if (Array.isArray(value)) {
      const array = value as ReadonlyArray<JsonValue>
      out.push("[")
      stack.push({ raw: "]" })
      for (let i = array.length - 1; i >= 0; i--) {
        stack.push({ value: array[i]! })
        if (i > 0) stack.push({ raw: "," })
      }
    } else {
      const object = value as JsonObject
      const keys = sortKeys ? Object.keys(object).sort(byCodeUnits) : Object.keys(object)
      out.push("{")
      stack.push({ raw: "}" })
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        const descriptor = Object.getOwnPropertyDescriptor(object, key)!
        stack.push({ value: descriptor.value as JsonValue })
        stack.push({ raw: i > 0 ? `,${JSON.stringify(key)}:` : `${JSON.stringify(key)}:` })
      }
    }
  }
  return out.join("")
}

/**
 * The canonical JSON text of a lossless JSON value: object keys sorted by plain `<` (UTF-16
 * code units), no whitespace, strings and numbers as `JSON.stringify` writes them.
 *
 * @internal
 */
export const canonicalJson = (root: JsonValue): string => writeJson(root, true)

/**
 * SHA-256 (lowercase hex) of the canonical JSON of a lossless JSON value.
 *
 * @internal
 */
export const argumentsDigest = (value: JsonValue): string =>
  createHash("sha256").update(canonicalJson(value), "utf8").digest("hex")
