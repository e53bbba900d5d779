/**
 * Compiles bench entry files (and the library modules they reach) with tsc into a temporary
 * directory outside the checkout, so they run under plain node as the published `dist/` does.
 * The directory gets a `node_modules` link to the checkout's; nothing is written in the checkout.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** A compiled tree: `entry(name)` is the path of `bench/<name>.js` in it. */
export interface Build {
  readonly dir: string
  readonly entry: (name: string) => string
  readonly cleanup: () => void
  /** How long tsc took, in ms. */
  readonly ms: number
}

/** The checkout this file belongs to. */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

/** Compiles `bench/<name>.ts` for every name with the checkout's `tsconfig.build.json` options. */
export const build = (names: ReadonlyArray<string>): Build => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etr-compiled-"))
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true })
  try {
    fs.symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"), "dir")
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }))
    const config = {
      extends: path.join(root, "tsconfig.build.json"),
      compilerOptions: {
        rootDir: root,
        outDir: path.join(dir, "out"),
        declaration: false,
        declarationMap: false,
        sourceMap: false,
        incremental: false
      },
      include: [],
      files: names.map((name) => path.join(root, "bench", `${name}.ts`))
    }
    const tsconfig = path.join(dir, "tsconfig.json")
    fs.writeFileSync(tsconfig, JSON.stringify(config))
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
    const start = performance.now()
    const result = spawnSync(process.execPath, [tsc, "-p", tsconfig], { encoding: "utf8" })
    const ms = performance.now() - start
    const entry = (name: string) => path.join(dir, "out", "bench", `${name}.js`)
    if (result.status !== 0) {
      if (result.error !== undefined || !names.every((name) => fs.existsSync(entry(name)))) {
        throw new Error(`tsc failed:\n${result.stdout}${result.stderr}`)
      }
      console.warn(`tsc reported errors (the output was emitted and is used):\n${result.stdout}${result.stderr}`)
    }
    fs.writeFileSync(path.join(dir, "out", "package.json"), JSON.stringify({ type: "module" }))
    return { dir, entry, cleanup, ms }
  } catch (error) {
    cleanup()
    throw error
  }
}
