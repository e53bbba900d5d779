import { Effect } from "effect"
import type { Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as ToolCallLogSql from "../layers/ToolCallLogSql.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import type { LogRecord } from "../src/ToolCallLog.js"

const N = 10_000
const ROUNDS = 3

const records: ReadonlyArray<LogRecord> = Array.from({ length: N }, (_, i) =>
  ToolCallLog.resultRecord("turn-1:step-1", i, `call_${i}`, {
    isError: false,
    value: { never: "persisted" },
    content: [{ type: "text", text: `line ${i}: ${"lorem ipsum dolor sit amet ".repeat(4)}` }],
    meta: { path: `src/file-${i}.ts`, lines: [i, i + 1, i + 2], truncated: false }
  }))

interface Figures {
  readonly appendMs: number
  /** `records` for all of them (the memory log only copies an array). */
  readonly readMs: number
}

const measure = (layer: Layer.Layer<ToolCallLog.ToolCallLog, ToolCallLog.ToolCallLogError>) =>
  Effect.gen(function*() {
    const log = yield* ToolCallLog.ToolCallLog
    const start = performance.now()
    for (const record of records) yield* log.append(record)
    const appended = performance.now()
    const stored = yield* log.records
    const read = performance.now()
    if (stored.length !== N) throw new Error(`expected ${N} records, got ${stored.length}`)
    return { appendMs: appended - start, readMs: read - appended } satisfies Figures
  }).pipe(Effect.provide(layer))

const codecOnly = Effect.gen(function*() {
  const start = performance.now()
  for (const record of records) yield* ToolCallLog.encodeJson(record)
  return performance.now() - start
})

const perSecond = (ms: number): string => `${Math.round(N / (ms / 1000)).toLocaleString("en-US")} records/s`
const perOp = (ms: number): string => `${((ms * 1000) / N).toFixed(1)} µs/record`

/** Appends 10,000 `tool/result` records to each log and reads them back; best of 3 rounds. */
export const run = async (): Promise<void> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tool-call-log-bench-"))
  try {
    const candidates: ReadonlyArray<
      readonly [string, () => Layer.Layer<ToolCallLog.ToolCallLog, ToolCallLog.ToolCallLogError>]
    > = [
      ["memory", () => ToolCallLogMemory.layer],
      ["libSQL :memory:", () => ToolCallLogSql.layerLibsql({ url: ":memory:" })],
      ["libSQL file", () => ToolCallLogSql.layerLibsql({ url: `file:${path.join(dir, `log-${Math.random()}.db`)}` })]
    ]
    const best = new Map<string, Figures>()
    let codec = Number.POSITIVE_INFINITY
    for (let round = 0; round < ROUNDS; round++) {
      codec = Math.min(codec, await Effect.runPromise(codecOnly))
      for (const [name, layer] of candidates) {
        const figures = await Effect.runPromise(measure(layer()))
        const previous = best.get(name)
        best.set(name, {
          appendMs: Math.min(figures.appendMs, previous?.appendMs ?? Number.POSITIVE_INFINITY),
          readMs: Math.min(figures.readMs, previous?.readMs ?? Number.POSITIVE_INFINITY)
        })
      }
    }
    const baseline = best.get("memory")!
    console.log(`tool-call log: ${N.toLocaleString("en-US")} tool/result records, best of ${ROUNDS}`)
    console.log(`  codec only (validate + JSON text)  ${perSecond(codec)}  ${perOp(codec)}`)
    for (const [name, figures] of best) {
      console.log(
        `  ${name.padEnd(16)} append ${perSecond(figures.appendMs)} (${perOp(figures.appendMs)}, ` +
          `${(figures.appendMs / baseline.appendMs).toFixed(2)}x memory)  ` +
          `read back ${perSecond(figures.readMs)}`
      )
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
