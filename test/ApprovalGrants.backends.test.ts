/**
 * The shared grants suite (issue 10 item 3): every behaviour of remembered approval grants —
 * matching by tool and by digest, agent scope along the lineage, expiry on the TestClock,
 * revocation, listing, checked input — run against every backend: memory, libSQL `:memory:`
 * through the log's client, a libSQL file and PostgreSQL (PGlite through `@effect/sql-pg`).
 * Then what only the SQL layer has: surviving a reopen, its own migrations table, one database
 * shared with the log, the layout check and corrupt rows.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, HashMap, Layer, Logger, Option, TestClock } from "effect"
import * as path from "node:path"
import * as ApprovalGrantsSql from "../layers/ApprovalGrantsSql.js"
import * as ToolCallLogSql from "../layers/ToolCallLogSql.js"
import * as ApprovalGrants from "../src/ApprovalGrants.js"
import type { Grant, GrantInput, Query } from "../src/ApprovalGrants.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import { call0 } from "./fixtures/toolCallLog.js"
import { exec, freshPostgres, sqlSuite } from "./fixtures/sqlSuite.js"

const { pgServer, tmp } = sqlSuite("approval-grants-backends-")

let files = 0
const freshFile = () => `file:${path.join(tmp, `grants-${++files}.db`)}`

interface Backend {
  readonly name: string
  readonly dialect: "memory" | "sqlite" | "pg"
  /** The shape of the ids this backend hands out. */
  readonly ids: RegExp
  /** A fresh, empty grants layer. */
  readonly grants: Effect.Effect<Layer.Layer<ApprovalGrants.ApprovalGrants, unknown>>
}

interface SqlBackend extends Backend {
  readonly dialect: "sqlite" | "pg"
  /** A `SqlClient` layer on a fresh, empty database; every build is a new connection to it. */
  readonly fresh: Effect.Effect<Layer.Layer<SqlClient.SqlClient, unknown>>
}

const UUID_ID = /^grant-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const memory: Backend = {
  name: "memory",
  dialect: "memory",
  ids: /^grant-\d+$/,
  grants: Effect.succeed(ApprovalGrants.layerMemory)
}

const libsqlShared: Backend = {
  name: "libSQL :memory: (the log's client)",
  dialect: "sqlite",
  ids: UUID_ID,
  grants: Effect.sync(() =>
    ApprovalGrantsSql.layer.pipe(Layer.provide(ToolCallLogSql.layerLibsqlClient({ url: ":memory:" })))
  )
}

const libsqlFile: SqlBackend = {
  name: "libSQL file",
  dialect: "sqlite",
  ids: UUID_ID,
  grants: Effect.sync(() => ApprovalGrantsSql.layerLibsql({ url: freshFile() })),
  fresh: Effect.sync(() => {
    const url = freshFile()
    return ToolCallLogSql.layerLibsqlClient({ url })
  })
}

const postgres: SqlBackend = {
  name: "PostgreSQL",
  dialect: "pg",
  ids: UUID_ID,
  grants: Effect.map(freshPostgres(pgServer), (client) => ApprovalGrantsSql.layer.pipe(Layer.provide(client))),
  fresh: freshPostgres(pgServer)
}

const backends: ReadonlyArray<Backend> = [memory, libsqlShared, libsqlFile, postgres]
const sqlBackends: ReadonlyArray<SqlBackend> = [libsqlFile, postgres]

/** Runs `program` with a fresh grants service of `backend` in context. */
const withGrants = <A, E>(backend: Backend, program: Effect.Effect<A, E, ApprovalGrants.ApprovalGrants>) =>
  Effect.flatMap(backend.grants, (layer) => Effect.provide(program, layer))

const service = ApprovalGrants.ApprovalGrants
const grant = (input: GrantInput) => Effect.flatMap(service, (s) => s.grant(input))
const find = (query: Query) => Effect.flatMap(service, (s) => s.find(query))
const revoke = (id: string) => Effect.flatMap(service, (s) => s.revoke(id))
const list = Effect.flatMap(service, (s) => s.list)

const D1 = "a".repeat(64)
const D2 = "b".repeat(64)

const q = (toolName: string, lineage: ReadonlyArray<string>, argumentsDigest = D1): Query => ({
  toolName,
  lineage,
  argumentsDigest
})

/** The id of the grant `find` returns, or `"none"`. */
const found = (query: Query) =>
  Effect.map(find(query), Option.match({ onNone: () => "none", onSome: (g: Grant) => g.id }))

const failure = <A, R>(effect: Effect.Effect<A, ApprovalGrants.ApprovalGrantsError, R>) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.instanceOf(error, ApprovalGrants.ApprovalGrantsError)
    assert.strictEqual(error._tag, "ApprovalGrantsError")
    return { message: error.message, reason: error.reason }
  })

for (const backend of backends) {
  describe(`ApprovalGrants (${backend.name})`, () => {
    it.effect("a grant comes back with a new id, the Clock's time and only the fields given; frozen", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          yield* TestClock.adjust("1234 millis")
          const g = yield* grant({ toolName: "read" })
          assert.match(g.id, backend.ids)
          assert.deepStrictEqual(g, { id: g.id, toolName: "read", createdAt: 1234 })
          assert.deepStrictEqual(Object.keys(g).sort(), ["createdAt", "id", "toolName"])
          assert.isTrue(Object.isFrozen(g))
          const full = yield* grant({ toolName: "rm", agent: "main", argumentsDigest: D1, ttl: "1 minute" })
          assert.deepStrictEqual(full, {
            id: full.id,
            toolName: "rm",
            agent: "main",
            argumentsDigest: D1,
            createdAt: 1234,
            expiresAt: 61_234
          })
          assert.notStrictEqual(full.id, g.id)
        })
      ))

    it.effect("ids are unique, also for grants stored concurrently", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const grants = yield* Effect.forEach(
            Array.from({ length: 12 }, (_, i) => i),
            (i) => grant({ toolName: `tool-${i}` }),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(new Set(grants.map((g) => g.id)).size, 12)
          const listed = yield* list
          assert.deepStrictEqual(new Set(listed.map((g) => g.id)), new Set(grants.map((g) => g.id)))
          for (const g of grants) assert.match(g.id, backend.ids)
        })
      ))

    it.effect("match by tool: a tool grant matches any arguments of that tool, never another tool", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const g = yield* grant({ toolName: "read" })
          assert.strictEqual(yield* found(q("read", ["main"], D1)), g.id)
          assert.strictEqual(yield* found(q("read", ["main"], D2)), g.id)
          assert.strictEqual(yield* found(q("write", ["main"], D1)), "none")
          assert.strictEqual(yield* found(q("Read", ["main"], D1)), "none")
          const some = yield* find(q("read", ["main"]))
          assert.deepStrictEqual(some, Option.some(g))
        })
      ))

    it.effect("match by digest: a digest grant matches only calls with that argumentsDigest", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const g = yield* grant({ toolName: "rm", argumentsDigest: D1 })
          assert.strictEqual(yield* found(q("rm", ["main"], D1)), g.id)
          assert.strictEqual(yield* found(q("rm", ["main"], D2)), "none")
          assert.strictEqual(yield* found(q("read", ["main"], D1)), "none")
        })
      ))

    it.effect("global vs agent: a global grant matches every lineage (empty too); an agent grant only lineages holding it", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const agentGrant = yield* grant({ toolName: "read", agent: "main" })
          assert.strictEqual(yield* found(q("read", ["main"])), agentGrant.id)
          assert.strictEqual(yield* found(q("read", ["other"])), "none")
          assert.strictEqual(yield* found(q("read", [])), "none")
          const globalGrant = yield* grant({ toolName: "read" })
          assert.strictEqual(yield* found(q("read", ["other"])), globalGrant.id)
          assert.strictEqual(yield* found(q("read", [])), globalGrant.id)
          assert.strictEqual(yield* found(q("read", ["main"])), agentGrant.id)
        })
      ))

    it.effect("lineage: a parent's grant covers its child and grandchild, not a sibling or the parent's parent", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const g = yield* grant({ toolName: "read", agent: "parent" })
          assert.strictEqual(yield* found(q("read", ["parent", "root"])), g.id)
          assert.strictEqual(yield* found(q("read", ["child", "parent", "root"])), g.id)
          assert.strictEqual(yield* found(q("read", ["grandchild", "child", "parent", "root"])), g.id)
          assert.strictEqual(yield* found(q("read", ["sibling", "root"])), "none")
          assert.strictEqual(yield* found(q("read", ["root"])), "none")
          const childOnly = yield* grant({ toolName: "write", agent: "child" })
          assert.strictEqual(yield* found(q("write", ["child", "parent", "root"])), childOnly.id)
          assert.strictEqual(yield* found(q("write", ["parent", "root"])), "none")
        })
      ))

    it.effect("several matches: nearest agent first, then digest over tool, then the earliest; global last", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const lineage = ["child", "parent", "root"]
          const globalDigest = yield* grant({ toolName: "t", argumentsDigest: D1 })
          assert.strictEqual(yield* found(q("t", lineage)), globalDigest.id)
          const rootTool = yield* grant({ toolName: "t", agent: "root" })
          assert.strictEqual(yield* found(q("t", lineage)), rootTool.id)
          const parentTool = yield* grant({ toolName: "t", agent: "parent" })
          const parentTool2 = yield* grant({ toolName: "t", agent: "parent" })
          assert.strictEqual(yield* found(q("t", lineage)), parentTool.id)
          const parentDigest = yield* grant({ toolName: "t", agent: "parent", argumentsDigest: D1 })
          assert.strictEqual(yield* found(q("t", lineage)), parentDigest.id)
          assert.strictEqual(yield* found(q("t", lineage, D2)), parentTool.id)
          const childTool = yield* grant({ toolName: "t", agent: "child" })
          assert.strictEqual(yield* found(q("t", lineage)), childTool.id)
          assert.strictEqual(yield* found(q("t", ["parent", "root"])), parentDigest.id)
          assert.isTrue(yield* revoke(parentTool.id))
          assert.strictEqual(yield* found(q("t", ["parent", "root"], D2)), parentTool2.id)
          assert.strictEqual(yield* found(q("t", ["elsewhere"], D1)), globalDigest.id)
          assert.strictEqual(yield* found(q("t", ["elsewhere"], D2)), "none")
        })
      ))

    it.effect("expiry: a grant with a ttl is live strictly before createdAt + ttl on the TestClock, then gone", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          yield* TestClock.adjust("10 seconds")
          const short = yield* grant({ toolName: "read", ttl: "1 minute" })
          const forever = yield* grant({ toolName: "write" })
          assert.strictEqual(short.expiresAt, 70_000)
          yield* TestClock.adjust(Duration.millis(59_999))
          assert.strictEqual(yield* found(q("read", ["main"])), short.id)
          assert.deepStrictEqual((yield* list).map((g) => g.id), [short.id, forever.id])
          yield* TestClock.adjust("1 millis")
          assert.strictEqual(yield* found(q("read", ["main"])), "none")
          assert.deepStrictEqual((yield* list).map((g) => g.id), [forever.id])
          yield* TestClock.adjust("3650 days")
          assert.strictEqual(yield* found(q("write", ["main"])), forever.id)
        })
      ))

    it.effect("expiry: an expired grant gives way to the next match", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const specific = yield* grant({ toolName: "rm", agent: "main", argumentsDigest: D1, ttl: 1000 })
          const general = yield* grant({ toolName: "rm" })
          assert.strictEqual(yield* found(q("rm", ["main"])), specific.id)
          yield* TestClock.adjust("1 second")
          assert.strictEqual(yield* found(q("rm", ["main"])), general.id)
        })
      ))

    it.effect("ttl forms: millis, bigint nanos, [seconds, nanos], a Duration, a string; fractions round up", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const ttls: ReadonlyArray<readonly [Duration.DurationInput, number]> = [
            [1500, 1500],
            [2_000_000_000n, 2000],
            [[3, 500_000_000], 3500],
            [Duration.minutes(2), 120_000],
            ["5 seconds", 5000],
            [0.25, 1],
            [1n, 1]
          ]
          for (const [ttl, millis] of ttls) {
            const g = yield* grant({ toolName: "read", ttl })
            assert.strictEqual(g.expiresAt, millis)
          }
        })
      ))

    it.effect("ttl checked: zero, negative, NaN, infinite, unparsable or wrongly typed fails with a typed error", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const rule = "approval grant ttl must be a positive, finite duration"
          const cases: ReadonlyArray<readonly [unknown, string]> = [
            [0, `${rule}, not 0`],
            [-5, `${rule}, not -5`],
            [Number.NaN, `${rule}, not NaN`],
            [Number.POSITIVE_INFINITY, `${rule}, not Infinity`],
            [0n, `${rule}, not 0n`],
            [-1n, `${rule}, not -1n`],
            ["forever", `${rule}, not "forever"`],
            ["0 millis", `${rule}, not "0 millis"`],
            ["Infinity", `${rule}, not "Infinity"`],
            [Duration.infinity, `${rule}, not an infinite duration`],
            [Duration.zero, `${rule}, not a zero duration`],
            [[1, 2, 3], `${rule}, not an array`],
            [[-1, 0], `${rule}, not an array`],
            [null, `${rule}, not null`],
            [{ millis: 5 }, `${rule}, not an object`],
            [true, `${rule}, not a boolean`],
            [Number.MAX_VALUE, `${rule}, not one that ends after the largest safe timestamp`]
          ]
          for (const [ttl, message] of cases) {
            const error = yield* failure(grant({ toolName: "read", ttl: ttl as Duration.DurationInput }))
            assert.deepStrictEqual(error, { message, reason: { _tag: "InvalidInput", field: "ttl" } })
          }
          assert.deepStrictEqual(yield* list, [])
        })
      ))

    it.effect("revoke: true once for a live grant, which is then never found; false for unknown, revoked or expired ids", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const a = yield* grant({ toolName: "read" })
          const b = yield* grant({ toolName: "read", agent: "main" })
          const c = yield* grant({ toolName: "write", ttl: "1 second" })
          assert.strictEqual(yield* found(q("read", ["main"])), b.id)
          assert.isTrue(yield* revoke(b.id))
          assert.strictEqual(yield* found(q("read", ["main"])), a.id)
          assert.isFalse(yield* revoke(b.id))
          assert.isFalse(yield* revoke("grant-unknown"))
          assert.isFalse(yield* revoke(""))
          yield* TestClock.adjust("1 second")
          assert.isFalse(yield* revoke(c.id))
          assert.isTrue(yield* revoke(a.id))
          assert.strictEqual(yield* found(q("read", ["main"])), "none")
          assert.deepStrictEqual(yield* list, [])
        })
      ))

    it.effect("list: the live grants in creation order, frozen", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* list, [])
          const grants: Array<Grant> = []
          for (const toolName of ["c", "a", "b", "a"]) grants.push(yield* grant({ toolName }))
          const listed = yield* list
          assert.deepStrictEqual(listed, grants)
          assert.isTrue(Object.isFrozen(listed))
          for (const g of listed) assert.isTrue(Object.isFrozen(g))
          assert.isTrue(yield* revoke(grants[1]!.id))
          assert.deepStrictEqual(yield* list, [grants[0], grants[2], grants[3]])
        })
      ))

    it.effect("text is stored unchanged: unicode, quotes, SQL metacharacters and a __proto__ tool name", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const names = ["ünïcødé 🔧", "it's \"quoted\"", "x'; DROP TABLE approval_grants; --", "__proto__", "%_\\"]
          for (const name of names) {
            const g = yield* grant({ toolName: name, agent: name, argumentsDigest: name })
            assert.strictEqual(yield* found(q(name, [name], name)), g.id)
            assert.strictEqual(yield* found(q(name, [name], `${name}x`)), "none")
          }
          assert.deepStrictEqual((yield* list).map((g) => g.toolName), names)
        })
      ))

    it.effect("bad input fails with a typed error naming the field, and stores nothing", () =>
      withGrants(
        backend,
        Effect.gen(function*() {
          const text = "a non-empty string of well-formed Unicode without NUL characters"
          const cases: ReadonlyArray<readonly [unknown, string, string]> = [
            [{}, "toolName", `approval grant toolName must be ${text}, not undefined`],
            [{ toolName: "" }, "toolName", `approval grant toolName must be ${text}, not an empty string`],
            [{ toolName: 7n }, "toolName", `approval grant toolName must be ${text}, not a bigint`],
            [{ toolName: "a\u0000b" }, "toolName", `approval grant toolName must be ${text}, not a string containing a NUL character`],
            [{ toolName: "a\uD800" }, "toolName", `approval grant toolName must be ${text}, not a string with a lone surrogate`],
            [{ toolName: "t", agent: null }, "agent", `approval grant agent must be ${text}, not null`],
            [{ toolName: "t", agent: "" }, "agent", `approval grant agent must be ${text}, not an empty string`],
            [{ toolName: "t", argumentsDigest: 1 }, "argumentsDigest", `approval grant argumentsDigest must be ${text}, not a number`]
          ]
          for (const [input, field, message] of cases) {
            assert.deepStrictEqual(yield* failure(grant(input as GrantInput)), {
              message,
              reason: { _tag: "InvalidInput", field }
            })
          }
          const queries: ReadonlyArray<readonly [unknown, string, string]> = [
            [{ lineage: [], argumentsDigest: D1 }, "toolName", `approval grant query toolName must be ${text}, not undefined`],
            [{ toolName: "t", lineage: "main", argumentsDigest: D1 }, "lineage", "approval grant query lineage must be an array of at most 10000 agent ids, not a string"],
            [{ toolName: "t", lineage: ["a", 1], argumentsDigest: D1 }, "lineage", `approval grant query lineage[1] must be ${text}, not a number`],
            [{ toolName: "t", lineage: ["a"] }, "argumentsDigest", `approval grant query argumentsDigest must be ${text}, not undefined`]
          ]
          for (const [query, field, message] of queries) {
            assert.deepStrictEqual(yield* failure(find(query as Query)), {
              message,
              reason: { _tag: "InvalidInput", field }
            })
          }
          assert.deepStrictEqual(yield* failure(revoke(42 as unknown as string)), {
            message: "approval grant id must be a string, not a number",
            reason: { _tag: "InvalidInput", field: "id" }
          })
          assert.deepStrictEqual(yield* list, [])
        })
      ))
  })
}

// ---------------------------------------------------------------------------------------------
// SQL only: reopening, migrations, sharing the log's database, layout, corrupt rows
// ---------------------------------------------------------------------------------------------

const onFreshDatabase = <A, E>(backend: SqlBackend, program: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.flatMap(backend.fresh, (client) => Effect.provide(program, client))

/** Opens the grants over the `SqlClient` in context (migration and layout check) and runs `program`. */
const openGrants = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.flatMap(ApprovalGrantsSql.make, (grants) => Effect.provideService(program, service, grants))

const count = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql.unsafe<{ readonly n: unknown }>(`SELECT COUNT(*) AS n FROM ${table}`), (rows) => Number(rows[0]!.n)))

const collectWarnings = () => {
  const warnings: Array<{ readonly message: unknown; readonly sequence: unknown }> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    if (logLevel.label !== "WARN") return
    warnings.push({
      message: Array.isArray(message) ? message[0] : message,
      sequence: Option.getOrUndefined(HashMap.get(annotations, "sequence"))
    })
  })
  return { warnings, layer: Logger.replace(Logger.defaultLogger, logger) }
}

for (const backend of sqlBackends) {
  describe(`ApprovalGrantsSql (${backend.name})`, () => {
    it.effect("grants survive closing and reopening: find still matches, revocations and expiry hold", () =>
      Effect.gen(function*() {
        const client = yield* backend.fresh
        const reopen = <A, E>(program: Effect.Effect<A, E, ApprovalGrants.ApprovalGrants>) =>
          Effect.provide(program, ApprovalGrantsSql.layer.pipe(Layer.provide(client)))
        yield* TestClock.adjust("5 seconds")
        const [kept, expiring, revoked] = yield* reopen(Effect.all([
          grant({ toolName: "read" }),
          grant({ toolName: "rm", agent: "parent", argumentsDigest: D1, ttl: "1 hour" }),
          grant({ toolName: "write", agent: "main" })
        ]))
        assert.isTrue(yield* reopen(revoke(revoked!.id)))
        yield* reopen(Effect.gen(function*() {
          assert.deepStrictEqual(yield* list, [kept, expiring])
          assert.deepStrictEqual(yield* find(q("read", ["x"])), Option.some(kept!))
          assert.deepStrictEqual(yield* find(q("rm", ["child", "parent"])), Option.some(expiring!))
          assert.strictEqual(yield* found(q("write", ["main"])), "none")
          assert.isFalse(yield* revoke(revoked!.id))
        }))
        const later = yield* reopen(grant({ toolName: "read" }))
        assert.isFalse([kept!.id, expiring!.id, revoked!.id].includes(later.id))
        yield* TestClock.adjust("1 hour")
        yield* reopen(Effect.gen(function*() {
          assert.strictEqual(yield* found(q("rm", ["parent"])), "none")
          assert.deepStrictEqual((yield* list).map((g) => g.id), [kept!.id, later.id])
        }))
      }))

    if (backend === libsqlFile) {
      it.effect("layerLibsql: a file reopened by a new layer finds the grants stored before", () =>
        Effect.gen(function*() {
          const url = freshFile()
          const g = yield* grant({ toolName: "read", agent: "main" }).pipe(
            Effect.provide(ApprovalGrantsSql.layerLibsql({ url }))
          )
          const again = yield* find(q("read", ["child", "main"])).pipe(Effect.provide(ApprovalGrantsSql.layerLibsql({ url })))
          assert.deepStrictEqual(again, Option.some(g))
        }))
    }

    it.effect("storing a grant deletes the expired rows; revoking deletes the row", () =>
      onFreshDatabase(
        backend,
        openGrants(Effect.gen(function*() {
          const a = yield* grant({ toolName: "a", ttl: 1000 })
          yield* grant({ toolName: "b", ttl: 2000 })
          yield* grant({ toolName: "c" })
          assert.strictEqual(yield* count(ApprovalGrantsSql.table), 3)
          yield* TestClock.adjust("1 second")
          assert.strictEqual(yield* count(ApprovalGrantsSql.table), 3)
          assert.isFalse(yield* revoke(a.id))
          assert.strictEqual(yield* count(ApprovalGrantsSql.table), 2)
          yield* TestClock.adjust("1 second")
          yield* grant({ toolName: "d" })
          assert.strictEqual(yield* count(ApprovalGrantsSql.table), 2)
          assert.deepStrictEqual((yield* list).map((g) => g.toolName), ["c", "d"])
        }))
      ))

    it.effect("rows hold the grant's columns; NULL for an absent agent, digest or expiry", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* TestClock.adjust("42 millis")
          const [g1, g2] = yield* openGrants(Effect.all([
            grant({ toolName: "read" }),
            grant({ toolName: "rm", agent: "main", argumentsDigest: D1, ttl: 8 })
          ]))
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql.unsafe<Record<string, unknown>>(
            "SELECT seq, id, tool_name, agent, arguments_digest, created_at, expires_at FROM approval_grants ORDER BY seq"
          ).withoutTransform
          assert.deepStrictEqual(
            rows.map((row) => [
              Number(row.seq),
              row.id,
              row.tool_name,
              row.agent,
              row.arguments_digest,
              Number(row.created_at),
              row.expires_at === null ? null : Number(row.expires_at)
            ]),
            [[1, g1!.id, "read", null, null, 42, null], [2, g2!.id, "rm", "main", D1, 42, 50]]
          )
        })
      ))

    it.effect("the migration runs once, in the grants' own migrations table, next to the log's", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openGrants(Effect.void)
          yield* openGrants(Effect.void)
          yield* Effect.flatMap(ToolCallLogSql.make, (log) => log.append(call0))
          const sql = yield* SqlClient.SqlClient
          const migrations = yield* sql.unsafe<{ readonly migration_id: unknown; readonly name: unknown }>(
            "SELECT migration_id, name FROM approval_grants_migrations ORDER BY migration_id"
          )
          assert.deepStrictEqual(migrations.map((row) => [Number(row.migration_id), row.name]), [[1, "create_approval_grants"]])
          const logMigrations = yield* sql.unsafe<{ readonly name: unknown }>("SELECT name FROM tool_call_log_migrations")
          const logNames = logMigrations.map((row) => row.name)
          assert.include(logNames, "create_tool_call_log")
          assert.notInclude(logNames, "create_approval_grants")
          assert.strictEqual(ApprovalGrantsSql.migrationsTable, "approval_grants_migrations")
          assert.strictEqual(ApprovalGrantsSql.table, "approval_grants")
        })
      ))

    it.effect("one database for the log and the grants: both layers over one SqlClient", () =>
      Effect.gen(function*() {
        const client = yield* backend.fresh
        const both = Layer.mergeAll(ToolCallLogSql.layer, ApprovalGrantsSql.layer).pipe(Layer.provide(client))
        const g = yield* Effect.gen(function*() {
          yield* Effect.flatMap(ToolCallLog.ToolCallLog, (log) => log.append(call0))
          return yield* grant({ toolName: "read" })
        }).pipe(Effect.provide(both))
        const [records, again] = yield* Effect.all([
          Effect.flatMap(ToolCallLog.ToolCallLog, (log) => log.records),
          find(q("read", ["main"]))
        ]).pipe(Effect.provide(both))
        assert.deepStrictEqual(records, [call0])
        assert.deepStrictEqual(again, Option.some(g))
      }))

    it.effect("an existing table of another layout is refused at open with its differences", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* exec("CREATE TABLE approval_grants (id TEXT PRIMARY KEY, tool_name TEXT, extra TEXT)")
          const error = yield* failure(openGrants(Effect.void))
          const differences = [
            "missing column \"seq\"",
            "column \"id\" is part of the primary key",
            "missing column \"agent\"",
            "missing column \"arguments_digest\"",
            "missing column \"created_at\"",
            "missing column \"expires_at\"",
            "unexpected column \"extra\""
          ]
          assert.deepStrictEqual(error, {
            message: `approval grants table "approval_grants" has a different layout: ${differences.join("; ")}`,
            reason: { _tag: "TableLayout", table: "approval_grants", differences }
          })
        })
      ))

    it.effect("a view in the table's place is refused", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* exec("CREATE VIEW approval_grants AS SELECT 1 AS seq")
          const error = yield* failure(openGrants(Effect.void))
          assert.deepStrictEqual(error.reason, {
            _tag: "TableLayout",
            table: "approval_grants",
            differences: ["it is a view, not a table"]
          })
        })
      ))

    it.effect("a table dropped after its migration ran fails the next open clearly", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          yield* openGrants(Effect.void)
          yield* exec("DROP TABLE approval_grants")
          const error = yield* failure(openGrants(Effect.void))
          assert.strictEqual(
            error.message,
            "approval grants table \"approval_grants\" has a different layout: it does not exist, although the " +
              "migrations table \"approval_grants_migrations\" records it as created"
          )
        })
      ))

    it.effect("a corrupt row is never matched nor listed, and each read that meets it logs a warning", () =>
      onFreshDatabase(
        backend,
        Effect.gen(function*() {
          const { layer, warnings } = collectWarnings()
          yield* openGrants(Effect.void)
          yield* exec(
            "INSERT INTO approval_grants (id, tool_name, agent, arguments_digest, created_at) VALUES ('grant-bad', 'read', '', NULL, 0)"
          )
          const g = yield* openGrants(grant({ toolName: "read" }))
          const [matched, listed] = yield* openGrants(Effect.all([find(q("read", ["main"])), list])).pipe(
            Effect.provide(layer)
          )
          assert.deepStrictEqual(matched, Option.some(g))
          assert.deepStrictEqual(listed, [g])
          const warning = {
            message: "approval grants skipped a corrupt row (seq 1): stored approval grant row has an empty agent, expected text or NULL",
            sequence: 1
          }
          assert.deepStrictEqual(warnings, [warning, warning])
        })
      ))
  })
}

describe("ApprovalGrantsSql.layerLibsql options", () => {
  const rule = "approval grants url must be a libSQL URL (\"file:<path>\", \":memory:\" or a server URL)"
  const open = (options: unknown) =>
    failure(Effect.provide(list, ApprovalGrantsSql.layerLibsql(options as ApprovalGrantsSql.LibsqlOptions)))

  it.effect("a bad url or authToken fails the layer with reason InvalidOption", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [{ url: "" }, "url", `${rule}, not an empty string`],
        [{ url: "file:" }, "url", `${rule}, not a file: URL without a path`],
        [{ url: 42 }, "url", `${rule}, not number`],
        [{}, "url", `${rule}, not undefined`],
        [null, "url", "approval grants options must be an object, not null"],
        [{ url: ":memory:", authToken: 1 }, "authToken", "approval grants authToken must be a string, not number"]
      ]
      for (const [options, option, message] of cases) {
        assert.deepStrictEqual(yield* open(options), { message, reason: { _tag: "InvalidOption", option } })
      }
    }))

  it.effect("a file in a missing directory fails to open with the grants' own message", () =>
    Effect.gen(function*() {
      const url = `file:${path.join(tmp, "missing", "grants.db")}`
      const error = yield* open({ url })
      assert.isTrue(
        error.message.startsWith(`approval grants could not open "${url}": `),
        error.message
      )
      assert.strictEqual(error.reason, undefined)
    }))

  it.effect("a :memory: database works as a throwaway store", () =>
    Effect.gen(function*() {
      const g = yield* Effect.provide(grant({ toolName: "read" }), ApprovalGrantsSql.layerLibsql({ url: ":memory:" }))
      assert.match(g.id, UUID_ID)
    }))
})
