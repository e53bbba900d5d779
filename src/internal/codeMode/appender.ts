/**
 * The settle records of one `run_code` run (PTC-10/13/14): appended to the durable log off the
 * lane, by one fiber, in commit order, with backpressure on the lane; every append is awaited
 * before the body returns.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as ToolCallLog from "../../ToolCallLog.js"
import { appendOrFail } from "../scheduler/lane.js"
import type { CodeRun } from "./codeRun.js"

/**
 * PTC-10/13: the settle records of one run, appended off the lane by one fiber, in commit order.
 * Nothing is appended after the run's first failure.
 *
 * @internal
 */
export class Appender {
  private readonly queue: Array<ToolCallLog.LogRecord> = []
  private busy = false
  private closing = false
  private fiber: Fiber.RuntimeFiber<void> | undefined = undefined
  private wake: ((resume: Effect.Effect<void>) => void) | undefined = undefined
  private progress: ((resume: Effect.Effect<void>) => void) | undefined = undefined

  constructor(readonly run: CodeRun, readonly log: ToolCallLog.Service) {}

  private get pending(): number {
    return this.queue.length + (this.busy ? 1 : 0)
  }

  private readonly loop: Effect.Effect<void> = Effect.suspend(() => {
    if (this.run.failure !== undefined) this.queue.length = 0
    const record = this.queue.shift()
    if (record !== undefined) {
      this.busy = true
      return Effect.flatMap(appendOrFail(this.run, this.log, record), () => {
        this.busy = false
        const progress = this.progress
        this.progress = undefined
        progress?.(Effect.void)
        return this.loop
      })
    }
    if (this.closing) return Effect.void
    return Effect.flatMap(
      Effect.async<void>((resume) => {
        if (this.queue.length > 0 || this.closing) return resume(Effect.void)
        this.wake = resume
      }),
      () => this.loop
    )
  })

  push(record: ToolCallLog.LogRecord): void {
    if (this.run.failure !== undefined) return
    this.queue.push(record)
    const wake = this.wake
    this.wake = undefined
    wake?.(Effect.void)
  }

  /** While more appends than the cap are pending, the lane waits (PTC-10). */
  readonly backpressure: Effect.Effect<void> = Effect.suspend(() => {
    if (this.fiber === undefined && this.queue.length > 0) {
      return Effect.flatMap(Effect.forkDaemon(this.loop), (fiber) => {
        this.fiber = fiber
        return this.backpressure
      })
    }
    if (this.pending <= this.run.maxParallel) return Effect.void
    return Effect.flatMap(
      Effect.async<void>((resume) => {
        if (this.pending <= this.run.maxParallel) return resume(Effect.void)
        this.progress = resume
      }),
      () => this.backpressure
    )
  })

  /** Every pending append, awaited (PTC-14). */
  readonly close: Effect.Effect<void> = Effect.suspend(() => {
    this.closing = true
    const wake = this.wake
    this.wake = undefined
    wake?.(Effect.void)
    return this.fiber === undefined ? Effect.void : Effect.asVoid(Fiber.await(this.fiber))
  })
}
