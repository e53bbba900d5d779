import { assert, describe, it } from "@effect/vitest"
import * as CodeSdk from "../src/CodeSdk.js"
import type { SdkTool } from "../src/CodeSdk.js"
import * as Dsl from "../src/Dsl.js"
import { goldenTools } from "./fixtures/codeSdk.js"

/** §19.4 TypeScript declaration block, copied from the spec. */
const GOLDEN_TS = `
type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

interface ToolArgsMap {
  class: {
    q?: JsonValue;
  } & Record<string, JsonValue>;
  /** Exotic name. */
  "my-mcp.tool": Record<string, JsonValue>;
  /** Read a file from disk. */
  read_file: {
    /** Absolute file path */
    path: string;
    limit?: number;
  } & Record<string, JsonValue>;
}

interface ToolOutputMap {
  class: true;
  "my-mcp.tool": string | null;
  read_file: {
    text: string;
    kind?: "file" | "dir";
    lines?: ({
      n: number;
    } & Record<string, JsonValue>)[];
  };
}

type ToolName = keyof ToolOutputMap

declare class ToolCallError extends Error {
  readonly name: "ToolCallError";
  readonly toolName: ToolName;
}

declare const tools: {
  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;
}
`.slice(1, -1)

/** §19.4 Python declaration block, copied from the spec. */
const GOLDEN_PY = `
from typing import Any, Literal, NotRequired, Protocol, TypedDict

class ToolCallError(Exception):
    toolName: str

class ClassArgs(TypedDict):
    q: NotRequired[Any]
    # Additional keys beyond those declared are allowed.

class ReadFileArgs(TypedDict):
    # Absolute file path
    path: str
    limit: NotRequired[int]
    # Additional keys beyond those declared are allowed.

class ReadFileOutputLines(TypedDict):
    n: int
    # Additional keys beyond those declared are allowed.

class ReadFileOutput(TypedDict):
    text: str
    kind: NotRequired[Literal["file", "dir"]]
    lines: NotRequired[list[ReadFileOutputLines]]

class Tools(Protocol):
    # tools["class"](args: ClassArgs) -> Literal[True]
    # tools["my-mcp.tool"](args: dict[str, Any]) -> str | None
    #   Exotic name.
    async def read_file(self, args: ReadFileArgs) -> ReadFileOutput:
        """Read a file from disk."""

tools: Tools
`.slice(1, -1)

const EMPTY_TS = `type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

interface ToolArgsMap {}

interface ToolOutputMap {}

type ToolName = keyof ToolOutputMap

declare class ToolCallError extends Error {
  readonly name: "ToolCallError";
  readonly toolName: ToolName;
}

declare const tools: {
  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;
}`

const EMPTY_PY = `from typing import Protocol

class ToolCallError(Exception):
    toolName: str

class Tools(Protocol):
    pass

tools: Tools`


const OPEN = { type: "object" }
const CLOSED = { type: "object", additionalProperties: false }
const closed = (properties: Record<string, unknown>, required: ReadonlyArray<string> = []) => ({
  type: "object",
  additionalProperties: false,
  properties,
  ...(required.length > 0 ? { required } : {})
})

const tool = (name: string, parameters: unknown, output?: unknown, description = ""): SdkTool =>
  output === undefined ? { name, description, parameters } : { name, description, parameters, output }

const ts = CodeSdk.declarationsTypeScript
const py = CodeSdk.declarationsPython

const between = (text: string, start: string, end: string): string => {
  const from = text.indexOf(start)
  assert.isAtLeast(from, 0, `missing ${JSON.stringify(start)}`)
  const to = text.indexOf(end, from + start.length)
  assert.isAtLeast(to, 0, `missing ${JSON.stringify(end)}`)
  return text.slice(from + start.length, to)
}

/** The TypeScript type the SDK gives a tool `t` whose output schema is `schema`. */
const tsOutput = (schema: unknown): string =>
  between(ts([tool("t", OPEN, schema)]), "interface ToolOutputMap {\n  t: ", ";\n}\n\ntype ToolName")

/** The TypeScript type the SDK gives a tool `t` whose parameters are `schema`. */
const tsArgs = (schema: unknown, description = ""): string =>
  between(ts([tool("t", schema, undefined, description)]), "interface ToolArgsMap {\n", "\n}\n\ninterface ToolOutputMap")

/** The Python return type the SDK gives a tool `t` whose output schema is `schema`. */
const pyOutput = (schema: unknown): string =>
  between(py([tool("t", OPEN, schema)]), "    async def t(self, args: dict[str, Any]) -> ", ": ...")

/** The generated `TypedDict` classes of a Python SDK text (between `ToolCallError` and `Tools`). */
const pyClasses = (text: string): string => {
  const body = between(text, "    toolName: str\n\n", "class Tools(Protocol):")
  return body.endsWith("\n\n") ? body.slice(0, -2) : body
}

const pyImports = (text: string): string => text.slice(0, text.indexOf("\n"))

const pyTools = (text: string): string => between(text, "class Tools(Protocol):\n", "\n\ntools: Tools")

const permutations = <A>(items: ReadonlyArray<A>): Array<Array<A>> =>
  items.length <= 1
    ? [[...items]]
    : items.flatMap((item, i) =>
      permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest])
    )

const nest = (depth: number, wrap: (inner: unknown) => unknown, leaf: unknown): unknown => {
  let schema = leaf
  for (let i = 0; i < depth; i++) schema = wrap(schema)
  return schema
}

describe("CodeSdk goldens (§19.4)", () => {
  it("SDK-4…SDK-7: the §19.4 TypeScript declarations byte for byte", () => {
    assert.strictEqual(ts(goldenTools()), GOLDEN_TS)
  })

  it("SDK-8…SDK-12: the §19.4 Python declarations byte for byte", () => {
    assert.strictEqual(py(goldenTools()), GOLDEN_PY)
  })

  it("SDK-1: the goldens do not depend on registration order", () => {
    for (const order of permutations(goldenTools())) {
      assert.strictEqual(ts(order), GOLDEN_TS)
      assert.strictEqual(py(order), GOLDEN_PY)
    }
  })

  it("SDK-4: an empty tool set renders ToolArgsMap {} and ToolOutputMap {} on one line each", () => {
    assert.strictEqual(ts([]), EMPTY_TS)
  })

  it("SDK-8: an empty tool set imports only Protocol, declares no classes and a Tools body of pass", () => {
    assert.strictEqual(py([]), EMPTY_PY)
  })

  it("SDK-10: tool b with {__x: string} takes dict[str, Any] and its closed empty output is a pass class", () => {
    const text = py([tool("b", Dsl.compileParameters({ __x: { type: "string" } }), CLOSED)])
    assert.strictEqual(
      text,
      `from typing import Any, Protocol, TypedDict

class ToolCallError(Exception):
    toolName: str

class BOutput(TypedDict):
    pass

class Tools(Protocol):
    async def b(self, args: dict[str, Any]) -> BOutput: ...

tools: Tools`
    )
  })

  it("SDK-9: a tool _hidden is listed only as a subscript comment", () => {
    assert.strictEqual(
      py([tool("_hidden", Dsl.compileParameters({}))]),
      `from typing import Any, Protocol

class ToolCallError(Exception):
    toolName: str

class Tools(Protocol):
    pass
    # tools["_hidden"](args: dict[str, Any]) -> Any

tools: Tools`
    )
  })
})

describe("SDK-1 ordering and determinism", () => {
  it("SDK-1: tools are sorted by plain < over UTF-16 code units (Zeta < _x < alpha), not by locale", () => {
    const names = ["alpha", "_x", "Zeta", "\uffff", "\u{10000}", "Alpha", "a-b"]
    const text = ts(names.map((name) => tool(name, OPEN)))
    const outputs = between(text, "interface ToolOutputMap {\n", "\n}")
      .split("\n")
      .map((line) => line.slice(2, line.indexOf(": JsonValue;")))
    assert.deepStrictEqual(outputs, ["Alpha", "Zeta", "_x", "\"a-b\"", "alpha", "\"\u{10000}\"", "\"\uffff\""])
  })

  it("T-SDKTS-008: byte-identical output for every input order; equal names keep their input order", () => {
    const set = [
      tool("b", OPEN, { type: "string" }, "B"),
      tool("a", closed({ x: { type: "integer" } }), undefined, "A"),
      tool("c.d", OPEN, { type: "null" }),
      tool("_e", OPEN, { type: "boolean" })
    ]
    const expectedTs = ts(set)
    const expectedPy = py(set)
    for (const order of permutations(set)) {
      assert.strictEqual(ts(order), expectedTs)
      assert.strictEqual(py(order), expectedPy)
    }
    const first = tool("same", OPEN, { type: "string" }, "first")
    const second = tool("same", OPEN, { type: "number" }, "second")
    const forward = between(ts([first, second]), "interface ToolOutputMap {\n", "\n}")
    const backward = between(ts([second, first]), "interface ToolOutputMap {\n", "\n}")
    assert.strictEqual(forward, "  same: string;\n  same: number;")
    assert.strictEqual(backward, "  same: number;\n  same: string;")
    assert.match(py([first, second]), /"""first"""\n.*\n {8}"""second"""/)
  })

  it("T-PTC-013: consecutive renders of an unchanged tool set are byte-identical", () => {
    const set = goldenTools()
    for (const language of CodeSdk.languages) {
      const once = CodeSdk.render(language, set)
      assert.strictEqual(CodeSdk.render(language, set), once)
      assert.strictEqual(CodeSdk.render(language, goldenTools()), once)
    }
  })
})

describe("SDK-2 language dispatch", () => {
  it("SDK-2: render dispatches typescript and python to their renderers", () => {
    const set = goldenTools()
    assert.strictEqual(CodeSdk.render("typescript", set), CodeSdk.renderTypeScript(set))
    assert.strictEqual(CodeSdk.render("python", set), CodeSdk.renderPython(set))
    assert.notStrictEqual(CodeSdk.renderTypeScript(set), CodeSdk.renderPython(set))
    assert.deepStrictEqual(CodeSdk.languages, ["typescript", "python"])
  })

  it("SDK-2: isSdkLanguage accepts exactly the two own names (toString, __proto__, constructor do not resolve)", () => {
    assert.isTrue(CodeSdk.isSdkLanguage("typescript"))
    assert.isTrue(CodeSdk.isSdkLanguage("python"))
    for (const other of ["toString", "__proto__", "constructor", "hasOwnProperty", "TypeScript", "ruby", "", null, 1]) {
      assert.isFalse(CodeSdk.isSdkLanguage(other), String(other))
    }
  })
})

describe("SDK-3 instruction prose", () => {
  const sections = [
    ["typescript", "ts", CodeSdk.proseTypeScript, ts] as const,
    ["python", "python", CodeSdk.prosePython, py] as const
  ]

  for (const [language, fence, prose, declarations] of sections) {
    it(`SDK-3: the ${language} section is the prose, a blank line, then the declarations in a \`\`\`${fence} fence`, () => {
      const set = goldenTools()
      const section = CodeSdk.render(language, set)
      assert.strictEqual(section, `${prose}\n\n\`\`\`${fence}\n${declarations(set)}\n\`\`\``)
      assert.isTrue(prose.startsWith("## Writing code for run_code\n\n"))
      assert.isTrue(prose.endsWith("\nThe available tools:"))
      assert.strictEqual(prose.split("```").length, 1, "the prose itself opens no fence")
    })

    it(`SDK-3: the ${language} prose names run_code's two required arguments, description then code (D-1)`, () => {
      assert.include(prose, "`run_code`")
      assert.include(prose, "two required")
      const description = prose.indexOf("`description`")
      const code = prose.indexOf("`code`")
      assert.isAtLeast(description, 0)
      assert.isAbove(code, description)
      assert.include(prose, "body of an async function")
    })
  }

  it("SDK-3 / T-SDKTS-006: the TypeScript prose states every required point", () => {
    const prose = CodeSdk.proseTypeScript
    for (
      const needle of [
        "TypeScript program",
        "`await tools.name(args)`",
        "quoted key",
        "typed canonical JSON value",
        "lossless JSON",
        "rejects with `ToolCallError`",
        "`toolName` names the tool",
        "Catch it",
        "MAY overlap under `Promise.all`",
        "run alone, one at a time, in the order the program made them",
        "Sequence dependent work with `await`",
        "`console.log`",
        "image is attached to the conversation after the run",
        "every other intermediate result stays out of the conversation",
        "erasable syntax only",
        "no `enum`",
        "no namespaces",
        "type-stripped"
      ]
    ) assert.include(prose, needle)
  })

  it("SDK-3: the Python prose states every required point", () => {
    const prose = CodeSdk.prosePython
    for (
      const needle of [
        "Python program",
        "exactly two declared names are bound: `tools` and `ToolCallError`",
        "`TypedDict` classes are static stubs that do not exist at run time",
        "plain dicts and lists",
        "`FooArgs(...)` raises `NameError`",
        "`await tools.name(args)`",
        "exotic, a reserved word or starts with an underscore",
        "by subscript",
        "typed canonical JSON value",
        "lossless JSON",
        "raises `ToolCallError`",
        "`toolName` names the tool",
        "Catch it",
        "MAY overlap under `asyncio.gather`",
        "`import asyncio` first",
        "run alone, one at a time, in the order the program made them",
        "Sequence dependent work with `await`",
        "`print`",
        "image is attached to the conversation after the run",
        "every other intermediate result stays out of the conversation",
        "The value the program returns must be lossless JSON"
      ]
    ) assert.include(prose, needle)
    assert.notInclude(prose, "Promise.all")
    assert.notInclude(prose, "erasable")
  })
})

describe("SDK-4…SDK-7 TypeScript", () => {
  it("T-SDKTS-006: the skeleton declares every part, sorted tools, quoted exotic names, JSDoc descriptions", () => {
    const text = ts([
      tool("zeta", OPEN, { type: "string" }, "Last."),
      tool("my-mcp.tool", OPEN, { type: "number" }, "Exotic name."),
      tool("alpha", OPEN, { type: "boolean" }, "First.")
    ])
    assert.isTrue(
      text.startsWith("type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }\n\n")
    )
    for (
      const needle of [
        "interface ToolArgsMap {\n",
        "interface ToolOutputMap {\n",
        "\n\ntype ToolName = keyof ToolOutputMap\n\n",
        "declare class ToolCallError extends Error {\n  readonly name: \"ToolCallError\";\n  readonly toolName: ToolName;\n}",
        "declare const tools: {\n  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n}",
        "  /** Exotic name. */\n  \"my-mcp.tool\": Record<string, JsonValue>;",
        "  \"my-mcp.tool\": number;"
      ]
    ) assert.include(text, needle)
    assert.strictEqual(
      between(text, "interface ToolOutputMap {\n", "\n}"),
      "  alpha: boolean;\n  \"my-mcp.tool\": number;\n  zeta: string;"
    )
    assert.strictEqual(
      between(text, "interface ToolArgsMap {\n", "\n}"),
      [
        "  /** First. */",
        "  alpha: Record<string, JsonValue>;",
        "  /** Exotic name. */",
        "  \"my-mcp.tool\": Record<string, JsonValue>;",
        "  /** Last. */",
        "  zeta: Record<string, JsonValue>;"
      ].join("\n")
    )
    assert.isTrue(text.endsWith("Promise<ToolOutputMap[K]>;\n}"))
  })

  it("SDK-5: ASCII identifiers (reserved words included) are bare, every other name is JSON-quoted", () => {
    const bare = ["class", "$x", "_a1", "A", "__proto__", "constructor"]
    const quoted = ["my-mcp.tool", "1a", "café", "", "a\"b", "a b", "line\nbreak", "\ud800"]
    const text = ts([...bare, ...quoted].map((name) => tool(name, OPEN)))
    const outputs = between(text, "interface ToolOutputMap {\n", "\n}")
    for (const name of bare) assert.include(outputs, `\n  ${name}: JsonValue;`)
    for (const name of quoted) assert.include(outputs, `  ${JSON.stringify(name)}: JsonValue;`)
    assert.include(outputs, "  \"\\ud800\": JsonValue;")
    const props = tsArgs(closed({ "a-b": { type: "string" }, ok: { type: "string" }, "": { type: "null" } }, ["ok"]))
    assert.strictEqual(props, "  t: {\n    \"a-b\"?: string;\n    ok: string;\n    \"\"?: null;\n  };")
  })

  it("T-SDKTS-001 / SDK-6: the type mapping", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ type: "string" }, "string"],
      [{ type: "number" }, "number"],
      [{ type: "integer" }, "number"],
      [{ type: "boolean" }, "boolean"],
      [{ type: "null" }, "null"],
      [{ type: "string", enum: ["a", "b"] }, "\"a\" | \"b\""],
      [{ type: "number", enum: [1, 2] }, "1 | 2"],
      [{ type: "integer", const: 3 }, "3"],
      [{ type: "string", enum: ["a", "b"], const: "b" }, "\"b\""],
      [{ type: "boolean", const: false }, "false"],
      [{ type: "null", const: null }, "null"],
      [{ oneOf: [{ type: "string" }, { type: "null" }] }, "string | null"],
      [{ type: "array", items: { type: "number" } }, "number[]"],
      [{ type: "array", items: { type: "string", enum: ["x", "y"] } }, "(\"x\" | \"y\")[]"],
      [{ type: "array" }, "JsonValue[]"],
      [{ type: "object" }, "Record<string, JsonValue>"],
      [{ type: "object", properties: {} }, "Record<string, JsonValue>"],
      [CLOSED, "Record<string, never>"],
      [{ ...CLOSED, properties: {} }, "Record<string, never>"],
      [{}, "JsonValue"],
      [{ description: "only annotations", title: "T", default: 1, examples: [1] }, "JsonValue"]
    ]
    for (const [schema, expected] of cases) assert.strictEqual(tsOutput(schema), expected, JSON.stringify(schema))
    assert.strictEqual(
      tsOutput(closed({ id: { type: "integer" }, label: { type: "string" } }, ["id"])),
      "{\n    id: number;\n    label?: string;\n  }"
    )
  })

  it("SDK-6: (T)[] whenever the item text holds | or & anywhere; nested containers indent two spaces deeper", () => {
    assert.strictEqual(tsOutput({ type: "array", items: { type: "string", const: "a|b" } }), "(\"a|b\")[]")
    assert.strictEqual(tsOutput({ type: "array", items: { type: "string", const: "a&b" } }), "(\"a&b\")[]")
    assert.strictEqual(tsOutput({ type: "array", items: { type: "string", const: "ab" } }), "\"ab\"[]")
    assert.strictEqual(
      tsOutput({ type: "array", items: { type: "array", items: { oneOf: [{ type: "string" }, { type: "null" }] } } }),
      "((string | null)[])[]"
    )
    assert.strictEqual(
      tsOutput({ type: "array", items: closed({ k: { type: "string", description: "x | y" } }) }),
      "({\n    /** x | y */\n    k?: string;\n  })[]"
    )
    assert.strictEqual(tsOutput({ type: "array", items: closed({ k: { type: "string" } }) }), "{\n    k?: string;\n  }[]")
    assert.strictEqual(
      tsOutput({ type: "array", items: { type: "object", properties: { k: { type: "string" } } } }),
      "({\n    k?: string;\n  } & Record<string, JsonValue>)[]"
    )
    assert.strictEqual(
      tsOutput(closed({ outer: closed({ inner: { type: "object", properties: { n: { type: "integer" } } } }) })),
      [
        "{",
        "    outer?: {",
        "      inner?: {",
        "        n?: number;",
        "      } & Record<string, JsonValue>;",
        "    };",
        "  }"
      ].join("\n")
    )
    assert.strictEqual(
      tsOutput({ oneOf: [closed({ a: { type: "string" } }, ["a"]), { type: "null" }] }),
      "{\n    a: string;\n  } | null"
    )
  })

  it("SDK-6: literals are JSON text (quotes, control characters, lone surrogates, big and small numbers)", () => {
    assert.strictEqual(tsOutput({ type: "string", const: "a\"b\\c\n\u0001\ud800" }), "\"a\\\"b\\\\c\\n\\u0001\\ud800\"")
    assert.strictEqual(tsOutput({ type: "integer", const: 2 ** 60 }), "1152921504606847000")
    assert.strictEqual(tsOutput({ type: "number", enum: [1e21, 1.5, 1e-7, -3] }), "1e+21 | 1.5 | 1e-7 | -3")
  })

  it("T-SDKTS-004 / SDK-7: JSDoc collapses whitespace, trims, and escapes */ so the comment cannot end early", () => {
    assert.strictEqual(tsArgs(OPEN, "  Ends */ early\n\t and  */ again  "), "  /** Ends *\\/ early and *\\/ again */\n  t: Record<string, JsonValue>;")
    assert.strictEqual(tsArgs(OPEN, " \n\t\u2028 "), "  t: Record<string, JsonValue>;")
    assert.strictEqual(tsArgs(OPEN, ""), "  t: Record<string, JsonValue>;")
    assert.strictEqual(
      tsArgs(closed({ p: { type: "string", description: "a\r\n b */" }, q: { type: "string", description: "   " } })),
      "  t: {\n    /** a b *\\/ */\n    p?: string;\n    q?: string;\n  };"
    )
  })

  it("SDK-7: a root outside the subset renders unknown for that whole root only; an absent output is JsonValue", () => {
    const mcp = { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { n: { type: "integer" } } }
    const minimum = { type: "object", properties: { n: { type: "integer", minimum: 0 } } }
    const text = ts([
      tool("a", mcp, { type: "string" }),
      tool("b", minimum, { type: "string", minLength: 1 }),
      tool("c", OPEN),
      { name: "d", description: "", parameters: OPEN, output: undefined }
    ])
    assert.strictEqual(
      between(text, "interface ToolArgsMap {\n", "\n}"),
      "  a: unknown;\n  b: unknown;\n  c: Record<string, JsonValue>;\n  d: Record<string, JsonValue>;"
    )
    assert.strictEqual(
      between(text, "interface ToolOutputMap {\n", "\n}"),
      "  a: string;\n  b: unknown;\n  c: JsonValue;\n  d: JsonValue;"
    )
  })

  it("T-PTC-005 / SDK-7: a 5000-deep output union projects without stack overflow", () => {
    const deep = nest(5000, (inner) => ({ oneOf: [inner, { type: "null" }] }), { type: "string" })
    const text = ts([tool("deep_output", Dsl.compileParameters({}), deep)])
    assert.include(text, "deep_output: Record<string, JsonValue>;")
    assert.include(text, "deep_output: string | null")
    assert.include(text, `deep_output: string${" | null".repeat(5000)};`)
    const python = py([tool("deep_output", Dsl.compileParameters({}), deep)])
    assert.include(python, `-> str${" | None".repeat(5000)}: ...`)
  })

  it("SDK-7: 5000-deep arrays and 1000-deep objects render iteratively", () => {
    assert.strictEqual(tsOutput(nest(5000, (items) => ({ type: "array", items }), { type: "integer" })), `number${"[]".repeat(5000)}`)
    const objects = tsOutput(nest(1000, (inner) => closed({ k: inner }, ["k"]), { type: "boolean" }))
    const lines = objects.split("\n")
    assert.strictEqual(lines.length, 2001)
    assert.strictEqual(lines[1000], `${"  ".repeat(1001)}k: boolean;`)
    assert.strictEqual(lines[2000], "  }")
  })
})

describe("SDK-8…SDK-13 Python", () => {
  it("SDK-8: typing imports exactly the used symbols in the fixed order, Protocol always", () => {
    const cases: ReadonlyArray<readonly [ReadonlyArray<SdkTool>, string]> = [
      [[tool("t", closed({ a: { type: "string" } }, ["a"]), { type: "string" })], "Protocol, TypedDict"],
      [[tool("t", OPEN, { type: "string" })], "Any, Protocol"],
      [[tool("t", { type: "string", enum: ["a"] }, { type: "integer" })], "Literal, Protocol"],
      [[tool("t", closed({ a: { type: "string" } }), { type: "null" })], "NotRequired, Protocol, TypedDict"],
      [[tool("t", { type: "string" }, { type: "string" })], "Protocol"],
      [[tool("t", { type: "array", items: { type: "string" } }, { type: "array" })], "Any, Protocol"],
      [[tool("_t", { type: "boolean", const: true }, { type: "string" })], "Literal, Protocol"],
      [goldenTools(), "Any, Literal, NotRequired, Protocol, TypedDict"]
    ]
    for (const [set, symbols] of cases) assert.strictEqual(pyImports(py(set)), `from typing import ${symbols}`)
  })

  it("SDK-8: classes are separated by blank lines and followed by one; pass leads a Tools body without methods", () => {
    const text = py([
      tool("class", closed({ a: { type: "string" } }, ["a"]), CLOSED, "Reserved."),
      tool("x-y", OPEN, closed({ b: { type: "integer" } }, ["b"]))
    ])
    assert.strictEqual(
      text,
      `from typing import Any, Protocol, TypedDict

class ToolCallError(Exception):
    toolName: str

class ClassArgs(TypedDict):
    a: str

class ClassOutput(TypedDict):
    pass

class XYOutput(TypedDict):
    b: int

class Tools(Protocol):
    pass
    # tools["class"](args: ClassArgs) -> ClassOutput
    #   Reserved.
    # tools["x-y"](args: dict[str, Any]) -> XYOutput

tools: Tools`
    )
  })

  it("SDK-9: methods for plain identifiers (soft keywords included), subscript comments for the rest", () => {
    const hard = [
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
      "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
      "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "__debug__"
    ]
    const methods = ["match", "case", "type", "café", "x1", "self", "args", "Tools"]
    const comments = [...hard, "_", "_hidden", "__dunder__", "my-mcp.tool", "1a", "ﬁle", "a b", ""]
    const body = pyTools(py([...methods, ...comments].map((name) => tool(name, { type: "string" }))))
    const lines = body.split("\n")
    assert.isFalse(lines.includes("    pass"))
    for (const name of methods) assert.include(lines, `    async def ${name}(self, args: str) -> Any: ...`, name)
    for (const name of comments) assert.include(lines, `    # tools[${JSON.stringify(name)}](args: str) -> Any`, name)
    assert.strictEqual(lines.length, methods.length + comments.length)
  })

  it("SDK-9: a method's docstring line, a comment's description line, nothing for an empty description", () => {
    const body = pyTools(py([
      tool("m", { type: "string" }, { type: "string" }, "Does  m.\n"),
      tool("n", { type: "string" }, { type: "string" }, " \t "),
      tool("-c", { type: "string" }, { type: "string" }, "Does c."),
      tool("-d", { type: "string" }, { type: "string" })
    ]))
    assert.strictEqual(
      body,
      [
        "    # tools[\"-c\"](args: str) -> str",
        "    #   Does c.",
        "    # tools[\"-d\"](args: str) -> str",
        "    async def m(self, args: str) -> str:",
        "        \"\"\"Does m.\"\"\"",
        "    async def n(self, args: str) -> str: ..."
      ].join("\n")
    )
  })

  it("SDK-10: the scalar, literal, union and list mapping", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ type: "string" }, "str"],
      [{ type: "number" }, "float"],
      [{ type: "integer" }, "int"],
      [{ type: "boolean" }, "bool"],
      [{ type: "null" }, "None"],
      [{ type: "string", const: "a" }, "Literal[\"a\"]"],
      [{ type: "string", enum: ["a", "b"], const: "a" }, "Literal[\"a\"]"],
      [{ type: "string", enum: ["a", "b"] }, "Literal[\"a\", \"b\"]"],
      [{ type: "boolean", enum: [true, false] }, "Literal[True, False]"],
      [{ type: "null", const: null }, "Literal[None]"],
      [{}, "Any"],
      [{ oneOf: [{ type: "string" }, { type: "integer" }, { type: "null" }] }, "str | int | None"],
      [{ type: "array" }, "list[Any]"],
      [{ type: "array", items: { type: "string" } }, "list[str]"],
      [{ type: "array", items: { oneOf: [{ type: "string" }, { type: "null" }] } }, "list[str | None]"],
      [{ type: "object" }, "dict[str, Any]"],
      [{ type: "object", properties: {} }, "dict[str, Any]"]
    ]
    for (const [schema, expected] of cases) assert.strictEqual(pyOutput(schema), expected, JSON.stringify(schema))
  })

  it("SDK-10: an object is dict[str, Any] when a property is not a plain identifier, a hard keyword or mangled", () => {
    for (const name of ["a-b", "class", "None", "__debug__", "__x", "__x_", "1a", "ﬁle", ""]) {
      assert.strictEqual(pyOutput(closed({ ok: { type: "string" }, [name]: { type: "string" } })), "dict[str, Any]", name)
    }
    for (const name of ["_x", "__x__", "__", "match", "type", "_", "café", "__proto__"]) {
      assert.strictEqual(pyOutput(closed({ [name]: { type: "string" } }, [name])), "TOutput", name)
    }
  })

  it("SDK-10: class bodies — comments, NotRequired, the open-object line, pass; nested classes first, args before output", () => {
    const text = py([
      tool(
        "t",
        {
          type: "object",
          properties: {
            first: { type: "string", description: "The  first\nfield." },
            nested: { type: "object", properties: { deep: closed({}) }, required: ["deep"] }
          },
          required: ["first"]
        },
        closed({ rows: { type: "array", items: closed({ n: { type: "integer" } }, ["n"]) } }, ["rows"])
      )
    ])
    assert.strictEqual(
      pyClasses(text),
      `class TArgsNestedDeep(TypedDict):
    pass

class TArgsNested(TypedDict):
    deep: TArgsNestedDeep
    # Additional keys beyond those declared are allowed.

class TArgs(TypedDict):
    # The first field.
    first: str
    nested: NotRequired[TArgsNested]
    # Additional keys beyond those declared are allowed.

class TOutputRows(TypedDict):
    n: int

class TOutput(TypedDict):
    rows: list[TOutputRows]`
    )
    assert.include(text, "    async def t(self, args: TArgs) -> TOutput: ...")
  })

  it("SDK-11: Camel names — separators, underscores, NFKC, case mapping, the Tool prefix", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["read_file", "ReadFileArgs"],
      ["my-mcp.tool", "MyMcpToolArgs"],
      ["a__b", "ABArgs"],
      ["getHTTPResponse", "GetHTTPResponseArgs"],
      ["1st", "Tool1stArgs"],
      ["___", "ToolArgs"],
      ["ａｂｃ", "AbcArgs"],
      ["数据", "数据Args"],
      ["\u{10428}x", "\u{10400}xArgs"],
      ["é_x", "ÉXArgs"]
    ]
    const text = py(cases.map(([name]) => tool(name, CLOSED)))
    for (const [name, expected] of cases) assert.include(pyClasses(text), `class ${expected}(TypedDict):\n    pass`, name)
  })

  it("SDK-11: nested bases — property Camel on the parent's allocated name, oneOf 1-based indexes, array items reuse", () => {
    const classes = pyClasses(py([
      tool(
        "x",
        closed({
          v: { oneOf: [closed({ a: { type: "string" } }, ["a"]), { type: "string" }, closed({ b: { type: "string" } }, ["b"])] },
          rows: { type: "array", items: { type: "array", items: closed({}) } },
          _1st: closed({})
        }),
        { oneOf: [closed({}), closed({})] }
      )
    ]))
    const names = [...classes.matchAll(/^class (\S+)\(TypedDict\):$/gm)].map((match) => match[1])
    assert.deepStrictEqual(names, ["XArgsV1", "XArgsV3", "XArgsRows", "XArgsTool1st", "XArgs", "XOutput1", "XOutput2"])
    assert.include(classes, "    v: NotRequired[XArgsV1 | str | XArgsV3]")
    assert.include(classes, "    rows: NotRequired[list[list[XArgsRows]]]")
  })

  it("SDK-11: collisions take the smallest unused suffix from 2; nested bases use the suffixed name", () => {
    const text = py([
      tool("x", { oneOf: [closed({}), closed({})] }),
      tool("x-", CLOSED),
      tool("x_", closed({ p: closed({}) })),
      tool("a-b", CLOSED),
      tool("a.b", CLOSED),
      tool("a_b", CLOSED)
    ])
    const names = [...pyClasses(text).matchAll(/^class (\S+)\(TypedDict\):$/gm)].map((match) => match[1])
    assert.deepStrictEqual(names, ["ABArgs", "ABArgs2", "ABArgs3", "XArgs1", "XArgs2", "XArgs", "XArgs3P", "XArgs3"])
    assert.include(text, "    async def x_(self, args: XArgs3) -> Any: ...")
  })

  it("SDK-11: bases are capped at 120 UTF-16 units, dropping a dangling high surrogate, then suffixed", () => {
    const long = "a".repeat(200)
    const astral = `${"a".repeat(119)}\u{10428}`
    const classes = pyClasses(py([tool(long, CLOSED), tool(`${long}_`, CLOSED), tool(astral, CLOSED)]))
    const names = [...classes.matchAll(/^class (\S+)\(TypedDict\):$/gm)].map((match) => match[1])
    const capped = `A${"a".repeat(119)}`
    assert.deepStrictEqual(names, [capped, `${capped}2`, `A${"a".repeat(118)}`])
    assert.strictEqual(names[2].length, 119)
  })

  it("SDK-11 / SDK-13: 2000-deep nested objects get unique, capped class names", () => {
    const text = py([tool("deep", nest(2000, (inner) => closed({ child: inner }, ["child"]), { type: "string" }))])
    const names = [...pyClasses(text).matchAll(/^class (\S+)\(TypedDict\):$/gm)].map((match) => match[1])
    assert.strictEqual(names.length, 2000)
    assert.strictEqual(new Set(names).size, 2000)
    assert.strictEqual(names[1999], "DeepArgs")
    for (const name of names) assert.isAtMost(name.length, 124)
  })

  it("SDK-12: identifiers are Unicode XID and NFKC-stable", () => {
    const body = pyTools(py(["café", "ﬁle", "Ωmega", "e\u0301", "x\u0301", "a·b"].map((name) => tool(name, { type: "string" }))))
    assert.include(body, "    async def café(self, args: str) -> Any: ...")
    assert.include(body, "    async def Ωmega(self, args: str) -> Any: ...")
    assert.include(body, "    async def a·b(self, args: str) -> Any: ...")
    assert.include(body, "    # tools[\"ﬁle\"](args: str) -> Any")
    assert.include(body, "    async def x\u0301(self, args: str) -> Any: ...")
    assert.include(body, "    # tools[\"e\u0301\"](args: str) -> Any")
  })

  it("SDK-12: descriptions — collapsed whitespace, \\xNN controls, \\uNNNN lone surrogates, docstring escaping", () => {
    const raw = "  a\u0000b\u007fc\u0085d\u009fe \ud800f\udc00g 😀 \u2028\u00a0 h\\i \"j\"\u001f  "
    const body = pyTools(py([tool("m", { type: "string" }, { type: "string" }, raw), tool("-c", { type: "string" }, { type: "string" }, raw)]))
    assert.strictEqual(
      body,
      [
        "    # tools[\"-c\"](args: str) -> str",
        "    #   a\\x00b\\x7fc\\x85d\\x9fe \\ud800f\\udc00g 😀 h\\i \"j\"\\x1f",
        "    async def m(self, args: str) -> str:",
        "        \"\"\"a\\\\x00b\\\\x7fc\\\\x85d\\\\x9fe \\\\ud800f\\\\udc00g 😀 h\\\\i \\\"j\\\"\\\\x1f\"\"\""
      ].join("\n")
    )
    const field = pyClasses(py([tool("t", closed({ p: { type: "string", description: "x\u0001\n y" } }))]))
    assert.include(field, "    # x\\x01 y\n    p: NotRequired[str]")
  })

  it("SDK-12: literals — JSON strings, True/False, exact digits beyond the safe range, default number text", () => {
    assert.strictEqual(pyOutput({ type: "string", const: "a\"b\n\ud800" }), "Literal[\"a\\\"b\\n\\ud800\"]")
    assert.strictEqual(pyOutput({ type: "integer", const: 2 ** 60 }), "Literal[1152921504606846976]")
    assert.strictEqual(pyOutput({ type: "number", const: 1e21 }), "Literal[1000000000000000000000]")
    assert.strictEqual(pyOutput({ type: "integer", const: -(2 ** 53) }), "Literal[-9007199254740992]")
    assert.strictEqual(
      pyOutput({ type: "number", enum: [9007199254740991, 1.5, 1e-7, 0, -2.5e-300] }),
      "Literal[9007199254740991, 1.5, 1e-7, 0, -2.5e-300]"
    )
    assert.strictEqual(pyOutput({ type: "number", const: 1e300 }), `Literal[${BigInt(1e300).toString()}]`)
  })

  it("SDK-13: list nesting deeper than 180 degrades to Any; unions are not capped", () => {
    const lists = (depth: number) => nest(depth, (items) => ({ type: "array", items }), { type: "string" })
    assert.strictEqual(pyOutput(lists(180)), `${"list[".repeat(180)}str${"]".repeat(180)}`)
    assert.strictEqual(pyOutput(lists(181)), `${"list[".repeat(180)}Any${"]".repeat(180)}`)
    assert.strictEqual(pyOutput(lists(5000)), `${"list[".repeat(180)}Any${"]".repeat(180)}`)
    assert.strictEqual(
      pyOutput(nest(180, (items) => ({ type: "array", items }), { type: "array" })),
      `${"list[".repeat(180)}Any${"]".repeat(180)}`
    )
    const inClass = pyClasses(py([tool("t", OPEN, closed({ p: nest(200, (items) => ({ type: "array", items }), closed({})) }, ["p"]))]))
    assert.include(inClass, `    p: ${"list[".repeat(180)}Any${"]".repeat(180)}`)
    assert.notInclude(inClass, "TOutputP(")
    const branches = Array.from({ length: 300 }, (_, i) => ({ type: "integer", const: i }))
    assert.strictEqual(pyOutput({ oneOf: branches }), branches.map((_, i) => `Literal[${i}]`).join(" | "))
  })

  it("SDK-13: a root outside the subset renders Any for that root only", () => {
    const text = py([
      tool("a", { type: "object", properties: { n: { type: "integer", minimum: 0 } } }, closed({ k: { type: "string" } }, ["k"])),
      tool("b", closed({ k: { type: "string" } }, ["k"]), { type: ["string", "null"] })
    ])
    assert.include(text, "    async def a(self, args: Any) -> AOutput: ...")
    assert.include(text, "    async def b(self, args: BArgs) -> Any: ...")
  })
})
