/**
 * The code runtimes side by side: cold start (layer build and first run), a warm run of
 * `return 1` (the per-run fixed cost), the cost per binding call awaited one at a time and inside
 * one `Promise.all` / `asyncio.gather`, for QuickJS in the caller's thread and in its worker pool,
 * the sandboxed Python subprocess and Pyodide (a pooled warm interpreter, and back to back, where
 * each run also waits for its fresh interpreter); then amaro's strip time for about 2 KB of
 * TypeScript. Figures and ratios to QuickJS in-thread are printed; nothing is asserted.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as CodeRuntimePyodide from "../layers/CodeRuntimePyodide.js"
import * as CodeRuntimePython from "../layers/CodeRuntimePython.js"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import { loadStripper, WRAPPER_HEAD } from "../layers/internal/quickjs/source.js"
import type { Namespace, Service } from "../src/CodeRuntime.js"
import { CodeRuntime } from "../src/CodeRuntime.js"
import { formatTime, measureAll } from "./support.js"

const CALLS = 1_000

const limits = { maxToolCalls: 10 * CALLS, maxInFlight: CALLS, cpuMs: 60_000, wallMs: 120_000 }

const echo: Namespace = {
  global: "tools",
  functions: { echo: (args: unknown) => Effect.succeed(args) },
  errorClass: { name: "ToolCallError", memberNameProperty: "toolName" }
}

const TS = `interface Hit { id: string; score: number; title?: string }
type Page<T> = { items: ReadonlyArray<T>; next?: string | null }
const limit: number = 5
const queries: Array<string> = ["alpha", "beta", "gamma"] as const satisfies ReadonlyArray<string>
function all<T>(xs: ReadonlyArray<Promise<T>>): Promise<Array<T>> { return Promise.all(xs) }
const pages = await all<Page<Hit>>(queries.map((query) => tools.search({ query, limit }) as Promise<Page<Hit>>))
const merged: Array<Hit> = pages.flatMap((page: Page<Hit>): ReadonlyArray<Hit> => page.items)
const byScore = <T extends { score: number }>(xs: readonly T[]): T[] => [...xs].sort((x, y) => y.score - x.score)
const top = byScore(merged).slice(0, limit)
const details = await all<Hit>(top.map((h) => tools.fetchPage({ id: h.id! }) as Promise<Page<Hit>>))
const summary = { count: top.length, best: top[0]?.title ?? "(none)", ids: top.map((h) => h.id) } satisfies Record<string, unknown>
let total: number = 0
for (const d of details) total += (d as Hit).score ?? 0
function fmt(n: number, digits: number = 2): string { return n.toFixed(digits) }
declare const __debug: boolean | undefined
type Dict = { [k: string]: number }
const weights: Dict = Object.fromEntries(top.map((h, i): [string, number] => [h.id, 1 / (i + 1)]))
abstract class Base { abstract name(): string }
class Scorer extends Base {
  private readonly factor: number
  constructor(factor: number) { super(); this.factor = factor }
  name(): string { return "scorer" }
  score(h: Hit): number { return h.score * this.factor * (weights[h.id] ?? 0) }
}
const s = new Scorer(2)
const scored = top.map((h) => ({ id: h.id, s: s.score(h) }))
const maybe: Hit | undefined = top.find((h) => h.score > 0.5)
const label = maybe!.title!
return { summary, total: fmt(total), scored, label, named: s.name() }
`

const median = (xs: ReadonlyArray<number>): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const build = async (layer: Layer.Layer<CodeRuntime, unknown>) => {
  const scope = Effect.runSync(Scope.make())
  const start = performance.now()
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const runtime = context.unsafeMap.get(CodeRuntime.key) as Service
  return { runtime, scope, buildMs: performance.now() - start }
}

const runOnce = async (runtime: Service, program: string, bindings: ReadonlyArray<Namespace> = []) => {
  const result = await Effect.runPromise(runtime.run({ program, bindings }))
  if (result.error !== undefined) throw new Error(`${result.error.kind}: ${result.error.message}`)
  return result
}

const timeRun = async (runtime: Service, program: string, bindings?: ReadonlyArray<Namespace>) => {
  const cpu = process.cpuUsage()
  const start = performance.now()
  await runOnce(runtime, program, bindings)
  const used = process.cpuUsage(cpu)
  return { wall: performance.now() - start, cpu: (used.user + used.system) / 1000 }
}

interface Row {
  readonly label: string
  readonly buildMs: number
  readonly firstMs: number
  readonly warmMs: number
  readonly backToBackMs?: number | undefined
  readonly sequentialUs: number
  readonly parallelUs: number
}

const PY_CALLS = 200

const programs = (language: "ts" | "py", calls: number) =>
  language === "ts"
    ? {
      sequential: `for (let i = 0; i < ${calls}; i++) await tools.echo({ i })`,
      parallel: `const all = []\nfor (let i = 0; i < ${calls}; i++) all.push(tools.echo({ i }))\nreturn (await Promise.all(all)).length`
    }
    : {
      sequential: `for i in range(${calls}):\n    await tools.echo({'i': i})`,
      parallel: `import asyncio\nreturn len(await asyncio.gather(*[tools.echo({'i': i}) for i in range(${calls})]))`
    }

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const suite = async (
  label: string,
  layer: Layer.Layer<CodeRuntime, unknown>,
  options: { readonly language: "ts" | "py"; readonly calls: number; readonly rounds: number; readonly settleMs?: number }
): Promise<Row> => {
  const { buildMs, runtime, scope } = await build(layer)
  const first = await timeRun(runtime, "return 1")
  const settle = options.settleMs ?? 0
  const warm: Array<number> = []
  for (let i = 0; i < options.rounds; i++) {
    if (settle > 0) await pause(settle)
    warm.push((await timeRun(runtime, "return 1")).wall)
  }
  const base = median(warm)
  let backToBackMs: number | undefined
  if (settle > 0) {
    const back: Array<number> = []
    for (let i = 0; i < 5; i++) back.push((await timeRun(runtime, "return 1")).wall)
    backToBackMs = median(back)
  }
  const { parallel, sequential } = programs(options.language, options.calls)
  const seq: Array<number> = []
  const all: Array<number> = []
  for (let i = 0; i < 3; i++) {
    if (settle > 0) await pause(settle)
    seq.push((await timeRun(runtime, sequential, [echo])).wall)
    if (settle > 0) await pause(settle)
    all.push((await timeRun(runtime, parallel, [echo])).wall)
  }
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const perCall = (xs: ReadonlyArray<number>) => ((median(xs) - base) * 1000) / options.calls
  const row = {
    label,
    buildMs,
    firstMs: first.wall,
    warmMs: base,
    backToBackMs,
    sequentialUs: perCall(seq),
    parallelUs: perCall(all)
  }
  console.log(
    `${label}: layer build ${buildMs.toFixed(0)} ms, first run ${first.wall.toFixed(1)} ms, warm run ${base.toFixed(2)} ms${
      backToBackMs === undefined ? "" : `, back to back ${backToBackMs.toFixed(0)} ms`
    }, per call ${row.sequentialUs.toFixed(0)} µs awaited / ${row.parallelUs.toFixed(0)} µs in one batch of ${options.calls}`
  )
  return row
}

const table = (rows: ReadonlyArray<Row>) => {
  const ref = rows[0]!
  const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}×`
  console.log("\n| runtime | layer build | first run | warm run (per-run fixed cost) | back to back | per call, awaited | per call, batched |")
  console.log("|---|---|---|---|---|---|---|")
  for (const row of rows) {
    console.log(
      `| ${row.label} | ${row.buildMs.toFixed(0)} ms | ${row.firstMs.toFixed(1)} ms | ${row.warmMs.toFixed(2)} ms (${
        ratio(row.warmMs, ref.warmMs)
      }) | ${row.backToBackMs === undefined ? "–" : `${row.backToBackMs.toFixed(0)} ms`} | ${row.sequentialUs.toFixed(0)} µs (${
        ratio(row.sequentialUs, ref.sequentialUs)
      }) | ${row.parallelUs.toFixed(0)} µs (${ratio(row.parallelUs, ref.parallelUs)}) |`
    )
  }
}

/** @internal */
export const run = async (): Promise<void> => {
  const rows: Array<Row> = []
  rows.push(await suite("QuickJS in-thread", CodeRuntimeQuickJs.layer(limits), { language: "ts", calls: CALLS, rounds: 30 }))
  rows.push(
    await suite("QuickJS worker pool (1)", CodeRuntimeQuickJs.layerWorker({ ...limits, poolSize: 1 }), {
      language: "ts",
      calls: CALLS,
      rounds: 30
    })
  )
  const pyLimits = { limits: { ...limits, maxToolCalls: 10 * PY_CALLS, maxInFlight: PY_CALLS } }
  const python = CodeRuntimePython.layer(pyLimits)
  const built = await Effect.runPromise(Effect.either(Effect.scoped(Layer.build(python))))
  if (built._tag === "Right") {
    rows.push(await suite("Python subprocess (sandbox)", python, { language: "py", calls: PY_CALLS, rounds: 10 }))
  } else {
    console.log(`Python subprocess (sandbox): not measured: ${built.left.message}`)
  }
  rows.push(
    await suite("Pyodide (pool of 1, warm)", CodeRuntimePyodide.layer({ ...pyLimits, poolSize: 1 }), {
      language: "py",
      calls: PY_CALLS,
      rounds: 8,
      settleMs: 1_500
    })
  )
  table(rows)
  const stripper = await loadStripper()
  const source = `${WRAPPER_HEAD}${TS}\n})`
  const [strip] = measureAll([["strip", () => stripper.transformSync(`${source}\n// ${Math.random()}`, { mode: "strip-only" })]], 1_000, 100)
  console.log(`amaro strip-only of ${Buffer.byteLength(TS)} bytes of TypeScript: ${formatTime(strip)} per program`)
}
