/**
 * The demo's pretend workspace: a few tools and the rules around them. Nothing touches the real
 * file system or the network; bodies sleep a little real time so the timeline has something to
 * show.
 */
import { Effect, Layer } from "effect"
import { Policy, Tool, ToolRegistry } from "../../src/index.js"
import type { Timeline } from "./timeline.js"

/** The files of the pretend workspace. */
const FILES: Readonly<Record<string, string>> = {
  "README.md": "# Acme\nA small service.\n",
  "src/app.ts": "export const port = 8080\n",
  ".env": "DATABASE_URL=postgres://app@db/acme\nAPI_KEY=sk-live-4f9a2c\n"
}

/** Text that must never reach the model. */
const SECRET = /(API_KEY|PASSWORD|TOKEN)=\S+/g

/** How long a read takes, and how long every read waits for the others to start (a gate). */
const READ_MS = 40
const GATE_MS = 500

export interface Workspace {
  /** Start/end times of every body, measured. */
  readonly timeline: Timeline
  /** Resolves once `count` read bodies have started (or after a safety delay). */
  readonly readsStarted: (count: number) => Effect.Effect<void>
}

export const makeWorkspace = (timeline: Timeline): Workspace => {
  let started = 0
  const waiters = new Set<() => void>()
  return {
    timeline,
    readsStarted: (count) =>
      Effect.async<void>((resume) => {
        started++
        if (started >= count) {
          for (const wake of [...waiters]) wake()
          resume(Effect.void)
          return
        }
        const wake = () => {
          clearTimeout(timer)
          waiters.delete(wake)
          resume(Effect.void)
        }
        const timer = setTimeout(wake, GATE_MS)
        waiters.add(wake)
        return Effect.sync(() => {
          clearTimeout(timer)
          waiters.delete(wake)
        })
      })
  }
}

export const makeTools = (workspace: Workspace) => {
  const { timeline } = workspace

  const readFile = Tool.defineTool({
    name: "read_file",
    description: "Read a file of the workspace.",
    parameters: { path: { type: "string", required: true } },
    output: {
      schema: {
        type: "object",
        additionalProperties: false,
        properties: { path: { type: "string", required: true }, text: { type: "string", required: true } }
      },
      render: (_args, value) => [{ type: "text", text: value.text }],
      presentationMeta: (_args, value) => ({ lines: value.text.split("\n").length - 1 })
    },
    isConcurrencySafe: () => true,
    presentCall: (args) => ({ card: "generic", title: `Read ${args.path}`, kind: "read" }),
    presentResult: (args, result) => ({
      card: "generic",
      title: result.isError ? `Could not read ${args.path}` : `Read ${args.path}`,
      content: result.content
    }),
    execute: (args, ctx) =>
      timeline.measure(
        ctx.callId,
        `read ${args.path}`,
        Effect.gen(function*() {
          yield* workspace.readsStarted(3)
          yield* Effect.sleep(READ_MS)
          const text = FILES[args.path]
          if (text === undefined) return yield* Effect.fail(new Error(`no such file: ${args.path}`))
          return { path: args.path, text }
        })
      )
  })

  const writeFile = Tool.defineTool({
    name: "write_file",
    description: "Write a file of the workspace.",
    parameters: { path: { type: "string", required: true }, text: { type: "string", required: true } },
    output: {
      schema: { type: "integer" },
      render: (args, bytes) => [{ type: "text", text: `wrote ${bytes} bytes to ${args.path}` }]
    },
    presentCall: (args) => ({ card: "generic", title: `Write ${args.path}`, kind: "edit" }),
    presentResult: (args, result) => ({ card: "generic", title: `Wrote ${args.path}`, content: result.content }),
    execute: (args, ctx) =>
      timeline.measure(
        ctx.callId,
        `write ${args.path}`,
        Effect.gen(function*() {
          yield* Effect.sleep(30)
          ctx.deferContext({ content: [{ type: "text", text: `${args.path} changed: run the tests before you finish.` }] })
          return args.text.length
        })
      )
  })

  const deleteFile = Tool.defineTool({
    name: "delete_file",
    description: "Delete a file of the workspace (asks the user first).",
    parameters: { path: { type: "string", required: true } },
    output: { schema: { type: "boolean" }, render: (args) => [{ type: "text", text: `deleted ${args.path}` }] },
    presentCall: (args) => ({ card: "generic", title: `Delete ${args.path}`, kind: "delete" }),
    presentResult: (args, result) => ({
      card: "generic",
      title: result.isError ? `Kept ${args.path}` : `Deleted ${args.path}`,
      content: result.content
    }),
    execute: (args, ctx) => timeline.measure(ctx.callId, `delete ${args.path}`, Effect.succeed(true))
  })

  const fetchUrl = Tool.defineTool({
    name: "fetch_url",
    description: "Fetch a web page (this one never answers).",
    parameters: { url: { type: "string", required: true } },
    output: { schema: { type: "string" }, render: (_args, page) => [{ type: "text", text: page }] },
    timeoutMs: 80,
    presentCall: (args) => ({ card: "generic", title: `Fetch ${args.url}`, kind: "fetch" }),
    presentResult: (args, result) => ({ card: "generic", title: `Fetch ${args.url}`, content: result.content }),
    execute: (args, ctx) => timeline.measure(ctx.callId, `fetch ${args.url}`, Effect.as(Effect.sleep(10_000), "never"))
  })

  const runTests = Tool.defineTool({
    name: "run_tests",
    description: "Run the test suite (slow).",
    parameters: {},
    output: { schema: { type: "string" }, render: (_args, summary) => [{ type: "text", text: summary }] },
    presentCall: () => ({ card: "terminal", title: "npm test" }),
    presentResult: (_args, result) => ({ card: "generic", title: "npm test", content: result.content }),
    execute: (_args, ctx) => timeline.measure(ctx.callId, "run tests", Effect.as(Effect.sleep(10_000), "all green"))
  })

  const tools = [readFile, writeFile, deleteFile, fetchUrl, runTests] as const

  /** The tools and the rules, registered for as long as the layer lives. */
  const pack = Layer.scopedDiscard(Effect.gen(function*() {
    const registry = yield* ToolRegistry.ToolRegistry
    for (const tool of tools) yield* registry.register(tool)
    // Deleting asks the user.
    yield* registry.onPreExecute((exec, next) =>
      exec.name === "delete_file" ? Effect.succeed(Policy.PreDecision.Ask({ reason: "it deletes a file" })) : next
    )
    // Secrets are redacted before the model sees a result.
    yield* registry.onPostExecute((exec, result, next) => {
      if (exec.name !== "read_file" || result.isError) return next
      const redacted = result.content.map((block) =>
        block.type === "text" ? { ...block, text: block.text.replace(SECRET, "$1=[redacted]") } : block
      )
      const changed = redacted.some((block, i) => block !== result.content[i] && block.type === "text" &&
        block.text !== (result.content[i] as { readonly text: string }).text)
      return changed ? Effect.succeed(Policy.PostDecision.Accept({ content: redacted })) : next
    })
  }))

  const lookup = (name: string): Tool.ToolDefinition<never> | undefined =>
    (tools as ReadonlyArray<Tool.ToolDefinition<never>>).find((tool) => tool.name === name)

  return { pack, lookup }
}
