/**
 * The child process of the compiled side of `bench/compare.ts`: compiled by tsc into a temporary
 * directory and run there under plain node, it measures the same cases and prints the report as
 * one JSON line on stdout.
 */
import { defaultPlan, measure } from "./compareCases.js"

const rounds = Number(process.argv[2])
const plan = Number.isInteger(rounds) && rounds > 0 ? { ...defaultPlan, rounds } : defaultPlan

measure("compiled", plan).then(
  (report) => {
    process.stdout.write(`${JSON.stringify(report)}\n`)
  },
  (error) => {
    console.error(error)
    process.exitCode = 1
  }
)
