/**
 * Durable turns across real crashes (D-22, D-24): a child process (`fixtures/durableChild.ts`)
 * runs a durable batch on a libSQL file and is SIGKILLed at a scripted point — it stops itself with
 * `process.kill(process.pid, "SIGKILL")` at the point, or the parent kills it once it prints a
 * marker — then a fresh process resumes the batch (the runner resumes unfinished batches by
 * itself when it starts; `idle` processes call nothing until the batch is done). Resuming
 * processes are themselves killed at later points (chains), so one spawn is one kill round.
 *
 * What is observed: the tools append a line per body start and end to a side file (pid, call id,
 * `ctx.idempotencyKey`, whether the call's intent row was stored when the body began); the parent
 * reads the journal after each process; the last process prints the batch's results and the
 * session's records. `violations` (fixtures/durableCrash.ts) checks every chain for the D-22
 * invariants; each test adds the assertions of its scenario.
 *
 * Kill rounds in this file: 4 + 5 + 4 + 2 + 2 + 3 + 3 = 23 (32 processes). Many more, at random
 * points over random batches: `npx tsx scripts/durable-kill-rounds.ts [rounds]`.
 *
 * Start-up of one child (a one-call batch, start to exit, median of 6–8 on this 2-core machine
 * shared with other work; CPU = user + sys, steadier than wall under load): `node --import tsx`
 * 3.6 s CPU; esbuild bundle, node_modules external (ESM) 1.6 s; every JS dependency bundled
 * (ESM) 0.9 s; the same as CommonJS 0.8 s; CommonJS run from V8's code cache 0.7 s — used here,
 * bundled once in `beforeAll` (native and wasm packages, libsql and QuickJS, stay outside). Wall
 * time follows the machine's load: the whole file takes ~35 s at a load of 8 on 2 cores.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ResultLine } from "./fixtures/durableChild.js"
import {
  type Batch,
  type Bundle,
  bundleChild,
  journalRows,
  killAll,
  planOf,
  type Place,
  type Round,
  runChain,
  settle,
  spawnChild,
  type Step,
  tempPlace,
  violations
} from "./fixtures/durableCrash.js"
import { type BodyEvent, readSide } from "./fixtures/durableCrashApp.js"

let bundle: Bundle | undefined
const places: Array<Place> = []

beforeAll(async () => {
  bundle = await bundleChild()
}, 120_000)

afterAll(() => {
  killAll()
  for (const place of places) place.cleanup()
  bundle?.cleanup()
})

const TIMEOUT = 120_000

const call = (callId: string, name: string, id: string) => ({ callId, name, arguments: JSON.stringify({ id }) })
const runCode = (callId: string, code: string) => ({
  callId,
  name: "run_code",
  arguments: JSON.stringify({ description: "steps", code })
})

const place = (): Place => {
  const made = tempPlace()
  places.push(made)
  return made
}

const chain = (batch: Batch, steps: ReadonlyArray<Step>) =>
  Effect.promise(() => runChain(bundle!, place(), batch, steps, { strict: true }))

const starts = (side: ReadonlyArray<{ readonly ev: string }>, id: string): Array<BodyEvent> =>
  side.filter((e): e is BodyEvent => e.ev === "start" && (e as BodyEvent).id === id)

const has = (round: Round, entry: string) => round.rows.some((row) => row.entry === entry)

const codeOf = (final: ResultLine, index: number): string | undefined => {
  const result = final.results[index].result
  return result.isError ? result.error.info?.code : undefined
}

const texts = (final: ResultLine): Array<string> =>
  final.results.map((r) => r.result.content.map((c) => (c.type === "text" ? c.text : "")).join(""))

const clean = (run: Parameters<typeof violations>[0]) => assert.deepStrictEqual(violations(run), [])

describe.concurrent("DurableTurn: real crashes (SIGKILL) and fresh processes that resume (D-22, D-24)", () => {
  it.live("D-22: killed in the gate, before a body (no intent stored): the calls then run once, normally — never ones too (4 kills)", () =>
    Effect.gen(function*() {
      const batch = {
        sessionId: "s",
        batchId: "gate",
        calls: [call("c0", "par_never", "p"), call("c1", "par_never", "q"), call("c2", "par_idempotent", "r"), call("c3", "never", "a")]
      }
      const run = yield* chain(batch, [
        { kill: { at: "gate", id: "p" } },
        { kill: { at: "gate", id: "q" } },
        { kill: { at: "gate", id: "r" } },
        { kill: { at: "gate", id: "r" } },
        {}
      ])
      clean(run)
      for (const round of run.rounds.slice(0, 4)) {
        assert.deepStrictEqual(round.rows.filter((row) => row.entry.startsWith("intent:")), [], "a gate kill stores no intent")
      }
      for (const id of ["p", "q", "r", "a"]) assert.strictEqual(starts(run.side, id).length, 1, `${id} ran once`)
      assert.deepStrictEqual(texts(run.final), ["par_never p", "par_never q", "par_idempotent r", "never a"])
    }), TIMEOUT)

  it.live(
    "D-22: killed mid-body: never ends OUTCOME_UNKNOWN, not run again; idempotent runs again with the same key (twice); safe runs again; the runner resumes by itself (5 kills)",
    () =>
      Effect.gen(function*() {
        const batch = {
          sessionId: "s",
          batchId: "mid",
          calls: [
            call("c0", "never", "a"),
            call("c1", "idempotent", "b"),
            call("c2", "safe", "c"),
            call("c3", "par_safe", "d"),
            call("c4", "par_safe", "e")
          ]
        }
        const run = yield* chain(batch, [
          { kill: { at: "body", id: "a" } },
          { kill: { at: "body", id: "b" } },
          { kill: { at: "body", id: "b" } },
          { kill: { at: "body", id: "c" } },
          { kill: { at: "bodyEnd", id: "d" } },
          { op: "idle" }
        ])
        clean(run)
        assert.strictEqual(starts(run.side, "a").length, 1, "never: one run")
        assert.strictEqual(codeOf(run.final, 0), "OUTCOME_UNKNOWN")
        const keys = starts(run.side, "b").map((e) => e.key)
        assert.strictEqual(keys.length, 3, "idempotent: cut twice, three runs")
        assert.match(keys[0]!, /^[0-9a-f]{64}$/)
        assert.deepStrictEqual(new Set(keys).size, 1, "idempotent: the same key every time")
        assert.strictEqual(starts(run.side, "c").length, 2, "safe: run again")
        assert.strictEqual(starts(run.side, "d").length, 2, "ended but not settled: run again")
        assert.deepStrictEqual(texts(run.final).slice(1), ["idempotent b", "safe c", "par_safe d", "par_safe e"])
        const idle = run.children[run.children.length - 1]
        assert.isNull(yield* Effect.promise(() => idle.marker("selfResumed")), "the last runner finished the batch before anyone called it")
        assert.isTrue(starts(run.side, "d").some((e) => e.pid === idle.pid), "bodies ran in the idle runner")
      }),
    TIMEOUT
  )

  it.live("D-22: killed between commits: committed results and settled bodies are never run again (4 kills)", () =>
    Effect.gen(function*() {
      const batch = {
        sessionId: "s",
        batchId: "commits",
        calls: [
          call("c0", "safe", "a"),
          call("c1", "safe", "b"),
          call("c2", "never", "c"),
          call("c3", "par_never", "slow"),
          call("c4", "par_never", "fast"),
          call("c5", "idempotent", "g")
        ]
      }
      const run = yield* chain(batch, [
        { kill: { at: "commit", index: 1 } },
        { kill: { at: "settled", id: "slow", slot: "4" } },
        { kill: { at: "commit", index: 4 } },
        { kill: { at: "body", id: "g" } },
        {}
      ])
      clean(run)
      const [first, second, third] = run.rounds
      assert.isTrue(has(first, "result:0") && has(first, "result:1"), "two results committed")
      assert.isTrue(has(first, "intent:2") && !has(first, "settle:2"), "the next call's intent was stored with them")
      assert.isTrue(has(second, "settle:4") && !has(second, "result:4"), "fast settled, not committed")
      assert.isTrue(has(second, "intent:3") && !has(second, "settle:3"), "slow cut mid-body")
      assert.isTrue(has(third, "result:4"))
      for (const id of ["a", "b", "slow", "fast"]) assert.strictEqual(starts(run.side, id).length, 1, `${id} ran once`)
      assert.isAtMost(starts(run.side, "c").length, 1)
      assert.strictEqual(codeOf(run.final, 2), "OUTCOME_UNKNOWN", "intent stored, no settle: may have run")
      assert.strictEqual(codeOf(run.final, 3), "OUTCOME_UNKNOWN", "the cut never body")
      assert.strictEqual(texts(run.final)[4], "par_never fast", "the settled body's recorded outcome")
      assert.strictEqual(new Set(starts(run.side, "g").map((e) => e.key)).size, 1)
      assert.isAtLeast(starts(run.side, "g").length, 2)
      assert.strictEqual(texts(run.final)[5], "idempotent g")
    }), TIMEOUT)

  it.live(
    "D-22: killed twice while an approval is pending, answered from a third, client-only process: the batch resumes and the write runs once (2 kills)",
    () =>
      Effect.gen(function*() {
        const where = place()
        const batch = {
          sessionId: "s",
          batchId: "ask",
          calls: [call("c0", "par_safe", "r0"), call("c1", "write", "w1"), call("c2", "safe", "r2")]
        }
        const rounds: Array<Round> = []
        const ids: Array<unknown> = []
        for (let i = 0; i < 2; i++) {
          const runner = spawnChild(bundle!, planOf(where, batch, { onPending: "hold" }))
          ids.push(yield* Effect.promise(() => runner.marker("pending")))
          runner.kill()
          const exit = yield* Effect.promise(() => settle(runner))
          assert.strictEqual(exit.signal, "SIGKILL")
          rounds.push({ pid: runner.pid, point: undefined, killed: true, rows: yield* Effect.promise(() => journalRows(where.url, "s", "ask")) })
        }
        const runner = spawnChild(bundle!, planOf(where, batch, { op: "idle" }))
        ids.push(yield* Effect.promise(() => runner.marker("pending")))
        const client = spawnChild(bundle!, planOf(where, batch, { op: "answer" }))
        const answered = yield* Effect.promise(() => client.marker("answered"))
        assert.strictEqual((yield* Effect.promise(() => settle(client))).code, 0)
        const final = (yield* Effect.promise(() => runner.marker("result"))) as ResultLine
        assert.strictEqual((yield* Effect.promise(() => settle(runner))).code, 0)
        rounds.push({ pid: runner.pid, point: undefined, killed: false, rows: yield* Effect.promise(() => journalRows(where.url, "s", "ask")) })
        const side = readSide(where.side)
        clean({ calls: batch.calls, rounds, side, final })
        const pendingIds = ids.map((p) => (p as { id: string }).id)
        assert.strictEqual(new Set(pendingIds).size, 1, "one request, listed again by each runner")
        assert.deepStrictEqual(answered, [pendingIds[0]])
        assert.deepStrictEqual(starts(side, "w1").map((e) => e.pid), [runner.pid], "the write ran once, after the answer")
        assert.strictEqual(starts(side, "r0").length, 1)
        assert.isFalse(has(rounds[1], "intent:1"), "nothing of the write before the answer")
        assert.deepStrictEqual(texts(final), ["par_safe r0", "write w1", "safe r2"])
        const audit = final.records.filter((r) => r.tag.startsWith("approval/")).map((r) => `${r.tag}:${r.id}`)
        assert.deepStrictEqual(audit, [`approval/asked:${pendingIds[0]}`, `approval/decided:${pendingIds[0]}`], "written once")
      }),
    TIMEOUT
  )

  it.live(
    "D-22: answered by a client while no runner is up; the fresh runner resumes; the never write cut mid-body ends OUTCOME_UNKNOWN and runs once (2 kills)",
    () =>
      Effect.gen(function*() {
        const where = place()
        const batch = { sessionId: "s", batchId: "down", calls: [call("c0", "write", "w0"), call("c1", "par_safe", "r1")] }
        const first = spawnChild(bundle!, planOf(where, batch, { onPending: "hold" }))
        yield* Effect.promise(() => first.marker("pending"))
        first.kill()
        yield* Effect.promise(() => settle(first))
        const rounds: Array<Round> = [
          { pid: first.pid, point: undefined, killed: true, rows: yield* Effect.promise(() => journalRows(where.url, "s", "down")) }
        ]
        const client = spawnChild(bundle!, planOf(where, batch, { op: "answer" }))
        const answered = (yield* Effect.promise(() => client.marker("answered"))) as Array<string>
        assert.strictEqual(answered.length, 1)
        yield* Effect.promise(() => settle(client))
        const rest = yield* Effect.promise(() =>
          runChain(bundle!, where, batch, [{ kill: { at: "body", id: "w0" } }, {}], { strict: true })
        )
        const run = { ...rest, rounds: [...rounds, ...rest.rounds] }
        clean(run)
        assert.strictEqual(starts(run.side, "w0").length, 1, "the write ran once")
        assert.strictEqual(starts(run.side, "w0")[0].pid, rest.children[0].pid, "in the runner started after the answer")
        assert.strictEqual(codeOf(run.final, 0), "OUTCOME_UNKNOWN")
        assert.strictEqual(texts(run.final)[1], "par_safe r1")
        assert.strictEqual(run.final.records.filter((r) => r.tag === "approval/decided").length, 1)
      }),
    TIMEOUT
  )

  it.live(
    "D-22: run_code killed after 2 of 4 sub-calls (in the third's gate, then mid-body of the third and the fourth): committed sub-calls are not run again, the program completes (3 kills)",
    () =>
      Effect.gen(function*() {
        const code = `
          const out = []
          for (const [tool, id] of [["safe", "s1"], ["idempotent", "s2"], ["never", "s3"], ["safe", "s4"]]) {
            try { out.push(await tools[tool]({ id })) } catch (error) { out.push("failed: " + error.message) }
          }
          return out.join(" | ")
        `
        const batch = { sessionId: "s", batchId: "code", calls: [runCode("c0", code)], code: true }
        const run = yield* chain(batch, [
          { kill: { at: "gate", id: "s3" } },
          { kill: { at: "body", id: "s3" } },
          { kill: { at: "body", id: "s4" } },
          {}
        ])
        clean(run)
        const first = run.rounds[0]
        assert.isTrue(has(first, "result:c0:code:1") && has(first, "result:c0:code:2"), "2 of 4 committed")
        assert.isFalse(has(first, "intent:c0:code:3"))
        assert.deepStrictEqual(["s1", "s2", "s3", "s4"].map((id) => starts(run.side, id).length), [1, 1, 1, 2])
        const [output] = texts(run.final)
        assert.match(output, /^safe s1 \| idempotent s2 \| failed: .*outcome of this tool call is unknown.* \| safe s4$/)
        const dispatches = run.final.records.filter((r) => r.tag === "tool/code-dispatch").map((r) => r.subCallId)
        assert.deepStrictEqual(dispatches, ["c0:code:1", "c0:code:2", "c0:code:3", "c0:code:4"], "one settle record per sub-call")
      }),
    TIMEOUT
  )

  it.live(
    "D-22: run_code with Promise.all, killed twice mid-body of an idempotent sub-call and once after a never sub-call's effect: same key, OUTCOME_UNKNOWN, parallel sub-calls run once (3 kills)",
    () =>
      Effect.gen(function*() {
        const code = `
          const [a, b] = await Promise.all([tools.par_safe({ id: "p1" }), tools.par_safe({ id: "p2" })])
          const c = await tools.idempotent({ id: "p3" })
          let d
          try { d = await tools.par_never({ id: "p4" }) } catch (error) { d = "failed: " + error.message }
          return [a, b, c, d].join(" | ")
        `
        const batch = { sessionId: "s", batchId: "all", calls: [runCode("c0", code)], code: true }
        const run = yield* chain(batch, [
          { kill: { at: "body", id: "p3" } },
          { kill: { at: "body", id: "p3" } },
          { kill: { at: "bodyEnd", id: "p4" } },
          { op: "idle" }
        ])
        clean(run)
        assert.deepStrictEqual(["p1", "p2", "p3", "p4"].map((id) => starts(run.side, id).length), [1, 1, 3, 1])
        assert.strictEqual(new Set(starts(run.side, "p3").map((e) => e.key)).size, 1, "the idempotent sub-call's key is stable")
        assert.match(texts(run.final)[0], /^par_safe p1 \| par_safe p2 \| idempotent p3 \| failed: .*outcome of this tool call is unknown/)
      }),
    TIMEOUT
  )
})
