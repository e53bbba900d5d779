/**
 * Issue 27: the session entity on the single runner (`ClusterTurns.layerSingle`, a libSQL file, no
 * network) — a batch through approvals, unknown sessions, malformed and hostile batches — and the
 * layers that must refuse: several runners on storage that cannot exclude them (a libSQL file,
 * PGlite), an unreachable database (a typed error at build, not a hang), unusable options.
 */
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Cause, Duration, Effect, Exit, Layer, ManagedRuntime, Redacted } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import * as ClusterTurns from "../layers/ClusterTurns.js"
import type { ModelToolCall } from "../src/Scheduler.js"
import * as ToolSession from "../src/ToolSession.js"
import { askOnWrite, clusterTools, readSide, TOOL_SET } from "./fixtures/clusterApp.js"
import * as Hostile from "./fixtures/hostile.js"
import { startPostgres } from "./fixtures/postgres.js"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-cluster-single-"))
const side = path.join(dir, "side.jsonl")
const app = ClusterTurns.layerSingle({
  url: `file:${path.join(dir, "agent.db")}`,
  tools: clusterTools(side, 0),
  setup: askOnWrite,
  toolSet: TOOL_SET,
  pollInterval: "50 millis"
})
let runtime: ManagedRuntime.ManagedRuntime<ClusterTurns.RunnerProvided, unknown>

beforeAll(async () => {
  runtime = ManagedRuntime.make(app)
  await runtime.runtime()
}, 30_000)

afterAll(async () => {
  await runtime?.dispose()
  fs.rmSync(dir, { recursive: true, force: true })
})

const sessions = <A, E>(f: (service: ToolSession.Service) => Effect.Effect<A, E>) =>
  runtime.runPromise(Effect.flatMap(ToolSession.ToolSessions, f))

const failureOf = async <A>(
  f: (service: ToolSession.Service) => Effect.Effect<A, ToolSession.ToolSessionError>
): Promise<ToolSession.ToolSessionError> => {
  const exit = await runtime.runPromiseExit(Effect.flatMap(ToolSession.ToolSessions, f))
  if (Exit.isSuccess(exit)) assert.fail("expected a failure")
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "None") assert.fail(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return failure.value as ToolSession.ToolSessionError
}

const call = (callId: string, name: string, args: Record<string, unknown>): ModelToolCall => ({
  callId,
  name,
  arguments: JSON.stringify(args)
})

describe("ClusterTurns.layerSingle: sessions on one runner", () => {
  it("issue 27: start waits for a person, pending lists the request of that session only, answer resumes the batch, runBatch returns the same outcome and records hold each call once", async () => {
    const calls = [call("c0", "read", { id: "one/0" }), call("c1", "write", { id: "one/1" })]
    const status = await sessions((s) => s.start("one", calls, { batchId: "b1", agent: "main" }))
    assert.strictEqual(status._tag, "Suspended")
    const pending = await sessions((s) => s.pending("one"))
    assert.deepStrictEqual(pending.map((p) => [p.sessionId, p.batchId, p.callId, p.toolName]), [["one", "b1", "c1", "write"]])
    assert.deepStrictEqual(
      Object.keys(pending[0]!).sort(),
      ["agent", "argumentsDigest", "askedAt", "batchId", "call", "callId", "expiresAt", "id", "reason", "sessionId", "toolName"],
      "the request as PendingApproval declares it"
    )
    assert.deepStrictEqual(await sessions((s) => s.pending("another")), [])
    await sessions((s) => s.answer("one", pending[0]!.id, "allowed-once"))
    const batch = await sessions((s) => s.runBatch("one", calls, { batchId: "b1", agent: "main" }))
    assert.deepStrictEqual(batch.results.map((r) => [r.callId, r.result.isError]), [["c0", false], ["c1", false]])
    const again = await sessions((s) => s.runBatch("one", calls, { batchId: "b1", agent: "main" }))
    assert.deepStrictEqual(again.results, batch.results, "a finished batch returns its recorded outcome")
    assert.strictEqual(readSide(side).filter((e) => e.ev === "start" && e.id.startsWith("one/")).length, 2, "each body ran once")
    const { corrupt, records } = await sessions((s) => s.records("one"))
    assert.deepStrictEqual(corrupt, [])
    assert.deepStrictEqual(
      records.filter((r) => r._tag === "tool/call" || r._tag === "tool/result").map((r) => `${r._tag} ${(r as { index: number }).index}`),
      ["tool/call 0", "tool/result 0", "tool/call 1", "tool/result 1"]
    )
    const answeredTwice = await failureOf((s) => s.answer("one", pending[0]!.id, "rejected"))
    assert.strictEqual(answeredTwice.reason, "NotFound", "an answered request is no longer pending in the session")
  })

  it("issue 27: a message for an unknown session — no pending requests, no records, answer and stop are NotFound", async () => {
    assert.deepStrictEqual(await sessions((s) => s.pending("nobody")), [])
    const { corrupt, records } = await sessions((s) => s.records("nobody"))
    assert.deepStrictEqual([records.length, corrupt.length], [0, 0])
    const answer = await failureOf((s) => s.answer("nobody", "no-such-request", "allowed-once"))
    assert.deepStrictEqual([answer._tag, answer.reason], ["ToolSessionError", "NotFound"])
    const stop = await failureOf((s) => s.stop("nobody", "b1"))
    assert.deepStrictEqual([stop._tag, stop.reason], ["ToolSessionError", "NotFound"])
  })

  it("issue 27: a request of another session cannot be answered through this one", async () => {
    const calls = [call("c0", "write", { id: "two/0" })]
    const status = await sessions((s) => s.start("two", calls, { batchId: "b1", agent: "main" }))
    assert.strictEqual(status._tag, "Suspended")
    const [request] = await sessions((s) => s.pending("two"))
    const wrong = await failureOf((s) => s.answer("one", request!.id, "allowed-once"))
    assert.strictEqual(wrong.reason, "NotFound")
    await sessions((s) => s.answer("two", request!.id, "rejected"))
    const batch = await sessions((s) => s.runBatch("two", calls, { batchId: "b1", agent: "main" }))
    assert.isTrue(batch.results[0]!.result.isError, "the rejection decided the write")
    assert.strictEqual(readSide(side).filter((e) => e.id === "two/0").length, 0, "a rejected write never ran")
  })

  it("issue 27: malformed batches are refused with InvalidOption before anything is sent", async () => {
    const good = [call("c0", "read", { id: "bad/0" })]
    const cases: ReadonlyArray<readonly [string, (s: ToolSession.Service) => Effect.Effect<unknown, ToolSession.ToolSessionError>]> = [
      ["calls not an array", (s) => s.runBatch("bad", "nope" as never, { batchId: "b1" })],
      ["a call without arguments", (s) => s.runBatch("bad", [{ callId: "c0", name: "read" }] as never, { batchId: "b1" })],
      ["a call with numeric callId", (s) => s.runBatch("bad", [{ callId: 7, name: "read", arguments: "{}" }] as never, { batchId: "b1" })],
      ["no batchId", (s) => s.runBatch("bad", good, {} as never)],
      ["an empty batchId", (s) => s.start("bad", good, { batchId: "" })],
      ["an empty session id", (s) => s.runBatch("", good, { batchId: "b1" })],
      ["a session id that is not a string", (s) => s.pending(42 as never)],
      ["maxParallel 0", (s) => s.runBatch("bad", good, { batchId: "b1", maxParallel: 0 })],
      ["an answer that is not one", (s) => s.answer("bad", "id", "maybe" as never)]
    ]
    for (const [name, run] of cases) {
      const error = await failureOf(run)
      assert.strictEqual(error._tag, "ToolSessionError", name)
      assert.include(["InvalidOption", "InvalidAnswer"], error.reason, name)
    }
    assert.deepStrictEqual(await sessions((s) => s.records("bad")), { records: [], corrupt: [] }, "nothing reached the session")
  })

  it("issue 27: hostile calls, options and answers (throwing proxies, null prototypes, bigint, __proto__ keys) give typed errors, never a defect", async () => {
    for (const kind of Hostile.kinds) {
      const runs: ReadonlyArray<readonly [boolean, (s: ToolSession.Service) => Effect.Effect<unknown, ToolSession.ToolSessionError>]> = [
        [true, (s) => s.runBatch("hostile", Hostile.make(kind) as never, { batchId: "b1" })],
        [false, (s) => s.runBatch("hostile", [Hostile.make(kind, { callId: "c0", name: "read", arguments: "{}" })] as never, { batchId: "b1" })],
        [true, (s) => s.start("hostile", [call("c0", "read", { id: "h" })], Hostile.make(kind, { batchId: 1n }) as never)],
        [true, (s) => s.answer("hostile", "id", Hostile.make(kind, { outcome: "allowed-once" }) as never)]
      ]
      for (const [mustFail, run] of runs) {
        const exit = await runtime.runPromiseExit(Effect.flatMap(ToolSession.ToolSessions, run))
        if (Exit.isSuccess(exit)) {
          assert.isFalse(mustFail, `${kind}: expected a typed failure`)
          continue
        }
        const failure = Cause.failureOption(exit.cause)
        assert.isTrue(failure._tag === "Some", `${kind}: a typed failure, not ${Cause.pretty(exit.cause).slice(0, 200)}`)
      }
    }
  })
})

const buildExit = <A, E>(layer: Layer.Layer<A, E>) => Effect.runPromiseExit(Effect.scoped(Layer.build(layer)))

const failureMessage = <A, E>(exit: Exit.Exit<A, E>): { readonly tag: string; readonly reason: string; readonly message: string } => {
  if (Exit.isSuccess(exit)) assert.fail("expected the layer to fail")
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "None") assert.fail(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  const error = failure.value as { _tag: string; reason: string; message: string }
  return { tag: error._tag, reason: error.reason, message: error.message }
}

const closedPort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 1))
    })
  })

describe("ClusterTurns: layers that must refuse", () => {
  const runnerOn = (sql: Layer.Layer<never, unknown, never> | Layer.Layer<import("@effect/sql/SqlClient").SqlClient, unknown>) =>
    ClusterTurns.layerRunner({ sql: sql as never, host: "127.0.0.1", port: 1, tools: clusterTools(side, 1), toolSet: TOOL_SET })

  it("issue 27: several runners over a libSQL file are refused with a typed error that says why", async () => {
    const file = path.join(dir, "shared.db")
    const exit = await buildExit(runnerOn(LibsqlClient.layer({ url: `file:${file}` })))
    const error = failureMessage(exit)
    assert.deepStrictEqual([error.tag, error.reason], ["DurableTurnError", "InvalidOption"])
    assert.include(error.message, "several runners need a PostgreSQL server")
    assert.include(error.message, "a SQLite/libSQL file cannot exclude one runner from another")
  })

  it("issue 27: several runners over PGlite are refused (one backend session for every connection: its advisory locks exclude nobody)", async () => {
    const pglite = await startPostgres()
    try {
      const exit = await buildExit(runnerOn(pglite.client))
      const error = failureMessage(exit)
      assert.deepStrictEqual([error.tag, error.reason], ["DurableTurnError", "InvalidOption"])
      assert.include(error.message, "PGlite serves one session for all connections")
    } finally {
      await pglite.stop()
    }
  }, 30_000)

  it("issue 27: a runner whose database is unreachable fails at build with a typed Storage error, not a hang", async () => {
    const port = await closedPort()
    const started = Date.now()
    const sql = PgClient.layer({ url: Redacted.make(`postgres://postgres@127.0.0.1:${port}/postgres`), connectTimeout: Duration.seconds(2) })
    const exit = await buildExit(runnerOn(sql))
    const error = failureMessage(exit)
    assert.deepStrictEqual([error.tag, error.reason], ["DurableTurnError", "Storage"])
    assert.isBelow(Date.now() - started, 20_000, "it fails within the driver's connect timeout, it does not hang")
    const client = failureMessage(await buildExit(ClusterTurns.layerClient({ sql })))
    assert.deepStrictEqual([client.tag, client.reason], ["DurableTurnError", "Storage"])
  }, 30_000)

  it("issue 27: unusable options are defects that name the option", async () => {
    const sql = LibsqlClient.layer({ url: `file:${path.join(dir, "options.db")}` })
    const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["\"host\" must be a non-empty string", { host: "" }],
      ["\"port\" must be an integer from 1 to 65535", { port: 70000 }],
      ["\"shardLockExpiration\" must be a positive finite duration", { shardLockExpiration: "forever" }],
      ["\"shardLockRefreshInterval\" must be shorter than \"shardLockExpiration\"", { shardLockExpiration: "5 seconds", shardLockRefreshInterval: "5 seconds" }],
      ["\"toolSet\" must be a string", { toolSet: 7 }],
      ["\"sql\" must be a Layer of the SqlClient", { sql: "postgres://" }]
    ]
    for (const [message, override] of cases) {
      const exit = await buildExit(ClusterTurns.layerRunner({ sql, host: "127.0.0.1", port: 1, ...override } as never))
      if (Exit.isSuccess(exit)) assert.fail(`${message}: expected a defect`)
      const defect = Cause.dieOption(exit.cause)
      assert.isTrue(defect._tag === "Some" && defect.value instanceof Cause.IllegalArgumentException, message)
      assert.include((defect as { value: Error }).value.message, message)
    }
  })
})
