/**
 * Phase order (ORDER), pre-execute policy (PRE-1…7, D-1, D-2), guards (GUARD-1/2, D-2),
 * scope filtering of hooks (SCOPE-5), re-entrant `next` (D-8) and per-stage snapshots (D-9).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import * as Presets from "../layers/Presets.js"
import type { Content } from "../src/Content.js"
import type { ToolExecution } from "../src/Execution.js"
import type { JsonValue } from "../src/Json.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { Guard, PreExecuteHook } from "../src/Policy.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED_BEFORE_DISPATCH,
  echoed,
  errorResult,
  execute,
  info,
  isPending,
  makeProbe,
  probeTool,
  rawTool,
  setup,
  text
} from "./fixtures/runtime.js"

const malformedPre = (json: string) => errorResult(`tools/pre-execute returned a malformed decision: ${json}`)

describe("ORDER", () => {
  it.scoped("T-ORDER-001: pre resolves completely before post", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(probeTool(makeProbe()))
      const order: Array<string> = []
      yield* tools.onPreExecute((_exec, next) =>
        Effect.gen(function*() {
          order.push("pre:before")
          const decision = yield* next
          order.push("pre:after")
          return decision
        })
      )
      yield* tools.onPostExecute((_exec, _result, next) =>
        Effect.gen(function*() {
          order.push("post:before")
          const decision = yield* next
          order.push("post:after")
          return decision
        })
      )
      yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(order, ["pre:before", "pre:after", "post:before", "post:after"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-ORDER-002: pre → execute:before → dispatch → execute:after → post (content fixture)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const order: Array<string> = []
      yield* tools.register(rawTool("content", (args) =>
        Effect.sync(() => {
          order.push("dispatch")
          return [{ type: "text", text: (args as { readonly text: string }).text }] as JsonValue
        }), { output: { schema: {}, render: (_args, value) => value as unknown as Content } }))
      yield* tools.onPreExecute((_exec, next) => Effect.zipRight(Effect.sync(() => order.push("pre")), next))
      yield* tools.onExecute((_exec, next) =>
        Effect.gen(function*() {
          order.push("execute:before")
          const result = yield* next
          order.push("execute:after")
          return result
        })
      )
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => order.push("post")), next))
      const result = yield* execute({ callId: "c1", name: "content", arguments: { text: "hi" } })
      assert.deepStrictEqual(order, ["pre", "execute:before", "dispatch", "execute:after", "post"])
      assert.deepStrictEqual(result, { isError: false, value: text("hi") as unknown as JsonValue, content: text("hi") })
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("PRE (pre-execute policy)", () => {
  it.scoped("PRE-2: hooks see the body's execution (same token, same frozen arguments); no rewrite is possible", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const attempts: Array<string> = []
      yield* tools.onPreExecute((exec, next) =>
        Effect.suspend(() => {
          try {
            ;(exec.arguments as { text: string }).text = "rewritten"
          } catch (error) {
            attempts.push((error as Error).constructor.name)
          }
          return next
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "original" } })
      assert.deepStrictEqual(result, echoed("original"))
      assert.deepStrictEqual(attempts, ["TypeError"])
      assert.strictEqual(probe.preSeen[0]!.token, probe.bodies[0]!.token)
      assert.strictEqual(probe.preSeen[0]!.arguments, probe.bodies[0]!.arguments)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PRE-2: a hook may short-circuit without next (inner hooks do not run); the default is allow", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      let inner = 0
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Allow()))
      yield* tools.onPreExecute(() =>
        Effect.sync(() => {
          inner++
          return PreDecision.Deny({ reason: "inner" })
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "a" } })
      assert.deepStrictEqual(result, echoed("a"))
      assert.strictEqual(inner, 0)
      assert.strictEqual(probe.count("body"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PRE-4 / T-PRE-001: a denial is a post-result; post sees a frozen result", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const mutations: Array<boolean> = []
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "denied by policy" })))
      yield* tools.onPostExecute((_exec, result, next) =>
        Effect.suspend(() => {
          mutations.push(Object.isFrozen(result) && Object.isFrozen(result.content))
          try {
            ;(result as { isError: boolean }).isError = false
            mutations.push(true)
          } catch {
            mutations.push(false)
          }
          return next
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("denied by policy"))
      assert.deepStrictEqual(mutations, [true, false])
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PRE-4: an empty denial reason still denies (content `Error: `)", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "" })))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: true, error: { message: "" }, content: text("Error: ") })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-1: deny(reason, info) copies info into error.info; post still runs", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPreExecute(() =>
        Effect.succeed(PreDecision.Deny({ reason: "quota exceeded", info: info("QuotaError", "QUOTA") }))
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("quota exceeded", info("QuotaError", "QUOTA")))
      assert.deepStrictEqual(probe.postSeen, [result])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-1: a cancel decision is an ABORTED_BEFORE_DISPATCH post-result (no guards, no body)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Cancel()))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.log, ["pre", "post", "fin", "observe"])
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-2: malformed pre decisions fail closed as final-result errors", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const answers: Array<unknown> = [
        { _tag: "Maybe" },
        { _tag: "Deny" },
        { _tag: "Deny", reason: 7 },
        { _tag: "Deny", reason: "r", info: { name: "X" } },
        { kind: "allow" },
        undefined,
        null,
        "Allow"
      ]
      const expected = [
        "{\"_tag\":\"Maybe\"}",
        "{\"_tag\":\"Deny\"}",
        "{\"_tag\":\"Deny\",\"reason\":7}",
        "{\"_tag\":\"Deny\",\"reason\":\"r\",\"info\":{\"name\":\"X\"}}",
        "{\"kind\":\"allow\"}",
        "undefined",
        "null",
        "\"Allow\""
      ]
      let index = 0
      yield* tools.onPreExecute(() => Effect.sync(() => answers[index] as PreDecision))
      for (; index < answers.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "echo", arguments: {} })
        assert.deepStrictEqual(result, malformedPre(expected[index]!))
      }
      assert.strictEqual(probe.count("body"), 0)
      assert.strictEqual(probe.count("post"), 0)
      assert.strictEqual(probe.count("fin"), answers.length)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-2: a pre hook that does not return an Effect is a final pipeline error (no info, no post)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onPreExecute((() => PreDecision.Allow()) as unknown as PreExecuteHook)
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.isTrue(result.isError)
      assert.deepStrictEqual(Object.keys(result.isError ? result.error : {}), ["message"])
      assert.strictEqual(probe.count("post"), 0)
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PRE-6 / T-CANCEL-001: a pending pre listener is never abandoned; the abort is re-checked after it", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      let settled = false
      yield* tools.onPreExecute(() =>
        Effect.gen(function*() {
          yield* Deferred.succeed(entered, undefined)
          yield* Deferred.await(release)
          settled = true
          return PreDecision.Allow()
        })
      )
      const fiber = yield* Effect.fork(
        execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      )
      yield* Deferred.await(entered)
      controller.abort()
      assert.isTrue(yield* isPending(fiber))
      yield* Deferred.succeed(release, undefined)
      const result = yield* Fiber.join(fiber)
      assert.isTrue(settled)
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(probe.count("body"), 0)
      assert.strictEqual(probe.count("post"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-CANCEL-002: a denial that settles after the abort wins; the body is not invoked", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* tools.onPreExecute(() =>
        Effect.gen(function*() {
          yield* Deferred.succeed(entered, undefined)
          yield* Deferred.await(release)
          return PreDecision.Deny({ reason: "policy denied the call" })
        })
      )
      const fiber = yield* Effect.fork(
        execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal })
      )
      yield* Deferred.await(entered)
      controller.abort()
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), errorResult("policy denied the call"))
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-PRE-014 / SCOPE-5: a scoped pre hook sees only its agent (and descendants)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.declareAgent("A")
      yield* tools.declareAgent("A.child", { parent: "A" })
      const seen: Array<string | undefined> = []
      yield* tools.onPreExecute((exec) =>
        Effect.sync(() => {
          seen.push(exec.agent)
          return PreDecision.Deny({ reason: "scoped veto" })
        }), { agent: "A" })
      assert.deepStrictEqual(
        yield* execute({ callId: "c1", name: "echo", agent: "A", arguments: {} }),
        errorResult("scoped veto")
      )
      assert.deepStrictEqual(
        yield* execute({ callId: "c2", name: "echo", agent: "A.child", arguments: {} }),
        errorResult("scoped veto")
      )
      assert.deepStrictEqual(yield* execute({ callId: "c3", name: "echo", agent: "B", arguments: { text: "b" } }), echoed("b"))
      assert.deepStrictEqual(yield* execute({ callId: "c4", name: "echo", arguments: { text: "g" } }), echoed("g"))
      assert.deepStrictEqual(seen, ["A", "A.child"])
      assert.strictEqual(probe.count("body"), 2)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("GUARD (monotonic guards)", () => {
  it.scoped("GUARD-2: global guards first, then the agent chain farthest ancestor first; the first answer stops", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.declareAgent("root")
      yield* tools.declareAgent("mid", { parent: "root" })
      yield* tools.declareAgent("leaf", { parent: "mid" })
      const order: Array<string> = []
      const recording = (name: string, answer?: string): Guard => () => {
        order.push(name)
        return answer
      }
      yield* tools.guard(recording("leaf"), { agent: "leaf" })
      yield* tools.guard(recording("mid-1"), { agent: "mid" })
      yield* tools.guard(recording("mid-2", "mid says no"), { agent: "mid" })
      yield* tools.guard(recording("root"), { agent: "root" })
      yield* tools.guard(recording("global"))
      yield* tools.guard(recording("other"), { agent: "other" })
      const result = yield* execute({ callId: "c1", name: "echo", agent: "leaf", arguments: {} })
      assert.deepStrictEqual(result, errorResult("mid says no"))
      assert.deepStrictEqual(order, ["global", "root", "mid-1", "mid-2"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("GUARD-1 / T-GUARD-001: a guard beats a forced allow; lifting one registration keeps it; disposing lifts it", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const frozenArgs: Array<boolean> = []
      const guard: Guard = (exec) => {
        frozenArgs.push(Object.isFrozen(exec.arguments))
        return "terminal policy"
      }
      const first = yield* Scope.make()
      const second = yield* Scope.make()
      yield* Scope.extend(tools.guard(guard, { agent: "A" }), first)
      yield* Scope.extend(tools.guard(guard, { agent: "A" }), second)
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Allow()), { prepend: true })
      assert.deepStrictEqual(
        yield* execute({ callId: "c1", name: "echo", agent: "A", arguments: {} }),
        errorResult("terminal policy")
      )
      assert.deepStrictEqual(yield* execute({ callId: "c2", name: "echo", agent: "B", arguments: {} }), echoed(""))
      yield* Scope.close(first, Exit.void)
      assert.deepStrictEqual(
        yield* execute({ callId: "c3", name: "echo", agent: "A", arguments: {} }),
        errorResult("terminal policy")
      )
      yield* Scope.close(second, Exit.void)
      assert.deepStrictEqual(yield* execute({ callId: "c4", name: "echo", agent: "A", arguments: {} }), echoed(""))
      assert.strictEqual(probe.count("body"), 2)
      assert.deepStrictEqual(frozenArgs, [true, true])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-2: a guard answer that is not a string or undefined is a final pipeline error", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const answers: Array<unknown> = [null, false, 0, { reason: "x" }]
      const expected = ["null", "false", "0", "{\"reason\":\"x\"}"]
      let index = 0
      yield* tools.guard((() => answers[index]) as Guard)
      for (; index < answers.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "echo", arguments: {} })
        assert.deepStrictEqual(result, errorResult(`guard returned a non-string denial: ${expected[index]}`))
      }
      assert.strictEqual(probe.count("post"), 0)
      assert.strictEqual(probe.count("fin"), answers.length)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("GUARD-2: an empty-string guard answer is a denial (post-result)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.guard(() => "")
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: true, error: { message: "" }, content: text("Error: ") })
      assert.strictEqual(probe.count("post"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("D-8 (re-entrant next)", () => {
  it.scoped("D-8: a retrying wrapper's second next re-runs inner wrappers and the body", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      let bodies = 0
      let inner = 0
      yield* tools.register(rawTool("flaky", () =>
        Effect.suspend(() => {
          bodies++
          return bodies === 1 ? Effect.fail(new Error("first attempt")) : Effect.succeed(`attempt ${bodies}`)
        })))
      yield* tools.onExecute((_exec, next) =>
        Effect.flatMap(next, (result) => result.isError ? next : Effect.succeed(result))
      )
      yield* tools.onExecute((_exec, next) => Effect.zipRight(Effect.sync(() => inner++), next))
      const result = yield* execute({ callId: "c1", name: "flaky", arguments: {} })
      assert.deepStrictEqual(result, { isError: false, value: "attempt 2", content: text("attempt 2") })
      assert.strictEqual(bodies, 2)
      assert.strictEqual(inner, 2)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-8: pre and post next are re-entrant (inner hooks run once per next)", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const calls = { pre: 0, post: 0 }
      yield* tools.onPreExecute((_exec, next) => Effect.zipRight(next, next))
      yield* tools.onPreExecute((_exec, next) => Effect.zipRight(Effect.sync(() => calls.pre++), next))
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(next, next))
      yield* tools.onPostExecute((_exec, _result, next) => Effect.zipRight(Effect.sync(() => calls.post++), next))
      yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(calls, { pre: 2, post: 2 })
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("D-9 (snapshots per evaluation)", () => {
  it.scoped("D-9: a pre hook registered during the pre stage applies from the next call", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const scope = yield* Effect.scope
      let registered = false
      const late: Array<string> = []
      yield* tools.onPreExecute((exec, next) =>
        Effect.gen(function*() {
          if (!registered) {
            registered = true
            yield* Scope.extend(tools.onPreExecute((e, n) => Effect.zipRight(Effect.sync(() => late.push(e.callId)), n)), scope)
          }
          return yield* next
        })
      )
      yield* execute({ callId: "c1", name: "echo", arguments: {} })
      yield* execute({ callId: "c2", name: "echo", arguments: {} })
      assert.deepStrictEqual(late, ["c2"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-9: a post hook registered during the pre stage applies to this call's post stage", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const scope = yield* Effect.scope
      yield* tools.onPreExecute((_exec, next) =>
        Effect.zipRight(
          Scope.extend(tools.onPostExecute(() => Effect.succeed(PostDecision.Block({ feedback: text("late block") }))), scope),
          next
        )
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, { isError: true, error: { message: "late block" }, content: text("late block") })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-9: a guard registered by a guard is not visited in the same pass", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const scope = yield* Effect.scope
      let added = false
      yield* tools.guard(() => {
        if (!added) {
          added = true
          Effect.runSync(Scope.extend(tools.guard(() => "late guard"), scope))
        }
        return undefined
      })
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", arguments: { text: "1" } }), echoed("1"))
      assert.deepStrictEqual(yield* execute({ callId: "c2", name: "echo", arguments: {} }), errorResult("late guard"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-9: an observer registered by an observer sees only later results", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      const scope = yield* Effect.scope
      const late: Array<ToolResult> = []
      let added = false
      yield* tools.onResult(() =>
        added ? Effect.void : Effect.zipRight(
          Effect.sync(() => {
            added = true
          }),
          Scope.extend(tools.onResult((_exec: ToolExecution, result) => Effect.sync(() => late.push(result))), scope)
        )
      )
      yield* execute({ callId: "c1", name: "echo", arguments: { text: "1" } })
      assert.deepStrictEqual(late, [])
      const second = yield* execute({ callId: "c2", name: "echo", arguments: { text: "2" } })
      assert.deepStrictEqual(late, [second])
    }).pipe(Effect.provide(Presets.layerTest())))
})
