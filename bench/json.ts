import * as Os from "node:os"
import * as Json from "../src/Json.js"
import { formatTime, makeArguments, measureAll, ROUNDS } from "./support.js"

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
