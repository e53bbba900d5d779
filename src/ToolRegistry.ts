/**
 * The tool registry (spec §6): scoped registration of tools, restrictions, guards, hooks and
 * presentation modes across the global layer and agent scope chains; lookup, schema
 * projection and execution-mode classification.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { AgentId, ExecutionToken } from "./Execution.js"
import type { JsonSchema, JsonSchemaError, Validator } from "./JsonSchema.js"
import type {
  AroundHook,
  ExecutionMode,
  Guard,
  PostExecuteHook,
  PreExecuteHook,
  ResultObserver
} from "./Policy.js"
import type * as Tool from "./Tool.js"

/**
 * The reserved Code Mode transport name (MODE-5).
 *
 * @since 0.1.0
 * @category constants
 */
export const RUN_CODE_NAME = "run_code"

/**
 * How an agent's tools are presented to the model (TYPES-11, MODE-1).
 *
 * @since 0.1.0
 * @category models
 */
export type PresentationMode = "native" | "code" | "both"

/**
 * A visibility filter for inherited tools (TYPES-9, REG-4/5).
 *
 * @since 0.1.0
 * @category models
 */
export interface Restriction {
  readonly allow?: ReadonlyArray<string> | undefined
  readonly deny?: ReadonlyArray<string> | undefined
}

/**
 * The model-facing projection of one tool: exactly these keys (TYPES-1, D-1).
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolSchema {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
  readonly deferLoading?: true
}

/**
 * A definition as stored: the registry's frozen snapshot of the definition, the services its
 * body needs (captured at registration) and its output validator (compiled once per definition
 * object and checked output schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface RegisteredTool {
  /**
   * Every field of the registered definition, read once at registration (JSON fields as
   * detached frozen copies). Its callbacks call the author's functions with the author's
   * definition (for `output.*`, the author's `output` object) as `this`; the author's object is
   * never read again.
   */
  readonly definition: Tool.Any
  readonly context: Context.Context<never>
  readonly validateOutput: Validator
}

/**
 * An immutable snapshot of what one agent (or the global view) sees, rebuilt only when the
 * registry changes. Hook and guard lists are already scope-filtered (SCOPE-5) and ordered.
 *
 * @since 0.1.0
 * @category models
 */
export interface RegistryView {
  readonly agent: AgentId | undefined
  /** The agent, then its declared ancestors nearest first; empty for the global view. */
  readonly lineage: ReadonlyArray<AgentId>
  /** Effective presentation mode (SCOPE-4). */
  readonly mode: PresentationMode
  /** Visible tools in view order (SCOPE-2/3), `run_code` last when the mode is not native. */
  readonly tools: ReadonlyArray<RegisteredTool>
  /**
   * MODE-2: every name the agent knows — the inherited names before restrictions (global, then
   * ancestors), then its own — without `run_code`.
   */
  readonly knownNames: ReadonlyArray<string>
  /** REG-8: the visible definition, presentation-agnostic. O(1). */
  readonly get: (name: string) => RegisteredTool | undefined
  /**
   * BODY-3 / CREATE-6 resolution: like `get`, but under mode `code` a call without a parent
   * may only resolve `run_code`.
   */
  readonly resolve: (name: string, hasParent: boolean) => RegisteredTool | undefined
  /** GUARD-2 order: global first, then the chain farthest-first, each in registration order. */
  readonly guards: ReadonlyArray<Guard>
  /** HOST-1 order (registration order, prepends first), scope-filtered. */
  readonly preExecute: ReadonlyArray<PreExecuteHook<unknown>>
  readonly aroundExecute: ReadonlyArray<AroundHook<unknown>>
  readonly postExecute: ReadonlyArray<PostExecuteHook<unknown>>
  readonly observers: ReadonlyArray<ResultObserver<unknown>>
}

/**
 * A registry change notification (OBS-2). Guard and hook changes are not announced.
 *
 * @since 0.1.0
 * @category models
 */
export type RegistryChange =
  | { readonly _tag: "ToolsChanged" }
  | { readonly _tag: "RestrictionsChanged" }
  | { readonly _tag: "ModeChanged" }
  | { readonly _tag: "AgentsChanged" }

/**
 * @since 0.1.0
 * @category models
 */
export interface TargetOptions {
  /** The agent whose scope layer receives the contribution; absent = the global layer. */
  readonly agent?: AgentId | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface HookOptions extends TargetOptions {
  /** Put the hook in front of those already registered (HOST-1). */
  readonly prepend?: boolean | undefined
}

/**
 * What `executionMode` classifies (SCHED-2).
 *
 * @since 0.1.0
 * @category models
 */
export interface ClassifyInput {
  readonly name: string
  readonly arguments: unknown
  readonly agent?: AgentId | undefined
  readonly parent?: ExecutionToken | undefined
}

/**
 * A registration was refused (REG-1, D-6, MODE-5): a field of the wrong kind, a getter or proxy
 * trap that throws while the definition is read, a bad `timeoutMs` or `parameters`, the reserved
 * name, a duplicate. The message is the spec's text where the spec has one.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolRegistrationError extends Schema.TaggedError<ToolRegistrationError>(
  "effect-tool-runtime/ToolRegistrationError"
)("ToolRegistrationError", { message: Schema.String }) {}

/**
 * A restriction was refused (REG-4).
 *
 * @since 0.1.0
 * @category errors
 */
export class RestrictionError extends Schema.TaggedError<RestrictionError>("effect-tool-runtime/RestrictionError")(
  "RestrictionError",
  { message: Schema.String }
) {}

/**
 * A presentation declaration was refused (REG-7).
 *
 * @since 0.1.0
 * @category errors
 */
export class PresentationError extends Schema.TaggedError<PresentationError>("effect-tool-runtime/PresentationError")(
  "PresentationError",
  { message: Schema.String }
) {}

/**
 * An agent declaration was refused (duplicate agent, unknown parent).
 *
 * @since 0.1.0
 * @category errors
 */
export class AgentDeclarationError extends Schema.TaggedError<AgentDeclarationError>(
  "effect-tool-runtime/AgentDeclarationError"
)("AgentDeclarationError", { message: Schema.String }) {}

/**
 * The registry service. Every contribution is scoped: closing the scope removes exactly that
 * contribution (HOST-5).
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Declares an agent and its parent (e.g. a preset or an orchestrator). */
  readonly declareAgent: (
    agent: AgentId,
    options?: { readonly parent?: AgentId | undefined }
  ) => Effect.Effect<void, AgentDeclarationError, Scope.Scope>
  /** REG-1: registers a tool in the global layer or one agent's layer. */
  readonly register: <R>(
    definition: Tool.ToolDefinition<R>,
    options?: TargetOptions
  ) => Effect.Effect<void, ToolRegistrationError | JsonSchemaError, Scope.Scope | R>
  /** REG-4: restricts the tools an agent inherits. */
  readonly restrict: (
    restriction: Restriction,
    options: TargetOptions
  ) => Effect.Effect<void, RestrictionError, Scope.Scope>
  /** REG-6: adds a monotonic guard. */
  readonly guard: (guard: Guard, options?: TargetOptions) => Effect.Effect<void, never, Scope.Scope>
  /** REG-7: declares an agent's presentation mode. */
  readonly presentAs: (
    mode: PresentationMode,
    options: TargetOptions
  ) => Effect.Effect<void, PresentationError, Scope.Scope>
  readonly onPreExecute: <E, R>(
    hook: PreExecuteHook<E, R>,
    options?: HookOptions
  ) => Effect.Effect<void, never, Scope.Scope | R>
  readonly onExecute: <E, R>(
    hook: AroundHook<E, R>,
    options?: HookOptions
  ) => Effect.Effect<void, never, Scope.Scope | R>
  readonly onPostExecute: <E, R>(
    hook: PostExecuteHook<E, R>,
    options?: HookOptions
  ) => Effect.Effect<void, never, Scope.Scope | R>
  readonly onResult: <E, R>(
    observer: ResultObserver<E, R>,
    options?: HookOptions
  ) => Effect.Effect<void, never, Scope.Scope | R>
  /** The current view of `agent` (cached; rebuilt only after a change). */
  readonly view: (agent?: AgentId) => Effect.Effect<RegistryView>
  /** Synchronous {@link view} for hot paths and pure callers. */
  readonly unsafeView: (agent?: AgentId) => RegistryView
  /** REG-8: the visible definition, as the registry's frozen snapshot. */
  readonly get: (name: string, agent?: AgentId) => Effect.Effect<Option.Option<Tool.Any>>
  /** REG-9 / D-1: model-facing projections in view order, deep-detached copies. */
  readonly schemas: (agent?: AgentId) => Effect.Effect<ReadonlyArray<ToolSchema>>
  /** SCHED-2 with D-12. Never fails: anything doubtful is `exclusive`. */
  readonly executionMode: (input: ClassifyInput) => Effect.Effect<ExecutionMode>
  /** OBS-2: tool, restriction, mode and agent changes (not guards or hooks). */
  readonly changes: Stream.Stream<RegistryChange>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ToolRegistry extends Context.Tag("effect-tool-runtime/ToolRegistry")<ToolRegistry, Service>() {}

/**
 * One tool in the OpenAI Chat Completions `tools` array.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenAiTool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: JsonSchema
  }
}

/**
 * One tool in the Anthropic Messages `tools` array.
 *
 * @since 0.1.0
 * @category models
 */
export interface AnthropicTool {
  readonly name: string
  readonly description: string
  readonly input_schema: JsonSchema
  readonly defer_loading?: true
}

/**
 * Projects model-facing schemas (from `schemas`) to OpenAI Chat Completions function tools, in
 * the same order. Chat Completions has no deferred loading, so `deferLoading` is dropped (the
 * tool is sent eagerly). The `parameters` objects are shared with the input, not copied.
 *
 * @since 0.1.0
 * @category combinators
 */
export const toOpenAiTools = (schemas: ReadonlyArray<ToolSchema>): Array<OpenAiTool> =>
  schemas.map((schema) => ({
    type: "function",
    function: { name: schema.name, description: schema.description, parameters: schema.parameters }
  }))

/**
 * Projects model-facing schemas (from `schemas`) to Anthropic Messages tools, in the same order;
 * `deferLoading: true` becomes `defer_loading: true`. The `parameters` objects are shared with the
 * input, not copied.
 *
 * @since 0.1.0
 * @category combinators
 */
export const toAnthropicTools = (schemas: ReadonlyArray<ToolSchema>): Array<AnthropicTool> =>
  schemas.map((schema) =>
    schema.deferLoading === true
      ? { name: schema.name, description: schema.description, input_schema: schema.parameters, defer_loading: true }
      : { name: schema.name, description: schema.description, input_schema: schema.parameters }
  )
