/**
 * Code Mode (spec §18): the reserved `run_code` transport whose program calls the other tools
 * through a generated SDK, each call going through the whole pipeline; what a prompt assembly
 * gets per agent (wire schemas, known names, the `tools:code-only` and `tools:sdk` sections);
 * the checks that make a misconfigured Code Mode fail loudly.
 *
 * The registry that holds the transport is `InMemoryToolRegistry.layerCodeMode` (in
 * `effect-tool-runtime/layers`); the program runs in the mounted `CodeRuntime`, looked up where
 * it is used (a native deployment needs none).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { CodeRuntime } from "./CodeRuntime.js"
import * as CodeSdk from "./CodeSdk.js"
import type { ContextSource } from "./Content.js"
import type { AgentId } from "./Execution.js"
import * as Json from "./Json.js"
import * as codeBridge from "./internal/codeMode/bridge.js"
import * as codeRun from "./internal/codeMode/codeRun.js"
import * as internal from "./internal/codeMode/modes.js"
import { renderOutput } from "./internal/codeMode/render.js"
import type { JsonValue } from "./Json.js"
import type * as Presentation from "./Presentation.js"
import * as Tool from "./Tool.js"
import { RUN_CODE_NAME, ToolRegistry } from "./ToolRegistry.js"
import type { RegistryView, ToolSchema } from "./ToolRegistry.js"

export {
  /**
   * A Code Mode configuration or use that cannot work: a non-native mode without a code runtime
   * (`dsh-tools: mode "<mode>" requires a code runtime — …`), a runtime language without an SDK
   * renderer or `run_code` flavor, an invalid `maxParallelSubCalls`.
   *
   * @since 0.1.0
   * @category errors
   */
  CodeModeError
} from "./internal/codeMode/modes.js"

/**
 * The default cap on a program's parallel-safe sub-calls in flight at once.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_MAX_PARALLEL_SUB_CALLS: number = internal.DEFAULT_MAX_PARALLEL_SUB_CALLS

/**
 * The message of an invalid `maxParallelSubCalls`.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_PARALLEL_SUB_CALLS_MESSAGE: string = internal.MAX_PARALLEL_SUB_CALLS_MESSAGE

/**
 * True for a valid `maxParallelSubCalls`: a positive integer.
 *
 * @since 0.1.0
 * @category guards
 */
export const isValidMaxParallelSubCalls: (value: unknown) => value is number = internal.isValidMaxParallelSubCalls

/**
 * The `tools:code-only` rule text.
 *
 * @since 0.1.0
 * @category constants
 */
export const CODE_ONLY_TEXT: string = internal.CODE_ONLY_TEXT

/**
 * The source of the deferred message that carries an image-bearing sub-call result to the
 * conversation: `{ kind: "plugin", plugin: "tools-code-mode" }`.
 *
 * @since 0.1.0
 * @category constants
 */
export const IMAGE_CONTEXT_SOURCE: ContextSource = codeRun.IMAGE_SOURCE

/**
 * @since 0.1.0
 * @category models
 */
export interface TransportOptions {
  /** Parallel-safe sub-calls of one program in flight at once: a positive integer, default `10`. */
  readonly maxParallelSubCalls?: number | undefined
}

/**
 * The `run_code` arguments: `description` (a short label for the UI), then `code` (the body of
 * an async function in the runtime's language). Extra keys are ignored.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunCodeArgs {
  readonly description: string
  readonly code: string
}

/**
 * The canonical `run_code` value: the printed lines, and the returned value (absent when the
 * program returned `undefined`).
 *
 * @since 0.1.0
 * @category models
 */
export interface RunCodeOutput {
  readonly logs: ReadonlyArray<string>
  readonly result?: JsonValue
}

const readMaxParallel = (options: TransportOptions | undefined): number => {
  let value: unknown
  try {
    value = options?.maxParallelSubCalls
  } catch {
    throw new internal.CodeModeError({ message: internal.MAX_PARALLEL_SUB_CALLS_MESSAGE })
  }
  if (value === undefined) return internal.DEFAULT_MAX_PARALLEL_SUB_CALLS
  if (!internal.isValidMaxParallelSubCalls(value)) {
    throw new internal.CodeModeError({ message: internal.MAX_PARALLEL_SUB_CALLS_MESSAGE })
  }
  return value
}

/**
 * Builds the `run_code` transport. A registry holds it outside every layer and appends it to
 * every view whose mode is not `native`; use `InMemoryToolRegistry.layerCodeMode` rather than
 * building one by hand.
 *
 * **Details**
 *
 * - Arguments: `description` then `code`, both required strings, in an open object; invalid
 *   arguments are `INVALID_ARGS`. An empty `description` (after trimming) fails the call.
 * - The model-facing description and the `code` parameter's text follow the mounted runtime's
 *   language (TypeScript when none is mounted).
 * - The value is `{ logs, result? }`, rendered as one text block: the printed lines, then the
 *   returned value (a string as is, anything else as indented JSON).
 * - Every binding call of the program is a sub-call through the whole pipeline, on the run's own
 *   ordered lane: starts in call order, parallel-safe sub-calls overlap up to
 *   `maxParallelSubCalls`, everything else one at a time, results committed in call order.
 * - A program failure is `CODE_RUN_FAILED` with the program's printed output appended.
 *
 * Throws `CodeModeError` (`maxParallelSubCalls must be a positive integer`) for an invalid cap.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeTransport = (options?: TransportOptions): Tool.Any => {
  const bridge: codeBridge.BridgeOptions = { maxParallelSubCalls: readMaxParallel(options) }
  const transport = Tool.defineTool({
    name: RUN_CODE_NAME,
    description: internal.TYPESCRIPT_FLAVOR.description,
    parameters: {
      description: { type: "string", required: true, description: internal.DESCRIPTION_PARAMETER_TEXT },
      code: { type: "string", required: true, description: internal.TYPESCRIPT_FLAVOR.codeDescription }
    },
    output: {
      schema: {
        type: "object",
        additionalProperties: false,
        properties: {
          logs: { type: "array", items: { type: "string" }, required: true },
          result: { type: "json" }
        }
      },
      render: (_args, value) => {
        const output = value as RunCodeOutput
        const hasResult = Object.prototype.hasOwnProperty.call(output, "result")
        return [{ type: "text", text: renderOutput(output.logs, hasResult, output.result) }]
      }
    },
    presentCall: (args): Presentation.CallView => ({
      card: "generic",
      title: args.description,
      kind: "execute",
      rawInput: args.code
    }),
    execute: (args, ctx) => codeBridge.runProgram(args, ctx, bridge),
    replay: "safe"
  })
  return internal.markTransport(transport) as unknown as Tool.Any
}

/**
 * What one prompt assembly of an agent sends as tools: the wire `schemas` (in view order) and
 * the names a prompt's tool ordering may mention (`knownNames`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Assembly {
  readonly schemas: ReadonlyArray<ToolSchema>
  readonly knownNames: ReadonlyArray<string>
}

/**
 * A prompt section contributed by Code Mode: `tools:code-only` (order 99, before per-tool
 * guidance) or `tools:sdk` (order 150).
 *
 * @since 0.1.0
 * @category models
 */
export interface PromptSection {
  readonly name: "tools:code-only" | "tools:sdk"
  readonly order: number
  readonly text: string
}

const requireMounted = (view: RegistryView) =>
  Effect.flatMap(Effect.serviceOption(CodeRuntime), (mounted) => {
    const required = internal.requireRuntime(view.mode, Option.getOrUndefined(mounted))
    if (!required.ok) return Effect.fail(required.error)
    if (view.get(RUN_CODE_NAME) === undefined) {
      return Effect.fail(new internal.CodeModeError({ message: internal.missingTransportMessage(view.mode) }))
    }
    return Effect.succeed(required.language)
  })

/**
 * The wire contribution for `agent` (the global view without one), by its effective mode:
 * `native` — every visible tool, and every known name (restricted ones included); `code` — only
 * `run_code`, and only its name; `both` — every visible tool with `run_code` last, and the known
 * names plus `run_code`. A non-native mode first requires a mounted code runtime whose language
 * has an SDK renderer, else fails with `CodeModeError`; it never falls back to native.
 *
 * @since 0.1.0
 * @category constructors
 */
export const assembly: (agent?: AgentId) => Effect.Effect<Assembly, internal.CodeModeError, ToolRegistry> = Effect.fn(
  "CodeMode.assembly"
)(function*(agent?: AgentId) {
  const registry = yield* ToolRegistry
  const view = registry.unsafeView(agent)
  if (view.mode !== "native") yield* requireMounted(view)
  const schemas = yield* registry.schemas(agent)
  switch (view.mode) {
    case "native":
      return { schemas, knownNames: view.knownNames }
    case "code":
      return { schemas: schemas.filter((schema) => schema.name === RUN_CODE_NAME), knownNames: [RUN_CODE_NAME] }
    case "both":
      return { schemas, knownNames: [...view.knownNames, RUN_CODE_NAME] }
  }
})

/**
 * The Code Mode prompt sections for `agent`, empty ones dropped: under `code` the
 * `tools:code-only` rule and the SDK; under `both` the SDK only; under `native` none. The SDK is
 * generated afresh from the agent's visible tools (without `run_code`) in the mounted runtime's
 * language; a non-native mode without a usable runtime fails with `CodeModeError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const promptSections: (
  agent?: AgentId
) => Effect.Effect<ReadonlyArray<PromptSection>, internal.CodeModeError, ToolRegistry> = Effect.fn(
  "CodeMode.promptSections"
)(function*(agent?: AgentId) {
  const registry = yield* ToolRegistry
  const view = registry.unsafeView(agent)
  if (view.mode === "native") return []
  const language = yield* requireMounted(view)
  const tools: Array<CodeSdk.SdkTool> = []
  for (const tool of view.tools) {
    const definition = tool.definition
    if (definition.name === RUN_CODE_NAME) continue
    tools.push(sdkTool(definition))
  }
  tools.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  const sdk: PromptSection = {
    name: internal.SDK_SECTION,
    order: internal.SDK_ORDER,
    text: CodeSdk.render(language, tools)
  }
  if (view.mode === "both") return sdk.text === "" ? [] : [sdk]
  const rule: PromptSection = {
    name: internal.CODE_ONLY_SECTION,
    order: internal.CODE_ONLY_ORDER,
    text: internal.CODE_ONLY_TEXT
  }
  return sdk.text === "" ? [rule] : [rule, sdk]
})

/** SDK-1: a registered definition as the SDK sees it (detached copies of its schemas). */
const sdkTool = (definition: Tool.Any): CodeSdk.SdkTool => {
  const parameters = Json.snapshot(definition.parameters)
  const output = Json.snapshot(definition.output.schema)
  return {
    name: definition.name,
    description: definition.description,
    parameters: parameters._tag === "Lossless" ? parameters.value : {},
    output: output._tag === "Lossless" ? output.value : {}
  }
}
