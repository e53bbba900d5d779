/**
 * Docs that compile and stand alone (issue 11 item 5): every ```ts block of README.md and
 * docs/**\/*.md is type-checked, as one TypeScript program, in a temporary project that reaches
 * this package only through its public entry points (`package.json` `exports`, mapped back to
 * the sources). A block that is deliberately a fragment opts out with ```ts nocheck. User docs
 * explain rules in words: no spec rule ids, no links into the spec.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = fileURLToPath(new URL("..", import.meta.url))

// ---------------------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------------------

interface Block {
  /** The markdown file, relative to the repository root. */
  readonly file: string
  /** The 1-based line of the block's first code line in that file. */
  readonly line: number
  readonly code: string
  readonly nocheck: boolean
}

const FENCE = /^( {0,3}|\s*)(`{3,}|~{3,})(.*)$/

/** The ```ts / ```typescript blocks of one markdown text, with their first code line. */
const extractBlocks = (markdown: string, file: string): ReadonlyArray<Block> => {
  const lines = markdown.split(/\r?\n/)
  const blocks: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (open === null) continue
    const [, indent, fence, rest] = open
    const words = rest!.trim().split(/\s+/).filter((word) => word.length > 0)
    const body: Array<string> = []
    let j = i + 1
    for (; j < lines.length; j++) {
      const close = FENCE.exec(lines[j]!)
      if (close !== null && close[2]![0] === fence![0] && close[2]!.length >= fence!.length && close[3]!.trim() === "") break
      body.push(lines[j]!.startsWith(indent!) ? lines[j]!.slice(indent!.length) : lines[j]!.trimStart())
    }
    const lang = (words[0] ?? "").toLowerCase()
    if (lang === "ts" || lang === "typescript") {
      blocks.push({ file, line: i + 2, code: body.join("\n"), nocheck: words.slice(1).includes("nocheck") })
    }
    i = j
  }
  return blocks
}

const markdownFiles = (): ReadonlyArray<string> => {
  const out: Array<string> = ["README.md"]
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const relative = path.posix.join(dir, entry.name)
      if (entry.isDirectory()) walk(relative)
      else if (entry.name.endsWith(".md")) out.push(relative)
    }
  }
  walk("docs")
  return out.sort()
}

// ---------------------------------------------------------------------------------------------
// Entry points: package.json `exports`, mapped back to the sources
// ---------------------------------------------------------------------------------------------

/** The first path target of an export value (a string, a condition object, or an array). */
const targetOf = (value: unknown): string | undefined => {
  if (typeof value === "string") return value
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = targetOf(item)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === "object" && value !== null) {
    const conditions = value as Record<string, unknown>
    for (const key of ["types", "import", "default", "node", ...Object.keys(conditions)]) {
      if (key in conditions) {
        const found = targetOf(conditions[key])
        if (found !== undefined) return found
      }
    }
  }
  return undefined
}

/**
 * The source file behind an export target, relative to the root: a `.ts` source as it is; a
 * built file (`dist/src/Tool.d.ts`, `dist/src/Tool.js`, `dist/Tool.js`) as the `.ts` file it was
 * built from (the out-dir prefix removed, then tried as it is and under `src/`).
 */
const sourceOf = (target: string, exists: (relative: string) => boolean): string | undefined => {
  const relative = target.replace(/^\.\//, "")
  if (/\.(c|m)?tsx?$/.test(relative) && !/\.d\.(c|m)?ts$/.test(relative)) return relative
  const base = relative.replace(/\.d\.(c|m)?ts$|\.(c|m)?js$/, "")
  const slash = base.indexOf("/")
  const stripped = slash < 0 ? base : base.slice(slash + 1)
  const candidates = [`${base}.ts`, `${stripped}.ts`, `src/${stripped}.ts`]
  return base.includes("*") ? candidates[1] : candidates.find(exists)
}

interface EntryPoints {
  /** tsconfig `paths`: specifier → [source], relative to the root. */
  readonly paths: Readonly<Record<string, ReadonlyArray<string>>>
  /** Export keys whose target has no source here. */
  readonly unmapped: ReadonlyArray<string>
}

const entryPoints = (name: string, exports: unknown, exists: (relative: string) => boolean): EntryPoints => {
  const entries: Record<string, unknown> =
    typeof exports === "string" || Array.isArray(exports) ||
      (typeof exports === "object" && exports !== null && !Object.keys(exports).some((key) => key.startsWith(".")))
      ? { ".": exports }
      : exports as Record<string, unknown>
  const paths: Record<string, ReadonlyArray<string>> = {}
  const unmapped: Array<string> = []
  for (const [key, value] of Object.entries(entries)) {
    if (!key.startsWith(".") || key === "./package.json") continue
    const target = targetOf(value)
    const source = target === undefined ? undefined : sourceOf(target, exists)
    if (source === undefined) {
      unmapped.push(key)
      continue
    }
    paths[key === "." ? name : `${name}/${key.slice(2)}`] = [source]
  }
  return { paths, unmapped }
}

// ---------------------------------------------------------------------------------------------
// The check
// ---------------------------------------------------------------------------------------------

interface Failure {
  readonly file: string
  readonly line: number
  readonly message: string
}

const blockFileName = (block: Block, index: number) =>
  `${String(index).padStart(3, "0")}_${block.file.replace(/[^A-Za-z0-9]+/g, "_")}_L${block.line}.ts`

/**
 * Type-checks `blocks` as one TypeScript program (what `tsc --noEmit` does, but every block's
 * syntax and type errors are reported); each error located at its markdown line.
 */
const typecheck = (blocks: ReadonlyArray<Block>, paths: EntryPoints["paths"]): ReadonlyArray<Failure> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-check-"))
  const realDir = fs.realpathSync(dir)
  try {
    fs.symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"), "dir")
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
    const byFile = new Map<string, Block>()
    blocks.forEach((block, index) => {
      const name = blockFileName(block, index)
      byFile.set(name, block)
      fs.writeFileSync(path.join(dir, name), `${block.code}\nexport {}\n`)
    })
    const tsconfig = {
      extends: path.join(root, "tsconfig.json"),
      compilerOptions: {
        noEmit: true,
        noUnusedLocals: false,
        noUnusedParameters: false,
        skipLibCheck: true,
        types: ["node"],
        paths: Object.fromEntries(
          Object.entries(paths).map(([specifier, targets]) => [specifier, targets.map((t) => path.join(root, t))])
        )
      },
      files: Array.from(byFile.keys()),
      include: []
    }
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(tsconfig, null, 2))
    const parsed = ts.getParsedCommandLineOfConfigFile(path.join(dir, "tsconfig.json"), {}, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
      }
    })
    if (parsed === undefined) throw new Error("the temporary tsconfig could not be read")
    const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options })
    const failures: Array<Failure> = []
    for (const source of program.getSourceFiles()) {
      const block = path.dirname(source.fileName) === dir || path.dirname(source.fileName) === realDir
        ? byFile.get(path.basename(source.fileName))
        : undefined
      if (block === undefined) continue
      // syntax errors of one block never hide the type errors of the others
      const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
      for (const diagnostic of diagnostics) {
        const line = diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line
        failures.push({
          file: block.file,
          line: block.line + line,
          message: `TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`
        })
      }
    }
    return failures.sort((a, b) => a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const report = (failures: ReadonlyArray<Failure>): string =>
  failures.map((f) => `${f.file}:${f.line}: ${f.message}`).join("\n")

// ---------------------------------------------------------------------------------------------
// Rule ids and spec links
// ---------------------------------------------------------------------------------------------

const RULE_PREFIXES = [
  "OQ", "PTC", "AROUND", "D", "BODY", "POST", "SCHED", "ERR", "CREATE", "SDK", "PRE", "TYPES", "REG", "OUT", "SCOPE",
  "MODE", "DEF", "SCHEMA", "FIN", "CTX", "APPR", "DSL", "VAL", "RT", "PREC", "TIMEOUT", "PRES", "HOST", "OBS", "JSON",
  "EXEC", "GUARD", "FREEZE"
]
const RULE_ID = new RegExp(`\\b(?:T-[A-Z]+-\\d{3}|(?:${RULE_PREFIXES.join("|")})-\\d+[a-z]?|S\\d{2}[a-z]?)\\b`, "g")
const SPEC_REFERENCE = /\.\.\/shared\/|§|\b[Ss]pec (?:rule|section)|\b[Ss]ee (?:the )?spec\b|pipeline-spec|DECISIONS\.md|\b[Ii]ssue \d+ item/g

const offending = (file: string, pattern: RegExp): ReadonlyArray<string> => {
  const out: Array<string> = []
  fs.readFileSync(path.join(root, file), "utf8").split(/\r?\n/).forEach((text, index) => {
    for (const match of text.matchAll(pattern)) out.push(`${file}:${index + 1}: ${match[0]}`)
  })
  return out
}

// ---------------------------------------------------------------------------------------------

const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
  readonly name: string
  readonly exports: unknown
}
const exists = (relative: string) => fs.existsSync(path.join(root, relative))

describe("issue 11 item 5: docs compile against the public entry points", () => {
  it("entry points map back to sources from either exports layout", () => {
    const present = new Set(["src/index.ts", "src/Tool.ts", "layers/index.ts", "layers/Presets.ts"])
    const has = (relative: string) => present.has(relative)
    assert.deepStrictEqual(
      entryPoints("pkg", { ".": "./src/index.ts", "./layers": "./layers/index.ts" }, has),
      { paths: { pkg: ["src/index.ts"], "pkg/layers": ["layers/index.ts"] }, unmapped: [] }
    )
    assert.deepStrictEqual(
      entryPoints("pkg", {
        ".": { types: "./dist/src/index.d.ts", import: "./dist/src/index.js" },
        "./Tool": { import: "./dist/src/Tool.js", types: "./dist/src/Tool.d.ts" },
        "./layers/Presets": { types: "./dist/layers/Presets.d.ts", import: "./dist/layers/Presets.js" },
        "./Flat": { import: { types: "./dist/Tool.d.ts", default: "./dist/Tool.js" } },
        "./Gone": { types: "./dist/src/Gone.d.ts" },
        "./package.json": "./package.json"
      }, has),
      {
        paths: {
          pkg: ["src/index.ts"],
          "pkg/Tool": ["src/Tool.ts"],
          "pkg/layers/Presets": ["layers/Presets.ts"],
          "pkg/Flat": ["src/Tool.ts"]
        },
        unmapped: ["./Gone"]
      }
    )
    assert.deepStrictEqual(entryPoints("pkg", "./src/index.ts", has), { paths: { pkg: ["src/index.ts"] }, unmapped: [] })
  })

  it("blocks are extracted with their file and first code line; `ts nocheck` opts out", () => {
    const markdown = [
      "# Title", //                      1
      "```ts", //                        2
      "const a = 1", //                  3
      "```", //                          4
      "", //                             5
      "- item", //                       6
      "  ```typescript nocheck", //      7
      "  const b = 2", //                8
      "  ```", //                        9
      "```sh", //                        10
      "npm test", //                     11
      "```", //                          12
      "````ts", //                       13
      "```", //                          14
      "````" //                          15
    ].join("\n")
    assert.deepStrictEqual(extractBlocks(markdown, "x.md"), [
      { file: "x.md", line: 3, code: "const a = 1", nocheck: false },
      { file: "x.md", line: 8, code: "const b = 2", nocheck: true },
      { file: "x.md", line: 14, code: "```", nocheck: false }
    ])
  })

  it("every ts block of README.md and docs/**/*.md type-checks (one program; failures by file and line)", () => {
    const entries = entryPoints(pkg.name, pkg.exports, exists)
    assert.property(entries.paths, pkg.name, "the root entry point maps to a source")
    assert.deepStrictEqual(entries.unmapped, [], "every export maps back to a source file")
    const blocks = markdownFiles().flatMap((file) => extractBlocks(fs.readFileSync(path.join(root, file), "utf8"), file))
    assert.isAbove(blocks.length, 20)
    const canary: Block = {
      file: "<canary>",
      line: 10,
      code: `import { Tool } from "${pkg.name}"\nconst n: number = Tool.defineTool\nexport const ok = 1`,
      nocheck: false
    }
    const checked = [...blocks.filter((block) => !block.nocheck), canary]
    const failures = typecheck(checked, entries.paths)
    const [fromCanary, fromDocs] = [
      failures.filter((f) => f.file === "<canary>"),
      failures.filter((f) => f.file !== "<canary>")
    ]
    assert.deepStrictEqual(fromCanary.map((f) => f.line), [11], `the checker reports the canary: ${report(failures)}`)
    assert.strictEqual(fromDocs.length, 0, `doc blocks that do not compile:\n${report(fromDocs)}`)
  }, 240_000)

  it("user docs explain rules in words: no spec rule ids, no spec links or issue references", () => {
    const userDocs = markdownFiles().filter((file) => file !== "docs/decisions.md")
    const found = userDocs.flatMap((file) => [...offending(file, RULE_ID), ...offending(file, SPEC_REFERENCE)])
    assert.deepStrictEqual(found, [])
  })

  it("docs/decisions.md reads on its own: no links into the spec, no 'see the spec'", () => {
    const found = offending("docs/decisions.md", /\.\.\/shared\/|§|pipeline-spec|DECISIONS\.md|\b[Ss]ee (?:the )?spec\b|\b[Ii]ssue \d+ item/g)
    assert.deepStrictEqual(found, [])
  })
})
