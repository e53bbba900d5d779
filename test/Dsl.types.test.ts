import { assert, describe, expectTypeOf, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Dsl from "../src/Dsl.js"
import type { JsonValue } from "../src/Json.js"
import { defineTool } from "../src/Tool.js"
import type { ToolArgsError } from "../src/ToolError.js"

type Levels<N extends number, Acc extends ReadonlyArray<unknown> = []> = Acc["length"] extends N ? Acc
  : Levels<N, [...Acc, unknown]>

type NestedArraySpec<L extends ReadonlyArray<unknown>, Leaf> = L extends readonly [unknown, ...infer Rest]
  ? { readonly type: "array"; readonly items: NestedArraySpec<Rest, Leaf> }
  : Leaf

type NestedArray<L extends ReadonlyArray<unknown>, Leaf> = L extends readonly [unknown, ...infer Rest]
  ? ReadonlyArray<NestedArray<Rest, Leaf>>
  : Leaf

type Chain<L extends ReadonlyArray<unknown>, Leaf> = L extends readonly [unknown, ...infer Rest]
  ? { readonly c: Chain<Rest, Leaf> }
  : Leaf

type StringSpec = { readonly type: "string" }

// TypeScript assumes deeply nested instantiations of one generic are related, so deep types are
// checked by drilling down level by level (a non-container level yields a marker) and comparing leaves.
type DrillArray<T, L extends ReadonlyArray<unknown>> = L extends readonly [unknown, ...infer Rest]
  ? [T] extends [ReadonlyArray<infer E>] ? ReadonlyArray<E> extends T ? DrillArray<E, Rest> : "not an array"
    : "not an array"
  : T

type DrillChain<T, L extends ReadonlyArray<unknown>> = L extends readonly [unknown, ...infer Rest]
  ? [T] extends [{ readonly c: infer C }] ? [keyof T] extends ["c"] ? DrillChain<C, Rest> : "extra keys" : "not a chain"
  : T

const text = (value: string) => ({ type: "text" as const, text: value })

const deep16 = {
    type: "object", additionalProperties: false, properties: { c: {
      required: true, type: "object", additionalProperties: false, properties: { c: {
        required: true, type: "object", additionalProperties: false, properties: { c: {
          required: true, type: "object", additionalProperties: false, properties: { c: {
            required: true, type: "object", additionalProperties: false, properties: { c: {
              required: true, type: "object", additionalProperties: false, properties: { c: {
                required: true, type: "object", additionalProperties: false, properties: { c: {
                  required: true, type: "object", additionalProperties: false, properties: { c: {
                    required: true, type: "object", additionalProperties: false, properties: { c: {
                      required: true, type: "object", additionalProperties: false, properties: { c: {
                        required: true, type: "object", additionalProperties: false, properties: { c: {
                          required: true, type: "object", additionalProperties: false, properties: { c: {
                            required: true, type: "object", additionalProperties: false, properties: { c: {
                              required: true, type: "object", additionalProperties: false, properties: { c: {
                                required: true, type: "object", additionalProperties: false, properties: { c: {
                                  required: true, type: "object", additionalProperties: false, properties: { c: {
                                    required: true, type: "string"
                                  } }
                                } }
                              } }
                            } }
                          } }
                        } }
                      } }
                    } }
                  } }
                } }
              } }
            } }
          } }
        } }
      } }
    } }
} as const

const deep17 = {
    type: "object", additionalProperties: false, properties: { c: {
      required: true, type: "object", additionalProperties: false, properties: { c: {
        required: true, type: "object", additionalProperties: false, properties: { c: {
          required: true, type: "object", additionalProperties: false, properties: { c: {
            required: true, type: "object", additionalProperties: false, properties: { c: {
              required: true, type: "object", additionalProperties: false, properties: { c: {
                required: true, type: "object", additionalProperties: false, properties: { c: {
                  required: true, type: "object", additionalProperties: false, properties: { c: {
                    required: true, type: "object", additionalProperties: false, properties: { c: {
                      required: true, type: "object", additionalProperties: false, properties: { c: {
                        required: true, type: "object", additionalProperties: false, properties: { c: {
                          required: true, type: "object", additionalProperties: false, properties: { c: {
                            required: true, type: "object", additionalProperties: false, properties: { c: {
                              required: true, type: "object", additionalProperties: false, properties: { c: {
                                required: true, type: "object", additionalProperties: false, properties: { c: {
                                  required: true, type: "object", additionalProperties: false, properties: { c: {
                                    required: true, type: "object", additionalProperties: false, properties: { c: {
                                      required: true, type: "string"
                                    } }
                                  } }
                                } }
                              } }
                            } }
                          } }
                        } }
                      } }
                    } }
                  } }
                } }
              } }
            } }
          } }
        } }
      } }
    } }
} as const

describe("DSL-8 value inference", () => {
  it("T-DSL-024: scalars, literals, arrays, json, oneOf and objects", () => {
    expectTypeOf<Dsl.InferValue<{ readonly type: "string"; readonly enum: readonly ["a", "b"] }>>()
      .toEqualTypeOf<"a" | "b">()
    expectTypeOf<Dsl.InferValue<{ readonly type: "number"; readonly const: 1 }>>().toEqualTypeOf<1>()
    expectTypeOf<Dsl.InferValue<{ readonly type: "integer" }>>().toEqualTypeOf<number>()
    expectTypeOf<Dsl.InferValue<{ readonly type: "boolean"; readonly enum: readonly [true] }>>().toEqualTypeOf<true>()
    expectTypeOf<Dsl.InferValue<{ readonly type: "null" }>>().toEqualTypeOf<null>()
    expectTypeOf<Dsl.InferValue<{ readonly type: "array"; readonly items: StringSpec }>>()
      .toEqualTypeOf<ReadonlyArray<string>>()
    expectTypeOf<Dsl.InferValue<{ readonly type: "array" }>>().toEqualTypeOf<ReadonlyArray<JsonValue>>()
    expectTypeOf<Dsl.InferValue<{ readonly type: "json" }>>().toEqualTypeOf<JsonValue>()
    expectTypeOf<Dsl.InferValue<{ readonly oneOf: readonly [StringSpec, { readonly type: "null" }] }>>()
      .toEqualTypeOf<string | null>()
    expectTypeOf<
      Dsl.InferValue<{
        readonly type: "object"
        readonly additionalProperties: false
        readonly properties: {
          readonly a: { readonly type: "string"; readonly required: true }
          readonly b: StringSpec
        }
      }>
    >().toEqualTypeOf<{ readonly a: string; readonly b?: string }>()
    expectTypeOf<
      Dsl.InferValue<{
        readonly type: "object"
        readonly additionalProperties: true
        readonly properties: { readonly a: { readonly type: "integer"; readonly required: true } }
      }>
    >().toEqualTypeOf<{ readonly a: number } & { readonly [key: string]: JsonValue }>()
    assert.deepStrictEqual(Dsl.compileValue({ type: "null" }), { type: "null" })
  })

  it("DSL-8: const beats enum beats the broad type", () => {
    expectTypeOf<Dsl.InferValue<{ readonly type: "string"; readonly enum: readonly ["a", "b"]; readonly const: "a" }>>()
      .toEqualTypeOf<"a">()
    expectTypeOf<Dsl.InferValue<Dsl.StringSpec>>().toEqualTypeOf<string>()
    assert.deepStrictEqual(Dsl.compileValue({ type: "string", enum: ["a", "b"], const: "a" }), {
      type: "string",
      enum: ["a", "b"],
      const: "a"
    })
  })

  it("DSL-8: closed object without properties is Record<string, never>; open is Record<string, JsonValue>", () => {
    expectTypeOf<Dsl.InferValue<{ readonly type: "object"; readonly additionalProperties: false }>>()
      .toEqualTypeOf<{ readonly [key: string]: never }>()
    expectTypeOf<Dsl.InferValue<{ readonly type: "object"; readonly additionalProperties: true }>>()
      .toEqualTypeOf<{ readonly [key: string]: JsonValue }>()
    assert.deepStrictEqual(Dsl.compileValue({ type: "object", additionalProperties: false }), {
      type: "object",
      additionalProperties: false
    })
  })

  it("DSL-8: exact for 16 nested container levels", () => {
    type Arrays16 = Dsl.InferValue<NestedArraySpec<Levels<16>, StringSpec>>
    expectTypeOf<DrillArray<Arrays16, Levels<16>>>().toEqualTypeOf<string>()
    expectTypeOf<DrillArray<Arrays16, Levels<15>>>().toEqualTypeOf<ReadonlyArray<string>>()
    expectTypeOf<Arrays16>().toEqualTypeOf<NestedArray<Levels<16>, string>>()
    type Chain16 = Dsl.InferValue<typeof deep16>
    expectTypeOf<DrillChain<Chain16, Levels<16>>>().toEqualTypeOf<string>()
    expectTypeOf<DrillChain<Chain16, Levels<15>>>().toEqualTypeOf<{ readonly c: string }>()
    expectTypeOf<Chain16>().toEqualTypeOf<Chain<Levels<16>, string>>()
    assert.strictEqual(JSON.stringify(Dsl.compileValue(deep16)).split("\"object\"").length - 1, 16)
  })

  it("DSL-8: widens to JsonValue from the 17th container level", () => {
    type Arrays17 = Dsl.InferValue<NestedArraySpec<Levels<17>, StringSpec>>
    expectTypeOf<DrillArray<Arrays17, Levels<16>>>().toEqualTypeOf<JsonValue>()
    expectTypeOf<DrillArray<Arrays17, Levels<15>>>().toEqualTypeOf<ReadonlyArray<JsonValue>>()
    type Arrays30 = Dsl.InferValue<NestedArraySpec<Levels<30>, StringSpec>>
    expectTypeOf<DrillArray<Arrays30, Levels<16>>>().toEqualTypeOf<JsonValue>()
    type Chain17 = Dsl.InferValue<typeof deep17>
    expectTypeOf<DrillChain<Chain17, Levels<16>>>().toEqualTypeOf<JsonValue>()
    expectTypeOf<DrillChain<Chain17, Levels<15>>>().toEqualTypeOf<{ readonly c: JsonValue }>()
    assert.strictEqual(JSON.stringify(Dsl.compileValue(deep17)).split("\"object\"").length - 1, 17)
  })

  it("DSL-8: broad spec types infer without unbounded recursion", () => {
    expectTypeOf<Dsl.InferValue<Dsl.ValueSpec>>().toMatchTypeOf<JsonValue>()
    expectTypeOf<Dsl.InferValue<Dsl.OneOfSpec>>().toEqualTypeOf<JsonValue>()
    assert.isFunction(Dsl.compileValue)
  })
})

describe("DSL-8 parameter inference", () => {
  it("T-DSL-020/021/026: required keys are non-optional, others optional, json is JsonValue", () => {
    type Args = Dsl.InferParameters<{
      readonly path: { readonly type: "string"; readonly required: true }
      readonly limit: { readonly type: "integer" }
      readonly data: { readonly type: "json"; readonly required: true }
    }>
    expectTypeOf<Args>().toEqualTypeOf<{ readonly path: string; readonly data: JsonValue; readonly limit?: number }>()
    const omitted: Args = { path: "/x", data: null }
    assert.deepStrictEqual(omitted, { path: "/x", data: null })
  })

  it("T-DSL-022: inference recurses into arrays of open objects", () => {
    type Args = Dsl.InferParameters<{
      readonly servers: {
        readonly type: "array"
        readonly required: true
        readonly items: {
          readonly type: "object"
          readonly additionalProperties: true
          readonly properties: {
            readonly host: { readonly type: "string"; readonly required: true }
            readonly port: { readonly type: "number" }
          }
        }
      }
    }>
    expectTypeOf<Args>().toEqualTypeOf<{
      readonly servers: ReadonlyArray<
        { readonly host: string; readonly port?: number } & { readonly [key: string]: JsonValue }
      >
    }>()
    assert.ok(true)
  })

  it("T-DSL-023: inline enum and const literals are kept through defineTool", () => {
    const tool = defineTool({
      name: "mode",
      description: "literal inference",
      parameters: {
        mode: { type: "string", enum: ["read", "write"], required: true },
        one: { type: "integer", const: 1 },
        nested: {
          type: "object",
          additionalProperties: false,
          properties: { flag: { type: "boolean", required: true } }
        }
      },
      output: { schema: { type: "string", enum: ["ok", "no"] }, render: (_args, value) => [text(value)] },
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<{
          readonly mode: "read" | "write"
          readonly one?: 1
          readonly nested?: { readonly flag: boolean }
        }>()
        return Effect.succeed(args.mode === "read" ? "ok" as const : "no" as const)
      }
    })
    expectTypeOf(tool.execute).returns.toEqualTypeOf<
      Effect.Effect<"ok" | "no", ToolArgsError, never>
    >()
    assert.strictEqual(tool.name, "mode")
  })

  it("DSL-8: the root map is the first container level", () => {
    type Exact = Dsl.InferParameters<{ readonly a: NestedArraySpec<Levels<15>, StringSpec> }>
    expectTypeOf<keyof Exact>().toEqualTypeOf<"a">()
    expectTypeOf<DrillArray<NonNullable<Exact["a"]>, Levels<15>>>().toEqualTypeOf<string>()
    type Widened = Dsl.InferParameters<{ readonly a: NestedArraySpec<Levels<16>, StringSpec> }>
    expectTypeOf<DrillArray<NonNullable<Widened["a"]>, Levels<15>>>().toEqualTypeOf<JsonValue>()
    assert.deepStrictEqual(Dsl.compileParameters({}), { type: "object", properties: {} })
  })
})

describe("defineTool typing", () => {
  it("async bodies fail with unknown; Effect bodies keep their error and context", () => {
    class Missing {
      readonly _tag = "Missing"
    }
    const asyncTool = defineTool({
      name: "a",
      description: "async",
      parameters: { n: { type: "number", required: true } },
      output: { schema: { type: "number" }, render: (args, value) => [text(`${args.n}:${value}`)] },
      execute: async (args, ctx) => {
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>()
        return args.n + 1
      }
    })
    expectTypeOf(asyncTool.execute).returns.toEqualTypeOf<
      Effect.Effect<number, unknown, never>
    >()
    const effectTool = defineTool({
      name: "e",
      description: "effect",
      parameters: {},
      output: { schema: { type: "json" }, render: () => [] },
      execute: () => Effect.fail(new Missing())
    })
    expectTypeOf(effectTool.execute).returns.toEqualTypeOf<
      Effect.Effect<JsonValue, ToolArgsError | Missing, never>
    >()
    assert.strictEqual(asyncTool.name, "a")
  })

  it("presenters and classifier receive typed args; render receives typed value", () => {
    const tool = defineTool({
      name: "p",
      description: "presenters",
      parameters: { path: { type: "string", required: true } },
      output: {
        schema: {
          type: "object",
          additionalProperties: false,
          properties: { size: { type: "integer", required: true } }
        },
        render: (args, value) => {
          expectTypeOf(value).toEqualTypeOf<{ readonly size: number }>()
          return [text(`${args.path}:${value.size}`)]
        },
        presentationMeta: (args, value) => ({ path: args.path, size: value.size })
      },
      isConcurrencySafe: (args) => args.path.length > 0,
      presentCall: (args) => ({ card: "generic", title: args.path }),
      presentResult: (args, result) => ({ card: "generic", title: `${args.path}:${result.isError}` }),
      execute: (args) => Effect.succeed({ size: args.path.length })
    })
    assert.strictEqual(tool.presentCall?.({ path: "/a" })?.title, "/a")
  })
})

describe("T-DSL-027 invalid author forms are compile-time errors", () => {
  it("T-DSL-027: object without openness, one-branch oneOf, enum mismatch, required:false, symbol keys", () => {
    const sym = Symbol("k")
    const attempts: ReadonlyArray<() => unknown> = [
      // @ts-expect-error additionalProperties is mandatory on objects
      () => Dsl.compileValue({ type: "object" }),
      // @ts-expect-error oneOf needs at least two branches
      () => Dsl.compileValue({ oneOf: [{ type: "string" }] }),
      // @ts-expect-error enum entries must match the declared type
      () => Dsl.compileValue({ type: "string", enum: [1] }),
      // @ts-expect-error required must be true when present
      () => Dsl.compileParameters({ a: { type: "string", required: false } }),
      // @ts-expect-error symbol keys are not property names
      () => Dsl.compileParameters({ [sym]: { type: "string" } }),
      // @ts-expect-error required is only accepted on property-map entries
      () => Dsl.compileValue({ type: "array", items: { type: "string", required: true } }),
      // @ts-expect-error unknown keys are rejected
      () => Dsl.compileValue({ type: "string", extra: 1 }),
      () =>
        defineTool({
          name: "bad",
          description: "bad",
          // @ts-expect-error additionalProperties is mandatory, also through defineTool inference
          parameters: { o: { type: "object" } },
          output: { schema: { type: "json" }, render: () => [] },
          execute: () => Effect.succeed(null)
        }),
      () =>
        defineTool({
          name: "bad",
          description: "bad",
          // @ts-expect-error required:false is rejected through defineTool inference
          parameters: { a: { type: "string", required: false } },
          output: { schema: { type: "json" }, render: () => [] },
          execute: () => Effect.succeed(null)
        }),
      () =>
        defineTool({
          name: "bad",
          description: "bad",
          parameters: {},
          // @ts-expect-error one-branch oneOf is rejected through defineTool inference
          output: { schema: { oneOf: [{ type: "string" }] }, render: () => [] },
          execute: () => Effect.succeed(null)
        }),
    ]
    for (const attempt of attempts) assert.throws(attempt)
    const wrongValue = defineTool({
      name: "bad",
      description: "values are checked by the registry at run time, not here",
      parameters: {},
      output: { schema: { type: "string" }, render: () => [] },
      // @ts-expect-error the body must return the declared value type
      execute: () => Effect.succeed(1)
    })
    assert.strictEqual(wrongValue.name, "bad")
  })
})
