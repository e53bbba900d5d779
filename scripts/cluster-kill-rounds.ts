/**
 * Sessions on three runner processes over a real PostgreSQL server under many SIGKILLs (issue
 * 27): each round sends a random mix of sessions (the three replay policies, parallel-safe reads,
 * writes that ask for approval and are answered from this client-only process), SIGKILLs a random
 * runner at a random time and restarts it at its address; every round is checked against the
 * invariants of `test/fixtures/cluster.ts` (`violations`). The suite runs a few of these rounds
 * (`test/Cluster.failover.test.ts`); this script runs as many as asked.
 *
 *   npx tsx scripts/cluster-kill-rounds.ts [rounds=100] [--seed N]
 *
 * Prints each broken round and a summary; exits 1 on any violation or error.
 */
import * as fc from "fast-check"
import { killAll } from "../test/fixtures/childProcess.js"
import { arbitraryKillRound, runKillRound, startCluster } from "../test/fixtures/cluster.js"

const args = process.argv.slice(2)
const at = args.indexOf("--seed")
const seed = at >= 0 ? Number(args[at + 1]) : Date.now() % 1_000_000
const rounds = Number(args.find((arg, i) => !arg.startsWith("--") && args[i - 1] !== "--seed") ?? 100)

const main = async () => {
  const started = Date.now()
  const cluster = await startCluster(3)
  let broken = 0
  let calls = 0
  try {
    await cluster.balanced()
    const scenarios = fc.sample(arbitraryKillRound(3), { numRuns: rounds, seed })
    for (const [index, scenario] of scenarios.entries()) {
      calls += scenario.sessions.reduce((sum, session) => sum + session.length, 0)
      const problems = await runKillRound(cluster, scenario, `round-${seed}-${index}`)
      if (problems.length > 0) {
        broken++
        console.log(`round ${index}: ${JSON.stringify(scenario)}\n  ${problems.join("\n  ")}`)
      }
    }
  } finally {
    await cluster.stop()
    killAll()
  }
  console.log(
    `seed ${seed}: ${rounds} SIGKILLs, ${calls} calls, ${broken} broken rounds, ${Math.round((Date.now() - started) / 1000)} s`
  )
  if (broken > 0) process.exitCode = 1
}

main().catch((error) => {
  console.error(error)
  killAll()
  process.exitCode = 1
})
