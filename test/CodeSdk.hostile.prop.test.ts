import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import * as CodeSdk from "../src/CodeSdk.js"
import type { SdkTool } from "../src/CodeSdk.js"
import * as Hostile from "./fixtures/hostile.js"
import { lossyArbitrary, record, schemaArbitrary } from "./fixtures/schemaArbitrary.js"

const ts = CodeSdk.declarationsTypeScript
const py = CodeSdk.declarationsPython
const OPEN = { type: "object" }

/** Renders an untyped (JavaScript) tool list, as a caller that ignores the types would pass it. */
const tsOf = (tools: unknown): string => ts(tools as ReadonlyArray<SdkTool>)
const pyOf = (tools: unknown): string => py(tools as ReadonlyArray<SdkTool>)

const tool = (name: string, parameters: unknown = OPEN, output?: unknown, description = ""): SdkTool =>
  output === undefined ? { name, description, parameters } : { name, description, parameters, output }

const members = (text: string, header: string): string => {
  const start = text.indexOf(`${header} {\n`) + header.length + 3
  return text.slice(start, text.indexOf("\n}", start))
}

describe("SDK-2 totality over hostile input", () => {
  it("SDK-2: a tool list that is not a readable array renders the empty SDK", () => {
    const emptyTs = ts([])
    const emptyPy = py([])
    const lists: ReadonlyArray<readonly [string, () => unknown]> = [
      ["throwing proxy over an array", () => Hostile.throwingProxy([])],
      ["revoked proxy", Hostile.revokedProxy],
      ["null", () => null],
      ["undefined", () => undefined],
      ["number", () => 42],
      ["string", () => "read_file"],
      ["array-like", () => ({ length: 1, 0: tool("a") })],
      ["null prototype", () => Hostile.nullProto({ 0: tool("a"), length: 1 })],
      ["huge length proxy", () => new Proxy([], { get: (_target, key) => (key === "length" ? 2 ** 40 : undefined) })]
    ]
    for (const [label, make] of lists) {
      assert.strictEqual(tsOf(make()), emptyTs, label)
      assert.strictEqual(pyOf(make()), emptyPy, label)
    }
  })

  it("SDK-2: unreadable entries are left out and the readable ones still render", () => {
    const throwingIndex = (): Array<unknown> => {
      const list: Array<unknown> = [tool("b")]
      Object.defineProperty(list, 1, {
        enumerable: true,
        get: () => {
          throw new Error("hostile index")
        }
      })
      list.push(tool("a"))
      return list
    }
    const throwingName = () =>
      Object.defineProperty({ description: "", parameters: OPEN }, "name", {
        enumerable: true,
        get: () => {
          throw new Error("hostile name")
        }
      })
    const hostileEntries = (): Array<unknown> => [
      Hostile.throwingProxy(),
      Hostile.revokedProxy(),
      null,
      undefined,
      5,
      "a",
      10n,
      Symbol("tool"),
      { name: 10n, description: "", parameters: OPEN },
      { name: Hostile.nullProto(), description: "", parameters: OPEN },
      { name: Hostile.throwingConversions(), description: "", parameters: OPEN },
      throwingName(),
      tool("b"),
      tool("a")
    ]
    assert.strictEqual(tsOf(hostileEntries()), ts([tool("a"), tool("b")]))
    assert.strictEqual(pyOf(hostileEntries()), py([tool("a"), tool("b")]))
    assert.strictEqual(tsOf(throwingIndex()), ts([tool("a"), tool("b")]))
    const sparse: Array<unknown> = [tool("b")]
    sparse[3] = tool("a")
    assert.strictEqual(pyOf(sparse), py([tool("a"), tool("b")]))
  })

  it("SDK-2: every field of every entry is read exactly once per render, schema fields included", () => {
    for (const render of [tsOf, pyOf]) {
      const parameters = Hostile.counted({ type: "object", properties: { p: { type: "string" } } })
      const entry = Hostile.counted({
        name: "t",
        description: "Desc.",
        parameters: parameters.value,
        output: { type: "string" }
      })
      render([entry.value])
      assert.deepStrictEqual(
        [...entry.reads.entries()].sort(),
        [["description", 1], ["name", 1], ["output", 1], ["parameters", 1]]
      )
      assert.deepStrictEqual([...parameters.reads.entries()].sort(), [["properties", 1], ["type", 1]])
    }
  })

  it("SDK-2: a getter that changes its answer is seen once, in names and in schemas alike", () => {
    const entry = () =>
      Hostile.changing(
        { description: "", parameters: OPEN, output: Hostile.changing({}, "type", "string", "integer") },
        "name",
        "first",
        "second"
      )
    const text = tsOf([entry()])
    assert.strictEqual(members(text, "interface ToolOutputMap"), "  first: string;")
    assert.include(pyOf([entry()]), "    async def first(self, args: dict[str, Any]) -> str: ...")
  })

  it("SDK-2: hostile descriptions are absent; hostile schema roots are unknown / Any for that root", () => {
    const expected: Readonly<Record<Hostile.Kind, readonly [string, string]>> = {
      "throwing proxy": ["unknown", "Any"],
      "revoked proxy": ["unknown", "Any"],
      "null prototype": ["JsonValue", "Any"],
      "null prototype with fields": ["string", "str"],
      cyclic: ["unknown", "Any"],
      bigint: ["unknown", "Any"],
      "bare bigint": ["unknown", "Any"],
      symbol: ["unknown", "Any"],
      function: ["unknown", "Any"],
      "__proto__ key": ["unknown", "Any"],
      "throwing conversions": ["unknown", "Any"],
      "throwing proxy over an array": ["unknown", "Any"]
    }
    for (const kind of Hostile.kinds) {
      const entry = () => ({
        name: "t",
        description: Hostile.make(kind, { length: 3 }),
        parameters: Hostile.make(kind, { type: "string" }),
        output: Hostile.make(kind, { type: "string" })
      })
      const [tsType, pyType] = expected[kind]
      assert.strictEqual(members(tsOf([entry()]), "interface ToolArgsMap"), `  t: ${tsType};`, kind)
      assert.strictEqual(members(tsOf([entry()]), "interface ToolOutputMap"), `  t: ${tsType};`, kind)
      assert.include(pyOf([entry()]), `    async def t(self, args: ${pyType}) -> ${pyType}: ...`, kind)
    }
    const throwingDescription = Object.defineProperty({ name: "t", parameters: OPEN }, "description", {
      enumerable: true,
      get: () => {
        throw new Error("hostile description")
      }
    })
    assert.strictEqual(tsOf([throwingDescription]), ts([tool("t")]))
  })

  it("SDK-2: a hostile node deep inside a schema degrades the whole root, never the neighbours", () => {
    const deepHostile = () => ({
      type: "object",
      properties: { ok: { type: "string" }, bad: { type: "array", items: Hostile.throwingProxy() } }
    })
    const text = tsOf([tool("a", deepHostile(), { type: "string" }), tool("b", OPEN, deepHostile())])
    assert.strictEqual(members(text, "interface ToolArgsMap"), "  a: unknown;\n  b: Record<string, JsonValue>;")
    assert.strictEqual(members(text, "interface ToolOutputMap"), "  a: string;\n  b: unknown;")
  })

  it("SDK-2: own __proto__ keys are ordinary names and pollute nothing", () => {
    const parameters = JSON.parse(
      "{\"type\":\"object\",\"properties\":{\"__proto__\":{\"type\":\"string\",\"description\":\"P.\"}},\"required\":[\"__proto__\"]}"
    )
    const list = [tool("__proto__", parameters, { type: "integer" }, "Proto."), tool("constructor", parameters)]
    const text = ts(list)
    assert.include(text, "  /** Proto. */\n  __proto__: {\n    /** P. */\n    __proto__: string;\n  } & Record<string, JsonValue>;")
    assert.include(members(text, "interface ToolOutputMap"), "  __proto__: number;\n  constructor: JsonValue;")
    const python = py(list)
    assert.include(python, "class ProtoArgs(TypedDict):\n    # P.\n    __proto__: str")
    assert.include(python, "    # tools[\"__proto__\"](args: ProtoArgs) -> int\n    #   Proto.")
    assert.include(python, "    async def constructor(self, args: ConstructorArgs) -> Any: ...")
    assert.isUndefined(({} as Record<string, unknown>).type)
    assert.isUndefined(({} as Record<string, unknown>).properties)
  })

  it("SDK-2: the input is never mutated or frozen", () => {
    const parameters = { type: "object", properties: { a: { type: "string" } } }
    const entry = tool("t", parameters, { type: "string" })
    const list = [entry]
    ts(list)
    py(list)
    assert.isFalse(Object.isFrozen(list))
    assert.isFalse(Object.isFrozen(entry))
    assert.isFalse(Object.isFrozen(parameters))
    assert.deepStrictEqual(parameters, { type: "object", properties: { a: { type: "string" } } })
  })
})

/** A value to put in a tool field, built fresh per use (hostile values are stateful). */
type Recipe = () => unknown

const fresh = (value: unknown): Recipe => () => value === undefined ? undefined : structuredClone(value)

const nameArbitrary: FastCheck.Arbitrary<string> = FastCheck.oneof(
  FastCheck.constantFrom(
    "read_file",
    "class",
    "_hidden",
    "__proto__",
    "constructor",
    "toString",
    "my-mcp.tool",
    "ﬁle",
    "",
    "a\nb",
    "\ud800",
    "Zeta"
  ),
  FastCheck.fullUnicodeString({ maxLength: 6 }),
  FastCheck.string16bits({ maxLength: 4 })
)

const textArbitrary: FastCheck.Arbitrary<Recipe> = FastCheck.oneof(
  FastCheck.string16bits({ maxLength: 12 }).map(fresh),
  FastCheck.constantFrom("*/ end", "a\u0000\u0085\u2028b", "\\\"\"\"", "  ").map(fresh),
  Hostile.arbitrary()
)

const schemaRecipe: FastCheck.Arbitrary<Recipe> = FastCheck.oneof(
  { weight: 4, arbitrary: schemaArbitrary(3).map((schema): Recipe => () => rebuild(schema)) },
  { weight: 1, arbitrary: lossyArbitrary.map((value): Recipe => () => value) },
  { weight: 2, arbitrary: Hostile.arbitrary({ type: "object" }) }
)

/** A fresh copy of a generated schema that keeps own `__proto__` keys as ordinary keys. */
const rebuild = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(rebuild)
  if (typeof value === "object" && value !== null) {
    return record(Object.keys(value).map((key) => [key, rebuild((value as Record<string, unknown>)[key])]))
  }
  return value
}

interface ToolRecipe {
  readonly name: string
  readonly description: Recipe
  readonly parameters: Recipe
  readonly output: Recipe | undefined
}

const toolRecipe: FastCheck.Arbitrary<ToolRecipe> = FastCheck.record({
  name: nameArbitrary,
  description: textArbitrary,
  parameters: schemaRecipe,
  output: FastCheck.option(schemaRecipe, { nil: undefined })
})

const build = (recipes: ReadonlyArray<ToolRecipe>, order: ReadonlyArray<number>): Array<unknown> =>
  order.map((i) => {
    const recipe = recipes[i]
    const entry: Record<string, unknown> = {
      name: recipe.name,
      description: recipe.description(),
      parameters: recipe.parameters()
    }
    if (recipe.output !== undefined) entry.output = recipe.output()
    return entry
  })

const setArbitrary = FastCheck.uniqueArray(toolRecipe, { maxLength: 6, selector: (recipe) => recipe.name }).chain(
  (recipes) =>
    FastCheck.tuple(
      FastCheck.constant(recipes),
      FastCheck.shuffledSubarray(
        recipes.map((_, i) => i),
        { minLength: recipes.length, maxLength: recipes.length }
      )
    )
)

describe("SDK-1 / SDK-2 properties", () => {
  it("SDK-1 / SDK-2: any tool list renders a string without throwing, identically for every order", () => {
    FastCheck.assert(
      FastCheck.property(setArbitrary, ([recipes, order]) => {
        const identity = recipes.map((_, i) => i)
        const tsText = tsOf(build(recipes, identity))
        const pyText = pyOf(build(recipes, identity))
        assert.isString(tsText)
        assert.isString(pyText)
        assert.isTrue(tsText.startsWith("type JsonValue = "))
        assert.isTrue(pyText.startsWith("from typing import "))
        assert.isTrue(pyText.endsWith("\n\ntools: Tools"))
        assert.notInclude(pyText, "\r")
        assert.notInclude(pyText, "\u0000")
        assert.strictEqual(tsOf(build(recipes, order)), tsText)
        assert.strictEqual(pyOf(build(recipes, order)), pyText)
        const outputMembers = recipes.length === 0
          ? []
          : members(tsText, "interface ToolOutputMap").split("\n").filter((line) => /^  [^ }]/.test(line))
        assert.strictEqual(outputMembers.length, recipes.length)
        const protocolMembers = pyText.split("\n").filter((line) => /^    (async def |# tools\[)/.test(line))
        assert.strictEqual(protocolMembers.length, recipes.length)
      }),
      { numRuns: 200 }
    )
  })
})
