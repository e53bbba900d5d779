/**
 * Runs every benchmark (`npm run bench`), or the ones named on the command line:
 * `npm run bench -- runtime scheduler`; `npm run bench -- compare` runs the side-by-side comparison
 * and `npm run bench -- cluster` the cluster benchmark (only when named). Figures and ratios are
 * measured in the same run; none of this is asserted in the test suite.
 */
import * as agentLoop from "./agentLoop.js"
import * as cluster from "./cluster.js"
import * as codeMode from "./codeMode.js"
import * as codeRuntime from "./codeRuntime.js"
import * as codeSdk from "./codeSdk.js"
import * as compare from "./compare.js"
import * as durable from "./durable.js"
import * as json from "./json.js"
import * as log from "./log.js"
import * as registry from "./registry.js"
import * as runtime from "./runtime.js"
import * as scheduler from "./scheduler.js"
import * as telemetry from "./telemetry.js"
import * as validate from "./validate.js"

const suites: ReadonlyArray<readonly [string, () => Promise<void>]> = [
  ["json", json.run],
  ["validate", validate.run],
  ["registry", registry.run],
  ["runtime", runtime.run],
  ["scheduler", scheduler.run],
  ["log", log.run],
  ["codeSdk", codeSdk.run],
  ["codeRuntime", codeRuntime.run],
  ["codeMode", codeMode.run],
  ["telemetry", telemetry.run],
  ["agentLoop", agentLoop.run],
  ["durable", durable.run]
]

/**
 * Run only when named: the side-by-side comparison builds the package and takes minutes; the
 * cluster benchmark starts a PostgreSQL server and runner processes, and kills some.
 */
const onDemand: ReadonlyArray<readonly [string, () => Promise<void>]> = [["compare", compare.run], ["cluster", cluster.run]]

const wanted = process.argv.slice(2)
const main = async () => {
  console.log(`node ${process.version}, ${new Date().toISOString()}`)
  for (const [name, run] of [...suites, ...onDemand]) {
    if (wanted.length > 0 ? !wanted.includes(name) : onDemand.some(([demand]) => demand === name)) continue
    console.log(`\n=== ${name} ===`)
    await run()
  }
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
