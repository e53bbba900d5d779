/**
 * A tour of effect-tool-runtime: typed tools (author DSL and Effect Schema), registration,
 * argument and output validation, pre-execute policy, guards, approval, post-execute, timeout
 * and cancellation — every call ending with exactly one result.
 *
 * Run with `npm run demo`.
 */
import { Console, Effect, Layer, Schema } from "effect"
import { Presets, ToolCallLogMemory } from "../layers/index.js"
import { Policy, Presentation, Scheduler, Tool, ToolCallLog, ToolRegistry, ToolRuntime } from "../src/index.js"
import type { ToolResult } from "../src/ToolResult.js"

const add = Tool.defineTool({
  name: "add",
  description: "Add two integers.",
  parameters: {
    left: { type: "integer", required: true },
    right: { type: "integer", required: true }
  },
  output: {
    schema: { type: "object", additionalProperties: false, properties: { sum: { type: "integer", required: true } } },
    render: (args, value) => [{ type: "text", text: `${args.left} + ${args.right} = ${value.sum}` }]
  },
  isConcurrencySafe: () => true,
  execute: (args) => Effect.succeed({ sum: args.left + args.right })
})

const slowEcho = Tool.defineTool({
  name: "slow_echo",
  description: "Echo text after a delay; honours cancellation.",
  parameters: { text: { type: "string", required: true }, delayMs: { type: "integer", required: true } },
  output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value }] },
  timeoutMs: 100,
  execute: async (args, ctx) => {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, args.delayMs)
      ctx.signal.addEventListener("abort", () => {
        clearTimeout(timer)
        reject(new Error("stopped early"))
      }, { once: true })
    })
    return args.text
  }
})

const deleteFile = Tool.defineTool({
  name: "delete_file",
  description: "Delete a file (pretend).",
  parameters: { path: { type: "string", required: true } },
  output: { schema: { type: "boolean" }, render: (args) => [{ type: "text", text: `deleted ${args.path}` }] },
  execute: () => Effect.succeed(true)
})

const Forecast = Schema.Struct({ city: Schema.NonEmptyString, celsius: Schema.Number })
const weather = Tool.fromSchema({
  name: "weather",
  description: "Current temperature in a city.",
  parameters: Schema.Struct({ city: Schema.NonEmptyString }),
  output: {
    schema: Forecast,
    render: (_args, value) => [{ type: "text", text: `${value.city}: ${value.celsius}°C` }]
  },
  execute: (args) => Effect.succeed({ city: args.city, celsius: 21.5 })
})

/** A tool pack: tools and policies registered for as long as the layer lives. */
const DemoPack = Layer.scopedDiscard(Effect.gen(function*() {
  const registry = yield* ToolRegistry.ToolRegistry
  for (const tool of [add, slowEcho, deleteFile]) yield* registry.register(tool)
  yield* registry.register(weather)
  yield* registry.onPreExecute((exec, next) =>
    exec.name === "delete_file" ? Effect.succeed(Policy.PreDecision.Ask({ reason: "destructive" })) : next
  )
  yield* registry.guard((exec) =>
    exec.name === "delete_file" && JSON.stringify(exec.arguments).includes("/etc") ? "never touch /etc" : undefined
  )
  yield* registry.onPostExecute((exec, result, next) =>
    exec.name === "weather" && !result.isError
      ? Effect.succeed(Policy.PostDecision.Accept({ additionalContexts: [{ content: [{ type: "text", text: "units: metric" }] }] }))
      : next
  )
}))

const describe = (result: ToolResult): string => {
  const text = result.content.map((block) => block.type === "text" ? block.text : `[${block.type}]`).join(" ")
  const code = result.isError && result.error.info ? ` (${result.error.info.code})` : ""
  const contexts = result.additionalContexts?.length ? ` +${result.additionalContexts.length} context` : ""
  return `${result.isError ? "error" : "ok   "} ${text}${code}${contexts}`
}

const program = Effect.gen(function*() {
  const runtime = yield* ToolRuntime.ToolRuntime
  const registry = yield* ToolRegistry.ToolRegistry
  const schemas = yield* registry.schemas()
  yield* Console.log(`tools offered to the model: ${schemas.map((s) => s.name).join(", ")}\n`)
  const run = (label: string, input: Parameters<typeof runtime.execute>[0]) =>
    Effect.flatMap(runtime.execute(input), (result) => Console.log(`${label.padEnd(34)} ${describe(result)}`))

  yield* run("add 20 + 22", { callId: "c1", name: "add", arguments: { left: 20, right: 22 } })
  yield* run("add with a string (INVALID_ARGS)", { callId: "c2", name: "add", arguments: { left: "20", right: 22 } })
  yield* run("weather (Effect Schema tool)", { callId: "c3", name: "weather", arguments: { city: "Lisbon" } })
  yield* run("weather with empty city", { callId: "c4", name: "weather", arguments: { city: "" } })
  yield* run("unknown tool", { callId: "c5", name: "launch_rockets", arguments: {} })
  yield* run("delete (ask → approved once)", { callId: "c6", name: "delete_file", agent: "demo", arguments: { path: "/tmp/x" } })
  yield* run("delete (ask → rejected)", { callId: "c7", name: "delete_file", agent: "demo", arguments: { path: "/tmp/y" } })
  yield* run("delete /etc (guard)", { callId: "c8", name: "delete_file", agent: "demo", arguments: { path: "/etc/passwd" } })
  yield* run("slow echo 10ms", { callId: "c9", name: "slow_echo", arguments: { text: "hello", delayMs: 10 } })
  yield* run("slow echo 5s (timeoutMs 100)", { callId: "c10", name: "slow_echo", arguments: { text: "late", delayMs: 5000 } })
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 20)
  yield* run("caller aborts at 20ms (tool error kept)", {
    callId: "c11",
    name: "slow_echo",
    arguments: { text: "cancel me", delayMs: 5000 },
    signal: controller.signal
  })
})

/** One model message with four tool calls: the adds overlap, results keep model order. */
const batch = Effect.gen(function*() {
  yield* Console.log("\none model message, four calls (maxParallel 4):")
  const result = yield* Scheduler.runBatch([
    { callId: "b1", name: "add", arguments: "{\"left\":1,\"right\":2}" },
    { callId: "b2", name: "slow_echo", arguments: "{\"text\":\"exclusive\",\"delayMs\":5}" },
    { callId: "b3", name: "add", arguments: "{\"left\":3,\"right\":4}" },
    { callId: "b4", name: "add", arguments: "not json" }
  ], {
    maxParallel: 4,
    onCommit: (event) => Console.log(`  commit #${event.index} ${event.callId.padEnd(3)} ${describe(event.result)}`)
  })
  const records = yield* Effect.flatMap(ToolCallLog.ToolCallLog, (log) => log.records)
  const registry = yield* ToolRegistry.ToolRegistry
  const cards = Presentation.replay(records, (name) => registry.unsafeView().get(name)?.definition)
  yield* Console.log(
    `durable log: ${records.length} records; replayed cards: ${cards.map((card) => card.call.card === "generic" ? card.call.title : card.call.card).join(", ")}`
  )
  yield* Console.log(`results in model order: ${result.results.map((r) => r.callId).join(", ")}`)
})

/** Scripted human answers for the three `ask`s below: approve, reject, approve. */
const MainLayer = DemoPack.pipe(
  Layer.provideMerge(Presets.layerTest(["allowed-once", "rejected", "allowed-once"])),
  Layer.provideMerge(ToolCallLogMemory.layer)
)

Effect.runPromise(Effect.zipRight(program, batch).pipe(Effect.provide(MainLayer))).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
