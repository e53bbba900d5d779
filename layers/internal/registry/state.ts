/**
 * The pure, synchronous core of the in-memory registry: layers, agent declarations, hook lists
 * and the view builder (SCOPE-1…5). Mutated only from inside `Effect.sync` blocks of the
 * service, so every mutation is atomic with respect to other fibers.
 *
 * @internal
 */
import type { AgentId } from "../../../src/Execution.js"
import type { AroundHook, Guard, PostExecuteHook, PreExecuteHook, ResultObserver } from "../../../src/Policy.js"
import { RUN_CODE_NAME } from "../../../src/ToolRegistry.js"
import type { PresentationMode, RegisteredTool, RegistryView } from "../../../src/ToolRegistry.js"

/** @internal */
export interface Filter {
  readonly allow: ReadonlySet<string> | undefined
  readonly deny: ReadonlySet<string> | undefined
}

/** @internal */
export interface GuardEntry {
  readonly guard: Guard
}

/** @internal */
export interface ModeEntry {
  readonly mode: PresentationMode
}

/** @internal */
export interface ScopeLayer {
  readonly tools: Map<string, RegisteredTool>
  readonly filters: Array<Filter>
  readonly guards: Array<GuardEntry>
  mode: ModeEntry | undefined
}

/** @internal */
export interface AgentDeclaration {
  readonly parent: AgentId | undefined
}

/** @internal */
export interface HookEntry<H> {
  readonly owner: AgentId | undefined
  readonly hook: H
}

/** @internal */
export interface HookLists {
  readonly preExecute: Array<HookEntry<PreExecuteHook<unknown>>>
  readonly aroundExecute: Array<HookEntry<AroundHook<unknown>>>
  readonly postExecute: Array<HookEntry<PostExecuteHook<unknown>>>
  readonly observers: Array<HookEntry<ResultObserver<unknown>>>
}

/** @internal */
export interface ViewData {
  readonly view: RegistryView
  /** Names of `view.tools`, index-aligned (the key each tool is visible under). */
  readonly names: ReadonlyArray<string>
}

/** @internal */
export interface State {
  readonly deploymentMode: PresentationMode
  readonly transport: () => RegisteredTool | undefined
  readonly global: ScopeLayer
  readonly layers: Map<AgentId, ScopeLayer>
  readonly agents: Map<AgentId, AgentDeclaration>
  readonly hooks: HookLists
  version: number
  globalView: ViewData | undefined
  readonly views: Map<AgentId, ViewData>
}

const MAX_CACHED_VIEWS = 4096

/** @internal */
export const makeLayer = (): ScopeLayer => ({ tools: new Map(), filters: [], guards: [], mode: undefined })

/** @internal */
export const makeState = (
  deploymentMode: PresentationMode,
  transport: () => RegisteredTool | undefined
): State => ({
  deploymentMode,
  transport,
  global: makeLayer(),
  layers: new Map(),
  agents: new Map(),
  hooks: { preExecute: [], aroundExecute: [], postExecute: [], observers: [] },
  version: 0,
  globalView: undefined,
  views: new Map()
})

/** @internal */
export const invalidate = (state: State): void => {
  state.version++
  state.globalView = undefined
  state.views.clear()
}

/** @internal */
export const layerFor = (state: State, agent: AgentId | undefined): ScopeLayer | undefined =>
  agent === undefined ? state.global : state.layers.get(agent)

/** @internal */
export const ensureLayer = (state: State, agent: AgentId | undefined): ScopeLayer => {
  if (agent === undefined) return state.global
  let layer = state.layers.get(agent)
  if (layer === undefined) {
    layer = makeLayer()
    state.layers.set(agent, layer)
  }
  return layer
}

/** Drops an agent layer that holds nothing any more (HOST-5). @internal */
export const reclaim = (state: State, agent: AgentId | undefined): void => {
  if (agent === undefined) return
  const layer = state.layers.get(agent)
  if (
    layer !== undefined && layer.tools.size === 0 && layer.filters.length === 0 && layer.guards.length === 0 &&
    layer.mode === undefined
  ) {
    state.layers.delete(agent)
  }
}

/** SCOPE-1: ancestors farthest first, then the agent itself. @internal */
export const chainOf = (agents: ReadonlyMap<AgentId, AgentDeclaration>, agent: AgentId): Array<AgentId> => {
  const chain: Array<AgentId> = [agent]
  const seen = new Set<AgentId>(chain)
  let current = agents.get(agent)?.parent
  while (current !== undefined && !seen.has(current)) {
    chain.push(current)
    seen.add(current)
    current = agents.get(current)?.parent
  }
  return chain.reverse()
}

/** Names `agent` inherits: the global layer plus every ancestor layer (REG-4 step 5). @internal */
export const inheritedNames = (state: State, agent: AgentId): Set<string> => {
  const names = new Set<string>(state.global.tools.keys())
  const chain = chainOf(state.agents, agent)
  for (let i = 0; i < chain.length - 1; i++) {
    const layer = state.layers.get(chain[i])
    if (layer !== undefined) for (const name of layer.tools.keys()) names.add(name)
  }
  return names
}

/** REG-5 for one filter. @internal */
export const admits = (filter: Filter, name: string): boolean =>
  (filter.allow === undefined || filter.allow.has(name)) && (filter.deny === undefined || !filter.deny.has(name))

const copyTools = (source: ReadonlyMap<string, RegisteredTool>): Map<string, RegisteredTool> => {
  const out = new Map<string, RegisteredTool>()
  for (const [name, tool] of source) out.set(name, tool)
  return out
}

const filterHooks = <H>(
  entries: ReadonlyArray<HookEntry<H>>,
  scope: ReadonlySet<AgentId> | undefined
): ReadonlyArray<H> => {
  const out: Array<H> = []
  for (const entry of entries) {
    if (entry.owner === undefined || (scope !== undefined && scope.has(entry.owner))) out.push(entry.hook)
  }
  return Object.freeze(out)
}

/** SCOPE-2…5: builds the immutable view of `agent` (or the global view). @internal */
export const buildView = (state: State, agent: AgentId | undefined): ViewData => {
  let visible: Map<string, RegisteredTool>
  let mode: PresentationMode = state.deploymentMode
  const guards: Array<Guard> = state.global.guards.map((entry) => entry.guard)
  let scope: ReadonlySet<AgentId> | undefined
  let lineage: ReadonlyArray<AgentId> = Object.freeze([])
  let known: Array<string>
  if (agent === undefined) {
    visible = copyTools(state.global.tools)
    known = Array.from(visible.keys())
  } else {
    const chain = chainOf(state.agents, agent)
    scope = new Set(chain)
    lineage = Object.freeze([...chain].reverse())
    const layers: Array<ScopeLayer> = []
    for (const id of chain) {
      const layer = state.layers.get(id)
      if (layer !== undefined) layers.push(layer)
    }
    const own = state.layers.get(agent)
    const inherited = copyTools(state.global.tools)
    const filters: Array<Filter> = []
    for (const layer of layers) {
      if (layer !== own) for (const [name, tool] of layer.tools) inherited.set(name, tool)
      for (const filter of layer.filters) filters.push(filter)
    }
    known = Array.from(inherited.keys())
    if (own !== undefined) for (const name of own.tools.keys()) if (!inherited.has(name)) known.push(name)
    if (filters.length === 0) {
      visible = inherited
    } else {
      visible = new Map()
      for (const [name, tool] of inherited) {
        let ok = true
        for (const filter of filters) {
          if (!admits(filter, name)) {
            ok = false
            break
          }
        }
        if (ok) visible.set(name, tool)
      }
    }
    if (own !== undefined) for (const [name, tool] of own.tools) visible.set(name, tool)
    for (let i = layers.length - 1; i >= 0; i--) {
      const declared = layers[i].mode
      if (declared !== undefined) {
        mode = declared.mode
        break
      }
    }
    for (const layer of layers) for (const entry of layer.guards) guards.push(entry.guard)
  }
  if (mode !== "native") {
    const transport = state.transport()
    if (transport !== undefined) {
      visible.delete(RUN_CODE_NAME)
      visible.set(RUN_CODE_NAME, transport)
    }
  }
  const names = Object.freeze(Array.from(visible.keys()))
  const tools = Object.freeze(Array.from(visible.values()))
  const lookup = visible
  const get = (name: string): RegisteredTool | undefined => lookup.get(name)
  const resolve = mode === "code"
    ? (name: string, hasParent: boolean): RegisteredTool | undefined =>
      hasParent || name === RUN_CODE_NAME ? lookup.get(name) : undefined
    : (name: string, _hasParent: boolean): RegisteredTool | undefined => lookup.get(name)
  const view: RegistryView = Object.freeze({
    agent,
    lineage,
    mode,
    tools,
    knownNames: Object.freeze(known),
    get,
    resolve,
    guards: Object.freeze(guards),
    preExecute: filterHooks(state.hooks.preExecute, scope),
    aroundExecute: filterHooks(state.hooks.aroundExecute, scope),
    postExecute: filterHooks(state.hooks.postExecute, scope),
    observers: filterHooks(state.hooks.observers, scope)
  })
  return { view, names }
}

/** The cached view of `agent`, built on first use after a change. @internal */
export const viewData = (state: State, agent: AgentId | undefined): ViewData => {
  if (agent === undefined) {
    if (state.globalView === undefined) state.globalView = buildView(state, undefined)
    return state.globalView
  }
  let data = state.views.get(agent)
  if (data === undefined) {
    if (state.views.size >= MAX_CACHED_VIEWS) state.views.clear()
    data = buildView(state, agent)
    state.views.set(agent, data)
  }
  return data
}
