/**
 * Durable turns beyond one process (issue 27): agent sessions as `@effect/cluster` entities.
 * Each Layer is one call and makes the process one of:
 *
 * - {@link layerSingle} — **one runner** on a libSQL file (the durable default; no network):
 *   sessions, batches and approvals in one process, client-only processes beside it.
 * - {@link layerRunner} — **one of several runners** over a PostgreSQL server, with socket runners
 *   (`@effect/platform-node`): each runner listens at its own `host`/`port`; shards are spread over
 *   the runners and move to the survivors when one dies (after `shardLockExpiration`).
 * - {@link layerClient} — **a client-only process** over the same PostgreSQL server: starts turns,
 *   lists and answers approvals, owns no shard.
 *
 * A runner builds the tools and policies itself (the options of `Presets.layerDurable`), so every
 * runner of a deployment must be built from the same code: name that code's tool set with
 * `toolSet` (on runners and clients alike) and a message sent for another tool set is refused
 * (`ToolSetMismatch`) instead of running against the wrong tools.
 *
 * Needs the optional peers `@effect/cluster`, `@effect/workflow`, `@effect/rpc`, `@effect/sql`,
 * a driver (`@effect/sql-pg` for PostgreSQL, `@effect/sql-libsql` for the file), and for socket
 * runners `@effect/platform-node` (the 0.108 line: an unpinned install takes 4.x, for Effect 4).
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ApprovalGrants } from "../src/ApprovalGrants.js"
import type { CodeRuntime } from "../src/CodeRuntime.js"
import type { DurableTurnError } from "../src/DurableTurn.js"
import type * as IdGenerator from "../src/IdGenerator.js"
import { layerControl, layerHandlers } from "../src/internal/cluster/session.js"
import type * as Tool from "../src/Tool.js"
import * as ToolSession from "../src/ToolSession.js"
import { clientEngine, runnerEngine } from "./internal/cluster/engine.js"
import { assembleDurable, libsqlEngine } from "./internal/presets/durable.js"
import { readDurableOptions, readKeys } from "./internal/presets/options.js"
import type { DurableLayer, DurableOptions, DurableProvided } from "./Presets.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface SessionOptions {
  /** The name of the tools and policies this process was built with (the same on every process). */
  readonly toolSet?: string | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RunnerOptions<
  T extends Tool.Any = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  G extends Layer.Layer<ApprovalGrants, unknown, unknown> = never,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never,
  S extends Layer.Layer<never, unknown, unknown> = never
> extends Omit<DurableOptions<T, I, G, C, S>, "url" | "authToken">, SessionOptions {
  /** The PostgreSQL server's `SqlClient` (e.g. `PgClient.layer({ url })`): messages, shard locks, journal. */
  readonly sql: Layer.Layer<SqlClient.SqlClient, unknown>
  /** This runner's address, where the other runners reach it: distinct for every runner. */
  readonly host: string
  readonly port: number
  /** How long a dead runner's shards stay locked before a survivor takes them. Default `"15 seconds"`. */
  readonly shardLockExpiration?: Duration.DurationInput | undefined
  /** How often a runner refreshes its shard locks (well below the expiration). Default `"5 seconds"`. */
  readonly shardLockRefreshInterval?: Duration.DurationInput | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ClientOptions extends SessionOptions {
  /** The PostgreSQL server of the runners. */
  readonly sql: Layer.Layer<SqlClient.SqlClient, unknown>
  /** How often the client reads replies the runners wrote. Default `"1 second"`. */
  readonly pollInterval?: Duration.DurationInput | undefined
  /**
   * The runners' `shardLockExpiration` (default `"15 seconds"`, theirs): how long the client still
   * counts a silent runner as alive. Give it the runners' value, or a dead runner's sessions stay
   * unreachable from this client for the difference.
   */
  readonly shardLockExpiration?: Duration.DurationInput | undefined
}


/**
 * What a runner provides: the durable preset's services and the session client.
 *
 * @since 0.1.0
 * @category models
 */
export type RunnerProvided<I = never, G = never, C = never> = DurableProvided<I, G, C> | ToolSession.ToolSessions

type RunnerLayer<T extends Tool.Any, I, G, C, S> = DurableLayer<RunnerProvided<I, G, C>, T, I, G, C, S>

const DEFAULT_EXPIRATION = "15 seconds"
const DEFAULT_REFRESH = "5 seconds"
const DEFAULT_POLL = "1 second"

const die = (message: string) => Layer.die(new Cause.IllegalArgumentException(message))

const duration = (label: string, name: string, value: unknown, fallback: Duration.DurationInput): Duration.Duration | string => {
  if (value === undefined) return Duration.decode(fallback)
  const decoded = Duration.decodeUnknown(value)
  return Option.isSome(decoded) && Duration.isFinite(decoded.value) && Duration.toMillis(decoded.value) > 0
    ? decoded.value
    : `${label} option "${name}" must be a positive finite duration`
}

const toolSetOf = (label: string, value: unknown): string | undefined | { readonly problem: string } =>
  value === undefined || typeof value === "string" ? value : { problem: `${label} option "toolSet" must be a string` }

/** The session handlers, the batch control and the client, over a durable stack. */
const sessions = (stack: Layer.Layer<never, unknown, unknown>, toolSet: string | undefined) =>
  Layer.mergeAll(layerHandlers(toolSet), layerControl, ToolSession.layerClient({ toolSet })).pipe(
    Layer.provideMerge(stack)
  )

/**
 * One runner over a PostgreSQL server, with a socket runner at `host`:`port`: the durable preset
 * (tools, `setup`, approval service, runtime, durable turns) over the cluster's workflow engine,
 * the `ToolSession` entity's handlers and the session client. Building it on storage that cannot
 * exclude runners — a SQLite/libSQL file, PGlite — fails with `DurableTurnError`
 * (`several runners need a PostgreSQL server: …`); so does an unreachable database (after the
 * driver's connect timeout).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerRunner = <
  T extends Tool.Any = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  G extends Layer.Layer<ApprovalGrants, unknown, unknown> = never,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never,
  S extends Layer.Layer<never, unknown, unknown> = never
>(options: RunnerOptions<T, I, G, C, S>): RunnerLayer<T, I, G, C, S> => {
  const label = "ClusterTurns.layerRunner"
  const checked = readDurableOptions(label, options, [
    "sql",
    "host",
    "port",
    "toolSet",
    "shardLockExpiration",
    "shardLockRefreshInterval"
  ])
  if (typeof checked === "string") return die(checked)
  const { extra, read, settings, values } = checked
  if (!Layer.isLayer(extra.sql)) return die(`${label} option "sql" must be a Layer of the SqlClient`)
  if (typeof extra.host !== "string" || extra.host === "") return die(`${label} option "host" must be a non-empty string`)
  const port = extra.port
  if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
    return die(`${label} option "port" must be an integer from 1 to 65535`)
  }
  const toolSet = toolSetOf(label, extra.toolSet)
  if (typeof toolSet === "object") return die(toolSet.problem)
  const expiration = duration(label, "shardLockExpiration", extra.shardLockExpiration, DEFAULT_EXPIRATION)
  const refresh = duration(label, "shardLockRefreshInterval", extra.shardLockRefreshInterval, DEFAULT_REFRESH)
  const poll = duration(label, "pollInterval", settings.pollInterval, DEFAULT_POLL)
  for (const problem of [expiration, refresh, poll]) if (typeof problem === "string") return die(problem)
  if (Duration.greaterThanOrEqualTo(refresh as Duration.Duration, expiration as Duration.Duration)) {
    return die(`${label} option "shardLockRefreshInterval" must be shorter than "shardLockExpiration"`)
  }
  const engine = runnerEngine(
    {
      host: extra.host,
      port,
      shardLockExpiration: expiration as Duration.Duration,
      shardLockRefreshInterval: refresh as Duration.Duration,
      pollInterval: poll as Duration.Duration
    },
    extra.sql as Layer.Layer<SqlClient.SqlClient, unknown>
  )
  const stack = assembleDurable(label, read, values, settings, engine)
  if (typeof stack === "string") return die(stack)
  return sessions(stack, toolSet) as never
}

/**
 * The single runner on a libSQL file (`{ url: "file:agent.db" }`): the durable preset and the
 * sessions, with no network. One runner process per file; client-only processes answer approvals
 * beside it (`DurableTurn.layerApprovals` over `DurableTurnSql.layerLibsqlClient`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSingle = <
  T extends Tool.Any = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  G extends Layer.Layer<ApprovalGrants, unknown, unknown> = never,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never,
  S extends Layer.Layer<never, unknown, unknown> = never
>(options: DurableOptions<T, I, G, C, S> & SessionOptions): RunnerLayer<T, I, G, C, S> => {
  const label = "ClusterTurns.layerSingle"
  const checked = readDurableOptions(label, options, ["url", "authToken", "toolSet"])
  if (typeof checked === "string") return die(checked)
  const { extra, read, settings, values } = checked
  if (typeof extra.url !== "string") return die(`${label} option "url" must be a string`)
  const toolSet = toolSetOf(label, extra.toolSet)
  if (typeof toolSet === "object") return die(toolSet.problem)
  const stack = assembleDurable(
    label,
    read,
    values,
    settings,
    libsqlEngine({ ...settings, url: extra.url, authToken: extra.authToken })
  )
  if (typeof stack === "string") return die(stack)
  return sessions(stack, toolSet) as never
}

/**
 * A client-only process over the runners' PostgreSQL server: the session client (send turns,
 * list and answer approvals, read records, stop batches), owning no shard.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerClient = (options: ClientOptions): Layer.Layer<ToolSession.ToolSessions, DurableTurnError> => {
  const label = "ClusterTurns.layerClient"
  const values = readKeys(label, options, ["sql", "toolSet", "pollInterval", "shardLockExpiration"])
  if (typeof values === "string") return die(values)
  if (!Layer.isLayer(values.sql)) return die(`${label} option "sql" must be a Layer of the SqlClient`)
  const toolSet = toolSetOf(label, values.toolSet)
  if (typeof toolSet === "object") return die(toolSet.problem)
  const poll = duration(label, "pollInterval", values.pollInterval, DEFAULT_POLL)
  if (typeof poll === "string") return die(poll)
  const expiration = duration(label, "shardLockExpiration", values.shardLockExpiration, DEFAULT_EXPIRATION)
  if (typeof expiration === "string") return die(expiration)
  return ToolSession.layerClient({ toolSet }).pipe(
    Layer.provideMerge(
      clientEngine(
        { pollInterval: poll, shardLockExpiration: expiration },
        values.sql as Layer.Layer<SqlClient.SqlClient, unknown>
      )
    )
  ) as never
}
