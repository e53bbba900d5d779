/**
 * Ready-made runtime Layers.
 *
 * @since 0.1.0
 */
import * as Layer from "effect/Layer"
import type { Approval } from "../src/Approval.js"
import * as IdGenerator from "../src/IdGenerator.js"
import type { ToolRegistry } from "../src/ToolRegistry.js"
import * as ToolRuntime from "../src/ToolRuntime.js"
import * as ApprovalLayers from "./Approval.js"
import * as InMemoryToolRegistry from "./InMemoryToolRegistry.js"
import * as TimeoutPolicy from "./TimeoutPolicy.js"

const runtimeOver = <R>(services: Layer.Layer<R | ToolRegistry>) =>
  Layer.mergeAll(ToolRuntime.layer, TimeoutPolicy.layer).pipe(Layer.provideMerge(services))

/**
 * The default runtime: in-memory registry (deployment mode native), no approval service (so
 * `ask` is denied, APPR-1), timeout policy on, random context ids.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDefault: Layer.Layer<ToolRuntime.ToolRuntime | ToolRegistry> = runtimeOver(
  InMemoryToolRegistry.layer
)

/**
 * The test runtime: like {@link layerDefault} with scripted approval answers and deterministic
 * context ids (`ctx-1`, `ctx-2`, …).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerTest = (
  answers: ReadonlyArray<ApprovalLayers.ScriptedAnswer> = []
): Layer.Layer<
  ToolRuntime.ToolRuntime | ToolRegistry | Approval | ApprovalLayers.ScriptedApprovals | IdGenerator.IdGenerator
> =>
  runtimeOver(
    Layer.mergeAll(InMemoryToolRegistry.layer, ApprovalLayers.layerScripted(answers), IdGenerator.layerCounter())
  )
