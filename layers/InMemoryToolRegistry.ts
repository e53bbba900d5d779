/**
 * The in-memory {@link ToolRegistry} (spec §6): a global layer plus one layer per agent, agent
 * scope chains, live restrictions, guards, scope-filtered hooks, per-agent presentation modes,
 * and immutable views cached until the next change.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as CodeMode from "../src/CodeMode.js"
import * as CodeRuntime from "../src/CodeRuntime.js"
import type { AgentId } from "../src/Execution.js"
import * as Json from "../src/Json.js"
import type { JsonSchema } from "../src/JsonSchema.js"
import { JsonSchemaError } from "../src/JsonSchema.js"
import type {
  AroundHook,
  ExecutionMode,
  Guard,
  PostExecuteHook,
  PreExecuteHook,
  ResultObserver
} from "../src/Policy.js"
import type * as Tool from "../src/Tool.js"
import {
  AgentDeclarationError,
  PresentationError,
  RestrictionError,
  RUN_CODE_NAME,
  ToolRegistrationError,
  ToolRegistry
} from "../src/ToolRegistry.js"
import type {
  ClassifyInput,
  HookOptions,
  PresentationMode,
  RegisteredTool,
  RegistryChange,
  RegistryView,
  Restriction,
  Service,
  TargetOptions,
  ToolSchema
} from "../src/ToolRegistry.js"
import * as checks from "./internal/registry/checks.js"
import * as state_ from "./internal/registry/state.js"
import type { AgentDeclaration, Filter, GuardEntry, HookEntry, ModeEntry, State } from "./internal/registry/state.js"
import * as codeMode from "../src/internal/codeMode/modes.js"
import { withCaptured } from "../src/internal/base/context.js"
import { declareDeadline, deadlinePlanOf } from "../src/internal/pipeline/deadline.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface MakeOptions {
  /** The deployment presentation mode (TYPES-11); default `native`. */
  readonly mode?: PresentationMode | undefined
  /**
   * The Code Mode transport (`run_code`, MODE-5). It lives outside every layer and is appended
   * last to every view whose effective mode is not `native`. Without it, no view holds
   * `run_code`.
   */
  readonly transport?: Tool.Any | undefined
}

const CHANGE_BUFFER = 1024

const toolsChanged: RegistryChange = { _tag: "ToolsChanged" }
const restrictionsChanged: RegistryChange = { _tag: "RestrictionsChanged" }
const modeChanged: RegistryChange = { _tag: "ModeChanged" }
const agentsChanged: RegistryChange = { _tag: "AgentsChanged" }

const parallel: Effect.Effect<ExecutionMode> = Effect.succeed("parallel")
const exclusive: Effect.Effect<ExecutionMode> = Effect.succeed("exclusive")

/**
 * SCHED-2 with D-12, total: unknown, invisible, collapsed or classifier-less → `exclusive`;
 * arguments that cannot be snapshotted → `exclusive`; the classifier sees the frozen snapshot and
 * only an exact `true` is `parallel`; a throw is `exclusive`.
 */
const classify = (viewOf: (agent?: AgentId) => RegistryView, input: ClassifyInput): ExecutionMode => {
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
 */
const projectSchema = (name: string, definition: Tool.Any): ToolSchema => {
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

/** MODE-7: Code Mode's transport, in the mounted runtime's language (a defect for an unknown one). */
const projectTransport = (runtime: CodeRuntime.Service | undefined): ToolSchema => {
  const flavor = codeMode.flavorFor(runtime)
  return { name: RUN_CODE_NAME, description: flavor.description, parameters: codeMode.parametersFor(flavor) }
}

/**
 * Builds an empty registry.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: MakeOptions): Effect.Effect<Service> =>
  Effect.map(PubSub.sliding<RegistryChange>(CHANGE_BUFFER), (pubsub) => {
    const transportDefinition = options?.transport
    let transport: RegisteredTool | undefined
    const state: State = state_.makeState(options?.mode ?? "native", () => {
      if (transportDefinition === undefined) return undefined
      if (transport === undefined) {
        transport = {
          definition: transportDefinition,
          context: Context.empty(),
          validateOutput: checks.lazyValidatorFor(transportDefinition)
        }
      }
      return transport
    })

    const publish = (change: RegistryChange): Effect.Effect<void> => Effect.asVoid(PubSub.publish(pubsub, change))

    const unsafeView = (agent?: AgentId): RegistryView => state_.viewData(state, agent).view

    const declareAgent = (
      agent: AgentId,
      options?: { readonly parent?: AgentId | undefined }
    ): Effect.Effect<void, AgentDeclarationError, Scope.Scope> => {
      const parent = options?.parent
      return Effect.acquireRelease(
        Effect.suspend(() => {
          if (state.agents.has(agent)) {
            return Effect.fail(new AgentDeclarationError({ message: `agent "${agent}" is already declared` }))
          }
          if (parent !== undefined) {
            if (!state.agents.has(parent)) {
              return Effect.fail(
                new AgentDeclarationError({ message: `agent "${agent}" cannot declare undeclared parent "${parent}"` })
              )
            }
            if (parent === agent || state_.chainOf(state.agents, parent).includes(agent)) {
              return Effect.fail(
                new AgentDeclarationError({
                  message: `agent "${agent}" cannot declare parent "${parent}": the agent would become its own ancestor`
                })
              )
            }
          }
          const declaration: AgentDeclaration = { parent }
          state.agents.set(agent, declaration)
          state_.invalidate(state)
          return Effect.as(publish(agentsChanged), declaration)
        }),
        (declaration) =>
          Effect.suspend(() => {
            if (state.agents.get(agent) !== declaration) return Effect.void
            state.agents.delete(agent)
            state_.invalidate(state)
            return publish(agentsChanged)
          })
      )
    }

    /**
     * The services a registration needs, captured once. The registration's own `Scope` (and the
     * layer-building memo map) are left out: per-call resources belong in the body's own
     * `Effect.scoped`, not in the registration's lifetime.
     */
    const captureContext = <R>() =>
      Effect.map(Effect.context<R>(), (context) => Context.omit(Scope.Scope, Layer.CurrentMemoMap)(context))

    const register = <R>(
      definition: Tool.ToolDefinition<R>,
      options?: TargetOptions
    ): Effect.Effect<void, ToolRegistrationError | JsonSchemaError, Scope.Scope | R> => {
      const agent = options?.agent
      return Effect.flatMap(captureContext<R>(), (context) =>
        Effect.acquireRelease(
          Effect.suspend(() => {
            const checked = checks.checkDefinition(definition)
            if (checks.isProblem(checked)) {
              return Effect.fail(
                checked._tag === "Schema"
                  ? new JsonSchemaError({ violations: checked.violations })
                  : new ToolRegistrationError({ message: checked.message })
              )
            }
            const existing = state_.layerFor(state, agent)
            if (existing !== undefined && existing.tools.has(checked.name)) {
              return Effect.fail(new ToolRegistrationError({ message: checks.duplicateMessage(checked.name, agent) }))
            }
            const registered: RegisteredTool = {
              definition: checked.snapshot,
              context: context as Context.Context<never>,
              validateOutput: checks.validatorFor(checked)
            }
            state_.ensureLayer(state, agent).tools.set(checked.name, registered)
            state_.invalidate(state)
            return Effect.as(publish(toolsChanged), [checked.name, registered] as const)
          }),
          ([name, registered]) =>
            Effect.suspend(() => {
              const layer = state_.layerFor(state, agent)
              if (layer === undefined || layer.tools.get(name) !== registered) return Effect.void
              layer.tools.delete(name)
              state_.reclaim(state, agent)
              state_.invalidate(state)
              return publish(toolsChanged)
            })
        ))
    }

    const restrict = (
      restriction: Restriction,
      options: TargetOptions
    ): Effect.Effect<void, RestrictionError, Scope.Scope> => {
      const agent = options?.agent
      return Effect.acquireRelease(
        Effect.suspend(() => {
          const fail = (message: string) => Effect.fail(new RestrictionError({ message }))
          if (agent === undefined) return fail(checks.restrictMessages.unscoped)
          const raw = checks.readRestriction(restriction)
          if (raw.allow === undefined && raw.deny === undefined) return fail(checks.restrictMessages.noop)
          const allow = checks.copyNames(raw.allow)
          if (allow === "invalid") return fail(checks.restrictMessages.notNames("allow"))
          const deny = checks.copyNames(raw.deny)
          if (deny === "invalid") return fail(checks.restrictMessages.notNames("deny"))
          if (allow?.has(RUN_CODE_NAME) || deny?.has(RUN_CODE_NAME)) return fail(checks.restrictMessages.reserved)
          const known = state_.inheritedNames(state, agent)
          const unknown: Array<string> = []
          const seen = new Set<string>()
          for (const names of [allow, deny]) {
            if (names === undefined) continue
            for (const name of names) {
              if (!known.has(name) && !seen.has(name)) {
                seen.add(name)
                unknown.push(name)
              }
            }
          }
          if (unknown.length > 0) return fail(checks.restrictMessages.unknown(unknown, known))
          const filter: Filter = { allow, deny }
          state_.ensureLayer(state, agent).filters.push(filter)
          state_.invalidate(state)
          return Effect.as(publish(restrictionsChanged), filter)
        }),
        (filter) =>
          Effect.suspend(() => {
            const layer = state_.layerFor(state, agent)
            const index = layer === undefined ? -1 : layer.filters.indexOf(filter)
            if (layer === undefined || index < 0) return Effect.void
            layer.filters.splice(index, 1)
            state_.reclaim(state, agent)
            state_.invalidate(state)
            return publish(restrictionsChanged)
          })
      )
    }

    const guard = (fn: Guard, options?: TargetOptions): Effect.Effect<void, never, Scope.Scope> => {
      const agent = options?.agent
      return Effect.acquireRelease(
        Effect.sync(() => {
          const entry: GuardEntry = { guard: fn }
          state_.ensureLayer(state, agent).guards.push(entry)
          state_.invalidate(state)
          return entry
        }),
        (entry) =>
          Effect.sync(() => {
            const layer = state_.layerFor(state, agent)
            const index = layer === undefined ? -1 : layer.guards.indexOf(entry)
            if (layer === undefined || index < 0) return
            layer.guards.splice(index, 1)
            state_.reclaim(state, agent)
            state_.invalidate(state)
          })
      )
    }

    const presentAs = (
      mode: PresentationMode,
      options: TargetOptions
    ): Effect.Effect<void, PresentationError, Scope.Scope> => {
      const agent = options?.agent
      return Effect.acquireRelease(
        Effect.suspend(() => {
          const fail = (message: string) => Effect.fail(new PresentationError({ message }))
          if (agent === undefined) return fail(checks.presentMessages.unscoped)
          if (!checks.isPresentationMode(mode)) return fail(checks.presentMessages.invalid(checks.displayName(mode)))
          const existing = state_.layerFor(state, agent)?.mode
          if (existing !== undefined) return fail(checks.presentMessages.conflict(mode, existing.mode))
          const entry: ModeEntry = { mode }
          state_.ensureLayer(state, agent).mode = entry
          state_.invalidate(state)
          return Effect.as(publish(modeChanged), entry)
        }),
        (entry) =>
          Effect.suspend(() => {
            const layer = state_.layerFor(state, agent)
            if (layer === undefined || layer.mode !== entry) return Effect.void
            layer.mode = undefined
            state_.reclaim(state, agent)
            state_.invalidate(state)
            return publish(modeChanged)
          })
      )
    }

    const addHook = <H>(
      list: Array<HookEntry<H>>,
      hook: H,
      options: HookOptions | undefined
    ): Effect.Effect<void, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const entry: HookEntry<H> = { owner: options?.agent, hook }
          if (options?.prepend === true) list.unshift(entry)
          else list.push(entry)
          state_.invalidate(state)
          return entry
        }),
        (entry) =>
          Effect.sync(() => {
            const index = list.indexOf(entry)
            if (index < 0) return
            list.splice(index, 1)
            state_.invalidate(state)
          })
      )

    const onPreExecute = <E, R>(
      hook: PreExecuteHook<E, R>,
      options?: HookOptions
    ): Effect.Effect<void, never, Scope.Scope | R> =>
      Effect.flatMap(captureContext<R>(), (context) => {
        const wrapped: PreExecuteHook<unknown> = (exec, next) =>
          withCaptured(context, (restore) => hook(exec, restore(next)))
        return addHook(state.hooks.preExecute, wrapped, options)
      })

    const onExecute = <E, R>(
      hook: AroundHook<E, R>,
      options?: HookOptions
    ): Effect.Effect<void, never, Scope.Scope | R> =>
      Effect.flatMap(captureContext<R>(), (context) => {
        const wrapped: AroundHook<unknown> = (exec, next) =>
          withCaptured(context, (restore) => hook(exec, restore(next)))
        const plan = deadlinePlanOf(hook)
        return addHook(state.hooks.aroundExecute, plan === undefined ? wrapped : declareDeadline(wrapped, plan), options)
      })

    const onPostExecute = <E, R>(
      hook: PostExecuteHook<E, R>,
      options?: HookOptions
    ): Effect.Effect<void, never, Scope.Scope | R> =>
      Effect.flatMap(captureContext<R>(), (context) => {
        const wrapped: PostExecuteHook<unknown> = (exec, result, next) =>
          withCaptured(context, (restore) => hook(exec, result, restore(next)))
        return addHook(state.hooks.postExecute, wrapped, options)
      })

    const onResult = <E, R>(
      observer: ResultObserver<E, R>,
      options?: HookOptions
    ): Effect.Effect<void, never, Scope.Scope | R> =>
      Effect.flatMap(captureContext<R>(), (context) => {
        const wrapped: ResultObserver<unknown> = (exec, result) => withCaptured(context, () => observer(exec, result))
        return addHook(state.hooks.observers, wrapped, options)
      })

    const service: Service = {
      declareAgent,
      register,
      restrict,
      guard,
      presentAs,
      onPreExecute,
      onExecute,
      onPostExecute,
      onResult,
      view: (agent) => Effect.sync(() => unsafeView(agent)),
      unsafeView,
      get: (name, agent) =>
        Effect.sync(() => Option.fromNullable(state_.viewData(state, agent).view.get(name)?.definition)),
      schemas: (agent) =>
        Effect.suspend(() => {
          const { names, view } = state_.viewData(state, agent)
          const project = (runtime: Option.Option<CodeRuntime.Service>): Array<ToolSchema> => {
            const out: Array<ToolSchema> = new Array(names.length)
            for (let i = 0; i < names.length; i++) {
              const definition = view.tools[i].definition
              out[i] = codeMode.isTransport(definition)
                ? projectTransport(Option.getOrUndefined(runtime))
                : projectSchema(names[i], definition)
            }
            return out
          }
          const last = view.tools[view.tools.length - 1]
          return last !== undefined && codeMode.isTransport(last.definition)
            ? Effect.map(Effect.serviceOption(CodeRuntime.CodeRuntime), project)
            : Effect.sync(() => project(Option.none()))
        }),
      executionMode: (input) =>
        Effect.suspend(() => classify(unsafeView, input) === "parallel" ? parallel : exclusive),
      changes: Stream.fromPubSub(pubsub)
    }
    return service
  })

/**
 * An empty registry with deployment mode `native` and no Code Mode transport.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ToolRegistry> = Layer.effect(ToolRegistry, make())

/**
 * An empty registry with the given deployment mode and transport.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: MakeOptions): Layer.Layer<ToolRegistry> => Layer.effect(ToolRegistry, make(options))

/**
 * @since 0.1.0
 * @category models
 */
export interface CodeModeOptions extends CodeMode.TransportOptions {
  /** The deployment presentation mode; default `code`. Agents may present otherwise (`presentAs`). */
  readonly mode?: PresentationMode | undefined
}

/**
 * An empty registry holding Code Mode's `run_code` transport (`CodeMode.makeTransport`), with
 * deployment mode `code` unless `mode` says otherwise. Every view whose mode is not `native` gets
 * `run_code`; the program runs in the `CodeRuntime` mounted where `run_code` is called.
 *
 * An invalid option is a defect when the layer is built: a `CodeModeError`
 * (`maxParallelSubCalls must be a positive integer`), or an `IllegalArgumentException` for a
 * `mode` that is not `native`, `code` or `both`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCodeMode = (options?: CodeModeOptions): Layer.Layer<ToolRegistry> =>
  Layer.effect(
    ToolRegistry,
    Effect.suspend(() => {
      let mode: unknown, maxParallelSubCalls: unknown
      try {
        mode = options?.mode
        maxParallelSubCalls = options?.maxParallelSubCalls
      } catch (error) {
        return Effect.die(
          new Cause.IllegalArgumentException(
            `InMemoryToolRegistry.layerCodeMode could not read its options: ${checks.describeError(error)}`
          )
        )
      }
      if (mode !== undefined && !checks.isPresentationMode(mode)) {
        return Effect.die(
          new Cause.IllegalArgumentException(
            "InMemoryToolRegistry.layerCodeMode option \"mode\" must be \"native\", \"code\" or \"both\""
          )
        )
      }
      const transport = CodeMode.makeTransport({ maxParallelSubCalls: maxParallelSubCalls as number | undefined })
      return make({ mode: mode ?? "code", transport })
    })
  )

/**
 * A registry with `tools` registered globally for the lifetime of the layer (a tool pack).
 * Fails like `register` when a definition is refused.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPreloaded = (
  tools: ReadonlyArray<Tool.ToolDefinition<never>>,
  options?: MakeOptions
): Layer.Layer<ToolRegistry, ToolRegistrationError | JsonSchemaError> =>
  Layer.scoped(
    ToolRegistry,
    Effect.flatMap(make(options), (registry) =>
      Effect.as(Effect.forEach(tools, (tool) => registry.register(tool), { discard: true }), registry))
  )
