/**
 * The demo's approval coda: the audited approval service with a person at the other end. The
 * person answers the first deploy "always allow"; the second deploy is decided by the remembered
 * grant without asking anyone; the audit trail says who decided what.
 */
import { Effect, Layer, Stream } from "effect"
import { ApprovalLayers, Presets, ToolCallLogMemory } from "../../layers/index.js"
import { ApprovalGrants, Policy, Scheduler, Tool, ToolCallLog, ToolRegistry } from "../../src/index.js"
import type { ToolResult } from "../../src/ToolResult.js"

export interface ApprovalDemo {
  /** What each deploy returned, in order. */
  readonly results: ReadonlyArray<ToolResult>
  /** How many requests reached the person. */
  readonly asked: number
  /** The audit trail, one row per request: call id, outcome, who decided, the grant it stored. */
  readonly audit: ReadonlyArray<
    { readonly callId: string; readonly outcome: string; readonly by: string; readonly remembered?: string }
  >
}

const deploy = Tool.defineTool({
  name: "deploy",
  description: "Ships the current build to an environment.",
  parameters: { env: { type: "string" } },
  output: { schema: { type: "string" }, render: (_args, text) => [{ type: "text", text }] },
  presentCall: (args) => ({ card: "terminal", title: `deploy ${(args as { readonly env: string }).env}` }),
  execute: (args) => Effect.succeed(`deployed to ${args.env}`)
})

const AskBeforeDeploying = Layer.scopedDiscard(
  Effect.flatMap(ToolRegistry.ToolRegistry, (registry) =>
    registry.onPreExecute((exec, next) =>
      exec.name === "deploy" ? Effect.succeed(Policy.PreDecision.Ask({ reason: "it ships to users" })) : next
    ))
)

const Runtime = AskBeforeDeploying.pipe(
  Layer.provideMerge(Presets.layerApproval({
    tools: [deploy],
    log: ToolCallLogMemory.layer,
    grants: ApprovalGrants.layerMemory,
    interactive: true
  }))
)

/** Runs two deploys, one message each; `say` prints a line of the story. */
export const rememberedGrant = (say: (line: string) => void): Effect.Effect<ApprovalDemo> =>
  Effect.gen(function*() {
    let asked = 0
    const interactive = yield* ApprovalLayers.InteractiveApprovals
    yield* Effect.forkScoped(Stream.runForEach(interactive.arrivals, (pending) => {
      asked++
      say(`   ? The agent asks to run \`${pending.request.call.title}\` (${pending.request.reason}). User: always allow (1 hour)`)
      return pending.answer({ outcome: "allowed-once", remember: { scope: "agent", match: "tool", ttl: "1 hour" } })
    }))
    const results: Array<ToolResult> = []
    for (const [n, env] of ["staging", "production"].entries()) {
      const batch = yield* Scheduler.runBatch(
        [{ callId: `deploy-${n + 1}`, name: "deploy", arguments: JSON.stringify({ env }) }],
        { agent: "demo-agent", batchId: `deploy-${n + 1}` }
      )
      const result = batch.results[0]!.result
      results.push(result)
      const text = result.content.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join(" ")
      say(`   deploy ${env.padEnd(10)} ${result.isError ? "error" : "ok   "} ${text}`)
    }
    const audit = (yield* ToolCallLog.approvals).map((entry) => ({
      callId: entry.asked?.callId ?? "?",
      outcome: entry.decided?.outcome ?? "undecided",
      by: entry.decided?.by ?? "-",
      ...(entry.decided?.remembered === undefined ? {} : { remembered: entry.decided.remembered })
    }))
    say("   The audit trail (argument values are never stored, only their digest):")
    for (const row of audit) {
      const stored = row.remembered === undefined ? "" : `, remembered as ${row.remembered}`
      say(`     ${row.callId}: ${row.outcome} by ${row.by}${stored}`)
    }
    return { results, asked, audit }
  }).pipe(Effect.scoped, Effect.provide(Runtime), Effect.orDie)
