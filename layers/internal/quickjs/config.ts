/**
 * The configuration of the QuickJS code runtime (the limits and whether programs are
 * TypeScript) and the engine's bounds. Plain data, so a worker receives it as `workerData`;
 * this module imports no runtime values, which keeps the worker's module graph small.
 *
 * @internal
 */
import type { Limits } from "../../../src/CodeRuntime.js"

/** @internal */
export interface Config {
  readonly limits: Limits
  readonly typescript: boolean
}

/** @internal */
export const WASM_PAGE = 64 * 1024

/** The engine's floor: the WebAssembly module asks for 256 initial pages. @internal */
export const MIN_MEMORY_BYTES = 256 * WASM_PAGE

/** The module's declared maximum memory (32768 pages). @internal */
export const MAX_MEMORY_BYTES = 32768 * WASM_PAGE

/** The guest stack lives in the module's 5 MiB C stack; this leaves room for the engine itself. @internal */
export const MAX_STACK_BYTES = 4 * 1024 * 1024

/** @internal */
export const MIN_STACK_BYTES = 64 * 1024

/** A byte count as `N bytes`, `N KiB` or `N MiB` when it is a whole multiple. @internal */
export const formatBytes = (bytes: number): string =>
  bytes % (1024 * 1024) === 0
    ? `${bytes / (1024 * 1024)} MiB`
    : bytes % 1024 === 0
    ? `${bytes / 1024} KiB`
    : `${bytes} bytes`
