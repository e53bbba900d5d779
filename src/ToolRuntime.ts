/**
 * The tool runtime: one call from creation to result (spec §7–§15), as `execute` and as the
 * staged API (`prepare` → `dispatch` → `finalize` / `finish`, TYPES-15) that schedulers and
 * Code Mode drive with identical observable behaviour.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type { ExecuteInput, ToolExecution } from "./Execution.js"
import * as internal from "./internal/pipeline/pipeline.js"
import type { ToolRegistry } from "./ToolRegistry.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * A live execution handle of the staged API. `execution` is the read-only view policies see.
 *
 * @since 0.1.0
 * @category models
 */
export interface Execution {
  readonly execution: ToolExecution
}

/**
 * The outcome of `prepare` (creation, pre-execute, approval, guards).
 *
 * @since 0.1.0
 * @category models
 */
export type Prepared =
  | { readonly _tag: "Dispatch"; readonly handle: Execution }
  | { readonly _tag: "PostResult"; readonly handle: Execution; readonly result: ToolResult }
  | { readonly _tag: "FinalResult"; readonly handle: Execution; readonly result: ToolResult }

/**
 * The outcome of `dispatch` (around-dispatch wrappers and the body).
 *
 * @since 0.1.0
 * @category models
 */
export type Dispatched =
  | { readonly _tag: "PostResult"; readonly result: ToolResult }
  | { readonly _tag: "FinalResult"; readonly result: ToolResult }

/**
 * The runtime service. Nothing here fails: every call ends with exactly one frozen result,
 * the same object result observers received (EXEC-2, D-15).
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** `prepare` followed by the matching continuation (EXEC-1). */
  readonly execute: (input: ExecuteInput) => Effect.Effect<ToolResult>
  readonly prepare: (input: ExecuteInput) => Effect.Effect<Prepared>
  readonly dispatch: (handle: Execution) => Effect.Effect<Dispatched>
  /** Post-execute, then finishing. */
  readonly finalize: (handle: Execution, result: ToolResult) => Effect.Effect<ToolResult>
  /** Finishing only (for final-results). */
  readonly finish: (handle: Execution, result: ToolResult) => Effect.Effect<ToolResult>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ToolRuntime extends Context.Tag("effect-tool-runtime/ToolRuntime")<ToolRuntime, Service>() {}

/**
 * Builds the runtime over the registry in context, capturing the optional `Approval` and
 * `IdGenerator` services once.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Service, never, ToolRegistry> = internal.make

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ToolRuntime, never, ToolRegistry> = internal.layer(ToolRuntime)
