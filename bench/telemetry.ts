/**
 * Per-call cost of `ToolRuntime.execute` for a no-op tool with and without `ToolTelemetry`:
 * no telemetry; `ToolTelemetry.layer()` with no tracer installed (metrics on, and with metrics
 * off); the same with an OpenTelemetry SDK tracer whose span processor does nothing; and that
 * tracer with no telemetry. Interleaved rounds in one process, timed in process CPU time (steadier
 * than wall time on a shared machine); the median and the best round, each with its ratio to the
 * first row.
 */
import { NodeSdk } from "@effect/opentelemetry"
import { NoopSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntimeModule from "../src/ToolRuntime.js"
import { ToolRuntime } from "../src/ToolRuntime.js"
import * as ToolTelemetry from "../src/ToolTelemetry.js"
import { executeLoop } from "./runtime.js"

const noop: ToolDefinition<never> = {
  name: "noop",
  description: "No-op.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value as string }] },
  execute: (args) => Effect.succeed((args as { readonly text: string }).text)
}

const median = (xs: Array<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

const registered = Layer.scopedDiscard(Effect.orDie(Effect.flatMap(ToolRegistry, (registry) => registry.register(noop))))

const runtimeWith = (telemetry: Layer.Layer<ToolTelemetry.ToolTelemetry> | undefined) => {
  const services = telemetry === undefined
    ? InMemoryToolRegistry.layer
    : Layer.merge(InMemoryToolRegistry.layer, telemetry)
  return registered.pipe(Layer.provideMerge(ToolRuntimeModule.layer), Layer.provideMerge(services))
}

const otelTracer = NodeSdk.layer(() => ({
  resource: { serviceName: "bench" },
  spanProcessor: new NoopSpanProcessor()
}))

const withTracer = (layer: Layer.Layer<ToolRuntime | ToolRegistry>): Layer.Layer<ToolRuntime | ToolRegistry> =>
  Layer.merge(layer, otelTracer) as Layer.Layer<ToolRuntime | ToolRegistry>

export const run = async (): Promise<void> => {
  const N = 2_000
  const ROUNDS = 11
  console.log("\n## ToolTelemetry per-call cost (no-op execute, process CPU time per call, interleaved rounds)")
  const configs: Array<readonly [string, Layer.Layer<ToolRuntime | ToolRegistry, never, never>]> = [
    ["no telemetry", runtimeWith(undefined)],
    ["telemetry, no tracer (spans + metrics)", runtimeWith(ToolTelemetry.layer())],
    ["telemetry, no tracer, metrics off", runtimeWith(ToolTelemetry.layer({ metrics: false }))],
    ["OTel tracer (no-op processor), no telemetry", withTracer(runtimeWith(undefined))],
    ["OTel tracer (no-op processor) + telemetry", withTracer(runtimeWith(ToolTelemetry.layer()))],
    ["OTel tracer + telemetry, stageSpans off", withTracer(runtimeWith(ToolTelemetry.layer({ stageSpans: false })))]
  ]
  const runtimes = configs.map(([label, layer]) => {
    const rt = ManagedRuntime.make(layer)
    const loop = executeLoop(N)
    return { label, rt, loop }
  })
  for (const { loop, rt } of runtimes) {
    await rt.runPromise(loop)
    await rt.runPromise(loop)
  }
  const gc = (globalThis as { gc?: () => void }).gc
  const samples = runtimes.map(() => [] as Array<number>)
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, { loop, rt }] of runtimes.entries()) {
      gc?.()
      const start = process.cpuUsage()
      await rt.runPromise(loop)
      const used = process.cpuUsage(start)
      samples[index]!.push((used.user + used.system) / N)
    }
  }
  const rows = runtimes.map(({ label }, index) => ({
    label,
    us: median(samples[index]!),
    best: Math.min(...samples[index]!)
  }))
  for (const { rt } of runtimes) await rt.dispose()
  const base = rows[0]!
  const width = Math.max(...rows.map((r) => r.label.length))
  console.log(`${"".padEnd(width)}  median µs/call (ratio)   best round µs/call (ratio)`)
  for (const row of rows) {
    console.log(
      `${row.label.padEnd(width)}  ${row.us.toFixed(3).padStart(8)} (×${(row.us / base.us).toFixed(3)})` +
        `     ${row.best.toFixed(3).padStart(8)} (×${(row.best / base.best).toFixed(3)})`
    )
  }
  if (gc === undefined) console.log("(run with --expose-gc for steadier figures)")
}
