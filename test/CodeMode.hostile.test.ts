/**
 * An adversarial pass over Code Mode's public surfaces (the bridge's own hostile cases are in
 * CodeMode.bridge.test.ts): hostile `run_code` arguments through `execute`, a code runtime
 * service that misbehaves, hostile transport and registry options, hostile SDK languages.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as CodeMode from "../src/CodeMode.js"
import { CodeRuntime } from "../src/CodeRuntime.js"
import type * as CodeRuntimeModule from "../src/CodeRuntime.js"
import * as CodeSdk from "../src/CodeSdk.js"
import type { ExecuteInput } from "../src/Execution.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as Code from "./fixtures/codeRuntime.js"
import * as Hostile from "./fixtures/hostile.js"

const execute = (args: unknown, callId = "call-1") =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) =>
    runtime.execute({ callId, name: "run_code", agent: "main", arguments: args } as ExecuteInput))

const summary = (result: ToolResult) => {
  assert.isTrue(Object.isFrozen(result), "the result is frozen")
  return result.isError
    ? { isError: true, message: result.error.message, code: result.error.info?.code }
    : { isError: false, value: result.value }
}

describe("CodeMode hostile: run_code arguments through execute (PTC-2)", () => {
  const throwingCode = () =>
    Object.defineProperty({ description: "d" }, "code", {
      enumerable: true,
      get: () => {
        throw Hostile.throwingProxy()
      }
    })
  const cases: ReadonlyArray<readonly [string, () => unknown, string]> = [
    ["a throwing proxy", () => Hostile.throwingProxy(), "hostile getPrototypeOf"],
    ["a revoked proxy", () => Hostile.revokedProxy(), "Cannot perform 'IsArray' on a proxy that has been revoked"],
    ["a `code` getter that throws a throwing proxy", throwingCode, "<unprintable thrown value>"],
    ["a bigint `code`", () => ({ description: "d", code: 10n }), "tool execution arguments must be losslessly JSON-serializable"],
    ["a null-prototype `code`", () => ({ description: "d", code: Hostile.nullProto() }), "invalid arguments: \"code\" must be a string"]
  ]
  for (const [label, make, message] of cases) {
    it.scoped(`PTC-2: arguments that are ${label} yield one frozen error result; the program never runs`, () => {
      const fake = Code.make({ ok: () => Effect.succeed(1) })
      return Effect.gen(function*() {
        const result = summary(yield* execute(make()))
        assert.strictEqual(result.isError, true)
        assert.strictEqual(result.message, message)
        assert.strictEqual(fake.runs.length, 0)
      }).pipe(Effect.provide(Code.layer(fake)))
    })
  }

  it.scoped("PTC-2: a 1 MB program reaches the runtime whole; the result is one frozen error from the runtime", () => {
    const fake = Code.make({})
    const code = "x".repeat(1_000_000)
    return Effect.gen(function*() {
      assert.deepStrictEqual(summary(yield* execute({ description: "d", code })), {
        isError: true,
        message: "code run failed (exception): SyntaxError: unknown program",
        code: "CODE_RUN_FAILED"
      })
      assert.strictEqual(fake.runs.length, 1)
      assert.strictEqual(fake.runs[0]!.program.length, 1_000_000)
    }).pipe(Effect.provide(Code.layer(fake)))
  })
})

describe("CodeMode hostile: a misbehaving code runtime service (PTC-14)", () => {
  const service = (run: (request: CodeRuntimeModule.CodeRunRequest) => unknown): CodeRuntimeModule.Service => ({
    language: "typescript",
    isolation: "wasm",
    run: run as CodeRuntimeModule.Service["run"]
  })
  const MALFORMED = "the code runtime returned a malformed result"
  const runtimes: ReadonlyArray<readonly [string, CodeRuntimeModule.Service, string]> = [
    ["throws a throwing proxy synchronously", service(() => {
      throw Hostile.throwingProxy()
    }), "hostile has"],
    ["returns a revoked proxy instead of an Effect", service(() => Hostile.revokedProxy()),
      "Cannot perform 'has' on a proxy that has been revoked"],
    ["returns a plain object instead of an Effect", service(() => ({ logs: [] })),
      "the code runtime's run did not return an Effect"],
    ["dies with a throwing proxy", service(() => Effect.die(Hostile.throwingProxy())), "hostile has"],
    ["fails with a revoked proxy", service(() => Effect.fail(Hostile.revokedProxy())),
      "Cannot perform 'has' on a proxy that has been revoked"],
    ["answers an error whose message is a throwing proxy", service(() =>
      Effect.succeed({ logs: [], error: { kind: "exception", message: Hostile.throwingProxy() } })), MALFORMED],
    ["answers logs holding a bigint", service(() => Effect.succeed({ logs: [10n] })), MALFORMED],
    ["answers a result whose logs getter throws", service(() =>
      Effect.succeed(Object.defineProperty({}, "logs", {
        get: () => {
          throw Hostile.revokedProxy()
        }
      }))), MALFORMED]
  ]
  for (const [label, runtime, message] of runtimes) {
    it.scoped(`PTC-14: a runtime that ${label} yields one frozen error result`, () => {
      const fake = Code.make({})
      return Effect.gen(function*() {
        const first = summary(yield* execute({ description: "d", code: "p" }))
        const second = summary(yield* execute({ description: "d", code: "p" }, "call-2"))
        assert.deepStrictEqual(first, { isError: true, message, code: undefined })
        assert.deepStrictEqual(second, first, "the same misbehaviour yields the same result")
      }).pipe(Effect.provide(Code.layer(fake, { runtime: Layer.succeed(CodeRuntime, runtime) })))
    })
  }
})

describe("CodeMode hostile: options (PTC-9)", () => {
  const badOptions: ReadonlyArray<readonly [string, () => unknown]> = [
    ["a throwing proxy", () => Hostile.throwingProxy()],
    ["a revoked proxy", () => Hostile.revokedProxy()],
    ["a bigint maxParallelSubCalls", () => ({ maxParallelSubCalls: 10n })],
    ["a NaN maxParallelSubCalls", () => ({ maxParallelSubCalls: Number.NaN })],
    ["a fractional maxParallelSubCalls", () => ({ maxParallelSubCalls: 1.5 })],
    ["a null-prototype maxParallelSubCalls", () => ({ maxParallelSubCalls: Hostile.nullProto() })],
    ["a maxParallelSubCalls getter that throws", () =>
      Object.defineProperty({}, "maxParallelSubCalls", {
        get: () => {
          throw Hostile.throwingProxy()
        }
      })]
  ]
  for (const [label, make] of badOptions) {
    it(`PTC-9: makeTransport with ${label} throws CodeModeError with the fixed message`, () => {
      let thrown: unknown
      try {
        CodeMode.makeTransport(make() as CodeMode.TransportOptions)
      } catch (error) {
        thrown = error
      }
      assert.instanceOf(thrown, CodeMode.CodeModeError)
      assert.strictEqual((thrown as CodeMode.CodeModeError).message, CodeMode.MAX_PARALLEL_SUB_CALLS_MESSAGE)
    })
  }

  const registryOptions: ReadonlyArray<readonly [string, () => unknown]> = [
    ["a revoked proxy", () => Hostile.revokedProxy()],
    ["a null-prototype mode", () => ({ mode: Hostile.nullProto() })],
    ["a bigint mode", () => ({ mode: 1n })],
    ["a throwing-proxy maxParallelSubCalls", () => ({ mode: "code", maxParallelSubCalls: Hostile.throwingProxy() })]
  ]
  for (const [label, make] of registryOptions) {
    it.effect(`PTC-9: InMemoryToolRegistry.layerCodeMode with ${label} is a defect at build, never a throw`, () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(
          Effect.scoped(Layer.build(InMemoryToolRegistry.layerCodeMode(make() as InMemoryToolRegistry.CodeModeOptions)))
        )
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
        const defect = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined
        assert.isTrue(defect instanceof Cause.IllegalArgumentException || defect instanceof CodeMode.CodeModeError)
        assert.notInclude((defect as Error).message, "[object")
      }))
  }
})

describe("CodeSdk hostile: render with untyped languages", () => {
  const tools: ReadonlyArray<CodeSdk.SdkTool> = [{ name: "echo", description: "Echoes.", parameters: { type: "object" } }]
  it("a hostile language renders TypeScript and reads nothing of it", () => {
    const typescript = CodeSdk.renderTypeScript(tools)
    for (const kind of Hostile.kinds) {
      assert.strictEqual(CodeSdk.render(Hostile.make(kind) as CodeSdk.SdkLanguage, tools), typescript, kind)
      assert.isFalse(CodeSdk.isSdkLanguage(Hostile.make(kind)), kind)
    }
    assert.strictEqual(CodeSdk.render("python", tools), CodeSdk.renderPython(tools))
  })
})
