/**
 * Swappable Layer implementations of the services, and ready-made presets.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as ApprovalLayers from "./ApprovalLayers.js"
/** @since 0.1.0 */
export * as CodeRuntimePyodide from "./CodeRuntimePyodide.js"
/** @since 0.1.0 */
export * as CodeRuntimePython from "./CodeRuntimePython.js"
/** @since 0.1.0 */
export * as CodeRuntimeQuickJs from "./CodeRuntimeQuickJs.js"
/** @since 0.1.0 */
export * as InMemoryToolRegistry from "./InMemoryToolRegistry.js"
/** @since 0.1.0 */
export * as Presets from "./Presets.js"
/** @since 0.1.0 */
export * as TimeoutPolicy from "./TimeoutPolicy.js"
/** @since 0.1.0 */
export * as ToolCallLogMemory from "./ToolCallLogMemory.js"
/** @since 0.1.0 */
export * as ToolCallLogNoop from "./ToolCallLogNoop.js"
