/**
 * A durable turn across three processes — `npm run example:durable`:
 *
 *   1. a runner process starts a turn whose write asks for approval, and exits while it waits;
 *   2. a client-only process (it runs no batch) lists the pending request and answers it;
 *   3. a new runner process resumes the turn to completion: the reads that ran before are not run
 *      again, the write runs once;
 *
 * then the cards a UI rebuilds from the journal are compared with the live ones. Everything lives
 * in one libSQL file in a temporary directory. Each step is this script, started with a role.
 */
import { Effect, Layer, Logger, LogLevel } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { isDeepStrictEqual } from "node:util"
import * as DurableTurnSql from "../layers/DurableTurnSql.js"
import { Presets } from "../layers/index.js"
import * as DurableTurn from "../src/DurableTurn.js"
import { Policy, Presentation, Tool, ToolRegistry } from "../src/index.js"

const [role, dir] = process.argv.slice(2)
const url = (folder: string) => `file:${path.join(folder, "agent.db")}`
const effects = (folder: string) => path.join(folder, "effects.log")
const key = { sessionId: "demo-session", batchId: "turn-1", agent: "main" }
const calls = [
  { callId: "c1", name: "read_file", arguments: "{\"path\":\"notes.txt\"}" },
  { callId: "c2", name: "write_file", arguments: "{\"path\":\"notes.txt\",\"text\":\"approved\"}" },
  { callId: "c3", name: "read_file", arguments: "{\"path\":\"todo.txt\"}" }
]

const toolsFor = (folder: string) => {
  const note = (line: string) => fs.appendFileSync(effects(folder), `${line}\n`)
  const readFile = Tool.defineTool({
    name: "read_file",
    description: "Read a file.",
    parameters: { path: { type: "string", required: true } },
    output: { schema: { type: "string" }, render: (args, value) => [{ type: "text", text: `${args.path}: ${value}` }] },
    isConcurrencySafe: () => true,
    replay: "safe",
    execute: (args) => Effect.sync(() => (note(`read ${args.path}`), `contents of ${args.path}`))
  })
  const writeFile = Tool.defineTool({
    name: "write_file",
    description: "Write a file.",
    parameters: { path: { type: "string", required: true }, text: { type: "string", required: true } },
    output: { schema: { type: "string" }, render: (args) => [{ type: "text", text: `wrote ${args.path}` }] },
    presentCall: (args) => ({ card: "generic", title: `Write ${args.path}`, kind: "edit" }),
    replay: "idempotent",
    execute: (args, ctx) => Effect.sync(() => (note(`write ${args.path} key=${ctx.idempotencyKey?.slice(0, 12)}`), "ok"))
  })
  return [readFile, writeFile]
}

/** The policy every runner registers before it resumes anything: writes ask a person. */
const askOnWrite = Layer.scopedDiscard(Effect.flatMap(ToolRegistry.ToolRegistry, (registry) =>
  registry.onPreExecute((exec, next) =>
    exec.name === "write_file" ? Effect.succeed(Policy.PreDecision.Ask({ reason: "writing a file needs a yes" })) : next
  )))

const runner = (folder: string) =>
  Presets.layerDurable({ url: url(folder), tools: toolsFor(folder), setup: askOnWrite, pollInterval: "200 millis" })

const quiet = Logger.withMinimumLogLevel(LogLevel.Warning)

const start = (folder: string) =>
  Effect.gen(function*() {
    const status = yield* DurableTurn.start(calls, key)
    if (status._tag === "Complete") return console.log("the turn completed without asking")
    for (const request of status.pending) {
      console.log(`  waiting for approval ${request.id.slice(0, 8)}…: ${request.toolName} (${request.reason})`)
    }
  }).pipe(Effect.provide(runner(folder)), quiet)

const answer = (folder: string) =>
  Effect.gen(function*() {
    const pending = yield* DurableTurn.pending
    for (const request of pending) {
      console.log(`  answering ${request.id.slice(0, 8)}… (${request.toolName} ${request.callId}): allowed-once`)
      yield* DurableTurn.answer(request.id, "allowed-once")
    }
  }).pipe(
    Effect.provide(DurableTurn.layerApprovals.pipe(Layer.provideMerge(DurableTurnSql.layerLibsqlClient({ url: url(folder) })))),
    quiet
  )

const resume = (folder: string) =>
  Effect.gen(function*() {
    const batch = yield* DurableTurn.runBatch(calls, key)
    for (const { callId, result } of batch.results) {
      console.log(`  ${callId}: ${result.content.map((block) => block.type === "text" ? block.text : block.type).join(" ")}`)
    }
    const registry = yield* ToolRegistry.ToolRegistry
    const lookup: Presentation.Lookup = (name, agent) => registry.unsafeView(agent).get(name)?.definition
    const live = Presentation.livePresentation(
      batch.results.map(({ callId, index, result }) => ({
        callId,
        name: calls[index]!.name,
        agent: key.agent,
        arguments: Presentation.parseArguments(calls[index]!.arguments),
        result
      })),
      lookup
    )
    const { records } = yield* DurableTurn.records(key.sessionId)
    const replayed = Presentation.replay(records, lookup)
    console.log(`  cards rebuilt from the journal equal the live ones: ${isDeepStrictEqual(replayed, live)}`)
    console.log(`  audit: ${records.filter((r) => r._tag.startsWith("approval/")).map((r) => r._tag).join(", ")}`)
  }).pipe(Effect.provide(runner(folder)), quiet)

const step = (title: string, childRole: string, folder: string) => {
  console.log(title)
  process.stdout.write(
    execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), childRole, folder], {
      encoding: "utf8"
    })
  )
}

const orchestrate = () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "etr-durable-example-"))
  try {
    step("1. runner process: start the turn (it waits for approval, then the process exits)", "start", folder)
    step("2. client-only process: list and answer the pending approval", "answer", folder)
    step("3. new runner process: resume the turn to completion", "resume", folder)
    const lines = fs.readFileSync(effects(folder), "utf8").trim().split("\n")
    console.log("bodies that ran, across the three processes:")
    for (const line of lines) console.log(`  ${line}`)
    const writes = lines.filter((line) => line.startsWith("write")).length
    const reads = lines.filter((line) => line.startsWith("read")).length
    console.log(writes === 1 && reads === 2 ? "every body ran exactly once" : "a body ran more than once")
    process.exitCode = writes === 1 && reads === 2 ? 0 : 1
  } finally {
    fs.rmSync(folder, { recursive: true, force: true })
  }
}

const roles: Record<string, (folder: string) => Effect.Effect<void, unknown>> = { start, answer, resume }
if (role === undefined) orchestrate()
else {
  const run = roles[role]
  if (run === undefined || dir === undefined) throw new Error(`unknown role ${role}`)
  Effect.runPromise(run(dir)).then(() => process.exit(0), (error) => {
    console.error(error)
    process.exit(1)
  })
}
