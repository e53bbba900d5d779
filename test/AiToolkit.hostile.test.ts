import { Tool as AiTool, Toolkit } from "@effect/ai"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema, Scope } from "effect"
import * as Presets from "../layers/Presets.js"
import * as AiToolkit from "../src/AiToolkit.js"
import { ToolDefinitionError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as Fx from "./fixtures/aiToolkit.js"
import * as Hostile from "./fixtures/hostile.js"
import { ARGS_NOT_LOSSLESS, errorResult, info } from "./fixtures/runtime.js"

const execute = (name: string, args: unknown) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) => runtime.execute({ callId: "c1", name, arguments: args }))

const failure = (message: string, code: string): ToolResult => errorResult(message, info("AiToolFailure", code))

const FAILED = "tool \"probe\" failed"

/**
 * What the model sees for each hostile failure value of a tool whose failure schema is
 * `Unknown`. Effect cannot carry a Proxy whose `has` trap throws as a failure (`Effect.fail`
 * inspects it): that is a defect before the handler's error channel sees it.
 */
const expected: Record<Hostile.Kind, ToolResult> = {
  "throwing proxy": errorResult("hostile has"),
  "revoked proxy": errorResult("Cannot perform 'has' on a proxy that has been revoked"),
  "null prototype": failure("{}", "TOOL_FAILURE"),
  "null prototype with fields": failure("gone away", "Gone"),
  "cyclic": failure("gone away", "Gone"),
  "bigint": failure("gone away", "Gone"),
  "bare bigint": failure(FAILED, "TOOL_FAILURE"),
  "symbol": failure(FAILED, "TOOL_FAILURE"),
  "function": failure(FAILED, "TOOL_FAILURE"),
  "__proto__ key": failure("gone away", "Gone"),
  "throwing conversions": failure("gone away", "Gone"),
  "throwing proxy over an array": errorResult("hostile has")
}

/** A probe-only toolkit whose handler is whatever untyped JavaScript the test hands in. */
const withProbe = (handler: () => unknown) =>
  Effect.provide(Fx.Items.toLayer({
    get_item: () => Effect.die("unused"),
    delete_item: () => Effect.die("unused"),
    probe: handler as () => Effect.Effect<number>
  }))

const refusal = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect as Effect.Effect<A, E, ToolRegistry | Scope.Scope>), (error) => {
    assert.instanceOf(error, ToolDefinitionError)
    return (error as ToolDefinitionError).message
  })

describe("AiToolkit with hostile values", () => {
  layer(Presets.layerTest())((it) => {
    it.scoped("ERR-1: every hostile failure value yields exactly one coded error result; nothing throws", () =>
      Effect.gen(function*() {
        for (const kind of Hostile.kinds) {
          const value = Hostile.make(kind, { _tag: "Gone", message: "gone away" })
          const result = yield* Effect.scoped(
            Effect.zipRight(
              AiToolkit.register(Fx.Items).pipe(withProbe(() => Effect.suspend(() => Effect.fail(value)))),
              execute("probe", {})
            )
          )
          assert.deepStrictEqual(result, expected[kind], kind)
        }
      }))

    it.scoped("ERR-1: an own __proto__ key of a failure stays a key of its JSON text", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items).pipe(withProbe(() => Effect.fail(Hostile.ownProtoKey({ polluted: true }))))
        assert.deepStrictEqual(
          yield* execute("probe", {}),
          failure("{\"__proto__\":{\"polluted\":true}}", "TOOL_FAILURE")
        )
        assert.isUndefined(({} as { polluted?: unknown }).polluted)
      }))

    it.scoped("JSON-3: a failure's _tag and message are read once each; a changing getter cannot change the code", () =>
      Effect.gen(function*() {
        const counted = Hostile.counted({ message: "once" })
        const value = Hostile.changing({}, "_tag", "First", "Second")
        Object.defineProperty(value, "message", Object.getOwnPropertyDescriptor(counted.value, "message")!)
        yield* AiToolkit.register(Fx.Items).pipe(withProbe(() => Effect.fail(value)))
        assert.deepStrictEqual(yield* execute("probe", {}), failure("once", "First"))
        assert.strictEqual(counted.reads.get("message"), 1)
      }))

    it.scoped("a failure whose getter throws: TOOL_FAILURE under Unknown, INVALID_TOOL_OUTPUT under a struct schema", () =>
      Effect.gen(function*() {
        const throwingTag = () =>
          Object.defineProperty({ message: "still readable" }, "_tag", {
            enumerable: true,
            get: () => {
              throw new Error("hostile getter")
            }
          })
        const Strict = AiTool.make("strict", { failure: Schema.Struct({ _tag: Schema.Literal("Oops") }) })
        const kit = Toolkit.make(Strict)
        yield* AiToolkit.register(kit).pipe(
          Effect.provide(kit.toLayer({ strict: () => Effect.fail(throwingTag() as never) }))
        )
        yield* AiToolkit.register(Fx.Items).pipe(withProbe(() => Effect.fail(throwingTag())))
        assert.deepStrictEqual(
          yield* execute("strict", {}),
          errorResult(
            "tool \"strict\" returned invalid output: \"failure\" could not be validated: hostile getter",
            info("ToolOutputError", "INVALID_TOOL_OUTPUT")
          )
        )
        assert.deepStrictEqual(yield* execute("probe", {}), failure("still readable", "TOOL_FAILURE"))
      }))

    it.scoped("ERR-1: a handler that throws, throws a hostile value, or returns no Effect is a defect result", () =>
      Effect.gen(function*() {
        const run = (handler: () => unknown) =>
          Effect.scoped(Effect.zipRight(AiToolkit.register(Fx.Items).pipe(withProbe(handler)), execute("probe", {})))
        assert.deepStrictEqual(
          yield* run(() => {
            throw new Error("sync boom")
          }),
          errorResult("sync boom")
        )
        assert.deepStrictEqual(
          yield* run(() => {
            throw Hostile.throwingProxy()
          }),
          errorResult("<unprintable thrown value>")
        )
        assert.deepStrictEqual(
          yield* run(() => 42),
          errorResult("AiToolkit: the handler of tool \"probe\" did not return an Effect")
        )
        assert.deepStrictEqual(
          yield* run(() => Hostile.revokedProxy()),
          errorResult("AiToolkit: the handler of tool \"probe\" did not return an Effect")
        )
      }))

    it.scoped("OUT-2: a hostile success value is INVALID_TOOL_OUTPUT, never a crash", () =>
      Effect.gen(function*() {
        const run = (value: unknown) =>
          Effect.scoped(
            Effect.zipRight(
              AiToolkit.register(Fx.Items).pipe(withProbe(() => Effect.succeed(value))),
              execute("probe", {})
            )
          )
        for (const kind of Hostile.kinds) {
          const result = yield* run(Hostile.make(kind))
          assert.strictEqual(Fx.codeOf(result), "INVALID_TOOL_OUTPUT", kind)
          assert.isTrue(result.isError && result.error.message.startsWith("tool \"probe\" returned invalid output: "), kind)
        }
      }))

    it.scoped("CREATE-4 / DEF-3: hostile arguments never reach the handler", () => {
      const recorder: Fx.Recorder = { calls: [] }
      return Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items).pipe(Effect.provide(Fx.handlers({}, recorder)))
        assert.deepStrictEqual(
          yield* execute("get_item", { id: "a", big: 1n }),
          errorResult(ARGS_NOT_LOSSLESS)
        )
        assert.deepStrictEqual(
          yield* execute("get_item", Object.assign(Hostile.ownProtoKey(), { id: "a" })),
          errorResult(
            "invalid arguments: \"__proto__\" is not a declared property (additionalProperties: false)",
            info("ToolArgsError", "INVALID_ARGS")
          )
        )
        assert.deepStrictEqual(yield* execute("get_item", Hostile.throwingProxy()), errorResult("hostile getPrototypeOf"))
        assert.deepStrictEqual(recorder.calls, [])
      })
    })

    it.scoped("OUT-4 / SCHED-2: a throwing renderer is INVALID_TOOL_OUTPUT; a throwing classifier is exclusive", () =>
      Effect.gen(function*() {
        yield* AiToolkit.register(Fx.Items, {
          render: () => {
            throw Hostile.throwingProxy()
          },
          tools: {
            get_item: {
              concurrencySafe: () => {
                throw new Error("classifier")
              }
            },
            delete_item: { render: () => Hostile.revokedProxy() as never }
          }
        })
        const probe = yield* execute("probe", {})
        assert.strictEqual(Fx.codeOf(probe), "INVALID_TOOL_OUTPUT")
        assert.strictEqual(Fx.codeOf(yield* execute("delete_item", { id: "a" })), "INVALID_TOOL_OUTPUT")
        const registry = yield* ToolRegistry
        assert.strictEqual(yield* registry.executionMode({ name: "get_item", arguments: { id: "a" } }), "exclusive")
      }).pipe(Effect.provide(Fx.handlers())))

    it.scoped("hostile toolkits, tools, options and handler entries are refused with a ToolDefinitionError", () =>
      Effect.gen(function*() {
        const hostileKit = Hostile.throwingProxy() as typeof Fx.Items
        assert.strictEqual(yield* refusal(AiToolkit.register(hostileKit)), "AiToolkit: the toolkit could not be read")
        const badTool = { tools: { x: Hostile.throwingProxy() } } as unknown as typeof Fx.Items
        assert.strictEqual(yield* refusal(AiToolkit.register(badTool)), "AiToolkit: tool \"x\" could not be read")
        const handled = Effect.provide(Fx.handlers())
        assert.strictEqual(
          yield* refusal(AiToolkit.register(Fx.Items, Hostile.throwingProxy() as never).pipe(handled)),
          "AiToolkit: options could not be read"
        )
        assert.strictEqual(
          yield* refusal(AiToolkit.register(Fx.Items, { tools: { probe: Hostile.revokedProxy() as never } }).pipe(handled)),
          "AiToolkit: options.tools.probe could not be read"
        )
        assert.strictEqual(
          yield* refusal(AiToolkit.register(Fx.Items, { render: Hostile.nullProto() as never }).pipe(handled)),
          "AiToolkit: options.render must be a function"
        )
        const entry = Context.make(Context.GenericTag<"probe", object>(Fx.Probe.id), Hostile.throwingProxy())
        assert.strictEqual(
          yield* refusal(
            AiToolkit.register(Toolkit.make(Fx.Probe)).pipe(Effect.provide(Layer.succeedContext(entry)))
          ),
          "AiToolkit: the handler of tool \"probe\" could not be read"
        )
        assert.deepStrictEqual(yield* (yield* ToolRegistry).schemas(), [])
      }))
  })
})
