/**
 * The messages between the main thread and a Pyodide worker, and the layout of an interpreter's
 * shared control buffer (created inside the interpreter's realm, handed to the main thread):
 * slot 0 is Pyodide's interrupt signal (the main thread writes SIGINT there to stop a program
 * mid-computation), slot 1 says whether guest code is running, slot 2 the CPU milliseconds it
 * used before the current slice, slot 3 when the current slice started (milliseconds after the
 * run's `base`).
 *
 * @internal
 */
import type { Limits } from "../../../src/CodeRuntime.js"

/** @internal */
export const SLOT = { signal: 0, computing: 1, used: 2, sliceStart: 3 } as const

/** The signal number written to stop a computing program (SIGINT). @internal */
export const SIGINT = 2

/** What a worker starts with. @internal */
export interface WorkerInit {
  readonly limits: Limits
  /** A memory snapshot of a freshly booted interpreter, when another worker already made one. */
  readonly snapshot?: Uint8Array | undefined
}

/** What the interpreter sees of one namespace. @internal */
export interface NamespacePlan {
  readonly global: string
  readonly names: ReadonlyArray<string>
  readonly errorClass: { readonly name: string; readonly member: string } | null
}

/** @internal */
export type ToWorker =
  | {
    readonly type: "run"
    readonly run: number
    readonly config: string
    readonly base: number
  }
  | { readonly type: "settle"; readonly run: number; readonly line: string }
  | { readonly type: "stop"; readonly run: number }

/** @internal */
export type FromWorker =
  | { readonly type: "snapshot"; readonly bytes: Uint8Array }
  | { readonly type: "warm"; readonly control: SharedArrayBuffer }
  | { readonly type: "fatal"; readonly message: string }
  | { readonly type: "line"; readonly run: number; readonly line: string }
  | { readonly type: "stopping"; readonly run: number; readonly kind: "output-limit" }
  | {
    readonly type: "done"
    readonly run: number
    readonly logs: ReadonlyArray<string>
    readonly outOfMemory: boolean
    /** The interpreter failed outside the program (a JavaScript error out of the realm). */
    readonly failure?: { readonly kind: "memory" | "worker-exit"; readonly message: string } | undefined
  }
