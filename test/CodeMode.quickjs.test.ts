/**
 * `run_code` end to end over the embedded QuickJS runtime (`CodeRuntimeQuickJs.layer`): real
 * TypeScript programs calling tools through the `tools` namespace, the bridge's ordering
 * contract observed with gates, `ToolCallError` in the guest, captured output, limits and
 * cancellation.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import type * as Tool from "../src/Tool.js"
import { ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as Code from "./fixtures/codeRuntime.js"
import { echo, errorResult, info, rawTool, text } from "./fixtures/runtime.js"

const quickjs = (options?: CodeRuntimeQuickJs.Options) =>
  Code.layer(Code.make({}), { runtime: CodeRuntimeQuickJs.layer(options) })

const runCode = (code: string, signal?: AbortSignal) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) =>
    runtime.execute({
      callId: "call-1",
      name: "run_code",
      agent: "main",
      arguments: { description: "Run the program", code },
      signal
    }))

const valueOf = (result: ToolResult): unknown => (result.isError ? result.error : result.value)

const register = (definition: Tool.ToolDefinition<never>) =>
  Effect.flatMap(ToolRegistry, (registry) => registry.register(definition))

const codeRunFailed = (message: string) => errorResult(message, info("CodeRunFailedError", "CODE_RUN_FAILED"))

describe("run_code over QuickJS (end to end)", () => {
  it.scoped("PTC-9: Promise.all over two parallel-safe tools overlaps them (both bodies live at once)", () => {
    const trace = Code.makeTrace()
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true, value: (args) => `got ${String((args as { text?: string }).text)}` }))
      const fiber = yield* Effect.fork(runCode(`
        const [a, b]: Array<string> = await Promise.all([tools.read({ text: "a" }), tools.read({ text: "b" })])
        console.log("both back")
        return a + " / " + b
      `))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      yield* Deferred.await(trace.entered("call-1:code:2"))
      assert.strictEqual(trace.live, 2)
      yield* trace.release("call-1:code:2")
      yield* trace.release("call-1:code:1")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result, {
        isError: false,
        value: { logs: ["both back"], result: "got a / got b" },
        content: text("both back\ngot a / got b")
      })
      assert.strictEqual(trace.peak, 2)
    }).pipe(Effect.provide(quickjs()))
  })

  it.scoped("PTC-9: Promise.all over exclusive tools runs them one at a time in submission order", () => {
    const trace = Code.makeTrace()
    return Effect.gen(function*() {
      for (const name of ["a", "b", "c"]) yield* register(Code.gated(trace, name, { gated: false, value: () => name }))
      const result = yield* runCode(`return (await Promise.all([tools.a({}), tools.b({}), tools.c({})])).join(",")`)
      assert.deepStrictEqual(result.content, text("a,b,c"))
      assert.deepStrictEqual(trace.events, [
        "enter call-1:code:1",
        "exit call-1:code:1",
        "enter call-1:code:2",
        "exit call-1:code:2",
        "enter call-1:code:3",
        "exit call-1:code:3"
      ])
      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
      const position = (tag: string, subCallId: string) =>
        records.findIndex((r) => r._tag === tag && "subCallId" in r && r.subCallId === subCallId)
      for (const n of [1, 2, 3]) {
        const id = `call-1:code:${n}`
        assert.isTrue(position("tool/code-dispatch-start", id) >= 0, id)
        assert.isTrue(position("tool/code-dispatch", id) > position("tool/code-dispatch-start", id), id)
      }
      assert.strictEqual(records.length, 6)
    }).pipe(Effect.provide(quickjs()))
  })

  it.scoped("PTC-11 / RT-5: a failed tool is a catchable ToolCallError naming the tool; the message is the tool's", () =>
    Effect.gen(function*() {
      yield* register(rawTool("boom", () => Effect.fail(new Error("deliberate failure"))))
      yield* register(echo())
      const result = yield* runCode(`
        try {
          await tools.boom({})
          return "no error"
        } catch (e) {
          const ok = e instanceof ToolCallError && e.name === "ToolCallError"
          return { ok, toolName: (e as ToolCallError).toolName, message: (e as Error).message, after: await tools.echo({ text: "went on" }) }
        }
      `)
      assert.deepStrictEqual(valueOf(result), {
        logs: [],
        result: { ok: true, toolName: "boom", message: "deliberate failure", after: "went on" }
      })
    }).pipe(Effect.provide(quickjs())))

  it.scoped("PTC-14: an uncaught error is CODE_RUN_FAILED (exception) with the printed lines appended", () =>
    Effect.gen(function*() {
      const result = yield* runCode(`console.log("step 1")\nthrow new Error("gave up")`)
      assert.isTrue(result.isError)
      const message = result.isError ? result.error.message : ""
      assert.match(message, /^code run failed \(exception\): .*gave up/)
      assert.isTrue(message.endsWith("\nCaptured output:\nstep 1"))
      assert.deepStrictEqual(result.isError && result.error.info, { name: "CodeRunFailedError", code: "CODE_RUN_FAILED" })
    }).pipe(Effect.provide(quickjs())))

  it.scoped("D-17 / PTC-14: a limit ends the run as CODE_RUN_FAILED with its kind (call-limit, timeout)", () =>
    Effect.gen(function*() {
      yield* register(echo())
      const calls = yield* runCode(`for (let i = 0; i < 5; i++) await tools.echo({ text: String(i) })\nreturn "unreachable"`)
      assert.deepStrictEqual(calls, codeRunFailed("code run failed (call-limit): the program made more than 2 tool calls"))
      const loop = yield* runCode(`while (true) {}`)
      assert.deepStrictEqual(loop, codeRunFailed("code run failed (timeout): the program used more than 200 ms of CPU time"))
      const next = yield* runCode(`return await tools.echo({ text: "healthy" })`)
      assert.deepStrictEqual(valueOf(next), { logs: [], result: "healthy" })
    }).pipe(Effect.provide(quickjs({ maxToolCalls: 2, cpuMs: 200 }))))

  it.scoped("PTC-16: cancelling the outer call mid-program stops it and drains the started sub-call", () => {
    const trace = Code.makeTrace()
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true }))
      const controller = new AbortController()
      const fiber = yield* Effect.fork(runCode(`await tools.read({ text: "slow" })\nreturn "unreachable"`, controller.signal))
      yield* Deferred.await(trace.entered("call-1:code:1"))
      controller.abort()
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result, codeRunFailed("code run failed (abort): the run was aborted"))
      assert.strictEqual(trace.live, 0)
      assert.deepStrictEqual(trace.events, ["enter call-1:code:1", "interrupted call-1:code:1"])
    }).pipe(Effect.provide(quickjs()))
  })

  it.scoped("PTC-8 / PTC-6: the program cannot reach run_code, and __proto__ arguments stay data", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      yield* register(rawTool("probe", (args) => Effect.sync(() => (seen.push(args), "ok"))))
      const result = yield* runCode(`
        const hasRunCode = typeof (tools as Record<string, unknown>).run_code
        const args = JSON.parse('{"__proto__": {"polluted": true}}')
        await tools.probe(args)
        return { hasRunCode, polluted: ({} as Record<string, unknown>).polluted ?? null }
      `)
      assert.deepStrictEqual(valueOf(result), { logs: [], result: { hasRunCode: "undefined", polluted: null } })
      assert.isTrue(Object.prototype.hasOwnProperty.call(seen[0], "__proto__"))
      assert.isUndefined(({} as Record<string, unknown>).polluted)
    }).pipe(Effect.provide(quickjs())))

  it.scoped("PTC-14: an unawaited call is drained before run_code returns and its result discarded", () => {
    const trace = Code.makeTrace()
    return Effect.gen(function*() {
      yield* register(Code.gated(trace, "read", { parallel: true, gated: false }))
      const result = yield* runCode(`tools.read({ text: "fire and forget" })\nreturn "returned"`)
      assert.deepStrictEqual(valueOf(result), { logs: [], result: "returned" })
      assert.strictEqual(trace.live, 0)
      const records = yield* Effect.flatMap(ToolCallLog, (log) => log.records)
      const starts = records.filter((r) => r._tag === "tool/code-dispatch-start")
      const settles = records.filter((r) => r._tag === "tool/code-dispatch")
      assert.strictEqual(starts.length, settles.length)
      assert.isTrue(starts.length <= 1)
      assert.isTrue(records.every((r) => "subCallId" in r && r.subCallId === "call-1:code:1"))
      assert.strictEqual(trace.events.filter((e) => e.startsWith("enter")).length, starts.length)
    }).pipe(Effect.provide(quickjs()))
  })
})
