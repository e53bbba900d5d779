/**
 * The cluster's engines (issue 27): socket runners over a PostgreSQL server — each runner at its
 * own address, shard ownership held by the database's advisory locks — with the workflow engine,
 * the turn journal and the batch-control route on top; the client-only twin that owns no shard;
 * and the guard that refuses storage whose locks cannot exclude one runner from another.
 *
 * @internal
 */
import * as ClusterWorkflowEngine from "@effect/cluster/ClusterWorkflowEngine"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { DurableTurnError } from "../../../src/internal/durable/errors.js"
import { layerRemoteStop } from "../../../src/internal/cluster/session.js"
import * as DurableTurnSql from "../../DurableTurnSql.js"

/** @internal */
export interface RunnerSettings {
  readonly host: string
  readonly port: number
  readonly shardLockExpiration: Duration.DurationInput
  readonly shardLockRefreshInterval: Duration.DurationInput
  readonly pollInterval: Duration.DurationInput
}

/** @internal */
export const SEVERAL_RUNNERS = "several runners need a PostgreSQL server: shard ownership is held by its advisory locks"

const refuse = (message: string) => new DurableTurnError({ reason: "InvalidOption", message })

/**
 * Refuses, when the layer is built, storage that cannot exclude runners: a SQLite/libSQL file (its
 * locks are per file, not per shard: two runners would both own every shard) and PGlite (behind
 * its socket every connection is one backend session, so its advisory locks exclude nobody).
 *
 * @internal
 */
export const guardSeveralRunners: Layer.Layer<never, DurableTurnError, SqlClient.SqlClient> = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* sql.onDialectOrElse({
      pg: () => Effect.succeed("pg" as const),
      sqlite: () => Effect.succeed("sqlite" as const),
      orElse: () => Effect.succeed("other" as const)
    })
    if (dialect === "sqlite") {
      return yield* refuse(
        `${SEVERAL_RUNNERS}; a SQLite/libSQL file cannot exclude one runner from another (use one runner per file, ` +
          "with ClusterTurns.layerSingle, and client-only processes beside it)"
      )
    }
    if (dialect !== "pg") return yield* refuse(SEVERAL_RUNNERS)
    const rows = yield* sql<{ readonly v: unknown }>`SELECT version() AS v`.withoutTransform.pipe(
      Effect.mapError((error) => new DurableTurnError({ reason: "Storage", message: `cluster: ${error.message}` }))
    )
    const version = typeof rows[0]?.v === "string" ? rows[0].v : ""
    if (version.includes("PGlite")) {
      return yield* refuse(
        `${SEVERAL_RUNNERS}; PGlite serves one session for all connections, so its advisory locks exclude nobody`
      )
    }
  })
)

/** The two-key advisory lock of table creation (apart from the shard locks, which are one-key). */
const TABLES_LOCK = "hashtext('effect-tool-runtime/tables'), 1"

/** An error's message, read defensively (it comes from drivers). */
const messageOf = (error: unknown): string => {
  try {
    const message = (error as { readonly message?: unknown } | null)?.message
    return typeof message === "string" ? message : "an unknown error"
  } catch {
    return "an unknown error"
  }
}

/**
 * Creates the cluster's and the journal's tables one process at a time, under a PostgreSQL
 * advisory lock held on a connection of its own (a pool of its own, closed after: the tables'
 * layers need the main pool's connections while the lock is held); other databases are left to
 * the layers themselves. Runners and clients that start together on a fresh database would
 * otherwise race in `CREATE TABLE IF NOT EXISTS` (`pg_type_typname_nsp_index`) and one of them
 * would fail to start.
 *
 * @internal
 */
export const prepareTables = (
  settings: Pick<RunnerSettings, "shardLockExpiration">,
  sqlLayer: Layer.Layer<SqlClient.SqlClient, unknown>
) =>
  Layer.effectDiscard(
    Effect.scoped(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const pg = yield* sql.onDialectOrElse({ pg: () => Effect.succeed(true), orElse: () => Effect.succeed(false) })
        if (!pg) return
        const own = yield* Effect.map(Layer.build(Layer.fresh(sqlLayer)), Context.get(SqlClient.SqlClient))
        const connection = yield* own.reserve
        yield* connection.executeRaw(`SELECT pg_advisory_lock(${TABLES_LOCK})`, [])
        yield* Effect.addFinalizer(() => Effect.ignore(connection.executeRaw(`SELECT pg_advisory_unlock(${TABLES_LOCK})`, [])))
        const tables = Layer.mergeAll(SqlMessageStorage.layer, SqlRunnerStorage.layer, DurableTurnSql.layerJournal).pipe(
          Layer.provide(ShardingConfig.layer({ shardLockExpiration: settings.shardLockExpiration }))
        )
        yield* Layer.build(tables)
      })
    ).pipe(
      Effect.mapError((error) =>
        error instanceof DurableTurnError
          ? error
          : new DurableTurnError({ reason: "Storage", message: `cluster: ${messageOf(error)}` })
      )
    )
  )

const shardingConfig = (settings: RunnerSettings, runner: boolean) => ({
  entityMessagePollInterval: settings.pollInterval,
  shardLockExpiration: settings.shardLockExpiration,
  shardLockRefreshInterval: settings.shardLockRefreshInterval,
  runnerAddress: runner ? Option.some(RunnerAddress.make(settings.host, settings.port)) : Option.none()
})

const wrap = (layer: Layer.Layer<never, unknown, unknown>) =>
  Layer.mapError(layer, (error) =>
    error instanceof DurableTurnError
      ? error
      : new DurableTurnError({ reason: "Storage", message: `cluster: ${messageOf(error)}` }))

/**
 * A socket runner over the SQL client `sql` (guarded): the cluster, the workflow engine, the
 * journal, and the route that stops a batch where it runs.
 *
 * @internal
 */
export const runnerEngine = (settings: RunnerSettings, sql: Layer.Layer<SqlClient.SqlClient, unknown>) => {
  const storage = prepareTables(settings, sql).pipe(Layer.provideMerge(guardSeveralRunners), Layer.provideMerge(sql))
  const cluster = NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingConfig(settings, true) })
  const engine = Layer.mergeAll(ClusterWorkflowEngine.layer, layerRemoteStop, DurableTurnSql.layerJournal).pipe(
    Layer.provideMerge(cluster),
    Layer.provideMerge(storage)
  )
  return wrap(engine as Layer.Layer<never, unknown, unknown>)
}

/**
 * A client-only process over `sql`: sends to the runners, owns no shard. It counts a runner as
 * alive while its heartbeat is younger than `shardLockExpiration`, so it must be the runners' value
 * (or a dead runner's sessions stay unreachable from here for the difference).
 *
 * @internal
 */
export const clientEngine = (
  settings: Pick<RunnerSettings, "pollInterval" | "shardLockExpiration">,
  sql: Layer.Layer<SqlClient.SqlClient, unknown>
) =>
  wrap(
    NodeClusterSocket.layer({
      clientOnly: true,
      storage: "sql",
      shardingConfig: {
        entityMessagePollInterval: settings.pollInterval,
        shardLockExpiration: settings.shardLockExpiration,
        runnerAddress: Option.none()
      }
    }).pipe(
      Layer.provideMerge(prepareTables(settings, sql).pipe(Layer.provideMerge(sql)))
    ) as Layer.Layer<never, unknown, unknown>
  )
