import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import * as Json from "../src/Json.js"
import type { JsonObject } from "../src/Json.js"
import * as JsonSchema from "../src/JsonSchema.js"
import {
  clone,
  extraKey,
  lossyArbitrary,
  noisyValueArbitrary,
  propertyNames,
  record,
  schemaArbitrary,
  schemaWithValue,
  sites,
  wrongScalar
} from "./fixtures/schemaArbitrary.js"

const RUNS = { numRuns: 200 }

const display = (path: string): string => `"${path === "" ? "arguments" : path}"`
const childPath = (path: string, key: string): string => path === "" ? key : `${path}.${key}`
const rootLabel = FastCheck.constantFrom("", "value")

const setOwn = (holder: object, key: string | number, value: unknown): void => {
  Object.defineProperty(holder, key, { value, enumerable: true, writable: true, configurable: true })
}

/** A recipe for a hostile value; fast-check itself must never touch the proxies it builds. */
class Hostile {
  constructor(readonly make: () => unknown) {}
}

const hostileProxy = (traps: ReadonlyArray<keyof ProxyHandler<object>>, target: object): Hostile =>
  new Hostile(() => {
    const handler: ProxyHandler<object> = {}
    for (const trap of traps) {
      Object.assign(handler, {
        [trap]: () => {
          throw new Error(`hostile ${trap}`)
        }
      })
    }
    return new Proxy(clone(target) as object, handler)
  })

const revokedProxy = (isArray: boolean): Hostile =>
  new Hostile(() => {
    const { proxy, revoke } = Proxy.revocable(isArray ? [] : {}, {})
    revoke()
    return proxy
  })

const allTraps: ReadonlyArray<keyof ProxyHandler<object>> = [
  "get",
  "ownKeys",
  "getPrototypeOf",
  "getOwnPropertyDescriptor",
  "has"
]

const hostileLeaf: FastCheck.Arbitrary<Hostile> = FastCheck.oneof(
  FastCheck.tuple(
    FastCheck.constantFrom<ReadonlyArray<keyof ProxyHandler<object>>>(...allTraps.map((trap) => [trap]), allTraps),
    FastCheck.boolean(),
    FastCheck.dictionary(FastCheck.constantFrom(...propertyNames), FastCheck.integer(), { maxKeys: 3 })
  ).map(([traps, isArray, fields]) =>
    hostileProxy(traps, isArray ? Object.values(fields) : record(Object.entries(fields)))
  ),
  FastCheck.boolean().map(revokedProxy),
  FastCheck.constantFrom(...propertyNames, "0").map((key) =>
    new Hostile(() =>
      Object.defineProperty(key === "0" ? [1] : {}, key, {
        get: () => {
          throw new Error("hostile getter")
        },
        enumerable: true,
        configurable: true
      })
    )
  )
)

const hostileArbitrary: FastCheck.Arbitrary<unknown> = FastCheck.letrec<{ value: unknown }>((tie) => ({
  value: FastCheck.oneof(
    { maxDepth: 3, depthIdentifier: "hostile" },
    hostileLeaf,
    FastCheck.anything({ maxDepth: 1 }),
    FastCheck.array(tie("value"), { maxLength: 3 }),
    FastCheck.array(FastCheck.tuple(FastCheck.constantFrom(...propertyNames, extraKey), tie("value")), { maxLength: 3 })
      .map((entries) => record(entries))
  )
})).value

/** Builds the hostile values a generated recipe describes (recipes only hold plain data). */
const materialize = (recipe: unknown): unknown => {
  if (recipe instanceof Hostile) return recipe.make()
  if (Array.isArray(recipe)) return recipe.map(materialize)
  if (Json.isPlainRecord(recipe)) {
    return record(Object.keys(recipe).map((key) => [key, materialize(recipe[key])]))
  }
  return recipe
}

/** A direct recursive transcription of VAL-1…7 (full lossless re-check at every container). */
const oracle = (schema: JsonObject, value: unknown, path: string): Array<string> => {
  const at = display(path)
  if (Object.hasOwn(schema, "oneOf")) {
    const matched = (schema.oneOf as ReadonlyArray<JsonObject>)
      .filter((branch) => oracle(branch, value, path).length === 0).length
    return matched === 1 ? [] : [`${at} must match exactly one oneOf branch (matched ${matched})`]
  }
  const isNumber = (n: unknown): n is number => typeof n === "number" && Number.isFinite(n) && !Object.is(n, -0)
  const literals = (): Array<string> => {
    if (Object.hasOwn(schema, "enum") && !(schema.enum as ReadonlyArray<unknown>).includes(value)) {
      return [`${at} must be one of ${JSON.stringify(schema.enum)}`]
    }
    if (Object.hasOwn(schema, "const") && value !== schema.const) {
      return [`${at} must be ${JSON.stringify(schema.const)}`]
    }
    return []
  }
  switch (schema.type) {
    case undefined:
      return Json.isLossless(value) ? [] : [`${at} must be a lossless JSON value`]
    case "object": {
      if (!Json.isPlainRecord(value)) return [`${at} must be an object`]
      const properties = (schema.properties ?? {}) as JsonObject
      const out: Array<string> = []
      for (const name of (schema.required ?? []) as ReadonlyArray<string>) {
        if (!Object.hasOwn(value, name) || value[name] === undefined) {
          out.push(`missing required property "${childPath(path, name)}"`)
        }
      }
      for (const name of Object.keys(properties)) {
        if (Object.hasOwn(value, name) && value[name] !== undefined) {
          out.push(...oracle(properties[name] as JsonObject, value[name], childPath(path, name)))
        }
      }
      if (schema.additionalProperties === false) {
        for (const name of Object.keys(value)) {
          if (!Object.hasOwn(properties, name)) {
            out.push(`${display(childPath(path, name))} is not a declared property (additionalProperties: false)`)
          }
        }
      }
      return out.length === 0 && !Json.isLossless(value) ? [`${at} must be a lossless JSON object`] : out
    }
    case "array": {
      if (!Array.isArray(value)) return [`${at} must be an array`]
      const out: Array<string> = []
      if (schema.items !== undefined) {
        value.forEach((element, i) => out.push(...oracle(schema.items as JsonObject, element, `${path}[${i}]`)))
      }
      return out.length === 0 && !Json.isLossless(value) ? [`${at} must be a dense lossless JSON array`] : out
    }
    case "string":
      return typeof value === "string" ? literals() : [`${at} must be a string`]
    case "number":
      return typeof value !== "number"
        ? [`${at} must be a number`]
        : !isNumber(value)
        ? [`${at} must be a finite JSON number`]
        : literals()
    case "integer":
      return isNumber(value) && Number.isInteger(value) ? literals() : [`${at} must be an integer`]
    case "boolean":
      return typeof value === "boolean" ? literals() : [`${at} must be a boolean`]
    default:
      return value === null ? literals() : [`${at} must be null`]
  }
}

describe("JsonSchema properties", () => {
  it("SCHEMA-*: generated schemas are in the subset", () => {
    FastCheck.assert(
      FastCheck.property(schemaArbitrary(), (schema) => {
        assert.deepStrictEqual(JsonSchema.violations(schema), [])
      }),
      RUNS
    )
  })

  it("VAL-1 / T-VAL-012: validation never throws on arbitrary input", () => {
    FastCheck.assert(
      FastCheck.property(
        schemaArbitrary(),
        FastCheck.oneof(FastCheck.anything(), lossyArbitrary, hostileArbitrary),
        rootLabel,
        (schema, recipe, label) => {
          const found = JsonSchema.validate(schema, materialize(recipe), label)
          assert.isTrue(Array.isArray(found))
          for (const violation of found) assert.strictEqual(typeof violation, "string")
        }
      ),
      RUNS
    )
  })

  it("VAL-8: an opaque hostile value is one violation at its own path", () => {
    const opaque = FastCheck.tuple(FastCheck.boolean(), FastCheck.boolean()).map(([isArray, isRevoked]) =>
      isRevoked ? revokedProxy(isArray) : hostileProxy(allTraps, isArray ? [1, "x"] : { a: 1 })
    )
    FastCheck.assert(
      FastCheck.property(schemaArbitrary(), opaque, rootLabel, (schema, recipe, label) => {
        const found = JsonSchema.validate({ type: "object", properties: { h: schema } }, { h: recipe.make() }, label)
        assert.strictEqual(found.length, 1)
        assert.isTrue(found[0].startsWith(`${display(childPath(label, "h"))} must `))
      }),
      RUNS
    )
  })

  it("VAL-1…7 / T-VAL-013: values generated from a schema validate to []", () => {
    FastCheck.assert(
      FastCheck.property(schemaWithValue(), rootLabel, ([schema, value], label) => {
        assert.deepStrictEqual(JsonSchema.validate(schema, value, label), [])
      }),
      RUNS
    )
  })

  it("VAL-1…7: the compiled validator agrees with a direct transcription of the rules", () => {
    FastCheck.assert(
      FastCheck.property(
        schemaArbitrary().chain((schema) => FastCheck.tuple(FastCheck.constant(schema), noisyValueArbitrary(schema))),
        rootLabel,
        ([schema, value], label) => {
          assert.deepStrictEqual(JsonSchema.compile(schema)(value, label), oracle(schema, value, label))
        }
      ),
      RUNS
    )
  })

  it("VAL-1: validating a value and its lossless snapshot gives the same violations", () => {
    FastCheck.assert(
      FastCheck.property(
        schemaArbitrary().chain((schema) => FastCheck.tuple(FastCheck.constant(schema), noisyValueArbitrary(schema))),
        ([schema, value]) => {
          const copy = Json.snapshot(value)
          if (copy._tag === "Lossless") {
            assert.deepStrictEqual(
              JsonSchema.validate(schema, copy.value, "value"),
              JsonSchema.validate(schema, value, "value")
            )
          }
        }
      ),
      RUNS
    )
  })

  it("VAL-5a / T-VAL-014: dropping a required key names that key", () => {
    FastCheck.assert(
      FastCheck.property(schemaWithValue(), rootLabel, FastCheck.nat(), ([schema, generated], label, pick) => {
        const value = clone(generated)
        const candidates = sites(schema, value, label).flatMap((site) =>
          site.schema.type === "object"
            ? ((site.schema.required ?? []) as ReadonlyArray<string>).map((name) => [site, name] as const)
            : []
        )
        if (candidates.length === 0) return
        const [site, name] = candidates[pick % candidates.length]
        delete (site.value as Record<string, unknown>)[name]
        assert.deepStrictEqual(JsonSchema.validate(schema, value, label), [
          `missing required property "${childPath(site.path, name)}"`
        ])
      }),
      RUNS
    )
  })

  it("VAL-4: a scalar of the wrong type is reported at its path", () => {
    FastCheck.assert(
      FastCheck.property(schemaWithValue(), rootLabel, FastCheck.nat(), ([schema, generated], label, pick) => {
        const value = clone(generated)
        const candidates = sites(schema, value, label).filter((site) =>
          typeof site.schema.type === "string" && Object.hasOwn(wrongScalar, site.schema.type)
        )
        if (candidates.length === 0) return
        const site = candidates[pick % candidates.length]
        const [wrong, suffix] = wrongScalar[site.schema.type as keyof typeof wrongScalar]
        let subject: unknown = wrong
        if (site.holder !== undefined) {
          setOwn(site.holder, site.key!, wrong)
          subject = value
        }
        assert.deepStrictEqual(JsonSchema.validate(schema, subject, label), [`${display(site.path)} ${suffix}`])
      }),
      RUNS
    )
  })

  it("VAL-5c: an extra key on a closed object is reported", () => {
    FastCheck.assert(
      FastCheck.property(schemaWithValue(), rootLabel, FastCheck.nat(), ([schema, generated], label, pick) => {
        const value = clone(generated)
        const candidates = sites(schema, value, label).filter((site) =>
          site.schema.type === "object" && site.schema.additionalProperties === false
        )
        if (candidates.length === 0) return
        const site = candidates[pick % candidates.length]
        setOwn(site.value as object, extraKey, 1)
        assert.deepStrictEqual(JsonSchema.validate(schema, value, label), [
          `${display(childPath(site.path, extraKey))} is not a declared property (additionalProperties: false)`
        ])
      }),
      RUNS
    )
  })

  it("VAL-7: a value matching two overlapping branches is reported with (matched 2)", () => {
    FastCheck.assert(
      FastCheck.property(schemaWithValue(), rootLabel, FastCheck.boolean(), ([schema, value], label, twice) => {
        const union = { oneOf: [schema, twice ? schema : {}] }
        assert.deepStrictEqual(JsonSchema.validate(union, value, label), [
          `${display(label)} must match exactly one oneOf branch (matched 2)`
        ])
      }),
      RUNS
    )
  })
})
