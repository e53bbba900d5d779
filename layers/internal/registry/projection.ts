/**
 * What a view tells the scheduler and the model: a call's execution mode (its definition's
 * classifier over the frozen arguments; anything doubtful is `exclusive`), and the model-facing
 * schema of a definition or of Code Mode's transport.
 *
 * @internal
 */
import type * as CodeRuntime from "../../../src/CodeRuntime.js"
import type { AgentId } from "../../../src/Execution.js"
import * as Json from "../../../src/Json.js"
import type { JsonSchema } from "../../../src/JsonSchema.js"
import type { ExecutionMode } from "../../../src/Policy.js"
import type * as Tool from "../../../src/Tool.js"
import { RUN_CODE_NAME } from "../../../src/ToolRegistry.js"
import type { ClassifyInput, RegistryView, ToolSchema } from "../../../src/ToolRegistry.js"
import * as codeMode from "../../../src/internal/codeMode/modes.js"

/**
 * SCHED-2 with D-12, total: unknown, invisible, collapsed or classifier-less → `exclusive`;
 * arguments that cannot be snapshotted → `exclusive`; the classifier sees the frozen snapshot and
 * only an exact `true` is `parallel`; a throw is `exclusive`.
 *
 * @internal
 */
export const classify = (viewOf: (agent?: AgentId) => RegistryView, input: ClassifyInput): ExecutionMode => {
  try {
    const name: unknown = input.name
    if (typeof name !== "string") return "exclusive"
    const tool = viewOf(input.agent).resolve(name, input.parent !== undefined)
    if (tool === undefined) return "exclusive"
    const definition = tool.definition
    const classifier: unknown = definition.isConcurrencySafe
    if (typeof classifier !== "function") return "exclusive"
    const snapshot = Json.snapshotFrozen(input.arguments)
    if (snapshot._tag !== "Lossless") return "exclusive"
    return (classifier as (args: Json.JsonValue) => unknown).call(definition, snapshot.value) === true
      ? "parallel"
      : "exclusive"
  } catch {
    return "exclusive"
  }
}

/**
 * REG-9 / D-1 over a registered definition: its fields are the registry's frozen snapshot taken
 * at registration, so this never throws for them; `parameters` is copied afresh for each call.
 * Only the transport (not registered, read live) can still be lossy.
 *
 * @internal
 */
export const projectSchema = (name: string, definition: Tool.Any): ToolSchema => {
  const snapshot = Json.snapshot(definition.parameters)
  if (snapshot._tag !== "Lossless") {
    throw new Error(`tool "${name}" parameters must be lossless JSON before schema projection`)
  }
  const schema = {
    name,
    description: definition.description,
    parameters: snapshot.value as JsonSchema
  }
  return definition.deferLoading === true ? { ...schema, deferLoading: true } : schema
}

/**
 * MODE-7: Code Mode's transport, in the mounted runtime's language (a defect for an unknown one).
 *
 * @internal
 */
export const projectTransport = (runtime: CodeRuntime.Service | undefined): ToolSchema => {
  const flavor = codeMode.flavorFor(runtime)
  return { name: RUN_CODE_NAME, description: flavor.description, parameters: codeMode.parametersFor(flavor) }
}
