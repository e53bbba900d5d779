/**
 * The client-only process of the cluster example that drives the sessions:
 * `node --import tsx examples/cluster/client.ts <postgres url> <sessions> <outcomes file> <records file>`.
 * It owns no shard and runs no body: each session's scripted batches go, one after the other, to
 * whichever runner owns the session (`ToolSessions.runBatch` waits through approvals, which the
 * approver process answers). Every outcome is appended to the outcomes file, and at the end each
 * session's records (`ToolSessions.records`) summed up in the records file; a line
 * `done <session> <batch> <n>` on stdout tells the orchestrator how far it is. Starts on a line
 * `go` on stdin (so that it loads while the runners start).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Runtime from "effect/Runtime"
import * as fs from "node:fs"
import * as ClusterTurns from "../../layers/ClusterTurns.js"
import * as ToolSession from "../../src/ToolSession.js"
import { type BatchOutcome, POLL, scriptOf, sessionId, type SessionRecords, SHARD_LOCK_EXPIRATION, sqlLayer, TOOL_SET } from "./shared.js"

const [url, sessionsText, outcomes, recordsFile] = process.argv.slice(2)
const sessions = Number(sessionsText)
if (url === undefined || !Number.isInteger(sessions) || outcomes === undefined || recordsFile === undefined) {
  console.error("usage: client.ts <postgres url> <sessions> <outcomes file> <records file>")
  process.exit(2)
}

let done = 0

const drive = (index: number) =>
  Effect.forEach(scriptOf(index), (batch) =>
    Effect.gen(function*() {
      const session = sessionId(index)
      const sentAt = Date.now()
      const result = yield* ToolSession.runBatch(session, batch.calls, { batchId: batch.batchId, agent: "main" }).pipe(
        Effect.timeoutFail({
          duration: "90 seconds",
          onTimeout: () => new Error(`${session}/${batch.batchId}: no outcome after 90 s`)
        })
      )
      const outcome: BatchOutcome = {
        session,
        batchId: batch.batchId,
        sentAt,
        doneAt: Date.now(),
        calls: batch.calls.map(({ callId, name }) => ({ callId, name })),
        results: result.results.map(({ callId, result }) => ({
          callId,
          isError: result.isError,
          code: result.isError ? result.error.info?.code ?? null : null,
          text: result.content.map((block) => block.type === "text" ? block.text : `[${block.type}]`).join(" ")
        }))
      }
      fs.appendFileSync(outcomes, `${JSON.stringify(outcome)}\n`)
      done++
      console.log(`done ${session} ${batch.batchId} ${done}`)
    }), { discard: true })

/** A session's records (read from its owner) summed up: what the runtime recorded per call and per approval. */
const summarize = (index: number) =>
  Effect.gen(function*() {
    const session = sessionId(index)
    const { corrupt, records } = yield* ToolSession.ToolSessions.pipe(Effect.flatMap((client) => client.records(session)))
    const calls: Record<string, { call: number; result: number }> = {}
    const asked: Array<{ readonly id: string; readonly callId: string }> = []
    const decided: Array<{ readonly id: string; readonly outcome: string; readonly by: string }> = []
    for (const record of records) {
      if (record._tag === "tool/call" || record._tag === "tool/result") {
        const entry = calls[record.callId] ?? (calls[record.callId] = { call: 0, result: 0 })
        if (record._tag === "tool/call") entry.call++
        else entry.result++
      } else if (record._tag === "approval/asked") asked.push({ id: record.id, callId: record.callId })
      else if (record._tag === "approval/decided") decided.push({ id: record.id, outcome: record.outcome, by: record.by })
    }
    const summary: SessionRecords = { session, calls, asked, decided, corrupt: corrupt.length }
    fs.appendFileSync(recordsFile, `${JSON.stringify(summary)}\n`)
  })

const program = Effect.zipRight(
  Effect.forEach(Array.from({ length: sessions }, (_, i) => i), drive, { concurrency: "unbounded", discard: true }),
  Effect.forEach(Array.from({ length: sessions }, (_, i) => i), summarize, { concurrency: 10, discard: true })
)

/** Starts once the orchestrator says `go` on stdin (it loads while the runners start). */
const go = Effect.async<void>((resume) => {
  process.stdin.setEncoding("utf8").on("data", (chunk: string) => {
    if (chunk.includes("go")) resume(Effect.void)
  })
})

Effect.runPromise(
  Effect.zipRight(go, program).pipe(
    Effect.provide(
      ClusterTurns.layerClient({ sql: sqlLayer(url), toolSet: TOOL_SET, pollInterval: POLL, shardLockExpiration: SHARD_LOCK_EXPIRATION })
    ),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
).then(() => process.exit(0), (error) => {
  console.error(`client failed: ${Runtime.isFiberFailure(error) ? Cause.pretty(error[Runtime.FiberFailureCauseId]) : String(error)}`)
  process.exit(1)
})
