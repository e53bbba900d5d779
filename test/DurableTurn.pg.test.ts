/**
 * Durable turns on PostgreSQL (issue 28 "Postgres", D-22, D-24): the runner of
 * `DurableTurnSql.layer()` over a `PgClient` on PGlite (behind its wire server, one runner at a
 * time: PGlite is one session, so its advisory shard locks exclude nothing). The scenarios that
 * need no kill: a completed key, an in-process crash (the layer's scope closed while a body runs)
 * and its resume under each replay policy, Stop and resume, an approval that waits across a
 * restart and is answered through `DurableApprovals`, and records written exactly once.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { afterAll, assert, beforeAll, beforeEach, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import * as DurableTurnSql from "../layers/DurableTurnSql.js"
import * as DurableTurn from "../src/DurableTurn.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import type { ToolResult } from "../src/ToolResult.js"
import { appOver, call, Probe, toolsOf } from "./fixtures/durable.js"
import type { PostgresServer } from "./fixtures/postgres.js"
import { startPostgres } from "./fixtures/postgres.js"

let server: PostgresServer | undefined
beforeAll(async () => {
  server = await startPostgres()
}, 120_000)
afterAll(async () => {
  await server?.stop()
})
beforeEach(async () => {
  await server?.reset()
})

/**
 * The runner over PostgreSQL: engine, journal and the application, as one process builds them.
 * The engine needs more than one connection: it reserves one for its shard locks, so on a pool of
 * one it never completes a batch. PGlite is one session behind its socket server; the fixture's
 * queue keeps a connection's transaction and extended-query cycle together.
 */
const app = (probe: Probe) => {
  if (server === undefined) throw new Error("the PostgreSQL server did not start")
  const client = PgClient.layer({
    host: "127.0.0.1",
    port: server.port,
    username: "postgres",
    database: "postgres",
    maxConnections: 4
  })
  const engine = DurableTurnSql.layer({ pollInterval: "100 millis" }).pipe(Layer.provide(client))
  return appOver(engine, toolsOf(probe))
}

/**
 * Builds a process of the application into a fresh scope: its context and how it "dies". The
 * test's scope closes it too, should the test fail first (a runner left running would go on
 * polling tables the next test drops).
 */
const processOf = (probe: Probe) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const context = yield* Layer.buildWithScope(app(probe), scope)
    return { context, close: Scope.close(scope, Exit.void) }
  })

const codeOf = (result: { readonly isError: boolean; readonly error?: { readonly info?: { readonly code: string } } }) =>
  result.isError ? result.error?.info?.code ?? "error" : "ok"

type Results = ReadonlyArray<{ readonly result: ToolResult }>

/** Each result as its text, or its error code. */
const texts = (batch: { readonly results: Results }) =>
  batch.results.map(({ result }) => {
    if (result.isError) return codeOf(result)
    const first = result.content[0]
    return first?.type === "text" ? first.text : "?"
  })

const label = (record: LogRecord): string =>
  record._tag === "tool/call" || record._tag === "tool/result" ? `${record._tag}:${record.callId}` : record._tag

const key = { sessionId: "pg-s1", batchId: "b1" }

describe("DurableTurn on PostgreSQL (PGlite, single runner)", () => {
  it.scopedLive("D-22: a completed key returns its recorded results and runs nothing, also after a restart", () => {
    const probe = new Probe()
    const calls = [call("c1", "read", { path: "a" }), call("c2", "read", { path: "b" }), call("c3", "nope", {})]
    return Effect.gen(function*() {
      const first = yield* processOf(probe)
      const done = yield* DurableTurn.runBatch(calls, key).pipe(Effect.provide(first.context))
      assert.deepStrictEqual(texts(done), ["read a", "read b", "UNKNOWN_TOOL"])
      const again = yield* DurableTurn.runBatch(calls, key).pipe(Effect.provide(first.context))
      assert.deepStrictEqual(again, done)
      yield* first.close
      const second = yield* processOf(probe)
      const resumed = yield* DurableTurn.resume(key).pipe(Effect.provide(second.context))
      assert.deepStrictEqual(resumed, done)
      assert.deepStrictEqual(probe.runs.map((r) => `${r.tool}:${r.arg}`), ["read:a", "read:b"], "no body ran again")
      const { corrupt, records } = yield* DurableTurn.records(key.sessionId).pipe(Effect.provide(second.context))
      assert.deepStrictEqual(corrupt, [])
      assert.deepStrictEqual(records.map(label), [
        "tool/call:c1",
        "tool/call:c2",
        "tool/result:c1",
        "tool/result:c2",
        "tool/call:c3",
        "tool/result:c3"
      ], "once each, in the in-memory scheduler's order (c3 is exclusive: it starts after the commits)")
      yield* second.close
    })
  })

  for (
    const [policy, expected] of [
      ["never", "OUTCOME_UNKNOWN"],
      ["idempotent", "idempotent x"],
      ["safe", "safe x"]
    ] as const
  ) {
    it.scopedLive(`D-22: a crash while a \`${policy}\` body runs, then the resume (${expected})`, () => {
      const probe = new Probe()
      const calls = [call("c1", "read", { path: "a" }), call("c2", policy, { id: "x" }), call("c3", "read", { path: "c" })]
      return Effect.gen(function*() {
        const first = yield* processOf(probe)
        const fiber = yield* Effect.fork(DurableTurn.runBatch(calls, key).pipe(Effect.provide(first.context)))
        yield* Deferred.await(probe.startedOf("x"))
        yield* first.close
        yield* Deferred.await(probe.abortedOf("x"))
        yield* Fiber.interrupt(fiber)
        yield* Deferred.succeed(probe.gate("x"), undefined)
        const second = yield* processOf(probe)
        const batch = yield* DurableTurn.resume(key).pipe(Effect.provide(second.context))
        assert.deepStrictEqual(texts(batch), ["read a", expected, "read c"])
        assert.isFalse(batch.aborted)
        const runs = probe.runs.filter((r) => r.tool === policy)
        assert.strictEqual(runs.length, policy === "never" ? 1 : 2, "a `never` body is not run again")
        if (policy === "idempotent") assert.strictEqual(runs[1].key, runs[0].key, "the same idempotency key")
        assert.strictEqual(probe.count("read", "a"), 1, "a committed body is not run again")
        assert.strictEqual(probe.count("read", "c"), 1)
        const again = yield* DurableTurn.resume(key).pipe(Effect.provide(second.context))
        assert.deepStrictEqual(again, batch, "the resumed outcome is recorded")
        const { records } = yield* DurableTurn.records(key.sessionId).pipe(Effect.provide(second.context))
        assert.deepStrictEqual(records.map(label), [
          "tool/call:c1",
          "tool/result:c1",
          "tool/call:c2",
          "tool/result:c2",
          "tool/call:c3",
          "tool/result:c3"
        ], "each record once")
        yield* second.close
      })
    })
  }

  it.scopedLive("D-24: a stop (the caller's signal) is journaled: a resume after a restart returns the stopped results", () => {
    const probe = new Probe()
    const calls = [call("c1", "gated", { id: "x" }), call("c2", "never", { id: "y" }), call("c3", "read", { path: "z" })]
    return Effect.gen(function*() {
      const first = yield* processOf(probe)
      const controller = new AbortController()
      const fiber = yield* Effect.fork(
        DurableTurn.runBatch(calls, { ...key, signal: controller.signal }).pipe(Effect.provide(first.context))
      )
      yield* Deferred.await(probe.startedOf("x"))
      controller.abort(new Error("the person pressed stop"))
      yield* Deferred.await(probe.abortedOf("x"))
      yield* Deferred.succeed(probe.gate("x"), undefined)
      const stopped = yield* Fiber.join(fiber)
      assert.isTrue(stopped.aborted)
      assert.deepStrictEqual(stopped.results.map((r) => codeOf(r.result)), [
        "ABORTED",
        "ABORTED_BEFORE_DISPATCH",
        "ABORTED_BEFORE_DISPATCH"
      ])
      yield* first.close
      const second = yield* processOf(probe)
      const again = yield* DurableTurn.resume(key).pipe(Effect.provide(second.context))
      assert.deepStrictEqual(again.results, stopped.results)
      assert.isTrue(again.aborted)
      assert.deepStrictEqual(probe.runs.map((r) => r.arg), ["x"], "no body started after the stop")
      yield* second.close
    })
  })

  it.scopedLive("D-22: an approval waits across a restart; answered through DurableApprovals, the batch resumes and its body runs once", () => {
    const probe = new Probe()
    const calls = [call("c1", "read", { path: "a" }), call("c2", "write", { path: "b" }), call("c3", "read", { path: "c" })]
    const options = { ...key, agent: "main" }
    return Effect.gen(function*() {
      const first = yield* processOf(probe)
      const status = yield* DurableTurn.start(calls, options).pipe(Effect.provide(first.context))
      assert.strictEqual(status._tag, "Suspended")
      yield* first.close
      const second = yield* processOf(probe)
      const pending = yield* DurableTurn.pending.pipe(Effect.provide(second.context))
      assert.deepStrictEqual(pending.map((p) => [p.callId, p.toolName, p.reason]), [["c2", "write", "writes need a yes"]])
      yield* DurableTurn.answer(pending[0].id, "allowed-once").pipe(Effect.provide(second.context))
      const batch = yield* DurableTurn.runBatch(calls, options).pipe(Effect.provide(second.context))
      assert.deepStrictEqual(texts(batch), ["read a", "wrote b", "read c"])
      assert.deepStrictEqual(probe.runs.map((r) => `${r.tool}:${r.arg}`), ["read:a", "write:b", "read:c"])
      assert.deepStrictEqual(yield* DurableTurn.pending.pipe(Effect.provide(second.context)), [])
      const { records } = yield* DurableTurn.records(key.sessionId).pipe(Effect.provide(second.context))
      const tools = records.filter((r) => r._tag === "tool/call" || r._tag === "tool/result")
      assert.deepStrictEqual(tools.map(label), [
        "tool/call:c1",
        "tool/result:c1",
        "tool/call:c2",
        "tool/result:c2",
        "tool/call:c3",
        "tool/result:c3"
      ], "each tool record once")
      const audit = records.filter((r) => r._tag.startsWith("approval/"))
      assert.deepStrictEqual(audit.map((r) => r._tag), ["approval/asked", "approval/decided"], "the audit pair once")
      const refused = yield* Effect.flip(DurableTurn.answer(pending[0].id, "rejected").pipe(Effect.provide(second.context)))
      assert.strictEqual(refused.reason, "Answered")
      yield* second.close
    })
  })
})
