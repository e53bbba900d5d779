/**
 * The QuickJS code runtime: cold start (engine load and WebAssembly compile, amaro load, first
 * run), a warm run of `return 1` (fresh instance, prelude, strip, run, teardown), the cost per
 * binding call awaited one at a time and inside one `Promise.all` of 1,000, in the caller's
 * thread and in the worker pool, and amaro's strip time for about 2 KB of TypeScript.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
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

const suite = async (label: string, layer: Layer.Layer<CodeRuntime, unknown>) => {
  const { buildMs, runtime, scope } = await build(layer)
  const first = await timeRun(runtime, "return 1")
  console.log(`${label}: layer build ${buildMs.toFixed(0)} ms, first run of return 1 ${first.wall.toFixed(1)} ms`)
  for (let i = 0; i < 5; i++) await runOnce(runtime, "return 1")
  const warm: Array<number> = []
  for (let i = 0; i < 30; i++) warm.push((await timeRun(runtime, "return 1")).wall)
  const base = median(warm)
  console.log(`${label}: warm run of return 1 ${base.toFixed(2)} ms (median of 30)`)
  const sequential = `for (let i = 0; i < ${CALLS}; i++) await tools.echo({ i })`
  const parallel = `const all = []\nfor (let i = 0; i < ${CALLS}; i++) all.push(tools.echo({ i }))\nreturn (await Promise.all(all)).length`
  await runOnce(runtime, sequential, [echo])
  await runOnce(runtime, parallel, [echo])
  const seq: Array<{ wall: number; cpu: number }> = []
  const all: Array<{ wall: number; cpu: number }> = []
  for (let i = 0; i < 5; i++) {
    seq.push(await timeRun(runtime, sequential, [echo]))
    all.push(await timeRun(runtime, parallel, [echo]))
  }
  const perCall = (xs: ReadonlyArray<{ wall: number; cpu: number }>) =>
    `${formatTime(((median(xs.map((x) => x.wall)) - base) * 1e6) / CALLS)} wall, ${
      formatTime((median(xs.map((x) => x.cpu)) * 1e6) / CALLS)
    } process CPU`
  console.log(`${label}: per call, ${CALLS} awaited one at a time: ${perCall(seq)}`)
  console.log(`${label}: per call, one Promise.all of ${CALLS}: ${perCall(all)}`)
  await Effect.runPromise(Scope.close(scope, Exit.void))
}

/** @internal */
export const run = async (): Promise<void> => {
  await suite("in-thread", CodeRuntimeQuickJs.layer(limits))
  await suite("worker pool", CodeRuntimeQuickJs.layerWorker({ ...limits, poolSize: 1 }))
  const stripper = await loadStripper()
  const source = `${WRAPPER_HEAD}${TS}\n})`
  const [strip] = measureAll([["strip", () => stripper.transformSync(`${source}\n// ${Math.random()}`, { mode: "strip-only" })]], 1_000, 100)
  console.log(`amaro strip-only of ${Buffer.byteLength(TS)} bytes of TypeScript: ${formatTime(strip)} per program`)
}
