/**
 * effect-tool-runtime: run an AI agent's tool calls through a typed Effect policy pipeline.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Approval from "./Approval.js"
/** @since 0.1.0 */
export * as ApprovalGrants from "./ApprovalGrants.js"
/** @since 0.1.0 */
export * as ApprovalService from "./ApprovalService.js"
/** @since 0.1.0 */
export * as CodeMode from "./CodeMode.js"
/** @since 0.1.0 */
export * as CodeRuntime from "./CodeRuntime.js"
/** @since 0.1.0 */
export * as CodeSdk from "./CodeSdk.js"
/** @since 0.1.0 */
export * as Content from "./Content.js"
/** @since 0.1.0 */
export * as Dsl from "./Dsl.js"
/** @since 0.1.0 */
export * as Execution from "./Execution.js"
/** @since 0.1.0 */
export * as IdGenerator from "./IdGenerator.js"
/** @since 0.1.0 */
export * as Json from "./Json.js"
/** @since 0.1.0 */
export * as JsonSchema from "./JsonSchema.js"
/** @since 0.1.0 */
export * as Policy from "./Policy.js"
/** @since 0.1.0 */
export * as Presentation from "./Presentation.js"
/** @since 0.1.0 */
export * as PromiseApi from "./PromiseApi.js"
/** @since 0.1.0 */
export * as Scheduler from "./Scheduler.js"
/** @since 0.1.0 */
export * as Tool from "./Tool.js"
/** @since 0.1.0 */
export * as ToolCallLog from "./ToolCallLog.js"
/** @since 0.1.0 */
export * as ToolError from "./ToolError.js"
/** @since 0.1.0 */
export * as ToolRegistry from "./ToolRegistry.js"
/** @since 0.1.0 */
export * as ToolResult from "./ToolResult.js"
/** @since 0.1.0 */
export * as ToolRuntime from "./ToolRuntime.js"
/** @since 0.1.0 */
export * as ToolTelemetry from "./ToolTelemetry.js"
