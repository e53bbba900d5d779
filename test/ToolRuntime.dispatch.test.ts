/**
 * Around-dispatch wrappers and signal fusion (AROUND-1…8, BODY-1…7, T-SIGNAL-*) and canonical
 * output (OUT-1…7, D-3).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Scope } from "effect"
import * as Presets from "../layers/Presets.js"
import type { RunContext } from "../src/Execution.js"
import type { JsonValue } from "../src/Json.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import type { ToolDefinition } from "../src/Tool.js"
import { HarnessError } from "../src/ToolError.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED,
  ABORTED_BEFORE_DISPATCH,
  closeNow,
  context,
  echo,
  echoed,
  errorResult,
  execute,
  info,
  instrument,
  isDeepFrozen,
  isPending,
  message,
  outputError,
  probeTool,
  rawTool,
  registerScoped,
  setup,
  setupTool,
  text,
  withContexts
} from "./fixtures/runtime.js"

describe("AROUND (wrappers)", () => {
  it.scoped("T-AROUND-001: next resolves to the normalized body error (it does not fail)", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.register(rawTool("boom", () => Effect.fail(new HarnessError({ message: "kaboom", code: "BOOM" }))))
      const seen: Array<ToolResult> = []
      yield* tools.onExecute((_exec, next) => Effect.tap(next, (result) => Effect.sync(() => seen.push(result))))
      const result = yield* execute({ callId: "c1", name: "boom", arguments: {} })
      const expected = errorResult("kaboom", info("HarnessError", "BOOM"))
      assert.deepStrictEqual(seen, [expected])
      assert.deepStrictEqual(result, expected)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-AROUND-006 / AROUND-6: an authored failure is rebuilt (meta and contexts kept, other fields dropped)", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onExecute(() =>
        Effect.succeed({
          isError: true,
          error: { message: "outer failure" },
          content: text("custom"),
          meta: { card: 1 },
          additionalContexts: [message("w")],
          value: "dropped",
          extra: true
        } as unknown as ToolResult)
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, {
        isError: true,
        error: { message: "outer failure" },
        content: text("custom"),
        meta: { card: 1 },
        additionalContexts: [context("ctx-1", "w")]
      })
      assert.strictEqual(probe.count("body"), 0)
      assert.strictEqual(probe.count("post"), 1)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-AROUND-008: a wrapper throw is exactly the ERR-1 error", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onExecute(() => Effect.die(new Error("wrapper broke")))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("wrapper broke"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("AROUND-5/6: a copied canonical success is re-processed; the wrapper cannot change success content", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup
      yield* tools.onExecute((_exec, next) =>
        Effect.map(next, (result) =>
          ({ ...result, content: text("forged"), meta: { forged: true } }) as unknown as ToolResult
        )
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "real" } })
      assert.deepStrictEqual(result, echoed("real"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("AROUND-5: a canonical result of another execution (a cache) is not trusted: it is re-rendered", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        output: {
          schema: { type: "string" },
          render: (args, value) => text(`${(args as { readonly text: string }).text}:${value as string}`)
        }
      }))
      const cache: Array<ToolResult> = []
      yield* tools.onExecute((_exec, next) =>
        cache.length > 0 ? Effect.succeed(cache[0]!) : Effect.tap(next, (result) => Effect.sync(() => cache.push(result)))
      )
      const first = yield* execute({ callId: "c1", name: "echo", arguments: { text: "a" } })
      const second = yield* execute({ callId: "c2", name: "echo", arguments: { text: "b" } })
      assert.deepStrictEqual(first, { isError: false, value: "a", content: text("a:a") })
      assert.deepStrictEqual(second, { isError: false, value: "a", content: text("b:a") })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("AROUND-6 / AROUND-7: an authored success keeps its contexts after the body's; content is re-rendered", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      yield* tools.register(probeTool(probe, {
        execute: (_args, ctx) =>
          Effect.sync(() => {
            ctx.deferContext(message("body-1"))
            ctx.deferContext(message("body-2"))
            return "v"
          })
      }))
      yield* tools.onExecute((_exec, next) =>
        Effect.map(next, () =>
          ({
            isError: false,
            value: "wrapped",
            content: text("ignored"),
            additionalContexts: [message("wrapper")]
          }) as unknown as ToolResult)
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, {
        isError: false,
        value: "wrapped",
        content: text("wrapped"),
        additionalContexts: [context("ctx-1", "body-1"), context("ctx-2", "body-2"), context("ctx-3", "wrapper")]
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("AROUND-2: identity fields of the dispatch view are read-only; signal must stay an AbortSignal", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const attempts: Array<string> = []
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          for (const key of ["name", "callId", "arguments", "token"] as const) {
            try {
              ;(exec as unknown as Record<string, unknown>)[key] = "forged"
              attempts.push(`${key}:ok`)
            } catch {
              attempts.push(`${key}:refused`)
            }
          }
          return next
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "x" } })
      assert.deepStrictEqual(result, echoed("x"))
      assert.deepStrictEqual(attempts, ["name:refused", "callId:refused", "arguments:refused", "token:refused"])
      assert.strictEqual(probe.bodies[0]!.name, "echo")
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("AROUND-2: a wrapper that replaces the signal with a non-signal gets an error, never a detached body", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          exec.signal = undefined as unknown as AbortSignal
          return next
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.isTrue(result.isError)
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("SIGNAL (fusion, BODY-1/2/7)", () => {
  it.scoped("T-SIGNAL-001: a caller abort during a wrapper's wait is re-checked after its signal swap", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const controller = new AbortController()
      const waiting = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* tools.onExecute((exec, next) =>
        Effect.gen(function*() {
          exec.signal = new AbortController().signal
          yield* Deferred.succeed(waiting, undefined)
          yield* Deferred.await(release)
          return yield* next
        })
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(waiting)
      controller.abort()
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-SIGNAL-002: an already-aborted replacement signal → ABORTED_BEFORE_DISPATCH, body never invoked", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          const replacement = new AbortController()
          replacement.abort(new Error("deadline"))
          exec.signal = replacement.signal
          return next
        })
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-SIGNAL-003 / T-SIGNAL-004: the body gets a fused signal; a caller abort reaches it, not the wrapper's source", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const controller = new AbortController()
      const replacement = new AbortController()
      const started = yield* Deferred.make<void>()
      const bodySignals: Array<AbortSignal> = []
      const wrapperSaw: Array<AbortSignal> = []
      const callerSeen: Array<AbortSignal> = []
      yield* tools.register(rawTool("wait", (_args, ctx) =>
        Effect.zipRight(
          Effect.sync(() => bodySignals.push(ctx.signal)),
          Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
        )))
      yield* tools.onPreExecute((exec, next) => Effect.zipRight(Effect.sync(() => callerSeen.push(exec.signal)), next))
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          wrapperSaw.push(exec.signal)
          exec.signal = replacement.signal
          return next
        })
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "wait", arguments: {}, signal: controller.signal }))
      yield* Deferred.await(started)
      const body = bodySignals[0]!
      assert.strictEqual(wrapperSaw[0], callerSeen[0])
      assert.notStrictEqual(body, callerSeen[0])
      assert.notStrictEqual(body, replacement.signal)
      assert.isFalse(body.aborted)
      controller.abort()
      assert.isTrue(body.aborted)
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
      assert.isFalse(replacement.signal.aborted)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("BODY-2: the wrapper's signal aborting reaches the body through fusion", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const replacement = new AbortController()
      const started = yield* Deferred.make<void>()
      const reasons: Array<unknown> = []
      yield* tools.register(rawTool("wait", (_args, ctx) =>
        Effect.zipRight(
          Effect.sync(() => ctx.signal.addEventListener("abort", () => reasons.push(ctx.signal.reason))),
          Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
        )))
      yield* tools.onExecute((exec, next) =>
        Effect.suspend(() => {
          exec.signal = replacement.signal
          return next
        })
      )
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "wait", arguments: {} }))
      yield* Deferred.await(started)
      replacement.abort("deadline")
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
      assert.deepStrictEqual(reasons, ["deadline"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("BODY-2 / T-TMO-001: without a replacement the body gets exactly the caller signal", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.strictEqual(probe.bodies[0]!.signal, probe.preSeen[0]!.signal)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("BODY-7: after the body settles the wrapper sees its own signal again; post sees the caller signal", () =>
    Effect.gen(function*() {
      const { probe, tools } = yield* setup
      const replacement = new AbortController()
      const after: Array<AbortSignal> = []
      const postSaw: Array<AbortSignal> = []
      yield* tools.onExecute((exec, next) =>
        Effect.gen(function*() {
          exec.signal = replacement.signal
          const result = yield* next
          after.push(exec.signal)
          return result
        })
      )
      yield* tools.onPostExecute((exec, _result, next) => Effect.zipRight(Effect.sync(() => postSaw.push(exec.signal)), next))
      yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(after, [replacement.signal])
      assert.strictEqual(postSaw[0], probe.preSeen[0]!.signal)
      assert.strictEqual(probe.observed[0]!.exec.signal, probe.preSeen[0]!.signal)
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("BODY (dispatch)", () => {
  it.scoped("T-BODY-001: the success shape is exact (no meta, contexts or conclusion keys); observers get it", () =>
    Effect.gen(function*() {
      const { probe } = yield* setup
      const result = yield* execute({ callId: "c1", name: "echo", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, { content: [{ type: "text", text: "hi" }], isError: false, value: "hi" })
      assert.deepStrictEqual(Object.keys(result).sort(), ["content", "isError", "value"])
      assert.strictEqual(probe.observed[0]!.result, result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("BODY-3: the definition is resolved at body start (a re-registration after pre runs the new body)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const scope = yield* registerScoped(echo({ execute: () => Effect.succeed("old") }))
      const testScope = yield* Effect.scope
      yield* tools.onPreExecute((_exec, next) =>
        Effect.zipRight(
          Effect.suspend(() => {
            closeNow(scope)
            return Scope.extend(Effect.orDie(tools.register(echo({ execute: () => Effect.succeed("new") }))), testScope)
          }),
          next
        )
      )
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, echoed("new"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("BODY-5: the body receives the frozen argument snapshot and its run context", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const seen: Array<readonly [JsonValue, RunContext]> = []
      yield* tools.register(rawTool("see", (args, ctx) =>
        Effect.sync(() => {
          seen.push([args, ctx])
          return null
        })))
      const raw = { a: [1, { b: 2 }] }
      yield* execute({ callId: "c1", name: "see", arguments: raw })
      const [args, ctx] = seen[0]!
      assert.deepStrictEqual(args, raw)
      assert.notStrictEqual(args, raw)
      assert.isTrue(isDeepFrozen(args))
      assert.strictEqual(ctx.arguments, args)
      assert.strictEqual(ctx.callId, "c1")
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("BODY-5: the body's result is awaited, never raced (a slow body keeps the call pending)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const release = yield* Deferred.make<string>()
      const started = yield* Deferred.make<void>()
      yield* tools.register(rawTool("slow", () =>
        Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(release))))
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "slow", arguments: {} }))
      yield* Deferred.await(started)
      assert.isTrue(yield* isPending(fiber))
      yield* Deferred.succeed(release, "done")
      assert.deepStrictEqual(yield* Fiber.join(fiber), { isError: false, value: "done", content: text("done") })
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("OUT (canonical output)", () => {
  const withMeta = (meta: (args: JsonValue, value: JsonValue) => JsonValue): Partial<ToolDefinition<never>> => ({
    output: { schema: { type: "string" }, render: (_args, value) => text(value as string), presentationMeta: meta }
  })

  it.scoped("T-OUT-001 / T-OUT-002: meta is projected when declared, absent otherwise", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({ name: "meta", ...withMeta(() => ({ diffs: [{ path: "a", added: 1 }] })) }))
      yield* tools.register(echo())
      const meta = yield* execute({ callId: "c1", name: "meta", arguments: { text: "ok" } })
      assert.deepStrictEqual(meta, {
        content: text("ok"),
        isError: false,
        meta: { diffs: [{ path: "a", added: 1 }] },
        value: "ok"
      })
      const plain = yield* execute({ callId: "c2", name: "echo", arguments: { text: "ok" } })
      assert.isFalse("meta" in plain)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-OUT-003: non-lossless meta is INVALID_TOOL_OUTPUT (post sees it, observers see isError)", () =>
    Effect.gen(function*() {
      const { probe } = yield* setupTool(withMeta(() => (() => 1) as unknown as JsonValue))
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      const expected = outputError("echo", "output.presentationMeta returned non-lossless JSON")
      assert.deepStrictEqual(result, expected)
      assert.deepStrictEqual(probe.postSeen, [expected])
      assert.isTrue(probe.observed[0]!.result.isError)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-OUT-004 / OUT-2: lossy values are INVALID_TOOL_OUTPUT before post", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const values: ReadonlyArray<unknown> = [() => 1, undefined, new Date(0), -0, NaN, [1, , 2], 10n, { a: undefined }]
      let index = 0
      yield* tools.register(rawTool("lossy", () => Effect.sync(() => values[index])))
      for (; index < values.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "lossy", arguments: {} })
        assert.deepStrictEqual(result, outputError("lossy", "value is not lossless JSON"))
      }
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-2: any lossless root kind is a valid value (object, array, string, number, boolean, null)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const values: ReadonlyArray<JsonValue> = [{ a: 1 }, [1, "x"], "s", 1.5, false, null]
      let index = 0
      yield* tools.register(rawTool("any", () => Effect.sync(() => values[index])))
      for (; index < values.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "any", arguments: {} })
        assert.deepStrictEqual(result.isError ? undefined : result.value, values[index])
      }
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-OUT-004 / OUT-3: a schema violation names the value path", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("sum", () => Effect.succeed({ sum: "forty-two" }), {
        output: {
          schema: {
            type: "object",
            additionalProperties: false,
            required: ["sum"],
            properties: { sum: { type: "integer" } }
          },
          render: () => text("never")
        }
      }))
      const result = yield* execute({ callId: "c1", name: "sum", arguments: {} })
      assert.deepStrictEqual(result, outputError("sum", "\"value.sum\" must be an integer"))
      assert.isFalse("value" in result)
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-OUT-005: a throwing getter in the value is `value snapshot failed: <msg>`", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("getter", () =>
        Effect.sync(() => ({
          get x(): unknown {
            throw new Error("body snapshot getter exploded")
          }
        }))))
      const result = yield* execute({ callId: "c1", name: "getter", arguments: {} })
      assert.deepStrictEqual(result, outputError("getter", "value snapshot failed: body snapshot getter exploded"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-OUT-006: a throwing render or meta projector is INVALID_TOOL_OUTPUT with no value key", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo({
        name: "render",
        output: {
          schema: { type: "string" },
          render: () => {
            throw new Error("render exploded")
          }
        }
      }))
      yield* tools.register(echo({
        name: "meta",
        ...withMeta(() => {
          throw new Error("meta exploded")
        })
      }))
      const render = yield* execute({ callId: "c1", name: "render", arguments: {} })
      assert.deepStrictEqual(render, outputError("render", "output.render failed: render exploded"))
      const meta = yield* execute({ callId: "c2", name: "meta", arguments: {} })
      assert.deepStrictEqual(meta, outputError("meta", "output.presentationMeta failed: meta exploded"))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("D-3 / OUT-4: render output is validated as content blocks", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const renders: ReadonlyArray<unknown> = [null, "text", [{ type: "text" }], [{ type: "video", url: "x" }]]
      let index = 0
      yield* tools.register(echo({
        output: { schema: { type: "string" }, render: () => renders[index] as never }
      }))
      for (; index < renders.length; index++) {
        const result = yield* execute({ callId: `c${index}`, name: "echo", arguments: {} })
        assert.isTrue(result.isError)
        assert.deepStrictEqual(result.isError && result.error.info, info("ToolOutputError", "INVALID_TOOL_OUTPUT"))
        assert.isTrue(
          result.isError && result.error.message.startsWith("tool \"echo\" returned invalid output: output.render")
        )
      }
      const image = yield* Effect.scoped(Effect.gen(function*() {
        yield* tools.register(echo({
          name: "image",
          output: { schema: { type: "string" }, render: () => [{ type: "image", data: "AAAA", mimeType: "image/png" }] }
        }))
        return yield* execute({ callId: "img", name: "image", arguments: {} })
      }))
      assert.deepStrictEqual(image, {
        isError: false,
        value: "",
        content: [{ type: "image", data: "AAAA", mimeType: "image/png" }]
      })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("OUT-6: the success value is frozen and keeps its identity through post content replacement", () =>
    Effect.gen(function*() {
      const probe = yield* instrument
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("obj", () => Effect.succeed({ deep: { list: [1, 2] } })))
      yield* tools.onPostExecute(() => Effect.succeed(PostDecision.Accept({ content: text("replaced") })))
      const result = yield* execute({ callId: "c1", name: "obj", arguments: {} })
      assert.deepStrictEqual(result, { isError: false, value: { deep: { list: [1, 2] } }, content: text("replaced") })
      const seen = probe.postSeen[0]!
      assert.strictEqual(result.isError ? undefined : result.value, seen.isError ? null : seen.value)
      assert.isTrue(isDeepFrozen(result))
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("T-LAB-003: value plus rendered content", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("course_add", (args) => {
        const { left, right } = args as { readonly left: number; readonly right: number }
        return Effect.succeed({ sum: left + right })
      }, {
        output: {
          schema: { type: "object", properties: { sum: { type: "integer" } } },
          render: (args, value) => {
            const { left, right } = args as { readonly left: number; readonly right: number }
            return text(`计算结果：${left} + ${right} = ${(value as { readonly sum: number }).sum}`)
          }
        }
      }))
      const result = yield* execute({ callId: "c1", name: "course_add", arguments: { left: 20, right: 22 } })
      assert.deepStrictEqual(result, { isError: false, value: { sum: 42 }, content: text("计算结果：20 + 22 = 42") })
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("PRE-2 / BODY: a deny keeps the body's side effect out; a block does not roll it back (T-LAB-S03/S04)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const writes: Array<string> = []
      yield* tools.register(rawTool("write", (args) =>
        Effect.sync(() => {
          writes.push((args as { readonly v: string }).v)
          return "written"
        })))
      const mode = { value: "deny" }
      yield* tools.onPreExecute((_exec, next) =>
        mode.value === "deny" ? Effect.succeed(PreDecision.Deny({ reason: "no writes" })) : next
      )
      yield* tools.onPostExecute((_exec, _result, next) =>
        mode.value === "block" ? Effect.succeed(PostDecision.Block({ feedback: text("undo requested") })) : next
      )
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "write", arguments: { v: "a" } }), errorResult("no writes"))
      assert.deepStrictEqual(writes, [])
      mode.value = "block"
      const blocked = yield* execute({ callId: "c2", name: "write", arguments: { v: "b" } })
      assert.deepStrictEqual(blocked, { isError: true, error: { message: "undo requested" }, content: text("undo requested") })
      assert.deepStrictEqual(writes, ["b"])
    }).pipe(Effect.provide(Presets.layerTest())))

  it.scoped("BODY-6: a body failure with contexts deferred before the throw keeps them (AROUND-7)", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("boom", (_args, ctx) =>
        Effect.zipRight(
          Effect.sync(() => ctx.deferContext(message("nested"))),
          Effect.fail(new Error("exploded"))
        )))
      const result = yield* execute({ callId: "c1", name: "boom", arguments: {} })
      assert.deepStrictEqual(result, withContexts(errorResult("exploded"), [context("ctx-1", "nested")]))
    }).pipe(Effect.provide(Presets.layerTest())))
})

describe("services captured at registration", () => {
  class Greeting extends Context.Tag("test/runtime/Greeting")<Greeting, string>() {}

  it.scoped("BODY-5: a body's requirements are the ones captured when it was registered, not the caller's", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const greet: ToolDefinition<Greeting> = {
        name: "greet",
        description: "greets",
        parameters: { type: "object" },
        output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value as string }] },
        execute: () => Greeting
      }
      yield* tools.register(greet).pipe(Effect.provideService(Greeting, "registered"))
      const fromCaller = yield* execute({ callId: "c1", name: "greet", arguments: {} }).pipe(
        Effect.provideService(Greeting, "caller")
      )
      assert.deepStrictEqual(fromCaller, { isError: false, value: "registered", content: [{ type: "text", text: "registered" }] })
      const withoutCaller = yield* execute({ callId: "c2", name: "greet", arguments: {} })
      assert.strictEqual(withoutCaller.isError ? "error" : withoutCaller.value, "registered")
    }).pipe(Effect.provide(Presets.layerTest())))

  it.effect("BODY-5: the registration's own Scope is not handed to the body", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      const registration = yield* Scope.make()
      const scoped: ToolDefinition<Scope.Scope> = {
        name: "scoped",
        description: "needs a scope",
        parameters: { type: "object" },
        output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value as string }] },
        execute: () => Effect.as(Scope.Scope, "had a scope")
      }
      yield* Scope.extend(tools.register(scoped), registration)
      const result = yield* execute({ callId: "c1", name: "scoped", arguments: {} })
      assert.isTrue(result.isError)
      const inOwnScope: ToolDefinition<never> = {
        ...scoped,
        name: "own_scope",
        execute: () => Effect.scoped(Effect.as(Scope.Scope, "own"))
      }
      yield* Scope.extend(tools.register(inOwnScope), registration)
      const own = yield* execute({ callId: "c2", name: "own_scope", arguments: {} })
      assert.strictEqual(own.isError ? "error" : own.value, "own")
      yield* Scope.close(registration, Exit.void)
    }).pipe(Effect.provide(Presets.layerTest())))
})
