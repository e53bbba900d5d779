/**
 * The demo's approval coda (issue 10, "Done when"): one "always allow" answer, remembered, decides
 * the second deploy without asking the person again, and the audit trail says so.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { rememberedGrant } from "../examples/demo/approval.js"

describe("examples/demo/approval", () => {
  it.live("issue 10: the second deploy is decided by the grant the person's first answer stored", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const report = yield* rememberedGrant((line) => lines.push(line))
      assert.strictEqual(report.asked, 1, "the person was asked once")
      assert.deepStrictEqual(report.results.map((result) => result.content), [
        [{ type: "text", text: "deployed to staging" }],
        [{ type: "text", text: "deployed to production" }]
      ])
      assert.deepStrictEqual(report.audit, [
        { callId: "deploy-1", outcome: "allowed-once", by: "answerer", remembered: "grant-1" },
        { callId: "deploy-2", outcome: "allowed-once", by: "grant:grant-1" }
      ])
      assert.include(lines, "   ? The agent asks to run `deploy staging` (it ships to users). User: always allow (1 hour)")
      assert.include(lines, "     deploy-2: allowed-once by grant:grant-1")
    }))
})
