/**
 * The demo's Code Mode section: the agent sees only `run_code` and an SDK, and writes programs
 * that run in the embedded QuickJS sandbox. Its first program loops forever and is stopped at
 * its CPU budget; its second reads two things at once with `Promise.all`, and the tools' own
 * counters show that both bodies had started before either finished. Last, the same reads as a
 * Python program with `asyncio.gather`, on the Python runtime this machine supports: the
 * bubblewrap-sandboxed subprocess, or Pyodide where the sandbox cannot be built.
 */
import { Context, Deferred, Effect, Layer } from "effect"
import {
  CodeRuntimePyodide,
  CodeRuntimePython,
  CodeRuntimeQuickJs,
  InMemoryToolRegistry,
  ToolCallLogMemory
} from "../../layers/index.js"
import { CodeMode, Scheduler, Tool, ToolCallLog, ToolRegistry, ToolRuntime } from "../../src/index.js"
import type { ToolResult } from "../../src/ToolResult.js"

/** The guest CPU budget of the demo's sandbox (the default is 5 s). */
export const CPU_MS = 200

/** How long a tool body waits for the other one to start before it gives up waiting. */
const GATE_MS = 1_000

/** The model's first program: it never ends. */
export const LOOPING_PROGRAM = [
  "console.log(\"scanning the workspace…\")",
  "let files = 0",
  "while (true) files++"
].join("\n")

/** The model's second program: two reads at once, one line printed, a small value returned. */
export const PARALLEL_PROGRAM = [
  "const [files, readme] = await Promise.all([",
  "  tools.list_files({ dir: \"src\" }),",
  "  tools.read_file({ path: \"README.md\" })",
  "])",
  "console.log(`${files.length} files in src`)",
  "return { files, title: readme.split(\"\\n\")[0] }"
].join("\n")

/** The same reads as a Python program, run on the Python runtime the machine supports. */
export const PYTHON_PROGRAM = [
  "import asyncio",
  "files, readme = await asyncio.gather(",
  "    tools.list_files({'dir': 'src'}),",
  "    tools.read_file({'path': 'README.md'}),",
  ")",
  "print(f'{len(files)} files in src')",
  "return {'files': files, 'title': readme.split('\\n')[0]}"
].join("\n")

class PythonRuntimeName extends Context.Tag("demo/PythonRuntimeName")<PythonRuntimeName, string>() {}

/** The sandboxed subprocess where bubblewrap works here, Python in WebAssembly otherwise. */
const pythonRuntime = CodeRuntimePython.layer().pipe(
  Layer.map((context) => Context.add(context, PythonRuntimeName, "CodeRuntimePython (bubblewrap sandbox)")),
  Layer.orElse(() =>
    CodeRuntimePyodide.layer({ poolSize: 1 }).pipe(
      Layer.map((context) => Context.add(context, PythonRuntimeName, "CodeRuntimePyodide (WebAssembly)"))
    )
  )
)

export interface CodeModeDemo {
  /** The prompt sections the model was given: name, order and text. */
  readonly sections: ReadonlyArray<CodeMode.PromptSection>
  /** The names of the wire schemas the model was given. */
  readonly schemas: ReadonlyArray<string>
  /** The looping program's result. */
  readonly looping: ToolResult
  /** The `CODE_RUN_FAILED` kind of the looping program, read from its message. */
  readonly loopingKind: string | undefined
  /** The parallel program's result. */
  readonly parallel: ToolResult
  /** What the tool bodies did, in order: `start <tool>` / `end <tool>`. */
  readonly events: ReadonlyArray<string>
  /** Both tool bodies had started before either finished. */
  readonly overlapped: boolean
  /** The durable sub-call records of the parallel program, as `<tag> <subCallId>`. */
  readonly records: ReadonlyArray<string>
  /** The Python program: the runtime it ran on, its result, and whether its two reads overlapped. */
  readonly python: { readonly runtime: string; readonly result: ToolResult; readonly overlapped: boolean }
}

const FILES = ["src/app.ts", "src/db.ts", "src/routes.ts"]

/** The two read-only tools; each body waits (bounded) until both bodies have started. */
const makeTools = (events: Array<string>, bothStarted: Deferred.Deferred<void>) => {
  let started = 0
  const body = <A>(name: string, value: A) =>
    Effect.gen(function*() {
      events.push(`start ${name}`)
      if (++started >= 2) yield* Deferred.succeed(bothStarted, undefined)
      yield* Effect.timeoutOption(Deferred.await(bothStarted), GATE_MS)
      events.push(`end ${name}`)
      return value
    })

  const listFiles = Tool.defineTool({
    name: "list_files",
    description: "List the files of a workspace directory.",
    parameters: { dir: { type: "string", required: true } },
    output: {
      schema: { type: "array", items: { type: "string" } },
      render: (_args, files) => [{ type: "text", text: files.join("\n") }]
    },
    isConcurrencySafe: () => true,
    execute: (args) => body("list_files", FILES.filter((file) => file.startsWith(`${args.dir}/`)))
  })

  const readFile = Tool.defineTool({
    name: "read_file",
    description: "Read a file of the workspace.",
    parameters: { path: { type: "string", required: true } },
    output: { schema: { type: "string" }, render: (_args, text) => [{ type: "text", text }] },
    isConcurrencySafe: () => true,
    execute: (args) => body("read_file", args.path === "README.md" ? "# Acme\nA small service.\n" : "")
  })

  return [listFiles, readFile] as const
}

/** The kind in a `code run failed (<kind>): …` message. */
export const failureKind = (result: ToolResult): string | undefined => {
  if (!result.isError || result.error.info?.code !== "CODE_RUN_FAILED") return undefined
  return /^code run failed \(([a-z-]+)\)/.exec(result.error.message)?.[1]
}

/** Every outcome the section shows: the exit code of the demo depends on it. */
export const codeModeHeld = (demo: CodeModeDemo): boolean =>
  demo.overlapped &&
  demo.loopingKind === "timeout" &&
  !demo.parallel.isError &&
  JSON.stringify(demo.parallel.value) ===
    JSON.stringify({ logs: ["3 files in src"], result: { files: FILES, title: "# Acme" } }) &&
  demo.schemas.join() === "run_code" &&
  demo.sections.map((section) => section.name).join() === "tools:code-only,tools:sdk" &&
  demo.records.join() === [
    "tool/code-dispatch-start rc-read:code:1",
    "tool/code-dispatch-start rc-read:code:2",
    "tool/code-dispatch rc-read:code:1",
    "tool/code-dispatch rc-read:code:2"
  ].join() &&
  demo.python.overlapped &&
  JSON.stringify(demo.python.result.isError ? null : demo.python.result.value) ===
    JSON.stringify({ logs: ["3 files in src"], result: { files: FILES, title: "# Acme" } })

const textOf = (result: ToolResult): string =>
  result.content.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join(" ")

const indent = (text: string, prefix: string): ReadonlyArray<string> => text.split("\n").map((line) => `${prefix}${line}`)

/** Runs the section; `say` prints a line of the story. */
export const codeModeSession = (say: (line: string) => void): Effect.Effect<CodeModeDemo> =>
  Effect.gen(function*() {
    const events: Array<string> = []
    const bothStarted = yield* Deferred.make<void>()
    const registry = yield* ToolRegistry.ToolRegistry
    for (const tool of makeTools(events, bothStarted)) yield* registry.register(tool)

    const assembly = yield* CodeMode.assembly("demo-agent")
    const sections = yield* CodeMode.promptSections("demo-agent")
    say(`   The model gets one tool, ${assembly.schemas.map((schema) => schema.name).join(", ")}, and these prompt sections:`)
    for (const section of sections) {
      const lines = section.text.split("\n")
      if (section.name !== "tools:sdk") {
        say(`     ${section.name} (order ${section.order}): ${section.text}`)
        continue
      }
      say(`     ${section.name} (order ${section.order}): "${lines[0]}", the rules, then the declarations, e.g.`)
      const from = lines.indexOf("interface ToolOutputMap {")
      for (const line of lines.slice(from, lines.indexOf("}", from) + 1)) say(`       ${line}`)
      say("       …")
    }

    const run = (callId: string, description: string, code: string) =>
      Effect.map(
        Scheduler.runBatch(
          [{ callId, name: "run_code", arguments: JSON.stringify({ description, code }) }],
          { agent: "demo-agent", batchId: callId }
        ),
        (batch) => batch.results[0]!.result
      )

    say("")
    say("   The model's first program:")
    for (const line of indent(LOOPING_PROGRAM, "     | ")) say(line)
    const looping = yield* run("rc-loop", "Count the files of the workspace", LOOPING_PROGRAM)
    const loopingKind = failureKind(looping)
    say(`   run_code ${looping.isError ? `failed (${loopingKind ?? "no kind"})` : "succeeded"}; what the model reads:`)
    for (const line of indent(textOf(looping), "     > ")) say(line)

    say("")
    say("   Its second program:")
    for (const line of indent(PARALLEL_PROGRAM, "     | ")) say(line)
    const parallel = yield* run("rc-read", "List src and read the README", PARALLEL_PROGRAM)
    say(`   run_code ${parallel.isError ? "failed" : "succeeded"}; what the model reads:`)
    for (const line of indent(textOf(parallel), "     > ")) say(line)

    const overlapped = events.length === 4 && events[0]!.startsWith("start ") && events[1]!.startsWith("start ")
    say(`   The tool bodies, in order: ${events.join(", ")}.`)

    const records = (yield* ToolCallLog.contents).records
      .filter((record) => record._tag === "tool/code-dispatch-start" || record._tag === "tool/code-dispatch")
      .flatMap((record) =>
        "subCallId" in record && record.subCallId.startsWith("rc-read:") ? [`${record._tag} ${record.subCallId}`] : []
      )
    say(`   The log holds one start and one settle record per sub-call: ${records.join(", ")}.`)
    return { sections, schemas: assembly.schemas.map((schema) => schema.name), looping, loopingKind, parallel, events, overlapped, records }
  }).pipe(
    Effect.scoped,
    Effect.provide(ToolRuntime.layer.pipe(Layer.provideMerge(Layer.mergeAll(
      InMemoryToolRegistry.layerCodeMode({ mode: "code" }),
      CodeRuntimeQuickJs.layer({ cpuMs: CPU_MS }),
      ToolCallLogMemory.layer
    )))),
    Effect.flatMap((demo) => Effect.map(pythonSession(say), (python) => ({ ...demo, python }))),
    Effect.orDie
  )

/** The Python part: the same two reads with `asyncio.gather`, on the Python runtime this machine supports. */
const pythonSession = (say: (line: string) => void) =>
  Effect.gen(function*() {
    const events: Array<string> = []
    const bothStarted = yield* Deferred.make<void>()
    const registry = yield* ToolRegistry.ToolRegistry
    for (const tool of makeTools(events, bothStarted)) yield* registry.register(tool)
    const runtime = yield* PythonRuntimeName
    say("")
    say(`   The same reads as a Python program, on ${runtime}:`)
    for (const line of indent(PYTHON_PROGRAM, "     | ")) say(line)
    const batch = yield* Scheduler.runBatch(
      [{ callId: "rc-python", name: "run_code", arguments: JSON.stringify({ description: "List src and read the README", code: PYTHON_PROGRAM }) }],
      { agent: "demo-agent", batchId: "rc-python" }
    )
    const result = batch.results[0]!.result
    say(`   run_code ${result.isError ? "failed" : "succeeded"}; what the model reads:`)
    for (const line of indent(textOf(result), "     > ")) say(line)
    const overlapped = events.length === 4 && events[0]!.startsWith("start ") && events[1]!.startsWith("start ")
    say(`   The tool bodies, in order: ${events.join(", ")}.`)
    return { runtime, result, overlapped }
  }).pipe(
    Effect.scoped,
    Effect.provide(ToolRuntime.layer.pipe(Layer.provideMerge(Layer.mergeAll(
      InMemoryToolRegistry.layerCodeMode({ mode: "code" }),
      pythonRuntime,
      ToolCallLogMemory.layer
    ))))
  )
