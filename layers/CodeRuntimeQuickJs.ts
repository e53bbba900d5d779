/**
 * The embedded code runtime: TypeScript (type-stripped, erasable syntax only) or JavaScript in
 * QuickJS compiled to WebAssembly. Each run gets a fresh engine instance with its own capped
 * memory; a program sees only the request's namespaces, their error classes and `console`, and
 * every outcome, limits included, comes back as a `CodeRunResult`.
 *
 * `layer` runs programs in the caller's thread (tests, simple hosts); `layerWorker` hosts the
 * engine in a pool of worker threads so guest CPU never blocks the caller's event loop.
 *
 * Needs the optional peer packages `quickjs-emscripten-core@0.32.0`,
 * `@jitl/quickjs-wasmfile-release-sync@0.32.0` and, for TypeScript, `amaro`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { availableParallelism } from "node:os"
import type { Limits, Service } from "../src/CodeRuntime.js"
import { CodeRuntime, CodeRuntimeError } from "../src/CodeRuntime.js"
import { readConfig } from "./internal/quickjs/options.js"
import * as InThread from "./internal/quickjs/inThread.js"
import * as InWorkers from "./internal/quickjs/inWorkers.js"

/**
 * Options of both layers: any of the `Limits` (each a positive integer; `memoryBytes` at least
 * 16 MiB and at most 2 GiB, `stackBytes` between 64 KiB and 4 MiB; the rest keep
 * `defaultLimits`), and `typescript: false` to run plain JavaScript (language `javascript`, no
 * stripping; Code Mode renders SDKs for `typescript` only).
 *
 * @since 0.1.0
 * @category models
 */
export type Options =
  & { readonly [K in keyof Limits]?: Limits[K] | undefined }
  & { readonly typescript?: boolean | undefined }

const configOf = (options: unknown, extraKeys?: ReadonlyArray<string>) => {
  const read = readConfig(options, extraKeys)
  return "problem" in read
    ? Effect.fail(new CodeRuntimeError({ message: `invalid CodeRuntimeQuickJs options: ${read.problem}` }))
    : Effect.succeed(read)
}

/**
 * The in-thread runtime as a scoped service: closing the scope stops live runs and waits for
 * their teardown. Fails when an option is invalid or the engine packages cannot be loaded.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: Options): Effect.Effect<Service, CodeRuntimeError, Scope.Scope> =>
  Effect.flatMap(configOf(options), ({ config }) => InThread.make(config))

/**
 * The runtime in the caller's thread (isolation `wasm`). Guest CPU time runs on the caller's
 * event loop, so an abort or wall deadline takes effect at the latest when the CPU budget ends a
 * busy program; use `layerWorker` where that matters.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<CodeRuntime, CodeRuntimeError> =>
  Layer.scoped(CodeRuntime, make(options))

/**
 * Options of `layerWorker`: those of `layer`, plus `poolSize` (worker threads, each running
 * one program at a time; default `min(2, availableParallelism())`).
 *
 * @since 0.1.0
 * @category models
 */
export type WorkerOptions = Options & { readonly poolSize?: number | undefined }

const MAX_POOL = 256

const poolOptionsOf = (extra: Readonly<Record<string, unknown>>): InWorkers.PoolOptions | string => {
  const size = extra.poolSize ?? Math.max(1, Math.min(2, availableParallelism()))
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 1 || size > MAX_POOL) {
    return `poolSize must be an integer from 1 to ${MAX_POOL}`
  }
  return { poolSize: size }
}

/**
 * The worker-pool runtime as a scoped service: the workers start with the scope (the service
 * fails if they cannot load the engine) and are terminated, and awaited, when it closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeWorker = (options?: WorkerOptions): Effect.Effect<Service, CodeRuntimeError, Scope.Scope> =>
  Effect.flatMap(configOf(options, ["poolSize"]), ({ config, extra }) => {
    const pool = poolOptionsOf(extra)
    return typeof pool === "string"
      ? Effect.fail(new CodeRuntimeError({ message: `invalid CodeRuntimeQuickJs options: ${pool}` }))
      : InWorkers.make(config, pool)
  })

/**
 * The runtime hosted in a pool of `worker_threads` (isolation `wasm`): guest CPU never blocks
 * the caller's event loop, aborts and deadlines land even while a program computes, and a
 * worker that dies ends its run with `worker-exit` and is replaced. Runs beyond the pool size
 * wait for a free worker.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWorker = (options?: WorkerOptions): Layer.Layer<CodeRuntime, CodeRuntimeError> =>
  Layer.scoped(CodeRuntime, makeWorker(options))
