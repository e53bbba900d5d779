import * as Json from "../src/Json.js"
import type { JsonObject } from "../src/Json.js"
import * as JsonSchema from "../src/JsonSchema.js"
import { formatTime, makeArguments, measureAll } from "./support.js"

/** A realistic argument schema: an object with nested arrays of objects, enums, a oneOf and open maps. */
const schema: JsonObject = {
  type: "object",
  properties: {
    command: { type: "string", enum: ["apply_edits", "preview"] },
    dryRun: { type: "boolean" },
    options: {
      type: "object",
      properties: {
        recursive: { type: "boolean" },
        depth: { type: "integer" },
        encoding: { type: "string", enum: ["utf8", "latin1"] }
      },
      additionalProperties: false
    },
    files: {
      type: "array",
      items: {
        type: "object",
        properties: {
          id: { type: "integer" },
          path: { type: "string", description: "workspace-relative path" },
          size: { type: "integer" },
          ratio: { type: "number" },
          binary: { type: "boolean" },
          owner: {
            oneOf: [
              { type: "null" },
              {
                type: "object",
                properties: { name: { type: "string" }, uid: { type: "integer" } },
                required: ["name", "uid"],
                additionalProperties: false
              }
            ]
          },
          tags: { type: "array", items: { type: "string" } },
          edits: {
            type: "array",
            items: {
              type: "object",
              properties: { line: { type: "integer" }, before: { type: "string" }, after: { type: "string" } },
              required: ["line", "before", "after"],
              additionalProperties: false
            }
          },
          note: { type: "string" },
          extra: {}
        },
        required: ["id", "path", "size", "tags", "edits"],
        additionalProperties: true
      }
    }
  },
  required: ["command", "files"]
}

/**
 * Validation of realistic tool arguments of ~1 KB, ~100 KB and ~10 MB against a precompiled
 * schema, with `structuredClone` and a `JSON.parse(JSON.stringify(x))` round trip of the same
 * object measured in the same run (and `Json.isLossless`, the floor every validation pays).
 */
export const run = async (): Promise<void> => {
  const compileStart = process.hrtime.bigint()
  const validator = JsonSchema.compile(schema)
  const compileNs = Number(process.hrtime.bigint() - compileStart)
  const sizes: ReadonlyArray<readonly [string, number, number, number]> = [
    ["~1 KB", 1_000, 1200, 10],
    ["~100 KB", 100_000, 1500, 2],
    ["~10 MB", 10_000_000, 5000, 1]
  ]
  console.log(`JsonSchema: validation of tool arguments (compile once: ${formatTime(compileNs)})`)
  for (const [label, bytes, budgetMs, minOps] of sizes) {
    const input = makeArguments(bytes, 42, { extra: true })
    const found = validator(input, "")
    if (found.length > 0) throw new Error(`benchmark input is invalid: ${found.join("; ")}`)
    const actualBytes = JSON.stringify(input).length
    const kb = actualBytes / 1024
    const candidates: ReadonlyArray<readonly [string, () => unknown]> = [
      ["compiled validator", () => validator(input, "")],
      ["JsonSchema.validate (cached)", () => JsonSchema.validate(schema, input, "")],
      ["Json.isLossless", () => Json.isLossless(input)],
      ["structuredClone", () => structuredClone(input)],
      ["JSON.parse(JSON.stringify)", () => JSON.parse(JSON.stringify(input))]
    ]
    const times = measureAll(candidates, budgetMs, minOps)
    const clone = times[candidates.length - 2]
    const roundTrip = times[candidates.length - 1]
    console.log(`  ${label} (${actualBytes.toLocaleString("en-US")} bytes of JSON)`)
    candidates.forEach(([name], index) => {
      const nsPerOp = times[index]
      const mbPerSecond = actualBytes / 1e6 / (nsPerOp / 1e9)
      console.log(
        `    ${name.padEnd(30)} ${formatTime(nsPerOp).padStart(10)}/op  ${mbPerSecond.toFixed(0).padStart(5)} MB/s  ` +
          `${(nsPerOp / kb / 1e3).toFixed(3).padStart(7)} µs/KB  ` +
          `x${(nsPerOp / clone).toFixed(2)} structuredClone  x${(nsPerOp / roundTrip).toFixed(2)} JSON round trip`
      )
    })
  }
}
