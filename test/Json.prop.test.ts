import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import * as Json from "../src/Json.js"

const RUNS = { numRuns: 300 }

const containers = (root: unknown): Array<object> => {
  const found: Array<object> = []
  const pending: Array<unknown> = [root]
  while (pending.length > 0) {
    const node = pending.pop()
    if (typeof node !== "object" || node === null) continue
    found.push(node)
    for (const key of Object.keys(node)) pending.push((node as Record<string, unknown>)[key])
  }
  return found
}

const hasNegativeZero = (root: unknown): boolean => {
  const pending: Array<unknown> = [root]
  while (pending.length > 0) {
    const node = pending.pop()
    if (Object.is(node, -0)) return true
    if (typeof node === "object" && node !== null) {
      for (const key of Object.keys(node)) pending.push((node as Record<string, unknown>)[key])
    }
  }
  return false
}

const referenceIsLossless = (value: unknown, ancestors: Array<unknown> = []): boolean => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true
    case "number":
      return Number.isFinite(value) && !Object.is(value, -0)
    case "object": {
      if (value === null) return true
      if (ancestors.includes(value)) return false
      const proto = Object.getPrototypeOf(value)
      const keys = Reflect.ownKeys(value)
      if (Array.isArray(value)) {
        if (proto !== Array.prototype || keys.length !== value.length + 1) return false
        for (let i = 0; i < value.length; i++) if (!Object.hasOwn(value, i)) return false
      } else if (proto !== Object.prototype && proto !== null) {
        return false
      } else {
        const isHidden = (key: string | symbol) =>
          typeof key !== "string" || !Object.getOwnPropertyDescriptor(value, key)!.enumerable
        if (keys.some(isHidden)) return false
      }
      const inner = [...ancestors, value]
      return Object.keys(value).every((key) => referenceIsLossless((value as Record<string, unknown>)[key], inner))
    }
    default:
      return false
  }
}

const json = FastCheck.jsonValue().filter((value) => !hasNegativeZero(value))

const anything = FastCheck.anything({
  withBoxedValues: true,
  withMap: true,
  withSet: true,
  withObjectString: true,
  withNullPrototype: true,
  withBigInt: true,
  withDate: true,
  withTypedArray: true,
  withSparseArray: true,
  withUnicodeString: true,
  maxDepth: 4
})

const rare = FastCheck.constantFrom<unknown>(undefined, NaN, -0, Infinity, 1n, Symbol.for("s"), () => 1)

const nearlyJson = FastCheck.anything({
  values: [
    FastCheck.oneof(
      {
        arbitrary: FastCheck.oneof(
          FastCheck.constant(null),
          FastCheck.boolean(),
          FastCheck.double(),
          FastCheck.string({ unit: "binary" })
        ),
        weight: 30
      },
      { arbitrary: rare, weight: 1 }
    )
  ],
  key: FastCheck.oneof(FastCheck.string(), FastCheck.constant("__proto__")),
  withNullPrototype: true,
  withSparseArray: true,
  maxDepth: 4
})

describe("Json properties", () => {
  it("JSON-1/JSON-5: snapshot equals JSON.parse(JSON.stringify(x)) on lossless values", () => {
    FastCheck.assert(
      FastCheck.property(json, (value) => {
        assert.deepStrictEqual(Json.snapshot(value), { _tag: "Lossless", value: JSON.parse(JSON.stringify(value)) })
      }),
      RUNS
    )
  })

  it("JSON-5: snapshot is idempotent", () => {
    FastCheck.assert(
      FastCheck.property(json, (value) => {
        const first = Json.snapshot(value)
        assert.strictEqual(first._tag, "Lossless")
        const second = Json.snapshot((first as { value: Json.JsonValue }).value)
        assert.deepStrictEqual(second, first)
      }),
      RUNS
    )
  })

  it("JSON-5: no container of the copy is a container of the input", () => {
    FastCheck.assert(
      FastCheck.property(json, (value) => {
        const result = Json.snapshot(value)
        assert.strictEqual(result._tag, "Lossless")
        const inputs = new Set(containers(value))
        for (const node of containers((result as { value: Json.JsonValue }).value)) {
          assert.isFalse(inputs.has(node))
        }
      }),
      RUNS
    )
  })

  it("JSON-1/JSON-2: isLossless agrees with snapshot and with a recursive reference on arbitrary values", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.oneof(anything, nearlyJson), (value) => {
        const verdict = Json.isLossless(value)
        assert.strictEqual(verdict, Json.snapshot(value)._tag === "Lossless")
        assert.strictEqual(verdict, Json.snapshotFrozen(value)._tag === "Lossless")
        assert.strictEqual(verdict, referenceIsLossless(value))
        if (verdict) {
          assert.deepStrictEqual(Json.snapshot(value), { _tag: "Lossless", value: JSON.parse(JSON.stringify(value)) })
        }
      }),
      RUNS
    )
  })

  it("JSON-7: snapshotFrozen deep-equals snapshot and every container is frozen", () => {
    FastCheck.assert(
      FastCheck.property(json, (value) => {
        const frozen = Json.snapshotFrozen(value)
        assert.deepStrictEqual(frozen, Json.snapshot(value))
        for (const node of containers((frozen as { value: Json.JsonValue }).value)) assert.isTrue(Object.isFrozen(node))
      }),
      RUNS
    )
  })
})
