/**
 * The engine and the journal of durable turns over SQL (DECISIONS D-24): `@effect/workflow`'s
 * `ClusterWorkflowEngine` on `@effect/cluster`'s single-node runner (`SingleRunner`), with the
 * engine's messages, shard locks and the turn journal in one database.
 *
 * - {@link layerLibsql} — the embedded default: a SQLite file through libSQL (`intMode: "bigint"`,
 *   which the engine's ids need; WAL; one connection). **One runner process per file**: any number
 *   of client-only processes ({@link layerLibsqlClient}) may open the same file to answer
 *   approvals and list them.
 * - {@link layer} — over the `SqlClient` you provide (PostgreSQL through `@effect/sql-pg`, or
 *   libSQL opened with `intMode: "bigint"`); {@link layerClient} its client-only twin.
 *
 * A runner sees messages written by other processes (an approval's answer) on its storage poll,
 * every `pollInterval` (default 1 second). Needs the optional peers `@effect/workflow`,
 * `@effect/cluster`, `@effect/rpc`, `@effect/sql` and a driver; on its own subpath.
 *
 * @since 0.1.0
 */
import * as ClusterWorkflowEngine from "@effect/cluster/ClusterWorkflowEngine"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as SqlClient from "@effect/sql/SqlClient"
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { DurableJournal } from "../src/DurableTurn.js"
import { DurableTurnError } from "../src/DurableTurn.js"
import * as journal from "../src/internal/durable/journal.js"
import * as journalSql from "./internal/durable/journalSql.js"
import { openLibsql, readLibsqlOptions } from "./internal/sql/libsql.js"
import type { Subject } from "./internal/sql/messages.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** How often the runner reads messages other processes wrote (answers). Default `"1 second"`. */
  readonly pollInterval?: Duration.DurationInput | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface LibsqlOptions extends Options {
  /** `"file:<path>"` (created when missing), or a libSQL server URL. */
  readonly url: string
  readonly authToken?: string | undefined
}

const subject: Subject<DurableTurnError> = {
  name: "durable turns",
  error: (message, reason) =>
    new DurableTurnError({ message, reason: reason?._tag === "InvalidOption" ? "InvalidOption" : "Storage" })
}

const pollOf = (options: Options | undefined): Duration.Duration => {
  let value: unknown
  try {
    value = options?.pollInterval
  } catch {
    value = null
  }
  if (value === undefined) return Duration.seconds(1)
  const decoded = Duration.decodeUnknown(value)
  if (Option.isNone(decoded) || !Duration.isFinite(decoded.value) || Duration.toMillis(decoded.value) <= 0) {
    throw new DurableTurnError({ message: "durable turns pollInterval must be a positive finite duration", reason: "InvalidOption" })
  }
  return decoded.value
}

/**
 * The journal alone over the `SqlClient` in context (its tables created when needed), for an
 * engine built elsewhere (the cluster's socket runners).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerJournal: Layer.Layer<DurableJournal, DurableTurnError, SqlClient.SqlClient> = Layer.effect(
  journal.DurableJournal,
  Effect.mapError(journalSql.make, (error) => new DurableTurnError({ message: error.message, reason: "Storage" }))
)

const engineLayer = (runner: boolean, poll: Duration.Duration) =>
  ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(
      SingleRunner.layer({
        shardingConfig: runner
          ? { entityMessagePollInterval: poll, entityTerminationTimeout: Duration.zero }
          : { entityMessagePollInterval: poll, entityTerminationTimeout: Duration.zero, runnerAddress: Option.none() },
        runnerStorage: "sql"
      })
    ),
    Layer.mapError((error) => new DurableTurnError({ message: `durable turns engine: ${error.message}`, reason: "Storage" }))
  )

const build = (runner: boolean, options: Options | undefined) =>
  Layer.unwrapEffect(
    Effect.try({ try: () => pollOf(options), catch: (error) => error as DurableTurnError }).pipe(
      Effect.map((poll) => Layer.merge(engineLayer(runner, poll), layerJournal))
    )
  )

/**
 * The runner: the engine (it runs durable batches and resumes the unfinished ones when it starts)
 * and the journal, over the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: Options | undefined
): Layer.Layer<WorkflowEngine | DurableJournal, DurableTurnError, SqlClient.SqlClient> =>
  build(true, options) as Layer.Layer<WorkflowEngine | DurableJournal, DurableTurnError, SqlClient.SqlClient>

/**
 * A client-only process over the `SqlClient` in context: it owns no shard and runs no batch; it
 * answers and lists approvals, and can start batches that a runner runs.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerClient = (
  options?: Options | undefined
): Layer.Layer<WorkflowEngine | DurableJournal, DurableTurnError, SqlClient.SqlClient> =>
  build(false, options) as Layer.Layer<WorkflowEngine | DurableJournal, DurableTurnError, SqlClient.SqlClient>

const libsqlClient = (options: LibsqlOptions): Layer.Layer<SqlClient.SqlClient, DurableTurnError> =>
  Layer.scoped(
    SqlClient.SqlClient,
    Effect.flatMap(readLibsqlOptions(subject, options, true), (read) => openLibsql(subject, read, "bigint"))
  )

/**
 * The embedded default: the runner on a libSQL file (`{ url: "file:agent.db" }`). Also provides
 * the `SqlClient`, for an application that shares the database.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLibsql = (
  options: LibsqlOptions
): Layer.Layer<WorkflowEngine | DurableJournal | SqlClient.SqlClient, DurableTurnError> =>
  layer(options).pipe(Layer.provideMerge(libsqlClient(options)))

/**
 * A client-only process on the runner's libSQL file: answers and lists approvals.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLibsqlClient = (
  options: LibsqlOptions
): Layer.Layer<WorkflowEngine | DurableJournal | SqlClient.SqlClient, DurableTurnError> =>
  layerClient(options).pipe(Layer.provideMerge(libsqlClient(options)))
