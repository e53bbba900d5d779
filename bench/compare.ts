/**
 * The side-by-side benchmark (`npm run bench -- compare`): per-call cost of `ToolRuntime.execute`
 * with 0 / 1+1 / 5+5 hooks, with the timeout policy armed, with a body that suspends; the Promise
 * facade; `Scheduler.runBatch` of 1,000 calls with the memory and the SQL file log; 1,000 calls in
 * flight at once; `@effect/ai`'s `Toolkit.handle` for the same tool; floors; retained heap per
 * result and argument-size scaling. The cases run interleaved in this process (tsx), then the
 * same cases compiled by tsc run in a plain-node child process; both columns are printed with
 * the same-run ratios and the targets beside them.
 */
import { spawnSync } from "node:child_process"
import { build } from "./compareBuild.js"
import { defaultPlan, type Figure, measure, type Report } from "./compareCases.js"

const labels: ReadonlyArray<readonly [string, string]> = [
  ["exec0", "execute, 0 hooks"],
  ["exec1", "execute, 1 pre + 1 post"],
  ["exec5", "execute, 5 pre + 5 post"],
  ["timeout", "execute, timeout policy armed"],
  ["suspend", "execute, body suspends once"],
  ["timeoutSuspend", "execute, armed, body suspends"],
  ["facade", "Promise facade execute"],
  ["toolkit", "@effect/ai Toolkit.handle"],
  ["batchMemory", "runBatch 1,000, memory log"],
  ["batchSql", "runBatch 1,000, SQL file log"],
  ["concurrent", "1,000 execute in flight"],
  ["sequential", "1,000 execute one by one"],
  ["floorConcurrent", "floor: 1,000 no-op effects in flight"],
  ["args1k", "execute, ~1 KB arguments"],
  ["args100k", "execute, ~100 KB arguments"],
  ["floorBody", "floor: body Effect directly"],
  ["floorFork", "floor: one fork + await"],
  ["floorRunPromise", "floor: runPromise(succeed(1))"],
  ["floorAsync", "floor: plain async call"]
]

interface Ratio {
  readonly label: string
  readonly value: (report: Report) => number
  readonly unit: string
  /** The target, as text, and its check (undefined: informational). */
  readonly target?: { readonly text: (runner: string) => string; readonly ok: (value: number, runner: string) => boolean }
}

const cpu = (report: Report, key: string): number => (report.figures[key] as Figure).cpu

const atMost = (limit: number, unit = "") => ({ text: () => `≤ ${limit}${unit}`, ok: (v: number) => v <= limit })

const ratios: ReadonlyArray<Ratio> = [
  {
    label: "hook-less execute (CPU µs)",
    value: (r) => cpu(r, "exec0"),
    unit: "µs",
    target: {
      text: (runner) => (runner === "compiled" ? "≤ 5 µs" : "≤ 8 µs"),
      ok: (v, runner) => v <= (runner === "compiled" ? 5 : 8)
    }
  },
  { label: "ours / @effect/ai Toolkit.handle", value: (r) => cpu(r, "exec0") / cpu(r, "toolkit"), unit: "×", target: atMost(0.33) },
  { label: "ours / floor fork + await", value: (r) => cpu(r, "exec0") / cpu(r, "floorFork"), unit: "×" },
  { label: "ours / floor body directly", value: (r) => cpu(r, "exec0") / cpu(r, "floorBody"), unit: "×" },
  { label: "ours / floor runPromise", value: (r) => cpu(r, "exec0") / cpu(r, "floorRunPromise"), unit: "×" },
  {
    label: "µs per extra hook (1+1)",
    value: (r) => (cpu(r, "exec1") - cpu(r, "exec0")) / 2,
    unit: "µs",
    target: atMost(0.5, " µs")
  },
  {
    label: "µs per extra hook (5+5)",
    value: (r) => (cpu(r, "exec5") - cpu(r, "exec0")) / 10,
    unit: "µs",
    target: atMost(0.5, " µs")
  },
  {
    label: "µs per hook beyond the first pair ((5+5 − 1+1) / 8)",
    value: (r) => (cpu(r, "exec5") - cpu(r, "exec1")) / 8,
    unit: "µs",
    target: atMost(0.5, " µs")
  },
  { label: "timeout armed / unarmed", value: (r) => cpu(r, "timeout") / cpu(r, "exec0"), unit: "×", target: atMost(2) },
  {
    label: "armed / unarmed, suspending body",
    value: (r) => cpu(r, "timeoutSuspend") / cpu(r, "suspend"),
    unit: "×",
    target: atMost(2)
  },
  { label: "suspending / immediate body", value: (r) => cpu(r, "suspend") / cpu(r, "exec0"), unit: "×" },
  { label: "facade / Effect execute", value: (r) => cpu(r, "facade") / cpu(r, "exec0"), unit: "×", target: atMost(1.5) },
  { label: "batch (memory log) / single", value: (r) => cpu(r, "batchMemory") / cpu(r, "exec0"), unit: "×" },
  {
    label: "batch overhead per call (memory log)",
    value: (r) => cpu(r, "batchMemory") - cpu(r, "exec0"),
    unit: "µs",
    target: atMost(3, " µs")
  },
  { label: "batch (SQL log) / single", value: (r) => cpu(r, "batchSql") / cpu(r, "exec0"), unit: "×" },
  { label: "batch overhead per call (SQL log)", value: (r) => cpu(r, "batchSql") - cpu(r, "exec0"), unit: "µs" },
  {
    label: "concurrent / sequential",
    value: (r) => cpu(r, "concurrent") / cpu(r, "sequential"),
    unit: "×",
    target: atMost(1.5)
  },
  {
    label: "concurrent less the harness's own fibers / sequential",
    value: (r) => (cpu(r, "concurrent") - cpu(r, "floorConcurrent")) / cpu(r, "sequential"),
    unit: "×",
    target: atMost(1.5)
  },
  { label: "retained heap per result", value: (r) => r.bytesPerResult, unit: "B", target: atMost(200, " B") },
  {
    label: "µs per KB, 1 KB arguments",
    value: (r) => (cpu(r, "args1k") - cpu(r, "exec0")) / (r.argBytes.args1k / 1024),
    unit: "µs"
  },
  {
    label: "µs per KB, 100 KB arguments",
    value: (r) => (cpu(r, "args100k") - cpu(r, "exec0")) / (r.argBytes.args100k / 1024),
    unit: "µs"
  },
  {
    label: "per-KB cost 100 KB / 1 KB (linear ≈ 1)",
    value: (r) =>
      ((cpu(r, "args100k") - cpu(r, "exec0")) / r.argBytes.args100k) /
      ((cpu(r, "args1k") - cpu(r, "exec0")) / r.argBytes.args1k),
    unit: "×",
    target: atMost(1.5)
  }
]

const num = (v: number): string =>
  Number.isNaN(v) ? "n/a" : Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)

const pad = (s: string, n: number) => s.padEnd(n)
const padL = (s: string, n: number) => s.padStart(n)

/** The two tables (µs per call, ratios) for one or two reports, as markdown. */
export const format = (reports: ReadonlyArray<Report>): string => {
  const lines: Array<string> = []
  const head = reports.map((r) => `${r.runner} CPU | ${r.runner} wall`).join(" | ")
  lines.push(`| case (µs per call, median of ${reports[0].rounds} rounds) | ${head} |`)
  lines.push(`|---|${reports.map(() => "--:|--:").join("|")}|`)
  for (const [key, label] of labels) {
    const cells = reports.map((r) => {
      const f = r.figures[key]
      return f === undefined ? "n/a | n/a" : `${padL(num(f.cpu), 6)} | ${padL(num(f.wall), 6)}`
    })
    lines.push(`| ${pad(label, 32)} | ${cells.join(" | ")} |`)
  }
  lines.push("")
  lines.push(`| ratio (CPU) | ${reports.map((r) => r.runner).join(" | ")} | target |`)
  lines.push(`|---|${reports.map(() => "--:").join("|")}|---|`)
  for (const ratio of ratios) {
    const cells = reports.map((r) => {
      const v = ratio.value(r)
      const verdict = ratio.target === undefined || Number.isNaN(v) ? "" : ratio.target.ok(v, r.runner) ? " ✓" : " ✗"
      return `${num(v)} ${ratio.unit}${verdict}`
    })
    const target = ratio.target === undefined
      ? ""
      : [...new Set(reports.map((r) => ratio.target!.text(r.runner)))].join(" / ")
    lines.push(`| ${pad(ratio.label, 40)} | ${cells.join(" | ")} | ${target} |`)
  }
  return lines.join("\n")
}

const roundsFromEnv = (): number => {
  const n = Number(process.env["COMPARE_ROUNDS"])
  return Number.isInteger(n) && n > 0 ? n : defaultPlan.rounds
}

/** Runs the comparison under this process's runner, then compiled in a child process. */
export const run = async (): Promise<void> => {
  const rounds = roundsFromEnv()
  const started = performance.now()
  console.log("compare: compiling the cases with tsc into a temporary directory ...")
  const compiled = build(["compareCompiled"])
  let reports: Array<Report> = []
  try {
    console.log(`compare: compiled in ${(compiled.ms / 1000).toFixed(1)} s; measuring under tsx (this process) ...`)
    reports.push(await measure("tsx", { ...defaultPlan, rounds }))
    console.log("compare: measuring the compiled build under plain node (child process) ...")
    const child = spawnSync(process.execPath, ["--expose-gc", compiled.entry("compareCompiled"), String(rounds)], {
      encoding: "utf8",
      maxBuffer: 16 * 1024 * 1024
    })
    const line = child.stdout.trim().split("\n").pop() ?? ""
    if (child.status !== 0 || !line.startsWith("{")) {
      console.error(`compare: the compiled run failed (status ${child.status}):\n${child.stderr}`)
    } else {
      reports.push(JSON.parse(line) as Report)
    }
  } finally {
    compiled.cleanup()
  }
  reports = reports.filter((r) => r !== undefined)
  console.log(`\nnode ${process.version}, ${new Date().toISOString()}; CPU = process.cpuUsage (all threads), wall = performance.now\n`)
  console.log(format(reports))
  console.log(`\ncompare: ${((performance.now() - started) / 1000).toFixed(0)} s in all`)
}
