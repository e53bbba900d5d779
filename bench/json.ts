import * as Os from "node:os"
import * as Json from "../src/Json.js"

const makeRandom = (seed: number) => {
  let state = seed >>> 0
  return (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const words = ["alpha", "beta", "gamma", "delta", "src", "lib", "index", "test", "config", "value", "node", "tool"]

const makeArguments = (targetBytes: number, seed: number): unknown => {
  const random = makeRandom(seed)
  const word = () => words[Math.floor(random() * words.length)]
  const sentence = (n: number) => Array.from({ length: n }, word).join(" ")
  const entry = (i: number) => ({
    id: i,
    path: `/${word()}/${word()}/${word()}.ts`,
    size: Math.floor(random() * 100_000),
    ratio: Math.round(random() * 10_000) / 100,
    binary: random() < 0.1,
    owner: random() < 0.2 ? null : { name: word(), uid: Math.floor(random() * 1000) },
    tags: Array.from({ length: 1 + Math.floor(random() * 4) }, word),
    edits: Array.from({ length: Math.floor(random() * 3) }, () => ({
      line: Math.floor(random() * 500),
      before: sentence(4),
      after: sentence(5)
    })),
    note: sentence(8 + Math.floor(random() * 8))
  })
  const files: Array<unknown> = []
  const options = { recursive: true, depth: 3, encoding: "utf8" }
  const value = { command: "apply_edits", dryRun: false, options, files }
  let i = 0
  while (JSON.stringify(value).length < targetBytes) {
    const batch = Math.max(1, Math.floor((targetBytes - JSON.stringify(value).length) / 400))
    for (let j = 0; j < batch; j++) files.push(entry(i++))
  }
  return value
}

const timeOps = (fn: () => unknown, budgetNs: number, minOps: number): number => {
  let ops = 0
  const start = process.hrtime.bigint()
  let elapsed = 0
  while (ops < minOps || elapsed < budgetNs) {
    fn()
    ops++
    elapsed = Number(process.hrtime.bigint() - start)
  }
  return elapsed / ops
}

const ROUNDS = 5

/** Interleaves the candidates over `ROUNDS` rounds and keeps each one's best round (noise-robust). */
const measureAll = (
  candidates: ReadonlyArray<readonly [string, () => unknown]>,
  budgetMs: number,
  minOps: number
): Array<number> => {
  for (const [, fn] of candidates) fn()
  const best = candidates.map(() => Infinity)
  const budgetNs = (budgetMs * 1e6) / (ROUNDS * candidates.length)
  for (let round = 0; round < ROUNDS; round++) {
    candidates.forEach(([, fn], index) => {
      best[index] = Math.min(best[index], timeOps(fn, budgetNs, minOps))
    })
  }
  return best
}

const formatTime = (ns: number): string =>
  ns < 1e3 ? `${ns.toFixed(0)} ns` : ns < 1e6 ? `${(ns / 1e3).toFixed(1)} µs` : `${(ns / 1e6).toFixed(2)} ms`

/**
 * Snapshot + freeze throughput on realistic tool arguments of ~1 KB, ~100 KB and ~10 MB, against
 * `structuredClone` and a `JSON.parse(JSON.stringify(x))` round trip measured in the same run.
 */
export const run = async (): Promise<void> => {
  const sizes: ReadonlyArray<readonly [string, number, number, number]> = [
    ["~1 KB", 1_000, 1000, 10],
    ["~100 KB", 100_000, 1500, 2],
    ["~10 MB", 10_000_000, 4000, 1]
  ]
  const load = Os.loadavg()[0].toFixed(1)
  console.log(`Json: snapshot + deep freeze of tool arguments (best of ${ROUNDS} rounds, load average ${load})`)
  for (const [label, bytes, budgetMs, minOps] of sizes) {
    const input = makeArguments(bytes, 42)
    const actualBytes = JSON.stringify(input).length
    const kb = actualBytes / 1024
    const candidates: ReadonlyArray<readonly [string, () => unknown]> = [
      ["Json.snapshotFrozen", () => Json.snapshotFrozen(input)],
      ["Json.snapshot", () => Json.snapshot(input)],
      ["Json.isLossless", () => Json.isLossless(input)],
      ["snapshot then deepFreeze", () => {
        const result = Json.snapshot(input)
        return result._tag === "Lossless" ? Json.deepFreeze(result.value) : result
      }],
      ["structuredClone", () => structuredClone(input)],
      ["JSON.parse(JSON.stringify)", () => JSON.parse(JSON.stringify(input))]
    ]
    const times = measureAll(candidates, budgetMs, minOps)
    const results = candidates.map(([name], index) => [name, times[index]] as const)
    const clone = times[candidates.length - 2]
    const roundTrip = times[candidates.length - 1]
    console.log(`  ${label} (${actualBytes.toLocaleString("en-US")} bytes of JSON)`)
    for (const [name, nsPerOp] of results) {
      const mbPerSecond = actualBytes / 1e6 / (nsPerOp / 1e9)
      console.log(
        `    ${name.padEnd(28)} ${formatTime(nsPerOp).padStart(10)}/op  ${mbPerSecond.toFixed(0).padStart(5)} MB/s  ` +
          `${(nsPerOp / kb / 1e3).toFixed(2).padStart(6)} µs/KB  ` +
          `x${(nsPerOp / clone).toFixed(2)} structuredClone  x${(nsPerOp / roundTrip).toFixed(2)} JSON round trip`
      )
    }
  }
}
