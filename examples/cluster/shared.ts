/**
 * What the processes of the cluster example share: the tool set every runner builds (the same
 * code, named `TOOL_SET`), the policy that asks a person before a deploy, the lock settings, the
 * scripted turns of a session, the approver's answers, and the side file where every body writes
 * when it starts and when it ends (pid, port, call id, idempotency key) — so that the proof at the
 * end is from what ran, not from what the journal says.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import type { RunContext } from "../../src/Execution.js"
import * as Policy from "../../src/Policy.js"
import * as Tool from "../../src/Tool.js"
import * as ToolRegistry from "../../src/ToolRegistry.js"

export const TOOL_SET = "cluster-example/v1"

/** Short lock settings for the demo (the library's defaults are 15 s / 5 s). */
export const SHARD_LOCK_EXPIRATION = "6 seconds"
export const SHARD_LOCK_REFRESH = "2 seconds"
/** How often runners and clients read what other processes wrote (replies, answers). */
export const POLL = "200 millis"

export const sqlLayer = (url: string, maxConnections = Number(process.env.PGMAX ?? 8)) =>
  PgClient.layer({ url: Redacted.make(url), maxConnections })

/** One line of the side file. */
export interface BodyEvent {
  readonly t: number
  /** `interrupted`: the runner stopped the body (its shard locks lost, or it shut down); a SIGKILL leaves no line. */
  readonly ev: "start" | "end" | "interrupted"
  readonly pid: number
  readonly port: number
  readonly tool: string
  readonly session: string
  readonly callId: string
  readonly key: string | null
}

export const REPLAY: Record<string, "never" | "idempotent" | "safe"> = {
  lookup: "safe",
  charge: "idempotent",
  notify: "never",
  deploy: "never"
}

const text = (value: string) => [{ type: "text" as const, text: value }]

/** The tool set: every runner builds it the same way (only the side file and its own port differ). */
export const toolsFor = (port: number, effects: string) => {
  const note = (ev: BodyEvent["ev"], tool: string, session: string, callId: string, key: string | undefined) => {
    const event: BodyEvent = { t: Date.now(), ev, pid: process.pid, port, tool, session, callId, key: key ?? null }
    fs.appendFileSync(effects, `${JSON.stringify(event)}\n`)
  }
  /** A body that takes `ms` milliseconds, noting its start and its end. */
  const body = (tool: string, result: (args: { readonly session: string }) => string) =>
  (args: { readonly session: string; readonly ms: number }, ctx: RunContext) =>
    Effect.gen(function*() {
      note("start", tool, args.session, ctx.callId, ctx.idempotencyKey)
      yield* Effect.sleep(args.ms)
      note("end", tool, args.session, ctx.callId, ctx.idempotencyKey)
      return `${result(args)} on :${port}`
    }).pipe(Effect.onInterrupt(() => Effect.sync(() => note("interrupted", tool, args.session, ctx.callId, ctx.idempotencyKey))))
  const base = { session: { type: "string", required: true }, ms: { type: "integer", required: true } } as const
  const output = { schema: { type: "string" }, render: (_args: unknown, value: string) => text(value) } as const
  return [
    Tool.defineTool({
      name: "lookup",
      description: "Look a record up (read-only: safe to run again).",
      parameters: { ...base, id: { type: "string", required: true } },
      output,
      isConcurrencySafe: () => true,
      replay: "safe",
      execute: body("lookup", (args) => `record ${(args as { id?: string }).id}`)
    }),
    Tool.defineTool({
      name: "charge",
      description: "Charge an amount (the payment API dedupes by idempotency key).",
      parameters: { ...base, amount: { type: "integer", required: true } },
      output,
      replay: "idempotent",
      execute: body("charge", (args) => `charged ${(args as { amount?: number }).amount}`)
    }),
    Tool.defineTool({
      name: "notify",
      description: "Send a notification (not idempotent: never run twice).",
      parameters: base,
      output,
      replay: "never",
      execute: body("notify", () => "notified")
    }),
    Tool.defineTool({
      name: "deploy",
      description: "Deploy (asks a person first; never run twice).",
      parameters: base,
      output,
      replay: "never",
      execute: body("deploy", () => "deployed")
    })
  ]
}

/** The policy every runner registers in `setup`: a deploy asks a person. */
export const askOnDeploy = Layer.scopedDiscard(Effect.flatMap(ToolRegistry.ToolRegistry, (registry) =>
  registry.onPreExecute((exec, next) =>
    exec.name === "deploy" ? Effect.succeed(Policy.PreDecision.Ask({ reason: "a deploy needs a yes" })) : next
  )))

export interface ScriptedCall {
  readonly callId: string
  readonly name: string
  readonly arguments: string
}

export interface ScriptedBatch {
  readonly batchId: string
  readonly calls: ReadonlyArray<ScriptedCall>
}

export const sessionId = (index: number) => `s${String(index).padStart(2, "0")}`

/**
 * The scripted turns of a session: three batches of four calls — parallel lookups, a charge, a
 * notification; a lookup, a deploy that asks, a charge; a notification, a lookup, a charge.
 * Durations vary by session so that batches overlap at different points.
 */
export const scriptOf = (index: number): ReadonlyArray<ScriptedBatch> => {
  const session = sessionId(index)
  const ms = (base: number, step: number) => base + ((index * step) % 400)
  const call = (batch: number, n: number, name: string, args: Record<string, unknown>): ScriptedCall => ({
    callId: `${session}.b${batch}.c${n}`,
    name,
    arguments: JSON.stringify({ session, ...args })
  })
  return [
    {
      batchId: "b1",
      calls: [
        call(1, 1, "lookup", { id: "customer", ms: ms(150, 37) }),
        call(1, 2, "lookup", { id: "invoice", ms: ms(120, 53) }),
        call(1, 3, "charge", { amount: 100 + index, ms: ms(500, 71) }),
        call(1, 4, "notify", { ms: ms(500, 89) })
      ]
    },
    {
      batchId: "b2",
      calls: [
        call(2, 1, "lookup", { id: "release", ms: ms(150, 41) }),
        call(2, 2, "deploy", { ms: ms(500, 97) }),
        call(2, 3, "charge", { amount: 7, ms: ms(500, 61) })
      ]
    },
    {
      batchId: "b3",
      calls: [
        call(3, 1, "notify", { ms: ms(500, 43) }),
        call(3, 2, "lookup", { id: "receipt", ms: ms(150, 59) }),
        call(3, 3, "lookup", { id: "audit", ms: ms(150, 67) }),
        call(3, 4, "charge", { amount: 1, ms: ms(500, 83) })
      ]
    }
  ]
}

/** The approver's decision for a session's deploy: every seventh session is refused. */
export const answerFor = (session: string): "allowed-once" | "rejected" =>
  Number(session.slice(1)) % 7 === 3 ? "rejected" : "allowed-once"

/** One batch outcome as the client writes it. */
export interface BatchOutcome {
  readonly session: string
  readonly batchId: string
  readonly sentAt: number
  readonly doneAt: number
  readonly calls: ReadonlyArray<{ readonly callId: string; readonly name: string }>
  readonly results: ReadonlyArray<{
    readonly callId: string
    readonly isError: boolean
    readonly code: string | null
    readonly text: string
  }>
}

/** One answer as the approver writes it. */
export interface AnswerEvent {
  readonly t: number
  readonly session: string
  readonly approvalId: string
  readonly callId: string
  readonly toolName: string
  /** When the batch asked (the pending request's `askedAt`). */
  readonly askedAt: number
  readonly answer: string
  /**
   * `answered`; `already` when a retried answer found it answered (its first try was stored);
   * `unconfirmed` when the answer failed or timed out (stored or not: its result tells).
   */
  readonly how: "answered" | "already" | "unconfirmed"
}

export const readLines = <A>(file: string): Array<A> =>
  fs.existsSync(file)
    ? fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as A)
    : []

/** What a session's records say (`ToolSessions.records`), as the client writes it once all batches are done. */
export interface SessionRecords {
  readonly session: string
  /** `tool/call` and `tool/result` records per call id. */
  readonly calls: Record<string, { readonly call: number; readonly result: number }>
  readonly asked: ReadonlyArray<{ readonly id: string; readonly callId: string }>
  readonly decided: ReadonlyArray<{ readonly id: string; readonly outcome: string; readonly by: string }>
  readonly corrupt: number
}
