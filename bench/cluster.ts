/**
 * Cluster benchmark (`npm run bench -- cluster`, only when named): agent sessions over socket
 * runner processes on a real PostgreSQL server (`test/fixtures/postgresServer.ts`), this process
 * the client-only process. Measured in one run:
 *
 * - throughput: 60 sessions × 4 instant calls (one batch each, all at once) with 1, 2 and 3 runner
 *   processes (runners added to the same cluster; fresh sessions and a warm-up round each time);
 * - the added latency of a routed batch (this process → a runner, through the cluster) against a
 *   durable batch run in process (`DurableTurn.runBatch` over `Presets.layerDurable` on a libSQL
 *   file), interleaved so that both see the same machine;
 * - resume after SIGKILL: from killing the runner that owns a session to that session answering
 *   again — on a survivor (failover), and with the runner restarted at the same address.
 *
 * Which runner owns a session is read from PostgreSQL: the session's shard (`Sharding.getShardId`)
 * and the advisory lock that shard's owner holds (lock number 1,000,000 + shard in the storage's
 * scheme; each runner's connections carry its name).
 */
import * as EntityId from "@effect/cluster/EntityId"
import { Sharding } from "@effect/cluster/Sharding"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as ClusterTurns from "../layers/ClusterTurns.js"
import { Presets } from "../layers/index.js"
import * as DurableTurn from "../src/DurableTurn.js"
import type { ModelToolCall } from "../src/Scheduler.js"
import * as ToolSession from "../src/ToolSession.js"
import { findPostgres, freePort, startPostgresServer } from "../test/fixtures/postgresServer.js"
import { BENCH_TOOL_SET, LOCK_EXPIRATION, LOCK_REFRESH, noopTool } from "./clusterShared.js"

const SESSIONS = 60
const CALLS = 4
const ROUNDS = 3
const LATENCY_SAMPLES = 40
const LATENCY_CALLS = 2
const RESUME_ROUNDS = 3
const POLL_MS = 100
const SHARDS = 300

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "..")
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const quiet = Logger.withMinimumLogLevel(LogLevel.Error)

const callsOf = (count: number, seed: number): ReadonlyArray<ModelToolCall> =>
  Array.from({ length: count }, (_, i) => ({ callId: `c${i}`, name: "noop", arguments: `{"n":${seed + i}}` }))

const sorted = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)
const quantile = (values: ReadonlyArray<number>, q: number) => {
  const s = sorted(values)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}
const median = (values: ReadonlyArray<number>) => quantile(values, 0.5)

interface Runner {
  readonly port: number
  readonly process: ChildProcess
  readonly ready: Promise<void>
  readonly exited: Promise<void>
}

/** Waits for `check` to return a value, polling every `every` ms. */
const until = async <A>(what: string, ms: number, check: () => Promise<A | undefined>, every = 200): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`cluster bench: timed out after ${ms / 1000} s waiting for ${what}`)
    await sleep(every)
  }
}

export const run = async (): Promise<void> => {
  const found = findPostgres()
  if (!found.ok) {
    console.log(`cluster: skipped — ${found.reason}`)
    return
  }
  const cores = os.cpus().length
  console.log(
    `machine: ${cores} cores, load average ${os.loadavg().map((n) => n.toFixed(1)).join(" ")}; shard locks expire after ` +
      `${LOCK_EXPIRATION}, refreshed every ${LOCK_REFRESH}; runners and client read storage every ${POLL_MS} ms`
  )
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-cluster-bench-"))
  const pg = await startPostgresServer()
  const runners = new Map<number, Runner>()
  const everyChild: Array<Runner> = []

  const startRunner = (port: number): Runner => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(here, "clusterRunner.ts"), String(port), pg.url, String(POLL_MS)], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"]
    })
    const stderr: Array<string> = []
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk))
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
        if (chunk.includes(`ready ${port}`)) resolve()
      })
      void exited.then(() => reject(new Error(`runner :${port} exited before it was ready: ${stderr.join("").slice(-800)}`)))
    })
    ready.catch(() => undefined)
    const runner = { port, process: child, ready, exited }
    runners.set(port, runner)
    everyChild.push(runner)
    return runner
  }
  const kill = (runner: Runner) => {
    runner.process.kill("SIGKILL")
    runners.delete(runner.port)
  }

  const sql = PgClient.layer({ url: Redacted.make(pg.url), maxConnections: 8, applicationName: "bench-client" })
  const sharding = NodeClusterSocket.layer({
    clientOnly: true,
    storage: "sql",
    shardingConfig: { runnerAddress: Option.none() }
  }).pipe(Layer.provide(sql))
  const client = ManagedRuntime.make(
    Layer.mergeAll(
      ClusterTurns.layerClient({ sql, toolSet: BENCH_TOOL_SET, pollInterval: POLL_MS, shardLockExpiration: LOCK_EXPIRATION }),
      sharding,
      sql
    )
  )
  const inProcess = ManagedRuntime.make(
    Presets.layerDurable({ url: `file:${path.join(dir, "durable.db")}`, tools: [noopTool(0)], pollInterval: POLL_MS })
  )
  const routed = <A, E>(effect: Effect.Effect<A, E, ToolSession.ToolSessions | Sharding | SqlClient.SqlClient>) =>
    client.runPromise(effect.pipe(quiet))

  /** Advisory (shard) locks per runner port. */
  const holders = () =>
    routed(Effect.flatMap(SqlClient.SqlClient, (q) =>
      q<{ readonly name: string; readonly n: number }>`
        SELECT a.application_name AS name, count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted GROUP BY a.application_name`)).then((rows) =>
        new Map(rows.map((row) => [Number(row.name.replace("bench-runner-", "")), row.n]))
      )
  /** Waits until every shard is locked, by the live runners only, each with a fair part, unchanged for 1.5 s. */
  const spread = (what: string) => {
    let last = ""
    let since = 0
    return until(what, 90_000, async () => {
      const held = await holders()
      const live = [...runners.keys()]
      const total = [...held.values()].reduce((a, b) => a + b, 0)
      const fair = [...held.values()].every((n) => n >= (0.6 * SHARDS) / live.length)
      const settled = total === SHARDS && held.size === live.length && live.every((port) => held.has(port)) && fair
      const key = JSON.stringify([...held].sort())
      if (!settled || key !== last) {
        last = key
        since = Date.now()
        return undefined
      }
      return Date.now() - since >= 1_500 ? held : undefined
    }, 250)
  }
  /** The runner port holding a session's shard lock, if any. */
  const ownerOf = (sessionId: string) =>
    routed(Effect.gen(function*() {
      const shard = (yield* Sharding).getShardId(EntityId.make(sessionId), "default")
      const q = yield* SqlClient.SqlClient
      const rows = yield* q<{ readonly name: string }>`
        SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.objid = ${1_000_000 + shard.id}`
      return rows[0] === undefined ? undefined : Number(rows[0].name.replace("bench-runner-", ""))
    }))
  const batch = (sessionId: string, batchId: string, calls: ReadonlyArray<ModelToolCall>) =>
    routed(ToolSession.runBatch(sessionId, calls, { batchId }))
  const portOf = (text: string) => Number(/on :(\d+)$/.exec(text)?.[1])

  try {
    // (a) throughput with 1, 2, 3 runners, and (b) routed latency with 1 runner.
    const ports: Array<number> = []
    while (ports.length < 3) {
      const port = await freePort()
      if (!ports.includes(port)) ports.push(port)
    }
    const throughput: Array<number> = []
    for (let n = 1; n <= 3; n++) {
      await startRunner(ports[n - 1]!).ready
      const held = await spread(`the shards over ${n} runner(s)`)
      const sessions = Array.from({ length: SESSIONS }, (_, i) => `tp${n}-${i}`)
      const roundOf = (r: number) =>
        routed(Effect.forEach(sessions, (s) => ToolSession.runBatch(s, callsOf(CALLS, r * 10), { batchId: `r${r}` }), {
          concurrency: "unbounded"
        }))
      await roundOf(0) // warm-up: each session's entity started on its owner
      const rates: Array<number> = []
      const placement = new Map<number, number>()
      for (let r = 1; r <= ROUNDS; r++) {
        const t0 = performance.now()
        const results = await roundOf(r)
        rates.push((SESSIONS * CALLS) / ((performance.now() - t0) / 1000))
        for (const outcome of results) {
          const port = portOf(outcome.results[0]?.result.content[0]?.type === "text" ? outcome.results[0].result.content[0].text : "")
          placement.set(port, (placement.get(port) ?? 0) + 1)
        }
      }
      const best = Math.max(...rates)
      throughput.push(best)
      const ratio = n === 1 ? "" : ` (${(best / throughput[0]!).toFixed(2)}× of 1)`
      console.log(
        `cluster ${n === 1 ? "throughput 1 runner" : `${n} runners`}: ${best.toFixed(0)} calls/s${ratio} — ${SESSIONS} sessions × ` +
          `${CALLS} instant calls, best of ${ROUNDS} rounds (median ${median(rates).toFixed(0)}); shards ${
            [...held.values()].join("/")
          }; batches ran on ${[...placement].map(([port, count]) => `:${port} ${count}`).join(", ")}`
      )

      if (n === 1) {
        const routedMs: Array<number> = []
        const localMs: Array<number> = []
        const calls = callsOf(LATENCY_CALLS, 0)
        for (let i = -5; i < LATENCY_SAMPLES; i++) {
          const t0 = performance.now()
          await batch("latency", `l${i}`, calls)
          const t1 = performance.now()
          await inProcess.runPromise(DurableTurn.runBatch(calls, { sessionId: "latency", batchId: `l${i}` }).pipe(quiet))
          const t2 = performance.now()
          if (i >= 0) {
            routedMs.push(t1 - t0)
            localMs.push(t2 - t1)
          }
        }
        console.log(
          `routed batch: median ${median(routedMs).toFixed(1)} ms, p95 ${quantile(routedMs, 0.95).toFixed(1)} ms; ` +
            `in-process durable batch: median ${median(localMs).toFixed(1)} ms, p95 ${quantile(localMs, 0.95).toFixed(1)} ms ` +
            `(+${(median(routedMs) - median(localMs)).toFixed(1)} ms) — ${LATENCY_CALLS} instant calls, ${LATENCY_SAMPLES} ` +
            `batches each, interleaved; routed: this process → 1 runner over PostgreSQL; in process: libSQL file`
        )
      }
    }
    console.log(
      `(this machine has ${cores} cores shared by PostgreSQL, every runner and the client: it caps real scaling — ` +
        `more runners add processes competing for the same cores, not capacity)`
    )

    // (c) resume after SIGKILL: failover to a survivor, then restart at the same address.
    const failover: Array<number> = []
    const restart: Array<number> = []
    const restartStart: Array<number> = []
    const where: Array<string> = []
    for (const variant of ["failover", "restart"] as const) {
      for (let round = 0; round < RESUME_ROUNDS; round++) {
        const victim = runners.get(ports[round % ports.length]!)!
        let session = ""
        for (let k = 0; session === ""; k++) {
          const candidate = `${variant}-${round}-${k}`
          if ((await ownerOf(candidate)) === victim.port) session = candidate
        }
        await batch(session, "before", callsOf(1, 0))
        kill(victim)
        const killedAt = performance.now()
        let restarted: Runner | undefined
        if (variant === "restart") {
          restarted = startRunner(victim.port)
          void restarted.ready.then(() => restartStart.push((performance.now() - killedAt) / 1000), () => undefined)
        }
        const outcome = await batch(session, "after", callsOf(1, 1))
        const seconds = (performance.now() - killedAt) / 1000
        const content = outcome.results[0]?.result.content[0]
        const port = portOf(content?.type === "text" ? content.text : "")
        const owner = await ownerOf(session)
        where.push(
          `${variant} round ${round + 1}: :${victim.port} (the session's owner) killed; the next batch answered after ` +
            `${seconds.toFixed(1)} s (its body ran on :${port}; the session's shard is now on :${owner ?? "?"})`
        )
        ;(variant === "failover" ? failover : restart).push(seconds)
        if (restarted === undefined) await startRunner(victim.port).ready
        else await restarted.ready
        await spread("the shards over the three runners again")
      }
    }
    const list = (values: ReadonlyArray<number>) => values.map((v) => `${v.toFixed(1)} s`).join(", ")
    console.log(
      `failover after SIGKILL (expiration ${LOCK_EXPIRATION.replace(" seconds", " s")}, refresh ${
        LOCK_REFRESH.replace(" seconds", " s")
      }): median ${median(failover).toFixed(1)} s (rounds: ${list(failover)}) — SIGKILL of the session's owner → ` +
        `its next batch answered on a survivor`
    )
    console.log(
      `restart at the same address after SIGKILL: median ${median(restart).toFixed(1)} s (rounds: ${list(restart)}; ` +
        `the new process was ready after a median ${median(restartStart).toFixed(1)} s)`
    )
    for (const line of where) console.log(`  ${line}`)
  } finally {
    for (const runner of everyChild) runner.process.kill("SIGKILL")
    await Promise.all(everyChild.map((runner) => runner.exited))
    await client.dispose().catch(() => undefined)
    await inProcess.dispose().catch(() => undefined)
    await pg.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
