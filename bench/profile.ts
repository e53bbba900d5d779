/**
 * Profile attribution of a hook-less `execute` (docs/performance.md).
 *
 *   node --import tsx bench/profile.ts record [--compiled] [--calls N] [--keep file.cpuprofile]
 *     runs `loop` in a child process (under tsx, or compiled by tsc into a temporary directory and
 *     run under plain node), CPU-profiled through the inspector after its warm-up, and
 *     summarises the profile;
 *   node --import tsx bench/profile.ts summarize file.cpuprofile
 *     prints the self-time shares of a profile (this one's, or any `node --cpu-prof` output) by
 *     bucket and its top functions;
 *   node --import tsx bench/profile.ts micro
 *     times, in isolation, the per-call operations a profile cannot separate from their callers
 *     (AbortController, WeakMap marks, the running-token Map, freezing, a fork).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { Session } from "node:inspector"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** A bucket: its label and whether a frame (function name, file base name, url) belongs to it. */
type Rule = readonly [string, (fn: string, file: string, url: string) => boolean]

const inEffect = (url: string) => url.includes("/node_modules/effect/")
const ours = (url: string) => !url.includes("/node_modules/") && /\/(src|layers)\//.test(url)

const forkFunctions = new Set([
  "unsafeFork",
  "unsafeMakeChildFiber",
  "FiberRuntime",
  "unsafeForkUnstarted",
  "forkDaemon",
  "fork",
  "unsafeFork$1",
  "addObserver",
  "removeObserver",
  "unsafeAddObserver",
  "unsafeRemoveObserver",
  "notifyObservers",
  "start",
  "startFork",
  "unsafeForkAs",
  "setFiberRefs",
  "unsafeSetFiberRefs",
  "exitAsync",
  "onStart",
  "onEnd",
  "drainQueueLaterOnExecutor",
  "drainQueueOnCurrentThread",
  "tell",
  "unsafeAddChild",
  "unsafeRemoveChild",
  "<instance_members_initializer>"
])

/** Buckets, first match wins. */
export const rules: ReadonlyArray<Rule> = [
  ["garbage collection", (fn) => fn === "(garbage collector)"],
  ["idle / program (outside JS)", (fn) => fn === "(idle)" || fn === "(program)" || fn === "(root)"],
  [
    "AbortSignal / AbortController",
    (fn, file, url) =>
      url.includes("internal/abort_controller") || url.includes("internal/event_target") ||
      (ours(url) && file === "signals") || /^(AbortController|AbortSignal|EventTarget)\b/.test(fn)
  ],
  ["FiberRefs copy / join", (fn, file, url) => inEffect(url) && (file === "fiberRefs" || /FiberRefs|forkAs|joinAs/.test(fn))],
  [
    "fiber creation, fork, observers",
    (fn, file, url) =>
      inEffect(url) &&
      (forkFunctions.has(fn) || ["supervisor", "runtimeFlags", "fiberScope", "fiberId"].includes(file))
  ],
  ["Effect scheduler (yield, microtasks)", (_fn, file, url) => inEffect(url) && file.toLowerCase() === "scheduler"],
  [
    "Effect.gen / closures (generator adapter)",
    (fn, _file, url) => inEffect(url) && /SingleShotGen|YieldWrap|fromIterator|Gen\b|gen\b|next$/.test(fn)
  ],
  ["Effect run loop and ops (the rest of effect)", (_fn, _file, url) => inEffect(url)],
  ["tsx keepNames wrappers (__name)", (fn) => fn === "__name"],
  ["snapshot / freeze (arguments, results)", (_fn, file, url) => ours(url) && file === "json"],
  ["argument validation (JSON Schema)", (_fn, file, url) => ours(url) && file.startsWith("jsonSchema")],
  [
    "output: render, canonical result (marks), materialize",
    (_fn, file, url) => ours(url) && (file === "output" || file === "Content")
  ],
  ["running-token table", (fn, _file, url) => ours(url) && fn === "releaseParent"],
  [
    "pipeline stages (create, gate, dispatch, finish, envelope)",
    (_fn, file, url) =>
      ours(url) && ["execution", "gate", "dispatch", "finish", "pipeline", "waterfall", "context"].includes(file)
  ],
  ["other library code", (_fn, _file, url) => ours(url)],
  ["V8 builtins and natives (no script)", (_fn, _file, url) => url === ""],
  ["node internals (promises, timers, modules)", (_fn, _file, url) => url.startsWith("node:")],
  ["other (bench loop, tsx, dependencies)", () => true]
]

const baseName = (url: string): string => {
  const last = url.split("/").pop() ?? ""
  return last.replace(/\.(m?[jt]s)(\?.*)?$/, "")
}

/** Self time per bucket and per function of a `.cpuprofile`, as text. */
export const summarize = (profile: CpuProfile, top = 25): string => {
  const self = new Map<number, number>()
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const underInspector = (id: number): boolean => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      if (byId.get(at)?.callFrame.url === "node:inspector") return true
    }
    return false
  }
  const buckets = new Map<string, number>()
  const functions = new Map<string, number>()
  let total = 0
  let profiler = 0
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0
    if (us === 0) continue
    if (underInspector(node.id)) {
      profiler += us
      continue
    }
    total += us
    const { functionName, url } = node.callFrame
    const fn = functionName === "" ? "(anonymous)" : functionName
    const file = baseName(url)
    const rule = rules.find(([, match]) => match(fn, file, url))!
    buckets.set(rule[0], (buckets.get(rule[0]) ?? 0) + us)
    const key = `${fn}  ${file === "" ? "" : `${file}:${node.callFrame.lineNumber + 1}`}`
    functions.set(key, (functions.get(key) ?? 0) + us)
  }
  const share = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)} %`
  const lines = [
    `total self time ${(total / 1000).toFixed(0)} ms (the profiler's own ${(profiler / 1000).toFixed(0)} ms left out)`,
    "",
    "| bucket | self time |",
    "|---|--:|"
  ]
  const outside = (label: string) => label.startsWith("idle")
  const sorted = [...buckets.entries()].sort((a, b) => b[1] - a[1])
  for (const [label, us] of sorted) lines.push(`| ${label} | ${share(us)} |`)
  const busy = sorted.filter(([label]) => !outside(label)).reduce((sum, [, us]) => sum + us, 0)
  lines.push("", `busy (all but idle/program) ${(busy / 1000).toFixed(0)} ms; top ${top} functions by self time:`)
  for (const [key, us] of [...functions.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`${share(us)}  ${key}`)
  }
  return lines.join("\n")
}

const post = <A>(session: Session, method: string): Promise<A> =>
  new Promise((resolve, reject) =>
    session.post(method, (error, result) => (error === null ? resolve(result as A) : reject(error)))
  )

/**
 * The profiled loop: `calls` hook-less executes of the no-op tool after a warm-up, profiled
 * through the inspector from the end of the warm-up to the last call (module loading and
 * start-up are left out); the profile is written to `out`.
 */
const loop = async (calls: number, out: string): Promise<void> => {
  const { Effect, Layer, ManagedRuntime } = await import("effect")
  const InMemoryToolRegistry = await import("../layers/InMemoryToolRegistry.js")
  const { ToolRegistry } = await import("../src/ToolRegistry.js")
  const ToolRuntimeModule = await import("../src/ToolRuntime.js")
  const tools = Layer.orDie(Layer.scopedDiscard(Effect.flatMap(ToolRegistry, (registry) =>
    registry.register({
      name: "noop",
      description: "No-op.",
      parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value as string }] },
      execute: (args) => Effect.succeed((args as { readonly text: string }).text)
    }))))
  const rt = ManagedRuntime.make(
    tools.pipe(Layer.provideMerge(ToolRuntimeModule.layer.pipe(Layer.provideMerge(InMemoryToolRegistry.layer))))
  )
  const batch = (n: number) =>
    Effect.flatMap(ToolRuntimeModule.ToolRuntime, (runtime) =>
      Effect.forEach(
        Array.from({ length: n }, (_, i) => i),
        (i) => runtime.execute({ callId: `c${i}`, name: "noop", arguments: { text: "hello" } }),
        { discard: true }
      ))
  await rt.runPromise(batch(5_000))
  const session = new Session()
  session.connect()
  await post(session, "Profiler.enable")
  await post(session, "Profiler.start")
  const start = performance.now()
  for (let done = 0; done < calls; done += 1_000) await rt.runPromise(batch(1_000))
  const wall = performance.now() - start
  const { profile } = await post<{ profile: CpuProfile }>(session, "Profiler.stop")
  session.disconnect()
  fs.writeFileSync(out, JSON.stringify(profile))
  console.error(`loop: ${calls} calls, ${((wall * 1000) / calls).toFixed(1)} µs/call wall (profiler on)`)
  await rt.dispose()
}

const cpuSince = (start: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(start)
  return used.user + used.system
}

const timeOp = (label: string, n: number, op: (i: number) => unknown): string => {
  for (let i = 0; i < n; i++) op(i)
  const start = process.cpuUsage()
  for (let i = 0; i < n; i++) op(i)
  return `${label.padEnd(58)} ${(cpuSince(start) / n).toFixed(3)} µs CPU`
}

/** Isolated per-call costs of operations that a profile attributes to their callers. */
const micro = async (): Promise<void> => {
  const { Effect } = await import("effect")
  const { snapshotFrozen, deepFreeze } = await import("../src/internal/schema/json.js")
  const n = 200_000
  const marks = new WeakMap<object, symbol>()
  const values = new WeakSet<object>()
  const running = new Map<symbol, number>()
  const tokens = Array.from({ length: 1_024 }, () => Symbol("call"))
  const sink: Array<unknown> = []
  const lines = [
    timeOp("new AbortController()", n, () => new AbortController()),
    timeOp("new AbortController() + addEventListener + remove", n, () => {
      const c = new AbortController()
      const f = () => {}
      c.signal.addEventListener("abort", f, { once: true })
      c.signal.removeEventListener("abort", f)
    }),
    timeOp("canonical marks: WeakMap set + get, WeakSet add + has", n, (i) => {
      const o = { i }
      marks.set(o, Symbol.iterator)
      values.add(o)
      return marks.get(o) === Symbol.iterator && values.has(o)
    }),
    timeOp("running-token table: Map set + get + delete", n, (i) => {
      const token = tokens[i % tokens.length]
      running.set(token, (running.get(token) ?? 0) + 1)
      running.delete(token)
    }),
    timeOp("snapshot + freeze of { text } arguments", n, (i) => snapshotFrozen({ text: `t${i}` })),
    timeOp("deepFreeze of a success result", n, (i) =>
      deepFreeze({ isError: false, value: `t${i}`, content: [{ type: "text", text: `t${i}` }] })),
    timeOp("Effect.runSync(Effect.succeed) (an interpreter entry)", n / 4, () => Effect.runSync(Effect.succeed(1)))
  ]
  sink.length = 0
  const forks = 20_000
  const fork = Effect.forEach(Array.from({ length: forks }, (_, i) => i), (i) =>
    Effect.flatMap(Effect.fork(Effect.succeed(i)), (fiber) => fiber.await), { discard: true })
  await Effect.runPromise(fork)
  const start = process.cpuUsage()
  await Effect.runPromise(fork)
  lines.push(`${"Effect.fork + await (one fiber)".padEnd(58)} ${(cpuSince(start) / forks).toFixed(3)} µs CPU`)
  console.log(lines.join("\n"))
}

const here = path.dirname(fileURLToPath(import.meta.url))

const record = async (args: ReadonlyArray<string>): Promise<void> => {
  const compiled = args.includes("--compiled")
  const callsAt = args.indexOf("--calls")
  const calls = callsAt >= 0 ? Number(args[callsAt + 1]) : 100_000
  const keepAt = args.indexOf("--keep")
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-profile-"))
  const out = path.join(dir, "loop.cpuprofile")
  let cleanupBuild = () => {}
  try {
    let command: Array<string>
    if (compiled) {
      const { build } = await import("./compareBuild.js")
      const built = build(["profile"])
      cleanupBuild = built.cleanup
      command = [built.entry("profile"), "loop", String(calls), out]
    } else {
      command = ["--import", "tsx", path.join(here, "profile.ts"), "loop", String(calls), out]
    }
    const child = spawnSync(process.execPath, command, { encoding: "utf8", stdio: ["ignore", "inherit", "inherit"] })
    if (child.status !== 0) throw new Error(`the profiled loop failed with status ${child.status}`)
    if (keepAt >= 0) fs.copyFileSync(out, args[keepAt + 1]!)
    console.log(`${compiled ? "compiled (plain node)" : "tsx"}: ${calls} hook-less executes`)
    console.log(summarize(JSON.parse(fs.readFileSync(out, "utf8")) as CpuProfile))
  } finally {
    cleanupBuild()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const main = async (argv: ReadonlyArray<string>): Promise<void> => {
  const [command, ...rest] = argv
  if (command === "loop" && rest[1] !== undefined) return loop(Number(rest[0]), rest[1])
  if (command === "micro") return micro()
  if (command === "summarize" && rest[0] !== undefined) {
    console.log(summarize(JSON.parse(fs.readFileSync(rest[0], "utf8")) as CpuProfile))
    return
  }
  if (command === "record") return record(rest)
  console.error("usage: profile.ts record [--compiled] [--calls N] [--keep file] | summarize <file> | micro | loop <N> <out>")
  process.exitCode = 2
}

const entry = process.argv[1]
if (entry !== undefined && /profile\.(ts|js)$/.test(entry)) {
  main(process.argv.slice(2)).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
