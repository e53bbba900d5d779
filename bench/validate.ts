import * as Json from "../src/Json.js"
import type { JsonObject } from "../src/Json.js"
import * as JsonSchema from "../src/JsonSchema.js"

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

/** A realistic argument schema: an object with nested arrays of objects, enums, a oneOf and open maps. */
const schema: JsonObject = {
  type: "object",
  properties: {
    command: { type: "string", enum: ["apply_edits", "preview"] },
    dryRun: { type: "boolean" },
    options: {
      type: "object",
      properties: {
        recursive: { type: "boolean" },
        depth: { type: "integer" },
        encoding: { type: "string", enum: ["utf8", "latin1"] }
      },
      additionalProperties: false
    },
    files: {
      type: "array",
      items: {
        type: "object",
        properties: {
          id: { type: "integer" },
          path: { type: "string", description: "workspace-relative path" },
          size: { type: "integer" },
          ratio: { type: "number" },
          binary: { type: "boolean" },
          owner: {
            oneOf: [
              { type: "null" },
              {
                type: "object",
                properties: { name: { type: "string" }, uid: { type: "integer" } },
                required: ["name", "uid"],
                additionalProperties: false
              }
            ]
          },
          tags: { type: "array", items: { type: "string" } },
          edits: {
            type: "array",
            items: {
              type: "object",
              properties: { line: { type: "integer" }, before: { type: "string" }, after: { type: "string" } },
              required: ["line", "before", "after"],
              additionalProperties: false
            }
          },
          note: { type: "string" },
          extra: {}
        },
        required: ["id", "path", "size", "tags", "edits"],
        additionalProperties: true
      }
    }
  },
  required: ["command", "files"]
}

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
    note: sentence(8 + Math.floor(random() * 8)),
    ...(random() < 0.3 ? { extra: { reviewed: random() < 0.5, score: [1, 2, 3] } } : {})
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
 * Validation of realistic tool arguments of ~1 KB, ~100 KB and ~10 MB against a precompiled
 * schema, with `structuredClone` and a `JSON.parse(JSON.stringify(x))` round trip of the same
 * object measured in the same run (and `Json.isLossless`, the floor every validation pays).
 */
export const run = async (): Promise<void> => {
  const compileStart = process.hrtime.bigint()
  const validator = JsonSchema.compile(schema)
  const compileNs = Number(process.hrtime.bigint() - compileStart)
  const sizes: ReadonlyArray<readonly [string, number, number, number]> = [
    ["~1 KB", 1_000, 1200, 10],
    ["~100 KB", 100_000, 1500, 2],
    ["~10 MB", 10_000_000, 5000, 1]
  ]
  console.log(`JsonSchema: validation of tool arguments (compile once: ${formatTime(compileNs)})`)
  for (const [label, bytes, budgetMs, minOps] of sizes) {
    const input = makeArguments(bytes, 42)
    const found = validator(input, "")
    if (found.length > 0) throw new Error(`benchmark input is invalid: ${found.join("; ")}`)
    const actualBytes = JSON.stringify(input).length
    const kb = actualBytes / 1024
    const candidates: ReadonlyArray<readonly [string, () => unknown]> = [
      ["compiled validator", () => validator(input, "")],
      ["JsonSchema.validate (cached)", () => JsonSchema.validate(schema, input, "")],
      ["Json.isLossless", () => Json.isLossless(input)],
      ["structuredClone", () => structuredClone(input)],
      ["JSON.parse(JSON.stringify)", () => JSON.parse(JSON.stringify(input))]
    ]
    const times = measureAll(candidates, budgetMs, minOps)
    const clone = times[candidates.length - 2]
    const roundTrip = times[candidates.length - 1]
    console.log(`  ${label} (${actualBytes.toLocaleString("en-US")} bytes of JSON)`)
    candidates.forEach(([name], index) => {
      const nsPerOp = times[index]
      const mbPerSecond = actualBytes / 1e6 / (nsPerOp / 1e9)
      console.log(
        `    ${name.padEnd(30)} ${formatTime(nsPerOp).padStart(10)}/op  ${mbPerSecond.toFixed(0).padStart(5)} MB/s  ` +
          `${(nsPerOp / kb / 1e3).toFixed(3).padStart(7)} µs/KB  ` +
          `x${(nsPerOp / clone).toFixed(2)} structuredClone  x${(nsPerOp / roundTrip).toFixed(2)} JSON round trip`
      )
    })
  }
}
