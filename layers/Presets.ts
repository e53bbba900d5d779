/**
 * Ready-made runtime Layers: {@link layer} assembles a complete runtime in one call;
 * {@link layerApproval} does so with the audited approval service over the chosen log;
 * {@link layerDefault} and {@link layerTest} are two fixed choices of it.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Approval } from "../src/Approval.js"
import type { ApprovalGrants } from "../src/ApprovalGrants.js"
import type * as ApprovalService from "../src/ApprovalService.js"
import type { CodeRuntime } from "../src/CodeRuntime.js"
import * as IdGenerator from "../src/IdGenerator.js"
import type * as Tool from "../src/Tool.js"
import type { ToolCallLog } from "../src/ToolCallLog.js"
import { detailOf, type JsonSchemaError } from "../src/ToolError.js"
import type { DurableApprovals, DurableTurns } from "../src/internal/durable/contracts.js"
import { DurableTurnError } from "../src/internal/durable/errors.js"
import type { DurableJournal } from "../src/internal/durable/journal.js"
import type { ToolRegistrationError, ToolRegistry } from "../src/ToolRegistry.js"
import type * as ToolRuntime from "../src/ToolRuntime.js"
import * as ApprovalLayers from "./ApprovalLayers.js"
import type * as InMemoryToolRegistry from "./InMemoryToolRegistry.js"
import { approvalLayer, assemble } from "./internal/presets/assemble.js"
import { APPROVAL_KEYS, checkValues, readDurableOptions, readKeys, readOptions } from "./internal/presets/options.js"
import type * as TimeoutPolicy from "./TimeoutPolicy.js"
import * as ToolCallLogMemory from "./ToolCallLogMemory.js"

/**
 * What {@link layer} assembles. Every field is optional and read exactly once, when `layer` is
 * called (the fields of `timeout` and `codeMode` too).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<
  T extends Tool.Any = never,
  A extends Layer.Layer<Approval, unknown, unknown> = never,
  L extends Layer.Layer<ToolCallLog, unknown, unknown> = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never
> {
  /**
   * Tools registered globally for the lifetime of the layer, in order. A refused definition
   * fails the layer with the registry's `ToolRegistrationError` (or `JsonSchemaError`); the
   * services the tools need become the layer's requirements.
   */
  readonly tools?: ReadonlyArray<T> | undefined
  /**
   * The approval service asked when a pre-execute policy answers `ask` (e.g.
   * `ApprovalService.layer()` or `ApprovalLayers.layerInteractive`). It is built over the
   * preset's registry, log and id generator, so a service that audits to the log gets the chosen
   * `log`. Default: none, so every `ask` is denied.
   */
  readonly approval?: A | undefined
  /**
   * The tool-call log the scheduler writes. Default: `ToolCallLogNoop.layer` (nothing is kept,
   * so a long-running process does not grow); pass `ToolCallLogMemory.layer` to read records
   * back in the same process, or a durable log to replay later.
   */
  readonly log?: L | undefined
  /**
   * The timeout policy: `true` or absent turns it on (tools that declare `timeoutMs` get that
   * budget), `{ defaultTimeoutMs }` also gives every other tool that budget, `false` leaves it out.
   */
  readonly timeout?: boolean | TimeoutPolicy.Options | undefined
  /** Ids of deferred context messages. Default: random UUIDs (`IdGenerator.layerRandom`). */
  readonly ids?: I | undefined
  /**
   * Code Mode: the registry holds the `run_code` transport (`InMemoryToolRegistry.layerCodeMode`;
   * deployment `mode` default `code`, `maxParallelSubCalls` default 10). Default: none, so no
   * view ever holds `run_code`.
   */
  readonly codeMode?: InMemoryToolRegistry.CodeModeOptions | undefined
  /**
   * The runtime `run_code` programs run in (e.g. `CodeRuntimeQuickJs.layer()`), part of the
   * layer's output so prompt assembly and `run_code` find it. Default: none, so a non-native mode
   * fails with `requires a code runtime`.
   */
  readonly codeRuntime?: C | undefined
}

type SuccessOf<X> = [X] extends [never] ? never : X extends Layer.Layer<infer ROut, infer _E, infer _R> ? ROut : never
type ErrorOf<X> = [X] extends [never] ? never : X extends Layer.Layer<infer _ROut, infer E, infer _R> ? E : never
type ContextOf<X> = [X] extends [never] ? never : X extends Layer.Layer<infer _ROut, infer _E, infer R> ? R : never
type ToolRequirements<T> = T extends Tool.ToolDefinition<infer R> ? R : never

/**
 * What {@link layer} provides: the runtime, the registry, a log and an id generator (everything
 * `Scheduler.runBatch` needs), plus whatever the chosen Layers provide (the `CodeRuntime` of
 * `codeRuntime` among them).
 *
 * @since 0.1.0
 * @category models
 */
export type Provided<A = never, L = never, I = never, C = never> =
  | ToolRuntime.ToolRuntime
  | ToolRegistry
  | ToolCallLog
  | IdGenerator.IdGenerator
  | SuccessOf<A>
  | SuccessOf<L>
  | SuccessOf<I>
  | SuccessOf<C>

/**
 * Assembles a working runtime in one call: the in-memory registry (holding `run_code` when
 * `codeMode` is given), the runtime, the timeout policy (on unless `timeout: false`), the chosen
 * approval service, a log (the no-op log unless `log` is given), an id generator, the code
 * runtime when `codeRuntime` is given and the `tools`, registered for the layer's lifetime.
 *
 * **Details**
 *
 * Options that cannot be used are a defect (`Cause.IllegalArgumentException`) raised when the
 * layer is built, before anything is registered: `Presets.layer options must be an object`,
 * `Presets.layer could not read option "<key>": <detail>`, `Presets.layer option "tools" must
 * be an array of tool definitions`, `Presets.layer option "<key>" must be a Layer`,
 * `Presets.layer option "timeout" must be true, false or { defaultTimeoutMs }`,
 * `Presets.layer option "timeout.defaultTimeoutMs" must be a positive finite number no greater
 * than 2147483647`, `Presets.layer option "codeMode" must be an object`,
 * `Presets.layer option "codeMode.mode" must be "native", "code" or "both"` and
 * `Presets.layer option "codeMode.maxParallelSubCalls" must be a positive integer`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Scheduler, Tool } from "effect-tool-runtime"
 * import { ApprovalLayers, Presets, ToolCallLogMemory } from "effect-tool-runtime/layers"
 *
 * declare const search: Tool.ToolDefinition
 *
 * const Runtime = Presets.layer({
 *   tools: [search],
 *   approval: ApprovalLayers.layerDenyAll,
 *   log: ToolCallLogMemory.layer,
 *   timeout: { defaultTimeoutMs: 30_000 }
 * })
 * const step = Scheduler.runBatch([{ callId: "c1", name: "search", arguments: "{}" }]).pipe(Effect.provide(Runtime))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <
  T extends Tool.Any = never,
  A extends Layer.Layer<Approval, unknown, unknown> = never,
  L extends Layer.Layer<ToolCallLog, unknown, unknown> = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never
>(
  options?: Options<T, A, L, I, C>
): Layer.Layer<
  Provided<A, L, I, C>,
  | ([T] extends [never] ? never : ToolRegistrationError | JsonSchemaError)
  | ErrorOf<A>
  | ErrorOf<L>
  | ErrorOf<I>
  | ErrorOf<C>,
  | Exclude<ToolRequirements<T>, ToolRegistry>
  | Exclude<ContextOf<A>, ToolRegistry | ToolCallLog | IdGenerator.IdGenerator>
  | ContextOf<L>
  | ContextOf<I>
  | ContextOf<C>
> => {
  const read = readOptions(options)
  if (typeof read === "string") return Layer.die(new Cause.IllegalArgumentException(read))
  return assemble(read) as never
}

/**
 * The default runtime, `layer()`: in-memory registry, timeout policy on, no approval service
 * (so every `ask` is denied), the no-op log, random context ids.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDefault: Layer.Layer<Provided> = layer()

/**
 * The test runtime: like {@link layerDefault} with scripted approval answers (see
 * `ApprovalLayers.layerScripted`), the in-memory log (records can be read back) and
 * deterministic context ids (`ctx-1`, `ctx-2`, …).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerTest = (
  answers: ReadonlyArray<ApprovalLayers.ScriptedAnswer> = []
): Layer.Layer<Provided<Layer.Layer<Approval | ApprovalLayers.ScriptedApprovals>>> =>
  layer({ approval: ApprovalLayers.layerScripted(answers), log: ToolCallLogMemory.layer, ids: IdGenerator.layerCounter() })

/**
 * What {@link layerApproval} assembles: the options of {@link layer} (without `approval`), and
 * the approval service's.
 *
 * @since 0.1.0
 * @category models
 */
export interface ApprovalOptions<
  T extends Tool.Any = never,
  L extends Layer.Layer<ToolCallLog, unknown, unknown> = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  G extends Layer.Layer<ApprovalGrants, unknown, unknown> = never,
  X extends boolean = false,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never
> extends Omit<Options<T, never, L, I, C>, "approval"> {
  /** The deployment default policy (`ask` unless given). */
  readonly policy?: ApprovalService.Policy | undefined
  /** Where "always allow" answers are remembered (e.g. `ApprovalGrants.layerMemory`). Default: none. */
  readonly grants?: G | undefined
  /** `true` adds a person's channel, `ApprovalLayers.InteractiveApprovals`, as a global answerer. */
  readonly interactive?: X | undefined
  /** Approval ids (they pair the audit records). Default: random UUIDs. */
  readonly approvalIds?: IdGenerator.Service | undefined
}

/**
 * What {@link layerApproval} provides: everything {@link layer} does, the `ApprovalService`, the
 * grants service when `grants` is given and `InteractiveApprovals` when `interactive` is `true`.
 *
 * @since 0.1.0
 * @category models
 */
export type ApprovalProvided<L = never, I = never, G = never, X extends boolean = false, C = never> =
  | Provided<never, L, I, C>
  | Approval
  | ApprovalService.ApprovalService
  | SuccessOf<G>
  | (X extends true ? ApprovalLayers.InteractiveApprovals : never)

/**
 * {@link layer} with the audited `ApprovalService` wired in, so composition order cannot drop
 * it: the service audits to the chosen `log` (the no-op log unless given — pass a durable log to
 * keep the audit), scopes answerers and policies by the preset's registry, remembers grants in
 * `grants` when given, and with `interactive: true` puts every request to a person through
 * `ApprovalLayers.InteractiveApprovals`; `codeMode` and `codeRuntime` add Code Mode as in
 * {@link layer}, so `run_code`'s sub-calls ask the same service. Options that cannot be used are
 * a defect raised when the layer is built (`Presets.layerApproval options must be an object`,
 * `Presets.layerApproval option "policy" must be "ask" or "never"`, `… option "grants" must be a
 * Layer`, `… option "interactive" must be a boolean`, and those of {@link layer}).
 *
 * @example
 * ```ts
 * import { ApprovalGrants, Tool } from "effect-tool-runtime"
 * import { Presets, ToolCallLogMemory } from "effect-tool-runtime/layers"
 *
 * declare const deleteFile: Tool.ToolDefinition
 *
 * const Runtime = Presets.layerApproval({
 *   tools: [deleteFile],
 *   log: ToolCallLogMemory.layer,
 *   grants: ApprovalGrants.layerMemory,
 *   interactive: true
 * })
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerApproval = <
  T extends Tool.Any = never,
  L extends Layer.Layer<ToolCallLog, unknown, unknown> = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  G extends Layer.Layer<ApprovalGrants, unknown, unknown> = never,
  X extends boolean = false,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never
>(
  options?: ApprovalOptions<T, L, I, G, X, C>
): Layer.Layer<
  ApprovalProvided<L, I, G, X, C>,
  | ([T] extends [never] ? never : ToolRegistrationError | JsonSchemaError)
  | ErrorOf<L>
  | ErrorOf<I>
  | ErrorOf<G>
  | ErrorOf<C>,
  Exclude<ToolRequirements<T>, ToolRegistry> | ContextOf<L> | ContextOf<I> | ContextOf<G> | ContextOf<C>
> => {
  const label = "Presets.layerApproval"
  const values = options === undefined
    ? Object.create(null) as Record<(typeof APPROVAL_KEYS)[number], unknown>
    : readKeys(label, options, APPROVAL_KEYS)
  if (typeof values === "string") return Layer.die(new Cause.IllegalArgumentException(values))
  const read = checkValues(label, { ...values, approval: undefined })
  if (typeof read === "string") return Layer.die(new Cause.IllegalArgumentException(read))
  const approval = approvalLayer(label, values)
  if (typeof approval === "string") return Layer.die(new Cause.IllegalArgumentException(approval))
  return assemble({ ...read, approval }) as never
}

/**
 * What {@link layerDurable} assembles: {@link layerApproval}'s options (the log is the durable
 * journal's and the person answers through `DurableApprovals`, so no `log` or `interactive`), and
 * where the durable state lives.
 *
 * @since 0.1.0
 * @category models
 */
export interface DurableOptions<
  T extends Tool.Any = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  G extends Layer.Layer<ApprovalGrants, unknown, unknown> = never,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never,
  S extends Layer.Layer<never, unknown, unknown> = never
> extends Omit<ApprovalOptions<T, never, I, G, false, C>, "log" | "interactive"> {
  /**
   * Registrations the batches depend on — pre-execute policies, guards, hooks, answerers — as a
   * Layer over the preset's services (`Layer.scopedDiscard(…)`). It is built before the engine
   * resumes any batch, so a batch resumed at start-up sees the same policies as the first run.
   */
  readonly setup?: S | undefined
  /** The libSQL database of the engine and the journal: `"file:agent.db"` (one runner process per file). */
  readonly url: string
  readonly authToken?: string | undefined
  /** How often the runner reads what other processes wrote (answers). Default `"1 second"`. */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** How long a durable approval waits before it decides `unavailable`. Default `"1 day"`. */
  readonly approvalTimeout?: Duration.DurationInput | undefined
}

/**
 * What {@link layerDurable} provides: {@link layerApproval}'s services over the durable log, and
 * the durable turns services (`DurableTurns`, `DurableApprovals`, the journal).
 *
 * @since 0.1.0
 * @category models
 */
export type DurableProvided<I = never, G = never, C = never> =
  | ApprovalProvided<never, I, G, false, C>
  | DurableTurns
  | DurableApprovals
  | DurableJournal

/**
 * A durable layer over the options' tools and layers: it provides `P`, fails with what building
 * the tools and the given layers can fail with, and needs what they need (but what it provides).
 *
 * @since 0.1.0
 * @category models
 */
export type DurableLayer<P, T, I, G, C, S> = Layer.Layer<
  P,
  | DurableTurnError
  | ([T] extends [never] ? never : ToolRegistrationError | JsonSchemaError)
  | ErrorOf<I>
  | ErrorOf<G>
  | ErrorOf<C>
  | ErrorOf<S>,
  | Exclude<ToolRequirements<T>, ToolRegistry>
  | ContextOf<I>
  | ContextOf<G>
  | ContextOf<C>
  | Exclude<ContextOf<S>, DurableProvided<I, G, C>>
>

/**
 * Durable turns in one call: tools, policies, the audited approval service and the runtime as
 * {@link layerApproval} assembles them, over the journal-backed log, with the durable turns
 * service on the single-node workflow engine and its journal in a libSQL file
 * (`{ url: "file:agent.db" }`). Batches run with `DurableTurn.runBatch` resume after a crash or a
 * restart; asks wait for a person across restarts (`DurableTurn.pending`, `DurableTurn.answer`).
 * Policies go in `setup` (see {@link DurableOptions}).
 * Needs the optional peers `@effect/workflow`, `@effect/cluster`, `@effect/rpc`, `@effect/sql` and
 * `@effect/sql-libsql`, loaded when the layer is built (fails with `DurableTurnError` when they
 * are missing). Register every tool and policy here (or in Layers beneath): a restarted runner
 * resumes unfinished batches as soon as it is built.
 *
 * @example
 * ```ts
 * import type { Tool } from "effect-tool-runtime"
 * import { Presets } from "effect-tool-runtime/layers"
 *
 * declare const writeFile: Tool.ToolDefinition
 *
 * const Runtime = Presets.layerDurable({ url: "file:agent.db", tools: [writeFile] })
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDurable = <
  T extends Tool.Any = never,
  I extends Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> = never,
  G extends Layer.Layer<ApprovalGrants, unknown, unknown> = never,
  C extends Layer.Layer<CodeRuntime, unknown, unknown> = never,
  S extends Layer.Layer<never, unknown, unknown> = never
>(
  options: DurableOptions<T, I, G, C, S>
): DurableLayer<DurableProvided<I, G, C>, T, I, G, C, S> => {
  const label = "Presets.layerDurable"
  const checked = readDurableOptions(label, options, ["url", "authToken"])
  if (typeof checked === "string") return Layer.die(new Cause.IllegalArgumentException(checked))
  const { extra, read, settings, values } = checked
  if (typeof extra.url !== "string") return Layer.die(new Cause.IllegalArgumentException(`${label} option "url" must be a string`))
  if (extra.authToken !== undefined && typeof extra.authToken !== "string") {
    return Layer.die(new Cause.IllegalArgumentException(`${label} option "authToken" must be a string`))
  }
  const location = { ...settings, url: extra.url, authToken: extra.authToken }
  return Layer.unwrapEffect(
    Effect.tryPromise({
      try: () => import("./internal/presets/durable.js"),
      catch: (error) =>
        new DurableTurnError({
          reason: "InvalidOption",
          message: `${label} needs the optional packages @effect/workflow, @effect/cluster and @effect/sql-libsql: ${
            detailOf(error).message
          }`
        })
    }).pipe(
      Effect.flatMap((durable) => {
        const assembled = durable.assembleDurable(label, read, values, settings, durable.libsqlEngine(location))
        return typeof assembled === "string"
          ? Effect.die(new Cause.IllegalArgumentException(assembled))
          : Effect.succeed(assembled)
      })
    )
  ) as never
}
