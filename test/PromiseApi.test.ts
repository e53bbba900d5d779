/**
 * The Promise facade: one frozen result per call, abort through the input signal, listener
 * hygiene, `run` and `dispose`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Presets from "../layers/Presets.js"
import type { ExecuteInput } from "../src/Execution.js"
import type { ToolDefinition } from "../src/Tool.js"
import * as PromiseApi from "../src/PromiseApi.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolRuntime } from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED,
  ABORTED_BEFORE_DISPATCH,
  echo,
  echoed,
  errorResult,
  isDeepFrozen
} from "./fixtures/runtime.js"
import * as Hostile from "./fixtures/hostile.js"

const withTools = (...tools: ReadonlyArray<ToolDefinition<never>>) =>
  Layer.scopedDiscard(
    Effect.flatMap(ToolRegistry, (registry) => Effect.forEach(tools, (tool) => Effect.orDie(registry.register(tool))))
  ).pipe(Layer.provideMerge(Presets.layerTest()))

/** An AbortSignal whose `abort` listeners are counted (added, removed, currently attached). */
const countedSignal = () => {
  const controller = new AbortController()
  const signal = controller.signal
  const counts = { added: 0, removed: 0, live: new Set<unknown>() }
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  signal.addEventListener = ((type: string, listener: EventListenerOrEventListenerObject, options?: unknown) => {
    if (type === "abort") {
      counts.added++
      counts.live.add(listener)
    }
    add(type, listener, options as AddEventListenerOptions)
  }) as typeof signal.addEventListener
  signal.removeEventListener = ((type: string, listener: EventListenerOrEventListenerObject, options?: unknown) => {
    if (type === "abort" && counts.live.delete(listener)) counts.removed++
    remove(type, listener, options as EventListenerOptions)
  }) as typeof signal.removeEventListener
  return { controller, signal, counts }
}

/**
 * `PromiseApi.make<R extends ToolRuntime>` cannot infer a union of services for `R`, so `run`
 * is typed as needing only `ToolRuntime` even when the layer provides the registry too.
 */
const asRunnable = <A>(effect: Effect.Effect<A, never, ToolRegistry>) =>
  effect as unknown as Effect.Effect<A, never, ToolRuntime>

/** Resolves with `"pending"` if `promise` has not settled within `ms` (real time). */
const settledWithin = <A>(promise: Promise<A>, ms = 500): Promise<A | "pending"> =>
  Promise.race([promise, new Promise<"pending">((resolve) => setTimeout(() => resolve("pending"), ms))])

const started = () => {
  let resolve: () => void = () => {}
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

describe("PromiseApi", () => {
  it("execute resolves with the single frozen result", async () => {
    const api = PromiseApi.make(withTools(echo()))
    try {
      const result = await api.execute({ callId: "c1", name: "echo", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, echoed("hi"))
      assert.isTrue(isDeepFrozen(result))
    } finally {
      await api.dispose()
    }
  })

  it("D-15: execute never rejects for tool, policy or argument failures", async () => {
    const api = PromiseApi.make(withTools(echo({ name: "boom", execute: () => Effect.die(new Error("exploded")) })))
    try {
      assert.deepStrictEqual(await api.execute({ callId: "c1", name: "boom", arguments: {} }), errorResult("exploded"))
      assert.deepStrictEqual(
        await api.execute({ callId: "c2", name: "ghost", arguments: {} }),
        errorResult("unknown tool \"ghost\"", { name: "ToolNotFoundError", code: "UNKNOWN_TOOL" })
      )
      assert.deepStrictEqual(
        await api.execute({ callId: "c3", name: "boom", arguments: new Map() }),
        errorResult("tool execution arguments must be losslessly JSON-serializable")
      )
    } finally {
      await api.dispose()
    }
  })

  it("D-14: aborting the input signal interrupts the body and resolves ABORTED", async () => {
    const body = started()
    const events: Array<string> = []
    const api = PromiseApi.make(withTools(echo({
      execute: () =>
        Effect.zipRight(Effect.sync(() => body.resolve()), Effect.never).pipe(
          Effect.onInterrupt(() => Effect.sync(() => events.push("interrupted")))
        )
    })))
    try {
      const { controller, signal } = countedSignal()
      const pending = api.execute({ callId: "c1", name: "echo", arguments: {}, signal })
      await body.promise
      controller.abort()
      assert.deepStrictEqual(await pending, ABORTED)
      assert.deepStrictEqual(events, ["interrupted"])
    } finally {
      await api.dispose()
    }
  })

  it("the runtime removes every abort listener it added to the caller's signal (success and abort)", async () => {
    const body = started()
    const api = PromiseApi.make(withTools(
      echo(),
      echo({ name: "later", execute: () => Effect.as(Effect.yieldNow(), "later") }),
      echo({ name: "wait", execute: () => Effect.zipRight(Effect.sync(() => body.resolve()), Effect.never) })
    ))
    try {
      const sync = countedSignal()
      await api.execute({ callId: "c0", name: "echo", arguments: {}, signal: sync.signal })
      assert.strictEqual(sync.counts.added, 0, "a body that completes without suspending needs no listener")

      const ok = countedSignal()
      await api.execute({ callId: "c1", name: "later", arguments: {}, signal: ok.signal })
      assert.isAtLeast(ok.counts.added, 1)
      assert.strictEqual(ok.counts.live.size, 0)
      assert.strictEqual(ok.counts.removed, ok.counts.added)

      const aborted = countedSignal()
      const pending = api.execute({ callId: "c2", name: "wait", arguments: {}, signal: aborted.signal })
      await body.promise
      aborted.controller.abort()
      await pending
      assert.isAtLeast(aborted.counts.added, 1)
      assert.strictEqual(aborted.counts.live.size, 0)

      const reused = countedSignal()
      for (let i = 0; i < 5; i++) await api.execute({ callId: `r${i}`, name: "echo", arguments: {}, signal: reused.signal })
      assert.strictEqual(reused.counts.live.size, 0)
    } finally {
      await api.dispose()
    }
  })

  it("a pre-aborted signal is ABORTED_BEFORE_DISPATCH and leaves no listener behind", async () => {
    const api = PromiseApi.make(withTools(echo()))
    try {
      const { controller, signal, counts } = countedSignal()
      controller.abort()
      const result = await api.execute({ callId: "c1", name: "echo", arguments: {}, signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(counts.live.size, 0)
    } finally {
      await api.dispose()
    }
  })

  it("run executes any Effect against the same runtime (registrations are visible to execute)", async () => {
    const api = PromiseApi.make(withTools(echo()))
    try {
      const names = await api.run(asRunnable(Effect.flatMap(ToolRegistry, (registry) => registry.schemas())))
      assert.deepStrictEqual(names.map((schema) => schema.name), ["echo"])
      const observed: Array<ToolResult> = []
      await api.run(asRunnable(Effect.scoped(Effect.gen(function*() {
        const registry = yield* ToolRegistry
        yield* registry.onResult((_exec, result) => Effect.sync(() => observed.push(result)))
        const result = yield* Effect.promise(() => api.execute({ callId: "c1", name: "echo", arguments: { text: "x" } }))
        assert.strictEqual(observed[0], result)
      }))))
      assert.strictEqual(observed.length, 1)
    } finally {
      await api.dispose()
    }
  })

  it("dispose interrupts running bodies: a pending call settles (as ABORTED) instead of hanging", async () => {
    const body = started()
    const api = PromiseApi.make(withTools(echo({
      execute: () => Effect.zipRight(Effect.sync(() => body.resolve()), Effect.never)
    })))
    const pending = api.execute({ callId: "c1", name: "echo", arguments: {} })
    await body.promise
    await api.dispose()
    assert.deepStrictEqual(await settledWithin(pending), ABORTED)
  })

  describe("issue 8 item 3 / D-15: execute is as total as the Effect API", () => {
    const inputs: ReadonlyArray<readonly [string, () => unknown, string]> = [
      ["null", () => null, "tool execution input must be an object"],
      ["undefined", () => undefined, "tool execution input must be an object"],
      ["a throwing proxy", () => Hostile.throwingProxy(), "hostile get"],
      ["a revoked proxy", () => Hostile.revokedProxy(), "Cannot perform 'get' on a proxy that has been revoked"],
      ["a throwing signal getter", () => ({
        callId: "c",
        name: "echo",
        arguments: {},
        get signal() {
          throw new Error("no signal")
        }
      }), "no signal"],
      ["a fake signal", () => ({ callId: "c", name: "echo", arguments: {}, signal: { aborted: true } }), "tool execution input signal must be an AbortSignal when present"],
      ["a proxy around a real signal", () => ({ callId: "c", name: "echo", arguments: {}, signal: new Proxy(new AbortController().signal, {}) }), "tool execution input signal must be an AbortSignal when present"],
      ["a throwing callId getter", () => ({
        get callId() {
          throw new Error("no id")
        },
        name: "echo",
        arguments: {}
      }), "no id"],
      ["a throwing arguments getter", () => ({
        callId: "c",
        name: "echo",
        get arguments() {
          throw new Error("no args")
        }
      }), "no args"]
    ]
    for (const [label, input, message] of inputs) {
      it(`neither throws nor rejects for ${label}: the runtime's error result`, async () => {
        const api = PromiseApi.make(withTools(echo()))
        try {
          let result: ToolResult | undefined
          try {
            result = await api.execute(input() as ExecuteInput)
          } catch (error) {
            assert.fail(`execute threw or rejected: ${String(error)}`)
          }
          assert.deepStrictEqual(result, errorResult(message))
        } finally {
          await api.dispose()
        }
      })
    }

    it("CREATE-3: the input reaches the runtime untouched (arguments read once, after the probe)", async () => {
      const api = PromiseApi.make(withTools(echo()))
      try {
        const reads: Array<string> = []
        const fields: Record<string, unknown> = { callId: "c1", name: "echo", signal: undefined, arguments: { text: "x" } }
        const input = {}
        for (const key of Object.keys(fields)) {
          Object.defineProperty(input, key, { enumerable: true, get: () => (reads.push(key), fields[key]) })
        }
        assert.deepStrictEqual(await api.execute(input as ExecuteInput), echoed("x"))
        assert.deepStrictEqual(reads, ["callId", "name", "signal", "arguments"])
      } finally {
        await api.dispose()
      }
    })

    it("a layer that fails to build gives an error result, not a rejection", async () => {
      const api = PromiseApi.make(Layer.fail("no tools") as unknown as Layer.Layer<ToolRuntime>)
      const result = await api.execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("the tool runtime failed: no tools"))
      await api.dispose()
    })
  })

  describe("issue 8 item 4: dispose covers calls that start while it runs", () => {
    it("a call started during dispose is refused with an error result; in-flight calls are cancelled and awaited", async () => {
      const body = started()
      let exited = 0
      const api = PromiseApi.make(withTools(echo({
        execute: () =>
          Effect.zipRight(Effect.sync(() => body.resolve()), Effect.never).pipe(
            Effect.ensuring(Effect.sync(() => exited++))
          )
      })))
      const inFlight = api.execute({ callId: "c1", name: "echo", arguments: {} })
      await body.promise
      const disposing = api.dispose()
      const during = api.execute({ callId: "c2", name: "echo", arguments: {} })
      assert.strictEqual(api.dispose(), disposing, "dispose is idempotent")
      await disposing
      const after = api.execute({ callId: "c3", name: "echo", arguments: {} })
      assert.deepStrictEqual(await inFlight, ABORTED)
      assert.deepStrictEqual(await during, errorResult(PromiseApi.DISPOSED_MESSAGE))
      assert.deepStrictEqual(await after, errorResult(PromiseApi.DISPOSED_MESSAGE))
      assert.strictEqual(exited, 1, "the in-flight body exited before dispose resolved")
      const rejected = await api.run(Effect.void).then(() => undefined, (error: unknown) => error)
      assert.instanceOf(rejected, PromiseApi.RuntimeDisposedError)
      assert.strictEqual((rejected as Error).message, PromiseApi.DISPOSED_MESSAGE)
    })

    it("a call started while the layer is still building is cancelled by dispose, not left running", async () => {
      const gate = started()
      let ran = 0
      const slow = Layer.scopedDiscard(Effect.promise(() => gate.promise))
      const api = PromiseApi.make(withTools(echo({ execute: () => Effect.sync(() => ran++) })).pipe(Layer.provideMerge(slow)))
      const pending = api.execute({ callId: "c1", name: "echo", arguments: {} })
      const disposing = api.dispose()
      gate.resolve()
      await disposing
      assert.deepStrictEqual(await pending, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(ran, 0)
    })
  })

  describe("issue 8 item 6 / D-20: listeners on a shared caller signal", () => {
    it("30 concurrent calls sharing one signal: one listener, no MaxListenersExceededWarning, all removed", async () => {
      const warnings: Array<string> = []
      const onWarning = (warning: Error) => warnings.push(warning.name)
      process.on("warning", onWarning)
      let entered = 0
      const allIn = started()
      const api = PromiseApi.make(withTools(echo({
        execute: () =>
          Effect.zipRight(
            Effect.sync(() => {
              if (++entered === 30) allIn.resolve()
            }),
            Effect.never
          )
      })))
      try {
        const { controller, counts, signal } = countedSignal()
        const pending = Array.from({ length: 30 }, (_, i) => api.execute({ callId: `c${i}`, name: "echo", arguments: {}, signal }))
        await allIn.promise
        assert.strictEqual(counts.live.size, 1)
        controller.abort()
        const results = await Promise.all(pending)
        await new Promise<void>((resolve) => setImmediate(resolve))
        assert.deepStrictEqual(results, Array.from({ length: 30 }, () => ABORTED))
        assert.strictEqual(counts.live.size, 0)
        assert.deepStrictEqual(warnings.filter((name) => name === "MaxListenersExceededWarning"), [])
      } finally {
        process.off("warning", onWarning)
        await api.dispose()
      }
    })
  })
})

