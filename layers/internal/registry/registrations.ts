/**
 * Every scoped contribution to an in-memory registry: agent declarations, tools, restrictions,
 * guards, presentation modes and hooks. Each is added when its Effect runs and removed exactly
 * when its scope closes (a later contribution in its place is left alone); each change
 * invalidates the cached views and is published.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type { AgentId } from "../../../src/Execution.js"
import { JsonSchemaError } from "../../../src/JsonSchema.js"
import type { AroundHook, Guard, PostExecuteHook, PreExecuteHook, ResultObserver } from "../../../src/Policy.js"
import type * as Tool from "../../../src/Tool.js"
import {
  AgentDeclarationError,
  PresentationError,
  RestrictionError,
  RUN_CODE_NAME,
  ToolRegistrationError
} from "../../../src/ToolRegistry.js"
import type {
  HookOptions,
  PresentationMode,
  RegisteredTool,
  RegistryChange,
  Restriction,
  Service,
  TargetOptions
} from "../../../src/ToolRegistry.js"
import { withCaptured } from "../../../src/internal/base/context.js"
import { declareDeadline, deadlinePlanOf } from "../../../src/internal/pipeline/deadline.js"
import * as checks from "./checks.js"
import * as state_ from "./state.js"
import type { AgentDeclaration, Filter, GuardEntry, HookEntry, ModeEntry, State } from "./state.js"

const toolsChanged: RegistryChange = { _tag: "ToolsChanged" }
const restrictionsChanged: RegistryChange = { _tag: "RestrictionsChanged" }
const modeChanged: RegistryChange = { _tag: "ModeChanged" }
const agentsChanged: RegistryChange = { _tag: "AgentsChanged" }

/** @internal */
export type Registrations = Pick<
  Service,
  | "declareAgent"
  | "register"
  | "restrict"
  | "guard"
  | "presentAs"
  | "onPreExecute"
  | "onExecute"
  | "onPostExecute"
  | "onResult"
>

/**
 * The registration members of a registry over `state`; `publish` announces each change.
 *
 * @internal
 */
export const registrations = (
  state: State,
  publish: (change: RegistryChange) => Effect.Effect<void>
): Registrations => {
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

  return { declareAgent, register, restrict, guard, presentAs, onPreExecute, onExecute, onPostExecute, onResult }
}
