/**
 * Agent-loop benchmark: what one step of `AgentLoop.run` costs on top of the scheduler batch it
 * runs. Same tool calls, same runtime (the preset over the in-memory log), a scripted
 * `LanguageModel` that answers instantly: the difference is the loop's own work per step (tool
 * assembly, the `@effect/ai` request and response decoding, raw arguments, prompt growth).
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import { Presets, ToolCallLogMemory } from "../layers/index.js"
import * as AgentLoop from "../src/AgentLoop.js"
import * as Scheduler from "../src/Scheduler.js"
import type { ToolDefinition } from "../src/Tool.js"

const STEPS = 5
const CALLS = 4
const SAMPLES = 40

const echo: ToolDefinition<never> = {
  name: "echo",
  description: "Echo text.",
  parameters: { type: "object", properties: { text: { type: "string" } } },
  output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value as string }] },
  isConcurrencySafe: () => true,
  execute: (args) => Effect.succeed((args as { readonly text?: string }).text ?? "")
}

const calls: ReadonlyArray<Scheduler.ModelToolCall> = Array.from(
  { length: CALLS },
  (_, i) => ({ callId: `c${i}`, name: "echo", arguments: `{"text":"call ${i}"}` })
)

const parts: Array<Response.PartEncoded> = [
  ...calls.map((call): Response.PartEncoded => ({
    type: "tool-call",
    id: call.callId,
    name: call.name,
    params: JSON.parse(call.arguments)
  })),
  { type: "finish", reason: "tool-calls", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }
]

/** Answers every request with the same message of tool calls, instantly. */
const Model = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: () => Effect.succeed(parts),
    streamText: () => Stream.dieMessage("not streamed")
  })
)

const median = async (effect: () => Promise<unknown>): Promise<number> => {
  for (let i = 0; i < 5; i++) await effect()
  const samples: Array<number> = []
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now()
    await effect()
    samples.push(performance.now() - t0)
  }
  samples.sort((a, b) => a - b)
  return samples[Math.floor(samples.length / 2)]!
}

export const run = async (): Promise<void> => {
  const runtime = ManagedRuntime.make(Layer.merge(Presets.layer({ tools: [echo], log: ToolCallLogMemory.layer }), Model))
  const batches = Effect.repeatN(Scheduler.runBatch(calls, { agent: "bench" }), STEPS - 1)
  const loop = AgentLoop.run({ agent: "bench", prompt: "go", maxSteps: STEPS })
  const check = await runtime.runPromise(loop)
  if (check.steps.length !== STEPS || check.stopReason !== "max-steps") throw new Error("the loop did not run every step")

  const batchMs = await median(() => runtime.runPromise(batches))
  const loopMs = await median(() => runtime.runPromise(loop))
  const perStepBatch = batchMs / STEPS
  const perStepLoop = loopMs / STEPS
  console.log(`agentLoop: ${STEPS} steps × ${CALLS} parallel-safe echo calls, scripted instant model, in-memory log`)
  console.log(`  batch alone (Scheduler.runBatch) ${perStepBatch.toFixed(3)} ms/step`)
  console.log(`  agent loop (AgentLoop.run)       ${perStepLoop.toFixed(3)} ms/step`)
  console.log(
    `  loop overhead                    ${(perStepLoop - perStepBatch).toFixed(3)} ms/step (${
      (perStepLoop / perStepBatch).toFixed(2)
    }× the batch)`
  )
  await runtime.dispose()
}
