/**
 * The whole Promise facade (issue 11 item 6): tools and hooks registered with Promise (or plain)
 * callbacks, `schemas`, `runBatch`, disposers and `dispose`. Each callback behaviour is compared
 * with its Effect-API equivalent through the same runtime.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Layer, type Scope } from "effect"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as Presets from "../layers/Presets.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import type { DispatchExecution, ToolExecution } from "../src/Execution.js"
import { PostDecision, PreDecision } from "../src/Policy.js"
import * as PromiseApi from "../src/PromiseApi.js"
import * as Scheduler from "../src/Scheduler.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolCallLog } from "../src/ToolCallLog.js"
import { ToolRegistrationError, ToolRegistry } from "../src/ToolRegistry.js"
import type * as ToolRegistryModule from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as Hostile from "./fixtures/hostile.js"
import { layerFailingFrom } from "./fixtures/toolCallLog.js"
import { ABORTED, echo, echoed, errorResult, isDeepFrozen, text, unknownTool } from "./fixtures/runtime.js"

const gate = <A = void>() => {
  let resolve: (value: A) => void = () => {}
  const promise = new Promise<A>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

const facade = (...tools: ReadonlyArray<ToolDefinition<never>>) =>
  PromiseApi.make(Presets.layer({ tools, log: ToolCallLogMemory.layer }))

/** The same runtime with one Effect-API registration made by its layer. */
const withEffectHook = (
  register: (registry: ToolRegistryModule.Service) => Effect.Effect<void, never, Scope.Scope>,
  ...tools: ReadonlyArray<ToolDefinition<never>>
) =>
  PromiseApi.make(
    Layer.scopedDiscard(Effect.flatMap(ToolRegistry, register)).pipe(
      Layer.provideMerge(Presets.layer({ tools, log: ToolCallLogMemory.layer }))
    )
  )

const call = (name = "echo", args: unknown = { text: "hi" }) => ({ callId: "c1", name, arguments: args })

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(() => assert.fail("expected a rejection"), (error: unknown) => error)

/** Runs `input` through a facade using the Promise callback, and one using the Effect hook. */
const both = async (
  viaPromise: (api: ReturnType<typeof facade>) => Promise<unknown>,
  viaEffect: (registry: ToolRegistryModule.Service) => Effect.Effect<void, never, Scope.Scope>,
  tools: ReadonlyArray<ToolDefinition<never>> = [echo()]
): Promise<readonly [ToolResult, ToolResult]> => {
  const promiseApi = facade(...tools)
  const effectApi = withEffectHook(viaEffect, ...tools)
  try {
    await viaPromise(promiseApi)
    return [await promiseApi.execute(call()), await effectApi.execute(call())] as const
  } finally {
    await promiseApi.dispose()
    await effectApi.dispose()
  }
}

describe("issue 11 item 6: the Promise facade covers the whole API", () => {
  it("register / disposer: schemas list the tool, execute runs it, the disposer removes it (REG-1, HOST-5)", async () => {
    const api = facade()
    try {
      const stop = await api.register(echo())
      assert.deepStrictEqual((await api.schemas()).map((schema) => schema.name), ["echo"])
      assert.deepStrictEqual(await api.execute(call()), echoed("hi"))
      await stop()
      await stop()
      assert.deepStrictEqual(await api.schemas(), [])
      assert.deepStrictEqual(await api.execute(call()), unknownTool("echo"))
    } finally {
      await api.dispose()
    }
  })

  it("register for one agent, declareAgent, restrict: schemas(agent) follows the registry", async () => {
    const api = facade(echo())
    try {
      await api.declareAgent("child")
      await api.register(echo({ name: "mine" }), { agent: "child" })
      assert.deepStrictEqual((await api.schemas("child")).map((schema) => schema.name), ["echo", "mine"])
      const lift = await api.restrict({ deny: ["echo"] }, { agent: "child" })
      assert.deepStrictEqual((await api.schemas("child")).map((schema) => schema.name), ["mine"])
      await lift()
      assert.deepStrictEqual((await api.schemas()).map((schema) => schema.name), ["echo"])
    } finally {
      await api.dispose()
    }
  })

  it("REG-1: a refused registration rejects with the registry's typed error", async () => {
    const api = facade(echo())
    try {
      const error = await rejection(api.register(echo()))
      assert.instanceOf(error, ToolRegistrationError)
      assert.match((error as ToolRegistrationError).message, /^tool "echo" is already registered/)
    } finally {
      await api.dispose()
    }
  })

  it("an async pre-execute hook denies; next() resolves with the decision of the chain below (HOST-1, D-8)", async () => {
    const api = facade(echo())
    try {
      const seen: Array<string> = []
      await api.onPreExecute(async (_exec, next) => {
        const below = await next()
        seen.push(below._tag)
        return below._tag === "Deny" ? below : PreDecision.Allow()
      })
      const stopInner = await api.onPreExecute(async (exec) =>
        exec.name === "echo" ? PreDecision.Deny({ reason: "not today" }) : PreDecision.Allow()
      )
      assert.deepStrictEqual(await api.execute(call()), errorResult("not today"))
      await stopInner()
      assert.deepStrictEqual(await api.execute(call()), echoed("hi"))
      assert.deepStrictEqual(seen, ["Deny", "Allow"])
    } finally {
      await api.dispose()
    }
  })

  it("an async post-execute hook replaces content; an async observer is awaited before execute resolves (OBS-1)", async () => {
    const api = facade(echo())
    try {
      const observed: Array<ToolResult> = []
      await api.onPostExecute(async (_exec, result, next) => {
        await next()
        return result.isError ? PostDecision.Accept({}) : PostDecision.Accept({ content: text("redacted") })
      })
      await api.onResult(async (_exec, result) => {
        await Promise.resolve()
        observed.push(result)
      })
      const result = await api.execute(call())
      assert.deepStrictEqual(result, { isError: false, value: "hi", content: text("redacted") })
      assert.strictEqual(observed[0], result)
    } finally {
      await api.dispose()
    }
  })

  it("an async around wrapper: next() runs the body and its result stays canonical; a wrapper signal aborts the body (AROUND-5, BODY-2)", async () => {
    const started = gate()
    const api = facade(
      echo(),
      echo({ name: "wait", execute: () => Effect.zipRight(Effect.sync(() => started.resolve()), Effect.never) })
    )
    try {
      await api.onExecute(async (exec: DispatchExecution, next) => {
        if (exec.name !== "wait") return next()
        const deadline = new AbortController()
        exec.signal = deadline.signal
        const pending = next()
        await started.promise
        deadline.abort(new Error("wrapper deadline"))
        return pending
      })
      const result = await api.execute(call())
      assert.deepStrictEqual(result, echoed("hi"))
      assert.isTrue(isDeepFrozen(result))
      assert.deepStrictEqual(await api.execute(call("wait")), ABORTED)
    } finally {
      await api.dispose()
    }
  })

  it("D-14: a next() still running when its wrapper settles is awaited, not abandoned; next() after that rejects", async () => {
    const started = gate()
    const release = gate()
    const events: Array<string> = []
    const api = facade(echo({
      execute: () =>
        Effect.zipRight(Effect.sync(() => started.resolve()), Effect.promise(() => release.promise)).pipe(
          Effect.ensuring(Effect.sync(() => events.push("body exited"))),
          Effect.as("late")
        )
    }))
    try {
      let saved: (() => Promise<ToolResult>) | undefined
      await api.onExecute((_exec, next) => {
        saved = next
        void next()
        return { isError: true, error: { message: "mine" }, content: text("Error: mine") }
      })
      await api.onResult(() => {
        events.push("observed")
      })
      const pending = api.execute(call())
      await started.promise
      events.push("released")
      release.resolve()
      assert.deepStrictEqual(await pending, errorResult("mine"))
      assert.deepStrictEqual(events, ["released", "body exited", "observed"])
      const late = await rejection(saved!())
      assert.instanceOf(late, Error)
      assert.strictEqual((late as Error).message, PromiseApi.LATE_NEXT_MESSAGE)
    } finally {
      await api.dispose()
    }
  })

  it("D-14: a wrapper that starts next() and then throws still has that next() awaited before the call ends", async () => {
    const started = gate()
    const release = gate()
    const events: Array<string> = []
    const api = facade(echo({
      execute: () =>
        Effect.zipRight(Effect.sync(() => started.resolve()), Effect.promise(() => release.promise)).pipe(
          Effect.ensuring(Effect.sync(() => events.push("body exited"))),
          Effect.as("late")
        )
    }))
    try {
      await api.onExecute((_exec, next) => {
        void next()
        throw new Error("wrapper broke")
      })
      await api.onResult(() => {
        events.push("observed")
      })
      const pending = api.execute(call())
      await started.promise
      events.push("released")
      release.resolve()
      assert.deepStrictEqual(await pending, errorResult("wrapper broke"))
      assert.deepStrictEqual(events, ["released", "body exited", "observed"])
    } finally {
      await api.dispose()
    }
  })

  describe("D-15 / D-2: callbacks behave like their Effect-API equivalents (hostile values included)", () => {
    const preCases: ReadonlyArray<
      readonly [
        string,
        PromiseApi.PreExecuteCallback,
        (exec: ToolExecution, next: Effect.Effect<PreDecision>) => Effect.Effect<PreDecision, unknown>,
        ToolResult
      ]
    > = [
      ["a synchronous throw", () => {
        throw new Error("boom")
      }, () => {
        throw new Error("boom")
      }, errorResult("boom")],
      ["a rejected promise", () => Promise.reject(new Error("nope")), () => Effect.fail(new Error("nope")), errorResult("nope")],
      ["a plain decision (not a thenable)", () => PreDecision.Deny({ reason: "plain" }), () =>
        Effect.succeed(PreDecision.Deny({ reason: "plain" })), errorResult("plain")],
      ["a plain Allow through next()", (_exec, next) => next(), (_exec, next) => next, echoed("hi")],
      ["a thenable whose then getter throws", () => ({
        get then() {
          throw new Error("then getter")
        }
      }) as never, () => Effect.fail(new Error("then getter")), errorResult("then getter")],
      ["a thenable whose then throws", () => ({
        then: () => {
          throw new Error("then call")
        }
      }) as never, () => Effect.fail(new Error("then call")), errorResult("then call")],
      ["a thrown revoked proxy", () => {
        throw Hostile.revokedProxy()
      }, () => {
        throw Hostile.revokedProxy()
      }, errorResult("<unprintable thrown value>")],
      ["a rejection with a throwing proxy", () => Promise.reject(Hostile.throwingProxy()), () => {
        throw Hostile.throwingProxy()
      }, errorResult("<unprintable thrown value>")],
      ["a revoked proxy as the answer", () => Hostile.revokedProxy() as never, () =>
        Effect.succeed(Hostile.revokedProxy() as never), errorResult("Cannot perform 'get' on a proxy that has been revoked")]
    ]
    for (const [label, viaPromise, viaEffect, expected] of preCases) {
      it(`pre-execute: ${label}`, async () => {
        const [promised, effected] = await both(
          (api) => api.onPreExecute(viaPromise),
          (registry) => registry.onPreExecute(viaEffect)
        )
        assert.deepStrictEqual(promised, expected)
        assert.deepStrictEqual(promised, effected)
      })
    }

    it("pre-execute: a malformed plain answer (a number, a null-prototype object) fails closed like Effect.succeed of it", async () => {
      for (const answer of [42, Hostile.nullProto({ _tag: "Nope" }), null]) {
        const [promised, effected] = await both(
          (api) => api.onPreExecute(() => answer as never),
          (registry) => registry.onPreExecute(() => Effect.succeed(answer as never))
        )
        assert.isTrue(promised.isError)
        assert.deepStrictEqual(promised, effected)
      }
    })

    it("post-execute: a throw, a rejection and a plain Block behave like the Effect hook", async () => {
      const cases: ReadonlyArray<readonly [PromiseApi.PostExecuteCallback, (exec: ToolExecution, result: ToolResult, next: Effect.Effect<PostDecision>) => Effect.Effect<PostDecision, unknown>]> = [
        [() => {
          throw new Error("post boom")
        }, () => {
          throw new Error("post boom")
        }],
        [() => Promise.reject(new Error("post nope")), () => Effect.fail(new Error("post nope"))],
        [() => PostDecision.Block({ feedback: text("blocked") }), () => Effect.succeed(PostDecision.Block({ feedback: text("blocked") }))],
        [() => Hostile.throwingProxy() as never, () => Effect.succeed(Hostile.throwingProxy() as never)]
      ]
      const expected = [
        errorResult("post boom"),
        errorResult("post nope"),
        { isError: true, error: { message: "blocked" }, content: text("blocked") },
        errorResult("hostile get")
      ]
      for (let i = 0; i < cases.length; i++) {
        const [viaPromise, viaEffect] = cases[i]!
        const [promised, effected] = await both(
          (api) => api.onPostExecute(viaPromise),
          (registry) => registry.onPostExecute(viaEffect)
        )
        assert.deepStrictEqual(effected, expected[i], `Effect equivalent of case ${i}`)
        assert.deepStrictEqual(promised, effected, `case ${i}`)
      }
    })

    it("around: a throw, a rejection and a malformed plain result behave like the Effect wrapper", async () => {
      const cases: ReadonlyArray<readonly [PromiseApi.AroundCallback, (exec: DispatchExecution, next: Effect.Effect<ToolResult>) => Effect.Effect<ToolResult, unknown>]> = [
        [() => {
          throw new Error("around boom")
        }, () => {
          throw new Error("around boom")
        }],
        [() => Promise.reject(new Error("around nope")), () => Effect.fail(new Error("around nope"))],
        [() => 7 as never, () => Effect.succeed(7 as never)],
        [() => Hostile.revokedProxy() as never, () => Effect.succeed(Hostile.revokedProxy() as never)]
      ]
      const expected = [
        errorResult("around boom"),
        errorResult("around nope"),
        errorResult("tools/execute returned a malformed result"),
        errorResult("Cannot perform 'get' on a proxy that has been revoked")
      ]
      for (let i = 0; i < cases.length; i++) {
        const [viaPromise, viaEffect] = cases[i]!
        const [promised, effected] = await both((api) => api.onExecute(viaPromise), (registry) => registry.onExecute(viaEffect))
        assert.deepStrictEqual(effected, expected[i], `Effect equivalent of case ${i}`)
        assert.deepStrictEqual(promised, effected, `case ${i}`)
      }
    })

    it("a hook that is not a function fails the call exactly as it does through the Effect API", async () => {
      const [pre, preEffect] = await both(
        (api) => api.onPreExecute(5 as never),
        (registry) => registry.onPreExecute(5 as never)
      )
      assert.deepStrictEqual(pre, errorResult("hook is not a function"))
      assert.deepStrictEqual(pre, preEffect)
      const [around, aroundEffect] = await both(
        (api) => api.onExecute(null as never),
        (registry) => registry.onExecute(null as never)
      )
      assert.deepStrictEqual(around, aroundEffect)
      const [observed, observedEffect] = await both(
        (api) => api.onResult("x" as never),
        (registry) => registry.onResult("x" as never)
      )
      assert.deepStrictEqual(observed, echoed("hi"))
      assert.deepStrictEqual(observed, observedEffect)
    })

    it("observers: a throw, a rejection or a hostile value is contained and never changes the result (OBS-1)", async () => {
      const api = facade(echo())
      try {
        await api.onResult(() => {
          throw Hostile.revokedProxy()
        })
        await api.onResult(() => Promise.reject(Hostile.throwingProxy()))
        await api.onResult(() => Hostile.throwingProxy() as never)
        assert.deepStrictEqual(await api.execute(call()), echoed("hi"))
      } finally {
        await api.dispose()
      }
    })

    it("guards are synchronous in both APIs: a denial reason denies, a returned Promise fails closed (GUARD-1, D-2)", async () => {
      const [denied, deniedEffect] = await both(
        (api) => api.guard(() => "guarded"),
        (registry) => registry.guard(() => "guarded")
      )
      assert.deepStrictEqual(denied, errorResult("guarded"))
      assert.deepStrictEqual(denied, deniedEffect)
      const [promised, effected] = await both(
        (api) => api.guard((() => Promise.resolve("later")) as never),
        (registry) => registry.guard((() => Promise.resolve("later")) as never)
      )
      assert.isTrue(promised.isError)
      assert.deepStrictEqual(promised, effected)
    })
  })

  describe("runBatch", () => {
    it("runs one model message in order, awaits a Promise onCommit, writes the log (SCHED-8)", async () => {
      const api = facade(echo({ isConcurrencySafe: () => true }))
      try {
        const commits: Array<string> = []
        const batch = await api.runBatch([
          { callId: "a", name: "echo", arguments: "{\"text\":\"1\"}" },
          { callId: "b", name: "echo", arguments: "{\"text\":\"2\"}" },
          { callId: "c", name: "ghost", arguments: "" }
        ], {
          maxParallel: 2,
          onCommit: async (event) => {
            await Promise.resolve()
            commits.push(event.callId)
          }
        })
        assert.deepStrictEqual(batch.results.map((r) => r.result), [echoed("1"), echoed("2"), unknownTool("ghost")])
        assert.deepStrictEqual(commits, ["a", "b", "c"])
        const records = await api.run(Effect.flatMap(ToolCallLog, (log) => log.records))
        assert.deepStrictEqual(records.map((r) => `${r._tag} ${"callId" in r ? r.callId : ""}`), [
          "tool/call a",
          "tool/call b",
          "tool/result a",
          "tool/result b",
          "tool/call c",
          "tool/result c"
        ])
      } finally {
        await api.dispose()
      }
    })

    it("a throwing or rejecting onCommit is ignored; the batch resolves", async () => {
      const api = facade(echo())
      try {
        const batch = await api.runBatch([
          { callId: "a", name: "echo", arguments: "{}" },
          { callId: "b", name: "echo", arguments: "{}" }
        ], {
          onCommit: (event) => {
            if (event.index === 0) throw Hostile.revokedProxy()
            return Promise.reject(Hostile.throwingProxy())
          }
        })
        assert.deepStrictEqual(batch.results.map((r) => r.callId), ["a", "b"])
      } finally {
        await api.dispose()
      }
    })

    it("hostile options reach the scheduler read once: the same IllegalArgumentException as the Effect API", async () => {
      const api = facade(echo())
      try {
        const calls = [{ callId: "a", name: "echo", arguments: "{}" }]
        for (const options of [Hostile.revokedProxy(), { maxParallel: 0 }, 5, { onCommit: "no" }]) {
          const viaPromise = await rejection(api.runBatch(calls, options as never))
          const viaEffect = await api.run(
            Effect.sandbox(Scheduler.runBatch(calls, options as never)).pipe(Effect.flip, Effect.map(Cause.squash))
          )
          assert.instanceOf(viaPromise, Cause.IllegalArgumentException)
          assert.strictEqual((viaPromise as Error).message, (viaEffect as Error).message)
        }
        const reads = Hostile.counted({ agent: "main", maxParallel: 2, batchId: "b-1", signal: undefined, onCommit: () => {} })
        const batch = await api.runBatch(calls, reads.value as never)
        assert.deepStrictEqual(batch.results.map((r) => r.callId), ["a"])
        assert.deepStrictEqual(Object.fromEntries(reads.reads), { agent: 1, maxParallel: 1, batchId: 1, signal: 1, onCommit: 1 })
      } finally {
        await api.dispose()
      }
    })

    it("the log failing rejects with the scheduler's SchedulerError itself (D-16)", async () => {
      const failing = layerFailingFrom(0, "disk full")
      const api = PromiseApi.make(Presets.layer({ tools: [echo()], log: failing }))
      try {
        const error = await rejection(api.runBatch([{ callId: "a", name: "echo", arguments: "{}" }]))
        assert.instanceOf(error, Scheduler.SchedulerError)
        assert.deepStrictEqual((error as Scheduler.SchedulerError).unrecorded, ["a"])
      } finally {
        await api.dispose()
      }
    })
  })

  describe("dispose", () => {
    it("ends every registration, cuts a running batch short (drained and recorded), then refuses everything", async () => {
      const started = gate()
      let exited = 0
      const log = await Effect.runPromise(ToolCallLogMemory.make)
      const api = PromiseApi.make(Presets.layer({
        tools: [echo({
          name: "wait",
          execute: () =>
            Effect.zipRight(Effect.sync(() => started.resolve()), Effect.never).pipe(
              Effect.ensuring(Effect.sync(() => exited++))
            )
        })],
        log: Layer.succeed(ToolCallLog, log)
      }))
      const stop = await api.register(echo())
      const batch = api.runBatch([{ callId: "a", name: "wait", arguments: "{}" }, { callId: "b", name: "echo", arguments: "{}" }])
      await started.promise
      await api.dispose()
      assert.instanceOf(await rejection(batch), PromiseApi.RuntimeDisposedError)
      assert.strictEqual(exited, 1, "the running body was interrupted and awaited")
      const records = await Effect.runPromise(log.records)
      assert.deepStrictEqual(records.map((r) => `${r._tag} ${"callId" in r ? r.callId : ""}`), [
        "tool/call a",
        "tool/result a",
        "tool/call b",
        "tool/result b"
      ])
      await stop()
      for (
        const refused of [
          api.register(echo({ name: "late" })),
          api.onPreExecute(() => PreDecision.Allow()),
          api.schemas(),
          api.runBatch([])
        ]
      ) {
        assert.instanceOf(await rejection(refused), PromiseApi.RuntimeDisposedError)
      }
      assert.deepStrictEqual(await api.execute(call()), errorResult(PromiseApi.DISPOSED_MESSAGE))
    })

    it("a registration made while dispose runs is ended by dispose", async () => {
      const api = facade()
      const pending = api.register(echo())
      const disposing = api.dispose()
      const stop = await pending
      await disposing
      await stop()
      assert.deepStrictEqual(await api.execute(call()), errorResult(PromiseApi.DISPOSED_MESSAGE))
    })
  })

  it("type level: the registration methods and runBatch need a layer that provides their services", () => {
    const bare = PromiseApi.make(Layer.empty as unknown as Layer.Layer<import("../src/ToolRuntime.js").ToolRuntime>)
    // @ts-expect-error no ToolRegistry / ToolCallLog in the layer
    void (() => bare.runBatch([]))
    // @ts-expect-error no ToolRegistry in the layer
    void (() => bare.register(echo()))
    const full = PromiseApi.make(Presets.layer({ approval: ApprovalLayers.layerDenyAll }))
    void (() => full.runBatch([]))
    void (() => full.register(echo()))
    void bare.dispose()
    void full.dispose()
  })
})
