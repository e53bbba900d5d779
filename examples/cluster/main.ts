/**
 * Agent sessions on a cluster of three runner processes that survives one of them dying —
 * `npm run example:cluster`:
 *
 *   1. a real PostgreSQL server starts (Debian's binaries, a fresh temporary data directory);
 *   2. three runner processes (`runner.ts`) listen on 127.0.0.1 at distinct ports, built from the
 *      same tool set, with short shard locks for the demo (expire after 6 s, refreshed every 2 s);
 *   3. a client-only process (`client.ts`) drives 50 sessions of three scripted batches each — a
 *      mix of tools whose replay policy is `safe`, `idempotent` and `never`, and a deploy that asks
 *      a person — while a second client-only process (`approver.ts`) answers the approvals;
 *   4. halfway through, the runner with the most bodies running is killed with SIGKILL; its shards
 *      (the session entities it owned and the batch workflows it ran) move to the survivors once
 *      the cluster sees it gone, and the batches it was running resume there;
 *   5. the outcomes are checked against what the bodies wrote to a side file as they ran: exactly
 *      one result per call, a body run twice only when its tool is `idempotent` or `safe` (and then
 *      with the same idempotency key), `OUTCOME_UNKNOWN` only for a `never` body the kill cut, every
 *      approval answered once and a refused deploy never run; and the failover time is measured
 *      (SIGKILL → the first batch it caught completing on a survivor).
 *
 * A session's messages go to the runner that owns the session's shard; each batch runs as a
 * workflow on the runner that owns the workflow's shard, so one session's batches may run on
 * different runners. Exits 0 when every check holds, 1 (saying which failed) otherwise; PostgreSQL
 * is stopped and every child killed either way. `KEEP_FILES=1` keeps the side files (body runs,
 * outcomes, answers) for a look.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { findPostgres, freePort, type PostgresServer, startPostgresServer } from "../../test/fixtures/postgresServer.js"
import {
  type AnswerEvent,
  answerFor,
  type BatchOutcome,
  type BodyEvent,
  readLines,
  REPLAY,
  scriptOf,
  sessionId,
  type SessionRecords,
  SHARD_LOCK_EXPIRATION,
  SHARD_LOCK_REFRESH,
  sqlLayer
} from "./shared.js"

const SESSIONS = 50
const RUNNERS = 3
const DEADLINE_MS = 150_000
const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "..", "..")
const t0 = Date.now()
const stamp = () => `[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s]`
const say = (line: string) => console.log(`${stamp()} ${line}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

class Failed extends Error {}

interface Child {
  readonly name: string
  readonly process: ChildProcess
  readonly stderr: Array<string>
  readonly exited: Promise<number | null>
}

const children: Array<Child> = []

/** Starts `<file> <args>` as a child (`node --import tsx`), its stdout lines handed to `onLine`. */
const start = (name: string, file: string, args: ReadonlyArray<string>, onLine: (line: string) => boolean): Child => {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(here, file), ...args], {
    cwd: root,
    stdio: ["pipe", "pipe", "pipe"]
  })
  const stderr: Array<string> = []
  let out = ""
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk
    let newline: number
    while ((newline = out.indexOf("\n")) >= 0) {
      const line = out.slice(0, newline)
      out = out.slice(newline + 1)
      // Protocol lines go to `onLine`; anything else (an Effect logger writes to stdout) is kept with stderr.
      if (onLine(line) === false) stderr.push(line)
    }
  })
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => stderr.push(...chunk.split("\n").filter((l) => l !== "")))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const entry = { name, process: child, stderr, exited }
  children.push(entry)
  return entry
}

const alive = (child: Child) => child.process.exitCode === null && child.process.signalCode === null

const killAll = async () => {
  for (const child of children) if (alive(child)) child.process.kill("SIGKILL")
  await Promise.all(children.map((child) => child.exited))
}

/** Waits for `check` to return a value, polling every `every` ms, failing after `ms` with `what`. */
const until = async <A>(what: string, ms: number, check: () => A | undefined | Promise<A | undefined>, every = 100) => {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Failed(`timed out after ${seconds(ms)} waiting for ${what}`)
    await sleep(every)
  }
}

/** Advisory (shard) locks held per PostgreSQL backend: one backend per runner holds its shards (300 by default). */
const shardHolders = (url: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted GROUP BY pid ORDER BY n DESC`)
      .pipe(Effect.provide(sqlLayer(url, 1)), Effect.orElseSucceed(() => []))
  ).then((rows) => rows.map((row) => row.n))

const inFlight = (effects: string) => {
  const running = new Map<string, BodyEvent>()
  for (const event of readLines<BodyEvent>(effects)) {
    const id = `${event.pid}/${event.callId}`
    if (event.ev === "start") running.set(id, event)
    else running.delete(id)
  }
  return [...running.values()]
}

const orchestrate = async (dir: string) => {
  const effects = path.join(dir, "effects.jsonl")
  const outcomes = path.join(dir, "outcomes.jsonl")
  const answers = path.join(dir, "answers.jsonl")
  const records = path.join(dir, "records.jsonl")
  fs.writeFileSync(effects, "")

  const pg = await startPostgresServer()
  server = pg
  say(`PostgreSQL on 127.0.0.1:${pg.port} (data in a temporary directory)`)

  const ports: Array<number> = []
  while (ports.length < RUNNERS) {
    const port = await freePort()
    if (!ports.includes(port)) ports.push(port)
  }
  const ready = new Map<number, number>()
  const runners = ports.map((port) =>
    start(`runner :${port}`, "runner.ts", [String(port), pg.url, effects], (line) => {
      const match = /^ready (\d+) (\d+)$/.exec(line)
      if (match) ready.set(Number(match[1]), Number(match[2]))
      return match !== null
    })
  )
  // The client-only processes load meanwhile, and wait for `go`.
  const script = Array.from({ length: SESSIONS }, (_, i) => scriptOf(i))
  const totalBatches = script.reduce((n, batches) => n + batches.length, 0)
  const totalCalls = script.reduce((n, batches) => n + batches.reduce((m, b) => m + b.calls.length, 0), 0)
  const approver = start("approver", "approver.ts", [pg.url, String(SESSIONS), answers], (line) => line.startsWith("answered "))
  let done = 0
  const client = start("client", "client.ts", [pg.url, String(SESSIONS), outcomes, records], (line) => {
    if (!line.startsWith("done ")) return false
    done++
    if (done === totalBatches) say(`client: ${done}/${totalBatches} batches done; reading every session's records`)
    return true
  })
  await until("the runners to be ready", 60_000, () => {
    const dead = runners.find((runner) => !alive(runner))
    if (dead) throw new Failed(`${dead.name} exited before it was ready:\n  ${dead.stderr.slice(-15).join("\n  ")}`)
    return ready.size === RUNNERS ? true : undefined
  })
  say(
    `runners ready: ${ports.map((port) => `:${port} (pid ${ready.get(port)})`).join(", ")}; ` +
      `shard locks expire after ${SHARD_LOCK_EXPIRATION}, refreshed every ${SHARD_LOCK_REFRESH}`
  )
  const spread = await until("the shards to be spread over the three runners", 30_000, async () => {
    const holders = await shardHolders(pg.url)
    return holders.length === RUNNERS && holders.reduce((a, b) => a + b, 0) === 300 ? holders : undefined
  }, 250)
  say(`300 shards locked by ${RUNNERS} runners (${spread.join("/")})`)

  for (const child of [approver, client]) child.process.stdin!.write("go\n")
  say(`client: ${SESSIONS} sessions × ${script[0]!.length} batches (${totalCalls} calls); approver answering deploys`)

  // Halfway: kill the runner with the most bodies running, preferably with a `never` and an
  // `idempotent` body among them (waiting up to 3 s for such a moment).
  await until("half of the batches", 60_000, () => {
    if (!alive(client)) throw new Failed(`the client exited early:\n  ${client.stderr.slice(-15).join("\n  ")}`)
    return done >= totalBatches / 2 ? true : undefined
  }, 20)
  const pick = () => {
    const byPort = new Map<number, Array<BodyEvent>>()
    for (const event of inFlight(effects)) byPort.set(event.port, [...(byPort.get(event.port) ?? []), event])
    return [...byPort.entries()].sort((a, b) => b[1].length - a[1].length)
  }
  const wanted = await until("a runner with bodies running", 3_000, () => {
    const candidates = pick().filter(([, running]) =>
      running.some((event) => REPLAY[event.tool] === "never") && running.some((event) => REPLAY[event.tool] === "idempotent")
    )
    return candidates[0]
  }, 20).catch(() => pick()[0])
  if (wanted === undefined) throw new Failed("no runner had a body running at the halfway point")
  const [killedPort, running] = wanted
  const victim = runners[ports.indexOf(killedPort)]!
  victim.process.kill("SIGKILL")
  const killedAt = Date.now()
  const tally = new Map<string, number>()
  for (const event of running) tally.set(event.tool, (tally.get(event.tool) ?? 0) + 1)
  say(
    `${done}/${totalBatches} batches done: SIGKILL runner :${killedPort} (pid ${ready.get(killedPort)}) with ` +
      `${running.length} bodies running (${[...tally].map(([tool, n]) => `${tool} ×${n}`).join(", ")})`
  )

  const clientCode = await Promise.race([client.exited, sleep(DEADLINE_MS).then(() => "timeout" as const)])
  if (clientCode === "timeout") throw new Failed(`the client did not finish in ${seconds(DEADLINE_MS)}`)
  if (clientCode !== 0) {
    throw new Failed(`the client exited with ${clientCode}:\n  ${client.stderr.slice(-15).join("\n  ")}`)
  }
  say("client: records read")
  approver.process.kill("SIGTERM")

  return verify({ effects, outcomes, answers, records, killedPort, killedAt, totalCalls })
}

interface Evidence {
  readonly effects: string
  readonly outcomes: string
  readonly answers: string
  readonly records: string
  readonly killedPort: number
  readonly killedAt: number
  readonly totalCalls: number
}

/** Checks every session's outcomes against the bodies' side file and the approver's answers. */
const verify = (evidence: Evidence): Array<string> => {
  const { killedAt, killedPort } = evidence
  const events = readLines<BodyEvent>(evidence.effects)
  const outcomes = readLines<BatchOutcome>(evidence.outcomes)
  const answers = readLines<AnswerEvent>(evidence.answers)
  const journals = readLines<SessionRecords>(evidence.records)
  const failures: Array<string> = []
  const byCall = new Map<string, Array<BodyEvent>>()
  for (const event of events) byCall.set(event.callId, [...(byCall.get(event.callId) ?? []), event])
  const totals = {
    calls: 0,
    results: 0,
    runs: 0,
    reruns: new Map<string, number>(),
    unknown: { killed: 0, stopped: 0, unseen: 0 },
    interrupted: new Map<number, number>(),
    allowed: 0,
    rejected: 0,
    unconfirmed: 0,
    records: { call: 0, result: 0, asked: 0, decided: 0, corrupt: 0 }
  }
  for (const event of events) {
    if (event.ev === "interrupted") totals.interrupted.set(event.port, (totals.interrupted.get(event.port) ?? 0) + 1)
  }
  /** Batches the kill caught: a body of theirs had started on the killed runner, their outcome came after. */
  const caught: Array<BatchOutcome> = []
  const mark = (port: number) => `:${port}${port === killedPort ? "✗" : ""}`

  console.log(
    "\nper session — where each batch's bodies ran (a batch runs on the runner that owns its workflow's shard; " +
      "✗ = the killed runner):"
  )
  for (let index = 0; index < SESSIONS; index++) {
    const session = sessionId(index)
    const problems: Array<string> = []
    const notes: Array<string> = []
    const placements: Array<string> = []
    let calls = 0
    let results = 0
    let runs = 0
    // What the runtime recorded (the session's records, read from its owner at the end): one
    // tool/call and one tool/result per call, one approval/asked and one approval/decided per approval.
    const journal = journals.filter((summary) => summary.session === session)
    const recorded = journal[0]
    if (journal.length !== 1 || recorded === undefined) problems.push(`${journal.length} record summaries`)
    else {
      const scripted = new Set(scriptOf(index).flatMap((batch) => batch.calls.map((call) => call.callId)))
      for (const [callId, count] of Object.entries(recorded.calls)) {
        totals.records.call += count.call
        totals.records.result += count.result
        if (!scripted.has(callId)) problems.push(`records of an unknown call ${callId}`)
        else if (count.call !== 1 || count.result !== 1) {
          problems.push(`${callId}: ${count.call} tool/call and ${count.result} tool/result records`)
        }
      }
      for (const callId of scripted) if (recorded.calls[callId] === undefined) problems.push(`${callId}: no records`)
      totals.records.asked += recorded.asked.length
      totals.records.decided += recorded.decided.length
      totals.records.corrupt += recorded.corrupt
      if (recorded.corrupt > 0) problems.push(`${recorded.corrupt} corrupt records`)
      for (const request of recorded.asked) {
        const decisions = recorded.decided.filter((decision) => decision.id === request.id)
        if (decisions.length !== 1) problems.push(`${request.callId}: ${decisions.length} approval/decided records`)
        else if (decisions[0]!.outcome !== answerFor(session)) {
          problems.push(`${request.callId}: the audit says ${decisions[0]!.outcome}`)
        }
      }
      if (recorded.decided.length !== recorded.asked.length) problems.push("approval/decided without approval/asked")
    }
    for (const batch of scriptOf(index)) {
      calls += batch.calls.length
      const got = outcomes.filter((outcome) => outcome.session === session && outcome.batchId === batch.batchId)
      const ports: Array<number> = []
      for (const call of batch.calls) {
        for (const event of byCall.get(call.callId) ?? []) {
          if (event.ev === "start" && !ports.includes(event.port)) ports.push(event.port)
        }
      }
      placements.push(`${batch.batchId} ${ports.map(mark).join("→") || "-"}`)
      if (got.length !== 1) {
        problems.push(`${batch.batchId}: ${got.length} outcomes`)
        continue
      }
      const outcome = got[0]!
      const wasCaught = outcome.doneAt > killedAt && batch.calls.some((call) =>
        (byCall.get(call.callId) ?? []).some((event) => event.port === killedPort && event.t <= killedAt)
      )
      if (wasCaught) caught.push(outcome)
      results += outcome.results.length
      if (outcome.results.some((result) => !batch.calls.some((call) => call.callId === result.callId))) {
        problems.push(`${batch.batchId}: results for unknown calls`)
      }
      for (const call of batch.calls) {
        const answered = outcome.results.filter((result) => result.callId === call.callId)
        if (answered.length !== 1) {
          problems.push(`${call.callId}: ${answered.length} results`)
          continue
        }
        const result = answered[0]!
        const seen = byCall.get(call.callId) ?? []
        const ran = seen.filter((event) => event.ev === "start")
        runs += ran.length
        const replay = REPLAY[call.name]!
        const after = (start: BodyEvent, ev: BodyEvent["ev"]) =>
          seen.some((event) => event.ev === ev && event.pid === start.pid && event.t >= start.t)
        // A run that was cut: stopped by its runner (a line `interrupted`), or started on the killed
        // runner before the SIGKILL and not stopped otherwise (a SIGKILL leaves no line; the body may
        // even have returned, its settle row not yet stored).
        const stopped = (start: BodyEvent) => after(start, "interrupted")
        const killed = (start: BodyEvent) => start.port === killedPort && start.t <= killedAt && !stopped(start)
        const cut = (start: BodyEvent) => stopped(start) || killed(start)
        if (call.name === "deploy") {
          const audited = recorded?.asked.filter((request) => request.callId === call.callId).length ?? 0
          if (audited !== 1) problems.push(`${call.callId}: ${audited} approval/asked records`)
          const given = answers.filter((answer) => answer.callId === call.callId)
          const ids = new Set(given.map((answer) => answer.approvalId))
          const expected = answerFor(session)
          if (ids.size !== 1) problems.push(`${call.callId}: ${ids.size} approval requests answered`)
          else if (given.some((answer) => answer.answer !== expected)) problems.push(`${call.callId}: answered otherwise`)
          if (given.length > 0 && given.every((answer) => answer.how === "unconfirmed")) totals.unconfirmed++
          if (expected === "rejected") {
            totals.rejected++
            if (ran.length !== 0) problems.push(`${call.callId}: refused, yet its body ran ${ran.length}×`)
            if (!result.isError) problems.push(`${call.callId}: refused, yet a success result`)
            notes.push("deploy refused, not run")
            continue
          }
          totals.allowed++
        }
        if (result.isError && result.code === "OUTCOME_UNKNOWN") {
          if (replay !== "never") problems.push(`${call.callId}: OUTCOME_UNKNOWN for a ${replay} tool`)
          else if (ran.length > 1) problems.push(`${call.callId}: OUTCOME_UNKNOWN after ${ran.length} runs`)
          else if (ran.length === 1 && !cut(ran[0]!)) problems.push(`${call.callId}: OUTCOME_UNKNOWN, but its run was not cut`)
          else if (ran.length === 0 && outcome.doneAt <= killedAt && totals.interrupted.size === 0) {
            problems.push(`${call.callId}: OUTCOME_UNKNOWN, yet nothing was cut`)
          } else if (ran.length === 0) {
            totals.unknown.unseen++
            notes.push(`${call.name} OUTCOME_UNKNOWN (cut after its intent was stored, before its body started)`)
          } else {
            const how = stopped(ran[0]!) ? "stopped" : "killed"
            totals.unknown[how]++
            notes.push(`${call.name} ${how === "killed" ? "cut by the kill" : "stopped by its runner"} → OUTCOME_UNKNOWN`)
          }
          continue
        }
        if (result.isError) {
          problems.push(`${call.callId}: error ${result.code ?? ""}: ${result.text}`)
          continue
        }
        const last = ran[ran.length - 1]
        if (last === undefined) {
          problems.push(`${call.callId}: a success result, but no body ran`)
          continue
        }
        if (stopped(last) || !after(last, "end")) problems.push(`${call.callId}: a success result from a run that did not end`)
        if (!result.text.endsWith(`on :${last.port}`)) {
          problems.push(`${call.callId}: the result says "${result.text}", its last run was on :${last.port}`)
        }
        if (ran.length > 1) {
          if (replay === "never") problems.push(`${call.callId}: a never body ran ${ran.length}×`)
          if (!ran.slice(0, -1).every(cut)) problems.push(`${call.callId}: ran ${ran.length}× though no run was cut`)
          const keys = new Set(ran.map((event) => event.key))
          if (keys.size !== 1 || ran[0]!.key === null) problems.push(`${call.callId}: runs with ${keys.size} idempotency keys`)
          totals.reruns.set(call.name, (totals.reruns.get(call.name) ?? 0) + ran.length - 1)
          notes.push(`${call.name} cut → ran again on ${mark(last.port)}, same key ${ran[0]!.key?.slice(0, 8)}…`)
        }
      }
    }
    totals.calls += calls
    totals.results += results
    totals.runs += runs
    for (const problem of problems) failures.push(`${session} ${problem}`)
    console.log(
      `  ${session} ${placements.join(", ")}: ${results}/${calls} results, ${runs} runs` +
        `${notes.length > 0 ? `; ${notes.join("; ")}` : ""} — ${problems.length === 0 ? "ok" : `FAILED: ${problems.join("; ")}`}`
    )
  }

  const unexpected = events.filter((event) => !/^s\d\d\.b\d\.c\d$/.test(event.callId))
  if (unexpected.length > 0) failures.push(`${unexpected.length} body runs of unknown calls`)
  if (totals.calls !== evidence.totalCalls) failures.push(`${totals.calls} calls checked of ${evidence.totalCalls}`)
  if (caught.length === 0) failures.push(`no batch was running on the killed runner :${killedPort}`)

  // Failover: from the SIGKILL to the first batch caught by it completing on a survivor — one with a
  // result of a survivor's body, or an OUTCOME_UNKNOWN a survivor decided (a caught batch whose
  // bodies had all ended on the killed runner may complete with no sign of where).
  const onSurvivor = (outcome: BatchOutcome) =>
    outcome.results.some((result) =>
      result.code === "OUTCOME_UNKNOWN" || (/on :(\d+)$/.test(result.text) && !result.text.endsWith(`on :${killedPort}`))
    )
  const finished = caught.filter(onSurvivor).map((outcome) => outcome.doneAt - killedAt).sort((a, b) => a - b)
  const allDone = Math.max(...caught.map((outcome) => outcome.doneAt - killedAt))
  const callIds = new Set(caught.flatMap((outcome) => outcome.calls.map((call) => call.callId)))
  const firstBody = events
    .filter((event) => event.ev === "start" && event.t > killedAt && callIds.has(event.callId))
    .sort((a, b) => a.t - b.t)[0]
  const asked = answers.filter((answer) => answer.how === "answered").map((answer) => answer.t - answer.askedAt)
    .sort((a, b) => a - b)
  const reruns = [...totals.reruns].map(([tool, n]) => `${tool} ×${n}`).join(", ") || "none"
  const exact = !failures.some((failure) => / \d+ results$| \d+ outcomes$/.test(failure))
  console.log(`
calls: ${totals.calls}; results: ${totals.results} (exactly one per call: ${exact ? "yes" : "NO"}); body runs: ${totals.runs}
bodies run again after being cut (idempotent/safe only, same idempotency key): ${reruns}
OUTCOME_UNKNOWN (never bodies cut mid-run): ${totals.unknown.killed} cut by the kill, ${totals.unknown.stopped} stopped by their runner, ${totals.unknown.unseen} cut between intent and start
records (ToolSessions.records, read at the end): ${totals.records.call} tool/call, ${totals.records.result} tool/result; ${totals.records.asked} approval/asked, ${totals.records.decided} approval/decided; ${totals.records.corrupt} corrupt
approvals answered by the approver process: ${totals.allowed} allowed once, ${totals.rejected} refused (their bodies never ran)${
    asked.length > 0 ? `; answered a median ${seconds(asked[Math.floor(asked.length / 2)]!)} after being asked` : ""
  }${
    totals.unconfirmed > 0 ? ` (${totals.unconfirmed} answers' replies timed out; their results show them stored)` : ""
  }
batches running on the killed runner :${killedPort} when it died: ${caught.length}, every one finished on a survivor`)
  if (totals.interrupted.size > 0) {
    console.log(
      `bodies stopped by a live runner (it gave its shards up — e.g. "Shard lock storage is unhealthy" under load): ` +
        `${[...totals.interrupted].map(([port, n]) => `:${port} ×${n}`).join(", ")}; they followed the same replay rules`
    )
  }
  if (finished.length > 0 && firstBody !== undefined) {
    console.log(
      `failover (shard locks: expiration ${SHARD_LOCK_EXPIRATION}, refresh ${SHARD_LOCK_REFRESH}): SIGKILL → first caught ` +
        `batch completed on a survivor: ${seconds(finished[0]!)} (the first of their bodies on a survivor started after ${
          seconds(firstBody.t - killedAt)
        }; all ${caught.length} caught batches done after ${seconds(allDone)})`
    )
  } else if (caught.length > 0) failures.push("no batch caught by the kill resumed on a survivor")
  return failures
}

let server: PostgresServer | undefined

/** The last lines each child wrote (stderr, and stdout beyond its protocol lines), but pg's deprecation notice. */
const stderrTails = () => {
  for (const child of children) {
    const lines = child.stderr.filter((line) => !/DeprecationWarning: Calling client.query|--trace-deprecation/.test(line))
    if (lines.length > 0) console.error(`--- ${child.name} output (last lines) ---\n${lines.slice(-10).join("\n")}`)
  }
}

const main = async () => {
  const found = findPostgres()
  if (!found.ok) {
    console.error(`cannot run the cluster example: ${found.reason}`)
    return 1
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-cluster-example-"))
  fs.chmodSync(dir, 0o755)
  const cleanup = async () => {
    await killAll()
    await server?.stop()
    if (process.env.KEEP_FILES === "1") console.log(`side file, outcomes and answers kept in ${dir}`)
    else fs.rmSync(dir, { recursive: true, force: true })
  }
  const interrupted = () => {
    console.error("interrupted: stopping the children and PostgreSQL")
    cleanup().finally(() => process.exit(130))
  }
  process.once("SIGINT", interrupted)
  process.once("SIGTERM", interrupted)
  try {
    const failures = await orchestrate(dir)
    if (failures.length === 0) {
      say(`every call got exactly one result; all checks passed`)
      return 0
    }
    console.error(`\nFAILED (${failures.length}):\n  ${failures.join("\n  ")}`)
    stderrTails()
    return 1
  } catch (error) {
    console.error(`\nFAILED: ${error instanceof Error ? error.message : String(error)}`)
    stderrTails()
    return 1
  } finally {
    await cleanup()
  }
}

main().then((code) => process.exit(code), (error) => {
  console.error(error)
  process.exit(1)
})
