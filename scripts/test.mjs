/**
 * `npm test`: the typecheck and the test suite side by side (the suite spends much of its time
 * waiting on child processes, sandboxes and sockets, which the typecheck fills); fails when either
 * fails. Arguments go to vitest (`npm test -- test/Json.test.ts`).
 */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"

const require = createRequire(import.meta.url)
const tsc = require.resolve("typescript/bin/tsc")
const vitest = require.resolve("vitest/vitest.mjs")

const run = (script, args) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: "inherit" })
    child.on("error", () => resolve(1))
    child.on("close", (code, signal) => resolve(signal === null ? code ?? 1 : 1))
  })

const [typecheck, suite] = await Promise.all([
  run(tsc, ["-p", "tsconfig.json", "--noEmit"]).then((code) => {
    console.log(code === 0 ? "typecheck: no errors" : "typecheck: FAILED (errors above)")
    return code
  }),
  run(vitest, ["run", "--config", "test/vitest.config.ts", ...process.argv.slice(2)])
])
process.exitCode = typecheck !== 0 ? typecheck : suite
