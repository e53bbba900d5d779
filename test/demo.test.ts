/**
 * The newcomer's demo (issue 11 item 4) runs through the real runtime and keeps telling the
 * truth: measured overlap of the reads, the write alone, approval answered and rejected through
 * the interactive layer, a timeout, a caller cancellation, a redaction, a deferred context, and
 * cards rebuilt from the reopened libSQL file equal to the live ones; its Code Mode section counts
 * towards the exit code.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { main } from "../examples/demo.js"
import { codeModeHeld } from "../examples/demo/codeMode.js"
import { overlaps } from "../examples/demo/timeline.js"

const codeOf = (result: { readonly isError: boolean; readonly error?: { readonly info?: { readonly code: string } } }) =>
  result.isError ? result.error?.info?.code ?? "(no code)" : "ok"

describe("examples/demo", () => {
  it.live("issue 11 item 4: the scripted session shows overlap, approvals, timeout, cancellation, redaction and an equal replay", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const report = yield* Effect.promise(() => main({ print: (line) => lines.push(line) }))

      assert.strictEqual(report.exitCode, 0)
      assert.isTrue(report.readsOverlapped)
      assert.isTrue(report.writeAlone)
      assert.isTrue(report.replayEqual)

      const reads = report.spans.filter((span) => span.label.startsWith("read "))
      const write = report.spans.find((span) => span.label.startsWith("write "))!
      assert.deepStrictEqual(reads.map((span) => span.label).sort(), ["read .env", "read README.md", "read src/app.ts"])
      for (const a of reads) for (const b of reads) assert.isTrue(a === b || overlaps(a, b), `${a.label} overlaps ${b.label}`)
      for (const read of reads) assert.isTrue(read.end <= write.start, `${read.label} ended before the write started`)

      const codes = Object.fromEntries(Object.entries(report.results).map(([id, result]) => [id, codeOf(result)]))
      assert.deepStrictEqual(codes, {
        "m1-read-readme": "ok",
        "m1-read-app": "ok",
        "m1-read-env": "ok",
        "m1-write-app": "ok",
        "m2-delete-cache": "ok",
        "m2-delete-env": "(no code)",
        "m3-fetch": "TOOL_TIMEOUT",
        "m4-unknown": "UNKNOWN_TOOL",
        "m4-not-json": "INVALID_ARGS",
        "m4-wrong-type": "INVALID_ARGS",
        "m5-tests": "ABORTED",
        "m5-read": "ABORTED_BEFORE_DISPATCH"
      })
      assert.deepStrictEqual(report.approvals, [["m2-delete-cache", "allowed-once"], ["m2-delete-env", "rejected"]])
      assert.deepStrictEqual(report.results["m2-delete-env"]!.content, [
        { type: "text", text: "Error: the user rejected tool \"delete_file\"" }
      ])
      assert.deepStrictEqual(report.results["m4-unknown"]!.content, [
        { type: "text", text: "Error: unknown tool \"launch_rockets\"" }
      ])

      const env = report.results["m1-read-env"]!.content[0] as { readonly text: string }
      assert.strictEqual(env.text, "DATABASE_URL=postgres://app@db/acme\nAPI_KEY=[redacted]\n")
      assert.isFalse(JSON.stringify(report.records).includes("sk-live"), "the secret never reached the log")
      assert.deepStrictEqual(report.contexts.map((context) => context.content), [[
        { type: "text", text: "src/app.ts changed: run the tests before you finish." }
      ]])

      // issue 12 item 1: the scripted model's five messages went through the agent loop, which stopped on the user's Stop
      assert.deepStrictEqual(report.agentLoop, { requests: 5, steps: 5, stopReason: "aborted" })
      assert.include(lines, "The agent loop ended after 5 model messages (aborted).")

      assert.strictEqual(report.records.length, 24)
      assert.deepStrictEqual(report.replayed, report.live)
      assert.strictEqual(report.live.length, 12)
      assert.isFalse(fs.existsSync(report.logFile), "the temporary log is removed unless --keep")

      assert.include(lines, "Reads ran side by side: yes. The write ran alone: yes.")
      assert.include(lines, "Rebuilt cards equal the live ones: yes.")
      assert.isTrue(lines.some((line) => line.includes("? The agent asks to run delete_file") && line.endsWith("User: no")))
      assert.isTrue(lines.some((line) => /read README\.md +\| +#+/.test(line)), "the timeline is printed")

      // the Code Mode section (its details: CodeMode.demo.test.ts) counts towards the exit code
      assert.isTrue(codeModeHeld(report.codeMode))
      assert.include(lines, "The endless loop was stopped at its CPU budget and the two reads overlapped: yes.")
    }))

  it.live("issue 11 item 4: --json prints the durable log and nothing else", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const report = yield* Effect.promise(() => main({ json: true, print: (line) => lines.push(line) }))
      assert.strictEqual(report.exitCode, 0)
      assert.strictEqual(lines.length, 1)
      assert.deepStrictEqual(JSON.parse(lines[0]!), report.records)
    }))
})
