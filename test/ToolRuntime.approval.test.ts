/**
 * Approval inside the pipeline: APPR-1…5, D-7, and the interactive approval layer end to end.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Stream } from "effect"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as Presets from "../layers/Presets.js"
import * as Approval from "../src/Approval.js"
import type { ApprovalOutcome } from "../src/Approval.js"
import { PreDecision } from "../src/Policy.js"
import type { ToolResult } from "../src/ToolResult.js"
import {
  ABORTED_BEFORE_DISPATCH,
  answer,
  echoed,
  errorResult,
  execute,
  isPending,
  layerNoApproval,
  layerWithApproval,
  makeProbe,
  type Probe,
  setupWith
} from "./fixtures/runtime.js"

/** {@link setupWith} plus a global pre-execute hook that asks for approval. */
const askingWith = (probe: Probe, reason?: string) =>
  Effect.tap(setupWith(probe), ({ tools }) =>
    tools.onPreExecute(() => Effect.succeed(PreDecision.Ask(reason === undefined ? {} : { reason }))))

const asking = (probe: Probe, reason?: string) => Effect.map(askingWith(probe, reason), ({ tools }) => tools)

const askSetup = (reason?: string) => Effect.suspend(() => askingWith(makeProbe(), reason))

describe("APPR-1 / APPR-2 (no service, no agent)", () => {
  it.scoped("APPR-1 / T-PRE-003: without an approval service, ask is denied with its reason; never auto-allowed", () =>
    Effect.gen(function*() {
      const { probe } = yield* askSetup("needs approval")
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(result, errorResult("needs approval"))
      assert.deepStrictEqual(probe.log, ["pre", "post", "fin", "observe"])
    }).pipe(Effect.provide(layerNoApproval)))

  it.scoped("APPR-1: without a service and without a reason, the fixed `(not yet supported)` text", () =>
    Effect.gen(function*() {
      yield* askSetup()
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(result, errorResult("tool \"echo\" requires approval (not yet supported)"))
    }).pipe(Effect.provide(layerNoApproval)))

  it.scoped("APPR-2 / T-PRE-010: a call without agent is denied and the service is never consulted", () =>
    Effect.gen(function*() {
      const { probe } = yield* askSetup("r")
      const scripted = yield* ApprovalLayers.ScriptedApprovals
      const result = yield* execute({ callId: "c1", name: "echo", arguments: {} })
      assert.deepStrictEqual(
        result,
        errorResult("tool \"echo\" requires approval, but the call has no agent to route it through")
      )
      assert.deepStrictEqual(yield* scripted.requests, [])
      assert.strictEqual(probe.count("post"), 1)
    }).pipe(Effect.provide(Presets.layerTest(["allowed-once"]))))
})

describe("APPR-3 / APPR-4 (request and outcome mapping)", () => {
  it.scoped("APPR-3 / T-PRE-005: allowed-once runs guards and the body; the request carries the caller signal", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      yield* asking(probe, "needs approval")
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, echoed("hi"))
      assert.deepStrictEqual(probe.log, ["pre", "approval", "guard", "around", "body", "post", "fin", "observe"])
      assert.strictEqual(probe.requests.length, 1)
      const { signal, ...request } = probe.requests[0]!
      assert.deepStrictEqual(request, {
        agent: "a",
        toolName: "echo",
        callId: "c1",
        reason: "needs approval",
        arguments: { text: "hi" },
        argumentsDigest: Approval.argumentsDigest({ text: "hi" })!,
        visible: true,
        description: "Echo text.",
        call: { card: "generic", title: "echo", rawInput: { text: "hi" } }
      })
      assert.strictEqual(signal, probe.preSeen[0]!.signal)
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, "allowed-once")])))
  })

  it.scoped("APPR-3: the request has no `reason` key when the ask had none", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      yield* asking(probe)
      yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(Object.keys(probe.requests[0]!).sort(), [
        "agent",
        "arguments",
        "argumentsDigest",
        "call",
        "callId",
        "description",
        "signal",
        "toolName",
        "visible"
      ])
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, "allowed-once")])))
  })

  const denials: ReadonlyArray<readonly [ApprovalOutcome, string, string]> = [
    ["rejected", "the user rejected tool \"echo\"", "T-PRE-006"],
    ["cancelled", "approval for tool \"echo\" was cancelled", "T-PRE-007"],
    ["unavailable", "tool \"echo\" requires approval, but no approval channel is available", "T-LAB-012"]
  ]
  for (const [outcome, text, id] of denials) {
    it.scoped(`APPR-4 / ${id}: \`${outcome}\` is a denial (post-result) that ignores the ask's reason`, () => {
      const probe = makeProbe()
      return Effect.gen(function*() {
        yield* asking(probe, "my reason")
        const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
        assert.deepStrictEqual(result, errorResult(text))
        assert.deepStrictEqual(probe.log, ["pre", "approval", "post", "fin", "observe"])
      }).pipe(Effect.provide(Presets.layerTest([answer(probe, outcome)])))
    })
  }

  it.scoped("APPR-4: an outcome outside the vocabulary is a final pipeline error", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      yield* asking(probe)
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(result, errorResult("unreachable variant in ApprovalOutcome: {\"yes\":true}"))
      assert.strictEqual(probe.count("post"), 0)
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, Effect.succeed({ yes: true } as never))])))
  })

  const constants: ReadonlyArray<readonly [string, Layer.Layer<Approval.Approval>, ToolResult]> = [
    ["layerDenyAll", ApprovalLayers.layerDenyAll, errorResult("the user rejected tool \"echo\"")],
    [
      "layerUnavailable",
      ApprovalLayers.layerUnavailable,
      errorResult("tool \"echo\" requires approval, but no approval channel is available")
    ],
    ["layerApproveAll", ApprovalLayers.layerApproveAll, echoed("ok")]
  ]
  for (const [name, approval, expected] of constants) {
    it.scoped(`APPR-4 / D-7: ask is never auto-approved unless the application chose so (${name})`, () =>
      Effect.gen(function*() {
        yield* askSetup()
        const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "ok" } })
        assert.deepStrictEqual(result, expected)
      }).pipe(Effect.provide(layerWithApproval(approval))))
  }
})

describe("APPR-5 / D-7 (cancellation and failures during approval)", () => {
  it.scoped("APPR-5: `cancelled` without a caller abort stays a denial", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      yield* asking(probe)
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(result, errorResult("approval for tool \"echo\" was cancelled"))
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, "cancelled")])))
  })

  const failures: ReadonlyArray<readonly [string, Effect.Effect<ApprovalOutcome, unknown>]> = [
    ["fails", Effect.fail(new Error("approval service down"))],
    ["dies", Effect.die(new Error("approval service crashed"))],
    ["throws synchronously", Effect.sync((): ApprovalOutcome => {
      throw new Error("boom")
    })]
  ]
  for (const [how, outcome] of failures) {
    it.scoped(`D-7: an approval service that ${how} degrades to \`unavailable\` (a denial post-result)`, () => {
      const probe = makeProbe()
      return Effect.gen(function*() {
        yield* asking(probe)
        const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
        assert.deepStrictEqual(
          result,
          errorResult("tool \"echo\" requires approval, but no approval channel is available")
        )
        assert.deepStrictEqual(probe.log, ["pre", "approval", "post", "fin", "observe"])
      }).pipe(Effect.provide(Presets.layerTest([answer(probe, outcome)])))
    })
  }

  it.scoped("D-7: a request function that throws before returning an Effect degrades to `unavailable`", () =>
    Effect.gen(function*() {
      yield* askSetup()
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(
        result,
        errorResult("tool \"echo\" requires approval, but no approval channel is available")
      )
    }).pipe(Effect.provide(Presets.layerTest([() => {
      throw new Error("not even an Effect")
    }]))))
})

describe("APPR with the interactive layer", () => {
  const layer = layerWithApproval(ApprovalLayers.layerInteractive)

  it.scoped("APPR-3/4: a pending interactive request answered allowed-once runs the body", () =>
    Effect.gen(function*() {
      const { probe } = yield* askSetup("please")
      const { arrivals } = yield* ApprovalLayers.InteractiveApprovals
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "hi" } }))
      const request = Option.getOrThrow(yield* Stream.runHead(arrivals))
      const { agent, callId, reason, signal, toolName } = request.request
      assert.deepStrictEqual({ agent, toolName, callId, reason }, { agent: "a", toolName: "echo", callId: "c1", reason: "please" })
      assert.isFalse(signal.aborted)
      assert.isTrue(yield* isPending(fiber))
      yield* request.answer("allowed-once")
      assert.deepStrictEqual(yield* Fiber.join(fiber), echoed("hi"))
      assert.strictEqual((yield* Effect.flip(request.answer("rejected"))).reason, "answered")
      assert.strictEqual(probe.count("body"), 1)
    }).pipe(Effect.provide(layer)))

  it.scoped("APPR-5 / T-PRE-008: the caller aborts while the request is pending → ABORTED_BEFORE_DISPATCH, even if granted later", () =>
    Effect.gen(function*() {
      const { probe } = yield* askSetup()
      const { arrivals } = yield* ApprovalLayers.InteractiveApprovals
      const controller = new AbortController()
      const fiber = yield* Effect.fork(
        execute({ callId: "c1", name: "echo", agent: "a", arguments: {}, signal: controller.signal })
      )
      const request = Option.getOrThrow(yield* Stream.runHead(arrivals))
      controller.abort()
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.isTrue(request.request.signal.aborted)
      assert.strictEqual((yield* Effect.flip(request.answer("allowed-once"))).reason, "cancelled")
      assert.strictEqual(probe.count("body"), 0)
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
      assert.strictEqual(probe.count("observe"), 1)
    }).pipe(Effect.provide(layer)))

  it.scoped("APPR-5 / D-14: interrupting the calling fiber during the approval wait → cancelled → ABORTED_BEFORE_DISPATCH", () =>
    Effect.gen(function*() {
      const { probe } = yield* askSetup()
      const { arrivals } = yield* ApprovalLayers.InteractiveApprovals
      const fiber = yield* Effect.fork(execute({ callId: "c1", name: "echo", agent: "a", arguments: {} }))
      const request = Option.getOrThrow(yield* Stream.runHead(arrivals))
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(probe.observed.length, 1)
      assert.deepStrictEqual(probe.observed[0]!.result, ABORTED_BEFORE_DISPATCH)
      assert.deepStrictEqual(probe.postSeen, [ABORTED_BEFORE_DISPATCH])
      assert.isTrue(request.request.signal.aborted)
      assert.strictEqual((yield* Effect.flip(request.answer("allowed-once"))).reason, "cancelled")
      assert.strictEqual(probe.count("body"), 0)
    }).pipe(Effect.provide(layer)))

  it.scoped("APPR-5: a caller already aborted before the gate never reaches approval (pre-aborted entry)", () =>
    Effect.gen(function*() {
      const { probe } = yield* askSetup()
      const controller = new AbortController()
      controller.abort()
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {}, signal: controller.signal })
      assert.deepStrictEqual(result, ABORTED_BEFORE_DISPATCH)
      assert.strictEqual(probe.count("pre"), 0)
    }).pipe(Effect.provide(layer)))
})
