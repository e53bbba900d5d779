/**
 * Assembling a preset from its read options: the services, the approval service over them, and
 * the runtime with its policies and tools; and the audited approval service `layerApproval`
 * wires in.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ApprovalGrants } from "../../../src/ApprovalGrants.js"
import * as ApprovalService from "../../../src/ApprovalService.js"
import * as IdGenerator from "../../../src/IdGenerator.js"
import type * as Tool from "../../../src/Tool.js"
import { detailOf } from "../../../src/ToolError.js"
import { ToolRegistry } from "../../../src/ToolRegistry.js"
import * as ToolRuntime from "../../../src/ToolRuntime.js"
import * as ApprovalLayers from "../../ApprovalLayers.js"
import * as InMemoryToolRegistry from "../../InMemoryToolRegistry.js"
import * as TimeoutPolicy from "../../TimeoutPolicy.js"
import * as ToolCallLogNoop from "../../ToolCallLogNoop.js"
import { type APPROVAL_KEYS, isLayer, type Read } from "./options.js"

/**
 * The runtime from checked options: the registry, ids, log and code runtime, the approval service
 * over them, then the runtime, the timeout policy and the tools' registration over all of it.
 *
 * @internal
 */
export const assemble = (read: Read): Layer.Layer<never, unknown, unknown> => {
  const base = Layer.mergeAll(
    read.codeMode === undefined ? InMemoryToolRegistry.layer : InMemoryToolRegistry.layerCodeMode(read.codeMode),
    read.ids ?? IdGenerator.layerRandom,
    read.log ?? ToolCallLogNoop.layer,
    read.codeRuntime ?? Layer.empty
  )
  const services = read.approval === undefined ? base : read.approval.pipe(Layer.provideMerge(base))
  const policies = Layer.mergeAll(
    ToolRuntime.layer,
    read.timeout === false ? Layer.empty : TimeoutPolicy.layerWith(read.timeout),
    read.tools.length === 0 ? Layer.empty : registering(read.tools)
  )
  return policies.pipe(Layer.provideMerge(services))
}

const registering = (tools: ReadonlyArray<Tool.Any>): Layer.Layer<never, unknown, unknown> =>
  Layer.scopedDiscard(
    Effect.flatMap(ToolRegistry, (registry) => Effect.forEach(tools, (tool) => registry.register(tool), { discard: true }))
  )

/**
 * The approval service `layerApproval` wires in, from its options (read once); a string is the
 * message of the defect.
 *
 * @internal
 */
export const approvalLayer = (
  label: string,
  values: Readonly<Record<(typeof APPROVAL_KEYS)[number], unknown>>
): Layer.Layer<never, unknown, unknown> | string => {
  const { approvalIds, grants, interactive, policy } = values
  if (policy !== undefined && policy !== "ask" && policy !== "never") {
    return `${label} option "policy" must be "ask" or "never"`
  }
  if (grants !== undefined && !isLayer(grants)) return `${label} option "grants" must be a Layer`
  if (interactive !== undefined && typeof interactive !== "boolean") {
    return `${label} option "interactive" must be a boolean`
  }
  let ids: IdGenerator.Service | undefined
  try {
    const next = typeof approvalIds === "object" && approvalIds !== null
      ? (approvalIds as { readonly next?: unknown }).next
      : undefined
    if (approvalIds !== undefined && typeof next !== "function") {
      return `${label} option "approvalIds" must be an IdGenerator service`
    }
    ids = approvalIds as IdGenerator.Service | undefined
  } catch (thrown) {
    return `${label} could not read option "approvalIds": ${detailOf(thrown).message}`
  }
  const serviceOptions: ApprovalService.Options = { policy, ids }
  const service = interactive === true
    ? ApprovalLayers.layerInteractiveService(serviceOptions)
    : ApprovalService.layer(serviceOptions)
  return (grants === undefined
    ? service
    : service.pipe(Layer.provideMerge(grants as Layer.Layer<ApprovalGrants, unknown, unknown>))) as Layer.Layer<
      never,
      unknown,
      unknown
    >
}

