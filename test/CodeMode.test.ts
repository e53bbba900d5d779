/**
 * Code Mode's presentation (MODE-1…7), the `run_code` transport's contract (PTC-1…5, D-1),
 * REG-10, the collapse per mode (CREATE-6, MODE-6) and `both` through the batch scheduler
 * (PTC-18). The bridge's sub-calls are in `CodeMode.bridge.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Scope } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as CodeMode from "../src/CodeMode.js"
import * as CodeSdk from "../src/CodeSdk.js"
import type { Service as CodeRuntimeService } from "../src/CodeRuntime.js"
import { CodeRuntime } from "../src/CodeRuntime.js"
import * as Presentation from "../src/Presentation.js"
import * as Scheduler from "../src/Scheduler.js"
import type { ToolDefinition } from "../src/Tool.js"
import * as ToolCallLogModule from "../src/ToolCallLog.js"
import { ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { JsonSchema } from "../src/JsonSchema.js"
import type { ToolSchema } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as Code from "./fixtures/codeRuntime.js"
import {
  aborted,
  ABORTED_BEFORE_DISPATCH,
  collapsedRoute,
  echo,
  echoed,
  errorResult,
  info,
  text,
  unknownTool
} from "./fixtures/runtime.js"

const TS_DESCRIPTION = "Execute a TypeScript program against the available tools. Takes two required arguments: " +
  "`code`, the BODY of an async function (erasable syntax only; top-level `await` and `return` work), and " +
  "`description`, a short summary of what the program does. Call tools as `await tools.name(args)` per the " +
  "declarations in the system prompt. Only what you print or return is program output — curate it. " +
  "Image-bearing subtool results are attached after the run."
const PY_DESCRIPTION = "Execute a Python program against the available tools. Takes two required arguments: " +
  "`code`, the BODY of an async function (top-level `await` and `return` work), and `description`, a short " +
  "summary of what the program does. Call tools as `await tools.name(args)` per the declarations in the " +
  "system prompt. Use `print(...)` and/or `return <value>` for program output — curate it. " +
  "Image-bearing subtool results are attached after the run."
const DESCRIPTION_PARAM = "Clear, concise description of what this program does in active voice, 5-10 words " +
  "(shown in the UI). Examples: \"Count TODO markers across packages\"; \"Read failing test and its fixture\"; " +
  "\"Rename config key in every cordis.yml\"."
const CODE_ONLY = "`run_code` is the only tool you can call directly — a tool call naming any other tool fails. " +
  "Reach every tool the SDK declares below from inside the program."

const runCodeSchema = (language: "typescript" | "python" = "typescript"): ToolSchema => ({
  name: "run_code",
  description: language === "typescript" ? TS_DESCRIPTION : PY_DESCRIPTION,
  parameters: {
    type: "object",
    properties: {
      description: { type: "string", description: DESCRIPTION_PARAM },
      code: {
        type: "string",
        description: `The program: the body of an async ${language === "typescript" ? "TypeScript" : "Python"} function.`
      }
    },
    required: ["description", "code"]
  }
})

const echoSchema: ToolSchema = {
  name: "echo",
  description: "Echo text.",
  parameters: { type: "object", properties: { text: { type: "string" } } }
}

const missingRuntime = (mode: string) =>
  `dsh-tools: mode "${mode}" requires a code runtime — provide a CodeRuntime Layer (CodeRuntimeQuickJs.layer) ` +
  "or present the tools as \"native\""

const unknownLanguage = (language: string) =>
  `dsh-tools: no SDK renderer registered for runtime language ${language} (known: "typescript", "python")`

/** A program that returns its binding names (the `tools` namespace's own keys). */
const namesProgram: Code.Script = (guest) => Effect.succeed(guest.names)

const programs: Record<string, Code.Script> = {
  names: namesProgram,
  "": () => Effect.succeed(undefined),
  hello: (guest) => Effect.zipRight(guest.log("hello"), Effect.succeed(42))
}

const withFake = (options: Code.LayerOptions = {}, language?: string) => {
  const fake = Code.make(programs, { language })
  return { fake, provide: Effect.provide(Code.layer(fake, options)) }
}

const runCode = (code: string, agent?: string, extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) =>
    runtime.execute({
      callId: "c1",
      name: "run_code",
      agent,
      arguments: { description: "List the tools", code, ...extra },
      signal
    }))

const call = (name: string, agent?: string, args: unknown = { text: "hi" }) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) => runtime.execute({ callId: "d1", name, agent, arguments: args }))

const failureMessage = <A, R>(effect: Effect.Effect<A, CodeMode.CodeModeError, R>) =>
  Effect.flip(effect).pipe(Effect.map((error) => {
    assert.strictEqual(error._tag, "CodeModeError")
    return error.message
  }))

const defectOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit))
    const defect = Exit.isFailure(exit) ? Cause.dieOption(exit.cause) : Option.none()
    assert.isTrue(Option.isSome(defect))
    return Option.getOrThrow(defect)
  })

const sdkTextOf = (sections: ReadonlyArray<CodeMode.PromptSection>): string =>
  sections.find((section) => section.name === "tools:sdk")?.text ?? ""

/** SDK-1 projection of the echo fixture. */
const echoSdk: CodeSdk.SdkTool = {
  name: "echo",
  description: "Echo text.",
  parameters: { type: "object", properties: { text: { type: "string" } } },
  output: { type: "string" }
}

const registerEcho = Effect.flatMap(ToolRegistry, (registry) => registry.register(echo()))

const tool = (name: string, overrides: Partial<ToolDefinition<never>> = {}): ToolDefinition<never> =>
  echo({ name, description: `${name} tool`, ...overrides })

describe("CodeMode assembly and prompt sections (MODE-1…4)", () => {
  it.scoped("T-PTC-070 / TYPES-11: the default registry is native — no run_code, no sections", () =>
    Effect.gen(function*() {
      yield* registerEcho
      const registry = yield* ToolRegistry
      assert.deepStrictEqual(yield* CodeMode.assembly(), { schemas: [echoSchema], knownNames: ["echo"] })
      assert.deepStrictEqual(yield* CodeMode.promptSections(), [])
      assert.isTrue(Option.isNone(yield* registry.get("run_code")))
      assert.deepStrictEqual(yield* call("run_code"), unknownTool("run_code"))
    }).pipe(Effect.provide(Layer.merge(ToolRuntime.layer, Layer.empty).pipe(Layer.provideMerge(InMemoryToolRegistry.layer)))))

  it.scoped("T-PTC-002 / MODE-2: code mode assembles exactly [run_code]; the SDK declares the other tools only", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      yield* registerEcho
      assert.deepStrictEqual(yield* CodeMode.assembly(), { schemas: [runCodeSchema()], knownNames: ["run_code"] })
      const sdk = sdkTextOf(yield* CodeMode.promptSections())
      assert.strictEqual(sdk, CodeSdk.render("typescript", [echoSdk]))
      assert.include(sdk, "declare const tools: {")
      assert.include(sdk, "echo: {")
      assert.notInclude(sdk, "run_code:")
      assert.notInclude(sdk, "Execute a TypeScript program")
    }).pipe(provide)
  })

  it.scoped("T-PTC-003 / MODE-4: the code-only rule (order 99) comes before the SDK (order 150)", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      yield* registerEcho
      const sections = yield* CodeMode.promptSections()
      assert.deepStrictEqual(sections.map((s) => [s.name, s.order]), [["tools:code-only", 99], ["tools:sdk", 150]])
      assert.strictEqual(sections[0].text, CODE_ONLY)
      assert.include(sections[0].text, "`run_code` is the only tool you can call directly")
      assert.strictEqual(CodeMode.CODE_ONLY_TEXT, CODE_ONLY)
    }).pipe(provide)
  })

  it.scoped("T-PTC-004 / MODE-1: both keeps the native schemas, adds run_code last, and has no code-only rule", () => {
    const { provide } = withFake({ mode: "both" })
    return Effect.gen(function*() {
      yield* registerEcho
      assert.deepStrictEqual(yield* CodeMode.assembly(), {
        schemas: [echoSchema, runCodeSchema()],
        knownNames: ["echo", "run_code"]
      })
      const sections = yield* CodeMode.promptSections()
      assert.deepStrictEqual(sections.map((s) => s.name), ["tools:sdk"])
      assert.strictEqual(sections[0].text, CodeSdk.render("typescript", [echoSdk]))
    }).pipe(provide)
  })

  it.scoped("MODE-2: native known names include restricted inherited names and own tools; code only run_code", () => {
    const { provide } = withFake({ mode: "native" })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(tool("a"))
      yield* registry.register(tool("b"))
      yield* registry.register(tool("own"), { agent: "A" })
      yield* registry.restrict({ deny: ["b"] }, { agent: "A" })
      const native = yield* CodeMode.assembly("A")
      assert.deepStrictEqual(native.schemas.map((s) => s.name), ["a", "own"])
      assert.deepStrictEqual(native.knownNames, ["a", "b", "own"])
      yield* registry.presentAs("both", { agent: "A" })
      const both = yield* CodeMode.assembly("A")
      assert.deepStrictEqual(both.schemas.map((s) => s.name), ["a", "own", "run_code"])
      assert.deepStrictEqual(both.knownNames, ["a", "b", "own", "run_code"])
    }).pipe(provide)
  })

  it.scoped("T-PTC-009 / REG-5: an allow mask hides tools from the SDK, the schemas and the bindings, never run_code", () => {
    const { provide } = withFake({ mode: "native" })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registerEcho
      yield* registry.register(tool("hidden"))
      for (const mode of ["code", "both"] as const) {
        const agent = `agent-${mode}`
        yield* registry.presentAs(mode, { agent })
        const lift = yield* Scope.make()
        yield* Scope.extend(registry.restrict({ allow: ["echo"] }, { agent }), lift)
        const masked = yield* CodeMode.assembly(agent)
        assert.deepStrictEqual(
          masked.schemas.map((s) => s.name),
          mode === "code" ? ["run_code"] : ["echo", "run_code"]
        )
        assert.strictEqual(sdkTextOf(yield* CodeMode.promptSections(agent)), CodeSdk.render("typescript", [echoSdk]))
        const bound = yield* runCode("names", agent)
        assert.deepStrictEqual(bound.isError === false && bound.value, { logs: [], result: ["echo"] })
        yield* Scope.close(lift, Exit.void)
        const full = yield* runCode("names", agent)
        assert.deepStrictEqual(full.isError === false && full.value, { logs: [], result: ["echo", "hidden"] })
        assert.include(sdkTextOf(yield* CodeMode.promptSections(agent)), "hidden")
      }
    }).pipe(provide)
  })

  it.scoped("T-PTC-010 / REG-5: a deny mask hides the denied tool; run_code stays and the bindings are exactly kept", () => {
    const { provide } = withFake({ mode: "native" })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(tool("kept"))
      yield* registry.register(tool("denied"))
      for (const mode of ["code", "both"] as const) {
        const agent = `agent-${mode}`
        yield* registry.presentAs(mode, { agent })
        yield* registry.restrict({ deny: ["denied"] }, { agent })
        const assembled = yield* CodeMode.assembly(agent)
        assert.isTrue(assembled.schemas.some((s) => s.name === "run_code"))
        assert.isFalse(assembled.schemas.some((s) => s.name === "denied"))
        assert.notInclude(sdkTextOf(yield* CodeMode.promptSections(agent)), "denied")
        const bound = yield* runCode("names", agent)
        assert.deepStrictEqual(bound.isError === false && bound.value, { logs: [], result: ["kept"] })
      }
    }).pipe(provide)
  })

  it.scoped("T-PTC-013 / SDK-1: the SDK text is byte-identical across assemblies and registration orders", () =>
    Effect.gen(function*() {
      const texts: Array<string> = []
      for (const order of [["a", "b", "echo"], ["echo", "b", "a"]]) {
        const { provide } = withFake()
        const text = yield* Effect.gen(function*() {
          const registry = yield* ToolRegistry
          for (const name of order) yield* registry.register(name === "echo" ? echo() : tool(name))
          const first = sdkTextOf(yield* CodeMode.promptSections())
          const second = sdkTextOf(yield* CodeMode.promptSections())
          assert.strictEqual(first, second)
          return first
        }).pipe(provide, Effect.scoped)
        texts.push(text)
      }
      assert.strictEqual(texts[0], texts[1])
      assert.isTrue(texts[0].indexOf("  a: {") < texts[0].indexOf("  b: {"))
    }))

  it.scoped("T-PTC-014 / MODE-3: code mode without a runtime fails loudly — no fallback to native", () => {
    const { provide } = withFake({ noRuntime: true })
    return Effect.gen(function*() {
      yield* registerEcho
      assert.strictEqual(yield* failureMessage(CodeMode.assembly()), missingRuntime("code"))
      assert.strictEqual(yield* failureMessage(CodeMode.promptSections()), missingRuntime("code"))
      assert.match(missingRuntime("code"), /requires a code runtime/)
    }).pipe(provide)
  })

  it.scoped("MODE-3: a non-native mode on a registry built without the run_code transport fails loudly", () => {
    const fake = Code.make(programs)
    const missing = (mode: string) =>
      `mode "${mode}" needs the \`run_code\` transport, but this registry was built without it — build it with ` +
      "InMemoryToolRegistry.layerCodeMode (or layerWith({ mode, transport: CodeMode.makeTransport() })) " +
      "or present the tools as \"native\""
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(echo())
      yield* registry.presentAs("code", { agent: "A" })
      yield* registry.presentAs("both", { agent: "B" })
      assert.strictEqual(yield* failureMessage(CodeMode.assembly("A")), missing("code"))
      assert.strictEqual(yield* failureMessage(CodeMode.promptSections("A")), missing("code"))
      assert.strictEqual(yield* failureMessage(CodeMode.assembly("B")), missing("both"))
      const native = yield* CodeMode.assembly()
      assert.deepStrictEqual(native.schemas.map((schema) => schema.name), ["echo"])
      assert.deepStrictEqual(yield* CodeMode.promptSections(), [])
    }).pipe(Effect.provide(Layer.mergeAll(InMemoryToolRegistry.layer, fake.layer)))
  })

  it.scoped("T-PTC-015 / MODE-3: a runtime language without a renderer fails assembly", () => {
    const { provide } = withFake({}, "ruby")
    return Effect.gen(function*() {
      yield* registerEcho
      const message = yield* failureMessage(CodeMode.assembly())
      assert.strictEqual(message, unknownLanguage("\"ruby\""))
      assert.match(message, /no SDK renderer registered for runtime language "ruby"/)
      assert.strictEqual(yield* failureMessage(CodeMode.promptSections()), message)
    }).pipe(provide)
  })

  it.scoped("MODE-3: language names resolve by own key only (toString, constructor, __proto__ are unknown)", () =>
    Effect.gen(function*() {
      for (const language of ["toString", "constructor", "__proto__", "hasOwnProperty", "TypeScript"]) {
        const { provide } = withFake({}, language)
        const message = yield* failureMessage(CodeMode.assembly()).pipe(provide, Effect.scoped)
        assert.strictEqual(message, unknownLanguage(JSON.stringify(language)))
      }
    }))

  it.scoped("MODE-3: a runtime whose language getter throws, or is not a string, is an unknown language", () =>
    Effect.gen(function*() {
      const hostile: CodeRuntimeService = {
        get language(): string {
          throw new Error("hostile language")
        },
        isolation: "wasm",
        run: () => Effect.die("never")
      }
      const numeric = { language: 7 as unknown as string, isolation: "wasm" as const, run: () => Effect.die("never") }
      for (const [runtime, shown] of [[hostile, "undefined"], [numeric, "7"]] as const) {
        const layer = Code.layer(Code.make({}), { noRuntime: true }).pipe(
          Layer.provideMerge(Layer.succeed(CodeRuntime, runtime))
        )
        const message = yield* failureMessage(CodeMode.assembly()).pipe(Effect.provide(layer), Effect.scoped)
        assert.strictEqual(message, unknownLanguage(shown))
      }
    }))

  it.scoped("T-PTC-017 / MODE-7: python + both — a Python SDK, the Python run_code text, native echo present", () => {
    const { provide } = withFake({ mode: "both" }, "python")
    return Effect.gen(function*() {
      yield* registerEcho
      const assembled = yield* CodeMode.assembly()
      assert.deepStrictEqual(assembled.schemas, [echoSchema, runCodeSchema("python")])
      assert.include(assembled.schemas[1].description, "Execute a Python program")
      const sdk = sdkTextOf(yield* CodeMode.promptSections())
      assert.strictEqual(sdk, CodeSdk.render("python", [echoSdk]))
      assert.include(sdk, "```python")
    }).pipe(provide)
  })

  it.scoped("MODE-7: registry schemas follow the mounted language — TypeScript with none, a defect for an unknown one", () =>
    Effect.gen(function*() {
      const read = (options: Code.LayerOptions, language?: string) => {
        const { provide } = withFake(options, language)
        return Effect.flatMap(ToolRegistry, (registry) => registry.schemas()).pipe(provide, Effect.scoped)
      }
      assert.deepStrictEqual(yield* read({ noRuntime: true }), [runCodeSchema("typescript")])
      assert.deepStrictEqual(yield* read({}, "typescript"), [runCodeSchema("typescript")])
      assert.deepStrictEqual(yield* read({}, "python"), [runCodeSchema("python")])
      const defect = yield* defectOf(read({}, "ruby"))
      assert.strictEqual(
        (defect as CodeMode.CodeModeError).message,
        "dsh-tools: no run_code schema flavor registered for runtime language \"ruby\" (known: \"typescript\", \"python\")"
      )
      const ts = runCodeSchema("typescript").parameters.properties as Record<string, unknown>
      const py = runCodeSchema("python").parameters.properties as Record<string, unknown>
      assert.deepStrictEqual(ts.description, py.description)
    }))

  it.scoped("T-PTC-071 / SCOPE-4: an agent presenting code in a native deployment gets run_code; others stay native", () => {
    const { provide } = withFake({ mode: "native" })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      let ran = 0
      yield* registry.register(echo({ execute: () => Effect.sync(() => `ran ${++ran}`) }))
      yield* registry.presentAs("code", { agent: "A" })
      assert.deepStrictEqual((yield* CodeMode.assembly("A")).schemas, [runCodeSchema()])
      assert.include(sdkTextOf(yield* CodeMode.promptSections("A")), "echo: {")
      assert.deepStrictEqual(
        yield* call("echo", "A"),
        errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL"))
      )
      assert.strictEqual(ran, 0)
      assert.deepStrictEqual(yield* CodeMode.assembly(), { schemas: [echoSchema], knownNames: ["echo"] })
      assert.deepStrictEqual(yield* CodeMode.promptSections(), [])
    }).pipe(provide)
  })

  it.scoped("T-PTC-072 / SCOPE-4: a standing scope's code presentation is inherited; a sibling stays native", () => {
    const { provide } = withFake({ mode: "native" })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registerEcho
      yield* registry.declareAgent("standing")
      yield* registry.declareAgent("J", { parent: "standing" })
      yield* registry.declareAgent("loner")
      yield* registry.presentAs("code", { agent: "standing" })
      assert.isTrue(Option.isSome(yield* registry.get("run_code", "J")))
      assert.deepStrictEqual((yield* CodeMode.assembly("J")).schemas.map((s) => s.name), ["run_code"])
      assert.strictEqual(yield* registry.executionMode({ name: "echo", arguments: {}, agent: "J" }), "exclusive")
      assert.deepStrictEqual(
        yield* call("echo", "J"),
        errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL"))
      )
      assert.deepStrictEqual(yield* call("echo", "loner", { text: "echo:loner" }), echoed("echo:loner"))
      assert.isTrue(Option.isNone(yield* registry.get("run_code", "loner")))
    }).pipe(provide)
  })

  it.scoped("T-PTC-073 / MODE-5: run_code resolves only for agents that present code", () => {
    const { provide } = withFake({ mode: "native" })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.presentAs("code", { agent: "coder" })
      yield* registry.presentAs("both", { agent: "mixed" })
      assert.isTrue(Option.isSome(yield* registry.get("run_code", "coder")))
      assert.isTrue(Option.isSome(yield* registry.get("run_code", "mixed")))
      assert.isTrue(Option.isNone(yield* registry.get("run_code", "plain")))
      assert.isTrue(Option.isNone(yield* registry.get("run_code")))
    }).pipe(provide)
  })

  it.scoped("T-PTC-074: an agent presenting native in a code deployment gets [echo] and no SDK section", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registerEcho
      yield* registry.presentAs("native", { agent: "N" })
      assert.deepStrictEqual(yield* CodeMode.assembly("N"), { schemas: [echoSchema], knownNames: ["echo"] })
      assert.deepStrictEqual(yield* CodeMode.promptSections("N"), [])
      assert.deepStrictEqual(yield* call("echo", "N"), echoed("hi"))
    }).pipe(provide)
  })

  it.scoped("T-PTC-075 / T-PTC-023: disposing the presentation (and the tools) restores the default; nothing is left", () => {
    const { provide } = withFake({ mode: "native" })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const scope = yield* Scope.make()
      yield* Scope.extend(Effect.all([registry.register(echo()), registry.presentAs("code", { agent: "A" })]), scope)
      assert.deepStrictEqual((yield* CodeMode.assembly("A")).schemas.map((s) => s.name), ["run_code"])
      assert.strictEqual((yield* CodeMode.promptSections("A")).length, 2)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* CodeMode.assembly("A"), { schemas: [], knownNames: [] })
      assert.deepStrictEqual(yield* CodeMode.promptSections("A"), [])
      assert.isTrue(Option.isNone(yield* registry.get("run_code", "A")))
    }).pipe(provide)
  })

  it.scoped("T-PTC-078 / MODE-3: a missing runtime is reported against the agent's own mode", () => {
    const { provide } = withFake({ mode: "native", noRuntime: true })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.presentAs("both", { agent: "B" })
      assert.strictEqual(yield* failureMessage(CodeMode.assembly("B")), missingRuntime("both"))
      assert.deepStrictEqual(yield* CodeMode.assembly(), { schemas: [], knownNames: [] })
    }).pipe(provide)
  })

  it.scoped("MODE-5: run_code cannot be registered, shadowed or restricted; an empty allow list keeps it", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registerEcho
      const refused = yield* Effect.flip(registry.register(tool("run_code")))
      assert.strictEqual(
        refused.message,
        "tool name \"run_code\" is reserved for the Code Mode presentation transport and cannot be registered or shadowed"
      )
      const shadow = yield* Effect.flip(registry.register(tool("run_code"), { agent: "A" }))
      assert.match(shadow.message, /reserved for the Code Mode presentation transport/)
      const restricted = yield* Effect.flip(registry.restrict({ allow: ["run_code"] }, { agent: "A" }))
      assert.match(restricted.message, /cannot name reserved Code Mode presentation transport "run_code"/)
      yield* registry.restrict({ allow: [] }, { agent: "A" })
      assert.deepStrictEqual((yield* CodeMode.assembly("A")).schemas, [runCodeSchema()])
      assert.strictEqual(sdkTextOf(yield* CodeMode.promptSections("A")), CodeSdk.render("typescript", []))
    }).pipe(provide)
  })
})

describe("SDK section input (SDK-1)", () => {
  it.scoped("T-PTC-005 / SDK-1: a 5,000-deep output union projects into the SDK without a stack overflow", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      let schema: JsonSchema = { type: "string" }
      for (let i = 0; i < 5_000; i++) schema = { oneOf: [schema, { type: "null" }] }
      yield* Effect.flatMap(ToolRegistry, (registry) =>
        registry.register(echo({ name: "deep_output", parameters: { type: "object" }, output: { schema, render: () => [] } })))
      const lines = sdkTextOf(yield* CodeMode.promptSections()).split("\n").filter((l) => l.includes("deep_output"))
      assert.strictEqual(lines.length, 2)
      assert.strictEqual(lines[0], "  deep_output: Record<string, JsonValue>;")
      assert.isTrue(lines[1].startsWith("  deep_output: string | null | null"))
    }).pipe(provide)
  })
})

describe("Code Mode collapse per mode (CREATE-6, MODE-6)", () => {
  const instrumented = Effect.gen(function*() {
    const registry = yield* ToolRegistry
    const stages: Array<string> = []
    let bodies = 0
    let finalized = 0
    yield* registry.register(echo({
      execute: (args) => Effect.sync(() => (++bodies, (args as { text?: string }).text ?? "")),
      finalizeContent: () => (++finalized, undefined)
    }))
    yield* registry.onPreExecute((exec, next) => Effect.suspend(() => (stages.push(`pre ${exec.name}`), next)))
    yield* registry.onPostExecute((exec, _result, next) =>
      Effect.suspend(() => (stages.push(`post ${exec.name}`), next))
    )
    yield* registry.onResult((exec) => Effect.sync(() => void stages.push(`result ${exec.name}`)))
    return { stages, bodies: () => bodies, finalized: () => finalized }
  })

  it.scoped("T-EXEC-010 / CREATE-6: under code a visible tool called directly is route-bearing UNKNOWN_TOOL before any policy", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      const probe = yield* instrumented
      assert.deepStrictEqual(
        yield* call("echo"),
        errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL"))
      )
      assert.deepStrictEqual(probe.stages, ["result echo"])
      assert.strictEqual(probe.bodies(), 0)
      assert.strictEqual(probe.finalized(), 0)
      assert.strictEqual(yield* Effect.flatMap(ToolRegistry, (r) => r.executionMode({ name: "echo", arguments: {} })), "exclusive")
    }).pipe(provide)
  })

  it.scoped("CREATE-6: an unknown name keeps the ordinary path under code — policy sees it, plain UNKNOWN_TOOL", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      const probe = yield* instrumented
      assert.deepStrictEqual(yield* call("ghost"), unknownTool("ghost"))
      assert.deepStrictEqual(probe.stages, ["pre ghost", "post ghost", "result ghost"])
    }).pipe(provide)
  })

  it.scoped("T-EXEC-011 / CREATE-6: an aborted collapsed call is ABORTED_BEFORE_DISPATCH with the finalizer applied", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      const probe = yield* instrumented
      const result = yield* Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) =>
        runtime.execute({ callId: "x", name: "echo", arguments: {}, signal: aborted() }))
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(probe.finalized(), 1)
      assert.deepStrictEqual(probe.stages, ["result echo"])
    }).pipe(provide)
  })

  it.scoped("T-SCHED-021 / CREATE-6: a native call emitted by the model under code is collapsed in the batch; its body never runs", () => {
    const { provide } = withFake()
    return Effect.gen(function*() {
      const probe = yield* instrumented
      const batch = yield* Scheduler.runBatch([{ callId: "m1", name: "echo", arguments: "{\"text\":\"x\"}" }], {
        agent: "main"
      })
      assert.deepStrictEqual(batch.results.map((r) => r.result), [
        errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL"))
      ])
      assert.strictEqual(probe.bodies(), 0)
      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
      const result = records.find((r) => r._tag === "tool/result") as ToolCallLogModule.ToolResultRecord
      assert.deepStrictEqual(result.error, { name: "ToolNotFoundError", code: "UNKNOWN_TOOL" })
    }).pipe(provide)
  })

  it.scoped("MODE-6: both and native never collapse; run_code itself is callable directly under code", () =>
    Effect.gen(function*() {
      for (const mode of ["both", "native"] as const) {
        const { provide } = withFake({ mode })
        yield* Effect.gen(function*() {
          const probe = yield* instrumented
          assert.deepStrictEqual(yield* call("echo"), echoed("hi"))
          assert.deepStrictEqual(probe.stages, ["pre echo", "post echo", "result echo"])
        }).pipe(provide, Effect.scoped)
      }
      const { provide } = withFake()
      const result = yield* runCode("hello").pipe(provide, Effect.scoped)
      assert.deepStrictEqual(result, { isError: false, value: { logs: ["hello"], result: 42 }, content: text("hello\n42") })
    }))
})

describe("run_code transport (PTC-1…5, D-1, REG-10)", () => {
  const transport = CodeMode.makeTransport()

  it("PTC-1 / D-1: parameters are description then code, both required strings, in an open object", () => {
    const parameters = transport.parameters as unknown as {
      properties: Record<string, unknown>
      required: Array<string>
    }
    assert.deepStrictEqual<unknown>(parameters, runCodeSchema().parameters)
    assert.deepStrictEqual(Object.keys(parameters.properties), ["description", "code"])
    assert.deepStrictEqual(parameters.required, ["description", "code"])
    assert.isFalse("additionalProperties" in parameters)
    assert.strictEqual(transport.name, "run_code")
    assert.strictEqual(transport.description, TS_DESCRIPTION)
  })

  it.scoped("PTC-1: extra keys are ignored, an empty program is allowed, non-strings are INVALID_ARGS", () => {
    const { fake, provide } = withFake()
    return Effect.gen(function*() {
      const extra = yield* runCode("hello", undefined, { extra: { nested: true } })
      assert.deepStrictEqual(extra.isError === false && extra.value, { logs: ["hello"], result: 42 })
      const empty = yield* runCode("")
      assert.deepStrictEqual(empty, { isError: false, value: { logs: [] }, content: text("(run_code completed with no output)") })
      assert.deepStrictEqual(
        yield* runCode(42 as unknown as string),
        errorResult("invalid arguments: \"code\" must be a string", info("ToolArgsError", "INVALID_ARGS"))
      )
      const missing = yield* Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) =>
        runtime.execute({ callId: "m", name: "run_code", arguments: { code: "hello" } }))
      assert.deepStrictEqual(
        missing,
        errorResult(
          "invalid arguments: missing required property \"description\"",
          info("ToolArgsError", "INVALID_ARGS")
        )
      )
      assert.strictEqual(fake.runs.length, 2)
    }).pipe(provide)
  })

  it("PTC-2: the output is a closed object { logs: string[], result?: any JSON }", () => {
    assert.deepStrictEqual(transport.output.schema, {
      type: "object",
      additionalProperties: false,
      properties: { logs: { type: "array", items: { type: "string" } }, result: {} },
      required: ["logs"]
    })
  })

  const render = (value: CodeMode.RunCodeOutput): string => {
    const content = transport.output.render({ description: "d", code: "" }, value as never)
    assert.strictEqual(content.length, 1)
    return (content[0] as { text: string }).text
  }

  it("PTC-3 / T-PTC-055 / T-PTC-063: logs, then the result; strings raw, the rest pretty JSON", () => {
    assert.strictEqual(render({ logs: ["printed"] }), "printed")
    assert.strictEqual(render({ logs: [], result: "returned" }), "returned")
    assert.strictEqual(render({ logs: ["printed"], result: "returned" }), "printed\nreturned")
    assert.strictEqual(render({ logs: [] }), "(run_code completed with no output)")
    assert.strictEqual(render({ logs: ["a", "b"] }), "a\nb")
    assert.strictEqual(render({ logs: [], result: "raw\nstring" }), "raw\nstring")
    assert.strictEqual(render({ logs: ["x"], result: null }), "x\nnull")
    assert.strictEqual(render({ logs: [], result: "" }), "(run_code completed with no output)")
    assert.strictEqual(render({ logs: [], result: { n: 42, ok: true } }), "{\n  \"n\": 42,\n  \"ok\": true\n}")
    assert.strictEqual(render({ logs: [], result: {} }), "{}")
    assert.strictEqual(render({ logs: [], result: ["x", 2] }), "[\n  \"x\",\n  2\n]")
    assert.strictEqual(render({ logs: [], result: [] }), "[]")
    assert.strictEqual(render({ logs: [], result: null }), "null")
    assert.strictEqual(render({ logs: [], result: 1e21 }), "1e+21")
    assert.strictEqual(render({ logs: [], result: { "a\"b": "\u2028" } }), "{\n  \"a\\\"b\": \"\u2028\"\n}")
  })

  it("PTC-3 / §22.1: the reference vectors, compact from depth 5 (indentation capped at 10)", () => {
    assert.strictEqual(
      render({ logs: [], result: { a: [1, { b: {} }], c: [] } }),
      ["{", "  \"a\": [", "    1,", "    {", "      \"b\": {}", "    }", "  ],", "  \"c\": []", "}"].join("\n")
    )
    const lines = render({ logs: [], result: [[[[[[[1, { k: 2 }]]]]]]] }).split("\n")
    assert.deepStrictEqual(lines, [
      "[",
      "  [",
      "    [",
      "      [",
      "        [",
      "          [[1,{\"k\":2}]]",
      "        ]",
      "      ]",
      "    ]",
      "  ]",
      "]"
    ])
    assert.strictEqual(
      render({ logs: [], result: { a: { b: { c: { d: { e: { f: [1, "x"] }, g: [] } } } } } }).split("\n")[5],
      "          \"e\": {\"f\":[1,\"x\"]},"
    )
  })

  it("PTC-3: rendering is iterative — 20,000 levels of nesting render without a stack overflow", () => {
    let deep: unknown = "leaf"
    for (let i = 0; i < 20_000; i++) deep = i % 2 === 0 ? [deep] : { k: deep }
    const text = render({ logs: [], result: deep as never })
    assert.isTrue(text.endsWith("\"leaf\"" + "]}".repeat(9_997) + "]\n        }\n      ]\n    }\n  ]\n}"))
  })

  it("PTC-4 / T-PTC-053: the generic card; no classifier, timeout, finalizer, meta or result presenter", () => {
    assert.deepStrictEqual(
      Presentation.presentCall(transport, { description: "Count TODOs", code: "return 1" }),
      { card: "generic", title: "Count TODOs", kind: "execute", rawInput: "return 1" }
    )
    assert.isUndefined(Presentation.presentCall(transport, { code: "return 1" }))
    assert.isUndefined(Presentation.presentCall(transport, { description: 1, code: "return 1" }))
    for (const key of ["isConcurrencySafe", "timeoutMs", "finalizeContent", "projectContent", "presentResult"] as const) {
      assert.isUndefined(transport[key], key)
    }
    assert.isUndefined(transport.output.presentationMeta)
  })

  it.scoped("PTC-5: a blank description is a plain body error (post-execute runs); the runtime is not invoked", () => {
    const { fake, provide } = withFake()
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const posted: Array<ToolResult> = []
      yield* registry.onPostExecute((_exec, result, next) => Effect.suspend(() => (posted.push(result), next)))
      const result = yield* runCode("hello", undefined, { description: "  \n\t " })
      const expected = errorResult("invalid description: expected a non-empty string")
      assert.deepStrictEqual(result, expected)
      assert.deepStrictEqual(posted, [expected])
      assert.strictEqual(fake.runs.length, 0)
    }).pipe(provide)
  })

  it.scoped("PTC-5 / T-PTC-052 / OQ-19: without a runtime run_code fails with a structured error naming the deployment mode", () => {
    const { provide } = withFake({ mode: "native", noRuntime: true })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.presentAs("code", { agent: "A" })
      const result = yield* runCode("hello", "A")
      assert.deepStrictEqual(result, errorResult(missingRuntime("native")))
      assert.include(result.isError ? result.error.message : "", "requires a code runtime")
    }).pipe(provide)
  })

  it.scoped("PTC-5 / MODE-3: a runtime language without a renderer fails run_code too", () => {
    const { fake, provide } = withFake({}, "ruby")
    return Effect.gen(function*() {
      assert.deepStrictEqual(yield* runCode("hello"), errorResult(unknownLanguage("\"ruby\"")))
      assert.strictEqual(fake.runs.length, 0)
    }).pipe(provide)
  })

  it.scoped("T-PTC-065 / PRE-1: a pre-aborted run_code is ABORTED_BEFORE_DISPATCH; the runtime is never invoked", () => {
    const { fake, provide } = withFake()
    return Effect.gen(function*() {
      yield* registerEcho
      assert.deepStrictEqual(yield* runCode("hello", undefined, {}, aborted()), ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(fake.runs.length, 0)
      assert.strictEqual(fake.calls.length, 0)
    }).pipe(provide)
  })

  it("REG-10 / T-PTC-068: maxParallelSubCalls must be a positive integer (default 10)", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "2", null]) {
      assert.throws(
        () => CodeMode.makeTransport({ maxParallelSubCalls: bad as number }),
        "maxParallelSubCalls must be a positive integer"
      )
    }
    assert.strictEqual(CodeMode.DEFAULT_MAX_PARALLEL_SUB_CALLS, 10)
    assert.strictEqual(CodeMode.makeTransport({ maxParallelSubCalls: 1 }).name, "run_code")
    assert.isTrue(CodeMode.isValidMaxParallelSubCalls(3))
    assert.isFalse(CodeMode.isValidMaxParallelSubCalls(0))
    const hostile = {
      get maxParallelSubCalls(): number {
        throw new Error("hostile option")
      }
    }
    assert.throws(() => CodeMode.makeTransport(hostile), "maxParallelSubCalls must be a positive integer")
  })

  it.scoped("REG-10: layerCodeMode rejects an invalid cap or mode when it is built", () =>
    Effect.gen(function*() {
      const cap = yield* defectOf(Layer.build(InMemoryToolRegistry.layerCodeMode({ maxParallelSubCalls: 0 })))
      assert.strictEqual((cap as CodeMode.CodeModeError)._tag, "CodeModeError")
      assert.strictEqual((cap as CodeMode.CodeModeError).message, "maxParallelSubCalls must be a positive integer")
      const mode = yield* defectOf(
        Layer.build(InMemoryToolRegistry.layerCodeMode({ mode: "ptc" as "code" }))
      )
      assert.isTrue(Cause.isIllegalArgumentException(mode))
      const registry = yield* Layer.build(InMemoryToolRegistry.layerCodeMode()).pipe(
        Effect.map((context) => Layer.succeedContext(context))
      )
      const view = yield* Effect.provide(Effect.map(ToolRegistry, (r) => r.unsafeView()), registry)
      assert.strictEqual(view.mode, "code")
      assert.deepStrictEqual(view.tools.map((t) => t.definition.name), ["run_code"])
    }))
})

describe("both mode through the batch scheduler (PTC-18)", () => {
  it.scoped("PTC-18: native siblings run natively; run_code is one exclusive call whose sub-calls run inside it", () => {
    const trace = Code.makeTrace()
    const fake = Code.make({
      sub: (guest) => Effect.map(guest.invoke("read", { text: "inner" }), (value) => `program read ${String(value)}`)
    })
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(Code.gated(trace, "read", { parallel: true, gated: false }))
      assert.strictEqual(yield* registry.executionMode({ name: "run_code", arguments: {} }), "exclusive")
      const batch = yield* Scheduler.runBatch([
        { callId: "n1", name: "read", arguments: "{\"text\":\"one\"}" },
        { callId: "rc", name: "run_code", arguments: JSON.stringify({ description: "Read inside", code: "sub" }) },
        { callId: "n2", name: "read", arguments: "{\"text\":\"two\"}" }
      ], { agent: "main" })
      assert.deepStrictEqual(batch.results.map((r) => r.result.isError ? r.result.error : r.result.value), [
        "one",
        { logs: [], result: "program read inner" },
        "two"
      ])
      assert.deepStrictEqual(trace.events, ["enter n1", "exit n1", "enter rc:code:1", "exit rc:code:1", "enter n2", "exit n2"])
    }).pipe(Effect.provide(Code.layer(fake, { mode: "both" })))
  })
})
