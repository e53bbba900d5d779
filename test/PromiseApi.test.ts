/**
 * The Promise facade: one frozen result per call, abort through the input signal, listener
 * hygiene, `run` and `dispose`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Presets from "../layers/Presets.js"
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
      echo({ name: "wait", execute: () => Effect.zipRight(Effect.sync(() => body.resolve()), Effect.never) })
    ))
    try {
      const ok = countedSignal()
      await api.execute({ callId: "c1", name: "echo", arguments: {}, signal: ok.signal })
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
})
