/**
 * Issue 11 items 1 and 2: the package as a user gets it. The working tree is staged into a
 * temporary directory (nothing is written into the checkout: no race with a concurrent build),
 * `npm pack` runs there (its `prepack` script builds `dist/`), the tarball is installed offline
 * into a fresh consumer project whose peers are symlinked from this repository's node_modules,
 * then a plain Node ESM script imports every entry point and runs a call, and `tsc` checks a
 * consumer under strict, noUncheckedIndexedAccess, exactOptionalPropertyTypes and NodeNext with
 * `skipLibCheck: false`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const repo = fileURLToPath(new URL("..", import.meta.url))
const fixture = path.join(repo, "test", "fixtures", "consumer")
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "effect-tool-runtime-packaging-"))
const staging = path.join(tmp, "package")
const consumer = path.join(tmp, "consumer")
const installed = path.join(consumer, "node_modules", "effect-tool-runtime")
const resolvedLog = path.join(tmp, "resolved.log")

afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
})

/** What a fresh clone has: the working tree without installs, build output and local files. */
const UNSTAGED_NAMES = new Set(["node_modules", ".git", "dist", "coverage", "scratch"])
const UNSTAGED_FILE = /\.(sqlite|db|tsbuildinfo)(-\w+)?$/

/**
 * The environment of child processes: no `npm_*` variables inherited from an enclosing `npm test`,
 * and no `NODE_OPTIONS` (a preloaded loader such as tsx would hide a `.ts` import from plain Node).
 */
const childEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.toLowerCase().startsWith("npm_") && key !== "NODE_OPTIONS") env[key] = value
  }
  return { ...env, NO_UPDATE_NOTIFIER: "1", npm_config_update_notifier: "false", npm_config_fund: "false" }
}

interface Output {
  readonly stdout: string
  readonly stderr: string
}

const run = (
  command: string,
  args: ReadonlyArray<string>,
  cwd: string,
  extraEnv: Readonly<Record<string, string>> = {}
): Promise<Output> =>
  new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd, env: { ...childEnv(), ...extraEnv }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error === null) resolve({ stdout, stderr })
        else reject(new Error(`\`${command} ${args.join(" ")}\` failed in ${cwd}: ${error.message}\n${stdout}\n${stderr}`))
      }
    )
  })

const npmCache = path.join(tmp, "npm-cache")
const npm = (args: ReadonlyArray<string>, cwd: string): Promise<Output> =>
  run("npm", [...args, "--cache", npmCache, "--no-audit", "--no-fund", "--loglevel", "error"], cwd)
const tsc = (args: ReadonlyArray<string>, cwd: string): Promise<Output> =>
  run(process.execPath, [path.join(repo, "node_modules", "typescript", "bin", "tsc"), ...args], cwd)

/** Files under `dir`, relative, with `/` separators, sorted. */
const walk = (dir: string): Array<string> =>
  fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join("/"))
    .sort()

/** The public modules of a staged source directory: its `.ts` files, without `index.ts` and `internal/`. */
const publicModules = (dir: string): Array<string> =>
  fs.readdirSync(path.join(staging, dir))
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts") && file !== "index.ts")
    .map((file) => file.slice(0, -3))
    .sort()

/** Modules of src/ that import an optional peer, so the root barrel leaves them out. */
const PEER_ONLY_MODULES: ReadonlyArray<string> = ["AgentLoop", "AiToolkit", "DurableTurn", "McpTools", "ToolSession"]

const entry = (base: string) => ({ types: `./dist/${base}.d.ts`, import: `./dist/${base}.js` })

/** The `exports` map the module tree calls for: the barrels, then one subpath per public module. */
const expectedExports = (): Record<string, unknown> => {
  const map: Record<string, unknown> = { ".": entry("src/index") }
  for (const name of publicModules("src")) map[`./${name}`] = entry(`src/${name}`)
  map["./layers"] = entry("layers/index")
  for (const name of publicModules("layers")) map[`./layers/${name}`] = entry(`layers/${name}`)
  map["./package.json"] = "./package.json"
  return map
}

type Settled<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly error: unknown }
const settle = <A>(promise: Promise<A>): Promise<Settled<A>> =>
  promise.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }))
const valueOf = <A>(settled: Settled<A> | undefined): A => {
  if (settled === undefined) throw new Error("the packaging setup did not run")
  if (!settled.ok) throw settled.error
  return settled.value
}

interface Manifest {
  readonly name: string
  readonly type?: string
  readonly main?: string
  readonly types?: string
  readonly sideEffects?: unknown
  readonly exports: Record<string, unknown>
  readonly files?: ReadonlyArray<string>
  readonly scripts?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
}

interface Packed {
  readonly filename: string
  readonly files: ReadonlyArray<string>
  readonly manifest: Manifest
}

interface RunSummary {
  readonly entries: Record<string, ReadonlyArray<string>>
  readonly emitted: ReadonlyArray<string>
  readonly result: unknown
  readonly batch: unknown
  readonly workers: unknown
}

let packed: Settled<Packed> | undefined
let nodeRun: Settled<RunSummary> | undefined
let typeCheck: Settled<Output> | undefined

/** Stages the tree, packs it (prepack builds), installs the tarball into a fresh consumer. */
const packAndInstall = async (): Promise<Packed> => {
  fs.cpSync(repo, staging, {
    recursive: true,
    filter: (source) => {
      const name = path.basename(source)
      return source === repo || (!UNSTAGED_NAMES.has(name) && !UNSTAGED_FILE.test(name))
    }
  })
  fs.symlinkSync(path.join(repo, "node_modules"), path.join(staging, "node_modules"), "dir")
  const pack = await npm(["pack", "--json", "--pack-destination", tmp], staging)
  const report = JSON.parse(pack.stdout) as ReadonlyArray<{ filename: string; files: ReadonlyArray<{ path: string }> }>
  const first = report[0]
  if (first === undefined) throw new Error(`npm pack reported nothing: ${pack.stdout}`)
  const tarball = path.join(tmp, path.basename(first.filename))

  fs.mkdirSync(consumer)
  for (const file of ["package.json", "tsconfig.json", "run.mjs", "register.mjs", "hooks.mjs"]) {
    fs.copyFileSync(path.join(fixture, file), path.join(consumer, file))
  }
  fs.copyFileSync(path.join(fixture, "main.ts.txt"), path.join(consumer, "main.ts"))
  // Peers are not installed by npm (no network): the repository's own copies are linked in.
  await npm(["install", "--offline", "--legacy-peer-deps", "--ignore-scripts", "--no-package-lock", tarball], consumer)
  const manifest = JSON.parse(fs.readFileSync(path.join(installed, "package.json"), "utf8")) as Manifest
  for (const peer of [...Object.keys(manifest.peerDependencies ?? {}), "@types/node"]) {
    const source = path.join(repo, "node_modules", peer)
    if (!fs.existsSync(source)) continue
    const target = path.join(consumer, "node_modules", peer)
    fs.mkdirSync(path.dirname(target), { recursive: true })
    fs.symlinkSync(source, target, "dir")
  }
  // Every entry point's types, so the check covers each shipped .d.ts, not only what main.ts uses.
  const specifiers = Object.keys(manifest.exports)
    .filter((key) => key !== "./package.json")
    .map((key) => key === "." ? manifest.name : `${manifest.name}${key.slice(1)}`)
  fs.writeFileSync(
    path.join(consumer, "entries.ts"),
    specifiers.map((specifier, index) => `export type * as Entry${index} from "${specifier}"\n`).join("")
  )
  return { filename: tarball, files: first.files.map((file) => file.path).sort(), manifest }
}

const nodeConsumer = async (): Promise<RunSummary> => {
  fs.writeFileSync(resolvedLog, "")
  const output = await run(process.execPath, ["--import", "./register.mjs", "run.mjs"], consumer, {
    RESOLVED_LOG: resolvedLog
  })
  return JSON.parse(output.stdout) as RunSummary
}

beforeAll(async () => {
  packed = await settle(packAndInstall())
  if (!packed.ok) return
  ;[nodeRun, typeCheck] = await Promise.all([
    settle(nodeConsumer()),
    settle(tsc(["-p", "tsconfig.json", "--noEmit"], consumer))
  ])
}, 180_000)

describe("packaging (issue 11 items 1 and 2)", () => {
  it("issue 11 item 1: exports maps the barrel and every public module of src/ and layers/ to dist/ with types then import", () => {
    const { manifest } = valueOf(packed)
    const expected = expectedExports()
    const actualKeys = Object.keys(manifest.exports)
    const expectedKeys = Object.keys(expected)
    assert.deepStrictEqual(
      {
        missing: expectedKeys.filter((key) => !actualKeys.includes(key)),
        extra: actualKeys.filter((key) => !expectedKeys.includes(key))
      },
      { missing: [], extra: [] },
      "package.json exports must list exactly the public modules (src/*.ts, layers/*.ts but index and internal/)"
    )
    assert.deepStrictEqual(manifest.exports, expected)
    for (const [key, target] of Object.entries(manifest.exports)) {
      if (typeof target === "object" && target !== null) {
        assert.deepStrictEqual(Object.keys(target), ["types", "import"], `condition order of ${key}`)
      }
    }
    assert.strictEqual(manifest.type, "module")
    assert.strictEqual(manifest.sideEffects, false)
    assert.strictEqual(manifest.main, "./dist/src/index.js")
    assert.strictEqual(manifest.types, "./dist/src/index.d.ts")
    assert.strictEqual(manifest.scripts?.["prepack"], "npm run build")
    assert.isUndefined(manifest.scripts?.["prepare"], "a prepare script would run on every npm ci")
  })

  it("issue 11 item 1: README's \"Installing and importing\" section names every entry point", () => {
    const { manifest } = valueOf(packed)
    const readme = fs.readFileSync(path.join(staging, "README.md"), "utf8")
    const start = readme.indexOf("\n## Installing and importing\n")
    assert.isAtLeast(start, 0, "README.md has an \"Installing and importing\" section")
    const end = readme.indexOf("\n## ", start + 1)
    const section = readme.slice(start, end === -1 ? undefined : end)
    const modules = Object.keys(manifest.exports)
      .filter((key) => key.split("/").length > 1 && key !== "./layers" && key !== "./package.json")
      .map((key) => key.slice(key.lastIndexOf("/") + 1))
    assert.deepStrictEqual(modules.filter((name) => !section.includes(`\`${name}\``)), [])
    for (const barrel of ["`effect-tool-runtime`", "`effect-tool-runtime/layers`"]) assert.include(section, barrel)
  })

  it("issue 11 item 1: the tarball holds dist/ (js, d.ts and their maps), the sources the maps point at, docs, README, LICENSE — nothing of test/, bench/, .ci/ or examples/", () => {
    const { files, manifest } = valueOf(packed)
    for (const required of ["package.json", "README.md", "LICENSE", "dist/src/index.js", "dist/layers/index.d.ts"]) {
      assert.include(files, required)
    }
    const allowed = /^(package\.json|README\.md|LICENSE|dist\/(src|layers)\/.+\.(js|js\.map|d\.ts|d\.ts\.map)|(src|layers)\/.+\.ts|docs\/.+\.md)$/
    assert.deepStrictEqual(files.filter((file) => !allowed.test(file)), [])
    assert.deepStrictEqual(files.filter((file) => /^(test|bench|\.ci|examples|scratch|node_modules)\//.test(file)), [])
    assert.notInclude(files, "package-lock.json")
    // Every export target ships.
    for (const target of Object.values(manifest.exports)) {
      const paths = typeof target === "string" ? [target] : Object.values(target as Record<string, string>)
      for (const file of paths) assert.include(files, file.slice(2), `export target ${file}`)
    }
    // Every module of src/ and layers/ (internal ones included) is emitted with its declarations.
    const sources = files.filter((file) => /^(src|layers)\/.+\.ts$/.test(file))
    const tree = ["src", "layers"].flatMap((dir) => walk(path.join(staging, dir)).map((file) => `${dir}/${file}`))
    assert.deepStrictEqual(sources, tree.filter((file) => file.endsWith(".ts")).sort())
    for (const source of sources) {
      const base = `dist/${source.slice(0, -3)}`
      for (const suffix of [".js", ".js.map", ".d.ts", ".d.ts.map"]) assert.include(files, `${base}${suffix}`)
    }
    // The sources ship only because the maps point at them, and no map points at a missing file.
    const mapped = new Set<string>()
    for (const map of files.filter((file) => file.endsWith(".map"))) {
      const parsed = JSON.parse(fs.readFileSync(path.join(installed, map), "utf8")) as { sources: ReadonlyArray<string> }
      for (const source of parsed.sources) {
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(map), source))
        assert.include(files, resolved, `${map} points at ${source}`)
        mapped.add(resolved)
      }
    }
    assert.deepStrictEqual(sources.filter((source) => !mapped.has(source)), [])
    // What npm reported is what got installed.
    assert.deepStrictEqual(walk(installed), files)
  })

  it("issue 11 item 2: plain Node ESM imports every entry point and every emitted module, barrels re-export the same modules, and a call and a batch run through the runtime", () => {
    const { files, manifest } = valueOf(packed)
    const summary = valueOf(nodeRun)
    assert.deepStrictEqual(
      Object.keys(summary.entries),
      Object.keys(manifest.exports).filter((key) => key !== "./package.json").map((key) =>
        key === "." ? manifest.name : `${manifest.name}${key.slice(1)}`
      )
    )
    // The root barrel has every public module of src/ as a namespace, except the modules that
    // need an optional peer (`@effect/ai`, the MCP SDK, `@effect/workflow`): those are only on their own subpaths.
    assert.deepStrictEqual(
      summary.entries[manifest.name],
      publicModules("src").filter((name) => !PEER_ONLY_MODULES.includes(name))
    )
    for (const name of PEER_ONLY_MODULES) assert.property(summary.entries, `${manifest.name}/${name}`)
    assert.include(summary.entries[`${manifest.name}/Tool`], "defineTool")
    assert.deepStrictEqual(summary.emitted, files.filter((file) => file.endsWith(".js")))
    assert.deepStrictEqual(summary.result, {
      isError: false,
      value: { sum: 42 },
      content: [{ type: "text", text: "20 + 22 = 42" }]
    })
    assert.deepStrictEqual(summary.batch, [["b1", { sum: 3 }], ["b2", { sum: 7 }]])
    // The worker-hosted runtimes start their worker threads from the installed dist/.
    assert.deepStrictEqual(summary.workers, {
      quickjs: { value: 42, logs: [] },
      pyodide: { value: [42, "emscripten"], logs: [] }
    })
  })

  it("issue 11 item 2: at runtime only JavaScript is loaded — no .ts file, and the package resolves to dist/ only", () => {
    valueOf(nodeRun)
    const urls = [...new Set(fs.readFileSync(resolvedLog, "utf8").split("\n").filter((line) => line !== ""))]
    assert.deepStrictEqual(urls.filter((url) => /\.[cm]?tsx?$/.test(new URL(url).pathname)), [])
    const ours = urls.filter((url) => url.includes("/node_modules/effect-tool-runtime/"))
    assert.isAbove(ours.length, 0)
    assert.deepStrictEqual(ours.filter((url) => !/\/node_modules\/effect-tool-runtime\/dist\/.+\.js$/.test(url)), [])
  })

  it("issue 11 item 2: a TypeScript consumer type-checks against the shipped declarations under strict, noUncheckedIndexedAccess, exactOptionalPropertyTypes and NodeNext, with skipLibCheck false", () => {
    valueOf(packed)
    const output = valueOf(typeCheck)
    assert.strictEqual(`${output.stdout}${output.stderr}`, "")
    const options = JSON.parse(fs.readFileSync(path.join(consumer, "tsconfig.json"), "utf8")) as {
      compilerOptions: Record<string, unknown>
    }
    assert.deepInclude(options.compilerOptions, {
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      module: "NodeNext",
      moduleResolution: "NodeNext",
      skipLibCheck: false
    })
  })
})
