/**
 * Durable turns under many real crashes (D-22, D-24): random batches (parallel-safe and exclusive
 * calls of the three replay policies, failing calls, calls that ask for approval, `run_code`
 * programs whose sub-calls are the same), each run by a chain of child processes that SIGKILL
 * themselves at random points (in a gate, mid-body, after a body's effect, at a commit, beside a
 * settled body, while an approval is pending); every process after a kill resumes the batch
 * (`run` with the same calls, `resume`, or `idle` — the runner resuming it by itself). Approvals
 * are answered (allowed or rejected) by the runner, or by a client-only process the parent starts.
 * Every chain is checked against the invariants of `test/fixtures/durableCrash.ts` (`violations`)
 * and the results of calls never cut against those of an uninterrupted run.
 *
 *   npx tsx scripts/durable-kill-rounds.ts [rounds=200] [--seed N] [--parallel N] [--only N]
 *
 * `rounds` is the number of kills to reach. Each batch draws from its own generator (seed, batch
 * number), so a reported `seed S batch bN` is planned again by `--seed S --only N` (the points a
 * process reaches may still differ with timing). Prints a summary; exits 1 on any violation or error.
 */
import type { ChildPlan, Outcome, ResultLine } from "../test/fixtures/durableChild.js"
import {
  type Batch,
  type Bundle,
  bundleChild,
  type Child,
  killAll,
  planOf,
  type Place,
  runChain,
  settle,
  spawnChild,
  type Step,
  tempPlace,
  violations
} from "../test/fixtures/durableCrash.js"
import { describePoint, type KillPoint } from "../test/fixtures/durableCrashApp.js"

const args = process.argv.slice(2)
const flag = (name: string, fallback: number): number => {
  const at = args.indexOf(name)
  return at >= 0 ? Number(args[at + 1]) : fallback
}
const target = Number(args.find((arg, i) => !arg.startsWith("--") && !args[i - 1]?.startsWith("--")) ?? 200)
const seed = flag("--seed", Date.now() % 1_000_000)
const parallel = flag("--parallel", 2)
/** Runs only batch N of the seed (to look again at a reported one). */
const only = flag("--only", -1)

/** mulberry32: a small seeded generator. Each batch has its own, so a seed gives the same batches. */
type Random = () => number
const generator = (from: number): Random => {
  let state = from >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const pick = <A>(random: Random, items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]
const chance = (random: Random, p: number) => random() < p

const TOOLS = ["never", "idempotent", "safe", "par_never", "par_idempotent", "par_safe", "fail", "write"] as const
const SUB_TOOLS = ["never", "idempotent", "safe", "par_never", "par_idempotent", "par_safe", "fail"] as const

interface Planned {
  readonly batch: Batch
  /** The ids of every body (calls and sub-calls), with their tool. */
  readonly bodies: ReadonlyArray<{ readonly id: string; readonly tool: string }>
  /** Pairs in one parallel group: `waiter` may wait for `slot`'s settle (a tool that always settles). */
  readonly pairs: ReadonlyArray<{ readonly waiter: string; readonly slot: string }>
  readonly asks: boolean
}

const planBatch = (n: number, random: Random): Planned => {
  const calls: Array<ChildPlan["calls"][number]> = []
  const bodies: Array<{ id: string; tool: string }> = []
  const pairs: Array<{ waiter: string; slot: string }> = []
  const size = 2 + Math.floor(random() * 5)
  let code = false
  let group: Array<{ id: string; tool: string; slot: string }> = []
  const close = () => {
    for (const waiter of group) {
      for (const other of group) {
        if (other !== waiter && /^(par_safe|par_idempotent|fail)$/.test(other.tool)) pairs.push({ waiter: waiter.id, slot: other.slot })
      }
    }
    group = []
  }
  for (let i = 0; i < size; i++) {
    const callId = `c${i}`
    if (!code && chance(random, 0.15)) {
      code = true
      close()
      const steps: Array<string> = []
      for (let k = 0; k < 2 + Math.floor(random() * 3); k++) {
        const ids = [`${callId}s${k}a`, ...(chance(random, 0.3) ? [`${callId}s${k}b`] : [])]
        const tools = ids.map((id) => {
          const tool = chance(random, 0.1) ? "write" : pick(random, SUB_TOOLS)
          bodies.push({ id, tool })
          return `one(${JSON.stringify(tool)}, ${JSON.stringify(id)})`
        })
        steps.push(tools.length === 1 ? `out.push(await ${tools[0]})` : `out.push(...(await Promise.all([${tools.join(", ")}])))`)
      }
      const program = [
        "const out = []",
        "const one = async (tool, id) => { try { return await tools[tool]({ id }) } catch (error) { return \"failed: \" + error.message } }",
        ...steps,
        "return out.join(\" | \")"
      ].join("\n")
      calls.push({ callId, name: "run_code", arguments: JSON.stringify({ description: "random steps", code: program }) })
      continue
    }
    const tool = pick(random, TOOLS)
    const id = `${callId}x`
    calls.push({ callId, name: tool, arguments: JSON.stringify({ id }) })
    bodies.push({ id, tool })
    if (tool.startsWith("par_") || tool === "fail") group.push({ id, tool, slot: String(i) })
    else close()
  }
  close()
  return {
    batch: { sessionId: "s", batchId: `b${n}`, calls, code },
    bodies,
    pairs,
    asks: bodies.some((b) => b.tool === "write")
  }
}

const pointFor = (random: Random, planned: Planned): KillPoint => {
  const roll = random()
  if (planned.asks && roll < 0.12) return { at: "suspended" }
  if (planned.pairs.length > 0 && roll < 0.2) {
    const pair = pick(random, planned.pairs)
    return { at: "settled", id: pair.waiter, slot: pair.slot }
  }
  if (roll < 0.32) return { at: "commit", index: Math.floor(random() * planned.batch.calls.length) }
  const body = pick(random, planned.bodies)
  return { at: pick(random, ["gate", "body", "body", "bodyEnd"] as const), id: body.id }
}

interface Tally {
  processes: number
  kills: number
  resumes: number
  completed: number
  clients: number
  /** Approvals answered, by whom and how. */
  answers: Record<string, number>
  /** Kills by kind of point. */
  points: Record<string, number>
  violations: number
  errors: number
  /** Wall time of each runner process, from spawn to exit. */
  killedMillis: Array<number>
  completedMillis: Array<number>
  /** Processes that took over 10 s, for a look. */
  slow: Array<string>
}

const count = (counts: Record<string, number>, key: string): void => {
  counts[key] = (counts[key] ?? 0) + 1
}

const tally: Tally = {
  processes: 0,
  kills: 0,
  resumes: 0,
  completed: 0,
  clients: 0,
  answers: {},
  points: {},
  violations: 0,
  errors: 0,
  killedMillis: [],
  completedMillis: [],
  slow: []
}

const spread = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0)
  return { n: sorted.length, median: at(0.5), p90: at(0.9), max: at(1) }
}

/** The result text of a call never cut, as an uninterrupted run gives it (`undefined`: not checked). */
const expected = (call: ChildPlan["calls"][number]): string | undefined => {
  if (call.name === "run_code" || call.name === "write") return undefined
  const id = (JSON.parse(call.arguments) as { id: string }).id
  return call.name === "fail" ? `Error: fail ${id} failed` : `${call.name} ${id}`
}

const checkResults = (planned: Planned, final: ResultLine): Array<string> => {
  const out: Array<string> = []
  for (const [index, call] of planned.batch.calls.entries()) {
    const result = final.results[index]?.result
    if (result === undefined) continue
    if (result.isError && result.error.info?.code === "OUTCOME_UNKNOWN") continue
    const want = expected(call)
    const got = result.content.map((c) => (c.type === "text" ? c.text : "")).join("")
    if (want !== undefined && got !== want) out.push(`call ${call.callId}: ${JSON.stringify(got)}, uninterrupted ${JSON.stringify(want)}`)
  }
  for (const tag of ["approval/asked", "approval/decided"]) {
    const ids = final.records.filter((r) => r.tag === tag).map((r) => r.id)
    if (new Set(ids).size !== ids.length) out.push(`${tag} written more than once`)
  }
  return out
}

let batches = Math.max(0, only)

const runOne = async (bundle: Bundle): Promise<void> => {
  const n = batches++
  const random = generator(seed * 100_003 + n)
  const planned = planBatch(n, random)
  const place: Place = tempPlace()
  const clients: Array<Promise<unknown>> = []
  const steps: Array<Step> = []
  const length = 1 + Math.floor(random() * 7)
  for (let i = 0; i < length; i++) {
    const last = i === length - 1
    const op: Step["op"] = i === 0 ? "run" : pick(random, ["run", "run", "resume", "idle"] as const)
    const onPending: ChildPlan["onPending"] = chance(random, 0.5)
      ? { answer: pick(random, ["allowed-once", "rejected"] as const) }
      : "wait"
    steps.push({ op, onPending, ...(last ? {} : { kill: pointFor(random, planned) }) })
  }
  const onChild = (child: Child) => {
    tally.processes++
    const born = performance.now()
    void child.exit.then((exit) => {
      const millis = performance.now() - born
      ;(exit.signal === "SIGKILL" ? tally.killedMillis : tally.completedMillis).push(millis)
      if (millis > 10_000) {
        tally.slow.push(`${Math.round(millis)} ms: ${planned.batch.batchId} ${child.plan.op} ${describePoint(child.plan.kill)} ${JSON.stringify(child.plan.onPending)}`)
      }
    })
    child.on("pending", () => {
      const onPending = child.plan.onPending
      if (child.plan.kill?.at === "suspended") return
      if (typeof onPending === "object") return count(tally.answers, `by the runner: ${onPending.answer}`)
      const answer: Outcome = pick(random, ["allowed-once", "rejected"] as const)
      tally.clients++
      count(tally.answers, `by a client: ${answer}`)
      const client = spawnChild(bundle, { ...planOf(place, planned.batch, { op: "answer" }), answer })
      clients.push(settle(client).catch(() => undefined))
    })
  }
  try {
    const run = await runChain(bundle, place, planned.batch, steps, { onChild })
    await Promise.all(clients)
    for (const round of run.rounds) if (round.killed) count(tally.points, round.point?.at ?? "none")
    tally.kills += run.rounds.filter((r) => r.killed).length
    tally.resumes += run.rounds.length - 1
    tally.completed++
    const found = [...violations(run), ...checkResults(planned, run.final)]
    if (found.length > 0) {
      tally.violations += found.length
      console.log(`VIOLATION seed ${seed} batch ${planned.batch.batchId}:`)
      console.log(JSON.stringify({ calls: planned.batch.calls, points: run.rounds.map((r) => describePoint(r.point)), found }, null, 2))
    }
  } catch (error) {
    tally.errors++
    console.log(`ERROR seed ${seed} batch ${planned.batch.batchId}: ${String(error)}`)
    console.log(JSON.stringify({ calls: planned.batch.calls, steps }, null, 2))
  } finally {
    await Promise.all(clients)
    place.cleanup()
  }
}

const main = async () => {
  const started = performance.now()
  const bundle = await bundleChild()
  console.log(`durable kill rounds: target ${target} kills, seed ${seed}, ${parallel} chains at once (child bundled in ${Math.round(bundle.millis)} ms)`)
  try {
    if (only >= 0) await runOne(bundle)
    const worker = async () => {
      while (only < 0 && tally.kills < target && tally.errors === 0) {
        await runOne(bundle)
        if (tally.completed % 10 === 0) {
          process.stdout.write(`  ${tally.completed} batches, ${tally.kills} kills, ${tally.violations} violations\n`)
        }
      }
    }
    await Promise.all(Array.from({ length: parallel }, worker))
  } finally {
    killAll()
    bundle.cleanup()
  }
  const seconds = (performance.now() - started) / 1000
  const summary = {
    seed,
    batches: tally.completed,
    processes: tally.processes + tally.clients,
    runners: tally.processes,
    clients: tally.clients,
    kills: tally.kills,
    resumes: tally.resumes,
    answers: tally.answers,
    killsAt: tally.points,
    violations: tally.violations,
    errors: tally.errors,
    wallSeconds: Math.round(seconds * 10) / 10,
    killedProcessMs: spread(tally.killedMillis),
    completingProcessMs: spread(tally.completedMillis),
    slowProcesses: tally.slow
  }
  console.log(JSON.stringify(summary, null, 2))
  process.exitCode = tally.violations > 0 || tally.errors > 0 ? 1 : 0
}

void main()
