/**
 * A runner process of the cluster benchmark (`bench/cluster.ts` starts it):
 * `node --import tsx bench/clusterRunner.ts <port> <postgres url> <poll millis>`. One socket runner
 * at 127.0.0.1:<port> with one instant tool that answers with the runner's port; its PostgreSQL
 * connections are named `bench-runner-<port>` (so the benchmark can tell which runner holds which
 * shard lock). Prints `ready <port>` once built; runs until killed.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Redacted from "effect/Redacted"
import * as ClusterTurns from "../layers/ClusterTurns.js"
import { BENCH_TOOL_SET, LOCK_EXPIRATION, LOCK_REFRESH, noopTool } from "./clusterShared.js"

const [portText, url, pollText] = process.argv.slice(2)
const port = Number(portText)

const runner = ClusterTurns.layerRunner({
  sql: PgClient.layer({ url: Redacted.make(url!), maxConnections: 8, applicationName: `bench-runner-${port}` }),
  host: "127.0.0.1",
  port,
  toolSet: BENCH_TOOL_SET,
  tools: [noopTool(port)],
  shardLockExpiration: LOCK_EXPIRATION,
  shardLockRefreshInterval: LOCK_REFRESH,
  pollInterval: Number(pollText)
})

const ready = Layer.effectDiscard(Effect.sync(() => console.log(`ready ${port}`)))

NodeRuntime.runMain(
  Layer.launch(Layer.provideMerge(ready, runner)).pipe(Logger.withMinimumLogLevel(LogLevel.Error)),
  { disablePrettyLogger: true }
)
