import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import * as Dsl from "../src/Dsl.js"
import { JsonSchemaError } from "../src/ToolError.js"

const value = (spec: unknown) => Dsl.compileValue(spec as Dsl.ValueSpec)
const params = (spec: unknown) => Dsl.compileParameters(spec as Dsl.ParameterSpec)

const violationsOf = (thunk: () => unknown): ReadonlyArray<string> => {
  try {
    thunk()
  } catch (error) {
    assert.instanceOf(error, JsonSchemaError)
    const e = error as JsonSchemaError
    assert.strictEqual(e.name, "JsonSchemaError")
    assert.strictEqual(e.code, "UNSUPPORTED_SCHEMA")
    assert.strictEqual(e.message, `unsupported JSON schema: ${e.violations.join("; ")}`)
    return e.violations
  }
  return assert.fail("expected a JsonSchemaError")
}

const dslError = (thunk: () => unknown): string => {
  const found = violationsOf(thunk)
  assert.strictEqual(found.length, 1, `expected exactly one violation, got ${JSON.stringify(found)}`)
  return found[0]!
}

const isDeepFrozen = (root: unknown): boolean => {
  const stack: Array<unknown> = [root]
  while (stack.length > 0) {
    const node = stack.pop()
    if (typeof node !== "object" || node === null) continue
    if (!Object.isFrozen(node)) return false
    for (const key of Object.keys(node)) stack.push((node as Record<string, unknown>)[key])
  }
  return true
}

describe("§22.1 Author DSL reference vectors", () => {
  it("DSL-5: {type:'object'} → schema.additionalProperties must be explicitly true or false", () => {
    assert.strictEqual(
      dslError(() => value({ type: "object" })),
      "schema.additionalProperties must be explicitly true or false"
    )
  })

  it("DSL-5: {type:'string', extra:1} → schema.extra is not supported by the value schema DSL", () => {
    assert.strictEqual(
      dslError(() => value({ type: "string", extra: 1 })),
      "schema.extra is not supported by the value schema DSL"
    )
  })

  it("DSL-5: {} → schema.type must be string/number/integer/boolean/null/array/object/json, or use oneOf", () => {
    assert.strictEqual(
      dslError(() => value({})),
      "schema.type must be string/number/integer/boolean/null/array/object/json, or use oneOf"
    )
  })

  it("DSL-5: {type:'string', enum:'a'} → schema.enum must be a non-empty array of scalar values", () => {
    assert.strictEqual(
      dslError(() => value({ type: "string", enum: "a" })),
      "schema.enum must be a non-empty array of scalar values"
    )
  })

  it("DSL-3: {type:'array', items:{type:'string', required:true}} → schema.items.required is not supported", () => {
    assert.strictEqual(
      dslError(() => value({ type: "array", items: { type: "string", required: true } })),
      "schema.items.required is not supported by the value schema DSL"
    )
  })

  it("DSL-5: parameters {a:{type:'string', required:false}} → parameters.a.required must be true…", () => {
    assert.strictEqual(
      dslError(() => params({ a: { type: "string", required: false } })),
      "parameters.a.required must be true when present"
    )
  })

  it("DSL-5: parameters {a: 42} → parameters.a must be a value schema object", () => {
    assert.strictEqual(dslError(() => params({ a: 42 })), "parameters.a must be a value schema object")
  })

  it("DSL-3: nested required compiles into the nested object's required list", () => {
    const compiled = Dsl.compileParameters({
      a: { type: "object", additionalProperties: true, properties: { b: { type: "string", required: true } } }
    })
    assert.strictEqual(
      JSON.stringify(compiled),
      "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\",\"additionalProperties\":true," +
        "\"properties\":{\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}}}"
    )
  })
})

describe("DSL-1/DSL-4 node forms and compiled shapes", () => {
  it("DSL-4: scalars compile to {type, annotations…, enum?, const?}", () => {
    const compiled = value({
      const: "a",
      enum: ["a", "b"],
      examples: ["a"],
      default: "a",
      title: "T",
      description: "D",
      type: "string"
    })
    assert.deepStrictEqual(compiled, {
      type: "string",
      description: "D",
      title: "T",
      default: "a",
      examples: ["a"],
      enum: ["a", "b"],
      const: "a"
    })
    assert.deepStrictEqual(Object.keys(compiled), [
      "type",
      "description",
      "title",
      "default",
      "examples",
      "enum",
      "const"
    ])
    for (const type of ["string", "number", "integer", "boolean", "null"]) {
      assert.deepStrictEqual(value({ type }), { type })
    }
  })

  it("DSL-4: array → {type:'array', annotations…, items?}", () => {
    const compiled = value({ items: { type: "number" }, description: "nums", type: "array" })
    assert.deepStrictEqual(Object.keys(compiled), ["type", "description", "items"])
    assert.deepStrictEqual(compiled, { type: "array", description: "nums", items: { type: "number" } })
  })

  it("T-DSL-009: array without items compiles to exactly {type:'array'}", () => {
    assert.deepStrictEqual(value({ type: "array" }), { type: "array" })
  })

  it("DSL-4: object → {type:'object', annotations…, additionalProperties, properties?, required?}", () => {
    const compiled = value({
      properties: { x: { type: "string", required: true }, y: { type: "number" } },
      additionalProperties: false,
      title: "point",
      type: "object"
    })
    assert.deepStrictEqual(Object.keys(compiled), ["type", "title", "additionalProperties", "properties", "required"])
    assert.deepStrictEqual(compiled, {
      type: "object",
      title: "point",
      additionalProperties: false,
      properties: { x: { type: "string" }, y: { type: "number" } },
      required: ["x"]
    })
    assert.deepStrictEqual(value({ type: "object", additionalProperties: true, properties: {} }), {
      type: "object",
      additionalProperties: true,
      properties: {}
    })
  })

  it("DSL-4: json → annotation-only node (no type)", () => {
    assert.deepStrictEqual(value({ type: "json" }), {})
    assert.deepStrictEqual(value({ type: "json", description: "anything" }), { description: "anything" })
  })

  it("DSL-4: oneOf → {oneOf:[…], annotations…}", () => {
    const compiled = value({ description: "s or n", oneOf: [{ type: "string" }, { type: "null" }] })
    assert.deepStrictEqual(Object.keys(compiled), ["oneOf", "description"])
    assert.deepStrictEqual(compiled, { oneOf: [{ type: "string" }, { type: "null" }], description: "s or n" })
  })

  it("T-DSL-004/005/007: enum with type and description, default, enum + default", () => {
    const compiled = Dsl.compileParameters({
      color: { type: "string", enum: ["red", "green"], description: "Color" },
      port: { type: "integer", default: 25 },
      level: { type: "string", enum: ["lo", "hi"], default: "lo" }
    })
    assert.deepStrictEqual(compiled.properties, {
      color: { type: "string", description: "Color", enum: ["red", "green"] },
      port: { type: "integer", default: 25 },
      level: { type: "string", default: "lo", enum: ["lo", "hi"] }
    })
  })

  it("DSL-4: compiled schemas are deep-frozen and detached from the spec", () => {
    const dflt = { nested: [1, 2] }
    const spec = { type: "json" as const, default: dflt, examples: [dflt] }
    const compiled = value(spec)
    assert.isTrue(isDeepFrozen(compiled))
    dflt.nested.push(3)
    assert.deepStrictEqual(compiled, { default: { nested: [1, 2] }, examples: [{ nested: [1, 2] }] })
    assert.isFalse(Object.isFrozen(dflt))
    const paramSpec = { a: { type: "string" as const, required: true as const } }
    const compiledParams = Dsl.compileParameters(paramSpec)
    assert.isTrue(isDeepFrozen(compiledParams))
    ;(paramSpec as Record<string, unknown>).b = { type: "number" }
    assert.deepStrictEqual(compiledParams, { type: "object", properties: { a: { type: "string" } }, required: ["a"] })
  })
})

describe("DSL-2/DSL-3 parameter root and nested maps", () => {
  it("T-DSL-002: {} compiles to exactly {type:'object', properties:{}}", () => {
    const compiled = Dsl.compileParameters({})
    assert.deepStrictEqual(compiled, { type: "object", properties: {} })
    assert.deepStrictEqual(Object.keys(compiled), ["type", "properties"])
  })

  it("DSL-2: required lists required:true names in map order; no additionalProperties key", () => {
    const compiled = Dsl.compileParameters({
      z: { type: "string", required: true },
      a: { type: "number" },
      m: { type: "boolean", required: true }
    })
    assert.deepStrictEqual(compiled.required, ["z", "m"])
    assert.isFalse("additionalProperties" in compiled)
    assert.deepStrictEqual(Object.keys(compiled.properties as object), ["z", "a", "m"])
  })

  it("T-DSL-003: nested open object keeps additionalProperties:true and its own required", () => {
    const compiled = Dsl.compileParameters({
      config: {
        type: "object",
        required: true,
        additionalProperties: true,
        properties: { host: { type: "string", required: true }, port: { type: "integer" } }
      }
    })
    assert.deepStrictEqual(compiled, {
      type: "object",
      properties: {
        config: {
          type: "object",
          additionalProperties: true,
          properties: { host: { type: "string" }, port: { type: "integer" } },
          required: ["host"]
        }
      },
      required: ["config"]
    })
  })

  it("T-DSL-013: implicit root open, nested closed keeps false + required, nested open keeps true", () => {
    const compiled = Dsl.compileParameters({
      closed: {
        type: "object",
        additionalProperties: false,
        properties: { id: { type: "string", required: true } }
      },
      open: { type: "object", additionalProperties: true }
    })
    assert.isFalse(Object.hasOwn(compiled, "additionalProperties"))
    assert.deepStrictEqual(compiled.properties, {
      closed: { type: "object", additionalProperties: false, properties: { id: { type: "string" } }, required: ["id"] },
      open: { type: "object", additionalProperties: true }
    })
  })

  it("DSL-3: required is an unknown key on oneOf branches and on a root value schema", () => {
    assert.strictEqual(
      dslError(() => value({ oneOf: [{ type: "string", required: true }, { type: "null" }] })),
      "schema.oneOf[0].required is not supported by the value schema DSL"
    )
    assert.strictEqual(
      dslError(() => value({ type: "string", required: true })),
      "schema.required is not supported by the value schema DSL"
    )
  })

  it("DSL-3: required is accepted on nested property-map entries and on oneOf entries of a map", () => {
    const compiled = Dsl.compileParameters({
      u: { oneOf: [{ type: "string" }, { type: "null" }], required: true }
    })
    assert.deepStrictEqual(compiled, {
      type: "object",
      properties: { u: { oneOf: [{ type: "string" }, { type: "null" }] } },
      required: ["u"]
    })
  })
})

describe("DSL-5 definition-time rejections", () => {
  it("DSL-5: node not a schema record", () => {
    for (const bad of [null, "x", 1, [], new Date(0), new Map()]) {
      assert.strictEqual(dslError(() => value(bad)), "schema must be a value schema object")
    }
    assert.strictEqual(
      dslError(() => value({ type: "array", items: [] })),
      "schema.items must be a value schema object"
    )
    class Node {
      type = "string"
    }
    assert.strictEqual(dslError(() => params({ a: new Node() })), "parameters.a must be a value schema object")
  })

  it("DSL-5: property map not a schema record (incl. symbol or non-enumerable keys)", () => {
    assert.strictEqual(dslError(() => params(null)), "parameters must be an object of value schemas")
    assert.strictEqual(dslError(() => params([])), "parameters must be an object of value schemas")
    assert.strictEqual(
      dslError(() => params({ [Symbol("s")]: { type: "string" } })),
      "parameters must be an object of value schemas"
    )
    const hidden = {}
    Object.defineProperty(hidden, "h", { value: { type: "string" }, enumerable: false })
    assert.strictEqual(dslError(() => params(hidden)), "parameters must be an object of value schemas")
    assert.strictEqual(
      dslError(() => value({ type: "object", additionalProperties: true, properties: "x" })),
      "schema.properties must be an object of value schemas"
    )
  })

  it("DSL-5: node or map is its own ancestor → is circular (T-DSL-015)", () => {
    const items: Record<string, unknown> = { type: "array" }
    items.items = items
    assert.strictEqual(dslError(() => value(items)), "schema.items is circular")
    const node: Record<string, unknown> = { type: "object", additionalProperties: true }
    node.properties = { self: node }
    assert.strictEqual(dslError(() => value(node)), "schema.properties.self is circular")
    const map: Record<string, unknown> = {}
    map.loop = { type: "object", additionalProperties: false, properties: map }
    assert.match(dslError(() => params(map)), /circular/)
    assert.strictEqual(dslError(() => params(map)), "parameters.loop.properties is circular")
    const branch: Record<string, unknown> = { oneOf: [] }
    branch.oneOf = [{ type: "null" }, branch]
    assert.strictEqual(dslError(() => value(branch)), "schema.oneOf[1] is circular")
  })

  it("DSL-7: sibling reuse of one node object is allowed (ancestors only)", () => {
    const leaf = { type: "string" as const }
    const shared = { type: "object" as const, additionalProperties: false, properties: { s: leaf } }
    const compiled = value({
      type: "object",
      additionalProperties: false,
      properties: { a: shared, b: shared, c: { type: "array", items: leaf } }
    })
    assert.deepStrictEqual(compiled.properties, {
      a: { type: "object", additionalProperties: false, properties: { s: { type: "string" } } },
      b: { type: "object", additionalProperties: false, properties: { s: { type: "string" } } },
      c: { type: "array", items: { type: "string" } }
    })
    assert.deepStrictEqual(value({ oneOf: [leaf, { type: "array", items: leaf }] }), {
      oneOf: [{ type: "string" }, { type: "array", items: { type: "string" } }]
    })
  })

  it("DSL-5: key outside the form's vocabulary", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ type: "string", items: {} }, "schema.items is not supported by the value schema DSL"],
      [{ type: "array", enum: [1] }, "schema.enum is not supported by the value schema DSL"],
      [
        { type: "object", additionalProperties: true, items: {} },
        "schema.items is not supported by the value schema DSL"
      ],
      [{ type: "json", const: 1 }, "schema.const is not supported by the value schema DSL"],
      [
        { oneOf: [{ type: "string" }, { type: "null" }], enum: ["a"] },
        "schema.enum is not supported by the value schema DSL"
      ],
      [{ type: "string", format: "uri" }, "schema.format is not supported by the value schema DSL"],
      [{ type: "object", additionalProperties: {}, $ref: "#" }, "schema.$ref is not supported by the value schema DSL"]
    ]
    for (const [spec, message] of cases) assert.strictEqual(dslError(() => value(spec)), message)
  })

  it("DSL-5: both type and oneOf", () => {
    assert.strictEqual(
      dslError(() => value({ type: "string", oneOf: [{ type: "string" }, { type: "null" }] })),
      "schema cannot declare both type and oneOf"
    )
  })

  it("DSL-5: oneOf not a dense plain array", () => {
    const sparse: Array<unknown> = [{ type: "string" }]
    sparse[2] = { type: "null" }
    const extra: Array<unknown> & { x?: number } = [{ type: "string" }, { type: "null" }]
    extra.x = 1
    class Sub extends Array<unknown> {}
    const sub = new Sub()
    sub.push({ type: "string" }, { type: "null" })
    for (const bad of ["x", { 0: { type: "string" } }, sparse, extra, sub]) {
      assert.strictEqual(
        dslError(() => value({ oneOf: bad })),
        "schema.oneOf must be an array of at least two value schemas"
      )
    }
  })

  it("DSL-5: object without boolean additionalProperties", () => {
    for (const bad of [undefined, "true", 1, {}]) {
      assert.strictEqual(
        dslError(() => value({ type: "object", additionalProperties: bad })),
        "schema.additionalProperties must be explicitly true or false"
      )
    }
    assert.strictEqual(
      dslError(() => params({ o: { type: "object", properties: {} } })),
      "parameters.o.additionalProperties must be explicitly true or false"
    )
  })

  it("DSL-5: enum not a dense plain array", () => {
    const sparse: Array<unknown> = ["a"]
    sparse[2] = "c"
    for (const bad of ["a", { 0: "a" }, sparse, null]) {
      assert.strictEqual(
        dslError(() => value({ type: "string", enum: bad })),
        "schema.enum must be a non-empty array of scalar values"
      )
    }
  })

  it("DSL-5: missing or unknown type", () => {
    const message = "type must be string/number/integer/boolean/null/array/object/json, or use oneOf"
    const bads = [{}, { type: "tuple" }, { type: ["string", "null"] }, { type: undefined }, { description: "d" }]
    for (const bad of bads) {
      assert.strictEqual(dslError(() => value(bad)), `schema.${message}`)
    }
    assert.strictEqual(dslError(() => params({ a: {} })), `parameters.a.${message}`)
  })

  it("DSL-5: compilation stops at the FIRST error in declaration order", () => {
    assert.strictEqual(
      dslError(() => params({ a: { type: "string" }, b: { type: "bogus" }, c: 42, d: { required: false } })),
      "parameters.b.type must be string/number/integer/boolean/null/array/object/json, or use oneOf"
    )
    assert.strictEqual(
      dslError(() =>
        params({
          a: { type: "object", additionalProperties: true, properties: { x: 1 } },
          b: { type: "object" }
        })
      ),
      "parameters.a.properties.x must be a value schema object"
    )
    assert.strictEqual(
      dslError(() => value({ oneOf: [{ type: "array", items: { type: "zzz" } }, 7] })),
      "schema.oneOf[0].items.type must be string/number/integer/boolean/null/array/object/json, or use oneOf"
    )
  })

  it("DSL-5: errors the DSL lets through are ALL reported by the subset assertion (root label schema)", () => {
    assert.deepStrictEqual(violationsOf(() => value({ oneOf: [{ type: "string" }] })), [
      "schema.oneOf must be an array of at least two schemas"
    ])
    const found = violationsOf(() =>
      params({
        a: { type: "string", enum: [] },
        b: { type: "integer", enum: [1.5] },
        c: { type: "boolean", const: 1 },
        d: { type: "number", enum: [1, 2], const: 3 },
        e: { type: "string", description: 3 },
        f: { type: "json", default: Number.NaN },
        g: { type: "json", examples: [undefined] }
      })
    )
    assert.deepStrictEqual(found, [
      "schema.properties.a.enum must be a non-empty array of string values",
      "schema.properties.b.enum must be a non-empty array of integer values",
      "schema.properties.c.const must be a boolean value",
      "schema.properties.d.const must be one of schema.properties.d.enum when both are declared",
      "schema.properties.e.description must be a string",
      "schema.properties.f.default annotation must be lossless JSON data",
      "schema.properties.g.examples annotation must be lossless JSON data"
    ])
  })

  it("DSL-5: hostile inputs (throwing getters, throwing proxies) are rejected, not thrown through", () => {
    const getter = {}
    Object.defineProperty(getter, "type", {
      enumerable: true,
      get() {
        throw new Error("boom")
      }
    })
    assert.strictEqual(dslError(() => value(getter)), "schema must be a value schema object")
    const proxy = new Proxy({}, {
      ownKeys() {
        throw new Error("trap")
      }
    })
    assert.strictEqual(dslError(() => params({ a: proxy })), "parameters.a must be a value schema object")
    assert.strictEqual(dslError(() => params(proxy)), "parameters must be an object of value schemas")
  })

  it("DSL-5: getters on spec nodes are read exactly once", () => {
    let reads = 0
    const node = {}
    Object.defineProperty(node, "type", {
      enumerable: true,
      get() {
        reads++
        return "string"
      }
    })
    assert.deepStrictEqual(value(node), { type: "string" })
    assert.strictEqual(reads, 1)
  })
})

describe("DSL-6 keys", () => {
  it("T-DSL-017: a property literally named __proto__ is kept as an own property and may be required", () => {
    const spec = JSON.parse("{\"__proto__\":{\"type\":\"string\",\"required\":true},\"x\":{\"type\":\"number\"}}")
    const compiled = params(spec)
    const properties = compiled.properties as Record<string, unknown>
    assert.isTrue(Object.hasOwn(properties, "__proto__"))
    assert.strictEqual(Object.getPrototypeOf(properties), Object.prototype)
    assert.deepStrictEqual(Object.getOwnPropertyDescriptor(properties, "__proto__")?.value, { type: "string" })
    assert.deepStrictEqual(Object.keys(properties), ["__proto__", "x"])
    assert.deepStrictEqual(compiled.required, ["__proto__"])
  })

  it("DSL-6: null-prototype specs are accepted", () => {
    const node = Object.assign(Object.create(null) as object, { type: "string" })
    const map = Object.assign(Object.create(null) as object, { a: node })
    assert.deepStrictEqual(params(map), { type: "object", properties: { a: { type: "string" } } })
  })
})

describe("DSL-7 stack safety", () => {
  it("DSL-7: 5,000-deep nested arrays, objects and oneOf compile", () => {
    const depth = 5000
    let arrays: unknown = { type: "string" }
    let objects: unknown = { type: "string", required: true }
    let choices: unknown = { type: "string" }
    for (let i = 0; i < depth; i++) {
      arrays = { type: "array", items: arrays }
      objects = { type: "object", additionalProperties: false, required: true, properties: { c: objects } }
      choices = { oneOf: [choices, { type: "null" }] }
    }
    let node: unknown = value(arrays)
    for (let i = 0; i < depth; i++) node = (node as { items: unknown }).items
    assert.deepStrictEqual(node, { type: "string" })

    const compiledParams = params({ root: objects })
    node = (compiledParams.properties as Record<string, unknown>).root
    for (let i = 0; i < depth; i++) {
      assert.deepStrictEqual((node as { required: unknown }).required, ["c"])
      node = (node as { properties: { c: unknown } }).properties.c
    }
    assert.deepStrictEqual(node, { type: "string" })

    node = value(choices)
    for (let i = 0; i < depth; i++) node = (node as { oneOf: ReadonlyArray<unknown> }).oneOf[0]
    assert.deepStrictEqual(node, { type: "string" })
  })

  it("DSL-7: a cycle 5,000 levels down is still found", () => {
    const top: Record<string, unknown> = { type: "array" }
    let cursor = top
    for (let i = 0; i < 5000; i++) {
      const next: Record<string, unknown> = { type: "array" }
      cursor.items = next
      cursor = next
    }
    cursor.items = top
    assert.strictEqual(dslError(() => value(top)), `schema${".items".repeat(5001)} is circular`)
  })
})

interface GenNode {
  readonly required: boolean
  readonly kind: "scalar" | "object"
  readonly children: ReadonlyArray<readonly [string, GenNode]>
}

const genNode: FastCheck.Arbitrary<GenNode> = FastCheck.letrec<{ node: GenNode }>((tie) => ({
  node: FastCheck.oneof(
    { depthSize: "small", withCrossShrink: true },
    FastCheck.record({
      required: FastCheck.boolean(),
      kind: FastCheck.constant("scalar" as const),
      children: FastCheck.constant([])
    }),
    FastCheck.record({
      required: FastCheck.boolean(),
      kind: FastCheck.constant("object" as const),
      children: FastCheck.uniqueArray(
        FastCheck.tuple(FastCheck.constantFrom("a", "b", "c", "__proto__", "d e"), tie("node")),
        { maxLength: 4, selector: ([key]) => key }
      )
    })
  )
})).node

const depthOf = (node: GenNode): number =>
  node.kind === "scalar" ? 0 : 1 + Math.max(0, ...node.children.map(([, child]) => depthOf(child)))

const toMap = (children: ReadonlyArray<readonly [string, GenNode]>): Record<string, unknown> => {
  const map: Record<string, unknown> = {}
  for (const [key, child] of children) {
    const spec: Record<string, unknown> = child.kind === "scalar"
      ? { type: "string" }
      : { type: "object", additionalProperties: false, properties: toMap(child.children) }
    if (child.required) spec.required = true
    Object.defineProperty(map, key, { value: spec, enumerable: true, writable: true, configurable: true })
  }
  return map
}

const checkLevel = (
  children: ReadonlyArray<readonly [string, GenNode]>,
  compiled: Record<string, unknown>
): boolean => {
  const expected = children.filter(([, child]) => child.required).map(([key]) => key)
  const actual = Object.hasOwn(compiled, "required") ? (compiled.required as ReadonlyArray<string>) : []
  if (JSON.stringify(expected) !== JSON.stringify(actual)) return false
  const properties = compiled.properties as Record<string, unknown>
  return children.every(([key, child]) =>
    child.kind === "scalar" ||
    checkLevel(child.children, Object.getOwnPropertyDescriptor(properties, key)!.value as Record<string, unknown>)
  )
}

describe("T-DSL-018 property", () => {
  it.prop(
    "T-DSL-018: the compiled required set equals the required:true keys at every level (depth ≤ 2)",
    [FastCheck.uniqueArray(FastCheck.tuple(FastCheck.constantFrom("a", "b", "c", "__proto__"), genNode), {
      maxLength: 4,
      selector: ([key]) => key
    }).filter((children) => children.every(([, child]) => depthOf(child) <= 1))],
    ([children]) => checkLevel(children, Dsl.compileParameters(toMap(children) as Dsl.ParameterSpec)),
    { fastCheck: { numRuns: 300 } }
  )
})
