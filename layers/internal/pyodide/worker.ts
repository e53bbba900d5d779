/**
 * The entry module of a Pyodide worker thread. It reads the pinned package once, then keeps one
 * pre-warmed interpreter ready: each interpreter lives in its own fresh realm (a `vm` context
 * with code generation from strings disabled, holding only realm-own shims), restored from a
 * memory snapshot of a clean boot. A run uses the warm interpreter once; when it ends the realm
 * is dropped and a fresh one is prepared for the next run. The first worker of a pool boots
 * Pyodide cold to make the snapshot and hands it to the main thread for the others.
 *
 * Guest CPU time is published in the interpreter's control buffer (slices start when the worker
 * enters the realm and end after its microtasks drain); the main thread reads it and writes the
 * interrupt signal there when the budget is spent.
 *
 * @internal
 */
import { randomFillSync } from "node:crypto"
import { createContext, Script } from "node:vm"
import { parentPort, workerData } from "node:worker_threads"
import type { Limits } from "../../../src/CodeRuntime.js"
import type { FromWorker, ToWorker, WorkerInit } from "./protocol.js"
import { SIGINT, SLOT } from "./protocol.js"
import type { RealmControls, RealmHost } from "./realmSetup.js"
import { REALM_BROKEN, REALM_SETUP } from "./realmSetup.js"
import { PYODIDE_RUNNER } from "./runner.js"
import type { Assets } from "./sources.js"
import { loadAssets } from "./sources.js"

const port = parentPort
const init = port === null ? undefined : workerData as WorkerInit
const post = (message: FromWorker, transfer?: ReadonlyArray<ArrayBuffer>) =>
  port!.postMessage(message, transfer as Array<ArrayBuffer> | undefined)

const MAX_DELAY = 2147483647

interface Interpreter {
  readonly controls: RealmControls
  readonly timers: Map<number, ReturnType<typeof setTimeout>>
  readonly flags: Int32Array
  readonly control: SharedArrayBuffer
  readonly start: (config: string) => void
  readonly settle: (line: string) => void
  sink: Run | undefined
  oom: boolean
}

interface Run {
  readonly id: number
  readonly base: number
  readonly interpreter: Interpreter
  readonly logs: Array<string>
  readonly decoder: TextDecoder
  partial: string
  consoleUsed: number
  consoleFull: boolean
  device: string
  used: number
  computing: boolean
  finished: boolean
}

const textOf = (error: unknown, key: "name" | "message"): string => {
  try {
    const value = (error as Record<string, unknown> | null)?.[key]
    return typeof value === "string" ? value.slice(0, 500) : ""
  } catch {
    return ""
  }
}

let setupScript: Script | undefined

const REALM_CHECK = new Script(
  "(() => { let code; try { Function('return 1')(); code = 'compiled' } catch { code = 'refused' }" +
    " const reachable = ['process', 'require', 'module', 'fetch', 'Buffer', 'WebSocket', 'importScripts', 'XMLHttpRequest']" +
    ".filter((name) => typeof globalThis[name] !== 'undefined'); return code + ' ' + reachable.join(',') })()",
  { filename: "realm-check.js" }
)

/** Proves, before Pyodide is evaluated, that the realm compiles no code from strings and holds no host global. */
const checkRealm = (context: object) => {
  const seen: unknown = REALM_CHECK.runInContext(context)
  if (seen !== "refused ") {
    throw new Error(`${REALM_BROKEN}code from strings ${String(seen).split(" ")[0]}; host globals: ${String(seen).split(" ")[1] || "none"}`)
  }
}

const makeInterpreter = async (assets: Assets, limits: Limits, snapshot: Uint8Array | undefined) => {
  const context = createContext(Object.create(null), { codeGeneration: { strings: false, wasm: true }, name: "python" })
  setupScript ??= new Script(REALM_SETUP, { filename: "realm-setup.js" })
  const timers = new Map<number, ReturnType<typeof setTimeout>>()
  const holder: { interpreter?: Interpreter } = {}
  const host: RealmHost = {
    size: (path) => assets.files.get(path)?.length ?? -1,
    fill: (path, target) => {
      const bytes = assets.files.get(path)
      if (bytes === undefined) return
      try {
        new Uint8Array(target).set(bytes)
      } catch {
        // a target of the wrong size stays as it is
      }
    },
    text: (path) => path === "/pyodide/pyodide-lock.json" ? assets.lockfile : undefined,
    schedule: (id, ms) => {
      const delay = Math.min(MAX_DELAY, Math.max(0, Number.isFinite(ms) ? ms : 0))
      timers.set(id, setTimeout(() => fire(holder.interpreter, controls, timers, id), delay))
    },
    unschedule: (id) => {
      clearTimeout(timers.get(id))
      timers.delete(id)
    },
    now: () => performance.now(),
    random: (view) => {
      try {
        randomFillSync(view as Uint8Array)
      } catch {
        // a view that cannot be filled stays as it is
      }
    },
    emit: (bytes) => {
      const run = holder.interpreter?.sink
      if (run !== undefined) device(run, bytes)
    },
    print: (bytes) => {
      const run = holder.interpreter?.sink
      if (run !== undefined) printed(run, limits, bytes)
    },
    outOfMemory: () => {
      if (holder.interpreter !== undefined) holder.interpreter.oom = true
    }
  }
  const setup = setupScript.runInContext(context) as (host: RealmHost) => RealmControls
  const controls = setup(host)
  checkRealm(context)
  const factory: unknown = assets.factory.runInContext(context)
  const loader = assets.loader.runInContext(context) as { readonly loadPyodide: unknown }
  let inner: Uint8Array | undefined
  if (snapshot !== undefined) {
    inner = controls.alloc(snapshot.length)
    inner.set(snapshot)
  }
  const pyodide = await controls.boot(loader.loadPyodide, factory, inner)
  if (snapshot === undefined) {
    for (const timer of timers.values()) clearTimeout(timer)
    return { snapshot: new Uint8Array(controls.snapshot(pyodide)) }
  }
  const handle = controls.prepare(pyodide, PYODIDE_RUNNER)
  const interpreter: Interpreter = {
    controls,
    timers,
    flags: new Int32Array(handle.interrupt),
    control: handle.interrupt,
    start: handle.start,
    settle: handle.settle,
    sink: undefined,
    oom: false
  }
  holder.interpreter = interpreter
  return { interpreter }
}

/** Marks guest code as running until the microtasks of this task have drained. */
const enter = (run: Run | undefined) => {
  if (run === undefined || run.computing) return
  run.computing = true
  const flags = run.interpreter.flags
  Atomics.store(flags, SLOT.sliceStart, Date.now() - run.base)
  Atomics.store(flags, SLOT.computing, 1)
  const started = Date.now()
  setImmediate(() => {
    run.used += Date.now() - started
    Atomics.store(flags, SLOT.used, Math.min(run.used, 2 ** 31 - 1))
    Atomics.store(flags, SLOT.computing, 0)
    run.computing = false
  })
}

const fire = (
  interpreter: Interpreter | undefined,
  controls: RealmControls,
  timers: Map<number, ReturnType<typeof setTimeout>>,
  id: number
) => {
  timers.delete(id)
  const run = interpreter?.sink
  if (interpreter === undefined || run === undefined || run.finished) return
  enter(run)
  guard(run, () => controls.fire(id))
}

/** Calls into the realm; a JavaScript error other than a Python exception means the interpreter failed. */
const guard = (run: Run, call: () => void) => {
  try {
    call()
  } catch (error) {
    if (textOf(error, "name") === "PythonError") return
    const message = textOf(error, "message")
    finish(run, /call stack|stack overflow/i.test(message)
      ? { kind: "memory", message: "the interpreter's stack overflowed" }
      : { kind: "worker-exit", message: `the interpreter failed: ${message || textOf(error, "name") || "unknown error"}` })
  }
}

const device = (run: Run, bytes: string) => {
  run.device += bytes
  for (;;) {
    const at = run.device.indexOf("\n")
    if (at === -1) return
    const line = run.device.slice(0, at)
    run.device = run.device.slice(at + 1)
    if (run.finished) return
    post({ type: "line", run: run.id, line })
    if (line.startsWith("{\"t\":\"done\"") || line.startsWith("{\"t\":\"error\"")) {
      finish(run, undefined)
      return
    }
  }
}

const printed = (run: Run, limits: Limits, bytes: string) => {
  if (run.consoleFull) return
  const room = limits.consoleBytes - run.consoleUsed
  const chunk = Buffer.from(bytes, "latin1")
  const take = (part: Buffer) => {
    const text = run.partial + run.decoder.decode(part, { stream: true })
    const lines = text.split("\n")
    run.partial = lines.pop() ?? ""
    for (const line of lines) run.logs.push(line)
  }
  if (chunk.length > room) {
    take(chunk.subarray(0, room))
    run.consoleUsed = limits.consoleBytes
    run.consoleFull = true
    Atomics.store(run.interpreter.flags, SLOT.signal, SIGINT)
    post({ type: "stopping", run: run.id, kind: "output-limit" })
    return
  }
  run.consoleUsed += chunk.length
  take(chunk)
}

let current: Run | undefined
let warm: Interpreter | undefined
let preparing = false
let ready: { readonly assets: Assets; readonly limits: Limits; readonly snapshot: Uint8Array } | undefined

/** Prepares the next interpreter, unless one is ready, being prepared, or a run is going on. */
const prepare = () => {
  if (preparing || warm !== undefined || current !== undefined || ready === undefined) return
  preparing = true
  makeInterpreter(ready.assets, ready.limits, ready.snapshot).then(
    (made) => {
      preparing = false
      warm = made.interpreter!
      post({ type: "warm", control: warm.control })
    },
    (error: unknown) => post({ type: "fatal", message: `a fresh interpreter could not start: ${textOf(error, "message")}` })
  )
}

const finish = (run: Run, failure: { kind: "memory" | "worker-exit"; message: string } | undefined) => {
  if (run.finished) return
  run.finished = true
  const rest = run.partial + run.decoder.decode()
  if (rest.length > 0) run.logs.push(rest)
  const interpreter = run.interpreter
  interpreter.sink = undefined
  for (const timer of interpreter.timers.values()) clearTimeout(timer)
  interpreter.timers.clear()
  if (current === run) current = undefined
  post({ type: "done", run: run.id, logs: run.logs, outOfMemory: interpreter.oom, failure })
  setImmediate(prepare)
}

const serve = (assets: Assets, limits: Limits, snapshot: Uint8Array) => {
  ready = { assets, limits, snapshot }
  port!.on("message", (message: ToWorker) => {
    switch (message.type) {
      case "run": {
        const interpreter = warm
        warm = undefined
        if (interpreter === undefined) {
          post({
            type: "done",
            run: message.run,
            logs: [],
            outOfMemory: false,
            failure: { kind: "worker-exit", message: "no interpreter was ready" }
          })
          setImmediate(prepare)
          return
        }
        const run: Run = {
          id: message.run,
          base: message.base,
          interpreter,
          logs: [],
          decoder: new TextDecoder("utf-8"),
          partial: "",
          consoleUsed: 0,
          consoleFull: false,
          device: "",
          used: 0,
          computing: false,
          finished: false
        }
        current = run
        interpreter.sink = run
        interpreter.controls.setMemoryCap(limits.memoryBytes)
        enter(run)
        guard(run, () => interpreter.start(message.config))
        return
      }
      case "settle": {
        const run = current
        if (run === undefined || run.id !== message.run || run.finished) return
        enter(run)
        guard(run, () => run.interpreter.settle(message.line))
        return
      }
      case "stop": {
        const run = current
        if (run === undefined || run.id !== message.run || run.finished) return
        if (!run.computing) finish(run, undefined)
        return
      }
    }
  })
  prepare()
}

if (port !== null && init !== undefined) {
  const start = async () => {
    const assets = loadAssets()
    let snapshot = init.snapshot
    if (snapshot === undefined) {
      const made = await makeInterpreter(assets, init.limits, undefined)
      snapshot = made.snapshot!
      const copy = new Uint8Array(snapshot)
      post({ type: "snapshot", bytes: copy }, [copy.buffer])
    }
    serve(assets, init.limits, snapshot)
  }
  start().catch((error: unknown) => post({ type: "fatal", message: textOf(error, "message") || "Pyodide could not start" }))
}
