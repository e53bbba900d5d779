/**
 * The measurements of the side-by-side benchmark (`bench/compare.ts`): every case is a loop of
 * calls, run in interleaved rounds in one process after a warm-up, timed in CPU (`process.cpuUsage`)
 * and wall (`performance.now`) µs per call; each figure is the median of the rounds. The same
 * module runs under tsx and, compiled by tsc, under plain node (`bench/compareCompiled.ts`).
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Effect, type Exit, type Fiber, Layer, ManagedRuntime, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import * as TimeoutPolicy from "../layers/TimeoutPolicy.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogSql from "../layers/ToolCallLogSql.js"
import * as PromiseApi from "../src/PromiseApi.js"
import * as Scheduler from "../src/Scheduler.js"
import type { ToolDefinition } from "../src/Tool.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import * as ToolRuntimeModule from "../src/ToolRuntime.js"
import { ToolRuntime } from "../src/ToolRuntime.js"
import { makeArguments } from "./support.js"

/** CPU and wall µs per call of one case (medians over the rounds). */
export interface Figure {
  readonly cpu: number
  readonly wall: number
}

/** Everything one run measured. */
export interface Report {
  readonly runner: string
  readonly node: string
  readonly rounds: number
  readonly figures: Readonly<Record<string, Figure>>
  /** Heap retained per kept result, in bytes (median of three samples; NaN without --expose-gc). */
  readonly bytesPerResult: number
  /** JSON length of the payloads of the `args1k` and `args100k` cases. */
  readonly argBytes: { readonly args1k: number; readonly args100k: number }
}

/** Sizes of a run: how many calls per sample and how many interleaved rounds. */
export interface Plan {
  readonly rounds: number
  readonly calls: number
}

/** The default plan (about a minute per runner on a 2-core machine). */
export const defaultPlan: Plan = { rounds: 5, calls: 4_000 }

const ARGS_TEXT = "hello"

const syncBody = (args: unknown) => Effect.succeed((args as { readonly text: string }).text)

const suspendingBody = (args: unknown) =>
  Effect.async<string>((resume) => {
    const text = (args as { readonly text: string }).text
    queueMicrotask(() => resume(Effect.succeed(text)))
  })

const definition = (
  name: string,
  execute: (args: unknown) => Effect.Effect<string>,
  timeoutMs?: number
): ToolDefinition<never> => ({
  name,
  description: "No-op.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value as string }] },
  isConcurrencySafe: () => true,
  ...(timeoutMs === undefined ? {} : { timeoutMs }),
  execute
})

const tools: ReadonlyArray<ToolDefinition<never>> = [
  definition("noop", syncBody),
  definition("suspend", suspendingBody),
  definition("timed", syncBody, 600_000),
  definition("timedSuspend", suspendingBody, 600_000)
]

/** The runtime with no policy layers at all: "0 hooks" means zero. */
const bare = ToolRuntimeModule.layer.pipe(Layer.provideMerge(InMemoryToolRegistry.layer))

const withTools = (pre: number, post: number) =>
  Layer.orDie(Layer.scopedDiscard(Effect.gen(function*() {
    const registry = yield* ToolRegistry
    for (const tool of tools) yield* registry.register(tool)
    for (let i = 0; i < pre; i++) yield* registry.onPreExecute((_exec, next) => next)
    for (let i = 0; i < post; i++) yield* registry.onPostExecute((_exec, _result, next) => next)
  })))

const runtimeLayer = (pre: number, post: number, timeout: boolean) =>
  (timeout ? Layer.merge(withTools(pre, post), TimeoutPolicy.layer) : withTools(pre, post)).pipe(
    Layer.provideMerge(bare)
  )

const awaitExit = <A>(fiber: Fiber.RuntimeFiber<A>): Effect.Effect<A> =>
  Effect.async<A>((resume) => {
    fiber.addObserver((exit: Exit.Exit<A>) => resume(exit))
  })

const check = (label: string, result: unknown, expected: string): void => {
  const r = result as ToolResult
  if (r.isError || r.value !== expected) throw new Error(`${label}: the call did not succeed with its text`)
}

interface Case {
  readonly key: string
  /** Calls per sample. */
  readonly calls: number
  readonly once: () => Promise<unknown>
  /** Run once before the rounds; throws when the case does not do what it claims. */
  readonly verify: () => Promise<void>
}

const gc = (globalThis as { gc?: () => void }).gc

/**
 * One timed sample. No forced collection before it: a full GC per sample shrinks the young
 * generation, and the next sample then pays for regrowing it (figures several times larger).
 */
const sample = async (c: Case): Promise<Figure> => {
  const cpu0 = process.cpuUsage()
  const wall0 = performance.now()
  await c.once()
  const wall = (performance.now() - wall0) * 1000
  const cpu = process.cpuUsage(cpu0)
  return { cpu: (cpu.user + cpu.system) / c.calls, wall: wall / c.calls }
}

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

const measureCases = async (cases: ReadonlyArray<Case>, rounds: number): Promise<Record<string, Figure>> => {
  for (const c of cases) await c.verify()
  for (const c of cases) {
    await c.once()
    await c.once()
  }
  const cpu = cases.map(() => [] as Array<number>)
  const wall = cases.map(() => [] as Array<number>)
  for (let round = 0; round < rounds; round++) {
    for (const [index, c] of cases.entries()) {
      const figure = await sample(c)
      cpu[index].push(figure.cpu)
      wall[index].push(figure.wall)
    }
  }
  const out: Record<string, Figure> = {}
  cases.forEach((c, index) => {
    out[c.key] = { cpu: median(cpu[index]), wall: median(wall[index]) }
  })
  return out
}

const indices = (n: number): ReadonlyArray<number> => Array.from({ length: n }, (_, i) => i)

/** Runs every case of the comparison; `runner` names the environment in the report. */
export const measure = async (runner: string, plan: Plan = defaultPlan): Promise<Report> => {
  const N = plan.calls
  const ids = indices(Math.max(N, 1_000)).map((i) => `c${i}`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-compare-"))
  const runtimes: Array<{ readonly dispose: () => Promise<void> }> = []
  const managed = <R, E>(layer: Layer.Layer<R, E, never>) => {
    const rt = ManagedRuntime.make(layer)
    runtimes.push(rt)
    return rt
  }
  try {
    const executeLoop = (name: string, n: number, args: () => unknown = () => ({ text: ARGS_TEXT })) =>
      Effect.flatMap(ToolRuntime, (runtime) =>
        Effect.forEach(indices(n), (i) => runtime.execute({ callId: ids[i], name, arguments: args() }), {
          discard: true
        }))
    const executeCase = (
      key: string,
      rt: ManagedRuntime.ManagedRuntime<ToolRuntime, never>,
      name: string,
      n = N,
      args?: () => unknown
    ): Case => ({
      key,
      calls: n,
      once: () => rt.runPromise(executeLoop(name, n, args)),
      verify: async () => {
        const result = await rt.runPromise(
          Effect.flatMap(ToolRuntime, (r) => r.execute({ callId: "v", name, arguments: { text: ARGS_TEXT } }))
        )
        check(key, result, ARGS_TEXT)
      }
    })

    const rt0 = managed(runtimeLayer(0, 0, false))
    const rt1 = managed(runtimeLayer(1, 1, false))
    const rt5 = managed(runtimeLayer(5, 5, false))
    const rtTimeout = managed(runtimeLayer(0, 0, true))
    const facade = PromiseApi.make(runtimeLayer(0, 0, false))
    const floors = managed(Layer.empty)

    const Echo = Tool.make("noop", {
      description: "No-op.",
      parameters: { text: Schema.String },
      success: Schema.String
    })
    const EchoKit = Toolkit.make(Echo)
    const kitRt = managed(EchoKit.toLayer({ noop: ({ text }) => Effect.succeed(text) }))
    const kit = await kitRt.runPromise(EchoKit)

    const plainAsync = async (x: number): Promise<number> => x
    const single: Array<Case> = [
      executeCase("exec0", rt0, "noop"),
      executeCase("exec1", rt1, "noop"),
      executeCase("exec5", rt5, "noop"),
      executeCase("timeout", rtTimeout, "timed"),
      executeCase("suspend", rt0, "suspend"),
      executeCase("timeoutSuspend", rtTimeout, "timedSuspend"),
      {
        key: "facade",
        calls: N,
        once: async () => {
          for (let i = 0; i < N; i++) await facade.execute({ callId: ids[i], name: "noop", arguments: { text: ARGS_TEXT } })
        },
        verify: async () => check("facade", await facade.execute({ callId: "v", name: "noop", arguments: { text: ARGS_TEXT } }), ARGS_TEXT)
      },
      {
        key: "toolkit",
        calls: N,
        once: () =>
          kitRt.runPromise(Effect.forEach(indices(N), () => kit.handle("noop", { text: ARGS_TEXT }), { discard: true })),
        verify: async () => {
          const handled = await kitRt.runPromise(kit.handle("noop", { text: ARGS_TEXT }))
          if (handled.isFailure || handled.result !== ARGS_TEXT) throw new Error("toolkit: the handler did not answer")
        }
      },
      {
        key: "floorBody",
        calls: N,
        once: () => floors.runPromise(Effect.forEach(indices(N), () => syncBody({ text: ARGS_TEXT }), { discard: true })),
        verify: async () => {
          if (await floors.runPromise(syncBody({ text: ARGS_TEXT })) !== ARGS_TEXT) throw new Error("floorBody")
        }
      },
      {
        key: "floorFork",
        calls: N,
        once: () =>
          floors.runPromise(
            Effect.forEach(indices(N), () => Effect.flatMap(Effect.fork(syncBody({ text: ARGS_TEXT })), awaitExit), {
              discard: true
            })
          ),
        verify: async () => {
          const text = await floors.runPromise(Effect.flatMap(Effect.fork(syncBody({ text: ARGS_TEXT })), awaitExit))
          if (text !== ARGS_TEXT) throw new Error("floorFork")
        }
      },
      {
        key: "floorRunPromise",
        calls: N,
        once: async () => {
          for (let i = 0; i < N; i++) await Effect.runPromise(Effect.succeed(1))
        },
        verify: async () => {
          if (await Effect.runPromise(Effect.succeed(1)) !== 1) throw new Error("floorRunPromise")
        }
      },
      {
        key: "floorAsync",
        calls: N,
        once: async () => {
          for (let i = 0; i < N; i++) await plainAsync(i)
        },
        verify: async () => {
          if (await plainAsync(7) !== 7) throw new Error("floorAsync")
        }
      }
    ]

    const B = 1_000
    const calls: ReadonlyArray<Scheduler.ModelToolCall> = indices(B).map((i) => ({
      callId: `b${i}`,
      name: "noop",
      arguments: `{"text":"${ARGS_TEXT}"}`
    }))
    const rtSql = managed(
      Layer.merge(runtimeLayer(0, 0, false), ToolCallLogSql.layerLibsql({ url: `file:${path.join(dir, "log.db")}` }))
    )
    const batchVerify = (key: string, run: () => Promise<Scheduler.BatchResult>) => async () => {
      const batch = await run()
      if (batch.results.length !== B) throw new Error(`${key}: ${batch.results.length} results`)
      for (const committed of batch.results) check(key, committed.result, ARGS_TEXT)
    }
    const memoryBatch = () =>
      rt0.runPromise(Effect.provide(Scheduler.runBatch(calls), ToolCallLogMemory.layer)) as Promise<Scheduler.BatchResult>
    const sqlBatch = () => rtSql.runPromise(Scheduler.runBatch(calls))
    const concurrentLoop = (concurrency: "unbounded" | 1) =>
      Effect.flatMap(ToolRuntime, (runtime) =>
        Effect.forEach(
          indices(B),
          (i) => runtime.execute({ callId: ids[i], name: "noop", arguments: { text: ARGS_TEXT } }),
          { concurrency, discard: true }
        ))
    const concurrentVerify = async () => {
      const results = await rt0.runPromise(
        Effect.flatMap(ToolRuntime, (runtime) =>
          Effect.forEach(
            indices(B),
            (i) => runtime.execute({ callId: ids[i], name: "noop", arguments: { text: ARGS_TEXT } }),
            { concurrency: "unbounded" }
          ))
      )
      for (const result of results) check("concurrent", result, ARGS_TEXT)
    }
    const many: Array<Case> = [
      { key: "batchMemory", calls: B, once: memoryBatch, verify: batchVerify("batchMemory", memoryBatch) },
      { key: "batchSql", calls: B, once: sqlBatch, verify: batchVerify("batchSql", sqlBatch) },
      {
        key: "concurrent",
        calls: B,
        once: () => rt0.runPromise(concurrentLoop("unbounded")),
        verify: concurrentVerify
      },
      { key: "sequential", calls: B, once: () => rt0.runPromise(concurrentLoop(1)), verify: async () => {} },
      {
        key: "floorConcurrent",
        calls: B,
        once: () =>
          rt0.runPromise(Effect.forEach(indices(B), () => Effect.sync(() => ARGS_TEXT), {
            concurrency: "unbounded",
            discard: true
          })),
        verify: async () => {}
      }
    ]

    const kb1 = makeArguments(1_024, 1)
    const kb100 = makeArguments(100 * 1_024, 2)
    const sized: Array<Case> = [
      executeCase("args1k", rt0, "noop", N / 2, () => ({ text: ARGS_TEXT, payload: kb1 })),
      executeCase("args100k", rt0, "noop", 40, () => ({ text: ARGS_TEXT, payload: kb100 }))
    ]

    const figures = {
      ...(await measureCases(single, plan.rounds)),
      ...(await measureCases(many, plan.rounds)),
      ...(await measureCases(sized, Math.max(3, Math.ceil(plan.rounds / 2))))
    }
    const bytesPerResult = await retained(rt0)
    await facade.dispose()
    const argBytes = { args1k: JSON.stringify(kb1).length, args100k: JSON.stringify(kb100).length }
    return { runner, node: process.version, rounds: plan.rounds, figures, bytesPerResult, argBytes }
  } finally {
    for (const rt of runtimes) await rt.dispose()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const retained = async (rt: ManagedRuntime.ManagedRuntime<ToolRuntime, never>): Promise<number> => {
  if (gc === undefined) return Number.NaN
  const K = 10_000
  const samples: Array<number> = []
  for (let s = 0; s < 3; s++) {
    const keep: Array<ToolResult> = []
    gc()
    const before = process.memoryUsage().heapUsed
    await rt.runPromise(Effect.flatMap(ToolRuntime, (runtime) =>
      Effect.forEach(indices(K), (i) =>
        Effect.map(runtime.execute({ callId: `k${i}`, name: "noop", arguments: { text: `t${i}` } }), (r) => {
          keep.push(r)
        }), { discard: true })))
    gc()
    samples.push((process.memoryUsage().heapUsed - before) / keep.length)
    keep.length = 0
  }
  return median(samples)
}
