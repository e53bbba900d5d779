/**
 * Approval inside the pipeline: APPR-1…5, D-7, the interactive approval layer end to end, and
 * issue 10 — what the person sees, the misconfiguration warning, grants against denies and
 * guards, a person answering through the audited service.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Stream } from "effect"
import { createHash } from "node:crypto"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as Presets from "../layers/Presets.js"
import * as ToolCallLogMemory from "../layers/ToolCallLogMemory.js"
import * as Approval from "../src/Approval.js"
import type { ApprovalOutcome } from "../src/Approval.js"
import * as ApprovalGrants from "../src/ApprovalGrants.js"
import * as ApprovalService from "../src/ApprovalService.js"
import * as IdGenerator from "../src/IdGenerator.js"
import { PreDecision } from "../src/Policy.js"
import * as ToolCallLog from "../src/ToolCallLog.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type { ToolResult } from "../src/ToolResult.js"
import { captureWarnings } from "./fixtures/approval.js"
import * as Hostile from "./fixtures/hostile.js"
import {
  ABORTED_BEFORE_DISPATCH,
  answer,
  echo,
  echoed,
  errorResult,
  execute,
  isDeepFrozen,
  isPending,
  layerNoApproval,
  layerWithApproval,
  makeProbe,
  type Probe,
  rawTool,
  setupWith,
  unknownTool
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

describe("APPR-3 / issue 10 item 2: what the person sees", () => {
  const asked = (outcome: ApprovalOutcome = "allowed-once") => {
    const probe = makeProbe()
    return { probe, layer: Presets.layerTest([answer(probe, outcome)]) }
  }

  it.scoped("APPR-3: the request carries the frozen arguments (the object policies saw), their digest, the description and the call card", () => {
    const { layer, probe } = asked()
    return Effect.gen(function*() {
      yield* setupWith(probe, {
        presentCall: (args) => ({ card: "terminal", title: `echo ${(args as { text: string }).text}`, cwd: "/tmp" })
      })
      const tools = yield* ToolRegistry
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
      const args = { text: "hi", nested: { b: 2, a: 1 } }
      yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: args })
      const request = probe.requests[0]!
      assert.strictEqual(request.arguments, probe.preSeen[0]!.arguments, "the execution's own snapshot")
      assert.notStrictEqual(request.arguments, args)
      assert.isTrue(isDeepFrozen(request.arguments))
      assert.isTrue(Object.isFrozen(request))
      assert.strictEqual(request.argumentsDigest, Approval.argumentsDigest(args))
      assert.strictEqual(
        request.argumentsDigest,
        createHash("sha256").update("{\"nested\":{\"a\":1,\"b\":2},\"text\":\"hi\"}").digest("hex")
      )
      assert.strictEqual(request.visible, true)
      assert.strictEqual(request.description, "Echo text.")
      assert.deepStrictEqual(request.call, { card: "terminal", title: "echo hi", cwd: "/tmp" })
    }).pipe(Effect.provide(layer))
  })

  it.scoped("APPR-3: the digest does not depend on key order", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      yield* asking(probe)
      yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "x", n: [1, { y: 1, x: 2 }] } })
      yield* execute({ callId: "c2", name: "echo", agent: "a", arguments: { n: [1, { x: 2, y: 1 }], text: "x" } })
      assert.strictEqual(probe.requests[0]!.argumentsDigest, probe.requests[1]!.argumentsDigest)
      yield* execute({ callId: "c3", name: "echo", agent: "a", arguments: { n: [{ x: 2, y: 1 }, 1], text: "x" } })
      assert.notStrictEqual(probe.requests[0]!.argumentsDigest, probe.requests[2]!.argumentsDigest, "array order matters")
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, "rejected"), answer(probe, "rejected"), answer(probe, "rejected")])))
  })

  it.scoped("APPR-3: a tool the agent cannot see is asked with `visible: false`, no description and the generic card", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      yield* asking(probe)
      const tools = yield* ToolRegistry
      yield* tools.register(rawTool("secret", () => Effect.succeed("s"), { description: "Only for b." }), { agent: "b" })
      const result = yield* execute({ callId: "c1", name: "secret", agent: "a", arguments: { k: 1 } })
      assert.deepStrictEqual(result, unknownTool("secret"))
      const request = probe.requests[0]!
      assert.strictEqual(request.visible, false)
      assert.isFalse("description" in request)
      assert.deepStrictEqual(request.call, { card: "generic", title: "secret", rawInput: { k: 1 } })
    }).pipe(Effect.provide(Presets.layerTest([answer(probe, "allowed-once")])))
  })

  const presenters: ReadonlyArray<readonly [string, (args: unknown) => unknown]> = [
    ["throws", () => {
      throw new Error("presenter broke")
    }],
    ["returns a throwing proxy", () => Hostile.throwingProxy()],
    ["returns something that is not a card", () => ({ card: "hologram", title: "x" })],
    ["returns a bigint-bearing card", () => ({ card: "generic", title: "x", size: 10n })]
  ]
  for (const [how, presentCall] of presenters) {
    it.scoped(`APPR-3 / D-10: a presenter that ${how} gives the generic card; the call proceeds`, () => {
      const probe = makeProbe()
      return Effect.gen(function*() {
        yield* setupWith(probe, { presentCall: presentCall as never })
        const tools = yield* ToolRegistry
        yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Ask({})))
        const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "hi" } })
        assert.deepStrictEqual(result, echoed("hi"))
        assert.deepStrictEqual(probe.requests[0]!.call, { card: "generic", title: "echo", rawInput: { text: "hi" } })
      }).pipe(Effect.provide(Presets.layerTest([answer(probe, "allowed-once")])))
    })
  }
})

describe("APPR-1 / issue 10 item 4: no silent misconfiguration", () => {
  const MISSING = "a tool call asked for approval, but this runtime has no Approval service"

  it.effect("APPR-1: the pinned denial text stays; one warning per runtime names the missing Approval Layer", () => {
    const { layer, lines } = captureWarnings()
    const run = Effect.gen(function*() {
      yield* askSetup()
      const tools = yield* ToolRegistry
      yield* tools.register(echo({ name: "other" }))
      const first = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      const second = yield* execute({ callId: "c2", name: "other", agent: "a", arguments: {} })
      assert.deepStrictEqual(first, errorResult("tool \"echo\" requires approval (not yet supported)"))
      assert.deepStrictEqual(second, errorResult("tool \"other\" requires approval (not yet supported)"))
    }).pipe(Effect.scoped, Effect.provide(layerNoApproval))
    return Effect.gen(function*() {
      yield* run
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0], MISSING)
      assert.include(lines[0], "ApprovalService.layer")
      assert.include(lines[0], "Presets.layerApproval")
      yield* run
      assert.strictEqual(lines.length, 2, "a second runtime warns once too")
    }).pipe(Effect.provide(layer))
  })

  it.scoped("APPR-1: with an Approval service mounted, nothing is warned", () => {
    const { layer, lines } = captureWarnings()
    return Effect.gen(function*() {
      yield* askSetup()
      yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} })
      assert.deepStrictEqual(lines, [])
    }).pipe(Effect.provide(Layer.merge(layerWithApproval(ApprovalLayers.layerDenyAll), layer)))
  })

  it.scoped("issue 10 item 4: Presets.layerApproval wires the service over the chosen log in one call", () =>
    Effect.gen(function*() {
      yield* askSetup("sure?")
      const service = yield* ApprovalService.ApprovalService
      yield* service.answer(() => Effect.succeed("allowed-once"))
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "ok" } })
      assert.deepStrictEqual(result, echoed("ok"))
      const [entry] = yield* ToolCallLog.approvals
      assert.deepStrictEqual(entry!.asked, {
        _tag: "approval/asked",
        id: "ap-1",
        toolName: "echo",
        callId: "c1",
        agent: "a",
        reason: "sure?",
        argumentsDigest: Approval.argumentsDigest({ text: "ok" })!
      })
      assert.deepStrictEqual(entry!.decided, { _tag: "approval/decided", id: "ap-1", outcome: "allowed-once", by: "answerer" })
    }).pipe(Effect.provide(Presets.layerApproval({ log: ToolCallLogMemory.layer, approvalIds: IdGenerator.counter("ap-") }))))
})

describe("GUARD-1 / issue 10 item 3: a remembered grant answers only an ask", () => {
  const layer = () => Presets.layerApproval({
    log: ToolCallLogMemory.layer,
    grants: ApprovalGrants.layerMemory,
    approvalIds: IdGenerator.counter("ap-")
  })

  const granted = (probe: Probe) =>
    Effect.gen(function*() {
      const { tools } = yield* askingWith(probe)
      const grants = yield* ApprovalGrants.ApprovalGrants
      const grant = yield* grants.grant({ toolName: "echo" })
      return { tools, grant }
    })

  it.scoped("a live grant allows the ask (by grant:<id>): guards and the body run, no answerer is asked", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      const { grant } = yield* granted(probe)
      const service = yield* ApprovalService.ApprovalService
      let answered = 0
      yield* service.answer(() => Effect.sync(() => (answered++, "rejected" as const)))
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, echoed("hi"))
      assert.strictEqual(answered, 0)
      assert.deepStrictEqual(probe.log, ["pre", "guard", "around", "body", "post", "fin", "observe"])
      const [entry] = yield* ToolCallLog.approvals
      assert.strictEqual(entry!.decided!.by, `grant:${grant.id}`)
    }).pipe(Effect.provide(layer()))
  })

  it.scoped("a pre-execute deny wins over a grant: approval is never asked", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      const { tools } = yield* granted(probe)
      yield* tools.onPreExecute(() => Effect.succeed(PreDecision.Deny({ reason: "policy says no" })), { prepend: true })
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, errorResult("policy says no"))
      assert.strictEqual(probe.count("body"), 0)
      assert.deepStrictEqual(yield* ToolCallLog.approvals, [])
    }).pipe(Effect.provide(layer()))
  })

  it.scoped("a guard wins over a grant (guards run after approval): the grant allowed the ask, the guard denies", () => {
    const probe = makeProbe()
    return Effect.gen(function*() {
      const { grant, tools } = yield* granted(probe)
      yield* tools.guard(() => "terminal policy", { agent: "a" })
      const result = yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "hi" } })
      assert.deepStrictEqual(result, errorResult("terminal policy"))
      assert.strictEqual(probe.count("body"), 0)
      const [entry] = yield* ToolCallLog.approvals
      assert.deepStrictEqual(entry!.decided, {
        _tag: "approval/decided",
        id: "ap-1",
        outcome: "allowed-once",
        by: `grant:${grant.id}`
      })
      const other = yield* execute({ callId: "c2", name: "echo", agent: "b", arguments: { text: "hi" } })
      assert.deepStrictEqual(other, echoed("hi"), "the guard is agent a's only")
    }).pipe(Effect.provide(layer()))
  })

  it.scoped("a call allowed without an ask never consults grants or audits", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry
      yield* tools.register(echo())
      yield* (yield* ApprovalGrants.ApprovalGrants).grant({ toolName: "echo" })
      assert.deepStrictEqual(yield* execute({ callId: "c1", name: "echo", agent: "a", arguments: {} }), echoed(""))
      assert.deepStrictEqual(yield* ToolCallLog.approvals, [])
    }).pipe(Effect.provide(layer())))
})

describe("issue 10: a person answering through the service", () => {
  const layer = () => Presets.layerApproval({
    log: ToolCallLogMemory.layer,
    grants: ApprovalGrants.layerMemory,
    interactive: true,
    approvalIds: IdGenerator.counter("ap-")
  })

  const nextPending = Effect.flatMap(
    ApprovalLayers.InteractiveApprovals,
    ({ arrivals }) => Effect.map(Stream.runHead(arrivals), Option.getOrThrow)
  )

  it.scoped("\"always allow\": the person's remembered answer decides the next call without asking again", () =>
    Effect.gen(function*() {
      const { probe } = yield* askSetup("deletes things")
      const first = yield* Effect.fork(execute({ callId: "c1", name: "echo", agent: "a", arguments: { text: "1" } }))
      const pending = yield* nextPending
      assert.strictEqual(pending.request.callId, "c1")
      assert.strictEqual(pending.request.description, "Echo text.")
      yield* pending.answer({ outcome: "allowed-once", remember: { scope: "agent", match: "tool" } })
      assert.deepStrictEqual(yield* Fiber.join(first), echoed("1"))
      const second = yield* execute({ callId: "c2", name: "echo", agent: "a", arguments: { text: "2" } })
      assert.deepStrictEqual(second, echoed("2"))
      assert.deepStrictEqual(yield* (yield* ApprovalLayers.InteractiveApprovals).pending, [])
      const audit = yield* ToolCallLog.approvals
      assert.deepStrictEqual(audit.map((e) => [e.asked?.callId, e.decided?.by, e.decided?.remembered]), [
        ["c1", "answerer", "grant-1"],
        ["c2", "grant:grant-1", undefined]
      ])
      const third = yield* Effect.fork(execute({ callId: "c3", name: "echo", agent: "b", arguments: { text: "3" } }))
      const other = yield* nextPending
      assert.strictEqual(other.request.agent, "b", "the grant was agent a's")
      yield* other.answer("rejected")
      assert.deepStrictEqual(yield* Fiber.join(third), errorResult("the user rejected tool \"echo\""))
      assert.strictEqual(probe.count("body"), 2)
    }).pipe(Effect.provide(layer())))

  it.scoped("APPR-5: the caller aborts while the person decides → ABORTED_BEFORE_DISPATCH; audited cancelled by abort; answering then fails", () =>
    Effect.gen(function*() {
      yield* askSetup()
      const controller = new AbortController()
      const fiber = yield* Effect.fork(
        execute({ callId: "c1", name: "echo", agent: "a", arguments: {}, signal: controller.signal })
      )
      const pending = yield* nextPending
      controller.abort()
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED_BEFORE_DISPATCH)
      const refused = yield* Effect.flip(pending.answer("allowed-once"))
      assert.strictEqual(refused.reason, "cancelled")
      let audit = yield* ToolCallLog.approvals
      for (let i = 0; i < 1_000 && audit[0]?.decided === undefined; i++) {
        yield* Effect.yieldNow()
        audit = yield* ToolCallLog.approvals
      }
      assert.deepStrictEqual(audit[0]!.decided, { _tag: "approval/decided", id: "ap-1", outcome: "cancelled", by: "abort" })
      assert.deepStrictEqual(audit[0]!.late, [])
    }).pipe(Effect.provide(layer())))
})
