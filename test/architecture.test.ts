/**
 * Issue 19 item 3: the folders of `src/` and `layers/` depend on each other in one direction,
 * written down in `docs/architecture.md` and checked here from the real import graph (every
 * `import`, `export … from` and `import("…")` of every source file, read with the TypeScript
 * parser).
 *
 * A folder's dependencies are what its modules import, directly or through public modules: a
 * public module (`src/X.ts`, `layers/X.ts`) is a thin front, so an import of it stands for what it
 * imports in turn. Value imports must go down the order below; a type-only import may go up only
 * where it is one of the listed public/internal type pairs (the shape Effect's own modules have:
 * the public module declares the types, its internal folder implements them).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const repo = fileURLToPath(new URL("..", import.meta.url))

/** The folders, lowest first: a folder may import (by value) only folders before it. */
const ORDER: ReadonlyArray<string> = [
  "src/internal/base",
  "src/internal/schema",
  "src/internal/definition",
  "src/internal/log",
  "src/internal/telemetry",
  "src/internal/pipeline",
  "src/internal/approval",
  "src/internal/scheduler",
  "src/internal/durable",
  "src/internal/cluster",
  "src/internal/codeMode",
  "src/internal/ai",
  "src/internal/mcp",
  "src/internal/facade",
  "layers/internal/sql",
  "layers/internal/registry",
  "layers/internal/approval",
  "layers/internal/quickjs",
  "layers/internal/python",
  "layers/internal/pyodide",
  "layers/internal/durable",
  "layers/internal/cluster",
  "layers/internal/presets"
]

/**
 * Type-only imports that go against the order: each is a public/internal pair (the upper folder's
 * public module declares a type the lower folder's code names), never a value dependency.
 */
const ALLOWED_TYPE_EDGES: ReadonlyArray<readonly [string, string, string]> = [
  ["src/internal/definition", "src/internal/log", "a definition names its presenter types (`Presentation`)"]
]

interface Edge {
  readonly from: string
  readonly to: string
  readonly typeOnly: boolean
}

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(path.join(repo, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"))
    .map((entry) => path.relative(repo, path.join(entry.parentPath, entry.name)).split(path.sep).join("/"))
    .sort()

const isTypeOnlyImport = (node: ts.ImportDeclaration): boolean => {
  const clause = node.importClause
  if (clause === undefined) return false
  if (clause.isTypeOnly) return true
  if (clause.name !== undefined) return false
  const bindings = clause.namedBindings
  if (bindings === undefined || ts.isNamespaceImport(bindings)) return false
  return bindings.elements.length > 0 && bindings.elements.every((element) => element.isTypeOnly)
}

const isTypeOnlyExport = (node: ts.ExportDeclaration): boolean => {
  if (node.isTypeOnly) return true
  const clause = node.exportClause
  return clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 &&
    clause.elements.every((element) => element.isTypeOnly)
}

/** The relative imports of one file, resolved to repository paths. */
const importsOf = (file: string): Array<Edge> => {
  const text = fs.readFileSync(path.join(repo, file), "utf8")
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false)
  const edges: Array<Edge> = []
  const add = (specifier: string, typeOnly: boolean) => {
    if (!specifier.startsWith(".")) return
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, ".ts")
    edges.push({ from: file, to: target, typeOnly })
  }
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, isTypeOnlyImport(node))
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, isTypeOnlyExport(node))
    } else if (
      ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length === 1 && ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0].text, false)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, true)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return edges
}

/** The folder of a module inside `internal/`; `undefined` for a public module. */
const folderOf = (file: string): string | undefined => {
  const parts = file.split("/")
  return parts[1] === "internal" && parts.length >= 4 ? parts.slice(0, 3).join("/") : undefined
}

const files = [...sourceFiles("src"), ...sourceFiles("layers")]
const edges = files.flatMap(importsOf)
const importsByFile = new Map<string, Array<Edge>>()
for (const edge of edges) importsByFile.set(edge.from, [...(importsByFile.get(edge.from) ?? []), edge])

/**
 * The folders `file` reaches: its own imports of internal modules, and through public modules
 * what they reach in turn. An edge is type-only when any step on its path is.
 */
const foldersReached = (file: string): Map<string, { typeOnly: boolean; via: string }> => {
  const reached = new Map<string, { typeOnly: boolean; via: string }>()
  const seen = new Map<string, boolean>()
  const walk = (current: string, typeOnly: boolean, via: string): void => {
    for (const edge of importsByFile.get(current) ?? []) {
      const asType = typeOnly || edge.typeOnly
      const folder = folderOf(edge.to)
      const route = via === "" ? edge.to : `${via} → ${edge.to}`
      if (folder !== undefined) {
        const known = reached.get(folder)
        if (known === undefined || (known.typeOnly && !asType)) reached.set(folder, { typeOnly: asType, via: route })
        continue
      }
      const before = seen.get(edge.to)
      if (before === false || before === asType) continue
      seen.set(edge.to, asType)
      walk(edge.to, asType, route)
    }
  }
  walk(file, false, "")
  return reached
}

const rank = (folder: string): number => ORDER.indexOf(folder)

/** A type-only import from a folder into a public module fronting a folder it may name by type. */
const isAllowedTypePair = (edge: Edge): boolean => {
  const own = folderOf(edge.from)
  if (!edge.typeOnly || own === undefined) return false
  const target = folderOf(edge.to)
  const targets = target !== undefined ? [target] : [...foldersReached(edge.to).keys()]
  return targets.some((folder) => ALLOWED_TYPE_EDGES.some(([from, to]) => from === own && to === folder))
}

describe("import direction (issue 19)", () => {
  it("every internal folder is in the documented order", () => {
    const folders = new Set(files.map(folderOf).filter((folder) => folder !== undefined))
    const missing = [...folders].filter((folder) => rank(folder) < 0)
    assert.deepStrictEqual(missing, [], "folders missing from ORDER (and from docs/architecture.md)")
  })

  it("the order and the allowed type pairs are written down in docs/architecture.md", () => {
    const doc = fs.readFileSync(path.join(repo, "docs", "architecture.md"), "utf8")
    const folders = new Set(files.map(folderOf).filter((folder) => folder !== undefined))
    for (const folder of folders) {
      const short = folder.startsWith("src/") ? folder.slice("src/".length) : folder
      assert.include(doc, `\`${short}/\``, `docs/architecture.md does not name ${short}/`)
    }
    for (const [from, to] of ALLOWED_TYPE_EDGES) {
      assert.include(doc, `${from.split("/").pop()} ⇢ ${to.split("/").pop()}`, `the type pair ${from} ⇢ ${to}`)
    }
  })

  it("nothing in src/ imports layers/", () => {
    const offending = edges.filter((edge) => edge.from.startsWith("src/") && edge.to.startsWith("layers/"))
    assert.deepStrictEqual(offending.map((edge) => `${edge.from} → ${edge.to}`), [])
  })

  it("every import resolves to a file of the tree", () => {
    const missing = edges.filter((edge) => !fs.existsSync(path.join(repo, edge.to)))
    assert.deepStrictEqual(missing.map((edge) => `${edge.from} → ${edge.to}`), [])
  })

  it("internal folders import only folders below them (values), and only the listed pairs above (types)", () => {
    const against: Array<string> = []
    const usedPairs = new Set<string>()
    for (const file of files) {
      const own = folderOf(file)
      if (own === undefined) continue
      for (const [folder, { typeOnly, via }] of foldersReached(file)) {
        if (folder === own || rank(folder) < rank(own)) continue
        const pair = ALLOWED_TYPE_EDGES.find(([from, to]) => from === own && to === folder)
        if (typeOnly && pair !== undefined) {
          usedPairs.add(`${own} ⇢ ${folder}`)
          continue
        }
        against.push(`${file} → ${folder} (${typeOnly ? "type" : "value"}, via ${via})`)
      }
    }
    assert.deepStrictEqual(against, [])
    const unused = ALLOWED_TYPE_EDGES.map(([from, to]) => `${from} ⇢ ${to}`).filter((pair) => !usedPairs.has(pair))
    assert.deepStrictEqual(unused, [], "allowed type pairs that no import uses any more: remove them")
  })

  it("layers/internal folders are imported only by layers/", () => {
    const offending = edges.filter((edge) =>
      edge.to.startsWith("layers/internal/") && !edge.from.startsWith("layers/")
    )
    assert.deepStrictEqual(offending.map((edge) => `${edge.from} → ${edge.to}`), [])
  })

  it("no import cycle spans two folders, but through the listed type pairs", () => {
    const graph = new Map<string, Array<string>>()
    for (const edge of edges) {
      if (isAllowedTypePair(edge)) continue
      graph.set(edge.from, [...(graph.get(edge.from) ?? []), edge.to])
    }
    const index = new Map<string, number>()
    const low = new Map<string, number>()
    const stack: Array<string> = []
    const onStack = new Set<string>()
    const cycles: Array<Array<string>> = []
    let counter = 0
    const connect = (node: string): void => {
      index.set(node, counter)
      low.set(node, counter)
      counter++
      stack.push(node)
      onStack.add(node)
      for (const next of graph.get(node) ?? []) {
        if (!index.has(next)) {
          connect(next)
          low.set(node, Math.min(low.get(node)!, low.get(next)!))
        } else if (onStack.has(next)) {
          low.set(node, Math.min(low.get(node)!, index.get(next)!))
        }
      }
      if (low.get(node) === index.get(node)) {
        const component: Array<string> = []
        let member: string
        do {
          member = stack.pop()!
          onStack.delete(member)
          component.push(member)
        } while (member !== node)
        if (component.length > 1) cycles.push(component.sort())
      }
    }
    for (const file of files) if (!index.has(file)) connect(file)
    const badCycles = cycles.filter((component) => {
      const internal = new Set(component.map(folderOf).filter((folder) => folder !== undefined))
      return internal.size > 1
    })
    assert.deepStrictEqual(badCycles, [])
  })
})
