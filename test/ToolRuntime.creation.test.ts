/**
 * EXEC-1/2 (composition, one outcome), CREATE-1…6 (identity, finalizer capture, arguments,
 * Code Mode collapse), D-5 (parent verification) and the staged API's equivalence with `execute`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as Presets from "../layers/Presets.js"
import type { ExecuteInput, ToolExecution } from "../src/Execution.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED,
  aborted,
  ABORTED_BEFORE_DISPATCH,
  answer,
  ARGS_NOT_LOSSLESS,
  closeNow,
  collapsedRoute,
  context,
  echo,
  echoed,
  errorResult,
  execute,
  info,
  instrument,
  instrumentInto,
  isDeepFrozen,
  layerCode,
  makeProbe,
  message,
  type Probe,
  probeTool,
  rawTool,
  registerScoped,
  setup,
  text,
  transport
} from "./fixtures/runtime.js"

const INVALID_PARENT = errorResult(
  "tool \"echo\" was called with an invalid parent: a parent must be the token of a running execution of this runtime",
  info("InvalidParentError", "INVALID_PARENT")
)

describe("EXEC-2 (one outcome)", () => {
  it.scoped("EXEC-2: the returned result is the observed object, deep-frozen, with exactly one notification", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const mode = { deny: false }
      yield* tools.onPreExecute((_exec, next) =>
        mode.deny ? Effect.succeed(PreDecision.Deny({ reason: "no" })) : next
      )
      const inputs: ReadonlyArray<ExecuteInput> = [
        { callId: "ok", name: "echo", arguments: { text: "hi", nested: { deep: [1, { x: 2 }] } } },
        { callId: "ghost", name: "ghost", arguments: {} },
        { callId: "bad", name: "echo", arguments: new Set() },
        { callId: "dead", name: "echo", arguments: {}, signal: aborted() }
      ]
      for (const input of inputs) {
        const before = probe.observed.length
        const result = yield* execute(input)
        assert.strictEqual(probe.observed.length, before + 1)
        const observed = probe.observed[before]!
        assert.strictEqual(observed.result, result)
        assert.isTrue(isDeepFrozen(result))
        assert.isTrue(Object.isFrozen(observed.exec))
        assert.isTrue(isDeepFrozen(observed.exec.arguments))
        assert.strictEqual(observed.exec.callId, input.callId)
      }
      mode.deny = true
      const denied = yield* execute({ callId: "deny", name: "echo", arguments: {} })
      assert.strictEqual(probe.observed.at(-1)!.result, denied)
      assert.isTrue(isDeepFrozen(denied))
      assert.strictEqual(probe.observed.length, 5)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-EXEC-001: pre-aborted entry reads the arguments accessor once; frozen execution, copy of arguments", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      let reads = 0
      const raw = { nested: { value: 1 } }
      const input = {
        callId: "c1",
        name: "echo",
        get arguments() {
          reads++
          return raw
        },
        signal: aborted()
      }
      const result = yield* execute(input)
      assert.strictEqual(reads, 1)
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["fin", "observe"])
      const { exec, result: seen } = probe.observed[0]!
      assert.strictEqual(seen, result)
      assert.isTrue(Object.isFrozen(exec))
      assert.strictEqual(typeof exec.token, "symbol")
      assert.deepStrictEqual(exec.arguments, raw)
      assert.notStrictEqual(exec.arguments, raw)
      assert.isTrue(isDeepFrozen(exec.arguments))
      assert.isFalse(Object.isFrozen(raw))
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("CREATE-1 (identity capture)", () => {
  it.scoped("CREATE-1: rootCallId defaults to callId; agent and parent keys are absent when not supplied", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      yield* execute({ callId: "c1", name: "echo", arguments: {} })
      yield* execute({ callId: "c2", rootCallId: "root", name: "echo", agent: "a", arguments: {} })
      const [first, second] = probe.preSeen
      assert.strictEqual(first!.rootCallId, "c1")
      assert.isFalse("agent" in first!)
      assert.isFalse("parent" in first!)
      assert.strictEqual(second!.rootCallId, "root")
      assert.strictEqual(second!.agent, "a")
      assert.notStrictEqual(first!.token, second!.token)
      assert.strictEqual(typeof first!.token, "symbol")
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-EXEC-005: the parent accessor is read exactly once (the first value wins everywhere)", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      let reads = 0
      const input = {
        callId: "c1",
        name: "echo",
        arguments: { text: "hi" },
        get parent() {
          reads++
          return reads === 1 ? undefined : Symbol("forged")
        }
      } as ExecuteInput
      const result = yield* execute(input)
      assert.deepStrictEqual(result, echoed("hi"))
      assert.strictEqual(reads, 1)
      assert.isFalse("parent" in probe.preSeen[0]!)
      assert.isFalse("parent" in probe.bodies[0]!)
      assert.isFalse("parent" in probe.observed[0]!.exec)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-EXEC-006: every input field is read once; the observation carries the first-read values", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const scopedSeen: Array<ToolExecution> = []
      yield* tools.onResult((exec) => Effect.sync(() => scopedSeen.push(exec)), { agent: "first" })
      const reads: Record<string, number> = {}
      const drifting = <A>(key: string, first: A, later: A) => ({
        get() {
          reads[key] = (reads[key] ?? 0) + 1
          return reads[key] === 1 ? first : later
        },
        enumerable: true
      })
      const input = Object.defineProperties({}, {
        callId: drifting("callId", "c1", "c2"),
        rootCallId: drifting("rootCallId", "r1", "r2"),
        name: drifting("name", "echo", "other"),
        agent: drifting("agent", "first", "second"),
        parent: drifting("parent", undefined, Symbol("forged")),
        signal: drifting("signal", new AbortController().signal, aborted()),
        arguments: drifting<unknown>("arguments", new Map(), {})
      }) as ExecuteInput
      const result = yield* execute(input)
      assert.deepStrictEqual(result, errorResult(ARGS_NOT_LOSSLESS))
      assert.deepStrictEqual(reads, {
        callId: 1,
        rootCallId: 1,
        name: 1,
        agent: 1,
        parent: 1,
        signal: 1,
        arguments: 1
      })
      const exec = probe.observed[0]!.exec
      assert.strictEqual(exec.callId, "c1")
      assert.strictEqual(exec.rootCallId, "r1")
      assert.strictEqual(exec.name, "echo")
      assert.strictEqual(exec.agent, "first")
      assert.isFalse("parent" in exec)
      assert.isFalse(exec.signal.aborted)
      assert.isTrue(Object.isFrozen(exec))
      assert.strictEqual(scopedSeen.length, 1)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("CREATE-3 (finalizer capture before arguments)", () => {
  it.scoped("CREATE-3: an arguments getter that unregisters and re-registers the tool cannot swap the finalizer", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const finalizers: Array<string> = []
      const projectors: Array<string> = []
      const version = (tag: string): ToolDefinition<never> =>
        echo({
          execute: () => Effect.succeed(tag),
          finalizeContent: () => {
            finalizers.push(tag)
            return undefined
          },
          projectContent: () => {
            projectors.push(tag)
            return undefined
          }
        })
      const original = yield* registerScoped(version("v1"))
      const replacement = yield* Scope.make()
      const input = {
        callId: "c1",
        name: "echo",
        get arguments() {
          closeNow(original)
          Effect.runSync(Scope.extend(Effect.orDie(tools.register(version("v2"))), replacement))
          return {}
        }
      }
      const result = yield* execute(input)
      assert.deepStrictEqual(result, echoed("v2"))
      assert.deepStrictEqual(finalizers, ["v1"])
      assert.deepStrictEqual(projectors, ["v1"])
      assert.strictEqual(probe.count("observe"), 1)
      yield* Scope.close(replacement, Exit.void)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CREATE-3: a name not visible at creation captures no finalizer, even if registered by the getter", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const finalizers: Array<string> = []
      const scope = yield* Scope.make()
      const input = {
        callId: "c1",
        name: "echo",
        get arguments() {
          Effect.runSync(Scope.extend(
            Effect.orDie(tools.register(echo({
              finalizeContent: () => {
                finalizers.push("late")
                return text("finalized")
              }
            }))),
            scope
          ))
          return { text: "hi" }
        }
      }
      const result = yield* execute(input)
      assert.deepStrictEqual(result, echoed("hi"))
      assert.deepStrictEqual(finalizers, [])
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CREATE-3 / T-FIN-003: the captured finalizer runs after pre unregisters the tool and throws", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const seen: Array<readonly [string, boolean]> = []
      const scope = yield* registerScoped(echo({
        name: "bounded",
        finalizeContent: (exec, result) => {
          seen.push([exec.name, result.isError])
          return text("bounded failure")
        }
      }))
      yield* tools.onPreExecute(() =>
        Effect.suspend(() => {
          closeNow(scope)
          return Effect.fail(new Error("policy failed"))
        })
      )
      const result = yield* execute({ callId: "c1", name: "bounded", arguments: {} })
      assert.deepStrictEqual(result, {
        isError: true,
        error: { message: "policy failed" },
        content: text("bounded failure")
      })
      assert.deepStrictEqual(seen, [["bounded", true]])
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("CREATE-4 (argument materialization)", () => {
  it.scoped("CREATE-4 / T-EXEC-007: a throwing arguments getter is read once and becomes the final error", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      let reads = 0
      const input = {
        callId: "c1",
        name: "echo",
        get arguments(): unknown {
          reads++
          throw new Error("getter exploded")
        }
      }
      const result = yield* execute(input)
      assert.deepStrictEqual(result, errorResult("getter exploded"))
      assert.strictEqual(reads, 1)
      assert.deepStrictEqual(probe.log, ["fin", "observe"])
      assert.strictEqual(probe.observed[0]!.exec.arguments, undefined)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CREATE-4 / T-EXEC-008: a Map or a class instance is not lossless: no policy, no body, one observation", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      class Point {
        x = 1
      }
      for (const args of [new Map([["a", 1]]), new Point()]) {
        const result = yield* execute({ callId: "c1", name: "echo", arguments: args })
        assert.deepStrictEqual(result, errorResult(ARGS_NOT_LOSSLESS))
      }
      assert.deepStrictEqual(probe.log, ["fin", "observe", "fin", "observe"])
      assert.strictEqual(probe.observed[1]!.exec.arguments, undefined)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CREATE-4 / T-EXEC-009: a nested accessor is read once and its first value is used", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("ran", (args) => Effect.succeed(`ran:${(args as { readonly t: string }).t}`)))
      let reads = 0
      const args = {
        get t(): unknown {
          reads++
          return reads === 1 ? "t" : new Map()
        }
      }
      const result = yield* execute({ callId: "c1", name: "ran", arguments: args })
      assert.deepStrictEqual(result, { isError: false, value: "ran:t", content: text("ran:t") })
      assert.strictEqual(reads, 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CREATE-4: argument failure beats an already-aborted caller (and the finalizer still runs)", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const input = {
        callId: "c1",
        name: "echo",
        get arguments(): unknown {
          throw new Error("getter exploded")
        },
        signal: aborted()
      }
      assert.deepStrictEqual(yield* execute(input), errorResult("getter exploded"))
      assert.deepStrictEqual(
        yield* execute({ callId: "c2", name: "echo", arguments: [1, , 3], signal: aborted() }),
        errorResult(ARGS_NOT_LOSSLESS)
      )
      assert.deepStrictEqual(probe.log, ["fin", "observe", "fin", "observe"])
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("CREATE-5 (execution object)", () => {
  it.scoped("CREATE-5 / D-14: exec.signal is the execution's caller signal and aborts with the input signal", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      const seen: Array<boolean> = []
      yield* tools.onPreExecute((exec, next) =>
        Effect.suspend(() => {
          seen.push(exec.signal.aborted)
          controller.abort()
          seen.push(exec.signal.aborted)
          return next
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(seen, [false, true])
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(probe.observed[0]!.exec.signal, probe.preSeen[0]!.signal)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("CREATE-5 / D-4: identity is immutable; deferContext and concludeTurn exist only on the body's view", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      yield* execute({ callId: "c1", name: "echo", arguments: { text: "x" } })
      const pre = probe.preSeen[0]!
      assert.isTrue(Object.isFrozen(pre))
      assert.isFalse("deferContext" in pre)
      assert.isFalse("concludeTurn" in pre)
      assert.isFalse("deferContext" in probe.observed[0]!.exec)
      const body = probe.bodies[0]!
      assert.strictEqual(typeof body.deferContext, "function")
      assert.strictEqual(typeof body.concludeTurn, "function")
      assert.strictEqual(body.token, pre.token)
      assert.strictEqual(body.arguments, pre.arguments)
      assert.throws(() => {
        ;(pre as { callId: string }).callId = "forged"
      })
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("CREATE-6 (Code Mode collapse) and D-5 (parent verification)", () => {
  const coder = "coder"

  it.scoped("CREATE-6 / T-EXEC-010: a model-direct call in code mode is UNKNOWN_TOOL with the route, before policy", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.presentAs("code", { agent: coder })
      const result = yield* execute({ callId: "c1", name: "echo", agent: coder, arguments: {} })
      assert.deepStrictEqual(result, errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL")))
      assert.deepStrictEqual(probe.log, ["observe"])
      const native = yield* execute({ callId: "c2", name: "echo", agent: "other", arguments: { text: "n" } })
      assert.deepStrictEqual(native, echoed("n"))
    }).pipe(Effect.provide(layerCode())))

  it.scoped("CREATE-6 / T-EXEC-011: abort beats collapse, and the finalizer IS applied", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.presentAs("code", { agent: coder })
      const result = yield* execute({ callId: "c1", name: "echo", agent: coder, arguments: {}, signal: aborted() })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["fin", "observe"])
    }).pipe(Effect.provide(layerCode())))

  it.scoped("CREATE-6: a name not visible is not collapsed: policy runs, then plain UNKNOWN_TOOL", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.presentAs("code", { agent: coder })
      const result = yield* execute({ callId: "c1", name: "ghost", agent: coder, arguments: {} })
      assert.deepStrictEqual(result, errorResult("unknown tool \"ghost\"", info("ToolNotFoundError", "UNKNOWN_TOOL")))
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "post", "observe"])
    }).pipe(Effect.provide(layerCode())))

  it.scoped("CREATE-6: the deployment mode applies to agent-less calls; run_code itself is callable directly", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const collapsed = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(collapsed, errorResult(collapsedRoute("echo"), info("ToolNotFoundError", "UNKNOWN_TOOL")))
      const program = yield* execute({ callId: "c2", name: "run_code", arguments: { description: "d", code: "1" } })
      assert.deepStrictEqual(program, { isError: false, value: "ran", content: text("ran") })
      assert.strictEqual(probe.count("pre"), 1)
    }).pipe(Effect.provide(layerCode(transport(), "code"))))

  it.scoped("CREATE-6 / D-5: a nested call whose parent is a running body is not collapsed and computes no meta", () => {
    const holder: { runtime?: ToolRuntime.Service } = {}
    const nested: Array<ToolResult> = []
    const runCode = transport((_args, ctx) =>
      Effect.map(
        holder.runtime!.execute({ callId: "n1", name: "echo", agent: coder, parent: ctx.token, arguments: { text: "" } }),
        (result) => {
          nested.push(result)
          return "program done"
        }
      )
    )
    return Effect.gen(function*() {
      const tools = yield* ToolRegistry
      holder.runtime = yield* ToolRuntime.ToolRuntime
      yield* tools.register(echo({
        output: {
          schema: { type: "string" },
          render: (_args, value) => text(value as string),
          presentationMeta: () => ({ card: true })
        }
      }))
      yield* tools.presentAs("code", { agent: coder })
      const result = yield* execute({ callId: "c1", name: "run_code", agent: coder, arguments: { code: "x" } })
      assert.deepStrictEqual(result, { isError: false, value: "program done", content: text("program done") })
      assert.deepStrictEqual(nested, [{ isError: false, value: "", content: text("") }])
      const direct = yield* execute({ callId: "c2", name: "echo", agent: "native", arguments: { text: "d" } })
      assert.deepStrictEqual(direct, { isError: false, value: "d", content: text("d"), meta: { card: true } })
    }).pipe(Effect.provide(layerCode(runCode)))
  })

  it.scoped("D-5: a forged parent token is INVALID_PARENT, final (no policy, no post)", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {}, parent: Symbol("forged") })
      assert.deepStrictEqual(result, INVALID_PARENT)
      assert.strictEqual(probe.count("pre"), 0)
      assert.strictEqual(probe.count("post"), 0)
      assert.strictEqual(probe.count("observe"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-5: the token of a finished execution, or of one not in its body, is INVALID_PARENT", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const runtime = yield* ToolRuntime.ToolRuntime
      yield* execute({ callId: "c1", name: "echo", arguments: {} })
      const finished = probe.preSeen[0]!.token
      assert.deepStrictEqual(
        yield* execute({ callId: "c2", name: "echo", arguments: {}, parent: finished }),
        INVALID_PARENT
      )
      const fromPre: Array<ToolResult> = []
      yield* tools.onPreExecute((exec, next) =>
        exec.callId === "outer"
          ? Effect.zipRight(
            Effect.map(
              runtime.execute({ callId: "inner", name: "echo", arguments: {}, parent: exec.token }),
              (result) => fromPre.push(result)
            ),
            next
          )
          : next
      )
      yield* execute({ callId: "outer", name: "echo", arguments: {} })
      assert.deepStrictEqual(fromPre, [INVALID_PARENT])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-5: a forged parent cannot bypass the collapse", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.presentAs("code", { agent: coder })
      const result = yield* execute({
        callId: "c1",
        name: "echo",
        agent: coder,
        arguments: {},
        parent: Symbol("forged")
      })
      assert.deepStrictEqual(result, INVALID_PARENT)
    }).pipe(Effect.provide(layerCode())))
})

// ---------------------------------------------------------------------------------------------
// staged API

type Driver = (input: ExecuteInput) => Effect.Effect<ToolResult, never, ToolRuntime.ToolRuntime>

const viaExecute: Driver = execute

const viaStages: Driver = (input) =>
  Effect.gen(function*() {
    const runtime = yield* ToolRuntime.ToolRuntime
    const prepared = yield* runtime.prepare(input)
    switch (prepared._tag) {
      case "FinalResult":
        return yield* runtime.finish(prepared.handle, prepared.result)
      case "PostResult":
        return yield* runtime.finalize(prepared.handle, prepared.result)
      case "Dispatch": {
        const dispatched = yield* runtime.dispatch(prepared.handle)
        return dispatched._tag === "FinalResult"
          ? yield* runtime.finish(prepared.handle, dispatched.result)
          : yield* runtime.finalize(prepared.handle, dispatched.result)
      }
    }
  })

interface Scenario {
  readonly name: string
  readonly input: (signal: AbortSignal) => ExecuteInput
  readonly install: (probe: Probe, controller: AbortController) => Effect.Effect<void, never, ToolRegistry | Scope.Scope>
}

const scenarios: ReadonlyArray<Scenario> = [
  {
    name: "success with contexts and conclusion",
    input: () => ({ callId: "c1", name: "ctx", arguments: {} }),
    install: (probe) =>
      Effect.flatMap(ToolRegistry, (tools) =>
        Effect.orDie(tools.register(probeTool(probe, {
          name: "ctx",
          execute: (_args, ctx) =>
            Effect.sync(() => {
              ctx.deferContext(message("body"))
              ctx.concludeTurn()
              return "ok"
            })
        }))))
  },
  {
    name: "deny",
    input: () => ({ callId: "c1", name: "echo", arguments: {} }),
    install: () =>
      Effect.flatMap(ToolRegistry, (tools) =>
        tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "no", info: info("Policy", "DENIED") }))))
  },
  {
    name: "pre-aborted",
    input: () => ({ callId: "c1", name: "echo", arguments: {}, signal: aborted() }),
    install: () => Effect.void
  },
  {
    name: "argument failure",
    input: () => ({ callId: "c1", name: "echo", arguments: new Map() }),
    install: () => Effect.void
  },
  {
    name: "wrapper throws",
    input: () => ({ callId: "c1", name: "echo", arguments: {} }),
    install: () =>
      Effect.flatMap(ToolRegistry, (tools) => tools.onExecute(() => Effect.fail(new Error("wrapper broke"))))
  },
  {
    name: "body error with a context",
    input: () => ({ callId: "c1", name: "boom", arguments: {} }),
    install: (probe) =>
      Effect.flatMap(ToolRegistry, (tools) =>
        Effect.orDie(tools.register(probeTool(probe, {
          name: "boom",
          execute: (_args, ctx) =>
            Effect.zipRight(Effect.sync(() => ctx.deferContext(message("nested"))), Effect.fail(new Error("exploded")))
        }))))
  },
  {
    name: "post block",
    input: () => ({ callId: "c1", name: "echo", arguments: {} }),
    install: () =>
      Effect.flatMap(ToolRegistry, (tools) =>
        tools.onPostExecute(() =>
          Effect.succeed(PostDecision.Block({ feedback: text("rejected"), additionalContexts: [message("b")] }))
        ))
  },
  {
    name: "caller abort during post",
    input: (signal) => ({ callId: "c1", name: "echo", arguments: { text: "x" }, signal }),
    install: (_probe, controller) =>
      Effect.flatMap(ToolRegistry, (tools) =>
        tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => controller.abort()), next)))
  },
  {
    name: "unknown tool",
    input: () => ({ callId: "c1", name: "ghost", arguments: {} }),
    install: () => Effect.void
  },
  {
    name: "ask → rejected",
    input: () => ({ callId: "c1", name: "echo", agent: "a", arguments: {} }),
    install: () =>
      Effect.flatMap(ToolRegistry, (tools) => tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({ reason: "r" }))))
  }
]

const runScenario = (scenario: Scenario, driver: Driver) => {
  const probe = makeProbe()
  const controller = new AbortController()
  return Effect.scoped(Effect.gen(function*() {
    yield* instrumentInto(probe)
    const tools = yield* ToolRegistry
    yield* Effect.orDie(tools.register(probeTool(probe)))
    yield* scenario.install(probe, controller)
    const result = yield* driver(scenario.input(controller.signal))
    assert.strictEqual(probe.observed.length, 1)
    assert.strictEqual(probe.observed[0]!.result, result)
    return { result, log: probe.log, postSeen: probe.postSeen, finalized: probe.finalized }
  })).pipe(Effect.provide(Presets.layerTest([answer(probe, "rejected")])))
}

describe("EXEC-1 / TYPES-15 (staged API)", () => {
  for (const scenario of scenarios) {
    it.effect(`EXEC-1: prepare → dispatch → finalize/finish observes exactly what execute does (${scenario.name})`, () =>
      Effect.gen(function*() {
        const direct = yield* runScenario(scenario, viaExecute)
        const staged = yield* runScenario(scenario, viaStages)
        assert.deepStrictEqual(staged, direct)
      }))
  }

  it.scoped("EXEC-1: the staged outcomes are tagged as the spec's continuations", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const runtime = yield* ToolRuntime.ToolRuntime
      const dispatch = yield* runtime.prepare({ callId: "c1", name: "echo", arguments: { text: "s" } })
      assert.strictEqual(dispatch._tag, "Dispatch")
      const dispatched = yield* runtime.dispatch(dispatch.handle)
      assert.deepStrictEqual(dispatched, { _tag: "PostResult", result: echoed("s") })
      const final = yield* runtime.prepare({ callId: "c2", name: "echo", arguments: {}, signal: aborted() })
      assert.strictEqual(final._tag, "FinalResult")
      assert.deepStrictEqual(final._tag === "FinalResult" && final.result, ABORTED_BEFORE_DISPATCH)
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "no" })))
      const posted = yield* runtime.prepare({ callId: "c3", name: "echo", arguments: {} })
      assert.strictEqual(posted._tag, "PostResult")
      assert.strictEqual(posted.handle.execution.callId, "c3")
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("EXEC-2 (staged): finishing the same handle twice yields the same result and one notification", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const runtime = yield* ToolRuntime.ToolRuntime
      const prepared = yield* runtime.prepare({ callId: "c1", name: "echo", arguments: {}, signal: aborted() })
      const first = yield* runtime.finish(prepared.handle, ABORTED_BEFORE_DISPATCH)
      const second = yield* runtime.finish(prepared.handle, ABORTED)
      assert.strictEqual(second, first)
      assert.strictEqual(probe.count("observe"), 1)
      assert.strictEqual(probe.observed[0]!.exec, prepared.handle.execution)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("EXEC-1: a dispatch result's contexts and the handle's execution flow into finalize", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      const runtime = yield* ToolRuntime.ToolRuntime
      yield* tools.register(probeTool(probe, {
        execute: (_args, ctx) =>
          Effect.sync(() => {
            probe.bodies.push(ctx)
            ctx.deferContext(message("d"))
            return "v"
          })
      }))
      const prepared = yield* runtime.prepare({ callId: "c1", name: "echo", arguments: {} })
      assert.strictEqual(prepared._tag, "Dispatch")
      const dispatched = yield* runtime.dispatch(prepared.handle)
      const result = yield* runtime.finalize(prepared.handle, dispatched.result)
      assert.deepStrictEqual(result, {
        isError: false,
        value: "v",
        content: text("v"),
        additionalContexts: [context("ctx-1", "d")]
      })
      assert.strictEqual(probe.bodies[0]!.token, prepared.handle.execution.token)
    }).pipe(Effect.provide(Presets.layerTest())))
})
