/**
 * Per-call cost of `ToolRuntime.execute` for a no-op `{ text: string }` → string tool, with
 * 0, 1 and 5 hooks at each of pre / around / post, next to running the same body Effect
 * directly in the same run; plus heap retained per 10,000 results and argument-size scaling.
 */
import { Effect, Exit, Fiber, Layer, ManagedRuntime } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as Presets from "../layers/Presets.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntimeModule from "../src/ToolRuntime.js"
import { ToolRuntime } from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"

const body = (args: unknown) => Effect.succeed((args as { readonly text: string }).text)

const noop: ToolDefinition<never> = {
  name: "noop",
  description: "No-op.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value as string }] },
  execute: body
}

/** The runtime with no policy layers at all: "0 hooks" means zero. */
const bare = ToolRuntimeModule.layer.pipe(Layer.provideMerge(InMemoryToolRegistry.layer))

const awaitExit = <A>(fiber: Fiber.RuntimeFiber<A>): Effect.Effect<A> =>
  Effect.async<A>((resume) => {
    fiber.addObserver((exit: Exit.Exit<A>) => resume(exit))
  })

/** What one call costs in fibers alone: an awaited daemon (the envelope) forking an awaited body. */
const twoFibers = Effect.forEach(
  Array.from({ length: 5_000 }, (_, i) => i),
  (i) =>
    Effect.flatMap(
      Effect.forkDaemon(Effect.flatMap(Effect.fork(Effect.interruptible(Effect.succeed(i))), awaitExit)),
      awaitExit
    ),
  { discard: true }
)

/** `n` sequential `execute`s of the `noop` tool through the runtime in context. */
export const executeLoop = (n: number): Effect.Effect<void, never, ToolRuntime> =>
  Effect.flatMap(ToolRuntime, (tools) =>
    Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) => tools.execute({ callId: `c${i}`, name: "noop", arguments: { text: `t${i}` } }),
      { discard: true }
    ))

const median = (xs: Array<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

const timeLoop = async (label: string, n: number, rounds: number, once: () => Promise<void>) => {
  const perCall: Array<number> = []
  for (let r = 0; r < rounds; r++) {
    const start = performance.now()
    await once()
    perCall.push(((performance.now() - start) * 1000) / n)
  }
  return { label, us: median(perCall) }
}

const setup = (hooks: { pre: number; around: number; post: number }) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const registry = yield* ToolRegistry
    yield* registry.register(noop)
    for (let i = 0; i < hooks.pre; i++) yield* registry.onPreExecute((_exec, next) => next)
    for (let i = 0; i < hooks.around; i++) yield* registry.onExecute((_exec, next) => next)
    for (let i = 0; i < hooks.post; i++) yield* registry.onPostExecute((_exec, _result, next) => next)
  }))

export const run = async (): Promise<void> => {
  const N = 5_000
  const ROUNDS = 5
  console.log("\n## ToolRuntime.execute per-call cost (median of rounds, µs/call)")
  const direct = ManagedRuntime.make(Layer.empty)
  const directLoop = Effect.forEach(Array.from({ length: N }, (_, i) => i), (i) => body({ text: `t${i}` }), {
    discard: true
  })
  await direct.runPromise(directLoop)
  const baseline = await timeLoop("direct body Effect", N, ROUNDS, () => direct.runPromise(directLoop))
  console.log(`direct body Effect: ${baseline.us.toFixed(3)} µs/call`)
  const configs: Array<[string, { pre: number; around: number; post: number }]> = [
    ["0 hooks", { pre: 0, around: 0, post: 0 }],
    ["1 pre", { pre: 1, around: 0, post: 0 }],
    ["5 pre", { pre: 5, around: 0, post: 0 }],
    ["1 around", { pre: 0, around: 1, post: 0 }],
    ["5 around", { pre: 0, around: 5, post: 0 }],
    ["1 post", { pre: 0, around: 0, post: 1 }],
    ["5 post", { pre: 0, around: 0, post: 5 }],
    ["1 each", { pre: 1, around: 1, post: 1 }],
    ["5 each", { pre: 5, around: 5, post: 5 }]
  ]
  const runtimes = [...configs, ["0 hooks, default preset (timeout policy on)", { pre: 0, around: 0, post: 0 }] as const]
    .map(([label, hooks]) => {
    const rt = ManagedRuntime.make(setup(hooks).pipe(Layer.provideMerge(label.startsWith("0 hooks,") ? Presets.layerDefault : bare)))
    const loop = executeLoop(N)
    return { label, rt, loop }
  })
  for (const { loop, rt } of runtimes) await rt.runPromise(loop)
  const samples = runtimes.map(() => [] as Array<number>)
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, { loop, rt }] of runtimes.entries()) {
      const start = performance.now()
      await rt.runPromise(loop)
      samples[index]!.push(((performance.now() - start) * 1000) / N)
    }
  }
  const rows = runtimes.map(({ label }, index) => ({ label, us: median(samples[index]!) }))
  for (const { rt } of runtimes) await rt.dispose()
  const fibers = await timeLoop("two fibers", N, ROUNDS, () => direct.runPromise(twoFibers))
  console.log(
    `floor: the same loop forking an awaited daemon fiber and a body fiber per item: ${fibers.us.toFixed(3)} µs/item`
  )
  const zero = rows[0]!.us
  for (const row of rows) {
    const hooks = row.label.startsWith("0 hooks") ? 0 : Number(row.label.split(" ")[0]) * (row.label.endsWith("each") ? 3 : 1)
    const perHook = hooks === 0 ? "" : `  (+${((row.us - zero) / hooks).toFixed(3)} µs/hook)`
    console.log(
      `${row.label.padEnd(10)} ${row.us.toFixed(3)} µs/call  ×${(row.us / baseline.us).toFixed(1)} direct${perHook}`
    )
  }

  console.log("\n## argument size scaling (0 hooks)")
  const rt = ManagedRuntime.make(setup({ pre: 0, around: 0, post: 0 }).pipe(Layer.provideMerge(Presets.layerDefault)))
  for (const size of [10, 1_000, 100_000]) {
    const textArg = "x".repeat(size)
    const n = size >= 100_000 ? 200 : 5_000
    const loop = Effect.flatMap(ToolRuntime, (tools) =>
      Effect.forEach(
        Array.from({ length: n }, (_, i) => i),
        (i) => tools.execute({ callId: `c${i}`, name: "noop", arguments: { text: textArg, pad: [1, 2, 3] } }),
        { discard: true }
      ))
    await rt.runPromise(loop)
    const row = await timeLoop(`${size} chars`, n, 5, () => rt.runPromise(loop))
    console.log(`text of ${String(size).padStart(6)} chars: ${row.us.toFixed(3)} µs/call`)
  }

  console.log("\n## heap retained per 10,000 results")
  const keep: Array<ToolResult> = []
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage().heapUsed
  await rt.runPromise(Effect.flatMap(ToolRuntime, (tools) =>
    Effect.forEach(Array.from({ length: 10_000 }, (_, i) => i), (i) =>
      Effect.map(
        tools.execute({ callId: `c${i}`, name: "noop", arguments: { text: `t${i}` } }),
        (r) => {
          keep.push(r)
        }
      ), { discard: true })))
  gc?.()
  const after = process.memoryUsage().heapUsed
  console.log(
    `${((after - before) / 1024 / 1024).toFixed(2)} MiB for ${keep.length} results (${
      ((after - before) / keep.length).toFixed(0)
    } B/result)${gc ? "" : " (run with --expose-gc for a stable figure)"}`
  )
  await rt.dispose()
  await direct.dispose()
}
