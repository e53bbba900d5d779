/**
 * The generated SDKs are real code: the TypeScript declarations type-check (and type a program's
 * calls), and the Python declarations execute under CPython with the class names, methods,
 * docstrings and required keys they promise.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import ts from "typescript"
import * as CodeSdk from "../src/CodeSdk.js"
import type { SdkTool } from "../src/CodeSdk.js"
import { goldenTools } from "./fixtures/codeSdk.js"

const CLOSED = { type: "object", additionalProperties: false }
const closed = (properties: Record<string, unknown>, required: ReadonlyArray<string> = []) => ({
  ...CLOSED,
  properties,
  ...(required.length > 0 ? { required } : {})
})
const lists = (depth: number, leaf: unknown): unknown => {
  let schema = leaf
  for (let i = 0; i < depth; i++) schema = { type: "array", items: schema }
  return schema
}

const HOSTILE_TEXT = "Ends */ early; a\u0000b\u007f\u0085 \ud800 \\path\\ \"quoted\" \u2028 trailing\\"

/** Exotic names, keywords, escapes, collisions, deep lists and long unions, plus the §19.4 tools. */
const exoticTools = (): Array<SdkTool> => [
  ...goldenTools(),
  { name: "match", description: HOSTILE_TEXT, parameters: closed({ match: { type: "string" }, _: { type: "integer" } }, ["match"]) },
  { name: "_hidden", description: HOSTILE_TEXT, parameters: CLOSED, output: CLOSED },
  { name: "__proto__", description: "Proto.", parameters: JSON.parse("{\"type\":\"object\",\"properties\":{\"__proto__\":{\"type\":\"string\"}}}") },
  { name: "constructor", description: "\"", parameters: { type: "object" }, output: { type: "string", const: "a\"b\\c\u2028" } },
  { name: "__debug__", description: "", parameters: { type: "object" } },
  { name: "a-b", description: "", parameters: closed({ "a-b": { type: "string" }, x: { type: "string" } }) },
  { name: "a_b", description: "\\", parameters: closed({ __x: { type: "string" } }), output: closed({ type: closed({}) }) },
  { name: "line\nbreak \ud800", description: "", parameters: CLOSED },
  { name: "café", description: "Accented.", parameters: closed({ ﬁle: { type: "string" } }), output: lists(181, { type: "string" }) },
  {
    name: "deep_lists",
    description: "",
    parameters: closed({ grid: lists(190, closed({ cell: { type: "integer" } }, ["cell"])) }),
    output: { oneOf: Array.from({ length: 300 }, (_, i) => ({ type: "integer", const: i === 0 ? 2 ** 60 : i })) }
  },
  {
    name: "numbers",
    description: "",
    parameters: closed({ n: { type: "number", enum: [1e21, 1.5, 1e-7, -0.5] } }, ["n"]),
    output: { type: "array", items: { oneOf: [closed({ a: { type: "string" } }, ["a"]), { type: "null" }] } }
  },
  { name: "unsupported", description: "", parameters: { type: "object", properties: { n: { type: "integer", minimum: 1 } } } }
]

const USAGE = `
async function main() {
  const file = await tools.read_file({ path: "/x", extra: [1, { deep: null }] })
  const text: string = file.text
  const kind: "file" | "dir" | undefined = file.kind
  const n: number | undefined = file.lines?.[0]?.n
  const exotic: string | null = await tools["my-mcp.tool"]({})
  const yes: true = await tools.class({ q: [1, { a: null }] })
  const quoted: "a\\"b\\\\c\\u2028" = await tools.constructor({})
  const rows: Array<{ a: string } | null> = await tools.numbers({ n: 1e21 })
  const loose: unknown = await tools.unsupported({})
  await tools.match({ match: "m", _: 1 })
  try {
    await tools.__proto__({ __proto__: "p" })
  } catch (error) {
    if (error instanceof ToolCallError) {
      const name: ToolName = error.toolName
      const label: "ToolCallError" = error.name
      return [name, label, error.message]
    }
  }
  return [text, kind, n, exotic, yes, quoted, rows, loose]
}
`

const MISUSE = `
async function misuse() {
  await tools.read_file({})
  const wrong: number = (await tools.read_file({ path: "a" })).text
  await tools.match({ match: "m", extra: 1 })
  await tools.not_a_tool({})
  return wrong
}
`

const diagnosticsOf = (source: string): ReadonlyArray<ts.Diagnostic> => {
  const fileName = "/sdk/main.ts"
  const options: ts.CompilerOptions = {
    strict: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    lib: ["lib.es2022.d.ts"],
    types: []
  }
  const host = ts.createCompilerHost(options)
  const getSourceFile = host.getSourceFile
  host.getSourceFile = (name, language, onError, create) =>
    name === fileName ? ts.createSourceFile(name, source, language) : getSourceFile.call(host, name, language, onError, create)
  host.fileExists = ((exists) => (name: string) => name === fileName || exists(name))(host.fileExists)
  const program = ts.createProgram({ rootNames: [fileName], options, host })
  return [...program.getSyntacticDiagnostics(), ...program.getGlobalDiagnostics(), ...program.getSemanticDiagnostics()]
}

const describeDiagnostics = (diagnostics: ReadonlyArray<ts.Diagnostic>): string =>
  diagnostics.map((d) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`).join("\n")

describe("the TypeScript SDK compiles", () => {
  it("SDK-4…SDK-7: the declarations of an exotic tool set type-check and type a program's calls", () => {
    const declarations = CodeSdk.declarationsTypeScript(exoticTools())
    const clean = diagnosticsOf(`${declarations}\n${USAGE}`)
    assert.strictEqual(clean.length, 0, describeDiagnostics(clean))
    const misuse = diagnosticsOf(`${declarations}\n${MISUSE}`)
    assert.deepStrictEqual(misuse.map((d) => d.code), [2345, 2322, 2353, 2339], describeDiagnostics(misuse))
  })
})

const python = spawnSync("python3", ["-c", "import sys; print(sys.version_info >= (3, 11))"], { encoding: "utf8" })
const hasPython = python.status === 0 && python.stdout.trim() === "True"

/** Executes the declarations and reports what a program would see of them, as JSON. */
const INSPECT = `
import json, sys, typing
source = sys.stdin.read()
compile(source, "<sdk>", "exec")
scope = {"__name__": "sdk"}
exec(source, scope)
tools_class = scope["Tools"]
typed = {
  name: {"required": sorted(value.__required_keys__), "optional": sorted(value.__optional_keys__)}
  for name, value in scope.items()
  if isinstance(value, type) and typing.is_typeddict(value)
}
methods = {
  name: value.__doc__
  for name, value in vars(tools_class).items()
  if callable(value) and not name.startswith("_")
}
print(json.dumps({"typed": typed, "methods": methods, "error": {k: repr(v) for k, v in scope["ToolCallError"].__annotations__.items()}}, ensure_ascii=True))
`

describe.skipIf(!hasPython)("the Python SDK executes (needs python3 ≥ 3.11 on PATH)", () => {
  it("SDK-8…SDK-13: the declarations of an exotic tool set run under CPython with the promised stubs", () => {
    const declarations = CodeSdk.declarationsPython(exoticTools())
    const run = spawnSync("python3", ["-I", "-S", "-c", INSPECT], { input: declarations, encoding: "utf8" })
    assert.strictEqual(run.status, 0, run.stderr)
    const seen = JSON.parse(run.stdout) as {
      typed: Record<string, { required: Array<string>; optional: Array<string> }>
      methods: Record<string, string | null>
      error: Record<string, string>
    }
    assert.deepStrictEqual(Object.keys(seen.methods).sort(), ["a_b", "café", "constructor", "deep_lists", "match", "numbers", "read_file", "unsupported"])
    const doc = (name: string): string | null | undefined => seen.methods[name]
    assert.strictEqual(doc("read_file"), "Read a file from disk.")
    assert.strictEqual(doc("match"), "Ends */ early; a\\x00b\\x7f\\x85 \\ud800 \\path\\ \"quoted\" trailing\\")
    assert.strictEqual(doc("constructor"), "\"")
    assert.strictEqual(doc("a_b"), "\\")
    assert.strictEqual(doc("numbers"), null)
    assert.deepStrictEqual(seen.typed.ReadFileArgs, { required: ["path"], optional: ["limit"] })
    assert.deepStrictEqual(seen.typed.ReadFileOutput, { required: ["text"], optional: ["kind", "lines"] })
    assert.deepStrictEqual(seen.typed.ReadFileOutputLines, { required: ["n"], optional: [] })
    assert.deepStrictEqual(seen.typed.MatchArgs, { required: ["match"], optional: ["_"] })
    assert.deepStrictEqual(seen.typed.ProtoArgs, { required: [], optional: ["__proto__"] })
    assert.deepStrictEqual(seen.typed.ABOutputType, { required: [], optional: [] })
    assert.deepStrictEqual(seen.typed.DeepListsArgs, { required: [], optional: ["grid"] })
    assert.isUndefined(seen.typed.ABArgs, "a-b has a non-identifier property, so its arguments are a dict")
    assert.isUndefined(seen.typed.DeepListsArgsGrid, "lists deeper than 180 stop before the item class")
    assert.deepStrictEqual(seen.error, { toolName: "<class 'str'>" })
  })
})
