/**
 * A scripted agent session through the real runtime — no network, no API key:
 *
 *   npm run demo            the story, for a person
 *   npm run demo -- --json  the durable log (JSON) that the story wrote
 *   npm run demo -- --keep  keep the log file (its path is printed)
 *
 * The "model" is a script: a LanguageModel (from @effect/ai) that answers with five messages of
 * tool calls. Everything else is the library: the agent loop asks the model, the scheduler runs
 * each message's calls (reads side by side, writes alone), the rules ask the user,
 * redact secrets and enforce a timeout, every call is written to a SQLite file (libSQL), and the
 * cards a UI would show are rebuilt from that file after it was closed and reopened. Two codas
 * follow: remembered approval grants, and two Code Mode programs in the QuickJS sandbox.
 */
import { Effect, Layer, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { isDeepStrictEqual } from "node:util"
import { ApprovalLayers, InMemoryToolRegistry, TimeoutPolicy } from "../layers/index.js"
import * as ToolCallLogSql from "../layers/ToolCallLogSql.js"
import * as AgentLoop from "../src/AgentLoop.js"
import { IdGenerator, Presentation, type Scheduler, ToolCallLog, ToolRuntime } from "../src/index.js"
import type { ApprovalOutcome } from "../src/Approval.js"
import type { UserMessage } from "../src/Content.js"
import type { CallPresentation, LiveCall } from "../src/Presentation.js"
import type { LogRecord } from "../src/ToolCallLog.js"
import type { ToolResult } from "../src/ToolResult.js"
import { type ApprovalDemo, rememberedGrant } from "./demo/approval.js"
import { type CodeModeDemo, codeModeHeld, codeModeSession } from "./demo/codeMode.js"
import type { Span } from "./demo/timeline.js"
import * as ScriptedModel from "./demo/scriptedModel.js"
import { chart, makeTimeline, overlaps } from "./demo/timeline.js"
import { makeTools, makeWorkspace } from "./demo/tools.js"

export interface DemoOptions {
  /** Print the durable log as JSON instead of the story. */
  readonly json?: boolean | undefined
  /** Keep the log file instead of deleting its temporary directory at the end. */
  readonly keep?: boolean | undefined
  /** Where lines go (default: `console.log`). */
  readonly print?: ((line: string) => void) | undefined
}

export interface DemoReport {
  /** 0 when every check held. */
  readonly exitCode: number
  /** The three reads of the first message ran at the same time. */
  readonly readsOverlapped: boolean
  /** The write of the first message ran with nothing else in flight, after the reads. */
  readonly writeAlone: boolean
  /** The cards rebuilt from the reopened log equal the live ones. */
  readonly replayEqual: boolean
  /** Measured body times of the first message. */
  readonly spans: ReadonlyArray<Span>
  /** Every call's result, by call id. */
  readonly results: Readonly<Record<string, ToolResult>>
  /** Messages delivered to the model after the first message's results. */
  readonly contexts: ReadonlyArray<UserMessage>
  /** What the answered approval requests were, in order. */
  readonly approvals: ReadonlyArray<readonly [callId: string, outcome: ApprovalOutcome]>
  readonly live: ReadonlyArray<CallPresentation>
  readonly replayed: ReadonlyArray<CallPresentation>
  /** The records read back from the reopened file. */
  readonly records: ReadonlyArray<LogRecord>
  /** The approval coda: "always allow" answered once, remembered for the second deploy. */
  readonly rememberedGrant: ApprovalDemo
  /** The Code Mode section: a program stopped at its CPU budget, then one that overlaps two reads. */
  readonly codeMode: CodeModeDemo
  /** The agent loop that drove the session: model requests made, steps run, why it stopped. */
  readonly agentLoop: { readonly requests: number; readonly steps: number; readonly stopReason: string }
  readonly logFile: string
}

/** The script: what the "model" asks for, one message per step. */
const STEPS: ReadonlyArray<{ readonly title: string; readonly calls: ReadonlyArray<Scheduler.ModelToolCall> }> = [
  {
    title: "Look around, then fix the port",
    calls: [
      { callId: "m1-read-readme", name: "read_file", arguments: "{\"path\":\"README.md\"}" },
      { callId: "m1-read-app", name: "read_file", arguments: "{\"path\":\"src/app.ts\"}" },
      { callId: "m1-read-env", name: "read_file", arguments: "{\"path\":\".env\"}" },
      {
        callId: "m1-write-app",
        name: "write_file",
        arguments: "{\"path\":\"src/app.ts\",\"text\":\"export const port = 3000\\n\"}"
      }
    ]
  },
  {
    title: "Clean up",
    calls: [
      { callId: "m2-delete-cache", name: "delete_file", arguments: "{\"path\":\"tmp/cache.json\"}" },
      { callId: "m2-delete-env", name: "delete_file", arguments: "{\"path\":\".env\"}" }
    ]
  },
  {
    title: "Check the docs online",
    calls: [{ callId: "m3-fetch", name: "fetch_url", arguments: "{\"url\":\"https://docs.example/slow\"}" }]
  },
  {
    title: "A confused message",
    calls: [
      { callId: "m4-unknown", name: "launch_rockets", arguments: "{}" },
      { callId: "m4-not-json", name: "read_file", arguments: "{\"path\": \"README.md\"" },
      { callId: "m4-wrong-type", name: "read_file", arguments: "{\"path\":42}" }
    ]
  },
  {
    title: "Run the tests (the user presses Stop 60 ms in)",
    calls: [
      { callId: "m5-tests", name: "run_tests", arguments: "" },
      { callId: "m5-read", name: "read_file", arguments: "{\"path\":\"README.md\"}" }
    ]
  }
]

/** The user's answers to approval requests, by call id. */
const ANSWERS: Readonly<Record<string, ApprovalOutcome>> = {
  "m2-delete-cache": "allowed-once",
  "m2-delete-env": "rejected"
}

const STOP_AFTER_MS = 60

const textOf = (result: ToolResult): string =>
  result.content.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join(" ").replace(
    /\n+$/,
    ""
  ).replaceAll("\n", " ⏎ ")

const describeResult = (result: ToolResult): string => {
  const code = result.isError && result.error.info !== undefined ? ` [${result.error.info.code}]` : ""
  return `${result.isError ? "error" : "ok   "}${code} ${textOf(result)}`
}

const describeCard = (card: CallPresentation | undefined): string => {
  if (card === undefined) return "(no card)"
  const call = "title" in card.call && typeof card.call.title === "string" ? card.call.title : card.call.card
  const result = card.result
  if (result === undefined) return `${call}: no result`
  const content = "content" in result && result.content !== undefined
    ? textOf({ isError: false, value: null, content: result.content })
    : undefined
  return `${call}: ${content ?? result.title ?? result.card}`
}

const clip = (text: string, width: number): string =>
  text.length <= width ? text.padEnd(width) : `${text.slice(0, width - 1)}…`

/**
 * Runs the scripted session and prints it. Resolves with what happened (the demo's test reads
 * it); never rejects for a tool's failure — those are results.
 */
export const main = async (options: DemoOptions = {}): Promise<DemoReport> => {
  const print = options.print ?? ((line: string) => console.log(line))
  const say = options.json === true ? (_line: string) => {} : print
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-tool-runtime-demo-"))
  const logFile = path.join(dir, "session.db")
  const url = `file:${logFile}`
  const timeline = makeTimeline()
  const { lookup, pack } = makeTools(makeWorkspace(timeline))

  const Runtime = Layer.mergeAll(ToolRuntime.layer, TimeoutPolicy.layer, pack).pipe(
    Layer.provideMerge(Layer.mergeAll(
      InMemoryToolRegistry.layer,
      ApprovalLayers.layerInteractive,
      IdGenerator.layerCounter("context-"),
      ToolCallLogSql.layerLibsql({ url })
    ))
  )

  const live: Array<LiveCall> = []
  const results: Record<string, ToolResult> = {}
  const approvals: Array<readonly [string, ApprovalOutcome]> = []
  let spans: ReadonlyArray<Span> = []
  let contexts: ReadonlyArray<UserMessage> = []
  let loopEnd = { steps: 0, stopReason: "(not finished)" }

  // The "model": a scripted LanguageModel that answers each request with the next message of
  // the script. A request waits until the story has printed the previous message's end, then
  // resets the timeline, so each chart shows only its own message's bodies.
  const printed = STEPS.map(() => {
    let done = () => {}
    const promise = new Promise<void>((resolve) => {
      done = resolve
    })
    return { promise, done }
  })
  const model = ScriptedModel.make(STEPS.map((step, n) => () =>
    Effect.promise(() => n === 0 ? Promise.resolve() : printed[n - 1]!.promise).pipe(Effect.map(() => {
      timeline.reset()
      return {
        text: step.title,
        calls: step.calls.map((call) => ({ id: call.callId, name: call.name, arguments: call.arguments }))
      }
    }))
  ))

  const session = Effect.gen(function*() {
    // The user, at the other end of the interactive approval channel.
    const interactive = yield* ApprovalLayers.InteractiveApprovals
    yield* Effect.forkScoped(Stream.runForEach(interactive.arrivals, (pending) => {
      const outcome = ANSWERS[pending.request.callId] ?? "rejected"
      approvals.push([pending.request.callId, outcome])
      const words = outcome === "allowed-once" ? "yes, once" : "no"
      return Effect.zipRight(
        Effect.sync(() =>
          say(`   ? The agent asks to run ${pending.request.toolName} (${pending.request.reason ?? "no reason"}). User: ${words}`)
        ),
        pending.answer(outcome)
      )
    }))

    // The user presses Stop a moment after the tests started running.
    const controller = new AbortController()
    let stop: ReturnType<typeof setTimeout> | undefined
    void timeline.whenStarted("run tests").then(() => {
      stop = setTimeout(() => controller.abort(new Error("the user pressed Stop")), STOP_AFTER_MS)
    })

    const calls = new Map<string, Scheduler.ModelToolCall>()
    yield* AgentLoop.stream({
      agent: "demo-agent",
      prompt: "Fix the port in src/app.ts, clean up, check the docs and run the tests.",
      maxSteps: STEPS.length + 1,
      maxParallel: 4,
      signal: controller.signal,
      batchId: (step) => `message-${step}`
    }).pipe(Stream.runForEach((event) =>
      Effect.sync(() => {
        switch (event._tag) {
          case "StepStarted": {
            const step = STEPS[event.step - 1]
            if (step === undefined) return
            say("")
            say(
              `Message ${event.step} from the model: "${step.title}" (${step.calls.length} tool call${
                step.calls.length === 1 ? "" : "s"
              })`
            )
            return
          }
          case "ToolCall": {
            calls.set(event.call.callId, event.call)
            return
          }
          case "Committed": {
            const call = calls.get(event.commit.callId)!
            results[call.callId] = event.commit.result
            live.push({
              callId: call.callId,
              name: call.name,
              agent: "demo-agent",
              arguments: Presentation.parseArguments(call.arguments),
              result: event.commit.result
            })
            const how = event.commit.synthetic ? " (never started)" : ""
            say(`   ${call.name.padEnd(14)} ${describeResult(event.commit.result)}${how}`)
            return
          }
          case "StepEnded": {
            const n = event.step.step
            if (n === 1) {
              spans = timeline.spans()
              contexts = event.step.contexts
              say("")
              say("   When each tool body ran (measured, 0 = start of the message):")
              for (const line of chart(spans)) say(`     ${line}`)
              say("   The .env file holds a key: a rule replaced it with [redacted] before the model (or the log) saw it.")
              for (const context of event.step.contexts) {
                say(
                  `   After all results, the model is also told: "${
                    textOf({ isError: false, value: null, content: context.content })
                  }"`
                )
              }
            }
            if (n === 4) say("   Each mistake came back to the model as an error result it can read; nothing crashed.")
            if (event.step.aborted) say("   The message was cancelled: the running call was stopped, the rest never started.")
            printed[n - 1]?.done()
            return
          }
          case "Finished": {
            say("")
            loopEnd = { steps: event.summary.steps.length, stopReason: event.summary.stopReason }
            say(`The agent loop ended after ${event.summary.steps.length} model messages (${event.summary.stopReason}).`)
            return
          }
          case "ModelPart":
            return
        }
      })
    ))
    if (stop !== undefined) clearTimeout(stop)
  }).pipe(Effect.scoped)

  const program = Effect.gen(function*() {
    say("effect-tool-runtime demo: a scripted agent, the real runtime, a durable log.")
    say(`The log is written to ${logFile}`)
    yield* session.pipe(Effect.provide(Layer.merge(Runtime, model.layer)))

    // The runtime (and the database) are closed now. Reopen the file and rebuild the cards.
    const contents = yield* ToolCallLog.contents.pipe(Effect.provide(ToolCallLogSql.layerLibsql({ url })))
    return contents
  })

  const contents = await Effect.runPromise(program)
  const livePresentation = Presentation.livePresentation(live, lookup)
  const replayed = Presentation.replay(contents.records, lookup)
  const replayEqual = contents.corrupt.length === 0 && isDeepStrictEqual(replayed, livePresentation)

  const reads = spans.filter((span) => span.label.startsWith("read "))
  const write = spans.find((span) => span.label.startsWith("write "))
  const readsOverlapped = reads.length === 3 &&
    reads.every((a) => reads.every((b) => a === b || overlaps(a, b)))
  const writeAlone = write !== undefined &&
    spans.every((span) => span === write || !overlaps(span, write)) &&
    reads.every((read) => read.end <= write.start)

  say("")
  say(`The database was closed and reopened: ${contents.records.length} records read back.`)
  say("The cards a UI shows, live and rebuilt from the file:")
  const width = 52
  say(`   ${"live".padEnd(width)} | rebuilt from the log`)
  say(`   ${"-".repeat(width)}-+-${"-".repeat(width)}`)
  for (let i = 0; i < Math.max(livePresentation.length, replayed.length); i++) {
    const right = clip(describeCard(replayed[i]), width).trimEnd()
    say(`   ${clip(describeCard(livePresentation[i]), width)} | ${right}`)
  }
  say("")
  say(`Reads ran side by side: ${readsOverlapped ? "yes" : "NO"}. The write ran alone: ${writeAlone ? "yes" : "NO"}.`)
  say(`Rebuilt cards equal the live ones: ${replayEqual ? "yes" : "NO"}.`)

  say("")
  say("Two deploys through the audited approval service; the user answers the first \"always allow\":")
  const granted = await Effect.runPromise(rememberedGrant(say))
  const grantUsed = granted.asked === 1 && granted.audit[1]?.by === `grant:${granted.audit[0]?.remembered}`
  say(`The remembered grant answered the second deploy: ${grantUsed ? "yes" : "NO"}.`)

  say("")
  say("Code Mode: the agent writes programs that call the tools through a generated SDK, in the QuickJS sandbox.")
  const codeMode = await Effect.runPromise(codeModeSession(say))
  const codeModeOk = codeModeHeld(codeMode)
  say(`The endless loop was stopped at its CPU budget and the two reads overlapped: ${codeModeOk ? "yes" : "NO"}.`)

  if (options.json === true) print(JSON.stringify(contents.records, null, 2))
  if (options.keep === true) say(`The log file was kept: ${logFile}`)
  else fs.rmSync(dir, { recursive: true, force: true })

  return {
    exitCode: readsOverlapped && writeAlone && replayEqual && grantUsed && codeModeOk ? 0 : 1,
    readsOverlapped,
    writeAlone,
    replayEqual,
    spans,
    results,
    contexts,
    approvals,
    live: livePresentation,
    replayed,
    records: contents.records,
    logFile,
    agentLoop: { requests: model.requests.length, ...loopEnd },
    rememberedGrant: granted,
    codeMode
  }
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href

if (isEntryPoint) {
  const args = process.argv.slice(2)
  main({ json: args.includes("--json"), keep: args.includes("--keep") }).then(
    (report) => {
      process.exitCode = report.exitCode
    },
    (error: unknown) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
