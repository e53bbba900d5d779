/** Shared helpers of the JSON benchmarks (bench/json.ts, bench/validate.ts). */

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

/** Options of {@link makeArguments}. */
export interface MakeArgumentsOptions {
  /** Give about 30% of the file entries an open `extra` object (draws one more random number per entry). */
  readonly extra?: boolean | undefined
}

/**
 * Realistic, deterministic tool arguments (an `apply_edits` command over a list of file entries) whose
 * JSON text is at least `targetBytes` long.
 */
export const makeArguments = (targetBytes: number, seed: number, options: MakeArgumentsOptions = {}): unknown => {
  const withExtra = options.extra === true
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
    note: sentence(8 + Math.floor(random() * 8)),
    ...(withExtra && random() < 0.3 ? { extra: { reviewed: random() < 0.5, score: [1, 2, 3] } } : {})
  })
  const files: Array<unknown> = []
  const settings = { recursive: true, depth: 3, encoding: "utf8" }
  const value = { command: "apply_edits", dryRun: false, options: settings, files }
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

/** How many interleaved rounds {@link measureAll} runs. */
export const ROUNDS = 5

/** Interleaves the candidates over `ROUNDS` rounds and keeps each one's best round (noise-robust). */
export const measureAll = (
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

/** A duration in nanoseconds as `ns`, `µs` or `ms` text. */
export const formatTime = (ns: number): string =>
  ns < 1e3 ? `${ns.toFixed(0)} ns` : ns < 1e6 ? `${(ns / 1e3).toFixed(1)} µs` : `${(ns / 1e6).toFixed(2)} ms`
