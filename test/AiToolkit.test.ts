import { Tool as AiTool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import * as Presets from "../layers/Presets.js"
import * as AiToolkit from "../src/AiToolkit.js"
import { ToolDefinitionError } from "../src/ToolError.js"
import { ToolRegistrationError, ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as Fx from "./fixtures/aiToolkit.js"
import { errorResult, info, text } from "./fixtures/runtime.js"

const execute = (name: string, args: unknown, agent?: string) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) =>
    runtime.execute({ callId: "c1", name, arguments: args, ...(agent === undefined ? {} : { agent }) }))

const failure = (message: string, code: string): ToolResult => errorResult(message, info("AiToolFailure", code))

const argsError = (...violations: Array<string>): ToolResult =>
  errorResult(`invalid arguments: ${violations.join("; ")}`, info("ToolArgsError", "INVALID_ARGS"))

const refusal = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect as Effect.Effect<A, E, ToolRegistry | Scope.Scope>), (error) => {
    assert.instanceOf(error, ToolDefinitionError)
    return (error as ToolDefinitionError).message
  })

describe("AiToolkit", () => {
  describe("registration and projection", () => {
    it.scoped("TYPES-1: the model sees each tool's @effect/ai JSON Schema and description", () => {
      const recorder: Fx.Recorder = { calls: [] }
      return Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        const schemas = yield* (yield* ToolRegistry).schemas()
        assert.deepStrictEqual<ReadonlyArray<unknown>>(schemas, [
          { name: "get_item", description: "Reads one item.", parameters: AiTool.getJsonSchema(Fx.GetItem) },
          { name: "delete_item", description: "", parameters: AiTool.getJsonSchema(Fx.DeleteItem) },
          { name: "probe", description: "", parameters: AiTool.getJsonSchema(Fx.Probe) }
        ])
        assert.deepStrictEqual(schemas[0]!.parameters, {
          type: "object",
          required: ["id"],
          properties: {
            id: { type: "string" },
            asOf: { type: "string", description: "a string to be decoded into a Date" }
          },
          additionalProperties: false
        })
        assert.deepStrictEqual(recorder.calls, [])
      }).pipe(Effect.provide(Fx.layer({}, recorder)))
    })

    it.scoped("TYPES-1: identifiers (a nested Class twice, Int, NonEmptyString) project as Tool.getJsonSchema does", () => {
      class Point extends Schema.Class<Point>("Point")({ x: Schema.Number, y: Schema.Number }) {}
      const Line = AiTool.make("line", {
        parameters: { from: Point, to: Point, steps: Schema.Int, tags: Schema.Array(Schema.NonEmptyString) }
      })
      const kit = Toolkit.make(Line)
      const seen: Array<unknown> = []
      return Effect.gen(function*() {
        yield* AiToolkit.register(kit)
        const [schema] = yield* (yield* ToolRegistry).schemas()
        assert.deepStrictEqual<unknown>(schema!.parameters, AiTool.getJsonSchema(Line))
        assert.isFalse(JSON.stringify(schema!.parameters).includes("$ref"))
        const args = { from: { x: 0, y: 0 }, to: { x: 3, y: 4 }, steps: 2, tags: ["a"] }
        assert.isFalse((yield* execute("line", args)).isError)
        assert.instanceOf((seen[0] as { from: unknown }).from, Point)
      }).pipe(Effect.provide(Layer.merge(
        Presets.layerTest(),
        kit.toLayer({ line: (params) => Effect.sync(() => void seen.push(params)) })
      )))
    })

    it.scoped("TYPES-1: a description annotation on the parameters schema is used when the tool has none", () => {
      const Described = AiTool.make("described", {
        parameters: { q: Schema.String }
      }).setParameters(Schema.Struct({ q: Schema.String }).annotations({ description: "Searches." }))
      const kit = Toolkit.make(Described)
      return Effect.gen(function*() {
        yield* AiToolkit.register(kit)
        const schemas = yield* (yield* ToolRegistry).schemas()
        assert.deepStrictEqual(schemas.map((s) => [s.name, s.description]), [["described", "Searches."]])
        assert.strictEqual(AiTool.getDescription(Described), "Searches.")
      }).pipe(Effect.provide(Layer.merge(Presets.layerTest(), kit.toLayer({ described: () => Effect.void }))))
    })

    it.scoped("REG-2: closing the registration's scope unregisters every tool of the toolkit", () =>
      Effect.gen(function*() {
        const registry = yield* ToolRegistry
        const scope = yield* Scope.make()
        yield* Scope.extend(AiToolkit.register(Fx.Items), scope)
        assert.deepStrictEqual((yield* registry.schemas()).map((s) => s.name), ["get_item", "delete_item", "probe"])
        yield* Scope.close(scope, Exit.void)
        assert.deepStrictEqual(yield* registry.schemas(), [])
        assert.deepStrictEqual(
          yield* execute("get_item", { id: "a" }),
          errorResult("unknown tool \"get_item\"", info("ToolNotFoundError", "UNKNOWN_TOOL"))
        )
      }).pipe(Effect.provide(Fx.layer())))

    it.scoped("REG-1: registration is all or nothing: a duplicate name leaves none of the toolkit registered", () =>
      Effect.gen(function*() {
        const registry = yield* ToolRegistry
        const Clash = Toolkit.make(AiTool.make("fresh"), AiTool.make("get_item"))
        yield* AiToolkit.register(Fx.Items, { tools: { get_item: {} } })
        const error = yield* Effect.flip(
          AiToolkit.register(Clash).pipe(
            Effect.provide(Clash.toLayer({ fresh: () => Effect.void, get_item: () => Effect.void }))
          )
        )
        assert.instanceOf(error, ToolRegistrationError)
        assert.strictEqual(
          error.message,
          "tool \"get_item\" is already registered (for a per-agent variant, register through `register(definition, { agent })` instead)"
        )
        assert.deepStrictEqual((yield* registry.schemas()).map((s) => s.name), ["get_item", "delete_item", "probe"])
      }).pipe(Effect.provide(Fx.layer())))

    it.scoped("SCOPE-2: registered for one agent, the tools are visible to that agent only", () =>
      Effect.gen(function*() {
        const registry = yield* ToolRegistry
        yield* AiToolkit.register(Fx.Items, { agent: "A" })
        assert.deepStrictEqual(yield* registry.schemas(), [])
        assert.deepStrictEqual((yield* registry.schemas("B")).map((s) => s.name), [])
        assert.deepStrictEqual((yield* registry.schemas("A")).map((s) => s.name), ["get_item", "delete_item", "probe"])
        assert.deepStrictEqual(
          yield* execute("probe", {}),
          errorResult("unknown tool \"probe\"", info("ToolNotFoundError", "UNKNOWN_TOOL"))
        )
        assert.deepStrictEqual(yield* execute("probe", {}, "A"), { isError: false, value: 1, content: text("1") })
      }).pipe(Effect.provide(Fx.layer())))

    it.scoped("REG-2: AiToolkit.layer keeps the tools registered while the Layer lives", () =>
      Effect.gen(function*() {
        const names = yield* Effect.scoped(
          Effect.gen(function*() {
            const context = yield* Layer.build(AiToolkit.layer(Fx.Items, { prefix: "kit_" }))
            assert.isTrue(Context.isContext(context))
            return (yield* (yield* ToolRegistry).schemas()).map((s) => s.name)
          })
        )
        assert.deepStrictEqual(names, ["kit_get_item", "kit_delete_item", "kit_probe"])
        assert.deepStrictEqual(yield* (yield* ToolRegistry).schemas(), [])
      }).pipe(Effect.provide(Fx.layer())))

    it.scoped("D-6: a provider-defined tool, a missing handler and an unknown override are refused", () =>
      Effect.gen(function*() {
        const Provided = AiTool.providerDefined({
          id: "openai.web_search",
          toolkitName: "web_search",
          providerName: "web_search",
          args: {}
        })({})
        const kit = Toolkit.make(Provided)
        assert.strictEqual(
          yield* refusal(AiToolkit.register(kit as never)),
          "AiToolkit: tool \"web_search\" is provider-defined; only user-defined tools can run in the runtime"
        )
        assert.strictEqual(
          yield* refusal(AiToolkit.register(Toolkit.make(AiTool.make("unhandled")))),
          "AiToolkit: no handler for tool \"unhandled\" in context (provide the Layer of toolkit.toLayer(...))"
        )
        assert.strictEqual(
          yield* refusal(AiToolkit.register(Fx.Items, { tools: { nope: {} } as never })),
          "AiToolkit: options.tools names \"nope\", which is not a tool of the toolkit"
        )
        assert.strictEqual(
          yield* refusal(AiToolkit.register(Fx.Items, { prefix: 3 as never })),
          "AiToolkit: options.prefix must be a string"
        )
        assert.deepStrictEqual(yield* (yield* ToolRegistry).schemas(), [])
      }).pipe(Effect.provide(Fx.layer())))
  })
  describe("calls", () => {
    it.scoped("OUT-1: a success is encoded with the success schema (Date, NumberFromString) and rendered as JSON text", () => {
      const recorder: Fx.Recorder = { calls: [] }
      return Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        const result = yield* execute("get_item", { id: "a", asOf: "2024-01-01T00:00:00.000Z" })
        const value = { id: "a", updatedAt: "2024-01-02T00:00:00.000Z", size: "42" }
        assert.deepStrictEqual(result, { isError: false, value, content: text(JSON.stringify(value)) })
        assert.deepStrictEqual(recorder.calls, [
          { tool: "get_item", params: { id: "a", asOf: new Date("2024-01-01T00:00:00.000Z") } }
        ])
        assert.instanceOf((recorder.calls[0]!.params as Fx.Params).asOf, Date)
      }).pipe(Effect.provide(Fx.layer({}, recorder)))
    })

    it.scoped("DEF-3 / OUT-1: the handler sees the same decoded parameters, and the value is the same encoding, as toolkit.handle", () => {
      const recorder: Fx.Recorder = { calls: [] }
      return Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        const args = { id: "b", asOf: "2023-05-06T07:08:09.000Z" }
        const ours = yield* execute("get_item", args)
        const kit = yield* Fx.Items
        const theirs = yield* kit.handle("get_item", args as never)
        assert.strictEqual(recorder.calls.length, 2)
        assert.deepStrictEqual(recorder.calls[0], recorder.calls[1])
        assert.isFalse(theirs.isFailure)
        assert.isFalse(ours.isError)
        assert.deepStrictEqual(ours.isError ? undefined : ours.value, theirs.encodedResult)
        assert.strictEqual(Fx.textOf(ours), JSON.stringify(theirs.encodedResult))
      }).pipe(Effect.provide(Fx.layer({}, recorder)))
    })

    it.scoped("OUT-2: a void success (the @effect/ai default) is the canonical value null", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        assert.deepStrictEqual(yield* execute("delete_item", { id: "a" }), {
          isError: false,
          value: null,
          content: text("null")
        })
      }).pipe(Effect.provide(Fx.layer())))

    it.scoped("DEF-3: arguments that do not decode are INVALID_ARGS and the handler never runs", () => {
      const recorder: Fx.Recorder = { calls: [] }
      return Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        assert.deepStrictEqual(yield* execute("get_item", {}), argsError("missing required property \"id\""))
        assert.deepStrictEqual(
          yield* execute("get_item", { id: 1 }),
          argsError("\"id\": Expected string, actual 1")
        )
        assert.deepStrictEqual(
          yield* execute("get_item", { id: "a", asOf: "not a date" }),
          argsError("\"asOf\": Expected a valid Date, actual Invalid Date")
        )
        assert.deepStrictEqual(
          yield* execute("get_item", { id: "a", extra: true }),
          argsError("\"extra\" is not a declared property (additionalProperties: false)")
        )
        assert.deepStrictEqual(yield* execute("get_item", "{\"id\": "), argsError("\"arguments\" must be an object"))
        assert.deepStrictEqual(
          yield* execute("probe", { stray: 1 }),
          argsError("\"stray\": Expected never, actual 1")
        )
        assert.deepStrictEqual(recorder.calls, [])
      }).pipe(Effect.provide(Fx.layer({}, recorder)))
    })

    it.scoped("ERR-1: a failure of the failure schema becomes an error result coded with its _tag", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        assert.deepStrictEqual(
          yield* execute("get_item", { id: "gone" }),
          failure("no item gone", "NotFound")
        )
        assert.deepStrictEqual(yield* execute("get_item", { id: "quota" }), failure("{\"reason\":\"quota\"}", "TOOL_FAILURE"))
        assert.deepStrictEqual(yield* execute("get_item", { id: "text" }), failure("disk full", "TOOL_FAILURE"))
        assert.strictEqual(AiToolkit.FAILURE_CODE, "TOOL_FAILURE")
      }).pipe(Effect.provide(Fx.layer({
        get: ({ id }) =>
          id === "gone"
            ? Effect.fail(new Fx.NotFound({ id, message: `no item ${id}` }))
            : id === "quota"
            ? Effect.fail({ reason: "quota" as const })
            : Effect.fail("disk full")
      }))))

    it.scoped("OUT-3: a failure outside the failure schema (a look-alike of a tagged error) is INVALID_TOOL_OUTPUT", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        assert.deepStrictEqual(
          yield* execute("delete_item", { id: "a" }),
          errorResult(
            "tool \"delete_item\" returned invalid output: \"failure\": Expected NotFound, actual {\"_tag\":\"NotFound\",\"id\":\"a\"}",
            info("ToolOutputError", "INVALID_TOOL_OUTPUT")
          )
        )
      }).pipe(Effect.provide(Fx.layer({ delete: () => Effect.fail({ _tag: "NotFound", id: "a" }) }))))

    it.scoped("OUT-3: a success outside the success schema is INVALID_TOOL_OUTPUT", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        const result = yield* execute("get_item", { id: "a" })
        assert.deepStrictEqual(
          result,
          errorResult(
            "tool \"get_item\" returned invalid output: \"value.updatedAt\": Expected DateFromSelf, actual \"yesterday\"",
            info("ToolOutputError", "INVALID_TOOL_OUTPUT")
          )
        )
      }).pipe(Effect.provide(Fx.layer({ get: ({ id }) => Effect.succeed({ id, updatedAt: "yesterday", size: 1 } as never) }))))

    it.scoped("ERR-1: a defect stays a defect: the runtime's plain error result, no code", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items)
        assert.deepStrictEqual(yield* execute("probe", {}), errorResult("boom"))
      }).pipe(Effect.provide(Fx.layer({ probe: () => Effect.die(new Error("boom")) }))))

    it.scoped("the handler runs with its Layer's services and the tool's declared dependencies from registration", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Greeter).pipe(Effect.provideService(Fx.Greeting, "hello"))
        assert.deepStrictEqual(yield* execute("greet", { name: "Ada" }), {
          isError: false,
          value: "hello, Ada",
          content: text("\"hello, Ada\"")
        })
      }).pipe(Effect.provide(Layer.merge(Presets.layerTest(), Fx.greeterHandlers))))
  })
  describe("other @effect/ai tool shapes", () => {
    class Search extends Schema.TaggedRequest<Search>()("Search", {
      success: Schema.Array(Schema.String),
      failure: Schema.Never,
      payload: { q: Schema.String }
    }) {}
    const Requests = Toolkit.make(AiTool.fromTaggedRequest(Search))
    const Returning = AiTool.make("returning", {
      parameters: { n: Schema.Number },
      success: Schema.Number,
      failure: Schema.String,
      failureMode: "return"
    })
    const ReturningKit = Toolkit.make(Returning)

    it.scoped("a Schema.TaggedRequest tool: the handler receives the request instance", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Requests)
        const schemas = yield* (yield* ToolRegistry).schemas()
        assert.deepStrictEqual<ReadonlyArray<unknown>>(schemas, [
          { name: "Search", description: "", parameters: AiTool.getJsonSchema(AiTool.fromTaggedRequest(Search)) }
        ])
        assert.deepStrictEqual(yield* execute("Search", { _tag: "Search", q: "effect" }), {
          isError: false,
          value: ["effect", "true"],
          content: text("[\"effect\",\"true\"]")
        })
      }).pipe(Effect.provide(Layer.merge(
        Presets.layerTest(),
        Requests.toLayer({ Search: (request) => Effect.succeed([request.q, String(request instanceof Search)]) })
      ))))

    it.scoped("ERR-1: failureMode \"return\" failures are error results like \"error\" ones", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(ReturningKit)
        assert.deepStrictEqual(yield* execute("returning", { n: 1 }), failure("nope", "TOOL_FAILURE"))
      }).pipe(Effect.provide(Layer.merge(Presets.layerTest(), ReturningKit.toLayer({ returning: () => Effect.fail("nope") })))))

    it("the handlers are a requirement of register until toolkit.toLayer(...) provides them", () => {
      const needs: Effect.Effect<void, AiToolkit.RegisterError, ToolRegistry | Scope.Scope | AiTool.Handler<"returning">> =
        AiToolkit.register(ReturningKit)
      const provided: Effect.Effect<void, AiToolkit.RegisterError, ToolRegistry | Scope.Scope> = needs.pipe(
        Effect.provide(ReturningKit.toLayer({ returning: ({ n }) => Effect.succeed(n) }))
      )
      const withDependency: Effect.Effect<void, AiToolkit.RegisterError, ToolRegistry | Scope.Scope | Fx.Greeting> =
        AiToolkit.register(Fx.Greeter).pipe(Effect.provide(Fx.greeterHandlers))
      assert.isTrue(Effect.isEffect(provided) && Effect.isEffect(withDependency))
    })
  })
})
