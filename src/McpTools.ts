/**
 * MCP tools with policy: every tool of a Model Context Protocol server, imported as runtime
 * tools for the lifetime of a scope, kept in step with the server's tool list, called with the
 * caller's cancellation forwarded as MCP cancellation.
 *
 * The MCP SDK (`@modelcontextprotocol/sdk`) is an optional peer: this module is reachable only
 * through its own entry point.
 *
 * @since 0.1.0
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type { AgentId } from "./Execution.js"
import * as errors from "./internal/mcp/errors.js"
import * as internal from "./internal/mcp/tools.js"
import type { ToolRegistry } from "./ToolRegistry.js"

export {
  /**
   * The import failed: `connect` (the client could not connect), `list` (a `tools/list`
   * request failed or its answer was malformed), `limit` (the server listed more than
   * `maxTools` tools or too many pages), `invalid-tool` (with `invalidTools: "fail"`, an entry
   * that cannot be imported; the message lists every one), `registration` (the registry refused
   * a tool, e.g. a local tool already has that name in the same scope).
   *
   * @since 0.1.0
   * @category errors
   */
  McpImportError,
  /**
   * An imported tool's call ended with an MCP error result (`isError: true`). Code
   * `MCP_TOOL_ERROR`; the message is the result's text content.
   *
   * @since 0.1.0
   * @category errors
   */
  McpToolError,
  /**
   * An imported tool's call failed below the tool: a JSON-RPC error, the SDK's request timeout,
   * a closed connection, a malformed result. Code `MCP_PROTOCOL_ERROR`; message
   * `MCP request for tool "<server name>" failed: <detail>`.
   *
   * @since 0.1.0
   * @category errors
   */
  McpProtocolError
} from "./internal/mcp/errors.js"

/**
 * The error codes imported tools add to the model-facing `error.info.code`.
 *
 * @since 0.1.0
 * @category constants
 */
export const Codes = {
  MCP_TOOL_ERROR: errors.MCP_TOOL_ERROR,
  MCP_PROTOCOL_ERROR: errors.MCP_PROTOCOL_ERROR
} as const

/**
 * How tools are imported. Every field is read once; an invalid value is a defect
 * (`IllegalArgumentException`).
 *
 * @since 0.1.0
 * @category models
 */
export interface RegisterOptions {
  /** The agent whose scope layer receives the tools; absent = the global layer. */
  readonly agent?: AgentId | undefined
  /** Prepended to every server tool name (up to 64 of A-Z, a-z, 0-9, `_`, `-`, `.`); default none. */
  readonly prefix?: string | undefined
  /** What an entry that cannot be imported does to the first import; default `"fail"`. */
  readonly invalidTools?: "fail" | "skip" | undefined
  /** The largest tool list accepted (a positive integer); default 1000. */
  readonly maxTools?: number | undefined
  /** Each tool's `timeoutMs`, enforced by the timeout policy layer when it is provided. */
  readonly timeoutMs?: number | undefined
  /** The SDK's own per-request timeout in milliseconds (the SDK's default is 60 seconds). */
  readonly requestTimeoutMs?: number | undefined
  /** Follow the server's `notifications/tools/list_changed`; default `true`. */
  readonly listChanged?: boolean | undefined
  /** A tool annotated `readOnlyHint: true` may overlap other parallel-safe calls; default `true`. */
  readonly readOnlyParallel?: boolean | undefined
  /** Validates output schemas outside the supported subset; default the SDK's Ajv validator. */
  readonly jsonSchemaValidator?: jsonSchemaValidator | undefined
}

/**
 * One imported tool.
 *
 * @since 0.1.0
 * @category models
 */
export interface ImportedTool {
  /** The registered name (`prefix` + server name). */
  readonly name: string
  readonly serverName: string
  readonly readOnly: boolean
  /** The server's `destructiveHint`, when it gave a boolean. */
  readonly destructive: boolean | undefined
  /** The tool declares an `outputSchema`: its value is the structured content. */
  readonly structured: boolean
  /** The input schema is in the supported subset, so arguments are checked before the call. */
  readonly validatesArguments: boolean
}

/**
 * A listed entry that was not imported, and why. `name` is the server's name when it was a
 * string (clipped to 128 characters), else a description such as `<number name>`.
 *
 * @since 0.1.0
 * @category models
 */
export interface SkippedTool {
  readonly name: string
  readonly reason: string
}

/**
 * What one refresh changed, by registered name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Refreshed {
  readonly _tag: "Refreshed"
  readonly added: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly replaced: ReadonlyArray<string>
  readonly skipped: ReadonlyArray<SkippedTool>
}

/**
 * A background refresh failed; the imported set is unchanged.
 *
 * @since 0.1.0
 * @category models
 */
export interface RefreshFailed {
  readonly _tag: "RefreshFailed"
  readonly error: errors.McpImportError
}

/**
 * @since 0.1.0
 * @category models
 */
export type ToolSetEvent = Refreshed | RefreshFailed

/**
 * A live import.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpToolSet {
  /** The imported tools, in the server's order. */
  readonly tools: Effect.Effect<ReadonlyArray<ImportedTool>>
  /** The entries the last listing skipped. */
  readonly skipped: Effect.Effect<ReadonlyArray<SkippedTool>>
  /** Re-lists now and applies the difference (invalid entries and refused tools are skipped). */
  readonly refresh: Effect.Effect<Refreshed, errors.McpImportError>
  /** Every refresh's outcome from now on, background ones included, while the scope is open. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<ToolSetEvent>, never, Scope.Scope>
}

/**
 * Imports every tool of a connected client's server into the registry for the lifetime of the
 * scope. The caller owns the client: closing the scope unregisters the tools, cancels the calls
 * still in flight (each ends with `MCP_PROTOCOL_ERROR`) and stops following list changes, but
 * does not close the client.
 *
 * **Details**
 *
 * - Each tool's `inputSchema` is its raw parameters, sent to the model unchanged. When it is
 *   in the supported subset (a root `$schema` aside), arguments are checked before the call
 *   (`INVALID_ARGS`); otherwise the server checks them.
 * - With an `outputSchema`, the value is the structured content, validated against it (a
 *   mismatch is `INVALID_TOOL_OUTPUT`), and the model sees the server's content blocks. Without,
 *   the value is the rendered content blocks.
 * - `readOnlyHint: true` makes the tool parallel-safe; `destructiveHint` is read by
 *   {@link layerAskDestructive}.
 * - The caller's cancellation cancels the MCP request (`notifications/cancelled`); the call
 *   ends `ABORTED`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const register: (
  client: Client,
  options?: RegisterOptions
) => Effect.Effect<McpToolSet, errors.McpImportError, ToolRegistry | Scope.Scope> = internal.register

/**
 * How {@link connect} names the client to the server.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientInfo {
  readonly name: string
  readonly version: string
}

/**
 * A client connected over a fresh transport, owned by the scope: closing the scope closes it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const connect: (
  transport: () => Transport,
  clientInfo?: ClientInfo
) => Effect.Effect<Client, errors.McpImportError, Scope.Scope> = (transport, clientInfo) =>
  internal.connect(transport, clientInfo)

/**
 * @since 0.1.0
 * @category models
 */
export interface LayerOptions extends RegisterOptions {
  /** Makes the transport to connect over (a transport is used once). */
  readonly transport: () => Transport
  readonly clientInfo?: ClientInfo | undefined
}

/**
 * Connects ({@link connect}) and imports ({@link register}) for the lifetime of the layer; the
 * layer owns the connection and closes it after unregistering the tools.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: LayerOptions): Layer.Layer<never, errors.McpImportError, ToolRegistry> =>
  internal.layer(options)

/**
 * @since 0.1.0
 * @category models
 */
export interface AskDestructiveOptions {
  /**
   * Also ask for imported tools that carry neither `readOnlyHint: true` nor a boolean
   * `destructiveHint` (the MCP default presumes such tools destructive); default `false`.
   */
  readonly unannotated?: boolean | undefined
}

/**
 * A global pre-execute policy: a call of an imported tool annotated `destructiveHint: true`
 * (and not `readOnlyHint: true`) that the rest of the policy chain allows asks for approval
 * instead, with the reason `tool "<name>" is marked destructive by its MCP server`. Denials and
 * asks from other hooks stand. Opt-in: without this layer the hint is only reported.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAskDestructive = (options?: AskDestructiveOptions): Layer.Layer<never, never, ToolRegistry> =>
  internal.layerAskDestructive(options)
