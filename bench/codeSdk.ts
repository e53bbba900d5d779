/**
 * Code Mode SDK generation: `renderTypeScript` and `renderPython` over 10, 100 and 1,000
 * realistic tools (a DSL parameter root, a closed output object with a nested array of open
 * objects, a quarter of them with exotic names), and the cost per tool at each size (flat means
 * linear). Also one 5,000-deep output union. Printed, never asserted.
 */
import * as CodeSdk from "../src/CodeSdk.js"
import type { SdkTool } from "../src/CodeSdk.js"
import * as Dsl from "../src/Dsl.js"
import { formatTime, measureAll } from "./support.js"

const makeTool = (i: number): SdkTool => ({
  name: i % 4 === 3 ? `mcp.server-${i}.search` : `tool_${i}`,
  description: `Reads item ${i} and reports what it found, with details.`,
  parameters: Dsl.compileParameters({
    path: { type: "string", required: true, description: "Absolute path of the item" },
    limit: { type: "integer", description: "At most this many entries" },
    mode: { type: "string", enum: ["fast", "full"] },
    filters: { type: "array", items: { type: "string" } }
  }),
  output: Dsl.compileValue({
    type: "object",
    additionalProperties: false,
    properties: {
      ok: { type: "boolean", required: true },
      text: { oneOf: [{ type: "string" }, { type: "null" }], required: true },
      entries: {
        type: "array",
        items: {
          type: "object",
          additionalProperties: true,
          properties: { n: { type: "integer", required: true }, label: { type: "string" } }
        }
      }
    }
  })
})

const deepTool = (): SdkTool => {
  let output: unknown = { type: "string" }
  for (let i = 0; i < 5000; i++) output = { oneOf: [output, { type: "null" }] }
  return { name: "deep_output", description: "", parameters: Dsl.compileParameters({}), output }
}

/**
 * @since 0.1.0
 */
export const run = async (): Promise<void> => {
  const sizes = [10, 100, 1000]
  const sets = new Map(sizes.map((size) => [size, Array.from({ length: size }, (_, i) => makeTool(i))]))
  const candidates: Array<readonly [string, () => unknown]> = []
  for (const size of sizes) {
    const tools = sets.get(size)!
    candidates.push([`typescript ${size}`, () => CodeSdk.renderTypeScript(tools)])
    candidates.push([`python ${size}`, () => CodeSdk.renderPython(tools)])
  }
  const times = measureAll(candidates, 6000, 3)
  const byName = new Map(candidates.map(([name], i) => [name, times[i]]))
  const textSize = (language: CodeSdk.SdkLanguage, size: number) => CodeSdk.render(language, sets.get(size)!).length
  console.log("SDK generation (render: prose + declarations), best of 5 interleaved rounds")
  console.log("language   | tools | per render | per tool | per tool vs 10 tools | text")
  for (const language of CodeSdk.languages) {
    const perTool10 = byName.get(`${language} 10`)! / 10
    for (const size of sizes) {
      const total = byName.get(`${language} ${size}`)!
      const perTool = total / size
      console.log(
        `${language.padEnd(10)} | ${String(size).padStart(5)} | ${formatTime(total).padStart(10)} | ${
          formatTime(perTool).padStart(8)
        } | ${`x${(perTool / perTool10).toFixed(2)}`.padStart(20)} | ${
          (textSize(language, size) / 1024).toFixed(0)
        } KiB`
      )
    }
  }
  const deep = [deepTool()]
  const [deepTs, deepPy] = measureAll([
    ["typescript deep", () => CodeSdk.renderTypeScript(deep)],
    ["python deep", () => CodeSdk.renderPython(deep)]
  ], 2000, 3)
  console.log(
    `one 5,000-deep output union: typescript ${formatTime(deepTs)}, python ${formatTime(deepPy)} ` +
      "(snapshot and subset check included)"
  )
}
