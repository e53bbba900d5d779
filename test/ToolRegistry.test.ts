import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as RegistryState from "../layers/internal/registry/state.js"
import type { ToolExecution } from "../src/Execution.js"
import type { JsonValue } from "../src/Json.js"
import type { JsonSchemaError } from "../src/JsonSchema.js"
import { PreDecision } from "../src/Policy.js"
import type * as Tool from "../src/Tool.js"
import * as ToolRegistry from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"

// ---------------------------------------------------------------------------------------------
// fixtures

type Def = Tool.ToolDefinition<never>

const def = (name: string, extra: Partial<Record<keyof Def, unknown>> = {}): Def =>
  ({
    name,
    description: `${name} tool`,
    parameters: { type: "object", properties: {} },
    output: {
      schema: { type: "string" },
      render: (_args: JsonValue, value: JsonValue) => [{ type: "text", text: String(value) }]
    },
    execute: () => Effect.succeed(name),
    ...extra
  }) as Def

const runCode = def("run_code", { description: "Run a program." })

const make = (options?: InMemoryToolRegistry.MakeOptions) => InMemoryToolRegistry.make(options)

const names = (registry: ToolRegistry.Service, agent?: string) =>
  Effect.map(registry.schemas(agent), (schemas) => schemas.map((schema) => schema.name))

const viewNames = (registry: ToolRegistry.Service, agent?: string) =>
  registry.unsafeView(agent).tools.map((tool) => tool.definition.name)

const message = <E extends { readonly message: string }>(effect: Effect.Effect<unknown, E, Scope.Scope>) =>
  Effect.map(Effect.flip(effect), (error) => error.message)

const withScope = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Scope.extend(effect, scope)
    return scope
  })

const fakeExec = { name: "x", callId: "c", rootCallId: "c" } as unknown as ToolExecution

const runPre = (view: ToolRegistry.RegistryView) =>
  Effect.forEach(view.preExecute, (hook) =>
    Effect.map(hook(fakeExec, Effect.succeed(PreDecision.Allow())), (decision) =>
      decision._tag === "Deny" ? decision.reason : decision._tag))

/**
 * Subscribes to `registry.changes` deterministically: probes until the subscriber is live, then
 * waits for a marker pair so every probe event has been delivered, and returns an empty log.
 */
const recordChanges = (registry: ToolRegistry.Service) =>
  Effect.gen(function*() {
    const seen: Array<ToolRegistry.RegistryChange["_tag"]> = []
    yield* Effect.forkScoped(
      Stream.runForEach(registry.changes, (change) => Effect.sync(() => void seen.push(change._tag)))
    )
    while (seen.length === 0) {
      yield* Effect.scoped(registry.declareAgent("__probe__"))
      yield* Effect.yieldNow()
    }
    yield* Effect.scoped(registry.register(def("__marker__")))
    while (seen.filter((tag) => tag === "ToolsChanged").length < 2) yield* Effect.yieldNow()
    seen.length = 0
    return seen
  })

const awaitCount = (seen: ReadonlyArray<unknown>, n: number) =>
  Effect.gen(function*() {
    for (let i = 0; seen.length < n; i++) {
      if (i > 10_000) return yield* Effect.dieMessage(`expected ${n} changes, saw ${seen.length}`)
      yield* Effect.yieldNow()
    }
  })

class Greeting extends Context.Tag("test/Greeting")<Greeting, string>() {}

// ---------------------------------------------------------------------------------------------

describe("ToolRegistry.register (REG-1, D-6)", () => {
  it.scoped("T-DEF-001: a definition without output is refused and not registered", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const error = yield* Effect.flip(registry.register(def("x", { output: undefined })))
      assert.strictEqual(error._tag, "ToolRegistrationError")
      assert.strictEqual(error.message, `tool "x" must declare output { schema, render, presentationMeta? }`)
      assert.deepStrictEqual(yield* names(registry), [])
      assert.isTrue(Option.isNone(yield* registry.get("x")))
    }))

  it.scoped("REG-1 step 1: render must be a function, presentationMeta absent or a function", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const expected = `tool "x" must declare output { schema, render, presentationMeta? }`
      const schema = { type: "string" }
      for (
        const output of [
          null,
          "output",
          { schema },
          { schema, render: "nope" },
          { schema, render: () => [], presentationMeta: 1 },
          { schema, render: () => [], presentationMeta: null }
        ]
      ) {
        assert.strictEqual(yield* message(registry.register(def("x", { output }))), expected)
      }
      yield* registry.register(def("x", { output: { schema, render: () => [], presentationMeta: () => null } }))
      yield* registry.register(def("y", { output: { schema, render: () => [], presentationMeta: undefined } }))
      assert.deepStrictEqual(yield* names(registry), ["x", "y"])
    }))

  it.scoped("REG-1 step 2: an output schema outside the subset fails with JsonSchemaError", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const error = yield* Effect.flip(
        registry.register(def("x", { output: { schema: { type: "string", format: "uri" }, render: () => [] } }))
      )
      assert.strictEqual(error._tag, "JsonSchemaError")
      assert.deepStrictEqual((error as JsonSchemaError).violations, [
        "schema.format is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"
      ])
      const missing = yield* Effect.flip(registry.register(def("y", { output: { render: () => [] } })))
      assert.strictEqual(missing._tag, "JsonSchemaError")
      assert.deepStrictEqual((missing as JsonSchemaError).violations, ["schema must be a schema object"])
      assert.deepStrictEqual(yield* names(registry), [])
    }))

  it.scoped("D-6: the name must be a non-empty string (checked after the output)", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      assert.strictEqual(yield* message(registry.register(def(""))), "tool name must be a non-empty string")
      assert.strictEqual(
        yield* message(registry.register(def("", { name: 42 }))),
        "tool name must be a non-empty string"
      )
      assert.strictEqual(
        yield* message(registry.register(def("", { output: undefined }))),
        `tool "" must declare output { schema, render, presentationMeta? }`
      )
      const schemaFirst = yield* Effect.flip(
        registry.register(def("", { output: { schema: { type: "nope" }, render: () => [] } }))
      )
      assert.strictEqual(schemaFirst._tag, "JsonSchemaError")
    }))

  it.scoped("D-6: timeoutMs must be finite, > 0 and <= 2147483647", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const expected = `tool "t" timeoutMs must be a positive finite number no greater than 2147483647`
      for (const timeoutMs of [0, -5, Infinity, -Infinity, NaN, 2147483648, "5", null]) {
        assert.strictEqual(yield* message(registry.register(def("t", { timeoutMs }))), expected)
      }
      yield* registry.register(def("t", { timeoutMs: 2147483647 }))
      yield* registry.register(def("u", { timeoutMs: 30000 }))
      yield* registry.register(def("v", { timeoutMs: 0.5 }))
      assert.strictEqual(Option.getOrThrow(yield* registry.get("u")).timeoutMs, 30000)
    }))

  it.scoped("D-6: parameters must be a lossless JSON object schema with type object", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const expected = `tool "p" parameters must be a lossless JSON object schema with type "object"`
      class Params {
        type = "object"
      }
      for (
        const parameters of [
          undefined,
          null,
          [],
          "object",
          {},
          { type: "string" },
          { type: ["object"] },
          { type: "object", properties: { a: { type: "string", default: undefined } } },
          { type: "object", properties: new Map() },
          { type: "object", n: NaN },
          new Params()
        ]
      ) {
        assert.strictEqual(yield* message(registry.register(def("p", { parameters }))), expected)
      }
      const raw = {
        type: "object",
        $schema: "http://json-schema.org/draft-07/schema#",
        properties: { path: { type: "string", format: "uri", minLength: 1 } },
        required: ["path"]
      }
      yield* registry.register(def("p", { parameters: raw }))
      assert.deepStrictEqual((yield* registry.schemas())[0].parameters, raw)
    }))

  it.scoped("T-DEF-013: run_code is reserved in a native deployment, globally and in a scope", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const expected =
        `tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered or shadowed`
      assert.strictEqual(yield* message(registry.register(def("run_code"))), expected)
      assert.strictEqual(yield* message(registry.register(def("run_code"), { agent: "A" })), expected)
      assert.deepStrictEqual(yield* names(registry), [])
    }))

  it.scoped("REG-1/D-6 order: output, schema, name, timeoutMs, parameters, reserved, duplicate", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      assert.match(yield* message(registry.register(def("run_code", { timeoutMs: 0 }))), /timeoutMs/)
      assert.match(yield* message(registry.register(def("run_code", { parameters: {} }))), /parameters must be/)
      assert.match(yield* message(registry.register(def("run_code", { output: {} }))), /must declare output/)
      yield* registry.register(def("dup"))
      assert.match(yield* message(registry.register(def("dup", { timeoutMs: -1 }))), /timeoutMs/)
    }))

  it.scoped("T-DEF-007 / T-SCOPE-003 / D-21: duplicates in one layer are refused with the layer's message", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("echo"))
      assert.strictEqual(
        yield* message(registry.register(def("echo"))),
        "tool \"echo\" is already registered (for a per-agent variant, register through `register(definition, { agent })` instead)"
      )
      yield* registry.register(def("echo"), { agent: "A" })
      assert.strictEqual(
        yield* message(registry.register(def("echo"), { agent: "A" })),
        `tool "echo" is already registered in this scope`
      )
      yield* registry.register(def("echo"), { agent: "B" })
      assert.deepStrictEqual(yield* names(registry), ["echo"])
    }))

  it.scoped("REG-1: a hostile definition is refused, never thrown", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const hostile = {
        name: "h",
        get output(): never {
          throw new Error("boom")
        }
      }
      assert.strictEqual(
        yield* message(registry.register(hostile as unknown as Def)),
        `tool "h" definition could not be read: boom`
      )
      assert.strictEqual(
        yield* message(registry.register(null as unknown as Def)),
        `tool "undefined" must declare output { schema, render, presentationMeta? }`
      )
    }))

  it.scoped("issue 8 item 12 / REG-3: the registry stores a frozen snapshot; context captured; validator compiled once", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const greet: Tool.ToolDefinition<Greeting> = {
        ...def("greet"),
        execute: () => Greeting
      }
      yield* registry.register(greet).pipe(Effect.provideService(Greeting, "hello"))
      const registered = registry.unsafeView().get("greet")!
      assert.notStrictEqual(registered.definition, greet)
      assert.isTrue(Object.isFrozen(registered.definition))
      assert.isTrue(Object.isFrozen(registered.definition.output))
      assert.deepStrictEqual(Object.keys(registered.definition), ["name", "description", "parameters", "output", "execute"])
      assert.strictEqual(registered.definition.name, "greet")
      assert.strictEqual(registered.definition.description, "greet tool")
      assert.deepStrictEqual(registered.definition.parameters, { type: "object", properties: {} })
      assert.notStrictEqual(registered.definition.parameters, greet.parameters)
      assert.strictEqual(Option.getOrThrow(yield* registry.get("greet")), registered.definition)
      assert.strictEqual(Context.get(registered.context as Context.Context<Greeting>, Greeting), "hello")
      assert.deepStrictEqual(registered.validateOutput(1, "value"), [`"value" must be a string`])
      assert.deepStrictEqual(registered.validateOutput("ok", "value"), [])
      yield* registry.register(greet, { agent: "A" }).pipe(Effect.provideService(Greeting, "hi"))
      const scoped = registry.unsafeView("A").get("greet")!
      assert.notStrictEqual(scoped, registered)
      assert.strictEqual(scoped.validateOutput, registered.validateOutput)
      assert.strictEqual(Context.get(scoped.context as Context.Context<Greeting>, Greeting), "hi")
    }))

  it.scoped("REG-1: an optional output.validate runs only after the subset validation passes", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const calls: Array<unknown> = []
      const output = {
        schema: { type: "string" },
        render: () => [],
        validate: (value: unknown) => {
          calls.push(value)
          return value === "bad" ? ["\"value\" is bad"] : []
        }
      }
      yield* registry.register(def("v", { output }))
      const validate = registry.unsafeView().get("v")!.validateOutput
      assert.deepStrictEqual(validate(1, "value"), [`"value" must be a string`])
      assert.deepStrictEqual(calls, [])
      assert.deepStrictEqual(validate("bad", "value"), [`"value" is bad`])
      assert.deepStrictEqual(validate("good", "value"), [])
      const throwing = {
        ...output,
        validate: () => {
          throw new Error("nope")
        }
      }
      yield* registry.register(def("w", { output: throwing }))
      assert.deepStrictEqual(registry.unsafeView().get("w")!.validateOutput("x", "value"), [
        "output.validate failed: nope"
      ])
    }))
})

describe("ToolRegistry ownership (REG-2, HOST-5)", () => {
  it.scoped("T-DEF-007: disposing a scope removes its tool; the listing returns to registration order", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("echo"))
      const scope = yield* withScope(registry.register(def("scoped")))
      assert.deepStrictEqual(yield* names(registry), ["echo", "scoped"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* names(registry), ["echo"])
    }))

  it.scoped("T-DEF-008: closing the owning scope removes the tool from schemas and lookup only", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("echo"))
      const scope = yield* withScope(registry.register(def("disposable")))
      assert.deepStrictEqual(yield* names(registry), ["echo", "disposable"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* names(registry), ["echo"])
      assert.isTrue(Option.isNone(yield* registry.get("disposable")))
      assert.isTrue(Option.isSome(yield* registry.get("echo")))
    }))

  it.scoped("HOST-5: closing a scope removes exactly that contribution; other layers' same names survive", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const globalX = def("x", { description: "global x" })
      const scopedX = def("x", { description: "scoped x" })
      const s1 = yield* withScope(registry.register(globalX))
      const s2 = yield* withScope(registry.register(scopedX, { agent: "A" }))
      assert.strictEqual(Option.getOrThrow(yield* registry.get("x", "A")).description, "scoped x")
      yield* Scope.close(s1, Exit.void)
      assert.strictEqual(Option.getOrThrow(yield* registry.get("x", "A")).description, "scoped x")
      assert.isTrue(Option.isNone(yield* registry.get("x")))
      const s3 = yield* withScope(registry.register(globalX))
      yield* Scope.close(s2, Exit.void)
      assert.strictEqual(Option.getOrThrow(yield* registry.get("x", "A")).description, "global x")
      yield* Scope.close(s3, Exit.void)
      assert.isTrue(Option.isNone(yield* registry.get("x", "A")))
    }))

  it.scoped("HOST-5: re-registering after removal works and is appended in insertion order", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const s1 = yield* withScope(registry.register(def("a")))
      yield* registry.register(def("b"))
      yield* Scope.close(s1, Exit.void)
      yield* registry.register(def("a"))
      assert.deepStrictEqual(yield* names(registry), ["b", "a"])
    }))

  it.scoped("HOST-5: one scope owns several contributions and closing it removes all of them", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("g"))
      yield* registry.register(def("h"))
      const guardFn = () => "no"
      const scope = yield* withScope(Effect.gen(function*() {
        yield* registry.declareAgent("A")
        yield* registry.register(def("own"), { agent: "A" })
        yield* registry.restrict({ deny: ["g"] }, { agent: "A" })
        yield* registry.guard(guardFn, { agent: "A" })
        yield* registry.presentAs("both", { agent: "A" })
        yield* registry.onPreExecute(() => Effect.succeed(PreDecision.Cancel()), { agent: "A" })
      }))
      const before = registry.unsafeView("A")
      assert.deepStrictEqual(before.tools.map((tool) => tool.definition.name), ["h", "own"])
      assert.deepStrictEqual(before.guards, [guardFn])
      assert.strictEqual(before.mode, "both")
      assert.strictEqual(before.preExecute.length, 1)
      yield* Scope.close(scope, Exit.void)
      const after = registry.unsafeView("A")
      assert.deepStrictEqual(after.tools.map((tool) => tool.definition.name), ["g", "h"])
      assert.deepStrictEqual(after.guards, [])
      assert.strictEqual(after.mode, "native")
      assert.strictEqual(after.preExecute.length, 0)
      yield* registry.declareAgent("A")
    }))
})

describe("ToolRegistry agents (SCOPE-1)", () => {
  it.scoped("SCOPE-1: a 3-deep chain inherits farthest-first and the nearer layer wins", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("G")
      yield* registry.declareAgent("P", { parent: "G" })
      yield* registry.declareAgent("C", { parent: "P" })
      const fromG = def("t", { description: "from G" })
      const fromP = def("t", { description: "from P" })
      yield* registry.register(def("a"))
      yield* registry.register(def("t"))
      yield* registry.register(def("c"))
      yield* registry.register(fromG, { agent: "G" })
      yield* registry.register(def("g"), { agent: "G" })
      yield* registry.register(fromP, { agent: "P" })
      assert.deepStrictEqual(viewNames(registry, "C"), ["a", "t", "c", "g"])
      assert.strictEqual(registry.unsafeView("C").get("t")!.definition.description, "from P")
      assert.strictEqual(registry.unsafeView("G").get("t")!.definition.description, "from G")
      assert.strictEqual(registry.unsafeView().get("t")!.definition.name, "t")
      assert.strictEqual(registry.unsafeView().get("t")!.definition.description, "t tool")
    }))

  it.scoped("SCOPE-1: a view's lineage is the agent then its ancestors, nearest first", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("G")
      yield* registry.declareAgent("P", { parent: "G" })
      yield* registry.declareAgent("C", { parent: "P" })
      assert.deepStrictEqual(registry.unsafeView("C").lineage, ["C", "P", "G"])
      assert.deepStrictEqual(registry.unsafeView("G").lineage, ["G"])
      assert.deepStrictEqual(registry.unsafeView("loner").lineage, ["loner"])
      assert.deepStrictEqual(registry.unsafeView().lineage, [])
      assert.isTrue(Object.isFrozen(registry.unsafeView("C").lineage))
    }))

  it.scoped("SCOPE-1: declaration errors — duplicate, unknown parent, cycle", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("A")
      assert.strictEqual(yield* message(registry.declareAgent("A")), `agent "A" is already declared`)
      assert.strictEqual(
        yield* message(registry.declareAgent("B", { parent: "nobody" })),
        `agent "B" cannot declare undeclared parent "nobody"`
      )
      const scopeA = yield* Scope.make()
      yield* Scope.extend(registry.declareAgent("X"), scopeA)
      yield* registry.declareAgent("Y", { parent: "X" })
      yield* Scope.close(scopeA, Exit.void)
      assert.strictEqual(
        yield* message(registry.declareAgent("X", { parent: "Y" })),
        `agent "X" cannot declare parent "Y": the agent would become its own ancestor`
      )
      assert.strictEqual(
        (yield* Effect.flip(registry.declareAgent("A", { parent: "A" })))._tag,
        "AgentDeclarationError"
      )
    }))

  it.scoped("SCOPE-1: an undeclared agent is an agent without a parent; closing a declaration detaches", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("p"), { agent: "P" })
      yield* registry.register(def("own"), { agent: "C" })
      assert.deepStrictEqual(viewNames(registry, "C"), ["own"])
      const scope = yield* withScope(
        Effect.zipRight(registry.declareAgent("P"), registry.declareAgent("C", { parent: "P" }))
      )
      assert.deepStrictEqual(viewNames(registry, "C"), ["p", "own"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(viewNames(registry, "C"), ["own"])
    }))
})

describe("ToolRegistry visibility (SCOPE-2/3, REG-8)", () => {
  it.scoped("T-SCOPE-001: scoped visibility", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("shared"))
      yield* registry.register(def("mine"), { agent: "A" })
      assert.deepStrictEqual((yield* names(registry, "A")).slice().sort(), ["mine", "shared"])
      assert.deepStrictEqual(yield* names(registry, "A"), ["shared", "mine"])
      assert.deepStrictEqual(yield* names(registry), ["shared"])
      assert.deepStrictEqual(yield* names(registry, "B"), ["shared"])
      assert.isDefined(registry.unsafeView("A").resolve("mine", false))
      assert.isUndefined(registry.unsafeView("B").resolve("mine", false))
      assert.isUndefined(registry.unsafeView().resolve("mine", false))
    }))

  it.scoped("T-DEF-012: an unknown name is None / undefined, never a throw", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("a"))
      assert.isTrue(Option.isNone(yield* registry.get("nope")))
      assert.isTrue(Option.isNone(yield* registry.get("toString")))
      assert.isTrue(Option.isNone(yield* registry.get("__proto__", "A")))
      assert.isUndefined(registry.unsafeView().get("constructor"))
    }))

  it.scoped("T-SCOPE-004 / T-SCOPE-013: an agent's tools die with its scope", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const scope = yield* withScope(registry.register(def("scoped"), { agent: "A" }))
      assert.deepStrictEqual(yield* names(registry, "A"), ["scoped"])
      assert.deepStrictEqual(yield* names(registry, "B"), [])
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(Option.isNone(yield* registry.get("scoped", "A")))
      assert.deepStrictEqual(yield* names(registry, "A"), [])
    }))

  it.scoped("SCOPE-2: overrides keep their position, own tools shadow in place, new names append", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("P")
      yield* registry.declareAgent("C", { parent: "P" })
      for (const name of ["a", "b", "c"]) yield* registry.register(def(name))
      const pb = def("b", { description: "P's b" })
      const cc = def("c", { description: "C's c" })
      yield* registry.register(def("d"), { agent: "P" })
      yield* registry.register(pb, { agent: "P" })
      yield* registry.register(def("e"), { agent: "C" })
      yield* registry.register(cc, { agent: "C" })
      assert.deepStrictEqual(viewNames(registry, "C"), ["a", "b", "c", "d", "e"])
      assert.strictEqual(registry.unsafeView("C").get("b")!.definition.description, "P's b")
      assert.strictEqual(registry.unsafeView("C").get("c")!.definition.description, "C's c")
      assert.deepStrictEqual(viewNames(registry, "P"), ["a", "b", "c", "d"])
    }))

  it.scoped("SCOPE-2 step 3: an own tool shadowing a filtered-out inherited name is appended", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      for (const name of ["a", "b", "c"]) yield* registry.register(def(name))
      yield* registry.restrict({ deny: ["a"] }, { agent: "A" })
      yield* registry.register(def("a", { description: "own a" }), { agent: "A" })
      assert.deepStrictEqual(viewNames(registry, "A"), ["b", "c", "a"])
      assert.strictEqual(registry.unsafeView("A").get("a")!.definition.description, "own a")
    }))

  it.scoped("REG-8: views are cached until a change and immutable", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("a"))
      const first = registry.unsafeView("A")
      assert.strictEqual(registry.unsafeView("A"), first)
      assert.strictEqual(yield* registry.view("A"), first)
      assert.isTrue(Object.isFrozen(first))
      assert.isTrue(Object.isFrozen(first.tools))
      assert.isTrue(Object.isFrozen(first.guards))
      yield* registry.register(def("b"))
      const second = registry.unsafeView("A")
      assert.notStrictEqual(second, first)
      assert.deepStrictEqual(first.tools.map((tool) => tool.definition.name), ["a"])
      assert.deepStrictEqual(second.tools.map((tool) => tool.definition.name), ["a", "b"])
      assert.isUndefined(first.get("b"))
    }))
})

describe("ToolRegistry.restrict (REG-4/5)", () => {
  it.scoped("T-SCOPE-009 / D-21: restrict errors and exact messages", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      assert.strictEqual(
        yield* message(registry.restrict({ deny: ["x"] }, {})),
        "tools.restrict() requires a scoped context (`restrict(restriction, { agent })`): a context-global restriction would mask every agent — deny the tool for the intended agent instead"
      )
      assert.strictEqual(
        yield* message(registry.restrict({}, { agent: "A" })),
        "tools.restrict({}) is a no-op: pass `allow` and/or `deny` (an empty filter is almost always a materialized-empty-config bug)"
      )
      assert.strictEqual(
        yield* message(registry.restrict({ allow: undefined, deny: undefined }, { agent: "A" })),
        "tools.restrict({}) is a no-op: pass `allow` and/or `deny` (an empty filter is almost always a materialized-empty-config bug)"
      )
      assert.strictEqual(
        yield* message(registry.restrict({ allow: ["ghost"] }, { agent: "A" })),
        `tools.restrict() names unknown global tool "ghost"; known global tools: (none)`
      )
      yield* registry.register(def("real"))
      yield* registry.register(def("local"), { agent: "A" })
      assert.strictEqual(
        yield* message(registry.restrict({ deny: ["local"] }, { agent: "A" })),
        `tools.restrict() names unknown global tool "local"; known global tools: real`
      )
      assert.strictEqual(
        yield* message(registry.restrict({ allow: ["ghost", "real"], deny: ["wraith", "ghost"] }, { agent: "A" })),
        `tools.restrict() names unknown global tools "ghost", "wraith"; known global tools: real`
      )
      yield* registry.register(def("alpha"))
      yield* registry.register(def("Zeta"))
      assert.strictEqual(
        yield* message(registry.restrict({ deny: ["typo"] }, { agent: "A" })),
        `tools.restrict() names unknown global tool "typo"; known global tools: Zeta, alpha, real`
      )
    }))

  it.scoped("T-DEF-014 / REG-4 step 4: run_code cannot be named, and the check precedes unknown names", () =>
    Effect.gen(function*() {
      const registry = yield* make({ mode: "code", transport: runCode })
      const expected =
        `tools.restrict() cannot name reserved Code Mode presentation transport "run_code"; restrict end-capability tools instead`
      assert.strictEqual(yield* message(registry.restrict({ allow: ["run_code"] }, { agent: "A" })), expected)
      assert.strictEqual(yield* message(registry.restrict({ deny: ["ghost", "run_code"] }, { agent: "A" })), expected)
      assert.match(yield* message(registry.restrict({}, {})), /requires a scoped context/)
      assert.match(yield* message(registry.restrict({ allow: ["run_code"] }, {})), /requires a scoped context/)
    }))

  it.scoped("REG-4: malformed name lists are refused", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("a"))
      assert.strictEqual(
        yield* message(registry.restrict({ allow: "a" } as unknown as ToolRegistry.Restriction, { agent: "A" })),
        "tools.restrict() allow must be an array of tool names"
      )
      assert.strictEqual(
        yield* message(registry.restrict({ deny: [1] } as unknown as ToolRegistry.Restriction, { agent: "A" })),
        "tools.restrict() deny must be an array of tool names"
      )
    }))

  it.scoped("T-SCOPE-005: allow mask hides inherited tools only; the global view is unchanged", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("read"))
      yield* registry.register(def("bash"))
      yield* registry.register(def("capture"), { agent: "A" })
      yield* registry.restrict({ allow: ["read"] }, { agent: "A" })
      assert.deepStrictEqual(yield* names(registry, "A"), ["read", "capture"])
      assert.isUndefined(registry.unsafeView("A").resolve("bash", false))
      assert.deepStrictEqual(yield* names(registry), ["read", "bash"])
      assert.deepStrictEqual(yield* names(registry, "B"), ["read", "bash"])
    }))

  it.scoped("T-SCOPE-006: masks are evaluated live against later registrations", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("read"))
      yield* registry.restrict({ deny: ["read"] }, { agent: "D" })
      yield* registry.restrict({ allow: ["read"] }, { agent: "L" })
      yield* registry.register(def("web"))
      yield* registry.register(def("localD"), { agent: "D" })
      yield* registry.register(def("localL"), { agent: "L" })
      assert.deepStrictEqual(yield* names(registry, "D"), ["web", "localD"])
      assert.deepStrictEqual(yield* names(registry, "L"), ["read", "localL"])
      assert.isUndefined(registry.unsafeView("L").get("web"))
    }))

  it.scoped("T-SCOPE-007: filters intersect and lift independently", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      for (const name of ["a", "b", "c"]) yield* registry.register(def(name))
      const allowScope = yield* withScope(registry.restrict({ allow: ["a", "b"] }, { agent: "A" }))
      yield* registry.restrict({ deny: ["b"] }, { agent: "A" })
      assert.deepStrictEqual(yield* names(registry, "A"), ["a"])
      yield* Scope.close(allowScope, Exit.void)
      assert.deepStrictEqual(yield* names(registry, "A"), ["a", "c"])
    }))

  it.scoped("T-SCOPE-008: the filter is a snapshot of the caller's arrays", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      for (const name of ["a", "b"]) yield* registry.register(def(name))
      const allow = ["a"]
      yield* registry.restrict({ allow }, { agent: "A" })
      allow.push("b")
      allow[0] = "b"
      assert.deepStrictEqual(yield* names(registry, "A"), ["a"])
    }))

  it.scoped("REG-4/OQ-38: allow [] hides every inherited tool; deny [] is a no-op", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      for (const name of ["a", "b"]) yield* registry.register(def(name))
      yield* registry.register(def("own"), { agent: "A" })
      yield* registry.restrict({ allow: [] }, { agent: "A" })
      yield* registry.restrict({ deny: [] }, { agent: "B" })
      assert.deepStrictEqual(yield* names(registry, "A"), ["own"])
      assert.deepStrictEqual(yield* names(registry, "B"), ["a", "b"])
    }))

  it.scoped("T-SCOPE-010: a child's mask filters a parent's tools for the child only", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("P")
      yield* registry.declareAgent("C", { parent: "P" })
      yield* registry.register(def("bash"), { agent: "P" })
      yield* registry.register(def("read"), { agent: "P" })
      yield* registry.restrict({ deny: ["bash"] }, { agent: "C" })
      assert.deepStrictEqual(yield* names(registry, "C"), ["read"])
      assert.isUndefined(registry.unsafeView("C").resolve("bash", false))
      assert.deepStrictEqual(yield* names(registry, "P"), ["bash", "read"])
    }))

  it.scoped("T-SCOPE-011: a scope's own registrations survive its own allow mask", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("P")
      yield* registry.declareAgent("C", { parent: "P" })
      yield* registry.register(def("g"))
      yield* registry.register(def("mine"), { agent: "C" })
      yield* registry.restrict({ allow: ["g"] }, { agent: "C" })
      yield* registry.register(def("later"), { agent: "C" })
      assert.deepStrictEqual(yield* names(registry, "C"), ["g", "mine", "later"])
    }))

  it.scoped("T-SCOPE-012: an ancestor's mask applies to the ancestor and every descendant", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("P")
      yield* registry.declareAgent("C", { parent: "P" })
      yield* registry.declareAgent("GC", { parent: "C" })
      yield* registry.register(def("x"))
      yield* registry.register(def("y"))
      yield* registry.restrict({ deny: ["x"] }, { agent: "P" })
      for (const agent of ["P", "C", "GC"]) assert.deepStrictEqual(yield* names(registry, agent), ["y"])
      assert.deepStrictEqual(yield* names(registry, "Other"), ["x", "y"])
    }))

  it.scoped("REG-4 step 5: an ancestor layer's tool is an inherited (restrictable) name", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("P")
      yield* registry.declareAgent("C", { parent: "P" })
      yield* registry.register(def("fromParent"), { agent: "P" })
      yield* registry.restrict({ deny: ["fromParent"] }, { agent: "C" })
      assert.strictEqual(
        yield* message(registry.restrict({ deny: ["fromParent"] }, { agent: "P" })),
        `tools.restrict() names unknown global tool "fromParent"; known global tools: (none)`
      )
    }))
})

describe("ToolRegistry guards and hooks (REG-6, GUARD-2, HOST-1, SCOPE-5)", () => {
  it.scoped("GUARD-2: global guards first, then the chain farthest first, each in registration order", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("P")
      yield* registry.declareAgent("C", { parent: "P" })
      const g = (label: string) => () => label
      const [c1, p1, g1, p2, g2, o1] = ["c1", "p1", "g1", "p2", "g2", "o1"].map(g)
      yield* registry.guard(c1, { agent: "C" })
      yield* registry.guard(p1, { agent: "P" })
      yield* registry.guard(g1)
      yield* registry.guard(p2, { agent: "P" })
      yield* registry.guard(g2)
      yield* registry.guard(o1, { agent: "Other" })
      assert.deepStrictEqual(registry.unsafeView("C").guards, [g1, g2, p1, p2, c1])
      assert.deepStrictEqual(registry.unsafeView("P").guards, [g1, g2, p1, p2])
      assert.deepStrictEqual(registry.unsafeView().guards, [g1, g2])
    }))

  it.scoped("REG-6 / T-GUARD-001: identical guards are independent registrations", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const terminal = () => "terminal policy"
      const s1 = yield* withScope(registry.guard(terminal, { agent: "A" }))
      const s2 = yield* withScope(registry.guard(terminal, { agent: "A" }))
      assert.deepStrictEqual(registry.unsafeView("A").guards, [terminal, terminal])
      yield* Scope.close(s1, Exit.void)
      assert.deepStrictEqual(registry.unsafeView("A").guards, [terminal])
      assert.deepStrictEqual(registry.unsafeView("B").guards, [])
      yield* Scope.close(s2, Exit.void)
      assert.deepStrictEqual(registry.unsafeView("A").guards, [])
    }))

  it.scoped("HOST-1 / SCOPE-5: hooks are registration-ordered, prepend goes first, scope-filtered", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.declareAgent("P")
      yield* registry.declareAgent("A", { parent: "P" })
      const deny = (reason: string) => () => Effect.succeed(PreDecision.Deny({ reason }))
      yield* registry.onPreExecute(deny("a1"), { agent: "A" })
      yield* registry.onPreExecute(deny("g1"))
      yield* registry.onPreExecute(deny("b1"), { agent: "B" })
      yield* registry.onPreExecute(deny("p1"), { agent: "P" })
      yield* registry.onPreExecute(deny("g0"), { prepend: true })
      yield* registry.onPreExecute(deny("a0"), { agent: "A", prepend: true })
      assert.deepStrictEqual(yield* runPre(registry.unsafeView("A")), ["a0", "g0", "a1", "g1", "p1"])
      assert.deepStrictEqual(yield* runPre(registry.unsafeView("P")), ["g0", "g1", "p1"])
      assert.deepStrictEqual(yield* runPre(registry.unsafeView("B")), ["g0", "g1", "b1"])
      assert.deepStrictEqual(yield* runPre(registry.unsafeView()), ["g0", "g1"])
    }))

  it.scoped("T-PRE-014 / T-SCOPE-014: a scoped hook is invisible to other agents and to agent-less calls", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const scope = yield* withScope(
        registry.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "scoped veto" })), { agent: "A" })
      )
      assert.deepStrictEqual(yield* runPre(registry.unsafeView("A")), ["scoped veto"])
      assert.deepStrictEqual(yield* runPre(registry.unsafeView("B")), [])
      assert.deepStrictEqual(yield* runPre(registry.unsafeView()), [])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* runPre(registry.unsafeView("A")), [])
    }))

  it.scoped("HOST-1: every hook kind captures its requirements at registration", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const seen: Array<string> = []
      const result = { isError: false } as unknown as ToolResult
      yield* Effect.provideService(
        Effect.all([
          registry.onPreExecute(() =>
            Effect.map(Greeting, (greeting) => PreDecision.Deny({ reason: greeting }))
          ),
          registry.onExecute((_exec, next) =>
            Effect.zipRight(Effect.map(Greeting, (g) => seen.push(`around:${g}`)), next)
          ),
          registry.onPostExecute((_exec, _result, next) =>
            Effect.zipRight(Effect.map(Greeting, (g) => seen.push(`post:${g}`)), next)
          ),
          registry.onResult(() => Effect.map(Greeting, (g) => void seen.push(`result:${g}`)))
        ]),
        Greeting,
        "hello"
      )
      const view = registry.unsafeView()
      assert.deepStrictEqual(yield* runPre(view), ["hello"])
      yield* view.aroundExecute[0](fakeExec, Effect.succeed(result))
      yield* view.postExecute[0](fakeExec, result, Effect.succeed({ _tag: "Accept" } as never))
      yield* view.observers[0](fakeExec, result)
      assert.deepStrictEqual(seen, ["around:hello", "post:hello", "result:hello"])
    }))

  it.scoped("HOST-1: a hook's captured services do not leak into the chain below it (next)", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* Effect.provideService(
        registry.onPreExecute((_exec, next) =>
          Effect.gen(function*() {
            const mine = yield* Greeting
            const below = yield* next
            return below._tag === "Deny" ? PreDecision.Deny({ reason: `${mine}/${below.reason}` }) : below
          })
        ),
        Greeting,
        "registration"
      )
      const next = Effect.map(Greeting, (greeting) => PreDecision.Deny({ reason: greeting }))
      const decision = yield* registry.unsafeView().preExecute[0](fakeExec, next as Effect.Effect<PreDecision>).pipe(
        Effect.provideService(Greeting, "caller")
      )
      assert.deepStrictEqual(decision, PreDecision.Deny({ reason: "registration/caller" }))
    }))

  it.scoped("D-9: a view taken before a hook registration keeps its own hook snapshot", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "first" })))
      const before = registry.unsafeView()
      yield* registry.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "second" })))
      yield* registry.guard(() => "g")
      assert.deepStrictEqual(yield* runPre(before), ["first"])
      assert.deepStrictEqual(before.guards, [])
      assert.deepStrictEqual(yield* runPre(registry.unsafeView()), ["first", "second"])
    }))
})

describe("ToolRegistry presentation (REG-7, SCOPE-4, MODE-5/6)", () => {
  it.scoped("REG-7 / D-21: presentAs requires an agent and one declaration per layer", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      assert.strictEqual(
        yield* message(registry.presentAs("code", {})),
        "tools.presentAs() requires a scoped context (`presentAs(mode, { agent })`): a context-global presentation is the registry's deployment `mode` (`InMemoryToolRegistry.layerWith({ mode })`)"
      )
      yield* registry.presentAs("code", { agent: "A" })
      assert.strictEqual(
        yield* message(registry.presentAs("both", { agent: "A" })),
        `tools.presentAs("both") conflicts with "code" already declared for this scope; one composition selects one presentation`
      )
      assert.strictEqual(
        yield* message(registry.presentAs("code", { agent: "A" })),
        `tools.presentAs("code") conflicts with "code" already declared for this scope; one composition selects one presentation`
      )
      assert.strictEqual(
        yield* message(registry.presentAs("fancy" as ToolRegistry.PresentationMode, { agent: "B" })),
        `tools.presentAs("fancy") is not a presentation mode (expected "native", "code" or "both")`
      )
    }))

  it.scoped("SCOPE-4: the nearest declaring layer wins; disposal restores inheritance", () =>
    Effect.gen(function*() {
      const registry = yield* make({ mode: "both" })
      yield* registry.declareAgent("P")
      yield* registry.declareAgent("C", { parent: "P" })
      assert.strictEqual(registry.unsafeView().mode, "both")
      assert.strictEqual(registry.unsafeView("C").mode, "both")
      yield* registry.presentAs("code", { agent: "P" })
      assert.strictEqual(registry.unsafeView("C").mode, "code")
      const own = yield* withScope(registry.presentAs("native", { agent: "C" }))
      assert.strictEqual(registry.unsafeView("C").mode, "native")
      assert.strictEqual(registry.unsafeView("P").mode, "code")
      assert.strictEqual(registry.unsafeView().mode, "both")
      yield* Scope.close(own, Exit.void)
      assert.strictEqual(registry.unsafeView("C").mode, "code")
      yield* registry.presentAs("native", { agent: "C" })
    }))

  it.scoped("MODE-5: run_code is appended last to non-native views only, the same object everywhere", () =>
    Effect.gen(function*() {
      const registry = yield* make({ transport: runCode })
      yield* registry.register(def("a"))
      yield* registry.register(def("own"), { agent: "C" })
      assert.deepStrictEqual(yield* names(registry), ["a"])
      assert.isTrue(Option.isNone(yield* registry.get("run_code")))
      yield* registry.presentAs("both", { agent: "C" })
      yield* registry.presentAs("code", { agent: "K" })
      assert.deepStrictEqual(yield* names(registry, "C"), ["a", "own", "run_code"])
      assert.deepStrictEqual(yield* names(registry, "K"), ["a", "run_code"])
      const c = registry.unsafeView("C").get("run_code")!
      assert.strictEqual(c, registry.unsafeView("K").get("run_code"))
      assert.strictEqual(c.definition, runCode)
      assert.strictEqual(Context.isContext(c.context), true)
      assert.strictEqual(yield* registry.get("run_code", "C").pipe(Effect.map(Option.getOrThrow)), runCode)
    }))

  it.scoped("T-DEF-014: in code and both deployments impostors are refused; one run_code remains", () =>
    Effect.gen(function*() {
      for (const mode of ["code", "both"] as const) {
        const registry = yield* make({ mode, transport: runCode })
        yield* registry.register(def("a"))
        assert.match(
          yield* message(registry.register(def("run_code"))),
          /reserved for the Code Mode presentation transport/
        )
        assert.match(
          yield* message(registry.register(def("run_code"), { agent: "A" })),
          /reserved for the Code Mode presentation transport/
        )
        assert.match(
          yield* message(registry.restrict({ deny: ["run_code"] }, { agent: "A" })),
          /cannot name reserved Code Mode presentation transport/
        )
        yield* registry.register(def("extra"), { agent: "A" })
        const global = yield* names(registry)
        const scoped = yield* names(registry, "A")
        assert.deepStrictEqual(global, ["a", "run_code"])
        assert.deepStrictEqual(scoped, ["a", "extra", "run_code"])
        assert.strictEqual(registry.unsafeView("A").get("run_code"), registry.unsafeView().get("run_code"))
      }
    }))

  it.scoped("MODE-5: without a transport no view holds run_code", () =>
    Effect.gen(function*() {
      const registry = yield* make({ mode: "code" })
      yield* registry.register(def("a"))
      assert.deepStrictEqual(yield* names(registry), ["a"])
      assert.isUndefined(registry.unsafeView().resolve("run_code", false))
      assert.isUndefined(registry.unsafeView().resolve("a", false))
    }))

  it.scoped("MODE-6 / REG-8: under code only run_code resolves without a parent; get stays agnostic", () =>
    Effect.gen(function*() {
      const registry = yield* make({ transport: runCode })
      yield* registry.register(def("write"))
      yield* registry.presentAs("code", { agent: "K" })
      yield* registry.presentAs("both", { agent: "B" })
      const k = registry.unsafeView("K")
      assert.isUndefined(k.resolve("write", false))
      assert.strictEqual(k.resolve("write", true)!.definition.name, "write")
      assert.strictEqual(k.resolve("run_code", false)!.definition, runCode)
      assert.strictEqual(k.get("write")!.definition.name, "write")
      assert.isTrue(Option.isSome(yield* registry.get("write", "K")))
      const b = registry.unsafeView("B")
      assert.strictEqual(b.resolve("write", false)!.definition.name, "write")
      assert.strictEqual(b.resolve("run_code", false)!.definition, runCode)
      const n = registry.unsafeView("N")
      assert.strictEqual(n.resolve("write", false)!.definition.name, "write")
      assert.isUndefined(n.resolve("run_code", true))
    }))
})

describe("ToolRegistry.schemas (REG-9, D-1)", () => {
  it.scoped("T-SCHEMA-002 / T-SCHEMA-004: exactly name, description, parameters — no host callbacks", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("full", {
        finalizeContent: () => undefined,
        projectContent: () => undefined,
        presentCall: () => undefined,
        presentResult: () => undefined,
        isConcurrencySafe: () => true,
        timeoutMs: 1000,
        deferLoading: false
      }))
      const [schema] = yield* registry.schemas()
      assert.deepStrictEqual(Object.keys(schema).sort(), ["description", "name", "parameters"])
      assert.deepStrictEqual(schema, {
        name: "full",
        description: "full tool",
        parameters: { type: "object", properties: {} }
      })
    }))

  it.scoped("D-1: deferLoading true is projected, nothing else", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("lazy", { deferLoading: true }))
      const [schema] = yield* registry.schemas()
      assert.deepStrictEqual(schema, {
        name: "lazy",
        description: "lazy tool",
        parameters: { type: "object", properties: {} },
        deferLoading: true
      })
    }))

  it.scoped("T-SCHEMA-005: projections are detached copies", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const parameters = { type: "object", properties: { a: { type: "string" } } }
      yield* registry.register(def("t", { parameters }))
      const [first] = yield* registry.schemas()
      assert.notStrictEqual(first.parameters, parameters)
      ;(first.parameters as Record<string, unknown>).extra = 1
      ;((first.parameters as any).properties.a as Record<string, unknown>).type = "number"
      ;(first as { description: string }).description = "changed"
      const [second] = yield* registry.schemas()
      assert.deepStrictEqual(second, {
        name: "t",
        description: "t tool",
        parameters: { type: "object", properties: { a: { type: "string" } } }
      })
      assert.deepStrictEqual(parameters, { type: "object", properties: { a: { type: "string" } } })
    }))

  it.scoped("T-SCHEMA-006: 5000 nested oneOf levels are projected without overflow", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      let node: Record<string, unknown> = { type: "string" }
      for (let i = 0; i < 5000; i++) node = { oneOf: [node, { type: "null" }] }
      yield* registry.register(def("deep", { parameters: { type: "object", properties: { v: node } } }))
      const [schema] = yield* registry.schemas()
      let current: any = (schema.parameters as any).properties.v
      let depth = 0
      while (current.oneOf !== undefined) {
        current = current.oneOf[0]
        depth++
      }
      assert.strictEqual(depth, 5000)
      assert.deepStrictEqual(current, { type: "string" })
    }))

  it.scoped("T-SCHEMA-010: raw (MCP-style) parameters are projected verbatim", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const parameters = {
        type: "object",
        $schema: "https://json-schema.org/draft/2020-12/schema",
        properties: { path: { type: "string", description: "A path", pattern: "^/" } },
        required: ["path"],
        additionalProperties: false
      }
      yield* registry.register(def("mcp", { parameters }))
      assert.deepStrictEqual((yield* registry.schemas())[0].parameters, parameters)
    }))

  it.scoped("issue 8 item 12 / REG-9: parameters mutated after registration change nothing; schemas never dies", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const parameters: Record<string, unknown> = { type: "object" }
      const definition = def("m", { parameters, description: "before" }) as { -readonly [K in keyof Def]: Def[K] }
      yield* registry.register(definition)
      parameters.bad = undefined
      parameters.type = "string"
      definition.description = "after"
      definition.deferLoading = true
      assert.deepStrictEqual(yield* registry.schemas(), [
        { name: "m", description: "before", parameters: { type: "object" } }
      ])
    }))

  it.scoped("SCOPE-3: schemas follow view order with run_code last", () =>
    Effect.gen(function*() {
      const registry = yield* make({ mode: "both", transport: runCode })
      yield* registry.register(def("zulu"))
      yield* registry.register(def("alpha"))
      yield* registry.register(def("mike"), { agent: "A" })
      assert.deepStrictEqual(yield* names(registry, "A"), ["zulu", "alpha", "mike", "run_code"])
    }))

  it("provider projections", () => {
    const schemas: ReadonlyArray<ToolRegistry.ToolSchema> = [
      { name: "a", description: "A", parameters: { type: "object" } },
      { name: "b", description: "B", parameters: { type: "object" }, deferLoading: true }
    ]
    assert.deepStrictEqual(ToolRegistry.toOpenAiTools(schemas), [
      { type: "function", function: { name: "a", description: "A", parameters: { type: "object" } } },
      { type: "function", function: { name: "b", description: "B", parameters: { type: "object" } } }
    ])
    assert.deepStrictEqual(ToolRegistry.toAnthropicTools(schemas), [
      { name: "a", description: "A", input_schema: { type: "object" } },
      { name: "b", description: "B", input_schema: { type: "object" }, defer_loading: true }
    ])
  })
})

describe("ToolRegistry.executionMode (SCHED-2, D-12)", () => {
  const classify = (
    registry: ToolRegistry.Service,
    name: string,
    args: unknown,
    extra: Partial<ToolRegistry.ClassifyInput> = {}
  ) => registry.executionMode({ name, arguments: args, ...extra })

  it.scoped("T-MODE-001 / T-MODE-002 / T-MODE-003: true → parallel; no classifier or unknown → exclusive", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("safe", { isConcurrencySafe: () => true }))
      yield* registry.register(def("plain"))
      assert.strictEqual(yield* classify(registry, "safe", {}), "parallel")
      assert.strictEqual(yield* classify(registry, "plain", {}), "exclusive")
      assert.strictEqual(yield* classify(registry, "ghost", {}), "exclusive")
    }))

  it.scoped("T-MODE-004: classification is per call", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("fs", { isConcurrencySafe: (args: any) => args.mode === "read" }))
      assert.strictEqual(yield* classify(registry, "fs", { mode: "read" }), "parallel")
      assert.strictEqual(yield* classify(registry, "fs", { mode: "write" }), "exclusive")
    }))

  it.scoped("T-MODE-005 / T-MODE-006: a classifier that throws (e.g. on invalid args) → exclusive", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("typed", { isConcurrencySafe: (args: any) => args.mode.length > 0 }))
      yield* registry.register(def("boom", {
        isConcurrencySafe: () => {
          throw new Error("boom")
        }
      }))
      assert.strictEqual(yield* classify(registry, "typed", {}), "exclusive")
      assert.strictEqual(yield* classify(registry, "typed", { mode: "r" }), "parallel")
      assert.strictEqual(yield* classify(registry, "boom", {}), "exclusive")
    }))

  it.scoped("SCHED-2: only exactly true is parallel", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      let answer: unknown = true
      yield* registry.register(def("t", { isConcurrencySafe: () => answer }))
      for (const value of [1, "true", {}, [], false, undefined, null]) {
        answer = value
        assert.strictEqual(yield* classify(registry, "t", {}), "exclusive")
      }
      answer = true
      assert.strictEqual(yield* classify(registry, "t", {}), "parallel")
    }))

  it.scoped("T-MODE-008 / D-12: the classifier sees a frozen snapshot equal to the arguments", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const seen: Array<unknown> = []
      yield* registry.register(def("raw", {
        isConcurrencySafe: (args: unknown) => {
          seen.push(args)
          return true
        }
      }))
      const args = { anything: 1, nested: { list: [1, 2] } }
      assert.strictEqual(yield* classify(registry, "raw", args), "parallel")
      assert.deepStrictEqual(seen[0], args)
      assert.notStrictEqual(seen[0], args)
      assert.isTrue(Object.isFrozen(seen[0]))
      assert.isTrue(Object.isFrozen((seen[0] as any).nested.list))
      assert.isFalse(Object.isFrozen(args))
    }))

  it.scoped("D-12: arguments that cannot be snapshotted are exclusive and the classifier is not called", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      let calls = 0
      yield* registry.register(def("t", {
        isConcurrencySafe: () => {
          calls++
          return true
        }
      }))
      const throwing = {
        get x() {
          throw new Error("getter")
        }
      }
      for (const args of [new Map(), { a: undefined }, [1, , 3], { n: NaN }, throwing]) {
        assert.strictEqual(yield* classify(registry, "t", args), "exclusive")
      }
      assert.strictEqual(calls, 0)
    }))

  it.scoped("SCHED-2: a hostile input is exclusive, never a failure", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("t", { isConcurrencySafe: () => true }))
      const hostile = {
        name: "t",
        arguments: {},
        get agent(): string {
          throw new Error("agent getter")
        }
      }
      assert.strictEqual(yield* registry.executionMode(hostile), "exclusive")
      assert.strictEqual(yield* registry.executionMode({ name: 42 as unknown as string, arguments: {} }), "exclusive")
    }))

  it.scoped("SCHED-2 / MODE-6: visibility and the Code Mode collapse decide first", () =>
    Effect.gen(function*() {
      const registry = yield* make({ transport: { ...runCode, isConcurrencySafe: () => true } as Def })
      yield* registry.register(def("mine", { isConcurrencySafe: () => true }), { agent: "A" })
      yield* registry.register(def("g", { isConcurrencySafe: () => true }))
      yield* registry.presentAs("code", { agent: "K" })
      assert.strictEqual(yield* classify(registry, "mine", {}, { agent: "A" }), "parallel")
      assert.strictEqual(yield* classify(registry, "mine", {}, { agent: "B" }), "exclusive")
      assert.strictEqual(yield* classify(registry, "mine", {}), "exclusive")
      assert.strictEqual(yield* classify(registry, "g", {}, { agent: "K" }), "exclusive")
      assert.strictEqual(yield* classify(registry, "g", {}, { agent: "K", parent: Symbol("p") }), "parallel")
      assert.strictEqual(yield* classify(registry, "run_code", {}, { agent: "K" }), "parallel")
      assert.strictEqual(yield* classify(registry, "run_code", {}, { agent: "A" }), "exclusive")
    }))
})

describe("ToolRegistry.changes (OBS-2)", () => {
  it.scoped("OBS-2: tools, restrictions, modes and agents announce insertions and removals", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      yield* registry.register(def("g"))
      const seen = yield* recordChanges(registry)
      const scope = yield* Scope.make()
      yield* Scope.extend(
        Effect.all([
          registry.declareAgent("A"),
          registry.register(def("t"), { agent: "A" }),
          registry.restrict({ deny: ["g"] }, { agent: "A" }),
          registry.presentAs("both", { agent: "A" })
        ]),
        scope
      )
      yield* awaitCount(seen, 4)
      assert.deepStrictEqual(seen, ["AgentsChanged", "ToolsChanged", "RestrictionsChanged", "ModeChanged"])
      seen.length = 0
      yield* Scope.close(scope, Exit.void)
      yield* awaitCount(seen, 4)
      assert.deepStrictEqual(seen, ["ModeChanged", "RestrictionsChanged", "ToolsChanged", "AgentsChanged"])
    }))

  it.scoped("OBS-2: guards, hooks and refused registrations announce nothing", () =>
    Effect.gen(function*() {
      const registry = yield* make()
      const seen = yield* recordChanges(registry)
      const scope = yield* Scope.make()
      yield* Scope.extend(registry.guard(() => undefined), scope)
      yield* Scope.extend(registry.onPreExecute((_exec, next) => next), scope)
      yield* Scope.extend(registry.onResult(() => Effect.void, { agent: "A" }), scope)
      yield* Effect.flip(registry.register(def("")))
      yield* Effect.flip(registry.restrict({}, { agent: "A" }))
      yield* Effect.flip(registry.presentAs("code", {}))
      yield* Effect.flip(registry.declareAgent("B", { parent: "nobody" }))
      yield* Scope.close(scope, Exit.void)
      yield* registry.register(def("marker"))
      yield* awaitCount(seen, 1)
      assert.deepStrictEqual(seen, ["ToolsChanged"])
    }))
})

describe("InMemoryToolRegistry layers", () => {
  it.effect("layerPreloaded registers the pack globally for the layer's lifetime", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.ToolRegistry
      assert.deepStrictEqual(yield* names(registry), ["a", "b"])
      assert.strictEqual(registry.unsafeView().mode, "native")
    }).pipe(Effect.provide(InMemoryToolRegistry.layerPreloaded([def("a"), def("b")]))))

  it.effect("layerPreloaded fails when a definition is refused", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Layer.build(InMemoryToolRegistry.layerPreloaded([def("a"), def("a")])).pipe(Effect.scoped)
      )
      assert.strictEqual(error._tag, "ToolRegistrationError")
    }))

  it.effect("layerWith sets the deployment mode and transport; layer is native and empty", () =>
    Effect.gen(function*() {
      const code = yield* Effect.provide(
        ToolRegistry.ToolRegistry,
        InMemoryToolRegistry.layerWith({ mode: "code", transport: runCode })
      )
      assert.strictEqual(code.unsafeView().mode, "code")
      assert.deepStrictEqual(yield* names(code), ["run_code"])
      const plain = yield* Effect.provide(ToolRegistry.ToolRegistry, InMemoryToolRegistry.layer)
      assert.strictEqual(plain.unsafeView().mode, "native")
      assert.deepStrictEqual(yield* names(plain), [])
    }))
})

describe("registry internals (HOST-5)", () => {
  it("HOST-5: an agent layer is reclaimed once it holds nothing", () => {
    const state = RegistryState.makeState("native", () => undefined)
    const layer = RegistryState.ensureLayer(state, "A")
    layer.guards.push({ guard: () => undefined })
    RegistryState.reclaim(state, "A")
    assert.isTrue(state.layers.has("A"))
    layer.guards.length = 0
    RegistryState.reclaim(state, "A")
    assert.isFalse(state.layers.has("A"))
    RegistryState.reclaim(state, undefined)
    assert.strictEqual(RegistryState.layerFor(state, undefined), state.global)
  })
})
