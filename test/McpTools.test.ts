/**
 * MCP tools with policy, against a real in-process McpServer over the SDK's in-memory transport:
 * listing, calls, structured output, error results, cancellation, list changes, read-only
 * overlap, destructive approval, scoped lifetime.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Queue, Scope, TestClock } from "effect"
import { z } from "zod"
import * as ApprovalLayers from "../layers/ApprovalLayers.js"
import * as Presets from "../layers/Presets.js"
import * as McpTools from "../src/McpTools.js"
import * as Scheduler from "../src/Scheduler.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import type { ToolResult } from "../src/ToolResult.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { childScope, fixture, lowLevel, makeServer } from "./fixtures/mcpServer.js"
import { ABORTED, echo, errorResult, info, text, timedOut } from "./fixtures/runtime.js"

const call = (name: string, args: unknown, signal?: AbortSignal) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) =>
    runtime.execute(signal === undefined
      ? { callId: `c-${name}`, name, arguments: args, agent: "main" }
      : { callId: `c-${name}`, name, arguments: args, agent: "main", signal }))

const success = (value: unknown, content: ReadonlyArray<unknown>): ToolResult =>
  ({ isError: false, value, content }) as ToolResult

const test = Presets.layerTest()

describe("McpTools import", () => {
  it.scoped("imports every tool with its inputSchema as raw parameters", () =>
    Effect.gen(function*() {
      const { client } = yield* fixture
      const set = yield* McpTools.register(client)
      const listed = yield* Effect.promise(() => client.listTools())
      const schemas = yield* Effect.flatMap(ToolRegistry, (r) => r.schemas())
      assert.deepStrictEqual(schemas.map((s) => s.name), listed.tools.map((t) => t.name))
      for (const tool of listed.tools) {
        const schema = schemas.find((s) => s.name === tool.name)!
        assert.deepStrictEqual(schema.parameters, tool.inputSchema as unknown)
        assert.strictEqual(schema.description, tool.description ?? "")
      }
      const add = (yield* set.tools).find((t) => t.name === "add")
      assert.deepStrictEqual(add, {
        name: "add",
        serverName: "add",
        readOnly: true,
        destructive: undefined,
        structured: true,
        validatesArguments: true
      })
      const bounded = (yield* set.tools).find((t) => t.name === "bounded")
      assert.strictEqual(bounded?.validatesArguments, false)
      assert.deepStrictEqual(yield* set.skipped, [])
    }).pipe(Effect.provide(test)))

  it.scoped("a call returns the server's content; without an outputSchema the value is the rendered blocks", () =>
    Effect.gen(function*() {
      const { client } = yield* fixture
      yield* McpTools.register(client)
      const result = yield* call("echo", { text: "hello" })
      assert.deepStrictEqual(result, success([{ type: "text", text: "hello" }], [{ type: "text", text: "hello" }]))
    }).pipe(Effect.provide(test)))

  it.scoped("structured output: the value is the structured content and the model sees the text content", () =>
    Effect.gen(function*() {
      const { client } = yield* fixture
      yield* McpTools.register(client)
      const result = yield* call("add", { a: 2, b: 3 })
      assert.deepStrictEqual(result, success({ sum: 5 }, [{ type: "text", text: "2 + 3 = 5" }]))
    }).pipe(Effect.provide(test)))

  it.scoped("structured content that fails the outputSchema is INVALID_TOOL_OUTPUT", () =>
    Effect.gen(function*() {
      let sum: unknown = 4
      const { client } = yield* lowLevel({
        list: () => ({
          tools: [{
            name: "add",
            inputSchema: { type: "object" },
            outputSchema: {
              type: "object",
              properties: { sum: { type: "number" } },
              required: ["sum"],
              additionalProperties: false
            }
          }]
        }),
        call: () => ({ content: [{ type: "text", text: "sum" }], structuredContent: { sum } })
      })
      yield* McpTools.register(client)
      assert.deepStrictEqual(yield* call("add", {}), success({ sum: 4 }, [{ type: "text", text: "sum" }]))
      sum = "four"
      assert.deepStrictEqual(
        yield* call("add", {}),
        errorResult(
          `tool "add" returned invalid output: "value.sum" must be a number`,
          info("ToolOutputError", "INVALID_TOOL_OUTPUT")
        )
      )
    }).pipe(Effect.provide(test)))

  it.scoped("an MCP error result is MCP_TOOL_ERROR with the server's text", () =>
    Effect.gen(function*() {
      const { client } = yield* fixture
      yield* McpTools.register(client)
      assert.deepStrictEqual(
        yield* call("fail", {}),
        errorResult("boom: the disk is full", info("McpToolError", McpTools.Codes.MCP_TOOL_ERROR))
      )
    }).pipe(Effect.provide(test)))

  it.scoped("arguments are checked locally when the schema is in the subset, by the server otherwise", () =>
    Effect.gen(function*() {
      const { client } = yield* fixture
      yield* McpTools.register(client)
      assert.deepStrictEqual(
        yield* call("echo", { text: 1 }),
        errorResult(`invalid arguments: "text" must be a string`, info("ToolArgsError", "INVALID_ARGS"))
      )
      const bounded = yield* call("bounded", { n: -1 })
      assert.isTrue(bounded.isError)
      assert.deepStrictEqual(bounded.isError && bounded.error.info, info("McpToolError", "MCP_TOOL_ERROR"))
      assert.match(bounded.isError ? bounded.error.message : "", /Input validation error/)
      assert.deepStrictEqual(yield* call("bounded", { n: 2 }), success([text("n=2")[0]], text("n=2")))
    }).pipe(Effect.provide(test)))

  it.scoped("content blocks: text and image kept, audio, links and binary resources described", () =>
    Effect.gen(function*() {
      const { client } = yield* fixture
      yield* McpTools.register(client)
      const result = yield* call("media", {})
      const expected = [
        { type: "text", text: "a picture" },
        { type: "image", data: "aGk=", mimeType: "image/png" },
        { type: "text", text: "[audio content (audio/wav)]" },
        { type: "text", text: "[resource link: notes file:///notes.txt]" },
        { type: "text", text: "[resource file:///a.txt]\nfile body" },
        { type: "text", text: "[binary resource file:///b.bin (application/octet-stream)]" }
      ]
      assert.deepStrictEqual(result, success(expected, expected))
    }).pipe(Effect.provide(test)))
})

describe("McpTools cancellation", () => {
  it.scoped("the caller's abort is forwarded as MCP cancellation and the call ends ABORTED", () =>
    Effect.gen(function*() {
      const { client, probe } = yield* fixture
      yield* McpTools.register(client)
      const controller = new AbortController()
      const fiber = yield* Effect.fork(call("wait", { id: "w" }, controller.signal))
      yield* Deferred.await(probe.entered("w"))
      controller.abort(new Error("user pressed stop"))
      const reason = yield* Deferred.await(probe.aborted("w"))
      assert.strictEqual(reason, "AbortError: tool call aborted")
      assert.deepStrictEqual(yield* Fiber.join(fiber), ABORTED)
    }).pipe(Effect.provide(test)))

  it.scoped("interrupting the calling fiber cancels the MCP request too", () =>
    Effect.gen(function*() {
      const { client, probe } = yield* fixture
      yield* McpTools.register(client)
      const fiber = yield* Effect.fork(call("wait", { id: "i" }))
      yield* Deferred.await(probe.entered("i"))
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(yield* Deferred.await(probe.aborted("i")), "AbortError: tool call aborted")
    }).pipe(Effect.provide(test)))

  it.scoped("timeoutMs: the timeout policy's deadline cancels the request and the call is TOOL_TIMEOUT", () =>
    Effect.gen(function*() {
      const { client, probe } = yield* fixture
      yield* McpTools.register(client, { timeoutMs: 500 })
      const fiber = yield* Effect.fork(call("wait", { id: "t" }))
      yield* Deferred.await(probe.entered("t"))
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), timedOut(500))
      assert.isTrue(Option.isSome(yield* Deferred.poll(probe.aborted("t"))))
    }).pipe(Effect.provide(test)))
})

describe("McpTools list changes", () => {
  it.scoped("a tool added on the server is registered; a removed one is unregistered", () =>
    Effect.gen(function*() {
      const { client, server } = yield* fixture
      const set = yield* McpTools.register(client)
      const events = yield* set.subscribe
      const registry = yield* ToolRegistry
      const later = server.registerTool("later", {
        description: "Added later.",
        inputSchema: { x: z.string() }
      }, async ({ x }) => ({ content: [{ type: "text", text: `later ${x}` }] }))
      const added = yield* Queue.take(events)
      assert.deepStrictEqual(added, { _tag: "Refreshed", added: ["later"], removed: [], replaced: [], skipped: [] })
      assert.deepStrictEqual(yield* call("later", { x: "1" }), success(text("later 1"), text("later 1")))
      later.update({ description: "Changed." })
      const replaced = yield* Queue.take(events)
      assert.deepStrictEqual(replaced, { _tag: "Refreshed", added: [], removed: [], replaced: ["later"], skipped: [] })
      assert.strictEqual(Option.getOrThrow(yield* registry.get("later")).description, "Changed.")
      later.remove()
      const removed = yield* Queue.take(events)
      assert.deepStrictEqual(removed, { _tag: "Refreshed", added: [], removed: ["later"], replaced: [], skipped: [] })
      assert.isTrue(Option.isNone(yield* registry.get("later")))
      assert.deepStrictEqual(
        yield* call("later", { x: "1" }),
        errorResult(`unknown tool "later"`, info("ToolNotFoundError", "UNKNOWN_TOOL"))
      )
      assert.isFalse((yield* set.tools).some((t) => t.name === "later"))
    }).pipe(Effect.provide(test)))

  it.scoped("listChanged: false ignores notifications until refresh is called", () =>
    Effect.gen(function*() {
      const { client, server } = yield* fixture
      const set = yield* McpTools.register(client, { listChanged: false })
      server.registerTool("later", { inputSchema: {} }, async () => ({ content: [] }))
      yield* Effect.promise(() => client.ping())
      const registry = yield* ToolRegistry
      assert.isTrue(Option.isNone(yield* registry.get("later")))
      const refreshed = yield* set.refresh
      assert.deepStrictEqual(refreshed.added, ["later"])
      assert.isTrue(Option.isSome(yield* registry.get("later")))
    }).pipe(Effect.provide(test)))
})

describe("McpTools hints", () => {
  it.scoped("readOnlyHint: two calls overlap in one Scheduler.runBatch", () =>
    Effect.gen(function*() {
      const { client, probe } = yield* fixture
      yield* McpTools.register(client)
      const batch = yield* Effect.fork(Scheduler.runBatch([
        { callId: "1", name: "wait", arguments: JSON.stringify({ id: "p1" }) },
        { callId: "2", name: "wait", arguments: JSON.stringify({ id: "p2" }) }
      ], { agent: "main" }))
      yield* Deferred.await(probe.entered("p1"))
      yield* Deferred.await(probe.entered("p2"))
      probe.release("p2")
      probe.release("p1")
      const result = yield* Fiber.join(batch)
      assert.deepStrictEqual(
        result.results.map((r) => r.result.content),
        [text("done p1"), text("done p2")]
      )
    }).pipe(Effect.provide(test)))

  it.scoped("readOnlyHint is parallel, others exclusive; readOnlyParallel: false makes every tool exclusive", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const first = yield* fixture
      const scope = yield* childScope
      yield* Scope.extend(McpTools.register(first.client), scope)
      assert.strictEqual(yield* registry.executionMode({ name: "wait", arguments: { id: "x" } }), "parallel")
      assert.strictEqual(yield* registry.executionMode({ name: "echo", arguments: { text: "x" } }), "exclusive")
      yield* Scope.close(scope, Exit.void)
      yield* McpTools.register(first.client, { readOnlyParallel: false })
      assert.strictEqual(yield* registry.executionMode({ name: "wait", arguments: { id: "x" } }), "exclusive")
    }).pipe(Effect.provide(test)))

  it.scoped("destructiveHint with layerAskDestructive: approval is asked, and a rejection never reaches the server", () =>
    Effect.gen(function*() {
      const { client, probe } = yield* fixture
      yield* McpTools.register(client)
      const denied = yield* call("delete_file", { path: "/a" })
      assert.deepStrictEqual(denied, errorResult(`the user rejected tool "delete_file"`))
      assert.deepStrictEqual(probe.deleted, [])
      const allowed = yield* call("delete_file", { path: "/b" })
      assert.deepStrictEqual(allowed, success(text("deleted /b"), text("deleted /b")))
      assert.deepStrictEqual(probe.deleted, ["/b"])
      yield* call("echo", { text: "not asked" })
      const requests = yield* Effect.flatMap(ApprovalLayers.ScriptedApprovals, (s) => s.requests)
      assert.deepStrictEqual(
        requests.map((r) => [r.toolName, r.reason]),
        [
          ["delete_file", `tool "delete_file" is marked destructive by its MCP server`],
          ["delete_file", `tool "delete_file" is marked destructive by its MCP server`]
        ]
      )
    }).pipe(
      Effect.provide(McpTools.layerAskDestructive().pipe(
        Layer.provideMerge(Presets.layerTest(["rejected", "allowed-once"]))
      ))
    ))

  it.scoped("without layerAskDestructive the hint asks nothing; unannotated: true also asks for unannotated tools", () =>
    Effect.gen(function*() {
      const { client, probe } = yield* fixture
      yield* McpTools.register(client)
      assert.deepStrictEqual(yield* call("echo", { text: "x" }), errorResult(`the user rejected tool "echo"`))
      assert.deepStrictEqual(yield* call("add", { a: 1, b: 1 }), success({ sum: 2 }, text("1 + 1 = 2")))
      const requests = yield* Effect.flatMap(ApprovalLayers.ScriptedApprovals, (s) => s.requests)
      assert.deepStrictEqual(requests.map((r) => r.toolName), ["echo"])
      assert.deepStrictEqual(probe.deleted, [])
    }).pipe(
      Effect.provide(McpTools.layerAskDestructive({ unannotated: true }).pipe(
        Layer.provideMerge(Presets.layerTest(["rejected"]))
      ))
    ))
})

describe("McpTools lifetime", () => {
  it.scoped("closing the scope of register unregisters the tools and leaves the caller's client connected", () =>
    Effect.gen(function*() {
      const { client, probe } = yield* fixture
      const registry = yield* ToolRegistry
      const scope = yield* childScope
      yield* Scope.extend(McpTools.register(client), scope)
      assert.isAbove((yield* registry.schemas()).length, 0)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* registry.schemas(), [])
      yield* Effect.promise(() => client.ping())
      assert.isFalse(probe.closed())
    }).pipe(Effect.provide(test)))

  it.scoped("McpTools.layer owns the connection: closing it unregisters and disconnects", () =>
    Effect.gen(function*() {
      const { server, probe, markClosed } = makeServer()
      const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
      yield* Effect.promise(() => server.connect(serverTransport))
      const previous = serverTransport.onclose
      serverTransport.onclose = () => {
        markClosed()
        previous?.()
      }
      const registry = yield* ToolRegistry
      const scope = yield* childScope
      yield* Layer.buildWithScope(McpTools.layer({ transport: () => clientTransport, prefix: "fx." }), scope)
      assert.deepStrictEqual(
        (yield* registry.schemas()).map((s) => s.name),
        ["fx.add", "fx.echo", "fx.bounded", "fx.fail", "fx.media", "fx.wait", "fx.delete_file"]
      )
      assert.deepStrictEqual(yield* call("fx.echo", { text: "p" }), success(text("p"), text("p")))
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* registry.schemas(), [])
      assert.isTrue(probe.closed())
    }).pipe(Effect.provide(test)))

  it.scoped("a call in flight when the scope closes is cancelled on the server and ends MCP_PROTOCOL_ERROR", () =>
    Effect.gen(function*() {
      const { client, probe } = yield* fixture
      const scope = yield* childScope
      yield* Scope.extend(McpTools.register(client), scope)
      const fiber = yield* Effect.fork(call("wait", { id: "c" }))
      yield* Deferred.await(probe.entered("c"))
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* Deferred.await(probe.aborted("c")), "AbortError: the MCP tool set was closed")
      assert.deepStrictEqual(
        yield* Fiber.join(fiber),
        errorResult(
          `MCP request for tool "wait" failed: the MCP tool set was closed during the call`,
          info("McpProtocolError", "MCP_PROTOCOL_ERROR")
        )
      )
    }).pipe(Effect.provide(test)))

  it.scoped("a name that a local tool already holds in the same scope is a typed registration error; a prefix avoids it", () =>
    Effect.gen(function*() {
      const { client } = yield* fixture
      const registry = yield* ToolRegistry
      yield* registry.register(echo())
      const failed = yield* Effect.flip(McpTools.register(client))
      assert.strictEqual(failed._tag, "McpImportError")
      assert.strictEqual(failed.reason, "registration")
      assert.strictEqual(
        failed.message,
        `MCP tool "echo" could not be imported: the registry refused "echo": tool "echo" is already registered ` +
          "(for a per-agent variant, register through `register(definition, { agent })` instead)"
      )
      assert.deepStrictEqual((yield* registry.schemas()).map((s) => s.name), ["echo"])
      yield* McpTools.register(client, { prefix: "mcp." })
      assert.deepStrictEqual(
        yield* call("mcp.echo", { text: "prefixed" }),
        success(text("prefixed"), text("prefixed"))
      )
    }).pipe(Effect.provide(test)))

  it.scoped("agent: the tools land in that agent's layer only", () =>
    Effect.gen(function*() {
      const { client } = yield* fixture
      const registry = yield* ToolRegistry
      yield* McpTools.register(client, { agent: "main" })
      assert.deepStrictEqual(yield* registry.schemas(), [])
      assert.isAbove((yield* registry.schemas("main")).length, 0)
    }).pipe(Effect.provide(test)))
})
