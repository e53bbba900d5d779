import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

/**
 * Test files that need a fresh module graph of their own: they use process-wide state (fake
 * timers, the code runtimes' shared engine, module-level registries) or child processes. The
 * other files' project says `isolate: false`, but the forks pool reads its isolation from the root
 * config only, so every file still runs in a fresh process. Turning it off at the root cut module
 * loading from ~147 s to ~45 s, but one test then hung depending on which files had run before it
 * in the same process (ToolRuntime.checklist, "ask without approval is refused (no service)"), so
 * files keep their own process until that is understood.
 */
const isolated = [
  "test/ApprovalGrants.backends.test.ts",
  "test/ApprovalGrants.test.ts",
  "test/ApprovalService.test.ts",
  "test/CodeMode.test.ts",
  "test/Presets.test.ts",
  "test/TimeoutPolicy.test.ts",
  "test/packaging.test.ts",
  "test/DurableTurn.crash.test.ts",
  "test/Cluster*.test.ts"
]

/**
 * Vitest's default is one worker fewer than there are cores: a single worker on a 2-core CI
 * machine, where most of the suite waits on child processes, sandboxes and sockets rather than
 * on the CPU. Two workers at least.
 */
const workers = Math.max(2, availableParallelism() - 1)

export default defineConfig({
  test: {
    root: fileURLToPath(new URL("..", import.meta.url)),
    maxWorkers: workers,
    minWorkers: 1,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: "isolated", include: isolated } },
      { extends: true, test: { name: "shared", include: ["test/**/*.test.ts"], exclude: isolated, isolate: false } }
    ]
  }
})
