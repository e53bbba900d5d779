/**
 * The messages between the main thread and a QuickJS worker, and the stop codes the main thread
 * writes into a run's shared flag (read by the guest's interrupt handler while it computes, so
 * a stop lands even mid-loop; a `stop` message wakes a worker whose guest is idle).
 *
 * @internal
 */
import type { CodeRunResult, Limits } from "../../../src/CodeRuntime.js"
import type { Config } from "./config.js"
import type { CallOutcome, NamespacePlan, Stop } from "./session.js"
import { stopped } from "./session.js"

/** What a worker starts with (its `workerData`). @internal */
export interface WorkerInit {
  readonly config: Config
}

/** @internal */
export type ToWorker =
  | {
    readonly type: "run"
    readonly run: number
    readonly program: string
    readonly namespaces: ReadonlyArray<NamespacePlan>
    readonly flag: SharedArrayBuffer
  }
  | { readonly type: "settle"; readonly run: number; readonly call: number; readonly outcome: CallOutcome }
  | { readonly type: "stop"; readonly run: number }

/** @internal */
export type FromWorker =
  | { readonly type: "ready" }
  | { readonly type: "fatal"; readonly message: string }
  | {
    readonly type: "call"
    readonly run: number
    readonly call: number
    readonly namespace: number
    readonly index: number
    readonly args: string
  }
  | { readonly type: "done"; readonly run: number; readonly result: CodeRunResult }

/** @internal */
export const STOP = { none: 0, aborted: 1, wall: 2, interrupted: 3, shutDown: 4 } as const

/** @internal */
export type StopCode = (typeof STOP)[keyof typeof STOP]

/** The stop a code stands for, or `undefined` for none. @internal */
export const stopOf = (code: number, limits: Limits): Stop | undefined => {
  switch (code) {
    case STOP.aborted:
      return stopped.aborted
    case STOP.wall:
      return stopped.wall(limits)
    case STOP.interrupted:
      return stopped.interrupted
    case STOP.shutDown:
      return stopped.shutDown
    default:
      return undefined
  }
}
