/** What the cluster benchmark and its runner processes share: the tool set and the lock settings. */
import * as Effect from "effect/Effect"
import * as Tool from "../src/Tool.js"

export const BENCH_TOOL_SET = "bench/cluster"
export const LOCK_EXPIRATION = "6 seconds"
export const LOCK_REFRESH = "2 seconds"

/** An instant, parallel-safe tool whose result names where it ran (port 0: in process). */
export const noopTool = (port: number) =>
  Tool.defineTool({
    name: "noop",
    description: "Answer at once.",
    parameters: { n: { type: "integer", required: true } },
    output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value }] },
    isConcurrencySafe: () => true,
    replay: "safe",
    execute: (args) => Effect.succeed(`${args.n} on :${port}`)
  })
