/**
 * The QuickJS engine: the optional peer packages loaded and the WebAssembly module compiled once
 * per process (lazily, on first use), then one fresh instance per run over its own capped
 * `WebAssembly.Memory`. The memory's `maximum` is the memory limit (`setMemoryLimit` does not
 * bound totals in this build); a wrapped `grow` records when the instance ran out of it, even
 * if the program caught the error.
 *
 * @internal
 */
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import type { QuickJSSyncVariant, QuickJSWASMModule } from "quickjs-emscripten-core"
import { WASM_PAGE } from "./config.js"
import { stackHighOf } from "./wasmLayout.js"

type Core = typeof import("quickjs-emscripten-core")

/** The package's default export, whichever way the module system wrapped it. */
const variantOf = (module: unknown): QuickJSSyncVariant => {
  const outer = (module as { readonly default?: unknown }).default
  const inner = (outer as { readonly default?: unknown } | undefined)?.default
  const candidate = (outer as { readonly type?: unknown } | undefined)?.type === "sync" ? outer : inner
  if ((candidate as { readonly type?: unknown } | undefined)?.type !== "sync") throw new Error("not the sync variant")
  return candidate as QuickJSSyncVariant
}

/** One engine instance: never reused after its run. @internal */
export interface Instance {
  readonly module: QuickJSWASMModule
  readonly memory: WebAssembly.Memory
  /** Where the C stack starts (it grows down). */
  readonly stackHigh: number
  /** The instance asked for memory beyond its cap and did not get it. */
  readonly outOfMemory: () => boolean
  /** Why the WebAssembly module aborted, if it did. */
  readonly abortReason: () => string | undefined
}

/** @internal */
export interface Engine {
  readonly instantiate: (memoryBytes: number) => Promise<Instance>
}

/** Emscripten's heap resize tries three sizes before malloc fails. */
const GROW_ATTEMPTS = 3

const silent = () => {}

const load = async (): Promise<Engine> => {
  const require = createRequire(import.meta.url)
  let core: Core
  let variant: QuickJSSyncVariant
  let bytes: Uint8Array<ArrayBuffer>
  try {
    core = await import("quickjs-emscripten-core")
    variant = variantOf(await import("@jitl/quickjs-wasmfile-release-sync"))
    bytes = new Uint8Array(await readFile(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")))
  } catch (error) {
    throw new Error(
      "the QuickJS code runtime needs the optional packages quickjs-emscripten-core@0.32.0 and " +
        `@jitl/quickjs-wasmfile-release-sync@0.32.0 (${error instanceof Error ? error.message : "not loadable"})`
    )
  }
  const stackHigh = stackHighOf(bytes)
  if (stackHigh === undefined) throw new Error("the QuickJS WebAssembly module has an unexpected layout")
  const wasmModule = await WebAssembly.compile(bytes)
  const instantiate = async (memoryBytes: number): Promise<Instance> => {
    const maximum = Math.floor(memoryBytes / WASM_PAGE)
    const memory = new WebAssembly.Memory({ initial: 256, maximum })
    const grow = memory.grow
    let failures = 0
    let outOfMemory = false
    Object.defineProperty(memory, "grow", {
      value: (delta: number): number => {
        try {
          const previous = grow.call(memory, delta)
          failures = 0
          return previous
        } catch (error) {
          failures += 1
          if (failures >= GROW_ATTEMPTS || memory.buffer.byteLength >= maximum * WASM_PAGE) outOfMemory = true
          throw error
        }
      }
    })
    let abortReason: string | undefined
    const module = await core.newQuickJSWASMModuleFromVariant(core.newVariant(variant, {
      wasmModule,
      wasmMemory: memory,
      emscriptenModule: {
        print: silent,
        printErr: silent,
        onAbort: (what: unknown) => {
          abortReason = typeof what === "string" && what !== "" ? what : "aborted"
        }
      } as Record<string, unknown>
    }))
    if (module.getWasmMemory() !== memory) throw new Error("the QuickJS instance did not take its capped memory")
    return {
      module,
      memory,
      stackHigh,
      outOfMemory: () => outOfMemory,
      abortReason: () => abortReason
    }
  }
  return { instantiate }
}

let engine: Promise<Engine> | undefined

/**
 * The process's engine, loaded on first call. A failed load is not cached, so installing the
 * packages later works.
 *
 * @internal
 */
export const loadEngine = (): Promise<Engine> => {
  if (engine === undefined) {
    engine = load()
    engine.catch(() => {
      engine = undefined
    })
  }
  return engine
}
