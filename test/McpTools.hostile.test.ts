/**
 * MCP tools against a hostile server (a raw JSON-RPC peer answering with any value): names the
 * registry cannot take, odd schemas, huge and endless lists, malformed call results, values no
 * wire could carry, a failing refresh, option checks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, Queue } from "effect"
import * as Presets from "../layers/Presets.js"
import * as McpTools from "../src/McpTools.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as Hostile from "./fixtures/hostile.js"
import { raw } from "./fixtures/mcpServer.js"
import { errorResult, info } from "./fixtures/runtime.js"

const test = Presets.layerTest()
const OBJECT = { type: "object" }
const good = { name: "good", inputSchema: OBJECT }

const call = (name: string, args: unknown) =>
  Effect.flatMap(ToolRuntime.ToolRuntime, (runtime) => runtime.execute({ callId: "c", name, arguments: args }))

const protocolError = (tool: string, detail: string) =>
  errorResult(`MCP request for tool "${tool}" failed: ${detail}`, info("McpProtocolError", "MCP_PROTOCOL_ERROR"))

const listing = (tools: ReadonlyArray<unknown>) => (method: string) => method === "tools/list" ? { tools } : {}

const badEntries: ReadonlyArray<readonly [unknown, string, string]> = [
  [{ name: "", inputSchema: OBJECT }, "", "the tool name must be 1 to 128 characters of A-Z, a-z, 0-9, _, - and ."],
  [{ name: "has space", inputSchema: OBJECT }, "has space", "the tool name must be 1 to 128 characters of A-Z, a-z, 0-9, _, - and ."],
  [{ name: "x".repeat(129), inputSchema: OBJECT }, `${"x".repeat(128)}…`, "the tool name must be 1 to 128 characters of A-Z, a-z, 0-9, _, - and ."],
  [{ name: 7, inputSchema: OBJECT }, "<number name>", "the tool name must be 1 to 128 characters of A-Z, a-z, 0-9, _, - and ."],
  [{ inputSchema: OBJECT }, "<missing name>", "the tool name must be 1 to 128 characters of A-Z, a-z, 0-9, _, - and ."],
  ["a string", "<not an object>", "the tool entry is not an object"],
  [{ name: "run_code", inputSchema: OBJECT }, "run_code", `"run_code" is reserved`],
  [{ name: "noschema" }, "noschema", `the inputSchema must be a JSON Schema object with type "object"`],
  [{ name: "arrayroot", inputSchema: { type: "array" } }, "arrayroot", `the inputSchema must be a JSON Schema object with type "object"`],
  [{ name: "desc", description: 5, inputSchema: OBJECT }, "desc", "the tool description is not a string"],
  [{ name: "out", inputSchema: OBJECT, outputSchema: [] }, "out", "the outputSchema must be a JSON Schema object"],
  [
    { name: "task", inputSchema: OBJECT, execution: { taskSupport: "required" } },
    "task",
    "the tool requires task-based execution, which is not supported"
  ],
  [{ name: "good", inputSchema: OBJECT }, "good", "the server lists this name more than once"]
]

describe("McpTools hostile listings", () => {
  it.scoped("entries that cannot be imported fail the first import, each named with its reason", () =>
    Effect.gen(function*() {
      const { client } = yield* raw(listing([good, ...badEntries.map(([entry]) => entry)]))
      const error = yield* Effect.flip(McpTools.register(client))
      assert.strictEqual(error.reason, "invalid-tool")
      assert.strictEqual(
        error.message,
        `the server lists tools that cannot be imported: ${badEntries.map(([, n, r]) => `"${n}" (${r})`).join("; ")}`
      )
      assert.deepStrictEqual(yield* Effect.flatMap(ToolRegistry, (r) => r.schemas()), [])
    }).pipe(Effect.provide(test)))

  it.scoped("invalidTools: skip imports the rest and reports every skipped entry", () =>
    Effect.gen(function*() {
      const { client } = yield* raw(listing([good, ...badEntries.map(([entry]) => entry)]))
      const set = yield* McpTools.register(client, { invalidTools: "skip" })
      assert.deepStrictEqual((yield* set.tools).map((t) => t.name), ["good"])
      assert.deepStrictEqual(yield* set.skipped, badEntries.map(([, name, reason]) => ({ name, reason })))
    }).pipe(Effect.provide(test)))

  it.scoped("odd but valid schemas are passed through untouched and not checked locally", () =>
    Effect.gen(function*() {
      const odd = `{"type":"object","$defs":{"p":{"type":"string","format":"uri"}},` +
        `"properties":{"p":{"$ref":"#/$defs/p"},"__proto__":{"type":"number"}},"additionalProperties":{"type":"string"}}`
      const { client } = yield* raw(listing([{ name: "odd", inputSchema: JSON.parse(odd) }]))
      const set = yield* McpTools.register(client)
      const [schema] = yield* Effect.flatMap(ToolRegistry, (r) => r.schemas())
      assert.deepStrictEqual(schema?.parameters, JSON.parse(odd))
      assert.isTrue(Object.prototype.hasOwnProperty.call((schema?.parameters as any).properties, "__proto__"))
      assert.strictEqual((yield* set.tools)[0]?.validatesArguments, false)
    }).pipe(Effect.provide(test)))

  it.scoped("a list longer than maxTools fails with reason limit", () =>
    Effect.gen(function*() {
      const tools = Array.from({ length: 4 }, (_, i) => ({ name: `t${i}`, inputSchema: OBJECT }))
      const { client } = yield* raw(listing(tools))
      const error = yield* Effect.flip(McpTools.register(client, { maxTools: 3 }))
      assert.deepStrictEqual([error.reason, error.message], ["limit", "the server lists more than 3 tools (maxTools)"])
      const ok = yield* McpTools.register(client, { maxTools: 4 })
      assert.strictEqual((yield* ok.tools).length, 4)
    }).pipe(Effect.provide(test)))

  it.scoped("pages are followed; a repeating cursor and an endless list fail", () =>
    Effect.gen(function*() {
      let mode: "pages" | "repeat" | "endless" = "pages"
      let counter = 0
      const { client } = yield* raw((method, params) => {
        if (method !== "tools/list") return {}
        const cursor = (params as { cursor?: string } | undefined)?.cursor
        if (mode === "pages") {
          return cursor === undefined
            ? { tools: [{ name: "a", inputSchema: OBJECT }], nextCursor: "2" }
            : { tools: [{ name: "b", inputSchema: OBJECT }] }
        }
        if (mode === "repeat") return { tools: [], nextCursor: "same" }
        return { tools: [], nextCursor: `c${counter++}` }
      })
      const set = yield* McpTools.register(client)
      assert.deepStrictEqual((yield* set.tools).map((t) => t.name), ["a", "b"])
      mode = "repeat"
      const repeat = yield* Effect.flip(set.refresh)
      assert.deepStrictEqual([repeat.reason, repeat.message], ["list", "the tools/list cursor repeats"])
      mode = "endless"
      const endless = yield* Effect.flip(set.refresh)
      assert.deepStrictEqual(
        [endless.reason, endless.message],
        ["limit", "the tools/list answer spans more than 100 pages"]
      )
      assert.deepStrictEqual((yield* set.tools).map((t) => t.name), ["a", "b"])
    }).pipe(Effect.provide(test)))

  it.scoped("malformed list answers and JSON-RPC errors fail with reason list", () =>
    Effect.gen(function*() {
      let answer: unknown = { tools: "nope" }
      const { client } = yield* raw((method) => method === "tools/list" ? answer : {})
      const notArray = yield* Effect.flip(McpTools.register(client))
      assert.deepStrictEqual([notArray.reason, notArray.message], ["list", "the tools/list result has no tools array"])
      answer = { tools: [], nextCursor: 5 }
      const cursor = yield* Effect.flip(McpTools.register(client))
      assert.strictEqual(cursor.message, "the tools/list nextCursor is not a string")
      answer = { tools: [{ name: "big", inputSchema: Hostile.withBigint({ type: "object" }) }] }
      const bigint = yield* Effect.flip(McpTools.register(client))
      assert.strictEqual(bigint.message, "the tools/list result is not a JSON object")
      answer = { rpcError: { code: -32603, message: "server exploded" } }
      const rpc = yield* Effect.flip(McpTools.register(client))
      assert.deepStrictEqual([rpc.reason, rpc.message], ["list", "tools/list failed: MCP error -32603: server exploded"])
    }).pipe(Effect.provide(test)))

  it.scoped("a failing background refresh keeps the imported set and reports RefreshFailed", () =>
    Effect.gen(function*() {
      let fail = false
      const { client, notifyListChanged } = yield* raw((method) =>
        method !== "tools/list" ? {} : fail ? { rpcError: { code: -32000, message: "down" } } : { tools: [good] }
      )
      const set = yield* McpTools.register(client)
      const events = yield* set.subscribe
      fail = true
      yield* notifyListChanged
      const event = yield* Queue.take(events)
      assert.strictEqual(event._tag, "RefreshFailed")
      assert.strictEqual(event._tag === "RefreshFailed" && event.error.message, "tools/list failed: MCP error -32000: down")
      assert.deepStrictEqual((yield* set.tools).map((t) => t.name), ["good"])
      assert.isTrue(Option.isSome(yield* Effect.flatMap(ToolRegistry, (r) => r.get("good"))))
    }).pipe(Effect.provide(test)))
})

describe("McpTools hostile call results", () => {
  const withResult = (result: () => unknown, tool: Record<string, unknown> = good) =>
    raw((method) => method === "tools/list" ? { tools: [tool] } : result())

  const cases: ReadonlyArray<readonly [string, () => unknown, string]> = [
    ["content that is not an array", () => ({ content: "text" }), "content is not an array"],
    ["a non-boolean isError", () => ({ content: [], isError: "yes" }), "isError is not a boolean"],
    ["a nested bigint", () => ({ content: [{ type: "text", text: "x", extra: 1n }] }), "not a JSON object"],
    ["a nested throwing proxy", () => ({ content: [Hostile.throwingProxy()] }), "not a JSON object"],
    ["a nested revoked proxy", () => ({ content: [Hostile.revokedProxy()] }), "not a JSON object"],
    ["a nested cycle", () => ({ content: [Hostile.cyclic()] }), "not a JSON object"],
    ["a throwing toJSON", () => ({ content: [Hostile.throwingConversions()] }), "not a JSON object"]
  ]
  for (const [label, result, why] of cases) {
    it.scoped(`${label} is MCP_PROTOCOL_ERROR`, () =>
      Effect.gen(function*() {
        const { client } = yield* withResult(result)
        yield* McpTools.register(client)
        assert.deepStrictEqual(
          yield* call("good", {}),
          protocolError("good", `the server sent a malformed result: ${why}`)
        )
      }).pipe(Effect.provide(test)))
  }

  it.scoped("odd blocks are described, null-prototype and __proto__-keyed values survive as data", () =>
    Effect.gen(function*() {
      const { client } = yield* withResult(() => ({
        content: [
          { type: "video", uri: "x" },
          { type: 3 },
          { type: "text", text: 4 },
          { type: "image", data: "x" },
          null,
          Hostile.nullProto({ type: "text", text: "from a null prototype" }),
          { type: "resource", resource: "nope" }
        ]
      }))
      yield* McpTools.register(client)
      const result = yield* call("good", {})
      const expected = [
        "[video content]",
        "[unsupported content block]",
        "[malformed text content]",
        "[malformed image content]",
        "[malformed content block]",
        "from a null prototype",
        "[malformed resource content]"
      ].map((text) => ({ type: "text" as const, text }))
      assert.deepStrictEqual(result, { isError: false, value: expected, content: expected })
    }).pipe(Effect.provide(test)))

  it.scoped("structured content: missing is INVALID_TOOL_OUTPUT; an own __proto__ key stays a key", () =>
    Effect.gen(function*() {
      let structured: unknown = undefined
      const { client } = yield* withResult(
        () => structured === undefined ? { content: [] } : { content: [], structuredContent: structured },
        { name: "good", inputSchema: OBJECT, outputSchema: { type: "object" } }
      )
      yield* McpTools.register(client)
      assert.deepStrictEqual(
        yield* call("good", {}),
        errorResult(
          `tool "good" returned invalid output: structuredContent is missing (the tool declares an outputSchema)`,
          info("ToolOutputError", "INVALID_TOOL_OUTPUT")
        )
      )
      structured = Hostile.ownProtoKey()
      const result = yield* call("good", {})
      assert.isFalse(result.isError)
      const value = (result as { value: object }).value
      assert.isTrue(Object.prototype.hasOwnProperty.call(value, "__proto__"))
      assert.strictEqual(Object.getPrototypeOf(value), Object.prototype)
      assert.deepStrictEqual(result.content, [{ type: "text", text: `{"__proto__":{"polluted":true}}` }])
    }).pipe(Effect.provide(test)))

  it.scoped("an outputSchema outside the subset is checked by the JSON Schema validator", () =>
    Effect.gen(function*() {
      let n = 1
      const { client } = yield* withResult(() => ({ content: [], structuredContent: { n } }), {
        name: "good",
        inputSchema: OBJECT,
        outputSchema: {
          $schema: "https://json-schema.org/draft/2020-12/schema",
          type: "object",
          properties: { n: { type: "integer", minimum: 0 } },
          required: ["n"]
        }
      })
      yield* McpTools.register(client)
      assert.deepStrictEqual(yield* call("good", {}), { isError: false, value: { n: 1 }, content: [{ type: "text", text: `{"n":1}` }] })
      n = -1
      assert.deepStrictEqual(
        yield* call("good", {}),
        errorResult(
          `tool "good" returned invalid output: value does not match the outputSchema: data/n must be >= 0`,
          info("ToolOutputError", "INVALID_TOOL_OUTPUT")
        )
      )
    }).pipe(Effect.provide(test)))

  it.scoped("a reply the SDK cannot parse (an array result) ends with the SDK's request timeout", () =>
    Effect.gen(function*() {
      const { client } = yield* withResult(() => [1, 2])
      yield* McpTools.register(client, { requestTimeoutMs: 20 })
      assert.deepStrictEqual(yield* call("good", {}), protocolError("good", "MCP error -32001: Request timed out"))
    }).pipe(Effect.provide(test)))

  it.scoped("a JSON-RPC error from tools/call is MCP_PROTOCOL_ERROR with the server's message", () =>
    Effect.gen(function*() {
      const { client } = yield* withResult(() => ({ rpcError: { code: -32602, message: "no such tool" } }))
      yield* McpTools.register(client)
      assert.deepStrictEqual(yield* call("good", {}), protocolError("good", "MCP error -32602: no such tool"))
    }).pipe(Effect.provide(test)))

  it.scoped("an error result without text gets a fixed message", () =>
    Effect.gen(function*() {
      const { client } = yield* withResult(() => ({ content: [], isError: true }))
      yield* McpTools.register(client)
      assert.deepStrictEqual(
        yield* call("good", {}),
        errorResult(`MCP tool "good" reported an error`, info("McpToolError", "MCP_TOOL_ERROR"))
      )
    }).pipe(Effect.provide(test)))

  it.scoped("the server sees a frozen-free copy of the arguments, one tools/call per call", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* withResult(() => ({ content: [] }))
      yield* McpTools.register(client)
      yield* call("good", { nested: { a: [1, 2] } })
      const calls = sent.filter((m) => (m as { method?: string }).method === "tools/call")
      assert.deepStrictEqual(calls.map((m) => (m as { params?: unknown }).params), [
        { name: "good", arguments: { nested: { a: [1, 2] } } }
      ])
    }).pipe(Effect.provide(test)))
})

describe("McpTools options", () => {
  const invalid: ReadonlyArray<readonly [unknown, string]> = [
    [{ prefix: "bad prefix" }, `option "prefix" must be up to 64 characters of A-Z, a-z, 0-9, _, - and .`],
    [{ maxTools: 0 }, `option "maxTools" must be a positive integer`],
    [{ timeoutMs: -1 }, `option "timeoutMs" must be a positive finite number no greater than 2147483647`],
    [{ invalidTools: "maybe" }, `option "invalidTools" must be "fail" or "skip"`],
    [{ agent: 1 }, `option "agent" must be a string`],
    [Hostile.throwingProxy(), `could not read option "agent": hostile get`]
  ]
  for (const [options, message] of invalid) {
    it.scoped(`an invalid option is a defect: ${message}`, () =>
      Effect.gen(function*() {
        const { client } = yield* raw(listing([good]))
        const exit = yield* Effect.exit(McpTools.register(client, options as never))
        assert.isTrue(Exit.isFailure(exit))
        const defect = Exit.isFailure(exit) ? Cause.dieOption(exit.cause) : Option.none()
        assert.isTrue(Option.isSome(defect) && Cause.isIllegalArgumentException(defect.value))
        assert.strictEqual(Option.isSome(defect) && (defect.value as Error).message, `McpTools: ${message}`)
      }).pipe(Effect.provide(test)))
  }
})
