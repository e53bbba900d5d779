/**
 * One run of one program on one fresh engine instance, independent of Effect so it can run in
 * the caller's thread or in a worker. The host starts binding calls (`dispatch`) and settles
 * them later (`settle`); `stop` ends the run from outside (abort, wall time, shutdown).
 *
 * The guest runs only inside slices (`evalCode`, `callFunction`, `executePendingJobs`); guest
 * CPU time is counted there and the interrupt handler ends a slice when the CPU budget is spent
 * or a stop was asked for. Memory and stack limits are checked host-side after every slice and
 * while the guest runs, so a program that catches the out-of-memory or stack-overflow error
 * still ends with kind `memory`. Every end tears the instance down: pending guest promises are
 * disposed before the context and the runtime, and results that arrive later are dropped.
 *
 * @internal
 */
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten-core"
import type { CodeRunErrorKind, CodeRunResult, Limits } from "../../../src/CodeRuntime.js"
import { formatBytes } from "./config.js"
import type { Instance } from "./engine.js"
import { PRELUDE, PRELUDE_FILENAME } from "./prelude.js"
import { position } from "./source.js"

/** What the guest sees of one namespace. @internal */
export interface NamespacePlan {
  readonly global: string
  readonly names: ReadonlyArray<string>
  readonly errorClass: { readonly name: string; readonly member: string } | null
}

/** A prepared program and what to expose to it. @internal */
export interface Plan {
  readonly code: string
  readonly filename: string
  readonly lines: number
  readonly namespaces: ReadonlyArray<NamespacePlan>
  readonly limits: Limits
}

/** How a binding call ended, as JSON text for the guest or a failure message. @internal */
export type CallOutcome = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly message: string }

/** Why a run stops early. @internal */
export interface Stop {
  readonly kind: CodeRunErrorKind
  readonly message: string
}

/** @internal */
export interface SessionHost {
  /** Start binding `index` of namespace `namespace` with JSON `args`; settle it later, never synchronously. */
  readonly dispatch: (call: number, namespace: number, index: number, args: string) => void
  /** Polled while the guest runs: a stop asked for from another thread. */
  readonly pollStop?: (() => Stop | undefined) | undefined
}

/** The QuickJS stack limit sits this far past `stackBytes`, so an overflow always crosses the watched window. */
const STACK_MARGIN = 8 * 1024
const STACK_WINDOW = 4 * 1024

const now = () => performance.now()

const utf8Length = (text: string): number => Buffer.byteLength(text, "utf8")

/** @internal */
export const stopped = {
  cpu: (limits: Limits): Stop => ({ kind: "timeout", message: `the program used more than ${limits.cpuMs} ms of CPU time` }),
  wall: (limits: Limits): Stop => ({
    kind: "timeout",
    message: `the run took longer than ${limits.wallMs} ms of wall time (tool calls included)`
  }),
  aborted: { kind: "abort", message: "the run was aborted" } as Stop,
  interrupted: { kind: "abort", message: "the run was interrupted" } as Stop,
  shutDown: { kind: "abort", message: "the code runtime was shut down" } as Stop
}

/** @internal */
export class Session {
  readonly result: Promise<CodeRunResult>
  private readonly limits: Limits
  private readonly logs: Array<string> = []
  private logBytes = 0
  private calls = 0
  private inFlight = 0
  private readonly queue: Array<readonly [number, number, number, string]> = []
  private readonly pending = new Map<number, QuickJSDeferredPromise>()
  private readonly orphans: Array<QuickJSDeferredPromise> = []
  private stopReason: Stop | undefined
  private ended = false
  private broken = false
  private inSlice = false
  private sliceStart = 0
  private cpuUsed = 0
  private woken = false
  private waiter: (() => void) | undefined
  private rt: QuickJSRuntime | undefined
  private ctx: QuickJSContext | undefined
  private readonly stackWindowLow: number
  private readonly stackWindowWords: number
  private readonly deadline: number

  constructor(
    private readonly instance: Instance,
    private readonly plan: Plan,
    private readonly host: SessionHost
  ) {
    this.limits = plan.limits
    this.stackWindowLow = instance.stackHigh - plan.limits.stackBytes - STACK_WINDOW
    this.stackWindowWords = STACK_WINDOW / 4
    this.deadline = now() + plan.limits.wallMs
    this.result = this.run()
  }

  /** Ends the run as `stop` (the first reason wins). */
  stop(stop: Stop): void {
    if (this.ended) return
    if (this.stopReason === undefined) this.stopReason = stop
    this.wake()
  }

  /** Settles binding call `call`; ignored once the run ended or for unknown calls. */
  settle(call: number, outcome: CallOutcome): void {
    if (this.ended) return
    const deferred = this.pending.get(call)
    if (deferred === undefined) return
    this.pending.delete(call)
    this.inFlight--
    const ctx = this.ctx!
    try {
      if (deferred.alive) {
        const value = ctx.newString(outcome.ok ? outcome.text : JSON.stringify(outcome.message))
        if (outcome.ok) deferred.resolve(value)
        else deferred.reject(value)
        value.dispose()
      }
    } catch (error) {
      this.died(error)
      return
    }
    this.drainQueue()
    this.wake()
  }

  private wake(): void {
    this.woken = true
    const waiter = this.waiter
    this.waiter = undefined
    waiter?.()
  }

  private drainQueue(): void {
    while (this.inFlight < this.limits.maxInFlight && this.queue.length > 0 && this.stopReason === undefined) {
      const [call, namespace, index, args] = this.queue.shift()!
      this.inFlight++
      this.host.dispatch(call, namespace, index, args)
    }
  }

  private stackExceeded(): boolean {
    const words = new Int32Array(this.instance.memory.buffer, this.stackWindowLow, this.stackWindowWords)
    for (let i = 0; i < words.length; i++) if (words[i] !== 0) return true
    return false
  }

  private memoryStop(): Stop | undefined {
    if (this.instance.outOfMemory()) {
      return { kind: "memory", message: `the program exceeded the ${formatBytes(this.limits.memoryBytes)} memory limit` }
    }
    return this.stackExceeded() ? this.stackStop() : undefined
  }

  private stackStop(): Stop {
    return {
      kind: "memory",
      message: `the program exceeded the ${formatBytes(this.limits.stackBytes)} stack limit (stack overflow)`
    }
  }

  private readonly onInterrupt = (): boolean => {
    if (this.stopReason !== undefined) return true
    if (!this.inSlice) return false
    const external = this.host.pollStop?.()
    if (external !== undefined) {
      this.stopReason = external
      return true
    }
    const time = now()
    if (this.cpuUsed + (time - this.sliceStart) > this.limits.cpuMs) {
      this.stopReason = stopped.cpu(this.limits)
      return true
    }
    if (time > this.deadline) {
      this.stopReason = stopped.wall(this.limits)
      return true
    }
    const memory = this.memoryStop()
    if (memory !== undefined) {
      this.stopReason = memory
      return true
    }
    return false
  }

  private slice<A>(f: () => A): A {
    this.inSlice = true
    this.sliceStart = now()
    try {
      return f()
    } finally {
      this.cpuUsed += now() - this.sliceStart
      this.inSlice = false
      if (this.stopReason === undefined) {
        const memory = this.memoryStop()
        if (memory !== undefined) this.stopReason = memory
      }
    }
  }

  private readonly onCall = (namespaceHandle: QuickJSHandle, indexHandle: QuickJSHandle, argsHandle: QuickJSHandle) => {
    const ctx = this.ctx!
    const deferred = ctx.newPromise()
    if (this.stopReason !== undefined) {
      this.orphans.push(deferred)
      return deferred.handle
    }
    const namespace = ctx.typeof(namespaceHandle) === "number" ? ctx.getNumber(namespaceHandle) : -1
    const index = ctx.typeof(indexHandle) === "number" ? ctx.getNumber(indexHandle) : -1
    const args = ctx.typeof(argsHandle) === "string" ? ctx.getString(argsHandle) : undefined
    const name = Number.isInteger(namespace) && Number.isInteger(index)
      ? this.plan.namespaces[namespace]?.names[index]
      : undefined
    if (name === undefined || args === undefined) {
      const message = ctx.newString(JSON.stringify("malformed tool call"))
      deferred.reject(message)
      message.dispose()
      return deferred.handle
    }
    this.calls++
    if (this.calls > this.limits.maxToolCalls) {
      this.orphans.push(deferred)
      this.stopReason = {
        kind: "call-limit",
        message: `the program made more than ${this.limits.maxToolCalls} tool calls`
      }
      return deferred.handle
    }
    const call = this.calls
    this.pending.set(call, deferred)
    if (this.inFlight < this.limits.maxInFlight) {
      this.inFlight++
      this.host.dispatch(call, namespace, index, args)
    } else {
      this.queue.push([call, namespace, index, args])
    }
    return deferred.handle
  }

  private readonly onLog = (lineHandle: QuickJSHandle) => {
    if (this.stopReason !== undefined) return
    const ctx = this.ctx!
    const line = ctx.typeof(lineHandle) === "string" ? this.decode(ctx.getString(lineHandle)) : undefined
    if (line !== undefined) this.logBytes += utf8Length(line) + 1
    if (line === undefined || this.logBytes > this.limits.consoleBytes) {
      this.stopReason = {
        kind: "output-limit",
        message: `the program printed more than the ${formatBytes(this.limits.consoleBytes)} console limit`
      }
      return
    }
    this.logs.push(line)
  }

  private decode(json: string): string {
    try {
      const value: unknown = JSON.parse(json)
      return typeof value === "string" ? value : ""
    } catch {
      return ""
    }
  }

  private died(error: unknown): void {
    this.broken = true
    if (this.stopReason !== undefined) return
    const memory = this.instance.outOfMemory()
      ? this.memoryStop()
      : error instanceof RangeError && /call stack/i.test(error.message)
      ? this.stackStop()
      : undefined
    const abort = this.instance.abortReason()
    this.stopReason = memory ?? {
      kind: "worker-exit",
      message: `the engine instance died: ${
        abort ?? (error instanceof Error ? `${error.name}: ${error.message}` : "unknown failure")
      }`
    }
    this.wake()
  }

  private finish(error: Stop | undefined, value?: { readonly json: string }): CodeRunResult {
    const logs = this.logs.slice()
    if (error !== undefined) return { logs, error: { kind: error.kind, message: error.message } }
    if (value === undefined) return { logs }
    return { value: JSON.parse(value.json), logs }
  }

  private fromOutcome(outcome: string): CodeRunResult {
    const tag = outcome.charAt(0)
    const body = outcome.slice(1)
    const limits = this.limits
    switch (tag) {
      case "u":
        return this.finish(undefined)
      case "v": {
        if (body.length > limits.resultBytes || utf8Length(body) > limits.resultBytes) {
          return this.finish({
            kind: "output-limit",
            message: `the program's result is ${utf8Length(body)} bytes of JSON, over the ${
              formatBytes(limits.resultBytes)
            } result limit`
          })
        }
        return this.finish(undefined, { json: body })
      }
      case "o":
        return this.finish({
          kind: "output-limit",
          message: `the program's result is over the ${formatBytes(limits.resultBytes)} result limit`
        })
      case "i":
        return this.finish({
          kind: "invalid-output",
          message: `the program's result is not lossless JSON: ${this.decode(body)}`
        })
      case "e": {
        let head = "the program failed"
        let stack = ""
        try {
          const parsed: unknown = JSON.parse(body)
          if (Array.isArray(parsed) && typeof parsed[0] === "string" && typeof parsed[1] === "string") {
            head = parsed[0]
            stack = parsed[1]
          }
        } catch {
          // a malformed description keeps the generic head
        }
        const match = new RegExp(`\\(?${this.plan.filename.replace(".", "\\.")}:(\\d+):(\\d+)\\)?`).exec(stack)
        const where = match === null ? "" : ` ${position(Number(match[1]), Number(match[2]), this.plan.lines)}`
        return this.finish({ kind: "exception", message: `${head}${where}` })
      }
      default:
        return this.finish({ kind: "worker-exit", message: "the engine instance sent a malformed outcome" })
    }
  }

  private async run(): Promise<CodeRunResult> {
    let outcome: QuickJSHandle | undefined
    let driver: QuickJSHandle | undefined
    let result: CodeRunResult | undefined
    try {
      const rt = this.instance.module.newRuntime()
      this.rt = rt
      rt.setMaxStackSize(this.limits.stackBytes + STACK_MARGIN)
      rt.setInterruptHandler(this.onInterrupt)
      const ctx = rt.newContext()
      this.ctx = ctx
      const callFunction = ctx.newFunction("call", this.onCall)
      const logFunction = ctx.newFunction("log", this.onLog)
      const planText = ctx.newString(JSON.stringify({
        namespaces: this.plan.namespaces,
        resultBytes: this.limits.resultBytes,
        consoleBytes: this.limits.consoleBytes
      }))
      const prelude = this.slice(() => ctx.evalCode(PRELUDE, PRELUDE_FILENAME, { type: "global", strict: true }))
      if (prelude.error !== undefined) {
        prelude.error.dispose()
        throw new Error("the prelude did not load")
      }
      const made = this.slice(() => ctx.callFunction(prelude.value, ctx.undefined, callFunction, logFunction, planText))
      prelude.value.dispose()
      callFunction.dispose()
      logFunction.dispose()
      planText.dispose()
      if (made.error !== undefined) {
        made.error.dispose()
        throw new Error("the prelude failed")
      }
      driver = made.value
      const compiled = this.slice(() => ctx.evalCode(this.plan.code, this.plan.filename, { type: "global" }))
      const started = this.slice(() =>
        compiled.error !== undefined
          ? ctx.callFunction(driver!, ctx.undefined, compiled.error, ctx.true)
          : ctx.callFunction(driver!, ctx.undefined, compiled.value, ctx.false)
      )
      ;(compiled.error ?? compiled.value).dispose()
      if (started.error !== undefined) started.error.dispose()
      else outcome = started.value
      while (result === undefined) {
        if (this.stopReason !== undefined || outcome === undefined) break
        if (ctx.typeof(outcome) === "string") {
          result = this.fromOutcome(ctx.getString(outcome))
          break
        }
        const state = ctx.getPromiseState(outcome)
        if (state.type === "fulfilled") {
          const text = ctx.typeof(state.value) === "string" ? ctx.getString(state.value) : "x"
          state.value.dispose()
          result = this.fromOutcome(text)
          break
        }
        if (state.type === "rejected") {
          state.error.dispose()
          result = this.finish({ kind: "exception", message: "the program failed while its outcome was read" })
          break
        }
        if (rt.hasPendingJob()) {
          const jobs = this.slice(() => rt.executePendingJobs())
          if (jobs.error !== undefined) jobs.error.dispose()
          continue
        }
        if (this.inFlight === 0 && this.queue.length === 0) {
          result = this.finish({
            kind: "exception",
            message: "the program is waiting for a promise that nothing will settle"
          })
          break
        }
        if (!this.woken) await new Promise<void>((resolve) => (this.waiter = resolve))
        this.woken = false
      }
    } catch (error) {
      this.died(error)
    }
    if (this.stopReason !== undefined) result = this.finish(this.stopReason)
    this.teardown(outcome, driver)
    return result ?? this.finish({ kind: "worker-exit", message: "the engine instance ended without an outcome" })
  }

  private teardown(outcome: QuickJSHandle | undefined, driver: QuickJSHandle | undefined): void {
    this.ended = true
    this.queue.length = 0
    this.waiter = undefined
    if (this.broken) return
    try {
      for (const deferred of this.pending.values()) if (deferred.alive) deferred.dispose()
      for (const deferred of this.orphans) if (deferred.alive) deferred.dispose()
      this.pending.clear()
      if (outcome?.alive === true) outcome.dispose()
      if (driver?.alive === true) driver.dispose()
      this.ctx?.dispose()
      this.rt?.dispose()
    } catch {
      this.broken = true
    }
  }
}
