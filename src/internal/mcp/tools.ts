/**
 * The scoped MCP import: option reading, paginated listing, applying a listing to the
 * registry (add, remove, replace, each tool in its own scope), following list changes, and
 * the destructive-hint approval policy.
 *
 * @internal
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ResultSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv"
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import type { AgentId } from "../../Execution.js"
import type { JsonValue } from "../../Json.js"
import type {
  AskDestructiveOptions,
  ClientInfo,
  ImportedTool,
  LayerOptions,
  McpToolSet,
  Refreshed,
  RegisterOptions,
  SkippedTool,
  ToolSetEvent
} from "../../McpTools.js"
import { PreDecision } from "../../Policy.js"
import type { PreExecuteHook } from "../../Policy.js"
import { detailOf } from "../../ToolError.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import type { RegisteredTool, Service as RegistryService } from "../../ToolRegistry.js"
import * as definition from "./definition.js"
import { McpImportError } from "./errors.js"
import * as listing from "./listing.js"

/** @internal */
export const DEFAULT_CLIENT_INFO: ClientInfo = { name: "effect-tool-runtime", version: "0.1.0" }

/** @internal */
export const DEFAULT_MAX_TOOLS = 1000

/** @internal */
export const MAX_PAGES = 100

const MAX_TIMEOUT_MS = 2147483647

interface Settings {
  readonly agent: AgentId | undefined
  readonly prefix: string
  readonly invalidTools: "fail" | "skip"
  readonly maxTools: number
  readonly timeoutMs: number | undefined
  readonly requestTimeoutMs: number | undefined
  readonly listChanged: boolean
  readonly readOnlyParallel: boolean
  readonly jsonSchemaValidator: jsonSchemaValidator | undefined
}

const illegal = (message: string) => new Cause.IllegalArgumentException(`McpTools: ${message}`)

const isTimeout = (ms: unknown): ms is number =>
  typeof ms === "number" && Number.isFinite(ms) && ms > 0 && ms <= MAX_TIMEOUT_MS

const readSettings = (options: RegisterOptions | undefined): Settings | Cause.IllegalArgumentException => {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    return illegal("options must be an object")
  }
  const read = <K extends keyof RegisterOptions>(key: K): RegisterOptions[K] | Cause.IllegalArgumentException => {
    if (options === undefined) return undefined
    try {
      return options[key]
    } catch (error) {
      return illegal(`could not read option "${key}": ${detailOf(error).message}`)
    }
  }
  const agent = read("agent")
  if (agent instanceof Cause.IllegalArgumentException) return agent
  if (agent !== undefined && typeof agent !== "string") return illegal(`option "agent" must be a string`)
  const prefix = read("prefix")
  if (prefix instanceof Cause.IllegalArgumentException) return prefix
  if (prefix !== undefined && (typeof prefix !== "string" || !listing.PREFIX_PATTERN.test(prefix))) {
    return illegal(`option "prefix" must be up to 64 characters of A-Z, a-z, 0-9, _, - and .`)
  }
  const invalidTools = read("invalidTools")
  if (invalidTools instanceof Cause.IllegalArgumentException) return invalidTools
  if (invalidTools !== undefined && invalidTools !== "fail" && invalidTools !== "skip") {
    return illegal(`option "invalidTools" must be "fail" or "skip"`)
  }
  const maxTools = read("maxTools")
  if (maxTools instanceof Cause.IllegalArgumentException) return maxTools
  if (maxTools !== undefined && !(typeof maxTools === "number" && Number.isInteger(maxTools) && maxTools > 0)) {
    return illegal(`option "maxTools" must be a positive integer`)
  }
  const timeoutMs = read("timeoutMs")
  if (timeoutMs instanceof Cause.IllegalArgumentException) return timeoutMs
  if (timeoutMs !== undefined && !isTimeout(timeoutMs)) {
    return illegal(`option "timeoutMs" must be a positive finite number no greater than ${MAX_TIMEOUT_MS}`)
  }
  const requestTimeoutMs = read("requestTimeoutMs")
  if (requestTimeoutMs instanceof Cause.IllegalArgumentException) return requestTimeoutMs
  if (requestTimeoutMs !== undefined && !isTimeout(requestTimeoutMs)) {
    return illegal(`option "requestTimeoutMs" must be a positive finite number no greater than ${MAX_TIMEOUT_MS}`)
  }
  const listChanged = read("listChanged")
  if (listChanged instanceof Cause.IllegalArgumentException) return listChanged
  if (listChanged !== undefined && typeof listChanged !== "boolean") {
    return illegal(`option "listChanged" must be a boolean`)
  }
  const readOnlyParallel = read("readOnlyParallel")
  if (readOnlyParallel instanceof Cause.IllegalArgumentException) return readOnlyParallel
  if (readOnlyParallel !== undefined && typeof readOnlyParallel !== "boolean") {
    return illegal(`option "readOnlyParallel" must be a boolean`)
  }
  const validator = read("jsonSchemaValidator")
  if (validator instanceof Cause.IllegalArgumentException) return validator
  if (validator !== undefined && (typeof validator !== "object" || validator === null)) {
    return illegal(`option "jsonSchemaValidator" must be an object with getValidator`)
  }
  return {
    agent,
    prefix: prefix ?? "",
    invalidTools: invalidTools ?? "fail",
    maxTools: maxTools ?? DEFAULT_MAX_TOOLS,
    timeoutMs,
    requestTimeoutMs,
    listChanged: listChanged ?? true,
    readOnlyParallel: readOnlyParallel ?? true,
    jsonSchemaValidator: validator
  }
}

/** Registered tool → its hints, for the destructive policy (identity of the registry's entry). */
const hints = new WeakMap<RegisteredTool, { readonly readOnly: boolean; readonly destructive: boolean | undefined }>()

const listFailed = (message: string) => new McpImportError({ reason: "list", message })

const listPage = (client: Client, cursor: string | undefined, settings: Settings) =>
  Effect.tryPromise({
    try: (signal) => {
      const options = settings.requestTimeoutMs === undefined
        ? { signal }
        : { signal, timeout: settings.requestTimeoutMs }
      return Promise.resolve().then(() =>
        client.request(
          cursor === undefined ? { method: "tools/list" } : { method: "tools/list", params: { cursor } },
          ResultSchema,
          options
        )
      )
    },
    catch: (error) => listFailed(`tools/list failed: ${detailOf(error).message}`)
  })

/** Every entry of the server's list, page by page, bounded by `maxTools` and {@link MAX_PAGES}. */
const listAll = (client: Client, settings: Settings) =>
  Effect.gen(function*() {
    const entries: Array<JsonValue> = []
    const cursors = new Set<string>()
    let cursor: string | undefined = undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      const read = listing.readPage(yield* listPage(client, cursor, settings))
      if (read._tag === "Malformed") return yield* Effect.fail(listFailed(read.reason))
      for (const entry of read.entries) entries.push(entry)
      if (entries.length > settings.maxTools) {
        return yield* Effect.fail(
          new McpImportError({
            reason: "limit",
            message: `the server lists more than ${settings.maxTools} tools (maxTools)`
          })
        )
      }
      if (read.nextCursor === undefined) return entries
      if (cursors.has(read.nextCursor)) return yield* Effect.fail(listFailed("the tools/list cursor repeats"))
      cursors.add(read.nextCursor)
      cursor = read.nextCursor
    }
    return yield* Effect.fail(
      new McpImportError({ reason: "limit", message: `the tools/list answer spans more than ${MAX_PAGES} pages` })
    )
  })

interface Entry {
  readonly spec: listing.ToolSpec
  readonly scope: Scope.CloseableScope
  readonly imported: ImportedTool
}

type Classified = { readonly specs: ReadonlyArray<listing.ToolSpec>; readonly skipped: Array<SkippedTool> }

const classify = (entries: ReadonlyArray<unknown>, prefix: string): Classified => {
  const specs: Array<listing.ToolSpec> = []
  const skipped: Array<SkippedTool> = []
  const seen = new Set<string>()
  for (const entry of entries as ReadonlyArray<never>) {
    const read = listing.readTool(entry, prefix)
    if (listing.isSkipped(read)) {
      skipped.push(read)
    } else if (seen.has(read.name)) {
      skipped.push({ name: read.serverName, reason: "the server lists this name more than once" })
    } else {
      seen.add(read.name)
      specs.push(read)
    }
  }
  return { specs, skipped }
}

interface ImportState {
  readonly registry: RegistryService
  readonly settings: Settings
  readonly shared: definition.Shared
  readonly toolsScope: Scope.Scope
  readonly entries: Map<string, Entry>
  order: ReadonlyArray<string>
  skipped: ReadonlyArray<SkippedTool>
}

type Registered = { readonly _tag: "Ok"; readonly entry: Entry } | { readonly _tag: "Refused"; readonly reason: string }

const registerOne = (state: ImportState, spec: listing.ToolSpec): Effect.Effect<Registered> =>
  Effect.gen(function*() {
    const built = definition.build(spec, state.shared)
    if (built._tag === "Invalid") return { _tag: "Refused", reason: built.reason } as const
    const scope = yield* Scope.fork(state.toolsScope, ExecutionStrategy.sequential)
    const agent = state.settings.agent
    const exit = yield* Effect.exit(
      Scope.extend(state.registry.register(built.definition, agent === undefined ? undefined : { agent }), scope)
    )
    if (Exit.isFailure(exit)) {
      yield* Scope.close(scope, Exit.void)
      const failure = Cause.failureOption(exit.cause)
      const message = failure._tag === "Some" ? failure.value.message : detailOf(Cause.squash(exit.cause)).message
      return { _tag: "Refused", reason: `the registry refused "${spec.name}": ${message}` } as const
    }
    const registered = state.registry.unsafeView(agent).get(spec.name)
    if (registered !== undefined) hints.set(registered, { readOnly: spec.readOnly, destructive: spec.destructive })
    const imported: ImportedTool = {
      name: spec.name,
      serverName: spec.serverName,
      readOnly: spec.readOnly,
      destructive: spec.destructive,
      structured: spec.outputSchema !== undefined,
      validatesArguments: built.validatesArguments
    }
    return { _tag: "Ok", entry: { spec, scope, imported } } as const
  })

const unregister = (entry: Entry) => Scope.close(entry.scope, Exit.void)

/** Applies a classified listing: removes vanished tools, replaces changed ones, adds new ones. */
const apply = (state: ImportState, classified: Classified): Effect.Effect<Refreshed> =>
  Effect.gen(function*() {
    const wanted = new Set(classified.specs.map((spec) => spec.name))
    const removed: Array<string> = []
    const added: Array<string> = []
    const replaced: Array<string> = []
    const skipped = [...classified.skipped]
    for (const [name, entry] of state.entries) {
      if (wanted.has(name)) continue
      state.entries.delete(name)
      yield* unregister(entry)
      removed.push(name)
    }
    for (const spec of classified.specs) {
      const existing = state.entries.get(spec.name)
      if (existing !== undefined && existing.spec.fingerprint === spec.fingerprint) continue
      if (existing !== undefined) {
        state.entries.delete(spec.name)
        yield* unregister(existing)
      }
      const result = yield* registerOne(state, spec)
      if (result._tag === "Refused") {
        skipped.push({ name: spec.serverName, reason: result.reason })
        if (existing !== undefined) removed.push(spec.name)
        continue
      }
      state.entries.set(spec.name, result.entry)
      if (existing !== undefined) replaced.push(spec.name)
      else added.push(spec.name)
    }
    state.order = classified.specs.map((spec) => spec.name).filter((name) => state.entries.has(name))
    state.skipped = skipped
    return { _tag: "Refreshed", added, removed, replaced, skipped }
  })

const firstImport = (state: ImportState, client: Client): Effect.Effect<void, McpImportError> =>
  Effect.gen(function*() {
    const classified = classify(yield* listAll(client, state.settings), state.settings.prefix)
    if (state.settings.invalidTools === "fail" && classified.skipped.length > 0) {
      return yield* Effect.fail(
        new McpImportError({
          reason: "invalid-tool",
          message: `the server lists tools that cannot be imported: ${
            classified.skipped.map((s) => `"${s.name}" (${s.reason})`).join("; ")
          }`
        })
      )
    }
    for (const spec of classified.specs) {
      const result = yield* registerOne(state, spec)
      if (result._tag === "Refused") {
        return yield* Effect.fail(
          new McpImportError({
            reason: "registration",
            message: `MCP tool "${spec.serverName}" could not be imported: ${result.reason}`
          })
        )
      }
      state.entries.set(spec.name, result.entry)
    }
    state.order = classified.specs.map((spec) => spec.name)
    state.skipped = classified.skipped
  })

const closeFlights = (shared: definition.Shared) =>
  Effect.suspend(() => {
    shared.closed = true
    const flights = [...shared.inFlight]
    for (const flight of flights) {
      flight.closing = true
      flight.controller.abort(new DOMException("the MCP tool set was closed", "AbortError"))
    }
    return Effect.promise(() => Promise.all(flights.map((flight) => flight.done)))
  }).pipe(Effect.ensuring(Effect.sync(() => shared.stash.clear())))

const LIST_CHANGED = "notifications/tools/list_changed"

/** @internal */
export const register = Effect.fn("McpTools.register")(function*(client: Client, options?: RegisterOptions) {
  const settings = readSettings(options)
  if (settings instanceof Cause.IllegalArgumentException) return yield* Effect.die(settings)
  const registry = yield* ToolRegistry
  const parent = yield* Scope.Scope
  const own = yield* Scope.fork(parent, ExecutionStrategy.sequential)
  return yield* Effect.onError(
    Effect.gen(function*() {
      let validators: jsonSchemaValidator | undefined = settings.jsonSchemaValidator
      const shared: definition.Shared = {
        client,
        requestTimeoutMs: settings.requestTimeoutMs,
        timeoutMs: settings.timeoutMs,
        readOnlyParallel: settings.readOnlyParallel,
        validators: () => (validators ??= new AjvJsonSchemaValidator()),
        stash: new Map(),
        inFlight: new Set(),
        closed: false
      }
      yield* Scope.addFinalizer(own, closeFlights(shared))
      const toolsScope = yield* Scope.fork(own, ExecutionStrategy.sequential)
      const state: ImportState = { registry, settings, shared, toolsScope, entries: new Map(), order: [], skipped: [] }
      const events = yield* PubSub.unbounded<ToolSetEvent>()
      const lock = yield* Effect.makeSemaphore(1)
      const refresh: Effect.Effect<Refreshed, McpImportError> = lock.withPermits(1)(
        Effect.flatMap(listAll(client, settings), (entries) => apply(state, classify(entries, settings.prefix)))
      ).pipe(
        Effect.tap((event) => PubSub.publish(events, event)),
        Effect.tapError((error) => PubSub.publish(events, { _tag: "RefreshFailed", error } as const))
      )
      const signals = yield* Queue.sliding<void>(1)
      if (settings.listChanged) {
        yield* Effect.try({
          try: () => client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
              Queue.unsafeOffer(signals, undefined)
            }),
          catch: (error) => listFailed(`could not follow tool list changes: ${detailOf(error).message}`)
        })
        yield* Scope.addFinalizer(
          own,
          Effect.sync(() => {
            try {
              client.removeNotificationHandler(LIST_CHANGED)
            } catch {
              // the client is the caller's: a failing removal leaves nothing of ours running
            }
          })
        )
      }
      yield* firstImport(state, client)
      if (settings.listChanged) {
        const background = Effect.catchAll(
          refresh,
          (error) => Effect.logWarning(`MCP tool list refresh failed: ${error.message}`)
        )
        yield* Effect.forkIn(Effect.forever(Effect.zipRight(Queue.take(signals), background)), own)
      }
      const toolSet: McpToolSet = {
        tools: Effect.sync(() => state.order.map((name) => state.entries.get(name)!.imported)),
        skipped: Effect.sync(() => state.skipped),
        refresh,
        subscribe: PubSub.subscribe(events)
      }
      return toolSet
    }),
    (cause) => Scope.close(own, Exit.failCause(cause))
  )
})

/** @internal */
export const connect = (
  transport: () => Transport,
  clientInfo: ClientInfo | undefined
): Effect.Effect<Client, McpImportError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new Client(clientInfo ?? DEFAULT_CLIENT_INFO)
        try {
          await client.connect(transport())
        } catch (error) {
          await client.close().catch(() => undefined)
          throw error
        }
        return client
      },
      catch: (error) => new McpImportError({ reason: "connect", message: `could not connect: ${detailOf(error).message}` })
    }),
    (client) => Effect.promise(() => client.close().catch(() => undefined))
  )

/** @internal */
export const layer = (options: LayerOptions): Layer.Layer<never, McpImportError, ToolRegistry> =>
  Layer.scopedDiscard(Effect.suspend(() => {
    let transport: () => Transport
    let clientInfo: ClientInfo | undefined
    try {
      transport = options.transport
      clientInfo = options.clientInfo
    } catch (error) {
      return Effect.die(illegal(`could not read the layer options: ${detailOf(error).message}`))
    }
    if (typeof transport !== "function") return Effect.die(illegal(`option "transport" must be a function`))
    return Effect.flatMap(connect(transport, clientInfo), (client) => register(client, options))
  }))

const destructiveReason = (name: string) => `tool "${name}" is marked destructive by its MCP server`

/** @internal */
export const askDestructive = (registry: RegistryService, options?: AskDestructiveOptions): PreExecuteHook => {
  const unannotated = options?.unannotated === true
  return (exec, next) =>
    Effect.map(next, (decision) => {
      if (decision._tag !== "Allow") return decision
      const entry = registry.unsafeView(exec.agent).get(exec.name)
      const hint = entry === undefined ? undefined : hints.get(entry)
      if (hint === undefined || hint.readOnly) return decision
      const asks = hint.destructive === true || (unannotated && hint.destructive === undefined)
      return asks ? PreDecision.Ask({ reason: destructiveReason(exec.name) }) : decision
    })
}

/** @internal */
export const layerAskDestructive = (options?: AskDestructiveOptions): Layer.Layer<never, never, ToolRegistry> =>
  Layer.scopedDiscard(Effect.flatMap(ToolRegistry, (registry) => registry.onPreExecute(askDestructive(registry, options))))
