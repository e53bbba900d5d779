import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Context, Effect, Exit, Fiber, FastCheck, ParseResult, Schema } from "effect"
import * as Presets from "../layers/Presets.js"
import type { Content } from "../src/Content.js"
import type { RunContext } from "../src/Execution.js"
import * as Json from "../src/Json.js"
import type { JsonValue } from "../src/Json.js"
import * as JsonSchema from "../src/JsonSchema.js"
import * as Tool from "../src/Tool.js"
import { JsonSchemaError, ToolArgsError, ToolDefinitionError, ToolOutputError } from "../src/ToolError.js"
import * as ToolRegistry from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import { throwingProxy } from "./fixtures/hostile.js"

const makeCtx = (signal: AbortSignal = new AbortController().signal): RunContext => ({
  token: Symbol("test"),
  callId: "c1",
  rootCallId: "c1",
  name: "test",
  arguments: undefined,
  signal,
  deferContext: () => {},
  concludeTurn: () => {}
})

type Same<X, Y> = [X] extends [Y] ? ([Y] extends [X] ? true : false) : false

const text = (value: string): Content => [{ type: "text", text: value }]

const Add = Schema.Struct({
  a: Schema.Int,
  b: Schema.Int.pipe(Schema.positive()),
  label: Schema.optional(Schema.NonEmptyString)
})
const Sum = Schema.Struct({ sum: Schema.Int })

const makeAdd = (counter: { calls: number } = { calls: 0 }) =>
  Tool.fromSchema({
    name: "add",
    description: "Adds two integers.",
    parameters: Add,
    output: { schema: Sum, render: (_args, value) => text(String(value.sum)) },
    execute: ({ a, b }) =>
      Effect.sync(() => {
        counter.calls++
        return { sum: a + b }
      })
  })

const definitionError = (f: () => unknown): JsonSchemaError => {
  try {
    f()
  } catch (e) {
    assert.instanceOf(e, JsonSchemaError)
    return e as JsonSchemaError
  }
  throw new Error("expected a definition-time JsonSchemaError")
}

/** The message of the `ToolDefinitionError` thrown by `f` (issue 8 item 13(b)). */
const definitionFailure = (f: () => unknown): string => {
  try {
    f()
  } catch (e) {
    assert.instanceOf(e, ToolDefinitionError)
    assert.instanceOf(e, Error)
    assert.strictEqual((e as ToolDefinitionError)._tag, "ToolDefinitionError")
    return (e as ToolDefinitionError).message
  }
  throw new Error("expected a definition-time ToolDefinitionError")
}

const thrownMessage = (f: () => unknown): string => {
  try {
    f()
  } catch (e) {
    return (e as Error).message
  }
  throw new Error("expected a throw")
}

describe("Tool.fromSchema", () => {
  describe("parameters projection", () => {
    it("TYPES-1: identifiers (Int, NonEmptyString) are inlined, no $ref/$defs/$schema", () => {
      const def = makeAdd()
      assert.deepStrictEqual(def.parameters, {
        type: "object",
        required: ["a", "b"],
        properties: {
          a: { type: "integer", description: "an integer", title: "int" },
          b: { type: "integer", description: "a positive number", title: "positive", exclusiveMinimum: 0 },
          label: { type: "string", description: "a non empty string", title: "nonEmptyString", minLength: 1 }
        },
        additionalProperties: false
      })
      const serialized = JSON.stringify(def.parameters)
      assert.isFalse(serialized.includes("$ref"))
      assert.isFalse(serialized.includes("$schema"))
      assert.isFalse(serialized.includes("$defs"))
    })

    it("TYPES-1: a Class nested twice is inlined at both places", () => {
      class Point extends Schema.Class<Point>("Point")({ x: Schema.Number, y: Schema.Number }) {}
      const def = Tool.fromSchema({
        name: "line",
        description: "",
        parameters: Schema.Struct({ from: Point, to: Point }),
        output: { schema: Schema.Number, render: () => [] },
        execute: ({ from, to }) => Effect.succeed(Math.hypot(to.x - from.x, to.y - from.y))
      })
      const point = {
        type: "object",
        required: ["x", "y"],
        properties: { x: { type: "number" }, y: { type: "number" } },
        additionalProperties: false
      }
      assert.deepStrictEqual(def.parameters, {
        type: "object",
        required: ["from", "to"],
        properties: { from: point, to: point },
        additionalProperties: false
      })
    })

    it("TYPES-1: the projection describes the encoded side (Schema.Date is a string)", () => {
      const def = Tool.fromSchema({
        name: "when",
        description: "",
        parameters: Schema.Struct({ at: Schema.Date, n: Schema.NumberFromString }),
        output: { schema: Schema.Date, render: () => [] },
        execute: ({ at }) => Effect.succeed(at)
      })
      assert.deepStrictEqual(def.parameters, {
        type: "object",
        required: ["at", "n"],
        properties: {
          at: { type: "string", description: "a string to be decoded into a Date" },
          n: { type: "string", description: "a string to be decoded into a number" }
        },
        additionalProperties: false
      })
    })

    it.effect("TYPES-1: an empty Struct projects to a closed empty object", () =>
      Effect.gen(function*() {
        const def = Tool.fromSchema({
          name: "now",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.Number, render: () => [] },
          execute: () => Effect.succeed(1)
        })
        assert.deepStrictEqual(def.parameters, {
          type: "object",
          properties: {},
          required: [],
          additionalProperties: false
        })
        assert.strictEqual(yield* def.execute({}, makeCtx()), 1)
        const error = (yield* Effect.flip(def.execute({ x: 1 }, makeCtx()))) as ToolArgsError
        assert.deepStrictEqual(error.violations, ["\"x\" is not a declared property (additionalProperties: false)"])
        const array = (yield* Effect.flip(def.execute([], makeCtx()))) as ToolArgsError
        assert.deepStrictEqual(array.violations, ["\"arguments\" must be an object"])
      }))

    it("D-6: a non-object parameters root is rejected at definition time", () => {
      const error = definitionError(() =>
        Tool.fromSchema({
          name: "bad",
          description: "",
          parameters: Schema.Union(Schema.Struct({ a: Schema.String }), Schema.Struct({ b: Schema.String })),
          output: { schema: Schema.String, render: () => [] },
          execute: () => Effect.succeed("x")
        })
      )
      assert.deepStrictEqual(error.violations, [
        "parameters: tool \"bad\" must project to an object schema (root type \"object\"), got anyOf"
      ])
      assert.strictEqual(error.code, "UNSUPPORTED_SCHEMA")
    })

    it("D-6: non-JSON encoded sides are rejected at definition time, naming the tool", () => {
      const cases: ReadonlyArray<readonly [string, Schema.Schema<any, any, never>]> = [
        ["DateFromSelf", Schema.DateFromSelf],
        ["bigint", Schema.BigIntFromSelf],
        ["Uint8ArrayFromSelf", Schema.Uint8ArrayFromSelf],
        ["Map<string, number>", Schema.MapFromSelf({ key: Schema.String, value: Schema.Number })],
        ["Set<string>", Schema.SetFromSelf(Schema.String)],
        ["symbol", Schema.SymbolFromSelf]
      ]
      for (const [detail, field] of cases) {
        const error = definitionError(() =>
          Tool.fromSchema({
            name: "raw",
            description: "",
            parameters: Schema.Struct({ field }),
            output: { schema: Schema.String, render: () => [] },
            execute: () => Effect.succeed("x")
          })
        )
        assert.strictEqual(error.violations.length, 1)
        const violation = error.violations[0]!
        assert.isTrue(violation.startsWith("parameters: tool \"raw\" has a non-JSON encoded side ("), violation)
        assert.isTrue(violation.includes("[\"field\"]"), violation)
        assert.isTrue(violation.includes(detail), violation)
        assert.isTrue(error.message.startsWith("unsupported JSON schema: parameters: tool \"raw\""))
      }
    })

    it("D-6: Schema.Date (DateFromString) is accepted while Schema.DateFromSelf is rejected", () => {
      const ok = Tool.fromSchema({
        name: "date",
        description: "",
        parameters: Schema.Struct({ at: Schema.Date }),
        output: { schema: Schema.Date, render: () => [] },
        execute: ({ at }) => Effect.succeed(at)
      })
      assert.strictEqual(ok.name, "date")
      const error = definitionError(() =>
        Tool.fromSchema({
          name: "date",
          description: "",
          parameters: Schema.Struct({ at: Schema.Date }),
          output: { schema: Schema.DateFromSelf, render: () => [] },
          execute: ({ at }) => Effect.succeed(at)
        })
      )
      assert.isTrue(error.violations[0]!.startsWith("output: tool \"date\" has a non-JSON encoded side ("))
      assert.isTrue(error.violations[0]!.includes("DateFromSelf"))
    })

    it("D-6: a projection that is not lossless JSON is rejected", () => {
      const error = definitionError(() =>
        Tool.fromSchema({
          name: "nan",
          description: "",
          parameters: Schema.Struct({ a: Schema.Number.annotations({ jsonSchema: { minimum: Number.NaN } }) }),
          output: { schema: Schema.String, render: () => [] },
          execute: () => Effect.succeed("x")
        })
      )
      assert.deepStrictEqual(error.violations, ["parameters: tool \"nan\" does not project to lossless JSON"])
    })

    it("D-6: recursive parameter schemas are rejected (with and without an identifier)", () => {
      interface Tree {
        readonly name: string
        readonly children: ReadonlyArray<Tree>
      }
      const Anonymous: Schema.Schema<Tree> = Schema.Struct({
        name: Schema.String,
        children: Schema.Array(Schema.suspend((): Schema.Schema<Tree> => Anonymous))
      })
      const Named: Schema.Schema<Tree> = Schema.Struct({
        name: Schema.String,
        children: Schema.Array(Schema.suspend((): Schema.Schema<Tree> => Named))
      }).annotations({ identifier: "Tree" })
      const anonymous = definitionError(() =>
        Tool.fromSchema({
          name: "tree",
          description: "",
          parameters: Schema.Struct({ root: Anonymous }),
          output: { schema: Schema.String, render: () => [] },
          execute: () => Effect.succeed("x")
        })
      )
      assert.isTrue(
        anonymous.violations[0]!.startsWith(
          "parameters: tool \"tree\" is recursive; recursive parameter schemas are not supported ("
        )
      )
      const named = definitionError(() =>
        Tool.fromSchema({
          name: "tree",
          description: "",
          parameters: Schema.Struct({ root: Named }),
          output: { schema: Schema.String, render: () => [] },
          execute: () => Effect.succeed("x")
        })
      )
      assert.deepStrictEqual(named.violations, [
        "parameters: tool \"tree\" is recursive; recursive parameter schemas are not supported " +
        "(emits $ref \"#/$defs/Tree\")"
      ])
    })

    it("issue 8 item 13(b) / D-6: an empty name and bad timeouts are typed ToolDefinitionErrors", () => {
      const base = {
        description: "",
        parameters: Schema.Struct({}),
        output: { schema: Schema.String, render: () => [] },
        execute: () => Effect.succeed("x")
      }
      assert.strictEqual(
        definitionFailure(() => Tool.fromSchema({ ...base, name: "" })),
        "fromSchema(): name must be a non-empty string"
      )
      for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2147483648]) {
        assert.strictEqual(
          definitionFailure(() => Tool.fromSchema({ ...base, name: "t", timeoutMs })),
          "fromSchema(t): timeoutMs must be a positive finite number no greater than 2147483647"
        )
      }
      assert.strictEqual(Tool.fromSchema({ ...base, name: "t", timeoutMs: 2147483647 }).timeoutMs, 2147483647)
    })

    it("TYPES-2: optional fields are present only when supplied; options are captured once", () => {
      const options = {
        name: "plain",
        description: "d",
        parameters: Schema.Struct({}),
        output: { schema: Schema.String, render: () => [] },
        execute: () => Effect.succeed("x")
      }
      const plain = Tool.fromSchema(options)
      assert.deepStrictEqual(Object.keys(plain).sort(), ["description", "execute", "name", "output", "parameters"])
      assert.deepStrictEqual(Object.keys(plain.output).sort(), ["render", "schema", "validate"])
      options.name = "changed"
      assert.strictEqual(plain.name, "plain")
      const full = Tool.fromSchema({
        ...options,
        name: "full",
        deferLoading: true,
        timeoutMs: 10,
        finalizeContent: () => undefined,
        projectContent: () => undefined,
        isConcurrencySafe: () => true,
        presentCall: () => undefined,
        presentResult: () => undefined,
        output: { ...options.output, presentationMeta: () => null }
      })
      assert.strictEqual(full.deferLoading, true)
      assert.strictEqual(full.timeoutMs, 10)
      assert.isFunction(full.finalizeContent)
      assert.isFunction(full.projectContent)
      assert.isFunction(full.output.presentationMeta)
    })
  })

  describe("output subset projection", () => {
    it("SCHEMA-1: the output schema is converted into the subset (lossy) and passes JsonSchema.violations", () => {
      const Out = Schema.Struct({
        count: Schema.Int.pipe(Schema.nonNegative()),
        name: Schema.NonEmptyString.annotations({ description: "who" }),
        mode: Schema.Literal("fast", "slow"),
        note: Schema.NullOr(Schema.String),
        at: Schema.Date,
        shape: Schema.Union(
          Schema.TaggedStruct("Circle", { r: Schema.Number }),
          Schema.TaggedStruct("Square", { side: Schema.Number })
        ),
        loose: Schema.Union(Schema.String, Schema.Literal("a")),
        pair: Schema.Tuple(Schema.String, Schema.Number),
        scores: Schema.Record({ key: Schema.String, value: Schema.Number }),
        extra: Schema.Unknown,
        tags: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(5))))
      })
      const def = Tool.fromSchema({
        name: "rich",
        description: "",
        parameters: Schema.Struct({}),
        output: { schema: Out, render: () => [] },
        execute: () => Effect.die("unused")
      })
      assert.deepStrictEqual(def.output.schema, {
        type: "object",
        properties: {
          count: { type: "integer", description: "a non-negative number", title: "nonNegative" },
          name: { type: "string", title: "nonEmptyString", description: "who" },
          mode: { type: "string", enum: ["fast", "slow"] },
          note: { oneOf: [{ type: "string" }, { type: "null" }] },
          at: { type: "string", description: "a string to be decoded into a Date" },
          shape: {
            oneOf: [
              {
                type: "object",
                properties: { _tag: { type: "string", enum: ["Circle"] }, r: { type: "number" } },
                required: ["_tag", "r"],
                additionalProperties: false
              },
              {
                type: "object",
                properties: { _tag: { type: "string", enum: ["Square"] }, side: { type: "number" } },
                required: ["_tag", "side"],
                additionalProperties: false
              }
            ]
          },
          loose: {},
          pair: { type: "array" },
          scores: { type: "object", properties: {} },
          extra: { title: "unknown" },
          tags: {
            type: "array",
            items: { type: "string", description: "a string at most 5 character(s) long", title: "maxLength(5)" }
          }
        },
        required: ["count", "name", "mode", "note", "at", "shape", "loose", "pair", "scores", "extra"],
        additionalProperties: false
      })
      assert.deepStrictEqual(JsonSchema.violations(def.output.schema), [])
      assert.isTrue(Object.isFrozen(def.output.schema))
    })

    it("SCHEMA-1: unions disjoint by literal, by type, or overlapping (integer vs number)", () => {
      const project = (schema: Schema.Schema<any, any, never>) =>
        Tool.fromSchema({
          name: "u",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema, render: () => [] },
          execute: () => Effect.die("unused")
        }).output.schema
      assert.deepStrictEqual(project(Schema.Enums({ A: "a", B: "b" })), {
        oneOf: [{ type: "string", title: "A", enum: ["a"] }, { type: "string", title: "B", enum: ["b"] }]
      })
      assert.deepStrictEqual(project(Schema.Union(Schema.Literal("a"), Schema.TemplateLiteral("b", Schema.String))), {})
      assert.deepStrictEqual(project(Schema.Literal(1, "a", true, null)), {
        oneOf: [
          { type: "number", enum: [1] },
          { type: "string", enum: ["a"] },
          { type: "boolean", enum: [true] },
          { type: "null" }
        ]
      })
      assert.deepStrictEqual(project(Schema.Union(Schema.Int, Schema.Number)), {})
      assert.deepStrictEqual(project(Schema.Union(Schema.Literal(1), Schema.Int)), {})
      for (const schema of [Schema.Literal(1, "a", true, null), Schema.Union(Schema.Int, Schema.Number)]) {
        assert.deepStrictEqual(JsonSchema.violations(project(schema)), [])
      }
    })

    it("SCHEMA-3: a recursive output schema (with identifier) is inlined once and loosened at the cycle", () => {
      interface Tree {
        readonly name: string
        readonly children: ReadonlyArray<Tree>
      }
      const TreeSchema: Schema.Schema<Tree> = Schema.Struct({
        name: Schema.String,
        children: Schema.Array(Schema.suspend((): Schema.Schema<Tree> => TreeSchema))
      }).annotations({ identifier: "Tree" })
      const def = Tool.fromSchema({
        name: "tree",
        description: "",
        parameters: Schema.Struct({}),
        output: { schema: Schema.Struct({ root: TreeSchema }), render: () => [] },
        execute: () => Effect.succeed({ root: { name: "r", children: [] } })
      })
      const treeNode = {
        type: "object",
        properties: {
          name: { type: "string" },
          children: {
            type: "array",
            items: {
              type: "object",
              properties: { name: { type: "string" }, children: { type: "array", items: {} } },
              required: ["name", "children"],
              additionalProperties: false
            }
          }
        },
        required: ["name", "children"],
        additionalProperties: false
      }
      assert.deepStrictEqual(def.output.schema, {
        type: "object",
        properties: { root: treeNode },
        required: ["root"],
        additionalProperties: false
      })
      assert.deepStrictEqual(JsonSchema.violations(def.output.schema), [])
      const deep = { root: { name: "a", children: [{ name: "b", children: [{ name: "c", children: [{}] }] }] } }
      assert.deepStrictEqual(def.output.validate!(deep), [
        "missing required property \"value.root.children[0].children[0].children[0].name\"",
        "missing required property \"value.root.children[0].children[0].children[0].children\""
      ])
    })

    it("OUT-2: a void member is rejected even under a property named like an annotation", () => {
      const error = definitionError(() =>
        Tool.fromSchema({
          name: "nothing",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.Struct({ default: Schema.Void }), render: () => [] },
          execute: () => Effect.succeed({ default: undefined })
        })
      )
      assert.deepStrictEqual(error.violations, ["output: tool \"nothing\" has a non-JSON encoded side (void)"])
    })

    it("OUT-2: a void output (never JSON) is rejected at definition time", () => {
      const error = definitionError(() =>
        Tool.fromSchema({
          name: "nothing",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.Void, render: () => [] },
          execute: () => Effect.void
        })
      )
      assert.deepStrictEqual(error.violations, ["output: tool \"nothing\" has a non-JSON encoded side (void)"])
    })
  })

  describe("execute", () => {
    it.effect("DEF-3: valid arguments run the body; the value is encoded to canonical JSON", () =>
      Effect.gen(function*() {
        const counter = { calls: 0 }
        const def = makeAdd(counter)
        const value = yield* def.execute({ a: 2, b: 3 }, makeCtx())
        assert.deepStrictEqual(value, { sum: 5 })
        assert.strictEqual(counter.calls, 1)
      }))

    it.effect("DEF-3 / D-11: invalid arguments fail with INVALID_ARGS, readable paths, body not run", () =>
      Effect.gen(function*() {
        const counter = { calls: 0 }
        const def = makeAdd(counter)
        const error = yield* Effect.flip(def.execute({ a: 1.5, b: -1, label: "", extra: true }, makeCtx()))
        assert.instanceOf(error, ToolArgsError)
        const argsError = error as ToolArgsError
        assert.strictEqual(argsError.code, "INVALID_ARGS")
        assert.deepStrictEqual(argsError.violations, [
          "\"extra\" is not a declared property (additionalProperties: false)",
          "\"a\": Expected an integer, actual 1.5",
          "\"b\": Expected a positive number, actual -1",
          "\"label\": Expected a non empty string, actual \"\""
        ])
        const missing = (yield* Effect.flip(def.execute({}, makeCtx()))) as ToolArgsError
        assert.deepStrictEqual(missing.violations, [
          "missing required property \"a\"",
          "missing required property \"b\""
        ])
        for (const args of [5, null, [1, 2], "x"]) {
          const root = (yield* Effect.flip(def.execute(args, makeCtx()))) as ToolArgsError
          assert.deepStrictEqual(root.violations, ["\"arguments\" must be an object"])
        }
        assert.strictEqual(counter.calls, 0)
      }))

    it.effect("VAL-2: nested paths use .key and [i]", () =>
      Effect.gen(function*() {
        const def = Tool.fromSchema({
          name: "order",
          description: "",
          parameters: Schema.Struct({
            items: Schema.Array(Schema.Struct({ sku: Schema.String, qty: Schema.Int }))
          }),
          output: { schema: Schema.Number, render: () => [] },
          execute: ({ items }) => Effect.succeed(items.length)
        })
        const error = (yield* Effect.flip(
          def.execute({ items: [{ sku: "a", qty: 1 }, { sku: 7, qty: 1.5 }] }, makeCtx())
        )) as ToolArgsError
        assert.deepStrictEqual(error.violations, [
          "\"items[1].sku\": Expected string, actual 7",
          "\"items[1].qty\": Expected an integer, actual 1.5"
        ])
        assert.strictEqual(
          error.message,
          "invalid arguments: \"items[1].sku\": Expected string, actual 7; " +
            "\"items[1].qty\": Expected an integer, actual 1.5"
        )
      }))

    it.effect("OUT-3: a body value that fails to encode is INVALID_TOOL_OUTPUT with value paths", () =>
      Effect.gen(function*() {
        const def = Tool.fromSchema({
          name: "half",
          description: "",
          parameters: Schema.Struct({ n: Schema.Number }),
          output: { schema: Schema.Struct({ sum: Schema.Int, items: Schema.Array(Schema.Int) }), render: () => [] },
          execute: ({ n }) => Effect.succeed({ sum: n / 2, items: [1, n / 2] })
        })
        const error = yield* Effect.flip(def.execute({ n: 3 }, makeCtx()))
        assert.instanceOf(error, ToolOutputError)
        const outputError = error as ToolOutputError
        assert.strictEqual(outputError.code, "INVALID_TOOL_OUTPUT")
        assert.strictEqual(outputError.toolName, "half")
        assert.deepStrictEqual(outputError.violations, [
          "\"value.sum\": Expected an integer, actual 1.5",
          "\"value.items[1]\": Expected an integer, actual 1.5"
        ])
      }))

    it.effect("OUT-1: Date transformations decode arguments and encode the value (canonical ISO string)", () =>
      Effect.gen(function*() {
        let seen: unknown = undefined
        const def = Tool.fromSchema({
          name: "later",
          description: "",
          parameters: Schema.Struct({ at: Schema.Date, days: Schema.Int }),
          output: {
            schema: Schema.Struct({ at: Schema.Date }),
            render: (_args, value) => text(value.at.toISOString())
          },
          execute: ({ at, days }) =>
            Effect.sync(() => {
              seen = at
              return { at: new Date(at.getTime() + days * 86_400_000) }
            })
        })
        const value = yield* def.execute({ at: "2024-01-01T00:00:00.000Z", days: 2 }, makeCtx())
        assert.instanceOf(seen, Date)
        assert.deepStrictEqual(value, { at: "2024-01-03T00:00:00.000Z" })
        const bad = (yield* Effect.flip(def.execute({ at: "not a date", days: 1 }, makeCtx()))) as ToolArgsError
        assert.deepStrictEqual(bad.violations, ["\"at\": Expected a valid Date, actual Invalid Date"])
      }))

    it.effect("TYPES-2: excess keys of a returned value are stripped by encoding", () =>
      Effect.gen(function*() {
        const def = Tool.fromSchema({
          name: "strip",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Sum, render: () => [] },
          execute: () => Effect.succeed({ sum: 1, secret: "x" } as { sum: number })
        })
        assert.deepStrictEqual(yield* def.execute({}, makeCtx()), { sum: 1 })
      }))

    it.effect("TYPES-2: body failures pass through; a synchronous throw becomes a failure", () =>
      Effect.gen(function*() {
        const boom = new Error("boom")
        const failing = Tool.fromSchema({
          name: "f",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.String, render: () => [] },
          execute: () => Effect.fail(boom)
        })
        assert.strictEqual(yield* Effect.flip(failing.execute({}, makeCtx())), boom)
        const throwing = Tool.fromSchema({
          name: "t",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.String, render: () => [] },
          execute: (): Effect.Effect<string> => {
            throw boom
          }
        })
        assert.strictEqual(yield* Effect.flip(throwing.execute({}, makeCtx())), boom)
      }))

    it.effect("TYPES-2: Promise bodies are awaited; rejections are failures", () =>
      Effect.gen(function*() {
        const def = Tool.fromSchema({
          name: "p",
          description: "",
          parameters: Schema.Struct({ n: Schema.Int }),
          output: { schema: Schema.Int, render: () => [] },
          execute: async ({ n }) => {
            await Promise.resolve()
            if (n < 0) throw new Error("negative")
            return n * 2
          }
        })
        assert.strictEqual(yield* def.execute({ n: 4 }, makeCtx()), 8)
        const error = yield* Effect.flip(def.execute({ n: -1 }, makeCtx()))
        assert.strictEqual((error as Error).message, "negative")
      }))

    it.live("D-14: interrupting a Promise body waits until the promise settles", () =>
      Effect.gen(function*() {
        let settled = false
        const controller = new AbortController()
        const def = Tool.fromSchema({
          name: "slow",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.String, render: () => [] },
          execute: (_args, ctx) =>
            new Promise<string>((resolve) => {
              ctx.signal.addEventListener("abort", () =>
                setTimeout(() => {
                  settled = true
                  resolve("late")
                }, 20))
            })
        })
        const fiber = yield* Effect.fork(def.execute({}, makeCtx(controller.signal)))
        yield* Effect.sleep("5 millis")
        controller.abort()
        const exit = yield* Fiber.interrupt(fiber)
        assert.isTrue(Exit.isInterrupted(exit))
        assert.isTrue(settled)
      }))

    it.effect("DEF-3: the body's requirements flow into ToolDefinition<R>", () =>
      Effect.gen(function*() {
        class Multiplier extends Context.Tag("test/Multiplier")<Multiplier, number>() {}
        const def = Tool.fromSchema({
          name: "mul",
          description: "",
          parameters: Schema.Struct({ n: Schema.Number }),
          output: { schema: Schema.Number, render: () => [] },
          execute: ({ n }) => Effect.map(Multiplier, (m) => m * n)
        })
        const exact: Same<typeof def, Tool.ToolDefinition<Multiplier>> = true
        const promiseTool = Tool.fromSchema({
          name: "p",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.Number, render: () => [] },
          execute: async () => 1
        })
        const none: Same<typeof promiseTool, Tool.ToolDefinition<never>> = true
        Tool.fromSchema({
          name: "wrong",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.Number, render: () => [] },
          // @ts-expect-error the body must produce the output schema's type
          execute: () => Effect.succeed("not a number")
        })
        assert.isTrue(exact && none)
        const value = yield* def.execute({ n: 3 }, makeCtx()).pipe(Effect.provideService(Multiplier, 7))
        assert.strictEqual(value, 21)
      }))

    it.effect("D-6: an asynchronous parameter transformation fails as UNSUPPORTED_SCHEMA at call time", () =>
      Effect.gen(function*() {
        const counter = { calls: 0 }
        const Slow = Schema.transformOrFail(Schema.String, Schema.String, {
          decode: (s) => Effect.delay(Effect.succeed(s), "1 millis"),
          encode: ParseResult.succeed
        })
        const def = Tool.fromSchema({
          name: "async",
          description: "",
          parameters: Schema.Struct({ s: Slow }),
          output: { schema: Schema.String, render: () => [] },
          execute: ({ s }) =>
            Effect.sync(() => {
              counter.calls++
              return s
            })
        })
        const error = yield* Effect.flip(def.execute({ s: "x" }, makeCtx()))
        assert.instanceOf(error, JsonSchemaError)
        assert.deepStrictEqual((error as JsonSchemaError).violations, [
          "parameters: tool \"async\" needs an asynchronous transformation at \"s\" " +
          "(only synchronous schemas are supported)"
        ])
        assert.strictEqual(counter.calls, 0)
      }))

    it.effect("OUT-3: an asynchronous output encoding is INVALID_TOOL_OUTPUT", () =>
      Effect.gen(function*() {
        const Slow = Schema.transformOrFail(Schema.String, Schema.String, {
          decode: ParseResult.succeed,
          encode: (s) => Effect.delay(Effect.succeed(s), "1 millis")
        })
        const def = Tool.fromSchema({
          name: "slowOut",
          description: "",
          parameters: Schema.Struct({}),
          output: { schema: Schema.Struct({ s: Slow }), render: () => [] },
          execute: () => Effect.succeed({ s: "x" })
        })
        const error = (yield* Effect.flip(def.execute({}, makeCtx()))) as ToolOutputError
        assert.instanceOf(error, ToolOutputError)
        assert.deepStrictEqual(error.violations, [
          "\"value.s\": the schema needs an asynchronous transformation (only synchronous schemas are supported)"
        ])
      }))
  })

  describe("output callbacks", () => {
    it("OUT-3: output.validate decodes the canonical value and reports value paths", () => {
      const def = makeAdd()
      const validate = def.output.validate!
      assert.deepStrictEqual(validate({ sum: 3 }), [])
      assert.deepStrictEqual(validate({ sum: 1.5 }), ["\"value.sum\": Expected an integer, actual 1.5"])
      assert.deepStrictEqual(validate({}), ["missing required property \"value.sum\""])
      assert.deepStrictEqual(validate({ sum: 1, more: 2 }), [
        "\"value.more\" is not a declared property (additionalProperties: false)"
      ])
      assert.deepStrictEqual(validate("x"), [
        "\"value\": Expected { readonly sum: Int }, actual \"x\""
      ])
    })

    it("OUT-4: render and presentationMeta receive decoded, typed arguments and value", () => {
      const calls: Array<unknown> = []
      const def = Tool.fromSchema({
        name: "typed",
        description: "",
        parameters: Schema.Struct({ at: Schema.Date }),
        output: {
          schema: Schema.Struct({ until: Schema.Date }),
          render: (args, value) => {
            calls.push(args.at, value.until)
            return text(`${args.at.getUTCFullYear()}..${value.until.getUTCFullYear()}`)
          },
          presentationMeta: (args, value) => ({ span: value.until.getTime() - args.at.getTime() })
        },
        execute: ({ at }) => Effect.succeed({ until: at })
      })
      const args: JsonValue = { at: "2020-01-01T00:00:00.000Z" }
      const value: JsonValue = { until: "2021-01-01T00:00:00.000Z" }
      assert.deepStrictEqual(def.output.render(args, value), text("2020..2021"))
      assert.instanceOf(calls[0], Date)
      assert.instanceOf(calls[1], Date)
      assert.deepStrictEqual(def.output.presentationMeta!(args, value), { span: 366 * 86_400_000 })
      assert.strictEqual(
        thrownMessage(() => def.output.render(args, { until: 5 })),
        "fromSchema(typed): output.render received a value that does not decode: " +
          "\"value.until\": Expected string, actual 5"
      )
      assert.strictEqual(
        thrownMessage(() => def.output.render({}, value)),
        "fromSchema(typed): output.render received arguments that do not decode: missing required property \"at\""
      )
    })

    it("DEF-4: isConcurrencySafe is false on undecodable args or a throwing classifier", () => {
      const def = Tool.fromSchema({
        name: "c",
        description: "",
        parameters: Schema.Struct({ path: Schema.String }),
        output: { schema: Schema.String, render: () => [] },
        isConcurrencySafe: ({ path }) => {
          if (path === "throw") throw new Error("no")
          return path.startsWith("/read")
        },
        execute: ({ path }) => Effect.succeed(path)
      })
      const classify = def.isConcurrencySafe!
      assert.isTrue(classify({ path: "/read/x" }))
      assert.isFalse(classify({ path: "/write/x" }))
      assert.isFalse(classify({ path: 1 }))
      assert.isFalse(classify({ path: "/read", extra: 1 }))
      assert.isFalse(classify({ path: "throw" }))
      const hostile = new Proxy({}, {
        get: () => {
          throw new Error("trap")
        }
      })
      assert.isFalse(classify(hostile as JsonValue))
      assert.isUndefined(Tool.fromSchema({
        name: "h",
        description: "",
        parameters: Schema.Struct({ path: Schema.String }),
        output: { schema: Schema.String, render: () => [] },
        presentCall: () => ({ card: "generic", title: "x" }),
        execute: ({ path }) => Effect.succeed(path)
      }).presentCall!(hostile))
    })

    it("D-10: presenters return undefined on undecodable args or when they throw", () => {
      const def = Tool.fromSchema({
        name: "p",
        description: "",
        parameters: Schema.Struct({ path: Schema.String }),
        output: { schema: Schema.String, render: () => [] },
        presentCall: ({ path }) => {
          if (path === "throw") throw new Error("no")
          return { card: "generic", title: `read ${path}` }
        },
        presentResult: ({ path }, result) => {
          if (path === "throw") throw new Error("no")
          return { card: "generic", title: result.isError ? `failed ${path}` : `read ${path}` }
        },
        execute: ({ path }) => Effect.succeed(path)
      })
      assert.deepStrictEqual(def.presentCall!({ path: "a" }), { card: "generic", title: "read a" })
      assert.isUndefined(def.presentCall!({ path: 1 }))
      assert.isUndefined(def.presentCall!(undefined))
      assert.isUndefined(def.presentCall!({ path: "throw" }))
      const projection = { content: [], isError: true }
      assert.deepStrictEqual(def.presentResult!({ path: "a" }, projection), { card: "generic", title: "failed a" })
      assert.isUndefined(def.presentResult!({}, projection))
      assert.isUndefined(def.presentResult!({ path: "throw" }, projection))
    })
  })

  describe("properties", () => {
    const Rich = Schema.Struct({
      count: Schema.Int,
      name: Schema.NonEmptyString,
      mode: Schema.Literal("fast", "slow"),
      note: Schema.NullOr(Schema.String),
      at: Schema.Date.pipe(Schema.validDate()),
      shape: Schema.Union(
        Schema.TaggedStruct("Circle", { r: Schema.Finite }),
        Schema.TaggedStruct("Square", { side: Schema.Finite })
      ),
      choice: Schema.Union(Schema.Boolean, Schema.Literal(1, 2), Schema.Array(Schema.String)),
      pair: Schema.Tuple(Schema.String, Schema.Finite),
      scores: Schema.Record({ key: Schema.String, value: Schema.Int }),
      tags: Schema.optionalWith(Schema.Array(Schema.String.pipe(Schema.maxLength(5))), { exact: true })
    })
    const def = Tool.fromSchema({
      name: "rich",
      description: "",
      parameters: Schema.Struct({}),
      output: { schema: Rich, render: () => [] },
      execute: () => Effect.die("unused")
    })
    const encode = Schema.encodeSync(Rich)

    it.prop(
      "SCHEMA-1: the lossy subset schema is never stricter than the Effect schema (encoded values pass both)",
      [Arbitrary.make(Rich)],
      ([value]) => {
        const encoded = encode(value)
        const snap = Json.snapshot(encoded)
        if (snap._tag !== "Lossless") return
        assert.deepStrictEqual(JsonSchema.validate(def.output.schema, snap.value, "value"), [])
        assert.deepStrictEqual(def.output.validate!(snap.value), [])
      },
      { fastCheck: { numRuns: 100 } }
    )

    it.prop(
      "OUT-3: output.validate never throws and only accepts values the subset schema accepts",
      [FastCheck.jsonValue({ maxDepth: 4 })],
      ([value]) => {
        const snap = Json.snapshot(value)
        if (snap._tag !== "Lossless") return
        const violations = def.output.validate!(snap.value)
        assert.isArray(violations)
        if (violations.length === 0) {
          assert.deepStrictEqual(JsonSchema.validate(def.output.schema, snap.value, "value"), [])
        }
      },
      { fastCheck: { numRuns: 100 } }
    )
  })
})

// ---------------------------------------------------------------------------------------------
// issue 8 item 8 (JSON-4) and item 13(b)

/** Paths of every reachable object whose prototype is not the intrinsic `Object`/`Array` one. */
const foreignPrototypes = (root: unknown): Array<string> => {
  const out: Array<string> = []
  const stack: Array<readonly [unknown, string]> = [[root, "$"]]
  while (stack.length > 0) {
    const [node, path] = stack.pop()!
    if (typeof node !== "object" || node === null) continue
    const proto = Object.getPrototypeOf(node)
    if (proto !== Object.prototype && proto !== Array.prototype) out.push(path)
    for (const key of Object.keys(node)) {
      stack.push([Object.getOwnPropertyDescriptor(node, key)!.value, `${path}.${key}`])
    }
  }
  return out
}

const ownProto = (value: object): unknown => Object.getOwnPropertyDescriptor(value, "__proto__")?.value

/** A fromSchema tool over `parameters` whose body records the decoded arguments. */
const recording = <A, I>(parameters: Schema.Schema<A, I, never>) => {
  const seen: { args?: A } = {}
  const definition = Tool.fromSchema({
    name: "rec",
    description: "records its arguments",
    parameters,
    output: { schema: Schema.Null, render: () => [] },
    execute: (args) =>
      Effect.sync(() => {
        seen.args = args
        return null
      })
  })
  return { definition, seen }
}

const Meta = Schema.Record({ key: Schema.String, value: Schema.Unknown })

describe("issue 8 item 8: an own __proto__ key stays an own key (JSON-4, JSON-5)", () => {
  it.effect(
    "issue 8 item 8 / JSON-4: a Schema.Record argument keeps __proto__ as data; its prototype is Object.prototype",
    () =>
    Effect.gen(function*() {
      const { definition, seen } = recording(Schema.Struct({ meta: Meta }))
      const args = { meta: JSON.parse(`{"a":1,"__proto__":{"role":"admin"},"b":2}`) }
      yield* definition.execute(args, makeCtx())
      const meta = seen.args!.meta as Record<string, unknown>
      assert.strictEqual(Object.getPrototypeOf(meta), Object.prototype)
      assert.isUndefined(meta.role)
      assert.isTrue(Object.hasOwn(meta, "__proto__"))
      assert.deepStrictEqual(Object.keys(meta), ["a", "__proto__", "b"])
      assert.strictEqual(JSON.stringify(ownProto(meta)), `{"role":"admin"}`)
      assert.deepStrictEqual(foreignPrototypes(seen.args), [])
    }))

  it.scoped(
    "issue 8 item 8 / JSON-4: a model-supplied __proto__ key reaches a registered fromSchema body as an own key",
    () =>
    Effect.gen(function*() {
      const seen: Array<Record<string, unknown>> = []
      const definition = Tool.fromSchema({
        name: "tag",
        description: "stores metadata",
        parameters: Schema.Struct({ meta: Meta }),
        output: { schema: Schema.Struct({ meta: Meta }), render: () => text("stored") },
        execute: ({ meta }) =>
          Effect.sync(() => {
            seen.push(meta as Record<string, unknown>)
            return { meta }
          })
      })
      yield* (yield* ToolRegistry.ToolRegistry).register(definition)
      const runtime = yield* ToolRuntime.ToolRuntime
      const result = yield* runtime.execute({
        callId: "c1",
        name: "tag",
        arguments: JSON.parse(`{"meta":{"__proto__":{"role":"admin"}}}`)
      })
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(Object.getPrototypeOf(seen[0]), Object.prototype)
      assert.isUndefined(seen[0]!.role)
      assert.isTrue(Object.hasOwn(seen[0]!, "__proto__"))
      assert.isFalse(result.isError)
      assert.strictEqual(JSON.stringify(!result.isError && result.value), `{"meta":{"__proto__":{"role":"admin"}}}`)
      assert.deepStrictEqual(foreignPrototypes(!result.isError && result.value), [])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.effect(
    "issue 8 item 8 / JSON-4: index-signature structs, nested records, unions of records and records in arrays",
    () =>
    Effect.gen(function*() {
      const polluted = () => JSON.parse(`{"__proto__":{"role":"admin"}}`) as Record<string, unknown>
      const cases: ReadonlyArray<readonly [string, Schema.Schema<any, any, never>, unknown]> = [
        [
          "Struct with an index signature",
          Schema.Struct({ meta: Schema.Struct({ a: Schema.Number }, Meta) }),
          { meta: JSON.parse(`{"a":1,"__proto__":{"role":"admin"},"b":"x"}`) }
        ],
        [
          "nested records",
          Schema.Struct({ meta: Schema.Record({ key: Schema.String, value: Meta }) }),
          { meta: { x: polluted(), ...polluted() } }
        ],
        [
          "a union containing a record",
          Schema.Struct({
            meta: Schema.Union(
              Schema.String,
              Schema.Record({ key: Schema.String, value: Schema.Struct({ role: Schema.String }) })
            )
          }),
          { meta: polluted() }
        ],
        ["records in an array", Schema.Struct({ meta: Schema.Array(Meta) }), { meta: [polluted(), { b: polluted() }] }],
        [
          "a record under a transformation (optionalWith default)",
          Schema.Struct({ meta: Schema.optionalWith(Meta, { default: () => ({}) }) }),
          { meta: polluted() }
        ]
      ]
      for (const [label, parameters, args] of cases) {
        const { definition, seen } = recording(parameters)
        yield* definition.execute(args as JsonValue, makeCtx())
        assert.deepStrictEqual(foreignPrototypes(seen.args), [], label)
        assert.strictEqual(JSON.stringify(seen.args), JSON.stringify(args), label)
        assert.isUndefined((seen.args as { meta: { role?: unknown } }).meta.role, label)
      }
    }))

  it.effect(
    "issue 8 item 8 / JSON-4: primitive and null __proto__ values are kept; a bad value is reported at its path",
    () =>
    Effect.gen(function*() {
      const numbers = recording(
        Schema.Struct({ meta: Schema.Record({ key: Schema.String, value: Schema.NullOr(Schema.Number) }) })
      )
      yield* numbers.definition.execute({ meta: JSON.parse(`{"__proto__":5,"n":null}`) }, makeCtx())
      assert.strictEqual(JSON.stringify(numbers.seen.args), `{"meta":{"__proto__":5,"n":null}}`)
      yield* numbers.definition.execute({ meta: JSON.parse(`{"__proto__":null}`) }, makeCtx())
      assert.strictEqual(Object.getPrototypeOf(numbers.seen.args!.meta), Object.prototype)
      assert.isTrue(Object.hasOwn(numbers.seen.args!.meta, "__proto__"))
      const bad = yield* Effect.flip(
        numbers.definition.execute({ meta: JSON.parse(`{"a":"x","__proto__":{"role":"admin"}}`) }, makeCtx())
      )
      assert.instanceOf(bad, ToolArgsError)
      assert.deepStrictEqual((bad as ToolArgsError).violations, [
        `"meta.a": Expected number, actual "x"`,
        `"meta.a": Expected null, actual "x"`,
        `"meta.__proto__": Expected number, actual {"role":"admin"}`,
        `"meta.__proto__": Expected null, actual {"role":"admin"}`
      ])
      const closed = recording(Schema.Struct({ meta: Schema.Struct({ a: Schema.Number }) }))
      const excess = yield* Effect.flip(
        closed.definition.execute({ meta: JSON.parse(`{"a":1,"__proto__":{"role":"admin"}}`) }, makeCtx())
      )
      assert.deepStrictEqual((excess as ToolArgsError).violations, [
        `"meta.__proto__" is not a declared property (additionalProperties: false)`
      ])
    }))

  it.effect(
    "issue 8 item 8 / JSON-4: the encoded canonical value, output.validate and render keep own __proto__ keys",
    () =>
    Effect.gen(function*() {
      const rendered: Array<unknown> = []
      const definition = Tool.fromSchema({
        name: "out",
        description: "returns a record",
        parameters: Schema.Struct({}),
        output: {
          schema: Schema.Struct({ meta: Meta }),
          render: (_args, value) => {
            rendered.push(value)
            return text("ok")
          }
        },
        execute: () => Effect.succeed({ meta: JSON.parse(`{"a":1,"__proto__":{"role":"admin"}}`) })
      })
      const canonical = (yield* definition.execute({}, makeCtx())) as { readonly meta: object }
      assert.deepStrictEqual(foreignPrototypes(canonical), [])
      assert.strictEqual(JSON.stringify(canonical), `{"meta":{"a":1,"__proto__":{"role":"admin"}}}`)
      assert.deepStrictEqual(definition.output.validate!(canonical as JsonValue), [])
      definition.output.render({}, canonical as JsonValue)
      assert.deepStrictEqual(foreignPrototypes(rendered[0]), [])
      assert.strictEqual(JSON.stringify(rendered[0]), `{"meta":{"a":1,"__proto__":{"role":"admin"}}}`)
    }))

  type Tree = null | boolean | number | string | ReadonlyArray<Tree> | { readonly [key: string]: Tree }
  const Json: Schema.Schema<Tree> = Schema.suspend((): Schema.Schema<Tree> =>
    Schema.Union(
      Schema.Null,
      Schema.Boolean,
      Schema.Number,
      Schema.String,
      Schema.Array(Json),
      Schema.Record({ key: Schema.String, value: Json })
    )
  ).annotations({ identifier: "Json" })

  const withKeys = (entries: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> => {
    const out: Record<string, unknown> = {}
    for (const [key, value] of entries) {
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true })
    }
    return out
  }

  const { tree } = FastCheck.letrec<{ tree: unknown }>((tie) => ({
    tree: FastCheck.oneof(
      { depthSize: "small", withCrossShrink: true },
      FastCheck.oneof(FastCheck.constant(null), FastCheck.boolean(), FastCheck.integer(), FastCheck.string()),
      FastCheck.array(tie("tree"), { maxLength: 3 }),
      FastCheck.uniqueArray(
        FastCheck.tuple(FastCheck.constantFrom("a", "b", "__proto__", "constructor"), tie("tree")),
        { maxLength: 4, selector: ([key]) => key }
      ).map(withKeys)
    )
  }))

  it.prop(
    "issue 8 item 8 / JSON-4: a recursive union of records round-trips JSON with __proto__ keys unchanged",
    [tree],
    ([value]) => {
      let next: Tree = null
      const definition = Tool.fromSchema({
        name: "json",
        description: "returns any JSON",
        parameters: Schema.Struct({}),
        output: { schema: Json, render: () => [] },
        execute: () => Effect.succeed(next)
      })
      next = value as Tree
      const canonical = Effect.runSync(definition.execute({}, makeCtx()))
      assert.strictEqual(JSON.stringify(canonical), JSON.stringify(value))
      assert.deepStrictEqual(foreignPrototypes(canonical), [])
      assert.deepStrictEqual(definition.output.validate!(canonical as JsonValue), [])
    },
    { fastCheck: { numRuns: 200 } }
  )
})

describe("issue 8 item 13(b): fromSchema definition-time failures are typed", () => {
  it("issue 8 item 13(b) / D-21: every fromSchema definition failure is a ToolDefinitionError with its message", () => {
    const base = {
      name: "t",
      description: "d",
      parameters: Schema.Struct({}),
      output: { schema: Schema.String, render: () => [] },
      execute: () => Effect.succeed("x")
    }
    const throwingExecute = { ...base }
    Object.defineProperty(throwingExecute, "execute", {
      get: () => {
        throw new Error("boom")
      }
    })
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [null, "fromSchema(): options must be an object"],
      [throwingProxy(), "fromSchema(): options could not be read: hostile get"],
      [throwingExecute, "fromSchema(t): options could not be read: boom"],
      [{ ...base, name: 10n }, "fromSchema(): name must be a non-empty string"],
      [{ ...base, description: 1 }, "fromSchema(t): description must be a string"],
      [{ ...base, parameters: { type: "object" } }, "fromSchema(t): parameters must be an Effect Schema"],
      [{ ...base, parameters: throwingProxy() }, "fromSchema(t): parameters must be an Effect Schema"],
      [
        {
          ...base,
          parameters: new Proxy(Schema.Struct({}), {
            get: (target, key, receiver) => {
              if (key === "ast") throw new Error("hostile ast")
              return Reflect.get(target, key, receiver)
            }
          })
        },
        "fromSchema(t): parameters must be an Effect Schema"
      ],
      [{ ...base, output: undefined }, "fromSchema(t): must declare output { schema, render, presentationMeta? }"],
      [
        { ...base, output: { schema: Schema.String, render: () => [], presentationMeta: 1 } },
        "fromSchema(t): must declare output { schema, render, presentationMeta? }"
      ],
      [
        { ...base, output: { schema: { type: "string" }, render: () => [] } },
        "fromSchema(t): output.schema must be an Effect Schema"
      ],
      [{ ...base, execute: 5 }, "fromSchema(t): execute must be a function"],
      [{ ...base, presentCall: "card" }, "fromSchema(t): presentCall must be a function"],
      [{ ...base, finalizeContent: {} }, "fromSchema(t): finalizeContent must be a function"],
      [{ ...base, deferLoading: "yes" }, "fromSchema(t): deferLoading must be a boolean"],
      [
        { ...base, timeoutMs: 10n },
        "fromSchema(t): timeoutMs must be a positive finite number no greater than 2147483647"
      ]
    ]
    for (const [options, expected] of cases) {
      assert.strictEqual(definitionFailure(() => Tool.fromSchema(options as never)), expected)
    }
  })
})
