/**
 * The agent loop over a real provider: OpenAI through `@effect/ai-openai`. Type-checked with the
 * project, never run by the tests (it needs OPENAI_API_KEY and the network):
 *
 *   OPENAI_API_KEY=… node --import tsx examples/agent-openai.ts
 */
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { FetchHttpClient } from "@effect/platform"
import { Config, Effect, Layer } from "effect"
import { pathToFileURL } from "node:url"
import { Presets, ToolCallLogMemory } from "../layers/index.js"
import * as AgentLoop from "../src/AgentLoop.js"
import { Tool } from "../src/index.js"

const getTime = Tool.defineTool({
  name: "get_time",
  description: "The current time in a time zone, as an ISO-like string.",
  parameters: { timeZone: { type: "string", description: "An IANA time zone, e.g. Europe/Paris" } },
  output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value }] },
  isConcurrencySafe: () => true,
  execute: ({ timeZone }) =>
    Effect.sync(() => new Date().toLocaleString("sv-SE", { timeZone: typeof timeZone === "string" ? timeZone : "UTC" }))
})

const OpenAi = OpenAiClient.layerConfig({ apiKey: Config.redacted("OPENAI_API_KEY") }).pipe(
  Layer.provide(FetchHttpClient.layer)
)

/** Registry schemas are sent as they are; OpenAI's strict mode would demand every property be required. */
const Model = OpenAiLanguageModel.layer({ model: "gpt-4o-mini", config: { strict: false } }).pipe(Layer.provide(OpenAi))

const Tools = Presets.layer({ tools: [getTime], log: ToolCallLogMemory.layer })

/** Nothing is left to provide: the environment is `never`, with no cast anywhere. */
export const program: Effect.Effect<AgentLoop.Summary, unknown, never> = AgentLoop.run({
  agent: "assistant",
  prompt: "What time is it in Paris and in Tokyo?",
  maxSteps: 4
}).pipe(
  Effect.tap((summary) =>
    Effect.sync(() => {
      for (const step of summary.steps) {
        for (const result of step.results) console.log(`step ${step.step} ${result.callId}:`, result.result.content)
      }
      console.log(`${summary.stopReason}: ${summary.text}`)
    })
  ),
  Effect.provide(Layer.merge(Tools, Model))
)

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  Effect.runPromise(program).catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
