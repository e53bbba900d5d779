/**
 * A `CodeRuntime` that runs Python as CPython compiled to WebAssembly (the `pyodide` package),
 * for machines and containers where the subprocess sandbox cannot be built (no user namespaces,
 * Docker's default seccomp profile, macOS). Same language, SDK, bridge and outcome kinds as
 * `CodeRuntimePython`.
 *
 * **The boundary.** Each run gets a fresh interpreter in its own JavaScript realm (a `vm`
 * context whose code generation from strings is disabled) inside a worker thread. The realm
 * holds only realm-own objects: no `process`, `require`, module loading, network, timers of the
 * host or host files; Pyodide runs there in its "shell" mode and never loads Node's modules. A
 * program that reaches JavaScript through Pyodide's FFI (which the runner also closes:
 * `import js` and `import pyodide_js` fail) reaches only that realm, where
 * `Function("…")` throws. The tools bindings are the only door: the program writes JSON lines
 * to a device and the host answers through the runner.
 *
 * **Limits.** `cpuMs` (guest computation only, stopped through Pyodide's interrupt buffer and,
 * if the program ignores it, by terminating the worker), `wallMs`, `memoryBytes` (the
 * interpreter's whole linear memory, about 30 MiB of it taken by Python itself; at least
 * 48 MiB), `stackBytes` (the recursion limit, one frame per KiB), `consoleBytes`,
 * `resultBytes`, `sourceBytes`, `maxToolCalls`, `maxInFlight`.
 *
 * **Start-up.** The first worker boots Pyodide (seconds) and snapshots the clean interpreter's
 * memory; every interpreter after that is restored from the snapshot (about half a second) while
 * no run waits for it: each worker keeps one warm interpreter, uses it for exactly one run, then
 * prepares the next.
 *
 * Needs the optional peer package `pyodide@314.0.7`, loaded only by the workers.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { availableParallelism } from "node:os"
import type { Limits, Service } from "../src/CodeRuntime.js"
import type { SandboxUnavailableError } from "../src/CodeRuntime.js"
import { CodeRuntime, CodeRuntimeError, defaultLimits, limitKeys } from "../src/CodeRuntime.js"
import * as Runtime from "./internal/pyodide/runtime.js"

/**
 * Options: limits that differ from `CodeRuntime.defaultLimits`, and `poolSize` (worker threads,
 * each with one warm interpreter; default `min(2, availableParallelism())`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly limits?: { readonly [K in keyof Limits]?: Limits[K] | undefined } | undefined
  readonly poolSize?: number | undefined
}

/** The smallest memory cap: the restored interpreter alone takes about 30 MiB. */
const MIN_MEMORY_BYTES = 48 * 1024 * 1024
const MAX_MEMORY_BYTES = 2 * 1024 * 1024 * 1024
const MAX_TIMER_MS = 2147483647
const MAX_POOL = 64

const read = (options: unknown): { readonly limits: Limits; readonly poolSize: number } | string => {
  const limits: Record<string, number> = { ...defaultLimits }
  let poolSize = Math.max(1, Math.min(2, availableParallelism()))
  if (options === undefined) return { limits: limits as unknown as Limits, poolSize }
  if (typeof options !== "object" || options === null) return "options must be an object"
  let given: Record<string, unknown>
  try {
    given = { ...options as Record<string, unknown> }
  } catch {
    return "options could not be read"
  }
  for (const key of Object.keys(given)) if (key !== "limits" && key !== "poolSize") return `unknown option ${JSON.stringify(key)}`
  if (given.poolSize !== undefined) {
    const size = given.poolSize
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 1 || size > MAX_POOL) {
      return `poolSize must be an integer from 1 to ${MAX_POOL}`
    }
    poolSize = size
  }
  if (given.limits !== undefined) {
    if (typeof given.limits !== "object" || given.limits === null) return "limits must be an object"
    let fields: Record<string, unknown>
    try {
      fields = { ...given.limits as Record<string, unknown> }
    } catch {
      return "limits could not be read"
    }
    for (const [key, value] of Object.entries(fields)) {
      if (value === undefined) continue
      if (!(limitKeys as ReadonlyArray<string>).includes(key)) return `unknown limit ${JSON.stringify(key)}`
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) return `limits.${key} must be a positive integer`
      if (key === "memoryBytes" && (value < MIN_MEMORY_BYTES || value > MAX_MEMORY_BYTES)) {
        return `limits.memoryBytes must be from 48 MiB (${MIN_MEMORY_BYTES}) to 2 GiB (${MAX_MEMORY_BYTES})`
      }
      if ((key === "cpuMs" || key === "wallMs") && value > MAX_TIMER_MS) return `limits.${key} must be at most ${MAX_TIMER_MS}`
      limits[key] = value
    }
  }
  return { limits: Object.freeze(limits) as unknown as Limits, poolSize }
}

/**
 * The runtime as a scoped service: the workers start with the scope (the first one boots Pyodide
 * and makes the snapshot) and are terminated, and awaited, when it closes. Fails with a
 * `CodeRuntimeError` when an option is invalid or Pyodide cannot be loaded, and with a
 * `SandboxUnavailableError` when a fresh realm fails its check (it compiles code from strings or
 * holds a host global): it never runs a program outside its boundary.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: Options): Effect.Effect<Service, CodeRuntimeError | SandboxUnavailableError, Scope.Scope> =>
  Effect.suspend(() => {
    const config = read(options)
    return typeof config === "string"
      ? Effect.fail(new CodeRuntimeError({ message: `invalid CodeRuntimePyodide options: ${config}` }))
      : Runtime.make(config.limits, config.poolSize)
  })

/**
 * Python in WebAssembly as the mounted `CodeRuntime` (language `python`, isolation `wasm`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<CodeRuntime, CodeRuntimeError | SandboxUnavailableError> =>
  Layer.scoped(CodeRuntime, make(options))
