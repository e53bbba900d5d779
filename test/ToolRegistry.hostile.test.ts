/**
 * Issue 8 items 11 and 12: the registry snapshots every definition field once at registration,
 * refuses what is not of the right kind with a typed `ToolRegistrationError`, never reads the
 * user's definition again, and compiles output validators per (definition, checked schema).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck, Layer, Option, Scope } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as Presets from "../layers/Presets.js"
import type { JsonValue } from "../src/Json.js"
import * as Presentation from "../src/Presentation.js"
import type * as Tool from "../src/Tool.js"
import * as ToolRegistry from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as Hostile from "./fixtures/hostile.js"

type Def = Tool.ToolDefinition<never>
type Mutable<T> = { -readonly [K in keyof T]: T[K] }

const text = (value: string) => [{ type: "text" as const, text: value }]

const def = (name: string, extra: Record<string, unknown> = {}): Mutable<Def> =>
  ({
    name,
    description: `${name} tool`,
    parameters: { type: "object", properties: {} },
    output: {
      schema: { type: "string" },
      render: (_args: JsonValue, value: JsonValue) => text(String(value))
    },
    execute: () => Effect.succeed(name),
    ...extra
  }) as Mutable<Def>

const withScope = <A, E, R>(effect: Effect.Effect<A, E, R | Scope.Scope>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Scope.extend(effect, scope)
    return scope
  })

const run = (name: string, args: unknown = {}) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) => runtime.execute({ callId: "c1", name, arguments: args }))

/** The registry keeps working for every reader after whatever `register` did. */
const stillWorks = (registry: ToolRegistry.Service, name: string) =>
  Effect.gen(function*() {
    const schemas = yield* registry.schemas()
    ToolRegistry.toOpenAiTools(schemas)
    ToolRegistry.toAnthropicTools(schemas)
    yield* registry.get(name)
    yield* registry.executionMode({ name, arguments: {} })
    for (const tool of registry.unsafeView().tools) {
      Presentation.presentCall(tool.definition, {})
      Presentation.presentResult(tool.definition, {}, { content: [], isError: false })
    }
    return schemas
  })

describe("issue 8 item 11: output validators follow the checked schema", () => {
  it.scoped(
    "issue 8 item 11: re-registering the same definition after replacing output.schema uses the new schema",
    () =>
    Effect.gen(function*() {
      const registry = yield* InMemoryToolRegistry.make()
      const definition = def("s")
      const first = yield* withScope(registry.register(definition))
      assert.deepStrictEqual(registry.unsafeView().get("s")!.validateOutput(1, "value"), [`"value" must be a string`])
      yield* Scope.close(first, Exit.void)
      definition.output = { ...definition.output, schema: { type: "number" } }
      yield* registry.register(definition)
      const validate = registry.unsafeView().get("s")!.validateOutput
      assert.deepStrictEqual(validate(1, "value"), [])
      assert.deepStrictEqual(validate("x", "value"), [`"value" must be a number`])
      assert.deepStrictEqual(registry.unsafeView().get("s")!.definition.output.schema, { type: "number" })
    }))

  it.scoped(
    "issue 8 item 11: a schema mutated in place is recompiled; an unchanged schema reuses the compiled one",
    () =>
    Effect.gen(function*() {
      const registry = yield* InMemoryToolRegistry.make()
      const schema: Record<string, unknown> = { type: "string" }
      const definition = def("s", { output: { schema, render: () => [] } })
      const first = yield* withScope(registry.register(definition))
      const asString = registry.unsafeView().get("s")!.validateOutput
      yield* registry.register(definition, { agent: "A" })
      assert.strictEqual(registry.unsafeView("A").get("s")!.validateOutput, asString)
      yield* Scope.close(first, Exit.void)
      schema.type = "integer"
      const second = yield* withScope(registry.register(definition))
      const asInteger = registry.unsafeView().get("s")!.validateOutput
      assert.notStrictEqual(asInteger, asString)
      assert.deepStrictEqual(asInteger(1.5, "value"), [`"value" must be an integer`])
      assert.deepStrictEqual(asInteger(2, "value"), [])
      assert.deepStrictEqual(registry.unsafeView("A").get("s")!.validateOutput(2, "value"), [
        `"value" must be a string`
      ])
      yield* Scope.close(second, Exit.void)
      schema.type = "string"
      yield* registry.register(definition)
      assert.strictEqual(registry.unsafeView().get("s")!.validateOutput, asString)
    }))

  it.scoped("issue 8 item 11 / OUT-3: a call sees the schema of the registration it runs against", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.ToolRegistry
      const definition = def("n", { execute: () => Effect.succeed(1) })
      const first = yield* withScope(registry.register(definition))
      const before = yield* run("n")
      assert.strictEqual(
        before.isError && before.error.message,
        `tool "n" returned invalid output: "value" must be a string`
      )
      yield* Scope.close(first, Exit.void)
      definition.output = { schema: { type: "number" }, render: (_args, value) => text(String(value)) }
      yield* registry.register(definition)
      assert.deepStrictEqual(yield* run("n"), { isError: false, value: 1, content: text("1") })
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("issue 8 item 12: every field is snapshotted once and checked", () => {
  it.scoped(
    "issue 8 item 12: a description getter that throws is a typed registration failure; schemas() keeps working",
    () =>
    Effect.gen(function*() {
      const registry = yield* InMemoryToolRegistry.make()
      yield* registry.register(def("ok"))
      const hostile = def("d")
      Object.defineProperty(hostile, "description", {
        enumerable: true,
        get: () => {
          throw new Error("boom")
        }
      })
      const exit = yield* Effect.exit(registry.register(hostile))
      assert.isTrue(Exit.isFailure(exit) && Cause.isFailType(exit.cause))
      const error = Option.getOrThrow(Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none())
      assert.instanceOf(error, ToolRegistry.ToolRegistrationError)
      assert.strictEqual(error._tag, "ToolRegistrationError")
      assert.strictEqual(error.message, `tool "d" definition could not be read: boom`)
      assert.deepStrictEqual(
        (yield* stillWorks(registry, "d")).map((schema) => schema.name),
        ["ok"]
      )
      assert.isTrue(Option.isNone(yield* registry.get("d")))
    }))

  it.scoped("issue 8 item 12: fields of the wrong kind are refused with typed errors (execute: 5 included)", () =>
    Effect.gen(function*() {
      const registry = yield* InMemoryToolRegistry.make()
      const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
        [{ execute: 5 }, `tool "x" execute must be a function`],
        [{ execute: undefined }, `tool "x" execute must be a function`],
        [{ execute: "() => 1" }, `tool "x" execute must be a function`],
        [{ description: 5 }, `tool "x" description must be a string`],
        [{ description: undefined }, `tool "x" description must be a string`],
        [{ description: 10n }, `tool "x" description must be a string`],
        [{ isConcurrencySafe: true }, `tool "x" isConcurrencySafe must be a function`],
        [{ finalizeContent: [] }, `tool "x" finalizeContent must be a function`],
        [{ projectContent: {} }, `tool "x" projectContent must be a function`],
        [{ presentCall: "card" }, `tool "x" presentCall must be a function`],
        [{ presentResult: null }, `tool "x" presentResult must be a function`],
        [{ deferLoading: "yes" }, `tool "x" deferLoading must be a boolean`],
        [{ deferLoading: 10n }, `tool "x" deferLoading must be a boolean`],
        [{ timeoutMs: 10n }, `tool "x" timeoutMs must be a positive finite number no greater than 2147483647`],
        [{ name: 10n }, `tool name must be a non-empty string`],
        [
          { parameters: { type: "object", default: 10n } },
          `tool "x" parameters must be a lossless JSON object schema with type "object"`
        ],
        [
          { output: { schema: { type: "string" }, render: () => [], validate: 3 } },
          `tool "x" output.validate must be a function`
        ]
      ]
      for (const [extra, expected] of cases) {
        const error = yield* Effect.flip(registry.register(def("x", extra)))
        assert.strictEqual(error._tag, "ToolRegistrationError", expected)
        assert.strictEqual(error.message, expected)
      }
      const schema = yield* Effect.flip(
        registry.register(def("x", { output: { schema: { type: "string", default: 10n }, render: () => [] } }))
      )
      assert.strictEqual(schema._tag, "JsonSchemaError")
      assert.strictEqual(
        schema.message,
        "unsupported JSON schema: schema.default annotation must be lossless JSON data"
      )
      assert.deepStrictEqual(yield* stillWorks(registry, "x"), [])
    }))

  it.scoped("issue 8 item 12: hostile definition objects are typed failures, never defects; null prototypes work", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.ToolRegistry
      const valid = def("p")
      const trapped = new Proxy(valid, {
        get: (target, key, receiver) => {
          if (key === "presentResult") throw new Error("hostile presentResult")
          return Reflect.get(target, key, receiver)
        }
      })
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [Hostile.throwingProxy(), `tool "undefined" definition could not be read: hostile get`],
        [trapped, `tool "p" definition could not be read: hostile presentResult`],
        [
          Hostile.revokedProxy(),
          `tool "undefined" definition could not be read: Cannot perform 'get' on a proxy that has been revoked`
        ],
        [def("o", { output: Hostile.throwingProxy() }), `tool "o" definition could not be read: hostile get`],
        [
          def("o", { output: Hostile.revokedProxy() }),
          `tool "o" definition could not be read: Cannot perform 'get' on a proxy that has been revoked`
        ]
      ]
      for (const [definition, expected] of cases) {
        const exit = yield* Effect.exit(registry.register(definition as Def))
        assert.isTrue(Exit.isFailure(exit) && Cause.isFailType(exit.cause), expected)
        const error = Option.getOrThrow(Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none())
        assert.strictEqual(error._tag, "ToolRegistrationError")
        assert.strictEqual(error.message, expected)
      }
      const unprintable = yield* Effect.flip(registry.register(def("o", { name: Hostile.nullProto() })))
      assert.strictEqual(unprintable.message, "tool name must be a non-empty string")
      const noOutput = yield* Effect.flip(registry.register(def("o", { name: Hostile.nullProto(), output: 1 })))
      assert.strictEqual(
        noOutput.message,
        `tool "<unprintable>" must declare output { schema, render, presentationMeta? }`
      )
      assert.deepStrictEqual(yield* stillWorks(registry, "p"), [])
      const output = Hostile.nullProto({
        schema: { type: "string" },
        render: (_a: unknown, v: unknown) => text(String(v))
      })
      const nullPrototype = Hostile.nullProto({
        name: "np",
        description: "null prototype",
        parameters: Hostile.nullProto({ type: "object" }),
        output,
        execute: () => Effect.succeed("ran")
      })
      yield* registry.register(nullPrototype as Def)
      assert.deepStrictEqual(yield* stillWorks(registry, "np"), [
        { name: "np", description: "null prototype", parameters: { type: "object" } }
      ])
      assert.deepStrictEqual(yield* run("np"), { isError: false, value: "ran", content: text("ran") })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("issue 8 item 12: each field is read once, at registration; later reads never reach the definition", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.ToolRegistry
      const thisSeen: Record<string, unknown> = {}
      const output = Hostile.counted({
        schema: { type: "string" },
        render(this: unknown, _args: unknown, value: unknown) {
          thisSeen.render = this
          return text(String(value))
        },
        presentationMeta(this: unknown) {
          thisSeen.presentationMeta = this
          return { shown: true }
        },
        validate(this: unknown) {
          thisSeen.validate = this
          return []
        }
      })
      const definition = Hostile.counted({
        name: "once",
        description: "read once",
        parameters: { type: "object" },
        deferLoading: true,
        output: output.value,
        execute(this: unknown) {
          thisSeen.execute = this
          return Effect.succeed("v")
        },
        timeoutMs: 1000,
        isConcurrencySafe(this: unknown) {
          thisSeen.isConcurrencySafe = this
          return true
        },
        finalizeContent(this: unknown) {
          thisSeen.finalizeContent = this
          return undefined
        },
        projectContent(this: unknown) {
          thisSeen.projectContent = this
          return undefined
        },
        presentCall(this: unknown) {
          thisSeen.presentCall = this
          return undefined
        },
        presentResult(this: unknown) {
          thisSeen.presentResult = this
          return undefined
        }
      })
      yield* registry.register(definition.value as Def)
      const once = (reads: ReadonlyMap<string, number>) =>
        Object.fromEntries(Array.from(reads.keys()).sort().map((key) => [key, reads.get(key)]))
      const expectedDefinition = {
        deferLoading: 1,
        description: 1,
        execute: 1,
        finalizeContent: 1,
        isConcurrencySafe: 1,
        name: 1,
        output: 1,
        parameters: 1,
        presentCall: 1,
        presentResult: 1,
        projectContent: 1,
        timeoutMs: 1
      }
      const expectedOutput = { presentationMeta: 1, render: 1, schema: 1, validate: 1 }
      assert.deepStrictEqual(once(definition.reads), expectedDefinition)
      assert.deepStrictEqual(once(output.reads), expectedOutput)

      const schemas = yield* registry.schemas()
      assert.deepStrictEqual(schemas, [
        { name: "once", description: "read once", parameters: { type: "object" }, deferLoading: true }
      ])
      assert.strictEqual(yield* registry.executionMode({ name: "once", arguments: {} }), "parallel")
      const result = yield* run("once")
      assert.deepStrictEqual(result, { isError: false, value: "v", content: text("v"), meta: { shown: true } })
      const registered = Option.getOrThrow(yield* registry.get("once"))
      assert.strictEqual(registered.timeoutMs, 1000)
      Presentation.presentCall(registered, {})
      Presentation.presentResult(registered, {}, { content: [], isError: false })
      assert.deepStrictEqual(once(definition.reads), expectedDefinition)
      assert.deepStrictEqual(once(output.reads), expectedOutput)
      for (
        const key of [
          "execute",
          "isConcurrencySafe",
          "finalizeContent",
          "projectContent",
          "presentCall",
          "presentResult"
        ]
      ) {
        assert.strictEqual(thisSeen[key], definition.value, `${key} is called with the definition as this`)
      }
      for (const key of ["render", "presentationMeta", "validate"]) {
        assert.strictEqual(thisSeen[key], output.value, `output.${key} is called with the output as this`)
      }
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("issue 8 item 12: a definition whose getters start throwing after registration changes nothing", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.ToolRegistry
      let armed = false
      const base = def("late", { isConcurrencySafe: () => true })
      const definition = new Proxy(base, {
        get: (target, key, receiver) => {
          if (armed) throw new Error("late trap")
          return Reflect.get(target, key, receiver)
        },
        getOwnPropertyDescriptor: (target, key) => {
          if (armed) throw new Error("late trap")
          return Reflect.getOwnPropertyDescriptor(target, key)
        }
      })
      yield* registry.register(definition)
      armed = true
      assert.deepStrictEqual((yield* stillWorks(registry, "late")).map((schema) => schema.name), ["late"])
      assert.strictEqual(yield* registry.executionMode({ name: "late", arguments: {} }), "parallel")
      assert.deepStrictEqual(yield* run("late"), { isError: false, value: "late", content: text("late") })
    }).pipe(Effect.provide(Presets.layerTest())))
})

const FIELDS = [
  "definition",
  "name",
  "description",
  "parameters",
  "deferLoading",
  "output",
  "output.schema",
  "output.render",
  "output.presentationMeta",
  "output.validate",
  "execute",
  "timeoutMs",
  "isConcurrencySafe",
  "finalizeContent",
  "projectContent",
  "presentCall",
  "presentResult"
] as const

const withHostile = (field: typeof FIELDS[number], value: unknown): unknown => {
  if (field === "definition") return value
  const definition = def("h", { isConcurrencySafe: () => true })
  if (field.startsWith("output.")) {
    definition.output = { ...definition.output, [field.slice("output.".length)]: value }
  } else {
    ;(definition as Record<string, unknown>)[field] = value
  }
  return definition
}

describe("issue 8 item 12: property", () => {
  it.live.prop(
    "issue 8 item 12: a hostile value in any field is a typed refusal or a working tool; no reader ever dies",
    { field: FastCheck.constantFrom(...FIELDS), hostile: Hostile.arbitrary({ name: "h" }) },
    ({ field, hostile }) =>
      Effect.gen(function*() {
        const registry = yield* ToolRegistry.ToolRegistry
        const exit = yield* Effect.exit(registry.register(withHostile(field, hostile()) as Def))
        if (Exit.isFailure(exit)) {
          assert.isTrue(Cause.isFailType(exit.cause), `${field} / ${String(hostile)}: a failure, not a defect`)
          const error = Option.getOrThrow(Cause.failureOption(exit.cause))
          assert.include(["ToolRegistrationError", "JsonSchemaError"], error._tag)
          assert.isString(error.message)
        }
        yield* stillWorks(registry, "h")
        const result = yield* run("h")
        assert.isBoolean(result.isError)
        assert.isTrue(Exit.isSuccess(exit) || result.isError)
      }).pipe(Effect.scoped, Effect.provide(Layer.fresh(Presets.layerTest()))),
    { fastCheck: { numRuns: 200 } }
  )
})
