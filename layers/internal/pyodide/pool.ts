/**
 * A fixed-size pool of Pyodide worker threads, each holding one pre-warmed interpreter. The
 * first worker boots Pyodide cold and sends back a memory snapshot of the clean boot; every
 * other worker, and every replacement, restores interpreters from it. A worker is handed to a
 * run only when its interpreter is warm; after the run it prepares a fresh one and becomes
 * available again. Workers run with a V8 heap limit; closing the pool terminates every worker
 * and waits for them to exit.
 *
 * The worker entry is `./worker.js` beside this module (the compiled package); under TypeScript
 * sources (tests, `tsx`) it starts from a bootstrap that registers tsx's loader first.
 *
 * @internal
 */
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import type { ResourceLimits } from "node:worker_threads"
import { Worker } from "node:worker_threads"
import type { Limits } from "../../../src/CodeRuntime.js"
import type { FromWorker, ToWorker, WorkerInit } from "./protocol.js"

/** The V8 heap of one worker: Pyodide's JavaScript side plus the realm-own objects of programs. @internal */
export const WORKER_HEAP: ResourceLimits = { maxOldGenerationSizeMb: 384, maxYoungGenerationSizeMb: 48 }

/** What the run a worker serves hears from it. @internal */
export interface RunListener {
  readonly onLine: (line: string) => void
  readonly onStopping: () => void
  readonly onDone: (message: Extract<FromWorker, { type: "done" }>) => void
  readonly onExit: (description: string, outOfMemory: boolean) => void
}

/** One worker of the pool. @internal */
export class Member {
  listener: RunListener | undefined
  control: SharedArrayBuffer | undefined
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
  const options = { workerData: init, resourceLimits: WORKER_HEAP, stdout: true, stderr: true }
  if (!here.endsWith(".ts")) return new Worker(new URL("./worker.js", here), options)
  const require = createRequire(here)
  const tsx = new URL("dist/esm/api/index.mjs", pathToFileURL(require.resolve("tsx/package.json"))).href
  const entry = new URL("./worker.ts", here).href
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}) })`
  return new Worker(bootstrap, { ...options, eval: true })
}

const describeExit = (code: number, error: unknown): string => {
  if (error instanceof Error) {
    const code = (error as { readonly code?: unknown }).code
    return `the worker thread failed: ${typeof code === "string" ? `${code}: ` : ""}${error.message}`
  }
  return `the worker thread exited with code ${code}`
}

const isOutOfMemory = (error: unknown): boolean =>
  error instanceof Error && (error as { readonly code?: unknown }).code === "ERR_WORKER_OUT_OF_MEMORY"

const isMessage = (value: unknown): value is FromWorker =>
  typeof value === "object" && value !== null && typeof (value as { readonly type?: unknown }).type === "string"

/** @internal */
export class Pool {
  private readonly idle: Array<Member> = []
  private readonly members = new Set<Member>()
  private readonly waiters: Array<(member: Member | undefined) => void> = []
  private snapshot: Uint8Array | undefined
  private closed = false

  constructor(
    private readonly limits: Limits,
    private readonly size: number
  ) {}

  /** Starts the first worker (which makes the snapshot), then the others from it. */
  async start(): Promise<void> {
    this.give(await this.spawn())
    const rest = await Promise.allSettled(Array.from({ length: this.size - 1 }, () => this.spawn()))
    for (const outcome of rest) if (outcome.status === "fulfilled") this.give(outcome.value)
    const failed = rest.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected")
    if (failed !== undefined) throw failed.reason
  }

  private spawn(): Promise<Member> {
    return new Promise((resolve, reject) => {
      let worker: Worker
      try {
        worker = spawnWorker({ limits: this.limits, snapshot: this.snapshot })
      } catch (error) {
        reject(error)
        return
      }
      worker.stdout.resume()
      worker.stderr.resume()
      const member = new Member(worker)
      this.members.add(member)
      let ready = false
      worker.on("message", (message: unknown) => {
        if (!isMessage(message)) return
        switch (message.type) {
          case "snapshot":
            this.snapshot ??= message.bytes
            return
          case "warm":
            member.control = message.control
            if (!ready) {
              ready = true
              resolve(member)
            } else if (member.listener === undefined) {
              this.give(member)
            }
            return
          case "fatal":
            if (!ready) reject(new Error(message.message))
            void worker.terminate()
            return
          case "line":
            member.listener?.onLine(message.line)
            return
          case "stopping":
            member.listener?.onStopping()
            return
          case "done": {
            const listener = member.listener
            member.listener = undefined
            member.control = undefined
            listener?.onDone(message)
            return
          }
        }
      })
      worker.on("error", (error) => {
        member.lastError = error
      })
      worker.on("exit", (code) => {
        member.exit()
        this.members.delete(member)
        const at = this.idle.indexOf(member)
        if (at !== -1) this.idle.splice(at, 1)
        if (!ready) {
          reject(new Error(`the Pyodide worker could not start (${describeExit(code, member.lastError)})`))
          return
        }
        const listener = member.listener
        member.listener = undefined
        listener?.onExit(describeExit(code, member.lastError), isOutOfMemory(member.lastError))
        if (!this.closed) this.replace()
      })
    })
  }

  private replace(): void {
    this.spawn().then(
      (member) => this.give(member),
      () => {
        if (this.members.size === 0) for (const waiter of this.waiters.splice(0)) waiter(undefined)
      }
    )
  }

  private give(member: Member): void {
    if (this.closed || !member.alive) {
      void member.worker.terminate()
      return
    }
    if (member.control === undefined) return
    const waiter = this.waiters.shift()
    if (waiter !== undefined) waiter(member)
    else this.idle.push(member)
  }

  /** A worker with a warm interpreter (`undefined` once closed or empty) and a way to stop waiting. */
  acquire(): { readonly member: Promise<Member | undefined>; readonly cancel: () => void } {
    if (this.closed || this.members.size === 0) return { member: Promise.resolve(undefined), cancel: () => {} }
    const idle = this.idle.shift()
    if (idle !== undefined) return { member: Promise.resolve(idle), cancel: () => {} }
    let waiter!: (member: Member | undefined) => void
    const member = new Promise<Member | undefined>((resolve) => (waiter = resolve))
    this.waiters.push(waiter)
    return {
      member,
      cancel: () => {
        const at = this.waiters.indexOf(waiter)
        if (at !== -1) this.waiters.splice(at, 1)
        member.then((handed) => {
          if (handed !== undefined) this.give(handed)
        })
      }
    }
  }

  /** Terminates every worker and waits for them to exit. */
  async close(): Promise<void> {
    this.closed = true
    for (const waiter of this.waiters.splice(0)) waiter(undefined)
    await Promise.all([...this.members].map(async (member) => {
      await member.worker.terminate().catch(() => undefined)
      await member.exited
    }))
  }

  /** The workers alive now (tests). */
  workers(): ReadonlyArray<Member> {
    return [...this.members]
  }
}
