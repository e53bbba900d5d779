/**
 * `run_code` over the embedded QuickJS runtime: start-up (cold: the first run in the process,
 * engine compile included; warm: later runs), the cost of one sub-call against a native
 * `execute` of the same tool in the same run (the goal is at most 3×), split into the code
 * runtime's own binding round trip, the pipeline run straight from a binding (no lane, no bridge)
 * and the lane with the bridge, and `Promise.all` over 1,000 parallel-safe sub-calls. Figures are
 * printed, never asserted.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogNoop from "../layers/ToolCallLogNoop.js"
import { type Binding, BindingFailure, CodeRuntime } from "../src/CodeRuntime.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntimeModule from "../src/ToolRuntime.js"
import { ToolRuntime } from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"

const noop: ToolDefinition<never> = {
  name: "noop",
  description: "No-op.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value as string }] },
  isConcurrencySafe: () => true,
  execute: (args) => Effect.succeed((args as { readonly text: string }).text)
}

/** The same no-op without a classifier: exclusive. */
const write: ToolDefinition<never> = { ...noop, name: "write", isConcurrencySafe: undefined }

const median = (xs: ReadonlyArray<number>): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const layer = ToolRuntimeModule.layer.pipe(
  Layer.provideMerge(
    Layer.mergeAll(
      InMemoryToolRegistry.layerCodeMode({ mode: "both" }),
      CodeRuntimeQuickJs.layer({ maxToolCalls: 10_000, cpuMs: 60_000, wallMs: 120_000 }),
      ToolCallLogNoop.layer
    )
  )
)

const registering = Layer.scopedDiscard(
  Effect.flatMap(ToolRegistry, (registry) => Effect.zipRight(registry.register(noop), registry.register(write)))
)

let calls = 0
const runCode = (code: string): Effect.Effect<ToolResult, never, ToolRuntime> =>
  Effect.flatMap(ToolRuntime, (runtime) =>
    runtime.execute({
      callId: `rc${++calls}`,
      name: "run_code",
      agent: "main",
      arguments: { description: "Benchmark program", code }
    }))

const native = (n: number, tool = "noop"): Effect.Effect<void, never, ToolRuntime> =>
  Effect.flatMap(ToolRuntime, (runtime) =>
    Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) => runtime.execute({ callId: `n${++calls}`, name: tool, agent: "main", arguments: { text: `t${i}` } }),
      { discard: true }
    ))

const time = async <A>(
  rt: ManagedRuntime.ManagedRuntime<ToolRuntime | CodeRuntime, unknown>,
  effect: Effect.Effect<A, never, ToolRuntime | CodeRuntime>
) => {
  const start = performance.now()
  const value = await rt.runPromise(effect)
  return { ms: performance.now() - start, value }
}

const instant: Binding = () => Effect.succeed("x")

/** A binding that suspends once before it answers, as every call through the pipeline does. */
const yielding: Binding = () => Effect.zipRight(Effect.yieldNow(), Effect.succeed("x"))

/** The same program straight through the code runtime, bindings answering at once (no bridge, no pipeline). */
const rawRun = (code: string, binding: Binding = instant): Effect.Effect<unknown, never, CodeRuntime> =>
  Effect.orDie(Effect.flatMap(CodeRuntime, (runtime) =>
    runtime.run({
      program: code,
      bindings: [{
        global: "tools",
        functions: Object.assign(Object.create(null), { noop: binding }),
        errorClass: { name: "ToolCallError", memberNameProperty: "toolName" }
      }]
    })))

/**
 * The same program with each binding running the tool's native `execute` itself: the code runtime
 * and the whole pipeline, without the run's lane and the bridge.
 */
const directRun = (code: string, tool: string): Effect.Effect<unknown, never, CodeRuntime | ToolRuntime> =>
  Effect.flatMap(ToolRuntime, (tools) => {
    const binding: Binding = (args) =>
      Effect.flatMap(
        tools.execute({ callId: `d${++calls}`, name: tool, agent: "main", arguments: args }),
        (result) =>
          result.isError
            ? Effect.fail(new BindingFailure({ message: result.error.message }))
            : Effect.succeed(result.value)
      )
    return Effect.orDie(Effect.flatMap(CodeRuntime, (runtime) =>
      runtime.run({
        program: code,
        bindings: [{
          global: "tools",
          functions: Object.assign(Object.create(null), { [tool]: binding }),
          errorClass: { name: "ToolCallError", memberNameProperty: "toolName" }
        }]
      })))
  })

const sequential = (n: number, tool = "noop") =>
  `for (let i = 0; i < ${n}; i++) await tools.${tool}({ text: "x" + i })\nreturn ${n}`

const parallel = (n: number) =>
  `const all = await Promise.all(Array.from({ length: ${n} }, (_, i) => tools.noop({ text: "p" + i })))\nreturn all.length`

/** The suite (see bench/index.ts). */
export const run = async (): Promise<void> => {
  const coldStart = performance.now()
  const rt = ManagedRuntime.make(registering.pipe(Layer.provideMerge(layer)))
  const first = await time(rt, runCode("return 1"))
  const cold = performance.now() - coldStart
  if (first.value.isError) throw new Error(`run_code failed: ${first.value.error.message}`)
  console.log("\n## run_code start-up")
  console.log(
    `cold (layer build + first run, engine compile included): ${cold.toFixed(1)} ms ` +
      `(first run alone ${first.ms.toFixed(1)} ms)`
  )
  const warm: Array<number> = []
  for (let i = 0; i < 30; i++) warm.push((await time(rt, runCode("return 1"))).ms)
  console.log(`warm (\`return 1\`, median of 30): ${median(warm).toFixed(2)} ms`)

  const N = 2_000
  for (const tool of ["noop", "write"]) {
    console.log(
      `\n## cost per sub-call vs a native execute of the same tool (${
        tool === "noop" ? "parallel-safe" : "exclusive"
      }, same run, median of 5 rounds)`
    )
    await time(rt, runCode(sequential(N, tool)))
    await time(rt, native(N, tool))
    const perSub: Array<number> = []
    const perNative: Array<number> = []
    const perRaw: Array<number> = []
    const perYielding: Array<number> = []
    const perDirect: Array<number> = []
    for (let round = 0; round < 5; round++) {
      const empty = await time(rt, runCode(sequential(0, tool)))
      const full = await time(rt, runCode(sequential(N, tool)))
      if (full.value.isError) throw new Error(`run_code failed: ${full.value.error.message}`)
      perSub.push(((full.ms - empty.ms) * 1000) / N)
      perNative.push(((await time(rt, native(N, tool))).ms * 1000) / N)
      const rawEmpty = await time(rt, rawRun(sequential(0)))
      const rawFull = await time(rt, rawRun(sequential(N)))
      perRaw.push(((rawFull.ms - rawEmpty.ms) * 1000) / N)
      const yieldingEmpty = await time(rt, rawRun(sequential(0), yielding))
      const yieldingFull = await time(rt, rawRun(sequential(N), yielding))
      perYielding.push(((yieldingFull.ms - yieldingEmpty.ms) * 1000) / N)
      const directEmpty = await time(rt, directRun(sequential(0, tool), tool))
      const directFull = await time(rt, directRun(sequential(N, tool), tool))
      perDirect.push(((directFull.ms - directEmpty.ms) * 1000) / N)
    }
    const sub = median(perSub)
    const nat = median(perNative)
    const raw = median(perRaw)
    const yielded = median(perYielding)
    const direct = median(perDirect)
    console.log(`sub-call (sequential await, ${N} per program): ${sub.toFixed(1)} µs`)
    console.log(`native execute: ${nat.toFixed(1)} µs`)
    console.log(`ratio: ${(sub / nat).toFixed(2)}× (goal ≤ 3×)`)
    console.log(
      `of which the code runtime's own binding round trip (a binding that answers at once, no pipeline): ` +
        `${raw.toFixed(1)} µs; the bridge and the sub-call's pipeline: ${(sub - raw).toFixed(1)} µs ` +
        `(${((sub - raw) / nat).toFixed(2)}× a native execute)`
    )
    console.log(
      `split: the round trip when the binding suspends once: ${yielded.toFixed(1)} µs; the pipeline run ` +
        `straight from a binding (no lane, no bridge): ${(direct - yielded).toFixed(1)} µs ` +
        `(${((direct - yielded) / nat).toFixed(2)}× a native execute); the run's lane and the bridge: ` +
        `${(sub - direct).toFixed(1)} µs (${((sub - direct) / nat).toFixed(2)}×)`
    )
  }

  console.log("\n## Promise.all over 1,000 parallel-safe sub-calls (median of 5)")
  const P = 1_000
  await time(rt, runCode(parallel(P)))
  const wall: Array<number> = []
  for (let round = 0; round < 5; round++) {
    const result = await time(rt, runCode(parallel(P)))
    if (result.value.isError) throw new Error(`run_code failed: ${result.value.error.message}`)
    wall.push(result.ms)
  }
  const ms = median(wall)
  console.log(`${P} sub-calls: ${ms.toFixed(1)} ms (${((ms * 1000) / P).toFixed(1)} µs per sub-call)`)
  await rt.dispose()
}
