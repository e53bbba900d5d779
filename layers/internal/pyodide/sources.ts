/**
 * The files of the pinned `pyodide` package (314.0.7), read once per worker, and its two ES
 * modules turned into scripts that run inside a `vm` context: `pyodide.asm.mjs` (the Emscripten
 * module factory) and `pyodide.mjs` (`loadPyodide`). Each rewrite is an exact text replacement
 * that must match exactly the expected number of times; any other package version fails here,
 * loudly, rather than boot half-patched.
 *
 * Pyodide then runs in Emscripten's "shell" environment: it reads its files through the realm's
 * `readbuffer`/`read` (served from memory by the worker) and never sees Node.
 *
 * @internal
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { Script } from "node:vm"

/** The package version this runtime is written against. @internal */
export const PYODIDE_VERSION = "314.0.7"

/** Where the realm finds the package files. @internal */
export const INDEX_URL = "/pyodide/"

/** The package's files and its two modules compiled as scripts (context-independent). @internal */
export interface Assets {
  readonly files: ReadonlyMap<string, Uint8Array>
  readonly lockfile: string
  /** Evaluates to `_createPyodideModule`. */
  readonly factory: Script
  /** Evaluates to `{ loadPyodide, version }`. */
  readonly loader: Script
}

const replaceExactly = (source: string, from: string, to: string, times: number, what: string): string => {
  const parts = source.split(from)
  if (parts.length - 1 !== times) {
    throw new Error(
      `the pyodide package is not the expected ${PYODIDE_VERSION} build (${what}: found ${parts.length - 1} times, expected ${times})`
    )
  }
  return parts.join(to)
}

/** `pyodide.asm.mjs` as a script evaluating to its factory. @internal */
export const factorySource = (module: string): string => {
  let source = replaceExactly(module, "import.meta.url", JSON.stringify(`file://${INDEX_URL}pyodide.asm.mjs`), 3, "import.meta")
  // The shell branch of Emscripten's random source needs d8's os.system; use crypto.getRandomValues.
  source = replaceExactly(
    source,
    "if(ENVIRONMENT_IS_SHELL){return view=>{if(!os.system)",
    "if(false){return view=>{if(!os.system)",
    1,
    "shell random source"
  )
  source = replaceExactly(source, "export default _createPyodideModule;", "return _createPyodideModule;", 1, "export")
  return `(function(){"use strict";${source}\n})()`
}

/** `pyodide.mjs` as a script evaluating to `{ loadPyodide, version }`. @internal */
export const loaderSource = (module: string): string => {
  const exported = /export\{(\w+) as loadPyodide,(\w+) as version\};/.exec(module)
  if (exported === null) throw new Error(`the pyodide package is not the expected ${PYODIDE_VERSION} build (exports)`)
  const source = replaceExactly(
    module,
    exported[0],
    `return{loadPyodide:${exported[1]},version:${exported[2]}};`,
    1,
    "exports"
  ).replace(/\/\/# sourceMappingURL=\S*\s*$/, "")
  return `(function(){"use strict";${source}\n})()`
}

/**
 * Reads the package (resolved from this module) and prepares its scripts. Throws an `Error`
 * whose message says what is missing.
 *
 * @internal
 */
export const loadAssets = (): Assets => {
  let dir: string
  let version: unknown
  try {
    const require = createRequire(import.meta.url)
    const manifest = require.resolve("pyodide/package.json")
    dir = dirname(manifest)
    version = (JSON.parse(readFileSync(manifest, "utf8")) as { version?: unknown }).version
  } catch (error) {
    throw new Error(
      `the Pyodide code runtime needs the optional package pyodide@${PYODIDE_VERSION} (${
        error instanceof Error ? error.message : "not installed"
      })`
    )
  }
  if (version !== PYODIDE_VERSION) {
    throw new Error(`the Pyodide code runtime needs pyodide@${PYODIDE_VERSION}, found ${String(version)}`)
  }
  const read = (name: string) => new Uint8Array(readFileSync(join(dir, name)))
  const files = new Map<string, Uint8Array>([
    [`${INDEX_URL}pyodide.asm.wasm`, read("pyodide.asm.wasm")],
    [`${INDEX_URL}python_stdlib.zip`, read("python_stdlib.zip")]
  ])
  return {
    files,
    lockfile: readFileSync(join(dir, "pyodide-lock.json"), "utf8"),
    factory: new Script(factorySource(readFileSync(join(dir, "pyodide.asm.mjs"), "utf8")), {
      filename: "pyodide.asm.js"
    }),
    loader: new Script(loaderSource(readFileSync(join(dir, "pyodide.mjs"), "utf8")), { filename: "pyodide.js" })
  }
}
