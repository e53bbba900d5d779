/**
 * One runner of the cluster example: `node --import tsx examples/cluster/runner.ts <port> <postgres url> <side file>`.
 * A socket runner at 127.0.0.1:<port> over the PostgreSQL server, built from the shared tool set
 * and policy. Prints `ready <port> <pid>` once its layer is built, then serves until it is killed
 * (SIGTERM/SIGINT shut it down gracefully, releasing its shards; SIGKILL is the crash).
 * `RUNNER_LOG=debug` shows the cluster's own logs (warnings and errors only otherwise).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ClusterTurns from "../../layers/ClusterTurns.js"
import {
  askOnDeploy,
  POLL,
  SHARD_LOCK_EXPIRATION,
  SHARD_LOCK_REFRESH,
  sqlLayer,
  TOOL_SET,
  toolsFor
} from "./shared.js"

const [portText, url, effects] = process.argv.slice(2)
const port = Number(portText)
if (!Number.isInteger(port) || url === undefined || effects === undefined) {
  console.error("usage: runner.ts <port> <postgres url> <side file>")
  process.exit(2)
}

const runner = ClusterTurns.layerRunner({
  sql: sqlLayer(url),
  host: "127.0.0.1",
  port,
  toolSet: TOOL_SET,
  tools: toolsFor(port, effects),
  setup: askOnDeploy,
  shardLockExpiration: SHARD_LOCK_EXPIRATION,
  shardLockRefreshInterval: SHARD_LOCK_REFRESH,
  pollInterval: POLL
})

const ready = Layer.effectDiscard(Effect.sync(() => console.log(`ready ${port} ${process.pid}`)))

NodeRuntime.runMain(
  Layer.launch(Layer.provideMerge(ready, runner)).pipe(Logger.withMinimumLogLevel(process.env.RUNNER_LOG === "debug" ? LogLevel.Debug : LogLevel.Warning)),
  { disablePrettyLogger: true }
)
