/**
 * The second client-only process of the cluster example: the person who answers approvals.
 * `node --import tsx examples/cluster/approver.ts <postgres url> <sessions> <answers file>`.
 * It lists each session's pending requests (`ToolSessions.pending`, routed to the session's owner)
 * and answers them (`ToolSessions.answer`): every seventh session's deploy is refused, the others
 * allowed once. Each answer is appended to the answers file. Starts on a line `go` on stdin; runs
 * until it is stopped.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Runtime from "effect/Runtime"
import * as fs from "node:fs"
import * as ClusterTurns from "../../layers/ClusterTurns.js"
import * as ToolSession from "../../src/ToolSession.js"
import { type AnswerEvent, answerFor, POLL, sessionId, SHARD_LOCK_EXPIRATION, sqlLayer, TOOL_SET } from "./shared.js"

const [url, sessionsText, answers] = process.argv.slice(2)
const sessions = Number(sessionsText)
if (url === undefined || !Number.isInteger(sessions) || answers === undefined) {
  console.error("usage: approver.ts <postgres url> <sessions> <answers file>")
  process.exit(2)
}

const answered = new Set<string>()
/** The sessions still to watch: each session of the script asks once, so an answered one is done. */
const watched = new Set(Array.from({ length: sessions }, (_, i) => sessionId(i)))

const round = Effect.gen(function*() {
  const client = yield* ToolSession.ToolSessions
  yield* Effect.forEach([...watched], (session) =>
    client.pending(session).pipe(
      Effect.timeout("10 seconds"),
      Effect.flatMap((pending) =>
        Effect.forEach(pending.filter((request) => !answered.has(request.id)), (request) => {
          const answer = answerFor(session)
          const record = (how: AnswerEvent["how"]) =>
            Effect.sync(() => {
              if (how !== "unconfirmed") {
                answered.add(request.id)
                watched.delete(session)
              }
              const event: AnswerEvent = {
                t: Date.now(),
                session,
                approvalId: request.id,
                callId: request.callId,
                toolName: request.toolName,
                askedAt: request.askedAt,
                answer,
                how
              }
              fs.appendFileSync(answers, `${JSON.stringify(event)}\n`)
              console.log(`answered ${session} ${request.callId} ${answer}`)
            })
          return client.answer(session, request.id, answer).pipe(
            Effect.timeout("10 seconds"),
            Effect.zipRight(record("answered")),
            // A retried answer whose first try was stored (its reply lost with a runner) is refused as answered.
            Effect.catchIf((error) => error._tag === "ToolSessionError" && error.reason === "Answered", () => record("already")),
            // Any other failure (the owner died, a timeout): the answer may or may not have been stored.
            // Noted as such; if the request is still pending next round, it is answered again.
            Effect.catchAll((error) =>
              Effect.zipRight(
                Effect.sync(() => console.error(`answer ${session} ${request.callId}: ${error.message}`)),
                record("unconfirmed")
              )
            )
          )
        }, { discard: true })
      ),
      // A session whose owner just died cannot be reached until a survivor takes its shard: try next round.
      Effect.ignore
    ), { concurrency: 10, discard: true })
})

/** Starts once the orchestrator says `go` on stdin (it loads while the runners start). */
const go = Effect.async<void>((resume) => {
  process.stdin.setEncoding("utf8").on("data", (chunk: string) => {
    if (chunk.includes("go")) resume(Effect.void)
  })
})

Effect.runPromise(
  Effect.zipRight(go, Effect.forever(
    Effect.zipRight(
      round.pipe(Effect.catchAllCause((cause) => Effect.sync(() => console.error(`round failed: ${Cause.pretty(cause)}`)))),
      Effect.sleep("300 millis")
    )
  )).pipe(
    Effect.provide(
      ClusterTurns.layerClient({ sql: sqlLayer(url), toolSet: TOOL_SET, pollInterval: POLL, shardLockExpiration: SHARD_LOCK_EXPIRATION })
    ),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
).then(() => process.exit(0), (error) => {
  console.error(`approver failed: ${Runtime.isFiberFailure(error) ? Cause.pretty(error[Runtime.FiberFailureCauseId]) : String(error)}`)
  process.exit(1)
})
