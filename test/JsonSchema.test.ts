import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { runInNewContext } from "node:vm"
import * as JsonSchema from "../src/JsonSchema.js"
import type { JsonObject } from "../src/Json.js"

const SUBSET = "(subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"
const OBJECT_ROOT = "schema.type must be \"object\" (structured output is object-rooted)"

const bad = (schema: unknown): ReadonlyArray<string> => JsonSchema.violations(schema)
const check = (schema: unknown, value: unknown, rootLabel = "value"): ReadonlyArray<string> =>
  JsonSchema.validate(schema as JsonObject, value, rootLabel)
const thrown = (schema: unknown): string => {
  const result = JsonSchema.assert(schema)
  if (Either.isRight(result)) throw new Error("expected a JsonSchemaError")
  return result.left.message
}

const throwingProxy = (target: object, trap: keyof ProxyHandler<object>): object =>
  new Proxy(target, {
    [trap]: () => {
      throw new Error("hostile")
    }
  })

const revoked = (target: object): object => {
  const { proxy, revoke } = Proxy.revocable(target, {})
  revoke()
  return proxy
}

const withGetter = (base: Record<string, unknown>, key: string, get: () => unknown): Record<string, unknown> =>
  Object.defineProperty({ ...base }, key, { get, enumerable: true, configurable: true })

const nestedOneOf = (levels: number): JsonObject => {
  let schema: JsonObject = { type: "string" }
  for (let i = 0; i < levels; i++) schema = { oneOf: [schema, { type: "boolean" }] }
  return schema
}

const nestedArray = (levels: number): unknown => {
  let value: unknown = []
  for (let i = 0; i < levels; i++) value = [value]
  return value
}

class Point {
  constructor(readonly x: number) {}
}

// spec §22.1: the parameter map { path: string (required), n: integer,
// o: closed object { a: boolean (required) }, u: oneOf [string, string with enum ["x"]] }
const parameters: JsonObject = {
  type: "object",
  properties: {
    path: { type: "string" },
    n: { type: "integer" },
    o: { type: "object", properties: { a: { type: "boolean" } }, required: ["a"], additionalProperties: false },
    u: { oneOf: [{ type: "string" }, { type: "string", enum: ["x"] }] }
  },
  required: ["path"]
}

describe("JsonSchema §22.1 reference vectors", () => {
  it("VAL §22.1: argument vector with every kind of violation, in order", () => {
    assert.deepStrictEqual(check(parameters, { n: 1.5, o: { b: 1 }, u: "x" }, ""), [
      "missing required property \"path\"",
      "\"n\" must be an integer",
      "missing required property \"o.a\"",
      "\"o.b\" is not a declared property (additionalProperties: false)",
      "\"u\" must match exactly one oneOf branch (matched 2)"
    ])
  })

  it("VAL §22.1: a string argument", () => {
    assert.deepStrictEqual(check(parameters, "str", ""), ["\"arguments\" must be an object"])
  })

  it("VAL §22.1: -0 is not an integer", () => {
    assert.deepStrictEqual(check(parameters, { path: "a", n: -0 }, ""), ["\"n\" must be an integer"])
  })

  it("VAL §22.1: an undefined member and a sparse array member make the arguments lossy", () => {
    assert.deepStrictEqual(check(parameters, { path: "a", extra: undefined }, ""), [
      "\"arguments\" must be a lossless JSON object"
    ])
    assert.deepStrictEqual(check(parameters, { path: "a", extra: [1, , 3] }, ""), [
      "\"arguments\" must be a lossless JSON object"
    ])
  })

  it("VAL §22.1: output array of numbers", () => {
    assert.deepStrictEqual(check({ type: "array", items: { type: "number" } }, [1, NaN, "x"]), [
      "\"value[1]\" must be a finite JSON number",
      "\"value[2]\" must be a number"
    ])
  })

  it("VAL §22.1: enum passes, const fails", () => {
    assert.deepStrictEqual(check({ type: "number", enum: [1, 2], const: 1 }, 2), ["\"value\" must be 1"])
  })

  it("SCHEMA §22.1: assertion vectors, each thrown as `unsupported JSON schema: <violation>`", () => {
    const vectors: ReadonlyArray<readonly [unknown, string]> = [
      [{ type: "string", format: "uri" }, `schema.format is not a supported keyword ${SUBSET}`],
      [{ type: ["string", "null"] }, "schema.type must be a single type string (type arrays are not supported)"],
      [{ oneOf: [{ type: "string" }] }, "schema.oneOf must be an array of at least two schemas"],
      [{ type: "object", required: ["x"] }, "schema.required names \"x\" which is not in properties"],
      [{ enum: ["a"] }, "schema.enum requires type or oneOf"],
      [{ type: "string", items: {} }, "schema.items is not supported on type \"string\""],
      [{ type: "integer", const: 1.5 }, "schema.const must be a integer value"],
      [{ type: "string", description: 3 }, "schema.description must be a string"],
      [{ type: "object", additionalProperties: {} }, "schema.additionalProperties must be a boolean"]
    ]
    for (const [schema, violation] of vectors) {
      assert.strictEqual(thrown(schema), `unsupported JSON schema: ${violation}`)
    }
  })
})

describe("JsonSchema assertion (SCHEMA-*)", () => {
  it("SCHEMA-1: every keyword outside the subset is named", () => {
    for (const key of ["$schema", "$ref", "format", "minimum", "pattern", "anyOf", "allOf", "nullable", "minItems"]) {
      assert.deepStrictEqual(bad({ type: "string", [key]: 1 }), [`schema.${key} is not a supported keyword ${SUBSET}`])
    }
  })

  it("SCHEMA-1: keyword and annotation findings follow declaration order", () => {
    assert.deepStrictEqual(bad({ zeta: 1, type: "string", default: undefined, alpha: 2 }), [
      `schema.zeta is not a supported keyword ${SUBSET}`,
      "schema.default annotation must be lossless JSON data",
      `schema.alpha is not a supported keyword ${SUBSET}`
    ])
  })

  it("SCHEMA-1: the allowed vocabulary passes", () => {
    assert.deepStrictEqual(
      bad({
        type: "object",
        title: "t",
        description: "d",
        default: {},
        examples: [{}],
        properties: { s: { type: "string", enum: ["a"], const: "a" }, l: { type: "array", items: {} } },
        required: ["s"],
        additionalProperties: false
      }),
      []
    )
  })

  it("SCHEMA-2: non-records are not schema objects", () => {
    for (const node of [null, [], "no", 42, undefined, new Map(), new Date(0), new Point(1), () => 1]) {
      assert.deepStrictEqual(bad(node), ["schema must be a schema object"])
    }
  })

  it("SCHEMA-2: forged prototypes, hidden and symbol keys, throwing proxies", () => {
    const hidden = Object.defineProperty({ type: "string" }, "secret", { value: 1, enumerable: false })
    const nodes: ReadonlyArray<unknown> = [
      Object.create({ type: "string" }),
      Object.create(Object.create(null)),
      hidden,
      { type: "string", [Symbol("s")]: 1 },
      throwingProxy({ type: "string" }, "getPrototypeOf"),
      throwingProxy({ type: "string" }, "ownKeys"),
      throwingProxy({ type: "string" }, "getOwnPropertyDescriptor"),
      revoked({ type: "string" })
    ]
    for (const node of nodes) assert.deepStrictEqual(bad(node), ["schema must be a schema object"])
  })

  it("SCHEMA-2: a throwing getter on a constraint makes the node unusable", () => {
    assert.deepStrictEqual(bad(withGetter({}, "type", () => {
      throw new Error("boom")
    })), ["schema must be a schema object"])
  })

  it("SCHEMA-2: null-prototype and cross-realm records are schema objects", () => {
    const bare = Object.assign(Object.create(null), { type: "string" })
    assert.deepStrictEqual(bad(bare), [])
    assert.deepStrictEqual(bad(runInNewContext("({ type: 'array', items: { type: 'string' } })")), [])
    assert.deepStrictEqual(bad(runInNewContext("({ oneOf: [{ type: 'string' }, { type: 'null' }] })")), [])
  })

  it("SCHEMA-2: a non-schema node is not inspected further", () => {
    assert.deepStrictEqual(bad({ type: "array", items: [{ format: 1 }] }), ["schema.items must be a schema object"])
  })

  it("SCHEMA-3: a node that is its own ancestor is circular", () => {
    const self: Record<string, unknown> = { type: "object" }
    self.properties = { self }
    assert.deepStrictEqual(bad(self), ["schema.properties.self is circular"])
    const list: Record<string, unknown> = { type: "array" }
    list.items = list
    assert.deepStrictEqual(bad(list), ["schema.items is circular"])
    const union: Record<string, unknown> = {}
    union.oneOf = [{ type: "string" }, union]
    assert.deepStrictEqual(bad(union), ["schema.oneOf[1] is circular"])
  })

  it("SCHEMA-3: sibling reuse of one node (a DAG) is allowed", () => {
    const leaf = { type: "string" }
    const dag = { type: "object", properties: { a: leaf, b: leaf, c: { type: "array", items: leaf } } }
    assert.deepStrictEqual(bad(dag), [])
    assert.deepStrictEqual(check({ type: "object", properties: { a: leaf, b: leaf } }, { a: "x", b: 1 }), [
      "\"value.b\" must be a string"
    ])
  })

  it("SCHEMA-4: annotations must be lossless JSON data", () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const hidden = Object.defineProperty({}, "h", { value: 1, enumerable: false })
    const values: ReadonlyArray<unknown> = [
      undefined,
      Infinity,
      NaN,
      -0,
      new Date(0),
      cyclic,
      throwingProxy({}, "ownKeys"),
      hidden,
      { [Symbol("s")]: 1 },
      Symbol("s"),
      10n,
      [1, , 2]
    ]
    for (const value of values) {
      assert.deepStrictEqual(bad({ type: "string", default: value }), [
        "schema.default annotation must be lossless JSON data"
      ])
      assert.deepStrictEqual(bad({ type: "string", examples: [value] }), [
        "schema.examples annotation must be lossless JSON data"
      ])
    }
  })

  it("SCHEMA-4: a throwing annotation getter is a lossy annotation", () => {
    assert.deepStrictEqual(bad(withGetter({ type: "string" }, "default", () => {
      throw new Error("boom")
    })), ["schema.default annotation must be lossless JSON data"])
  })

  it("SCHEMA-4: description and title must be strings", () => {
    assert.deepStrictEqual(bad({ type: "string", description: 3, title: null }), [
      "schema.description must be a string",
      "schema.title must be a string"
    ])
    assert.deepStrictEqual(bad({ type: "string", title: undefined }), [
      "schema.title annotation must be lossless JSON data",
      "schema.title must be a string"
    ])
  })

  it("SCHEMA-4: annotations never affect validation", () => {
    const schema = { type: "string", default: "d", examples: ["e"], title: "t", description: "x" }
    assert.deepStrictEqual(check(schema, "anything"), [])
    assert.deepStrictEqual(check(schema, 1), ["\"value\" must be a string"])
  })

  it("SCHEMA-5: type and oneOf together stop inspection of the node", () => {
    assert.deepStrictEqual(bad({ type: "string", oneOf: [1], items: 3, description: 2 }), [
      "schema.description must be a string",
      "schema cannot declare both type and oneOf"
    ])
  })

  it("SCHEMA-5: the unconstrained node rejects structural keywords", () => {
    assert.deepStrictEqual(bad({}), [])
    assert.deepStrictEqual(bad({ title: "anything" }), [])
    assert.deepStrictEqual(
      bad({ const: 1, enum: [1], items: {}, additionalProperties: true, required: [], properties: {} }),
      [
        "schema.properties requires type or oneOf",
        "schema.required requires type or oneOf",
        "schema.additionalProperties requires type or oneOf",
        "schema.items requires type or oneOf",
        "schema.enum requires type or oneOf",
        "schema.const requires type or oneOf"
      ]
    )
  })

  it("SCHEMA-6: oneOf must be a dense plain array of at least two schemas", () => {
    const withExtra = Object.assign([{}, {}], { extra: 1 })
    for (const oneOf of [[], [{}], {}, "x", null, [{}, , {}], withExtra, new (class extends Array {})()]) {
      assert.deepStrictEqual(bad({ oneOf }), ["schema.oneOf must be an array of at least two schemas"])
    }
    assert.deepStrictEqual(bad({ oneOf: runInNewContext("[{ type: 'string' }, { type: 'null' }]") }), [])
  })

  it("SCHEMA-6: branches are checked at oneOf[i], then siblings are reported", () => {
    assert.deepStrictEqual(
      bad({
        oneOf: [{ type: "string" }, { type: "tuple" }, { format: "x" }],
        items: {},
        const: 1,
        description: "annotations are fine"
      }),
      [
        "schema.oneOf[1].type must be one of object/array/string/number/integer/boolean/null",
        `schema.oneOf[2].format is not a supported keyword ${SUBSET}`,
        "schema.items is not supported beside oneOf",
        "schema.const is not supported beside oneOf"
      ]
    )
  })

  it("SCHEMA-7: type must be one supported string", () => {
    assert.deepStrictEqual(bad({ type: ["string"] }), [
      "schema.type must be a single type string (type arrays are not supported)"
    ])
    for (const type of ["tuple", "Object", 5, null, {}]) {
      assert.deepStrictEqual(bad({ type }), [
        "schema.type must be one of object/array/string/number/integer/boolean/null"
      ])
    }
  })

  it("SCHEMA-8: keywords are placed by type", () => {
    assert.deepStrictEqual(
      bad({ type: "string", properties: {}, required: [], additionalProperties: true, items: {} }),
      [
        "schema.properties is not supported on type \"string\"",
        "schema.required is not supported on type \"string\"",
        "schema.additionalProperties is not supported on type \"string\"",
        "schema.items is not supported on type \"string\""
      ]
    )
    assert.deepStrictEqual(bad({ type: "array", enum: [[]], const: [], properties: {} }), [
      "schema.properties is not supported on type \"array\"",
      "schema.enum is not supported on type \"array\"",
      "schema.const is not supported on type \"array\""
    ])
    assert.deepStrictEqual(bad({ type: "object", items: {}, enum: [{}] }), [
      "schema.items is not supported on type \"object\"",
      "schema.enum is not supported on type \"object\""
    ])
  })

  it("SCHEMA-9: properties must be an object of schemas", () => {
    for (const properties of [[], "x", null, new Map(), Object.create({ a: {} })]) {
      assert.deepStrictEqual(bad({ type: "object", properties }), ["schema.properties must be an object of schemas"])
    }
    assert.deepStrictEqual(bad({ type: "object", properties: { a: 42, b: { type: "string" } } }), [
      "schema.properties.a must be a schema object"
    ])
  })

  it("SCHEMA-9: required must be a dense array of own property names", () => {
    for (const required of ["a", [1], [, "a"], { 0: "a" }, null]) {
      assert.deepStrictEqual(bad({ type: "object", properties: { a: {} }, required }), [
        "schema.required must be an array of strings"
      ])
    }
    assert.deepStrictEqual(bad({ type: "object", properties: { a: {} }, required: ["a", "toString", "b"] }), [
      "schema.required names \"toString\" which is not in properties",
      "schema.required names \"b\" which is not in properties"
    ])
    assert.deepStrictEqual(bad({ type: "object", properties: { toString: {} }, required: ["toString"] }), [])
  })

  it("SCHEMA-9: additionalProperties must be a boolean", () => {
    for (const additionalProperties of [{}, "true", 1, null]) {
      assert.deepStrictEqual(bad({ type: "object", additionalProperties }), [
        "schema.additionalProperties must be a boolean"
      ])
    }
  })

  it("SCHEMA-9: object checks run after the property sub-schemas", () => {
    assert.deepStrictEqual(
      bad({ type: "object", required: ["zz"], additionalProperties: 0, properties: { a: { type: "date" } } }),
      [
        "schema.properties.a.type must be one of object/array/string/number/integer/boolean/null",
        "schema.required names \"zz\" which is not in properties",
        "schema.additionalProperties must be a boolean"
      ]
    )
  })

  it("SCHEMA-10: items is one node checked at .items; tuples are unsupported", () => {
    assert.deepStrictEqual(bad({ type: "array", items: { type: "string", minLength: 1 } }), [
      `schema.items.minLength is not a supported keyword ${SUBSET}`
    ])
    assert.deepStrictEqual(bad({ type: "array", items: [{ type: "string" }] }), [
      "schema.items must be a schema object"
    ])
    assert.deepStrictEqual(bad({ type: "array" }), [])
  })

  it("SCHEMA-11: valid typed enum/const combinations pass", () => {
    const schemas: ReadonlyArray<unknown> = [
      { type: "string", enum: ["a", "b"], const: "a" },
      { type: "number", enum: [1.5, 2], const: 2 },
      { type: "integer", enum: [1, 2] },
      { type: "boolean", const: false },
      { type: "null", enum: [null], const: null }
    ]
    for (const schema of schemas) assert.deepStrictEqual(bad(schema), [])
  })

  it("SCHEMA-11: enum must be a non-empty dense array of T values", () => {
    const cases: ReadonlyArray<readonly [string, unknown]> = [
      ["string", []],
      ["string", [1]],
      ["string", "a"],
      ["integer", [1.5]],
      ["number", [NaN]],
      ["number", [-0]],
      ["number", [Infinity]],
      ["boolean", [0]],
      ["null", [undefined]],
      ["string", [{}]],
      ["string", ["a", , "b"]]
    ]
    for (const [type, allowed] of cases) {
      assert.deepStrictEqual(bad({ type, enum: allowed }), [`schema.enum must be a non-empty array of ${type} values`])
    }
  })

  it("SCHEMA-11: const must be a T value (the article is always `a`)", () => {
    assert.deepStrictEqual(bad({ type: "number", const: -0 }), ["schema.const must be a number value"])
    assert.deepStrictEqual(bad({ type: "boolean", const: 1 }), ["schema.const must be a boolean value"])
    assert.deepStrictEqual(bad({ type: "integer", const: 1.5 }), ["schema.const must be a integer value"])
    assert.deepStrictEqual(bad({ type: "string", const: ["a"] }), ["schema.const must be a string value"])
    assert.deepStrictEqual(bad({ type: "null", const: undefined }), ["schema.const must be a null value"])
  })

  it("SCHEMA-11: const must be one of enum when both are valid", () => {
    assert.deepStrictEqual(bad({ type: "string", enum: ["a"], const: "b" }), [
      "schema.const must be one of schema.enum when both are declared"
    ])
    assert.deepStrictEqual(bad({ type: "string", enum: [], const: "b" }), [
      "schema.enum must be a non-empty array of string values"
    ])
    assert.deepStrictEqual(bad({ type: "string", enum: ["a"], const: 1 }), ["schema.const must be a string value"])
  })

  it("SCHEMA-12: all violations are collected depth-first in declaration order", () => {
    const schema = {
      type: "object",
      properties: {
        a: { type: "string", pattern: "x" },
        b: { type: "array", items: { type: ["x"] } },
        c: { oneOf: [{ type: "null", const: 1 }, { minimum: 1 }], enum: [1] }
      },
      required: ["a", "nope"],
      $id: "x"
    }
    assert.deepStrictEqual(bad(schema), [
      `schema.$id is not a supported keyword ${SUBSET}`,
      `schema.properties.a.pattern is not a supported keyword ${SUBSET}`,
      "schema.properties.b.items.type must be a single type string (type arrays are not supported)",
      "schema.properties.c.oneOf[0].const must be a null value",
      `schema.properties.c.oneOf[1].minimum is not a supported keyword ${SUBSET}`,
      "schema.properties.c.enum is not supported beside oneOf",
      "schema.required names \"nope\" which is not in properties"
    ])
  })

  it("SCHEMA-12: JsonSchemaError carries name, code, message and violations", () => {
    const result = JsonSchema.assert({ type: "string", format: "x", description: 1 })
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) {
      const error = result.left
      assert.instanceOf(error, JsonSchema.JsonSchemaError)
      assert.strictEqual(error._tag, "JsonSchemaError")
      assert.strictEqual(error.code, "UNSUPPORTED_SCHEMA")
      assert.deepStrictEqual(error.violations, [
        `schema.format is not a supported keyword ${SUBSET}`,
        "schema.description must be a string"
      ])
      assert.strictEqual(
        error.message,
        "unsupported JSON schema: " +
          `schema.format is not a supported keyword ${SUBSET}; schema.description must be a string`
      )
    }
    const ok = { type: "string" }
    assert.deepStrictEqual(JsonSchema.assert(ok), Either.right(ok))
  })

  it("SCHEMA-13: objectRoot requires an object root only when nothing else is wrong", () => {
    const objectRoot = { objectRoot: true }
    const roots = [{}, { type: "string" }, { type: "array" }, { oneOf: [{ type: "object" }, { type: "null" }] }]
    for (const schema of roots) {
      assert.deepStrictEqual(JsonSchema.violations(schema, objectRoot), [OBJECT_ROOT])
    }
    assert.deepStrictEqual(JsonSchema.violations({ type: "object" }, objectRoot), [])
    assert.deepStrictEqual(JsonSchema.violations("no", objectRoot), ["schema must be a schema object"])
    assert.deepStrictEqual(JsonSchema.violations({ type: "string", format: "x" }, objectRoot), [
      `schema.format is not a supported keyword ${SUBSET}`
    ])
    assert.deepStrictEqual(JsonSchema.violations({ type: "string" }), [])
    assert.deepStrictEqual(JsonSchema.violations({ type: "string" }, { objectRoot: false }), [])
  })

  it("SCHEMA-14: 5,000 nested oneOf levels are asserted without overflow", () => {
    assert.deepStrictEqual(bad(nestedOneOf(5000)), [])
    let schema: Record<string, unknown> = { type: "string", format: "deep" }
    let path = "schema"
    for (let i = 0; i < 5000; i++) {
      schema = { type: "object", properties: { k: schema } }
      path += ".properties.k"
    }
    assert.deepStrictEqual(bad(schema), [`${path}.format is not a supported keyword ${SUBSET}`])
  })

  it("SCHEMA-*: violations and assert never throw", () => {
    const hostile = new Proxy({}, {
      get: () => {
        throw new Error("get")
      },
      has: () => {
        throw new Error("has")
      }
    })
    assert.deepStrictEqual(bad({ type: "object", properties: hostile }), [])
    assert.deepStrictEqual(bad({ type: "string", enum: throwingProxy(["a"], "get") }), [
      "schema.enum must be a non-empty array of string values"
    ])
    assert.deepStrictEqual(bad({ type: "object", properties: withGetter({}, "a", () => {
      throw new Error("boom")
    }) }), ["schema.properties must be an object of schemas"])
  })
})

describe("JsonSchema validation (VAL-*)", () => {
  it("VAL-1: validation returns violations and never throws", () => {
    const schema = { type: "object", properties: { path: { type: "string" }, limit: { type: "number" } } }
    const values: ReadonlyArray<unknown> = [
      null,
      undefined,
      "s",
      [],
      42,
      10n,
      Symbol("s"),
      () => 1,
      new Map(),
      throwingProxy({}, "getPrototypeOf"),
      throwingProxy({}, "ownKeys"),
      revoked({})
    ]
    for (const value of values) {
      assert.isAtLeast(check(schema, value).length, 1)
    }
  })

  it("VAL-2: paths use the argument root label and dotted/indexed children", () => {
    const schema = {
      type: "object",
      properties: { a: { type: "object", properties: { b: { type: "array", items: { type: "string" } } } } }
    }
    assert.deepStrictEqual(check(schema, { a: { b: ["x", 1] } }, ""), ["\"a.b[1]\" must be a string"])
    assert.deepStrictEqual(check(schema, { a: { b: ["x", 1] } }, "value"), ["\"value.a.b[1]\" must be a string"])
    assert.deepStrictEqual(check(schema, { a: 1 }, ""), ["\"a\" must be an object"])
    assert.deepStrictEqual(check(schema, 1, ""), ["\"arguments\" must be an object"])
    assert.deepStrictEqual(check(schema, 1, "result"), ["\"result\" must be an object"])
    assert.deepStrictEqual(check({ type: "array", items: { type: "null" } }, [0], ""), ["\"[0]\" must be null"])
  })

  it("VAL-3: the unconstrained node accepts lossless JSON only", () => {
    for (const value of [null, true, "s", 1.5, [1, { a: [] }], { a: { b: null } }]) {
      assert.deepStrictEqual(check({}, value), [])
    }
    for (const value of [undefined, NaN, -0, Infinity, new Map(), new Point(1), [1, , 2], { a: undefined }, 1n]) {
      assert.deepStrictEqual(check({}, value), ["\"value\" must be a lossless JSON value"])
    }
    assert.deepStrictEqual(check({ type: "object", properties: { a: {} } }, { a: -0 }), [
      "\"value.a\" must be a lossless JSON value"
    ])
  })

  it("VAL-4: scalar type messages", () => {
    assert.deepStrictEqual(check({ type: "string" }, 1), ["\"value\" must be a string"])
    assert.deepStrictEqual(check({ type: "boolean" }, "true"), ["\"value\" must be a boolean"])
    assert.deepStrictEqual(check({ type: "null" }, undefined), ["\"value\" must be null"])
    assert.deepStrictEqual(check({ type: "number" }, "1"), ["\"value\" must be a number"])
    for (const value of [NaN, Infinity, -Infinity, -0]) {
      assert.deepStrictEqual(check({ type: "number" }, value), ["\"value\" must be a finite JSON number"])
    }
    for (const value of [1.5, -0, NaN, Infinity, "1", null]) {
      assert.deepStrictEqual(check({ type: "integer" }, value), ["\"value\" must be an integer"])
    }
    assert.deepStrictEqual(check({ type: "integer" }, 0), [])
    assert.deepStrictEqual(check({ type: "number" }, 0), [])
    assert.deepStrictEqual(check({ type: "integer" }, 1e21), [])
  })

  it("VAL-4: enum then const, at most one violation per scalar", () => {
    const schema = { type: "string", enum: ["a", "b", "q\"\n"], const: "a" }
    assert.deepStrictEqual(check(schema, "z"), ["\"value\" must be one of [\"a\",\"b\",\"q\\\"\\n\"]"])
    assert.deepStrictEqual(check(schema, "b"), ["\"value\" must be \"a\""])
    assert.deepStrictEqual(check(schema, 1), ["\"value\" must be a string"])
    assert.deepStrictEqual(check(schema, "a"), [])
    assert.deepStrictEqual(check({ type: "null", const: null }, null), [])
    assert.deepStrictEqual(check({ type: "boolean", enum: [true] }, false), ["\"value\" must be one of [true]"])
    assert.deepStrictEqual(check({ type: "integer", enum: [0] }, 0), [])
  })

  it("VAL-5: object type, then required, properties, closed keys, then losslessness", () => {
    const schema = {
      type: "object",
      properties: { b: { type: "string" }, a: { type: "number" } },
      required: ["a", "b"],
      additionalProperties: false
    }
    assert.deepStrictEqual(check(schema, { z: 1, a: "x", y: undefined }), [
      "missing required property \"value.b\"",
      "\"value.a\" must be a number",
      "\"value.z\" is not a declared property (additionalProperties: false)",
      "\"value.y\" is not a declared property (additionalProperties: false)"
    ])
    for (const value of [[], new Point(1), new Date(0), new Map(), null, "x"]) {
      assert.deepStrictEqual(check({ type: "object" }, value), ["\"value\" must be an object"])
    }
  })

  it("VAL-5: present-but-undefined counts as missing", () => {
    const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
    assert.deepStrictEqual(check(schema, { path: undefined }, ""), ["missing required property \"path\""])
  })

  it("VAL-5: lossless object check runs only when nothing else was found", () => {
    const schema = { type: "object", properties: { a: { type: "string" }, o: { type: "string" } } }
    assert.deepStrictEqual(check(schema, { a: "x", extra: NaN }), ["\"value\" must be a lossless JSON object"])
    assert.deepStrictEqual(check(schema, { a: 1, extra: NaN }), ["\"value.a\" must be a string"])
    assert.deepStrictEqual(check(schema, { a: "x", o: undefined }), ["\"value\" must be a lossless JSON object"])
    assert.deepStrictEqual(check(schema, { a: "x", [Symbol("s")]: 1 }), ["\"value\" must be a lossless JSON object"])
    assert.deepStrictEqual(check(schema, Object.defineProperty({ a: "x" }, "h", { value: 1 })), [
      "\"value\" must be a lossless JSON object"
    ])
    assert.deepStrictEqual(check(schema, { a: "x", nested: { deep: [new Date(0)] } }), [
      "\"value\" must be a lossless JSON object"
    ])
    const cyclic: Record<string, unknown> = { a: "x" }
    cyclic.self = cyclic
    assert.deepStrictEqual(check(schema, cyclic), ["\"value\" must be a lossless JSON object"])
  })

  it("VAL-5: null-prototype and cross-realm records are objects; undeclared keys of open objects are free", () => {
    const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] }
    assert.deepStrictEqual(check(schema, Object.assign(Object.create(null), { a: 1, b: [1, "x"] })), [])
    assert.deepStrictEqual(check(schema, runInNewContext("({ a: 1, b: { c: [null] } })")), [])
    assert.deepStrictEqual(check(schema, JSON.parse("{\"a\":1,\"__proto__\":{\"x\":1}}")), [])
  })

  it("VAL-5: a cycle through declared properties is reported at the node whose walk is clean", () => {
    const schema = { type: "object", properties: { self: { type: "object" } } }
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    assert.deepStrictEqual(check(schema, cyclic), ["\"value.self\" must be a lossless JSON object"])
  })

  it("VAL-6: arrays, per-index items, holes and density", () => {
    const schema = { type: "array", items: { type: "integer" } }
    assert.deepStrictEqual(check(schema, [1, 1.5, "x"]), [
      "\"value[1]\" must be an integer",
      "\"value[2]\" must be an integer"
    ])
    assert.deepStrictEqual(check(schema, { 0: 1, length: 1 }), ["\"value\" must be an array"])
    assert.deepStrictEqual(check(schema, [1, , 2]), ["\"value\" must be a dense lossless JSON array"])
    assert.deepStrictEqual(check(schema, [1, , "x"]), ["\"value[2]\" must be an integer"])
    assert.deepStrictEqual(check(schema, Object.assign([1], { extra: 1 })), [
      "\"value\" must be a dense lossless JSON array"
    ])
    assert.deepStrictEqual(check(schema, new (class extends Array {})()), [
      "\"value\" must be a dense lossless JSON array"
    ])
    assert.deepStrictEqual(check(schema, runInNewContext("[1, 2, 3]")), [])
    assert.deepStrictEqual(check({ type: "array" }, [1, { a: undefined }]), [
      "\"value\" must be a dense lossless JSON array"
    ])
    assert.deepStrictEqual(check({ type: "array" }, [1, "x", { a: [null] }]), [])
    assert.deepStrictEqual(check({ type: "array", items: { type: "object" } }, [{ a: NaN }]), [
      "\"value[0]\" must be a lossless JSON object"
    ])
  })

  it("VAL-7: oneOf is exact-one with every branch evaluated", () => {
    const overlap = { oneOf: [{ type: "number" }, { type: "integer" }] }
    assert.deepStrictEqual(check(overlap, 1), ["\"value\" must match exactly one oneOf branch (matched 2)"])
    assert.deepStrictEqual(check(overlap, 1.5), [])
    assert.deepStrictEqual(check(overlap, "x"), ["\"value\" must match exactly one oneOf branch (matched 0)"])
    const three = { oneOf: [{}, { type: "string" }, { type: "string", enum: ["a"] }] }
    assert.deepStrictEqual(check(three, "a"), ["\"value\" must match exactly one oneOf branch (matched 3)"])
    assert.deepStrictEqual(check(three, 1), [])
  })

  it("VAL-7: branch messages are discarded and nested containers count as branches", () => {
    const schema = {
      type: "object",
      properties: {
        u: {
          oneOf: [
            { type: "object", properties: { k: { type: "string" } }, required: ["k"], additionalProperties: false },
            { type: "array", items: { type: "string" } }
          ]
        }
      }
    }
    assert.deepStrictEqual(check(schema, { u: { k: "x" } }), [])
    assert.deepStrictEqual(check(schema, { u: ["x"] }), [])
    assert.deepStrictEqual(check(schema, { u: { k: 1, z: 2 } }), [
      "\"value.u\" must match exactly one oneOf branch (matched 0)"
    ])
    assert.deepStrictEqual(check(schema, { u: ["x", 2] }), [
      "\"value.u\" must match exactly one oneOf branch (matched 0)"
    ])
  })

  it("VAL-8: a throwing getter is reported by the innermost enclosing node", () => {
    const boom = () => {
      throw new Error("boom")
    }
    const schema = {
      type: "object",
      properties: { a: { type: "object", properties: { b: { type: "string" } } }, c: { type: "string" } }
    }
    assert.deepStrictEqual(check(schema, withGetter({}, "a", boom)), ["\"value\" must be a lossless JSON value"])
    assert.deepStrictEqual(check(schema, { a: withGetter({}, "b", boom), c: 1 }), [
      "\"value.a\" must be a lossless JSON value",
      "\"value.c\" must be a string"
    ])
    assert.deepStrictEqual(check(schema, { a: {}, extra: withGetter({}, "x", boom) }), [
      "\"value\" must be a lossless JSON object"
    ])
    assert.deepStrictEqual(check({ type: "object", additionalProperties: false }, throwingProxy({}, "ownKeys")), [
      "\"value\" must be a lossless JSON value"
    ])
  })

  it("VAL-8: hostile proxies never escape", () => {
    assert.deepStrictEqual(check({ type: "array", items: {} }, revoked([])), [
      "\"value\" must be a lossless JSON value"
    ])
    assert.deepStrictEqual(check({ type: "array" }, throwingProxy([1], "ownKeys")), [
      "\"value\" must be a dense lossless JSON array"
    ])
    assert.deepStrictEqual(check({ type: "array", items: {} }, throwingProxy([1], "get")), [
      "\"value\" must be a lossless JSON value"
    ])
    assert.deepStrictEqual(check({ type: "object" }, revoked({})), ["\"value\" must be an object"])
    assert.deepStrictEqual(check({ type: "object", properties: { a: { type: "array" } } }, { a: revoked([]) }), [
      "\"value.a\" must be a lossless JSON value"
    ])
    assert.deepStrictEqual(check({ oneOf: [{ type: "array", items: {} }, {}] }, throwingProxy([1], "get")), [
      "\"value\" must match exactly one oneOf branch (matched 0)"
    ])
  })

  it("VAL-9: no defaults, no coercion", () => {
    const schema = {
      type: "object",
      properties: { n: { type: "number", default: 1 }, s: { type: "string", default: "d" } }
    }
    const value = { s: "x" }
    assert.deepStrictEqual(check(schema, value), [])
    assert.deepStrictEqual(value, { s: "x" })
    assert.deepStrictEqual(check(schema, { n: "1" }), ["\"value.n\" must be a number"])
    assert.deepStrictEqual(check({ type: "boolean" }, 0), ["\"value\" must be a boolean"])
  })

  it("VAL-10: 5,000 nested oneOf levels and 100,000-deep values validate without overflow", () => {
    const schema = nestedOneOf(5000)
    assert.deepStrictEqual(check(schema, 42), ["\"value\" must match exactly one oneOf branch (matched 0)"])
    assert.deepStrictEqual(check(schema, "s"), [])
    const deep = nestedArray(100_000)
    assert.deepStrictEqual(check({}, deep), [])
    assert.deepStrictEqual(check({ type: "array" }, deep), [])
    assert.deepStrictEqual(check({ type: "array", items: { type: "array" } }, deep), [])
    let holder: Record<string, unknown> = {}
    for (let i = 0; i < 100_000; i++) holder = { next: holder }
    assert.deepStrictEqual(check({ type: "object", properties: { next: { type: "object" } } }, holder), [])
  })

  it("VAL-10: a 10,000-deep schema walks a 10,000-deep value with an explicit stack", () => {
    let schema: JsonObject = { type: "integer" }
    let value: unknown = "x"
    let path = "value"
    for (let i = 0; i < 10_000; i++) {
      schema = { type: "array", items: schema }
      value = [value]
      path += "[0]"
    }
    assert.deepStrictEqual(check(schema, value), [`"${path}" must be an integer`])
  })
})

describe("JsonSchema compile/validate", () => {
  it("compile: the schema is read once and later mutation has no effect", () => {
    let reads = 0
    const schema: Record<string, unknown> = Object.defineProperty({ properties: { a: { type: "string" } } }, "type", {
      get: () => {
        reads++
        return "object"
      },
      enumerable: true,
      configurable: true
    })
    const validator = JsonSchema.compile(schema as JsonObject)
    assert.strictEqual(reads, 1)
    ;(schema.properties as Record<string, unknown>).a = { type: "number" }
    Object.defineProperty(schema, "type", { value: "string" })
    assert.deepStrictEqual(validator({ a: "x" }, "value"), [])
    assert.deepStrictEqual(validator({ a: 1 }, "value"), ["\"value.a\" must be a string"])
    assert.strictEqual(reads, 1)
  })

  it("compile: an unsupported schema is a JsonSchemaError", () => {
    assert.throws(() => JsonSchema.compile({ type: "string", format: "x" }), /unsupported JSON schema: schema.format/)
    const cyclic: Record<string, unknown> = { type: "array" }
    cyclic.items = cyclic
    try {
      JsonSchema.compile(cyclic as JsonObject)
      assert.fail("expected a throw")
    } catch (error) {
      assert.instanceOf(error, JsonSchema.JsonSchemaError)
      assert.deepStrictEqual((error as JsonSchema.JsonSchemaError).violations, ["schema.items is circular"])
    }
  })

  it("validate: compiled validators are cached per schema object", () => {
    let reads = 0
    const schema = Object.defineProperty({}, "type", {
      get: () => {
        reads++
        return "string"
      },
      enumerable: true
    }) as JsonObject
    assert.deepStrictEqual(JsonSchema.validate(schema, 1, "value"), ["\"value\" must be a string"])
    assert.deepStrictEqual(JsonSchema.validate(schema, "x", "value"), [])
    assert.strictEqual(reads, 1)
  })

  it("validate: keys literally named __proto__ and inherited names are ordinary own keys", () => {
    const schema = JSON.parse(
      "{\"type\":\"object\",\"properties\":{\"__proto__\":{\"type\":\"string\"}},\"required\":[\"__proto__\"]," +
        "\"additionalProperties\":false}"
    )
    assert.deepStrictEqual(check(schema, JSON.parse("{\"__proto__\":\"x\"}")), [])
    assert.deepStrictEqual(check(schema, {}), ["missing required property \"value.__proto__\""])
    assert.deepStrictEqual(check(schema, JSON.parse("{\"__proto__\":1}")), ["\"value.__proto__\" must be a string"])
  })
})

describe("JsonSchema conformance (T-VAL-*)", () => {
  const spec = {
    type: "object",
    properties: { path: { type: "string" }, limit: { type: "number", default: 10 } },
    required: ["path"]
  }

  it("T-VAL-001: valid args give []; null, a string and an array give exactly one violation", () => {
    assert.deepStrictEqual(check(spec, { path: "/x", limit: 3 }, ""), [])
    for (const value of [null, "s", []]) {
      assert.deepStrictEqual(check(spec, value, ""), ["\"arguments\" must be an object"])
    }
  })

  it("T-VAL-002: {} and {path: undefined} are missing path", () => {
    assert.deepStrictEqual(check(spec, {}, ""), ["missing required property \"path\""])
    assert.deepStrictEqual(check(spec, { path: undefined }, ""), ["missing required property \"path\""])
  })

  it("T-VAL-003: the root is open; optionals may be omitted", () => {
    assert.deepStrictEqual(check(spec, { path: "/x", extra: { any: [1] } }, ""), [])
  })

  it("T-VAL-004: defaults are never synthesised", () => {
    const args = { path: "/x" }
    assert.deepStrictEqual(check(spec, args, ""), [])
    assert.isFalse(Object.hasOwn(args, "limit"))
  })

  it("T-VAL-005: primitive type messages", () => {
    const schema = {
      type: "object",
      properties: { s: { type: "string" }, n: { type: "number" }, b: { type: "boolean" } }
    }
    assert.deepStrictEqual(check(schema, { s: 1, n: "1", b: "true" }, ""), [
      "\"s\" must be a string",
      "\"n\" must be a number",
      "\"b\" must be a boolean"
    ])
  })

  it("T-VAL-006: string enum message is the JSON-encoded list", () => {
    const schema = { type: "object", properties: { color: { type: "string", enum: ["red", "green"] } } }
    assert.deepStrictEqual(check(schema, { color: "blue" }, ""), ["\"color\" must be one of [\"red\",\"green\"]"])
  })

  it("T-VAL-007: numeric enum; a mistyped author enum is a schema error", () => {
    const schema = { type: "object", properties: { n: { type: "number", enum: [1, 2] } } }
    assert.deepStrictEqual(check(schema, { n: 3 }, ""), ["\"n\" must be one of [1,2]"])
    assert.throws(
      () => check({ type: "object", properties: { n: { type: "number", enum: ["1"] } } }, {}, ""),
      /schema\.properties\.n\.enum must be a non-empty array of number values/
    )
  })

  it("T-VAL-009: nested dotted paths; an object without properties is only type-checked", () => {
    const schema = {
      type: "object",
      properties: {
        config: { type: "object", properties: { host: { type: "string" } }, required: ["host"] },
        bag: { type: "object" }
      }
    }
    assert.deepStrictEqual(check(schema, { config: {}, bag: 1 }, ""), [
      "missing required property \"config.host\"",
      "\"bag\" must be an object"
    ])
    assert.deepStrictEqual(check(schema, { config: { host: "h" }, bag: { anything: [1] } }, ""), [])
  })

  it("T-VAL-010: array paths; an array without items is only type-checked", () => {
    const schema = {
      type: "object",
      properties: { tags: { type: "array", items: { type: "string" } }, list: { type: "array" } }
    }
    assert.deepStrictEqual(check(schema, { tags: ["a", 1] }, ""), ["\"tags[1]\" must be a string"])
    assert.deepStrictEqual(check(schema, { tags: "a" }, ""), ["\"tags\" must be an array"])
    assert.deepStrictEqual(check(schema, { list: [1, "x", null] }, ""), [])
  })

  it("T-VAL-011: array of objects", () => {
    const schema = {
      type: "object",
      properties: {
        servers: {
          type: "array",
          items: { type: "object", properties: { host: { type: "string" } }, required: ["host"] }
        }
      }
    }
    assert.deepStrictEqual(check(schema, { servers: [{ host: "a" }, {}] }, ""), [
      "missing required property \"servers[1].host\""
    ])
  })
})

describe("JsonSchema conformance (T-JSCH-*)", () => {
  it("T-JSCH-002: object-root guard", () => {
    for (const schema of [{}, { type: "string" }, { type: "array" }, { oneOf: [{}, { type: "null" }] }]) {
      assert.deepStrictEqual(JsonSchema.violations(schema, { objectRoot: true }), [OBJECT_ROOT])
    }
    assert.deepStrictEqual(JsonSchema.violations({ type: "object" }, { objectRoot: true }), [])
  })

  it("T-JSCH-003: non-schema, unknown type, type array", () => {
    for (const schema of [null, [], "no"]) assert.deepStrictEqual(bad(schema), ["schema must be a schema object"])
    assert.match(bad({ type: "tuple" })[0], /type must be one of/)
    assert.deepStrictEqual(bad({ type: ["string", "null"] }), [
      "schema.type must be a single type string (type arrays are not supported)"
    ])
  })

  it("T-JSCH-006: independent violations are all reported", () => {
    assert.deepStrictEqual(bad({ type: "string", format: "x", title: 1, items: {} }), [
      `schema.format is not a supported keyword ${SUBSET}`,
      "schema.title must be a string",
      "schema.items is not supported on type \"string\""
    ])
  })

  it("T-JSCH-007: object keyword shapes", () => {
    assert.deepStrictEqual(bad({ type: "object", properties: [] }), ["schema.properties must be an object of schemas"])
    assert.deepStrictEqual(bad({ type: "object", properties: { a: 1 } }), [
      "schema.properties.a must be a schema object"
    ])
    assert.deepStrictEqual(bad({ type: "object", required: "a" }), ["schema.required must be an array of strings"])
    assert.deepStrictEqual(bad({ type: "object", properties: {}, required: ["missing"] }), [
      "schema.required names \"missing\" which is not in properties"
    ])
    assert.deepStrictEqual(bad({ type: "object", additionalProperties: "no" }), [
      "schema.additionalProperties must be a boolean"
    ])
    const sparse: Array<string> = []
    sparse[1] = "a"
    assert.deepStrictEqual(bad({ type: "object", properties: { a: {} }, required: sparse }), [
      "schema.required must be an array of strings"
    ])
  })

  it("T-JSCH-008: typed enum/const", () => {
    assert.deepStrictEqual(bad({ type: "integer", enum: [1, 2], const: 2 }), [])
    for (const [type, allowed] of [["string", []], ["string", [1]], ["integer", [1.5]], ["number", [NaN]]] as const) {
      assert.deepStrictEqual(bad({ type, enum: allowed }), [`schema.enum must be a non-empty array of ${type} values`])
    }
    assert.deepStrictEqual(bad({ type: "number", const: -0 }), ["schema.const must be a number value"])
    assert.deepStrictEqual(bad({ type: "boolean", const: 1 }), ["schema.const must be a boolean value"])
    assert.deepStrictEqual(bad({ type: "number", enum: [1], const: 2 }), [
      "schema.const must be one of schema.enum when both are declared"
    ])
  })

  it("T-JSCH-009: annotations", () => {
    assert.deepStrictEqual(bad({ type: "null", description: 1, title: {} }), [
      "schema.description must be a string",
      "schema.title must be a string"
    ])
    const cyclic: Array<unknown> = []
    cyclic.push(cyclic)
    for (const key of ["default", "examples"]) {
      for (
        const value of [
          undefined,
          Infinity,
          new Date(0),
          cyclic,
          throwingProxy({}, "getPrototypeOf"),
          Object.defineProperty({}, "h", { value: 1 }),
          { [Symbol("k")]: 1 }
        ]
      ) {
        assert.deepStrictEqual(bad({ type: "null", [key]: value }), [
          `schema.${key} annotation must be lossless JSON data`
        ])
      }
    }
  })

  it("T-JSCH-011: cycles vs reuse, exotic nodes", () => {
    const node: Record<string, unknown> = { type: "object" }
    node.properties = { self: node }
    assert.deepStrictEqual(bad(node), ["schema.properties.self is circular"])
    const leaf = { type: "string" }
    assert.deepStrictEqual(bad({ type: "object", properties: { a: leaf, b: leaf } }), [])
    assert.deepStrictEqual(bad({ type: "object", properties: new Map() }), [
      "schema.properties must be an object of schemas"
    ])
    assert.deepStrictEqual(bad(new Date(0)), ["schema must be a schema object"])
    for (
      const exotic of [
        Object.setPrototypeOf({ type: "string" }, { forged: true }),
        Object.defineProperty({ type: "string" }, "hidden", { value: 1 }),
        { type: "string", [Symbol("k")]: 1 },
        throwingProxy({ type: "string" }, "ownKeys")
      ]
    ) {
      assert.deepStrictEqual(bad(exotic), ["schema must be a schema object"])
    }
  })

  it("T-JSCH-014: valid roots", () => {
    assert.deepStrictEqual(check({ type: "string" }, "s"), [])
    assert.deepStrictEqual(check({ type: "array", items: { type: "integer" } }, [1, 2]), [])
    assert.deepStrictEqual(check({ type: "object" }, { a: 1 }), [])
    assert.deepStrictEqual(check({ type: "null" }, null), [])
  })

  it("T-JSCH-015: wrong types and lossy numbers", () => {
    assert.deepStrictEqual(check({ type: "string" }, 1), ["\"value\" must be a string"])
    assert.deepStrictEqual(check({ type: "number" }, "1"), ["\"value\" must be a number"])
    assert.deepStrictEqual(check({ type: "number" }, NaN), ["\"value\" must be a finite JSON number"])
    assert.deepStrictEqual(check({ type: "number" }, -0), ["\"value\" must be a finite JSON number"])
    assert.deepStrictEqual(check({ type: "integer" }, 1.5), ["\"value\" must be an integer"])
    assert.deepStrictEqual(check({ type: "boolean" }, 1), ["\"value\" must be a boolean"])
    assert.deepStrictEqual(check({ type: "null" }, 0), ["\"value\" must be null"])
  })

  it("T-JSCH-016: enum + const", () => {
    const schema = { type: "string", enum: ["a", "b"], const: "a" }
    assert.deepStrictEqual(check(schema, "c"), ["\"value\" must be one of [\"a\",\"b\"]"])
    assert.deepStrictEqual(check(schema, "b"), ["\"value\" must be \"a\""])
  })

  it("T-JSCH-018: undefined members and Dates", () => {
    const schema = { type: "object", properties: { k: { type: "string" } }, required: ["k"] }
    assert.deepStrictEqual(check(schema, { k: undefined }), ["missing required property \"value.k\""])
    assert.deepStrictEqual(check({ type: "object" }, { k: undefined }), ["\"value\" must be a lossless JSON object"])
    assert.deepStrictEqual(check({ type: "object" }, new Date(0)), ["\"value\" must be an object"])
  })

  it("T-JSCH-019: a hostile getter", () => {
    const value = withGetter({}, "k", () => {
      throw new Error("hostile")
    })
    assert.deepStrictEqual(check({ type: "object", properties: { k: { type: "string" } } }, value), [
      "\"value\" must be a lossless JSON value"
    ])
  })

  it("T-JSCH-020: arrays", () => {
    assert.deepStrictEqual(check({ type: "array", items: { type: "integer" } }, [1, 1.5]), [
      "\"value[1]\" must be an integer"
    ])
    assert.deepStrictEqual(check({ type: "array" }, {}), ["\"value\" must be an array"])
    assert.deepStrictEqual(check({ type: "array" }, [1, , 2]), ["\"value\" must be a dense lossless JSON array"])
    assert.deepStrictEqual(check({ type: "array", items: {} }, runInNewContext("[1, [2], {}]")), [])
  })

  it("T-JSCH-021: exact-one oneOf", () => {
    assert.deepStrictEqual(check({ oneOf: [{ type: "string" }, { type: "null" }] }, 1), [
      "\"value\" must match exactly one oneOf branch (matched 0)"
    ])
    const overlap = { oneOf: [{ type: "number" }, { type: "integer" }] }
    assert.deepStrictEqual(check(overlap, 1), ["\"value\" must match exactly one oneOf branch (matched 2)"])
    assert.deepStrictEqual(check(overlap, 1.5), [])
  })

  it("T-JSCH-022: a 5000-deep union", () => {
    assert.deepStrictEqual(check(nestedOneOf(5000), 42), ["\"value\" must match exactly one oneOf branch (matched 0)"])
  })

  it("T-JSCH-024: own properties only", () => {
    const required = { type: "object", properties: { toString: { type: "string" } }, required: ["toString"] }
    assert.deepStrictEqual(check(required, {}), ["missing required property \"value.toString\""])
    assert.deepStrictEqual(check({ type: "object", additionalProperties: false }, { toString: "x" }), [
      "\"value.toString\" is not a declared property (additionalProperties: false)"
    ])
    assert.deepStrictEqual(check({ type: "object", additionalProperties: false }, {}), [])
    assert.deepStrictEqual(check({ type: "object", properties: { constructor: { type: "string" } } }, {}), [])
    const inherited = Object.assign(Object.create({ additionalProperties: false, type: "string" }), {})
    assert.deepStrictEqual(bad({ type: "object", properties: { a: inherited } }), [
      "schema.properties.a must be a schema object"
    ])
    const polluted = Object.prototype as Record<string, unknown>
    polluted.additionalProperties = false
    polluted.required = ["x"]
    try {
      assert.deepStrictEqual(JsonSchema.compile({ type: "object" })({ a: 1 }, "value"), [])
      assert.deepStrictEqual(bad({ type: "object" }), [])
    } finally {
      delete polluted.additionalProperties
      delete polluted.required
    }
  })
})
