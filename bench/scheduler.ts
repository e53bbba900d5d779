/**
 * Scheduler benchmark (spec §16): throughput and per-call overhead of `Scheduler.runBatch`
 * against driving the staged API one call at a time, pool speed-up with sleeping bodies, and
 * O(n) scaling in the batch size. Part 1–3 use the fake staged runtime of
 * `test/fixtures/fakeRuntime.ts` (isolates the scheduler); part 4 uses the real runtime
 * (`ToolRuntime.layer` over the in-memory registry and the in-memory log).
 */
import { Effect, Layer } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as Scheduler from "../src/Scheduler.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as Fake from "../test/fixtures/fakeRuntime.js"

const callsOf = (n: number, name: string): ReadonlyArray<Scheduler.ModelToolCall> =>
  Array.from({ length: n }, (_, i) => ({ callId: `c${i}`, name, arguments: "{}" }))

const time = async (effect: Effect.Effect<unknown, unknown>, repeat: number): Promise<number> => {
  await Effect.runPromise(effect)
  const samples: Array<number> = []
  for (let r = 0; r < repeat; r++) {
    const t0 = performance.now()
    await Effect.runPromise(effect)
    samples.push(performance.now() - t0)
  }
  samples.sort((a, b) => a - b)
  return samples[Math.floor(samples.length / 2)]
}

const nsPerCall = (ms: number, n: number): string => `${((ms * 1e6) / n).toFixed(0)} ns/call`

const fmt = (ms: number): string => `${ms.toFixed(2)} ms`

/** The staged API driven directly, one call at a time (no log, no classification). */
const direct = (runtime: ToolRuntime.Service, calls: ReadonlyArray<Scheduler.ModelToolCall>): Effect.Effect<void> =>
  Effect.forEach(calls, (call) =>
    Effect.flatMap(runtime.prepare({ callId: call.callId, name: call.name, arguments: {} }), (prepared) => {
      if (prepared._tag === "FinalResult") return runtime.finish(prepared.handle, prepared.result)
      if (prepared._tag === "PostResult") return runtime.finalize(prepared.handle, prepared.result)
      return Effect.flatMap(runtime.dispatch(prepared.handle), (d) =>
        d._tag === "FinalResult"
          ? runtime.finish(prepared.handle, d.result)
          : runtime.finalize(prepared.handle, d.result))
    }), { discard: true })

export const run = async (): Promise<void> => {
  console.log("scheduler: fake staged runtime (test/fixtures/fakeRuntime.ts, no instrumentation)")
  const fake = Fake.make({ tools: { noop: { gated: false } }, instrument: false })
  const batch = (calls: ReadonlyArray<Scheduler.ModelToolCall>, maxParallel: number) =>
    Effect.provide(Scheduler.runBatch(calls, { maxParallel }), fake.context).pipe(
      Effect.ensuring(Effect.sync(() => (fake.records.length = 0)))
    )
  const thousand = callsOf(1000, "noop")
  fake.records.length = 0

  const base = await time(direct(fake.runtime, thousand), 15)
  console.log(`  1,000 no-op calls, staged API one by one (baseline): ${fmt(base)}, ${nsPerCall(base, 1000)}`)
  for (const maxParallel of [1, 10, 100]) {
    const ms = await time(batch(thousand, maxParallel), 15)
    console.log(
      `  1,000 no-op calls, runBatch maxParallel ${maxParallel}: ${fmt(ms)} (${
        ((1000 / ms) * 1000).toFixed(0)
      } calls/s), ${nsPerCall(ms, 1000)}, overhead ${nsPerCall(ms - base, 1000)} (x${(ms / base).toFixed(2)})`
    )
  }

  const sleepy = Fake.make({ tools: { sleep: { gated: false, sleepMs: 5 } }, instrument: false })
  const hundred = callsOf(100, "sleep")
  const pooled = await time(Effect.provide(Scheduler.runBatch(hundred, { maxParallel: 10 }), sleepy.context), 5)
  console.log(
    `  100 calls of 5 ms, maxParallel 10: ${fmt(pooled)} (ideal 50 ms, ratio ${(pooled / 50).toFixed(2)})`
  )

  const tenThousand = callsOf(10_000, "noop")
  const small = await time(batch(thousand, 10), 15)
  const large = await time(batch(tenThousand, 10), 7)
  console.log(
    `  O(n): 1k calls ${fmt(small)} (${nsPerCall(small, 1000)}), 10k calls ${fmt(large)} (${
      nsPerCall(large, 10_000)
    }); per-call ratio 10k/1k = ${((large / 10_000) / (small / 1000)).toFixed(2)}`
  )

  console.log("scheduler: real runtime (ToolRuntime.layer + InMemoryToolRegistry + ToolCallLogMemory)")
  const services = Layer.mergeAll(ToolRuntime.layer, ToolCallLogMemory.layer).pipe(
    Layer.provideMerge(InMemoryToolRegistry.layer)
  )
  await Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register({
        name: "noop",
        description: "Does nothing.",
        parameters: { type: "object" },
        output: { schema: {}, render: () => [{ type: "text", text: "ok" }] },
        isConcurrencySafe: () => true,
        execute: () => Effect.succeed(null)
      })
      const runtime = yield* ToolRuntime.ToolRuntime
      const context = yield* Effect.context<ToolRuntime.ToolRuntime | ToolRegistry>()
      const realBase = yield* Effect.promise(() => time(direct(runtime, thousand), 9))
      console.log(
        `  1,000 no-op calls, staged API one by one (baseline): ${fmt(realBase)}, ${nsPerCall(realBase, 1000)}`
      )
      for (const maxParallel of [1, 10, 100]) {
        const effect = Effect.provide(
          Scheduler.runBatch(thousand, { maxParallel }),
          Layer.merge(Layer.succeedContext(context), ToolCallLogMemory.layer)
        )
        const ms = yield* Effect.promise(() => time(effect, 9))
        console.log(
          `  1,000 no-op calls, runBatch maxParallel ${maxParallel}: ${fmt(ms)}, ${nsPerCall(ms, 1000)} (x${
            (ms / realBase).toFixed(2)
          } of the baseline; includes 2,000 validated log appends)`
        )
      }
    }).pipe(Effect.provide(services)))
  )
}
