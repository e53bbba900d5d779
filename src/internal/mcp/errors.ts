/**
 * The errors of the MCP import: the import's own failure, and the coded errors an imported
 * tool's call fails with (they reach the model as `error.info`).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { CodedErrorTypeId } from "../../ToolError.js"

/** @internal */
export const MCP_TOOL_ERROR = "MCP_TOOL_ERROR" as const

/** @internal */
export const MCP_PROTOCOL_ERROR = "MCP_PROTOCOL_ERROR" as const

/** @internal */
export const ImportErrorReason = Schema.Literal("connect", "list", "limit", "invalid-tool", "registration")

/** @internal */
export class McpImportError extends Schema.TaggedError<McpImportError>("effect-tool-runtime/McpImportError")(
  "McpImportError",
  { reason: ImportErrorReason, message: Schema.String }
) {}

/** @internal */
export class McpToolError extends Schema.TaggedError<McpToolError>("effect-tool-runtime/McpToolError")(
  "McpToolError",
  { toolName: Schema.String, detail: Schema.String }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  readonly code = MCP_TOOL_ERROR
  override get message(): string {
    return this.detail
  }
}

/** @internal */
export class McpProtocolError extends Schema.TaggedError<McpProtocolError>("effect-tool-runtime/McpProtocolError")(
  "McpProtocolError",
  { toolName: Schema.String, detail: Schema.String }
) {
  readonly [CodedErrorTypeId]: CodedErrorTypeId = CodedErrorTypeId
  readonly code = MCP_PROTOCOL_ERROR
  override get message(): string {
    return `MCP request for tool "${this.toolName}" failed: ${this.detail}`
  }
}
