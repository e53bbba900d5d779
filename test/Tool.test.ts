import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Option } from "effect"
import type { Content } from "../src/Content.js"
import type { RunContext } from "../src/Execution.js"
import * as Json from "../src/Json.js"
import type { JsonValue } from "../src/Json.js"
import type { ToolDefinition } from "../src/Tool.js"
import { defineTool, validateArgs } from "../src/Tool.js"
import { detailOf, JsonSchemaError, ToolArgsError, ToolDefinitionError } from "../src/ToolError.js"
import type { ToolResult } from "../src/ToolResult.js"
import { defineContentToolFixture } from "./fixtures/contentTool.js"
import { nullProto, revokedProxy, throwingConversions, throwingProxy } from "./fixtures/hostile.js"

const text = (value: string) => ({ type: "text" as const, text: value })

const makeCtx = (signal: AbortSignal = new AbortController().signal): RunContext => ({
  token: Symbol("dsh.tool.execution"),
  callId: "c1",
  rootCallId: "c1",
  name: "read",
  arguments: undefined,
  signal,
  deferContext: () => undefined,
  concludeTurn: () => undefined
})

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const failure = Cause.failureOption((exit as Exit.Failure<A, E>).cause)
  assert.isTrue(Option.isSome(failure), "expected a typed failure")
  return (failure as Option.Some<E>).value
}

const thrown = (thunk: () => unknown): unknown => {
  try {
    thunk()
  } catch (error) {
    return error
  }
  return assert.fail("expected a throw")
}

interface Counter {
  calls: number
  runs: number
}

const counter = (): Counter => ({ calls: 0, runs: 0 })

const readTool = (count: Counter) =>
  defineContentToolFixture({
    name: "read",
    description: "Read a file.",
    parameters: { path: { type: "string", required: true } },
    execute: (args) => {
      count.calls++
      return Effect.sync(() => {
        count.runs++
        return [text(`read ${args.path}`)]
      })
    }
  })

const minimal = {
  name: "echo",
  description: "Echo.",
  parameters: { text: { type: "string", required: true } },
  output: { schema: { type: "string" }, render: (_args: unknown, value: string) => [text(value)] },
  execute: (args: { readonly text: string }) => Effect.succeed(args.text)
} as const

describe("DEF-1 definition-time order and failures", () => {
  it("D-6: an empty name throws defineTool(): name must be a non-empty string", () => {
    const error = thrown(() => defineTool({ ...minimal, name: "" }))
    assert.instanceOf(error, Error)
    assert.strictEqual((error as Error).message, "defineTool(): name must be a non-empty string")
  })

  it("T-DEF-003: timeoutMs 30000 is carried", () => {
    assert.strictEqual(defineTool({ ...minimal, timeoutMs: 30000 }).timeoutMs, 30000)
    assert.strictEqual(defineTool({ ...minimal, timeoutMs: 2147483647 }).timeoutMs, 2147483647)
    assert.strictEqual(defineTool({ ...minimal, timeoutMs: 0.5 }).timeoutMs, 0.5)
  })

  it("T-DEF-005: timeoutMs 0 or -5 throws timeoutMs must be a positive finite number", () => {
    for (const timeoutMs of [0, -5, -0]) {
      const error = thrown(() => defineTool({ ...minimal, timeoutMs }))
      assert.instanceOf(error, Error)
      assert.strictEqual((error as Error).message, "defineTool(echo): timeoutMs must be a positive finite number")
    }
  })

  it("T-DEF-006: timeoutMs Infinity (and NaN, non-numbers) throws … positive finite number", () => {
    for (const timeoutMs of [Infinity, -Infinity, Number.NaN, "10" as unknown as number]) {
      assert.strictEqual(
        (thrown(() => defineTool({ ...minimal, timeoutMs })) as Error).message,
        "defineTool(echo): timeoutMs must be a positive finite number"
      )
    }
  })

  it("D-6: timeoutMs above 2147483647 throws the upper-bound message", () => {
    assert.strictEqual(
      (thrown(() => defineTool({ ...minimal, timeoutMs: 2147483648 })) as Error).message,
      "defineTool(echo): timeoutMs must be a positive finite number no greater than 2147483647"
    )
  })

  it("DEF-1: DSL failures throw JsonSchemaError (parameters, then output)", () => {
    const params = thrown(() =>
      defineTool({ ...minimal, parameters: { a: { type: "string", required: false } } } as never)
    )
    assert.instanceOf(params, JsonSchemaError)
    assert.deepStrictEqual((params as JsonSchemaError).violations, ["parameters.a.required must be true when present"])
    const output = thrown(() =>
      defineTool({ ...minimal, output: { schema: { type: "object" }, render: () => [] } } as never)
    )
    assert.instanceOf(output, JsonSchemaError)
    assert.strictEqual(
      (output as JsonSchemaError).message,
      "unsupported JSON schema: schema.additionalProperties must be explicitly true or false"
    )
  })

  it("DEF-1: order is timeoutMs, then parameters, then output", () => {
    const badParams = { a: 42 }
    const badOutput = { schema: {}, render: () => [] }
    assert.strictEqual(
      (thrown(() =>
        defineTool({ ...minimal, timeoutMs: 0, parameters: badParams, output: badOutput } as never)
      ) as Error).message,
      "defineTool(echo): timeoutMs must be a positive finite number"
    )
    assert.deepStrictEqual(
      (thrown(() => defineTool({ ...minimal, parameters: badParams, output: badOutput } as never)) as JsonSchemaError)
        .violations,
      ["parameters.a must be a value schema object"]
    )
    assert.deepStrictEqual(
      (thrown(() => defineTool({ ...minimal, output: badOutput } as never)) as JsonSchemaError).violations,
      ["schema.type must be string/number/integer/boolean/null/array/object/json, or use oneOf"]
    )
  })

  it("DEF-1: untyped callers without output.render or execute get a definition-time error", () => {
    assert.strictEqual(
      (thrown(() => defineTool({ ...minimal, output: undefined as never })) as Error).message,
      "defineTool(echo): must declare output { schema, render, presentationMeta? }"
    )
    assert.strictEqual(
      (thrown(() => defineTool({ ...minimal, execute: undefined as never })) as Error).message,
      "defineTool(echo): execute must be a function"
    )
  })

  it("DEF-1: each callback is read from the options exactly once, at definition time", () => {
    const reads: Record<string, number> = {}
    const counted = <T extends object>(target: T, keys: ReadonlyArray<keyof T & string>): T => {
      const out = { ...target }
      for (const key of keys) {
        const value = target[key]
        Object.defineProperty(out, key, {
          enumerable: true,
          get: () => {
            reads[key] = (reads[key] ?? 0) + 1
            return value
          }
        })
      }
      return out
    }
    const output = counted({ schema: { type: "string" } as const, render: () => [], presentationMeta: () => null }, [
      "render",
      "presentationMeta"
    ])
    const options = counted({
      ...minimal,
      output,
      finalizeContent: () => undefined,
      projectContent: () => undefined,
      presentCall: () => undefined,
      presentResult: () => undefined,
      isConcurrencySafe: () => true
    }, ["execute", "finalizeContent", "projectContent", "presentCall", "presentResult", "isConcurrencySafe"])
    const def = defineTool(options)
    def.output.render("x", "y")
    def.isConcurrencySafe?.({ text: "a" })
    assert.deepStrictEqual(reads, {
      execute: 1,
      finalizeContent: 1,
      projectContent: 1,
      presentCall: 1,
      presentResult: 1,
      isConcurrencySafe: 1,
      render: 1,
      presentationMeta: 1
    })
  })
})

describe("issue 8 item 13(b): defineTool definition-time failures are typed", () => {
  const definitionFailure = (thunk: () => unknown): ToolDefinitionError => {
    const error = thrown(thunk)
    assert.instanceOf(error, ToolDefinitionError)
    assert.instanceOf(error, Error)
    assert.strictEqual((error as ToolDefinitionError)._tag, "ToolDefinitionError")
    return error as ToolDefinitionError
  }

  it(
    "issue 8 item 13(b) / DEF-1 / D-6: every defineTool failure is a ToolDefinitionError with the spec message",
    () => {
    const throwingExecute = { ...minimal }
    Object.defineProperty(throwingExecute, "execute", {
      enumerable: true,
      get: () => {
        throw new Error("boom")
      }
    })
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ ...minimal, name: "" }, "defineTool(): name must be a non-empty string"],
      [{ ...minimal, name: 10n }, "defineTool(): name must be a non-empty string"],
      [{ ...minimal, timeoutMs: 0 }, "defineTool(echo): timeoutMs must be a positive finite number"],
      [{ ...minimal, timeoutMs: Infinity }, "defineTool(echo): timeoutMs must be a positive finite number"],
      [{ ...minimal, timeoutMs: 10n }, "defineTool(echo): timeoutMs must be a positive finite number"],
      [
        { ...minimal, timeoutMs: 2147483648 },
        "defineTool(echo): timeoutMs must be a positive finite number no greater than 2147483647"
      ],
      [
        { ...minimal, output: undefined },
        "defineTool(echo): must declare output { schema, render, presentationMeta? }"
      ],
      [
        { ...minimal, output: { schema: { type: "string" } } },
        "defineTool(echo): must declare output { schema, render, presentationMeta? }"
      ],
      [
        { ...minimal, output: { ...minimal.output, presentationMeta: 1 } },
        "defineTool(echo): output.presentationMeta must be a function"
      ],
      [{ ...minimal, execute: 5 }, "defineTool(echo): execute must be a function"],
      [{ ...minimal, presentCall: "card" }, "defineTool(echo): presentCall must be a function"],
      [{ ...minimal, isConcurrencySafe: true }, "defineTool(echo): isConcurrencySafe must be a function"],
      [{ ...minimal, deferLoading: "yes" }, "defineTool(echo): deferLoading must be a boolean"],
      [{ ...minimal, description: 5 }, "defineTool(echo): description must be a string"],
      [null, "defineTool(): options must be an object"],
      [throwingProxy(), "defineTool(): options could not be read: hostile get"],
      [
        revokedProxy(),
        "defineTool(): options could not be read: Cannot perform 'get' on a proxy that has been revoked"
      ],
      [throwingExecute, "defineTool(echo): options could not be read: boom"],
      [{ ...minimal, output: throwingProxy() }, "defineTool(echo): options could not be read: hostile get"]
    ]
    for (const [options, expected] of cases) {
      assert.strictEqual(definitionFailure(() => defineTool(options as never)).message, expected)
    }
  })

  it("issue 8 item 13(b) / DEF-1: DSL errors stay typed JsonSchemaErrors; null-prototype options work", () => {
    const dsl = thrown(() => defineTool({ ...minimal, parameters: { a: 42 } } as never))
    assert.instanceOf(dsl, JsonSchemaError)
    assert.strictEqual((dsl as JsonSchemaError)._tag, "JsonSchemaError")
    const options = Object.assign(Object.create(null), { ...minimal, output: nullProto({ ...minimal.output }) })
    const definition = defineTool(options as typeof minimal)
    assert.strictEqual(definition.name, "echo")
    assert.deepStrictEqual(definition.output.render({ text: "a" }, "a"), [text("a")])
    const hostileThrow = thrown(() => defineTool({ ...minimal, timeoutMs: throwingConversions() } as never))
    assert.instanceOf(hostileThrow, ToolDefinitionError)
  })
})

describe("DEF-2 produced definition", () => {
  it("DEF-2: only supplied optional fields are present (absent, not undefined)", () => {
    const def = defineTool(minimal)
    assert.deepStrictEqual(Object.keys(def), ["name", "description", "parameters", "output", "execute"])
    assert.deepStrictEqual(Object.keys(def.output), ["schema", "render"])
    const explicitUndefined = defineTool({
      ...minimal,
      timeoutMs: undefined,
      deferLoading: undefined,
      isConcurrencySafe: undefined,
      finalizeContent: undefined,
      projectContent: undefined,
      presentCall: undefined,
      presentResult: undefined,
      output: { ...minimal.output, presentationMeta: undefined }
    })
    assert.deepStrictEqual(Object.keys(explicitUndefined), ["name", "description", "parameters", "output", "execute"])
    assert.deepStrictEqual(Object.keys(explicitUndefined.output), ["schema", "render"])
  })

  it("DEF-2: every supplied field is present; parameters and output.schema are the compiled schemas", () => {
    const finalizeContent = (_exec: unknown, _result: ToolResult): Content | undefined => undefined
    const projectContent = (_exec: unknown, _result: ToolResult): Content | undefined => undefined
    const def = defineTool({
      ...minimal,
      output: { ...minimal.output, presentationMeta: (_args, value) => ({ length: value.length }) },
      timeoutMs: 5,
      deferLoading: true,
      isConcurrencySafe: () => true,
      finalizeContent,
      projectContent,
      presentCall: (args) => ({ card: "generic", title: args.text }),
      presentResult: () => ({ card: "generic" })
    })
    assert.deepStrictEqual(Object.keys(def).sort(), [
      "deferLoading",
      "description",
      "execute",
      "finalizeContent",
      "isConcurrencySafe",
      "name",
      "output",
      "parameters",
      "presentCall",
      "presentResult",
      "projectContent",
      "timeoutMs"
    ])
    assert.deepStrictEqual(Object.keys(def.output), ["schema", "render", "presentationMeta"])
    assert.strictEqual(def.name, "echo")
    assert.strictEqual(def.description, "Echo.")
    assert.strictEqual(def.deferLoading, true)
    assert.deepStrictEqual(def.parameters, {
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"]
    })
    assert.deepStrictEqual(def.output.schema, { type: "string" })
    assert.isTrue(Object.isFrozen(def.parameters) && Object.isFrozen(def.output.schema) && Object.isFrozen(def))
    assert.deepStrictEqual(def.output.presentationMeta?.({ text: "abc" }, "abc"), { length: 3 })
  })

  it("DEF-7: finalizeContent and projectContent are forwarded unchanged", () => {
    const finalizeContent = (): Content | undefined => [text("final")]
    const projectContent = (): Content | undefined => [text("projected")]
    const def = defineTool({ ...minimal, finalizeContent, projectContent })
    assert.strictEqual(def.finalizeContent, finalizeContent)
    assert.strictEqual(def.projectContent, projectContent)
  })

  it("DEF-2: later mutation of the options object does not affect the definition", () =>
    Effect.gen(function*() {
      const output: { schema: { type: "string" }; render: (args: unknown, value: string) => Content } = {
        schema: { type: "string" },
        render: (_args, value) => [text(`orig ${value}`)]
      }
      const parameters: Record<string, { type: "string"; required?: true }> = {
        text: { type: "string", required: true }
      }
      const options = {
        name: "echo",
        description: "Echo.",
        parameters,
        output,
        execute: (args: { readonly text?: string }) => Effect.succeed(`orig ${args.text}`)
      }
      const def = defineTool(options as typeof minimal)
      options.name = "renamed"
      options.execute = () => Effect.succeed("mutated")
      output.render = () => [text("mutated")]
      output.schema.type = "number" as never
      parameters.text!.type = "number" as never
      parameters.extra = { type: "string", required: true }
      assert.strictEqual(def.name, "echo")
      assert.deepStrictEqual(def.parameters, {
        type: "object",
        properties: { text: { type: "string" } },
        required: ["text"]
      })
      assert.deepStrictEqual(def.output.schema, { type: "string" })
      assert.deepStrictEqual(def.output.render({ text: "a" }, "a"), [text("orig a")])
      assert.strictEqual(yield* def.execute({ text: "a" }, makeCtx()), "orig a")
    }).pipe(Effect.runPromise))
})

describe("DEF-3 strict execution validation (D-11)", () => {
  it.effect("T-VAL-016/D-11: {} fails INVALID_ARGS and the author body never runs", () =>
    Effect.gen(function*() {
      const count = counter()
      const def = readTool(count)
      const exit = yield* Effect.exit(def.execute({}, makeCtx()))
      const error = failureOf(exit)
      assert.instanceOf(error, ToolArgsError)
      const argsError = error as ToolArgsError
      assert.strictEqual(argsError.name, "ToolArgsError")
      assert.strictEqual(argsError.code, "INVALID_ARGS")
      assert.deepStrictEqual(argsError.violations, ["missing required property \"path\""])
      assert.strictEqual(argsError.message, "invalid arguments: missing required property \"path\"")
      assert.strictEqual(`Error: ${argsError.message}`, "Error: invalid arguments: missing required property \"path\"")
      assert.deepStrictEqual(count, { calls: 0, runs: 0 })
    }))

  it.effect("T-VAL-019: the structured error is {message, info:{name:'ToolArgsError', code:'INVALID_ARGS'}}", () =>
    Effect.gen(function*() {
      const def = readTool(counter())
      const error = failureOf(yield* Effect.exit(def.execute({}, makeCtx())))
      assert.deepStrictEqual(detailOf(error), {
        message: "invalid arguments: missing required property \"path\"",
        info: { name: "ToolArgsError", code: "INVALID_ARGS" }
      })
    }))

  it.effect("T-VAL-017: valid args → value is exactly the rendered content blocks", () =>
    Effect.gen(function*() {
      const count = counter()
      const def = readTool(count)
      const args = Json.deepFreeze({ path: "/x" })
      const program = def.execute(args, makeCtx())
      assert.deepStrictEqual(count, { calls: 0, runs: 0 }, "nothing runs before the Effect does")
      const value = yield* program
      assert.deepStrictEqual(value, [{ type: "text", text: "read /x" }])
      assert.deepStrictEqual(def.output.render(args, value as unknown as JsonValue), [
        { type: "text", text: "read /x" }
      ])
      assert.deepStrictEqual(count, { calls: 1, runs: 1 })
    }))

  it.effect("DEF-3: every violation is reported in order (§22.1 argument vector) and the body does not run", () =>
    Effect.gen(function*() {
      let runs = 0
      const def = defineTool({
        name: "v",
        description: "vectors",
        parameters: {
          path: { type: "string", required: true },
          n: { type: "integer" },
          o: { type: "object", additionalProperties: false, properties: { a: { type: "boolean", required: true } } },
          u: { oneOf: [{ type: "string" }, { type: "string", enum: ["x"] }] }
        },
        output: { schema: { type: "null" }, render: () => [] },
        execute: () => {
          runs++
          return Effect.succeed(null)
        }
      })
      const error = failureOf(yield* Effect.exit(def.execute({ n: 1.5, o: { b: 1 }, u: "x" }, makeCtx())))
      assert.deepStrictEqual((error as ToolArgsError).violations, [
        "missing required property \"path\"",
        "\"n\" must be an integer",
        "missing required property \"o.a\"",
        "\"o.b\" is not a declared property (additionalProperties: false)",
        "\"u\" must match exactly one oneOf branch (matched 2)"
      ])
      assert.strictEqual(
        (failureOf(yield* Effect.exit(def.execute("str", makeCtx()))) as ToolArgsError).message,
        "invalid arguments: \"arguments\" must be an object"
      )
      assert.strictEqual(runs, 0)
    }))

  it.effect("DEF-3: the body receives the same args object and the run context", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const def = defineTool({
        ...minimal,
        execute: (args, ctx) =>
          Effect.sync(() => {
            seen.push(args, ctx)
            return args.text
          })
      })
      const args = Json.deepFreeze({ text: "hi", extra: [1, { deep: true }] })
      const ctx = makeCtx()
      assert.strictEqual(yield* def.execute(args, ctx), "hi")
      assert.strictEqual(seen[0], args)
      assert.strictEqual(seen[1], ctx)
    }))

  it.effect("DEF-3: an Effect body is used directly: typed failures and requirements pass through", () =>
    Effect.gen(function*() {
      class Prefix extends Context.Tag("test/Prefix")<Prefix, string>() {}
      class Nope {
        readonly _tag = "Nope"
      }
      const def = defineTool({
        ...minimal,
        execute: (args) =>
          Effect.gen(function*() {
            const prefix = yield* Prefix
            if (args.text === "fail") return yield* Effect.fail(new Nope())
            return `${prefix}${args.text}`
          })
      })
      const ok = yield* def.execute({ text: "a" }, makeCtx()).pipe(Effect.provideService(Prefix, "> "))
      assert.strictEqual(ok, "> a")
      const error = failureOf(
        yield* Effect.exit(def.execute({ text: "fail" }, makeCtx()).pipe(Effect.provideService(Prefix, "> ")))
      )
      assert.instanceOf(error, Nope)
    }))

  it.effect("DEF-3: an async body is awaited; a rejection is the failure; a sync throw is a defect", () =>
    Effect.gen(function*() {
      const boom = new Error("boom")
      const def = defineTool({
        ...minimal,
        execute: async (args) => {
          await Promise.resolve()
          if (args.text === "reject") throw boom
          return `async ${args.text}`
        }
      })
      assert.strictEqual(yield* def.execute({ text: "a" }, makeCtx()), "async a")
      assert.strictEqual(failureOf(yield* Effect.exit(def.execute({ text: "reject" }, makeCtx()))), boom)
      const throwing = defineTool({
        ...minimal,
        execute: () => {
          throw boom
        }
      })
      const exit = yield* Effect.exit(throwing.execute({ text: "a" }, makeCtx()))
      assert.isTrue(Exit.isFailure(exit) && Option.getOrUndefined(Cause.dieOption(exit.cause)) === boom)
    }))

  it.effect("DEF-3: a plain (non-Effect, non-Promise) return from an untyped body is the value", () =>
    Effect.gen(function*() {
      const untyped = (args: { readonly text: string }) => args.text
      const def = defineTool({ ...minimal, execute: untyped as unknown as () => Promise<string> })
      assert.strictEqual(yield* def.execute({ text: "plain" }, makeCtx()), "plain")
    }))

  it.live("D-14: interrupting an async body waits until its promise settles; the body sees ctx.signal", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const ctx = makeCtx(controller.signal)
      const started = yield* Deferred.make<void>()
      let release: () => void = () => undefined
      let settled = false
      let seenSignal: AbortSignal | undefined
      const def = defineTool({
        ...minimal,
        execute: async (_args, runCtx) => {
          seenSignal = runCtx.signal
          Deferred.unsafeDone(started, Exit.void)
          await new Promise<void>((resolve) => {
            release = resolve
          })
          settled = true
          return "late"
        }
      })
      const fiber = yield* Effect.fork(def.execute({ text: "a" }, ctx))
      yield* Deferred.await(started)
      assert.strictEqual(seenSignal, controller.signal)
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 30)))
      assert.isTrue(Option.isNone(yield* Fiber.poll(interrupter)), "interruption must wait for the promise")
      assert.isFalse(settled)
      release()
      const exit = yield* Fiber.join(interrupter)
      assert.isTrue(settled)
      assert.isTrue(Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause))
    }))

  it.live("PREC-1 row 10: an async body rejecting after interruption surfaces its own error in the cause", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      const own = new Error("tool failed")
      const def = defineTool({
        ...minimal,
        execute: (_args, runCtx) =>
          new Promise<string>((_resolve, reject) => {
            runCtx.signal.addEventListener("abort", () => setTimeout(() => reject(own), 10))
            Deferred.unsafeDone(started, Exit.void)
          })
      })
      const fiber = yield* Effect.fork(def.execute({ text: "a" }, makeCtx(controller.signal)))
      yield* Deferred.await(started)
      controller.abort()
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isFailure(exit))
      const failure = Cause.failureOption((exit as Exit.Failure<unknown, unknown>).cause)
      assert.strictEqual(Option.getOrUndefined(failure), own)
      assert.deepStrictEqual(detailOf(Option.getOrUndefined(failure)), { message: "tool failed" })
    }))
})

describe("DEF-4 soft classifier (D-12)", () => {
  it("DEF-4: false on invalid args (classifier not called), else the author's answer; throws → false", () => {
    let calls = 0
    const def = defineTool({
      ...minimal,
      isConcurrencySafe: (args) => {
        calls++
        if (args.text === "throw") throw new Error("classifier")
        return args.text === "safe"
      }
    })
    assert.isFalse(def.isConcurrencySafe!({}))
    assert.isFalse(def.isConcurrencySafe!({ text: 1 }))
    assert.strictEqual(calls, 0)
    assert.isTrue(def.isConcurrencySafe!({ text: "safe" }))
    assert.isFalse(def.isConcurrencySafe!({ text: "other" }))
    assert.isFalse(def.isConcurrencySafe!({ text: "throw" }))
    assert.strictEqual(calls, 3)
  })

  it("D-12: the classifier receives the args object it is given (the registry passes the frozen snapshot)", () => {
    let seen: unknown
    const def = defineTool({
      ...minimal,
      isConcurrencySafe: (args) => {
        seen = args
        return true
      }
    })
    const snapshot = Json.deepFreeze({ text: "x" })
    assert.isTrue(def.isConcurrencySafe!(snapshot))
    assert.strictEqual(seen, snapshot)
  })

  it("DEF-4: a truthy non-true answer from an untyped classifier is false", () => {
    const def = defineTool({ ...minimal, isConcurrencySafe: (() => 1) as never })
    assert.isFalse(def.isConcurrencySafe!({ text: "x" }))
  })
})

describe("DEF-5 soft presenters (D-10)", () => {
  const presenterTool = (calls: { count: number }) =>
    defineTool({
      name: "read",
      description: "Read",
      parameters: { path: { type: "string", required: true } },
      output: { schema: { type: "string" }, render: (_args, value) => [text(value)] },
      execute: (args) => Effect.succeed(args.path),
      presentCall: (args) => {
        calls.count++
        if (args.path === "throw") throw new Error("presenter")
        return { card: "generic", title: `Read ${args.path}`, kind: "read" }
      },
      presentResult: (args, result) => {
        calls.count++
        if (args.path === "throw") throw new Error("presenter")
        return { card: "generic", title: `${args.path} ${result.isError ? "failed" : "ok"}`, content: result.content }
      }
    })

  it("T-DEF-015: valid args → the authored cards", () => {
    const def = presenterTool({ count: 0 })
    assert.deepStrictEqual(def.presentCall!({ path: "/a" }), { card: "generic", title: "Read /a", kind: "read" })
    assert.deepStrictEqual(def.presentResult!({ path: "/a" }, { content: [text("x")], isError: false }), {
      card: "generic",
      title: "/a ok",
      content: [text("x")]
    })
  })

  it("T-DEF-016: no presenters → presentCall / presentResult are undefined", () => {
    const def = defineTool(minimal)
    assert.isUndefined(def.presentCall)
    assert.isUndefined(def.presentResult)
    assert.isFalse("presentCall" in def || "presentResult" in def)
  })

  it("T-DEF-017: malformed args ({}, {wrong:1}) → undefined, never throw, author not called", () => {
    const calls = { count: 0 }
    const def = presenterTool(calls)
    for (const args of [{}, { wrong: 1 }, null, "x", { path: 3 }]) {
      assert.isUndefined(def.presentCall!(args))
      assert.isUndefined(def.presentResult!(args, { content: [], isError: true }))
    }
    assert.strictEqual(calls.count, 0)
  })

  it("D-10: an author presenter that throws yields undefined", () => {
    const calls = { count: 0 }
    const def = presenterTool(calls)
    assert.isUndefined(def.presentCall!({ path: "throw" }))
    assert.isUndefined(def.presentResult!({ path: "throw" }, { content: [], isError: false }))
    assert.strictEqual(calls.count, 2)
  })
})

describe("DEF-6 projectors", () => {
  it("DEF-6: render and presentationMeta forward (args, value) without re-validating args", () => {
    const seen: Array<unknown> = []
    const def = defineTool({
      ...minimal,
      output: {
        schema: { type: "string" },
        render: (args, value) => {
          seen.push(args, value)
          return [text(value)]
        },
        presentationMeta: (args, value) => {
          seen.push(args, value)
          return { value }
        }
      }
    })
    const invalid = { nope: true }
    assert.deepStrictEqual(def.output.render(invalid, "v"), [text("v")])
    assert.deepStrictEqual(def.output.presentationMeta!(invalid, "w"), { value: "w" })
    assert.deepStrictEqual(seen, [invalid, "v", invalid, "w"])
  })
})

describe("DEF-8 validateArgs", () => {
  const spec = { path: { type: "string", required: true }, limit: { type: "number" } } as const

  it("T-VAL-001: valid → []; null, a string and an array → exactly 1 violation", () => {
    assert.deepStrictEqual(validateArgs(spec, { path: "/a", limit: 3 }), [])
    for (const bad of [null, "x", []]) {
      assert.deepStrictEqual(validateArgs(spec, bad), ["\"arguments\" must be an object"])
    }
  })

  it("T-VAL-002/003: missing (or undefined) required; open root accepts extras", () => {
    assert.deepStrictEqual(validateArgs(spec, {}), ["missing required property \"path\""])
    assert.deepStrictEqual(validateArgs(spec, { path: undefined }), ["missing required property \"path\""])
    assert.deepStrictEqual(validateArgs(spec, { path: "/a", extra: { any: [1] } }), [])
  })

  it("§22.1: argument validation reference vectors, verbatim", () => {
    const vectorSpec = {
      path: { type: "string", required: true },
      n: { type: "integer" },
      o: { type: "object", additionalProperties: false, properties: { a: { type: "boolean", required: true } } },
      u: { oneOf: [{ type: "string" }, { type: "string", enum: ["x"] }] }
    } as const
    assert.deepStrictEqual(validateArgs(vectorSpec, { n: 1.5, o: { b: 1 }, u: "x" }), [
      "missing required property \"path\"",
      "\"n\" must be an integer",
      "missing required property \"o.a\"",
      "\"o.b\" is not a declared property (additionalProperties: false)",
      "\"u\" must match exactly one oneOf branch (matched 2)"
    ])
    assert.deepStrictEqual(validateArgs(vectorSpec, "str"), ["\"arguments\" must be an object"])
    assert.deepStrictEqual(validateArgs(vectorSpec, { path: "a", n: -0 }), ["\"n\" must be an integer"])
    // eslint-disable-next-line no-sparse-arrays
    for (const args of [{ path: "a", extra: undefined }, { path: "a", extra: [1, , 3] }]) {
      assert.deepStrictEqual(validateArgs(vectorSpec, args), ["\"arguments\" must be a lossless JSON object"])
    }
  })

  it("T-VAL-007: a spec whose enum does not match its type throws a schema error", () => {
    assert.deepStrictEqual(validateArgs({ n: { type: "number", enum: [1, 2] } }, { n: 3 }), [
      "\"n\" must be one of [1,2]"
    ])
    const error = thrown(() => validateArgs({ n: { type: "number", enum: ["a"] } } as never, { n: 3 }))
    assert.instanceOf(error, JsonSchemaError)
    assert.deepStrictEqual((error as JsonSchemaError).violations, [
      "schema.properties.n.enum must be a non-empty array of number values"
    ])
  })
})

describe("typed projection round trips", () => {
  it.effect("T-SCHEMA-008: text required, uppercase optional → exact parameters; executes to HELLO", () =>
    Effect.gen(function*() {
      const def = defineTool({
        name: "shout",
        description: "Shout.",
        parameters: { text: { type: "string", required: true }, uppercase: { type: "boolean" } },
        output: { schema: { type: "string" }, render: (_args, value) => [text(value)] },
        execute: (args) => Effect.succeed(args.uppercase === true ? args.text.toUpperCase() : args.text)
      })
      assert.deepStrictEqual(def.parameters, {
        type: "object",
        properties: { text: { type: "string" }, uppercase: { type: "boolean" } },
        required: ["text"]
      })
      const args = { text: "hello", uppercase: true }
      const value = yield* def.execute(args, makeCtx())
      assert.strictEqual(value, "HELLO")
      assert.deepStrictEqual(def.output.render(args, value), [{ type: "text", text: "HELLO" }])
    }))

  it.effect("T-SCHEMA-009: req required, opt optional, descriptions kept; {req:'hello'} renders hello:none", () =>
    Effect.gen(function*() {
      const def = defineTool({
        name: "round",
        description: "Round trip.",
        parameters: {
          req: { type: "string", required: true, description: "required one" },
          opt: { type: "string", description: "optional one" }
        },
        output: {
          schema: {
            type: "object",
            additionalProperties: false,
            properties: { text: { type: "string", required: true } }
          },
          render: (_args, value) => [text(value.text)]
        },
        execute: (args) => Effect.succeed({ text: `${args.req}:${args.opt ?? "none"}` })
      })
      assert.deepStrictEqual(def.parameters, {
        type: "object",
        properties: {
          req: { type: "string", description: "required one" },
          opt: { type: "string", description: "optional one" }
        },
        required: ["req"]
      })
      const value = yield* def.execute({ req: "hello" }, makeCtx())
      assert.deepStrictEqual(def.output.render({ req: "hello" }, value as JsonValue), [text("hello:none")])
    }))

  it("DEF-9: the content fixture's output schema is an array of unconstrained items and value is content", () => {
    const def: ToolDefinition<never> = readTool(counter())
    assert.deepStrictEqual(def.output.schema, { type: "array", items: {} })
    const blocks: Content = [text("a"), { type: "image", data: "AA==", mimeType: "image/png" }]
    assert.strictEqual(def.output.render({ path: "/x" }, blocks as unknown as JsonValue), blocks)
  })
})
