/**
 * A fixed-size pool of QuickJS worker threads. Each worker runs one program at a time; a worker
 * that exits (crash, out of its heap, terminated) reports to the run it was serving and is
 * replaced. Closing the pool terminates every worker and waits for them to exit.
 *
 * The worker entry is `./worker.js` beside this module (the compiled package). When this module
 * is itself TypeScript source (tests, `tsx`), the worker starts from a small bootstrap that
 * registers tsx's loader in the worker and imports `./worker.ts`.
 *
 * @internal
 */
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import type { CodeRunResult } from "../../../src/CodeRuntime.js"
import type { Config } from "./config.js"
import type { FromWorker, ToWorker, WorkerInit } from "./protocol.js"

/** What the run a worker serves hears from it. @internal */
export interface RunListener {
  readonly onCall: (call: number, namespace: number, index: number, args: string) => void
  readonly onDone: (result: CodeRunResult) => void
  readonly onExit: (description: string) => void
}

/** One worker of the pool. @internal */
export class PoolWorker {
  listener: RunListener | undefined
  alive = true
  lastError: unknown
  readonly exited: Promise<void>
  private markExited!: () => void

  constructor(readonly worker: Worker) {
    this.exited = new Promise((resolve) => (this.markExited = resolve))
  }

  /** Posts `message` unless the worker is gone. */
  send(message: ToWorker): void {
    if (!this.alive) return
    try {
      this.worker.postMessage(message)
    } catch {
      // a worker that cannot take messages is about to exit and report it
    }
  }

  /** @internal */
  exit(): void {
    this.alive = false
    this.markExited()
  }
}

const spawnWorker = (init: WorkerInit): Worker => {
  const here = import.meta.url
  if (!here.endsWith(".ts")) return new Worker(new URL("./worker.js", here), { workerData: init })
  const require = createRequire(here)
  const tsx = new URL("dist/esm/api/index.mjs", pathToFileURL(require.resolve("tsx/package.json"))).href
  const entry = new URL("./worker.ts", here).href
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}) })`
  return new Worker(bootstrap, { eval: true, workerData: init })
}

const describeExit = (code: number, error: unknown): string => {
  if (error instanceof Error) {
    const code = (error as { readonly code?: unknown }).code
    return `the worker thread failed: ${typeof code === "string" ? `${code}: ` : ""}${error.message}`
  }
  return `the worker thread exited with code ${code}`
}

const isMessage = (value: unknown): value is FromWorker =>
  typeof value === "object" && value !== null && typeof (value as { readonly type?: unknown }).type === "string"

/** @internal */
export class Pool {
  private readonly idle: Array<PoolWorker> = []
  private readonly workers = new Set<PoolWorker>()
  private readonly waiters: Array<(worker: PoolWorker | undefined) => void> = []
  private closed = false

  constructor(
    private readonly config: Config,
    private readonly size: number
  ) {}

  /** Starts every worker; fails with the first worker's load failure. */
  async start(): Promise<void> {
    const started = await Promise.allSettled(Array.from({ length: this.size }, () => this.spawn()))
    for (const outcome of started) if (outcome.status === "fulfilled") this.give(outcome.value)
    const failed = started.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected")
    if (failed !== undefined) throw failed.reason
  }

  private spawn(): Promise<PoolWorker> {
    return new Promise((resolve, reject) => {
      let worker: Worker
      try {
        worker = spawnWorker({ config: this.config })
      } catch (error) {
        reject(error)
        return
      }
      const member = new PoolWorker(worker)
      this.workers.add(member)
      let ready = false
      worker.on("message", (message: unknown) => {
        if (!isMessage(message)) return
        if (!ready) {
          if (message.type === "ready") {
            ready = true
            resolve(member)
          } else if (message.type === "fatal") {
            reject(new Error(message.message))
            void worker.terminate()
          }
          return
        }
        const listener = member.listener
        if (listener === undefined) return
        if (message.type === "call") listener.onCall(message.call, message.namespace, message.index, message.args)
        else if (message.type === "done") listener.onDone(message.result)
      })
      worker.on("error", (error) => {
        member.lastError = error
      })
      worker.on("exit", (code) => {
        member.exit()
        this.workers.delete(member)
        const at = this.idle.indexOf(member)
        if (at !== -1) this.idle.splice(at, 1)
        if (!ready) {
          reject(new Error(`the QuickJS worker could not start (${describeExit(code, member.lastError)})`))
          return
        }
        const listener = member.listener
        member.listener = undefined
        listener?.onExit(describeExit(code, member.lastError))
        if (!this.closed) this.replace()
      })
    })
  }

  private replace(): void {
    this.spawn().then(
      (worker) => this.give(worker),
      () => {
        if (this.workers.size === 0) for (const waiter of this.waiters.splice(0)) waiter(undefined)
      }
    )
  }

  private give(worker: PoolWorker): void {
    if (this.closed || !worker.alive) {
      void worker.worker.terminate()
      return
    }
    const waiter = this.waiters.shift()
    if (waiter !== undefined) waiter(worker)
    else this.idle.push(worker)
  }

  /** A free worker (`undefined` once the pool is closed or has no workers left) and a way to stop waiting. */
  acquire(): { readonly worker: Promise<PoolWorker | undefined>; readonly cancel: () => void } {
    if (this.closed || this.workers.size === 0) return { worker: Promise.resolve(undefined), cancel: () => {} }
    const idle = this.idle.pop()
    if (idle !== undefined) return { worker: Promise.resolve(idle), cancel: () => {} }
    let waiter!: (worker: PoolWorker | undefined) => void
    const worker = new Promise<PoolWorker | undefined>((resolve) => (waiter = resolve))
    this.waiters.push(waiter)
    return {
      worker,
      cancel: () => {
        const at = this.waiters.indexOf(waiter)
        if (at !== -1) this.waiters.splice(at, 1)
        worker.then((handed) => {
          if (handed !== undefined) this.release(handed)
        })
      }
    }
  }

  /** Returns `worker` after its run. */
  release(worker: PoolWorker): void {
    worker.listener = undefined
    if (worker.alive) this.give(worker)
  }

  /** Terminates every worker and waits for them to exit. */
  async close(): Promise<void> {
    this.closed = true
    for (const waiter of this.waiters.splice(0)) waiter(undefined)
    const all = [...this.workers]
    await Promise.all(all.map(async (member) => {
      await member.worker.terminate().catch(() => undefined)
      await member.exited
    }))
  }

  /** The workers alive now (tests). */
  members(): ReadonlyArray<PoolWorker> {
    return [...this.workers]
  }

  /** How many runs wait for a worker (tests). */
  waiting(): number {
    return this.waiters.length
  }
}
