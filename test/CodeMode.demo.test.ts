/**
 * The demo's Code Mode section (`examples/demo/codeMode.ts`) over the real QuickJS layer: what
 * the model is given, a looping program stopped at its CPU budget with its captured output, a
 * `Promise.all` over two parallel-safe tools whose bodies both started before either finished,
 * and the durable sub-call records. `codeModeHeld` (the demo's exit code) fails for every
 * outcome that differs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  type CodeModeDemo,
  codeModeHeld,
  codeModeSession,
  CPU_MS,
  failureKind
} from "../examples/demo/codeMode.js"
import * as CodeMode from "../src/CodeMode.js"
import type { ToolResult } from "../src/ToolResult.js"

const FAILED_TEXT = `code run failed (timeout): the program used more than ${CPU_MS} ms of CPU time\n` +
  "Captured output:\nscanning the workspace…"

const PARALLEL_TEXT = "3 files in src\n{\n  \"files\": [\n    \"src/app.ts\",\n    \"src/db.ts\",\n    \"src/routes.ts\"\n" +
  "  ],\n  \"title\": \"# Acme\"\n}"

describe("examples/demo/codeMode", () => {
  it.live("PTC-9 / D-17 / PTC-14 / D-23: a loop stops at its CPU budget; Promise.all overlaps two parallel-safe tools; the Python program overlaps them too on the runtime the machine supports", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const demo = yield* codeModeSession((line) => lines.push(line))

      assert.deepStrictEqual(demo.schemas, ["run_code"])
      assert.deepStrictEqual(demo.sections.map((section) => [section.name, section.order]), [
        ["tools:code-only", 99],
        ["tools:sdk", 150]
      ])
      assert.strictEqual(demo.sections[0]!.text, CodeMode.CODE_ONLY_TEXT)
      assert.include(demo.sections[1]!.text, "interface ToolOutputMap {\n  list_files: string[];\n  read_file: string;\n}")

      assert.strictEqual(demo.loopingKind, "timeout")
      assert.deepStrictEqual(demo.looping, {
        isError: true,
        error: { message: FAILED_TEXT, info: { name: "CodeRunFailedError", code: "CODE_RUN_FAILED" } },
        content: [{ type: "text", text: `Error: ${FAILED_TEXT}` }]
      })

      assert.deepStrictEqual(demo.parallel, {
        isError: false,
        value: { logs: ["3 files in src"], result: { files: ["src/app.ts", "src/db.ts", "src/routes.ts"], title: "# Acme" } },
        content: [{ type: "text", text: PARALLEL_TEXT }]
      })
      assert.isTrue(demo.overlapped)
      assert.deepStrictEqual(demo.events.slice(0, 2), ["start list_files", "start read_file"])
      assert.deepStrictEqual([...demo.events.slice(2)].sort(), ["end list_files", "end read_file"])
      assert.deepStrictEqual(demo.python.result, demo.parallel, "the Python program reads the same as the TypeScript one")
      assert.isTrue(demo.python.overlapped, "asyncio.gather overlapped the two reads")
      assert.include(lines, `   The same reads as a Python program, on ${demo.python.runtime}:`)
      assert.deepStrictEqual(demo.records, [
        "tool/code-dispatch-start rc-read:code:1",
        "tool/code-dispatch-start rc-read:code:2",
        "tool/code-dispatch rc-read:code:1",
        "tool/code-dispatch rc-read:code:2"
      ])
      assert.isTrue(codeModeHeld(demo))

      assert.include(lines, "     | while (true) files++")
      assert.include(lines, `     > Error: code run failed (timeout): the program used more than ${CPU_MS} ms of CPU time`)
      assert.include(lines, "     > scanning the workspace…")
      assert.include(lines, "         list_files: string[];")
      assert.include(lines, "   The tool bodies, in order: " + demo.events.join(", ") + ".")
    }))

  it("PTC-14: failureKind reads the kind of a CODE_RUN_FAILED result only", () => {
    const failed = (message: string, code: string): ToolResult => ({
      isError: true,
      error: { message, info: { name: "CodeRunFailedError", code } },
      content: [{ type: "text", text: `Error: ${message}` }]
    })
    assert.strictEqual(failureKind(failed("code run failed (call-limit): the program made more than 2 tool calls", "CODE_RUN_FAILED")), "call-limit")
    assert.strictEqual(failureKind(failed("code run failed (timeout): x", "TOOL_TIMEOUT")), undefined)
    assert.strictEqual(failureKind({ isError: false, value: null, content: [] }), undefined)
  })

  it("the demo's exit code: codeModeHeld fails for each outcome that differs from the expected one", () => {
    const good: CodeModeDemo = {
      sections: [
        { name: "tools:code-only", order: 99, text: CodeMode.CODE_ONLY_TEXT },
        { name: "tools:sdk", order: 150, text: "## Writing code for run_code" }
      ],
      schemas: ["run_code"],
      looping: {
        isError: true,
        error: { message: FAILED_TEXT, info: { name: "CodeRunFailedError", code: "CODE_RUN_FAILED" } },
        content: [{ type: "text", text: `Error: ${FAILED_TEXT}` }]
      },
      loopingKind: "timeout",
      parallel: {
        isError: false,
        value: { logs: ["3 files in src"], result: { files: ["src/app.ts", "src/db.ts", "src/routes.ts"], title: "# Acme" } },
        content: [{ type: "text", text: PARALLEL_TEXT }]
      },
      events: ["start list_files", "start read_file", "end read_file", "end list_files"],
      overlapped: true,
      records: [
        "tool/code-dispatch-start rc-read:code:1",
        "tool/code-dispatch-start rc-read:code:2",
        "tool/code-dispatch rc-read:code:1",
        "tool/code-dispatch rc-read:code:2"
      ],
      python: {
        runtime: "CodeRuntimePython (bubblewrap sandbox)",
        result: {
          isError: false,
          value: { logs: ["3 files in src"], result: { files: ["src/app.ts", "src/db.ts", "src/routes.ts"], title: "# Acme" } },
          content: [{ type: "text", text: PARALLEL_TEXT }]
        },
        overlapped: true
      }
    }
    assert.isTrue(codeModeHeld(good))
    const broken: ReadonlyArray<readonly [string, CodeModeDemo]> = [
      ["serialized reads", { ...good, overlapped: false }],
      ["another kind", { ...good, loopingKind: "exception" }],
      ["a failed program", { ...good, parallel: good.looping }],
      ["another value", { ...good, parallel: { ...good.parallel, value: { logs: [] } } as ToolResult }],
      ["native schemas", { ...good, schemas: ["list_files", "read_file", "run_code"] }],
      ["no code-only rule", { ...good, sections: good.sections.slice(1) }],
      ["a missing record", { ...good, records: good.records.slice(1) }],
      ["serialized Python reads", { ...good, python: { ...good.python, overlapped: false } }],
      ["a failed Python program", { ...good, python: { ...good.python, result: good.looping } }]
    ]
    for (const [what, demo] of broken) assert.isFalse(codeModeHeld(demo), what)
  })
})
