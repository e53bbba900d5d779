/**
 * Durable turns benchmark (issue 28 "Throughput", D-24): a durable batch of 1,000 instant,
 * parallel-safe calls per store — the in-memory engine and journal, the runner on a libSQL file,
 * the runner over PostgreSQL (a real server when one can be started here, else PGlite) — as µs
 * per call, median of several runs after a warm-up; the fixed cost of a 10-call durable batch per
 * store; the resume of a 1,000-call batch whose process was SIGKILLed mid-batch; and the in-memory
 * `Scheduler.runBatch` of the same calls, for the ratio. Every call of a batch may start together
 * (`maxParallel` = the batch's size), so a batch's intents are one write and its settles few.
 */
import type { WorkflowEngine } from "@effect/workflow"
import * as PgClient from "@effect/sql-pg/PgClient"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Exit, Layer, Scope } from "effect"
import * as DurableTurnSql from "../layers/DurableTurnSql.js"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as DurableTurn from "../src/DurableTurn.js"
import * as Scheduler from "../src/Scheduler.js"
import * as Tool from "../src/Tool.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import { appOver, libsqlEngine, memoryEngine, registering, tempDatabase } from "../test/fixtures/durable.js"
import { startPostgres } from "../test/fixtures/postgres.js"
import { findPostgres, startPostgresServer } from "../test/fixtures/postgresServer.js"

const N = 1000
const SMALL = 10
const RUNS = 7
const SMALL_RUNS = 15

const text = (value: string) => [{ type: "text" as const, text: value }]

const noop = Tool.defineTool({
  name: "noop",
  description: "Returns at once.",
  parameters: { i: { type: "number", required: true } },
  output: { schema: { type: "number" }, render: (_args, value) => text(String(value)) },
  isConcurrencySafe: () => true,
  execute: (args) => Effect.succeed(args.i)
})

const callsOf = (n: number): ReadonlyArray<Scheduler.ModelToolCall> =>
  Array.from({ length: n }, (_, i) => ({ callId: `c${i}`, name: "noop", arguments: JSON.stringify({ i }) }))

const median = (samples: ReadonlyArray<number>): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

const range = (samples: ReadonlyArray<number>, digits: number, scale = 1): string => {
  const sorted = [...samples].sort((a, b) => a - b)
  return `${(sorted[0] * scale).toFixed(digits)}–${(sorted[sorted.length - 1] * scale).toFixed(digits)}`
}

type Engine = Layer.Layer<WorkflowEngine.WorkflowEngine | DurableTurn.DurableJournal, unknown>

interface Store {
  readonly name: string
  readonly engine: Engine
  readonly cleanup: () => Promise<void>
}

const libsqlStore = (): Store => {
  const db = tempDatabase()
  return { name: "libSQL file", engine: libsqlEngine(db.url), cleanup: async () => db.cleanup() }
}

/**
 * A real PostgreSQL when one starts here (Debian's server run as `postgres`), else (or with
 * DURABLE_BENCH_PGLITE set) PGlite behind its wire server.
 */
const postgresStore = async (): Promise<Store> => {
  const runner = (port: number): Engine =>
    DurableTurnSql.layer({ pollInterval: "100 millis" }).pipe(
      Layer.provide(
        // The engine reserves a connection for its shard locks: a pool of one would never run a batch.
        PgClient.layer({ host: "127.0.0.1", port, username: "postgres", database: "postgres", maxConnections: 4 })
      )
    ) as Engine
  try {
    if (process.env.DURABLE_BENCH_PGLITE !== undefined) throw new Error("DURABLE_BENCH_PGLITE is set")
    const found = findPostgres()
    const server = await startPostgresServer()
    const version = found.ok ? /postgresql\/(\d+)/.exec(found.bin)?.[1] : undefined
    return { name: `Postgres (PostgreSQL ${version ?? "server"})`, engine: runner(server.port), cleanup: server.stop }
  } catch (error) {
    console.log(`  (no PostgreSQL server here: ${(error as Error).message.split("\n")[0]}; using PGlite)`)
    const pglite = await startPostgres()
    return { name: "Postgres (PGlite)", engine: runner(pglite.port), cleanup: pglite.stop }
  }
}

/** Builds the application over `engine` once; `batch(n, i)` runs a fresh durable batch of n calls. */
const open = async (engine: Engine) => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(appOver(engine, [noop]), scope))
  let serial = 0
  const batch = async (n: number): Promise<Sample> => {
    const calls = callsOf(n)
    const key = { sessionId: `bench-${serial}`, batchId: `b${serial++}`, maxParallel: n }
    const cpu = process.cpuUsage()
    const t0 = performance.now()
    const result = await Effect.runPromise(Effect.provide(DurableTurn.runBatch(calls, key), context))
    const ms = performance.now() - t0
    const used = process.cpuUsage(cpu)
    if (result.results.length !== n || result.results.some((r) => r.result.isError)) {
      throw new Error(`a durable batch of ${n} did not complete`)
    }
    return { ms, cpuMs: (used.user + used.system) / 1000 }
  }
  return { batch, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** One timed run: wall time, and the CPU time of this process (both threads of libSQL included). */
interface Sample {
  readonly ms: number
  readonly cpuMs: number
}

const sample = async (run: () => Promise<Sample>, warmups: number, runs: number): Promise<Array<Sample>> => {
  for (let i = 0; i < warmups; i++) await run()
  const samples: Array<Sample> = []
  for (let i = 0; i < runs; i++) samples.push(await run())
  return samples
}

const perCall = (samples: ReadonlyArray<Sample>, n: number): string => {
  const wall = samples.map((s) => s.ms)
  const cpu = samples.map((s) => s.cpuMs)
  return `${((median(wall) * 1000) / n).toFixed(0)} µs per call (range ${range(wall, 0, 1000 / n)} µs; CPU ${
    ((median(cpu) * 1000) / n).toFixed(0)
  } µs)`
}

/** The in-memory scheduler over the same tool and calls (real runtime, memory log). */
const inMemory = async (): Promise<Array<Sample>> => {
  const layer = ToolRuntime.layer.pipe(
    Layer.provideMerge(
      Layer.mergeAll(registering([noop]), ToolCallLogMemory.layer).pipe(Layer.provideMerge(InMemoryToolRegistry.layer))
    )
  )
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const calls = callsOf(N)
  const once = async (): Promise<Sample> => {
    const cpu = process.cpuUsage()
    const t0 = performance.now()
    await Effect.runPromise(Effect.provide(Scheduler.runBatch(calls, { maxParallel: N }), context))
    const ms = performance.now() - t0
    const used = process.cpuUsage(cpu)
    return { ms, cpuMs: (used.user + used.system) / 1000 }
  }
  try {
    return await sample(once, 3, 15)
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const child = path.join(path.dirname(fileURLToPath(import.meta.url)), "durableChild.ts")

interface Resumed {
  /** Parent's clock: the fresh process spawned → its result line. */
  readonly spawnToResult: number
  /** The child's clock (since its process started). */
  readonly started: number
  readonly ready: number
  readonly done: number
  readonly codes: Record<string, number>
}

const spawnChild = (args: ReadonlyArray<string>, onLine: (line: string, kill: () => void) => void) =>
  new Promise<number | null>((resolve, reject) => {
    const proc = spawn(process.execPath, ["--import", "tsx", child, ...args], { stdio: ["ignore", "pipe", "inherit"] })
    let buffer = ""
    proc.stdout.setEncoding("utf8")
    proc.stdout.on("data", (chunk: string) => {
      buffer += chunk
      let cut = buffer.indexOf("\n")
      while (cut >= 0) {
        onLine(buffer.slice(0, cut), () => proc.kill("SIGKILL"))
        buffer = buffer.slice(cut + 1)
        cut = buffer.indexOf("\n")
      }
    })
    proc.on("error", reject)
    proc.on("exit", (code) => resolve(code))
  })

/** One kill round: a child runs the batch and is SIGKILLed mid-batch; a fresh child resumes it. */
const killAndResume = async (): Promise<Resumed> => {
  const db = tempDatabase()
  try {
    let hung = false
    await spawnChild(["run", db.url, String(N)], (line, kill) => {
      if (line === "HANG") {
        hung = true
        kill()
      }
    })
    if (!hung) throw new Error("the child finished without reaching the hanging body")
    const t0 = performance.now()
    let figures: Omit<Resumed, "spawnToResult"> | undefined
    let at = 0
    const code = await spawnChild(["resume", db.url], (line) => {
      if (line.startsWith("{")) {
        at = performance.now()
        figures = JSON.parse(line)
      }
    })
    if (figures === undefined || code !== 0) throw new Error(`the resuming child failed (exit ${code})`)
    return { ...figures, spawnToResult: at - t0 }
  } finally {
    db.cleanup()
  }
}

export const run = async (): Promise<void> => {
  console.log(
    `durable turns: batches of instant parallel-safe calls (maxParallel = batch size), median of ${RUNS} runs after 2 warm-ups`
  )
  const stores: Array<() => Promise<Store>> = [
    async () => ({ name: "memory", engine: memoryEngine, cleanup: async () => undefined }),
    async () => libsqlStore(),
    postgresStore
  ]
  const small: Array<readonly [string, Array<Sample>]> = []
  const perStore: Array<readonly [string, Array<Sample>]> = []
  for (const make of stores) {
    const store = await make()
    try {
      const app = await open(store.engine)
      try {
        const samples = await sample(() => app.batch(N), 2, RUNS)
        perStore.push([store.name, samples])
        console.log(`durable batch ${N} calls, ${store.name}: ${perCall(samples, N)}`)
        small.push([store.name, await sample(() => app.batch(SMALL), 3, SMALL_RUNS)])
      } finally {
        await app.close()
      }
    } finally {
      await store.cleanup()
    }
  }
  for (const [name, samples] of small) {
    const wall = samples.map((s) => s.ms)
    console.log(
      `  fixed cost of a ${SMALL}-call durable batch, ${name}: ${median(wall).toFixed(1)} ms per batch (range ${
        range(wall, 1)
      } ms)`
    )
  }
  const memory = await inMemory()
  console.log(`  in-memory Scheduler.runBatch of the same ${N} calls: ${perCall(memory, N)}`)
  const base = median(memory.map((s) => s.ms))
  for (const [name, samples] of perStore) {
    const ms = median(samples.map((s) => s.ms))
    console.log(
      `  ${name}: x${(ms / base).toFixed(1)} the in-memory batch, ${(((ms - base) * 1000) / N).toFixed(0)} µs per call on top of it`
    )
  }
  const rounds: Array<Resumed> = []
  for (let i = 0; i < 3; i++) rounds.push(await killAndResume())
  const last = rounds[rounds.length - 1]
  console.log(
    `  resume of a ${N}-call batch after SIGKILL (libSQL file, ${rounds.length} rounds; killed while call ${
      N / 2
    } ran: ${N / 2} committed, 1 cut, ${N / 2 - 1} not started):`
  )
  console.log(
    `    fresh process spawned → result: ${median(rounds.map((r) => r.spawnToResult)).toFixed(0)} ms (range ${
      range(rounds.map((r) => r.spawnToResult), 0)
    }); in the child, process start → result ${median(rounds.map((r) => r.done)).toFixed(0)} ms, of which loading modules ${
      median(rounds.map((r) => r.started)).toFixed(0)
    } ms`
  )
  console.log(
    `    engine ready → result: ${median(rounds.map((r) => r.done - r.ready)).toFixed(0)} ms (range ${
      range(rounds.map((r) => r.done - r.ready), 0)
    }); layer build ${median(rounds.map((r) => r.ready - r.started)).toFixed(0)} ms; results ${
      JSON.stringify(last.codes)
    }`
  )
}
