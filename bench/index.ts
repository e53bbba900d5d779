/**
 * Runs every benchmark (`npm run bench`), or the ones named on the command line:
 * `npm run bench -- runtime scheduler`. Figures and ratios are measured in the same run; none
 * of this is asserted in the test suite.
 */
import * as codeMode from "./codeMode.js"
import * as codeRuntime from "./codeRuntime.js"
import * as codeSdk from "./codeSdk.js"
import * as json from "./json.js"
import * as log from "./log.js"
import * as registry from "./registry.js"
import * as runtime from "./runtime.js"
import * as scheduler from "./scheduler.js"
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
  ["codeMode", codeMode.run]
]

const wanted = process.argv.slice(2)
const main = async () => {
  console.log(`node ${process.version}, ${new Date().toISOString()}`)
  for (const [name, run] of suites) {
    if (wanted.length > 0 && !wanted.includes(name)) continue
    console.log(`\n=== ${name} ===`)
    await run()
  }
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
