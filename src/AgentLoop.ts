/**
 * An agent loop over `@effect/ai`: the `LanguageModel` in context is asked with the agent's
 * visible tools, each message's tool calls run as one batch through the scheduler (policy,
 * approval, timeout, validation, model-order commits, durable log), and the results and deferred
 * contexts go back to the model in model order, step after step.
 *
 * `@effect/ai` is an optional peer: this module is reachable only through its own subpath,
 * `effect-tool-runtime/AgentLoop`.
 *
 * @since 0.1.0
 */
import type * as AiError from "@effect/ai/AiError"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Take from "effect/Take"
import type { CodeModeError } from "./CodeMode.js"
import type { UserMessage } from "./Content.js"
import type { AgentId } from "./Execution.js"
import * as internal from "./internal/ai/agentLoop.js"
import type { StepStore } from "./internal/durable/contracts.js"
import * as prompts from "./internal/ai/agentLoopPrompt.js"
import type { CommitEvent, CommittedResult, ModelToolCall, SchedulerError } from "./Scheduler.js"
import type { ToolCallLog } from "./ToolCallLog.js"
import type { ToolRegistry } from "./ToolRegistry.js"
import type { ToolRuntime } from "./ToolRuntime.js"

/**
 * The default step budget: at most this many model requests per run.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_MAX_STEPS: number = internal.DEFAULT_MAX_STEPS

/**
 * Each option is read exactly once when the run starts; an option that cannot be read or is
 * invalid is a defect (`Cause.IllegalArgumentException`) raised before the model is asked.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<E = never> {
  /** The agent whose visible tools the model gets and whose scope runs every call. */
  readonly agent: AgentId
  /** The conversation so far: a string (one user message), messages, or a `Prompt`. */
  readonly prompt: Prompt.RawInput
  /** The step budget, a positive integer (default {@link DEFAULT_MAX_STEPS}). */
  readonly maxSteps?: number | undefined
  /** The scheduler's pool cap per batch (default `10`). */
  readonly maxParallel?: number | undefined
  /**
   * Caller cancellation: an abort stops the model request in flight or the running batch (which
   * drains and records every call, as on interruption) and ends the run with `aborted`.
   */
  readonly signal?: AbortSignal | undefined
  /** Passed to the model with the tools (default: the provider's, `auto`). */
  readonly toolChoice?: "auto" | "none" | "required" | undefined
  /** The `batchId` of each step's durable records (default: the step's first call id). */
  readonly batchId?: ((step: number) => string) | undefined
  /**
   * Makes the turn durable (`DurableTurn.loopSteps({ sessionId, turnId })` gives it): each model
   * step is recorded and each step's calls run as a durable batch, so running the turn again after
   * a crash replays the steps already answered without asking the model, and resumes the batch
   * that was running. `batchId` is then ignored (the store names the batches).
   */
  readonly durable?: DurableSteps<E> | undefined
}

/**
 * A durable turn's store (see `DurableTurn.loopSteps`): the recorded model message of a step (JSON
 * text this module writes), recording one — the stored text comes back, the first recording wins
 * — and a step's calls as a durable batch.
 *
 * @since 0.1.0
 * @category models
 */
export interface DurableSteps<E> extends StepStore<E> {}

/**
 * Why a run ended: `stop` — the model called no tools; `concluded` — a committed success
 * concluded the turn and no context was waiting; `max-steps` — the budget was spent while the
 * model still called tools; `aborted` — the `signal` aborted.
 *
 * @since 0.1.0
 * @category models
 */
export type StopReason = internal.StopReason

/**
 * One step: the model's text, its tool calls in model order (with their raw argument text, as
 * the durable `tool/call` records hold it), exactly one committed result per call, the contexts
 * the batch deferred, and what the model reported.
 *
 * @since 0.1.0
 * @category models
 */
export interface Step {
  /** 1-based. */
  readonly step: number
  readonly text: string
  readonly calls: ReadonlyArray<ModelToolCall>
  readonly results: ReadonlyArray<CommittedResult>
  readonly contexts: ReadonlyArray<UserMessage>
  readonly concluded: boolean
  readonly aborted: boolean
  readonly finishReason: Response.FinishReason
  readonly usage: Response.Usage
}

/**
 * What a run returns.
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary {
  /** The last step's text. */
  readonly text: string
  readonly steps: ReadonlyArray<Step>
  readonly stopReason: StopReason
  /** Token counts summed over the steps (a count no step reported stays `undefined`). */
  readonly usage: Response.Usage
  /** The conversation: the input prompt, then every step's messages. */
  readonly prompt: Prompt.Prompt
  /**
   * Contexts deferred by the last batch that no model request carried yet (the run stopped):
   * append them with {@link contextsPrompt} before the conversation continues.
   */
  readonly pending: ReadonlyArray<UserMessage>
}

/**
 * What {@link stream} emits, in this order per step: `StepStarted`, the model's stream parts
 * (`ModelPart`: text and reasoning deltas, the finish part, …), one `ToolCall` per call once the
 * model's message is complete, a `Committed` per result as the scheduler commits it, `StepEnded`;
 * after the last step, `Finished`. A step whose model request the `signal` cut short has no
 * `StepEnded`.
 *
 * @since 0.1.0
 * @category models
 */
export type Event =
  | { readonly _tag: "StepStarted"; readonly step: number }
  | { readonly _tag: "ModelPart"; readonly step: number; readonly part: Response.StreamPart<{}> }
  | { readonly _tag: "ToolCall"; readonly step: number; readonly index: number; readonly call: ModelToolCall }
  | { readonly _tag: "Committed"; readonly step: number; readonly commit: CommitEvent }
  | { readonly _tag: "StepEnded"; readonly step: Step }
  | { readonly _tag: "Finished"; readonly summary: Summary }

/**
 * What a run can fail with: the model's error, the durable log's (the batch drained first), or
 * a Code Mode agent without a usable code runtime.
 *
 * @since 0.1.0
 * @category errors
 */
export type LoopError = AiError.AiError | SchedulerError | CodeModeError

/**
 * The services a run needs.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements = LanguageModel.LanguageModel | ToolRuntime | ToolRegistry | ToolCallLog

/**
 * Runs the loop with `generateText`.
 *
 * **Details**
 *
 * - Each step assembles the agent's tools afresh (the wire schemas of `CodeMode.assembly`: every
 *   visible tool, or only `run_code` under Code Mode), with each tool's JSON Schema passed to the
 *   provider unchanged, and asks the model with `disableToolCallResolution`: `@effect/ai` never
 *   runs a tool.
 * - The message's tool calls (provider-executed ones aside) run as one `Scheduler.runBatch`. A
 *   call to a name the model was not offered still reaches the scheduler (its result is
 *   `UNKNOWN_TOOL`); arguments that are not JSON reach it as they are and fail validation there.
 * - The next request carries the model's message, one tool message with a tool-result part per
 *   call in model order (`result` is the content rendered for the model), then each deferred
 *   context as a user message.
 * - Interrupting the run interrupts the model request or the batch; the batch drains (every
 *   started body ends, every call gets its record) before the interruption completes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run: <E = never>(options: Options<E>) => Effect.Effect<Summary, LoopError | E, Requirements> = Effect
  .fn("AgentLoop.run")(function*<E>(options: Options<E>) {
    const settings = internal.readSettings(options)
    if (!("agent" in settings)) return yield* Effect.die(settings)
    return yield* internal.loop(settings as internal.Settings<E>, internal.generate, undefined)
  })

/**
 * The loop over `streamText`, as a stream of {@link Event}s (the same steps and stop rules as
 * {@link run}). The argument text the provider streams for a call is what the scheduler gets.
 * Ending the stream early interrupts the run.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stream = <E = never>(options: Options<E>): Stream.Stream<Event, LoopError | E, Requirements> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const settings = internal.readSettings(options)
    if (!("agent" in settings)) return yield* Effect.die(settings)
    const queue = yield* Queue.unbounded<Take.Take<Event, LoopError | E>>()
    const emit = (event: Event): Effect.Effect<void> => Queue.offer(queue, Take.of(event))
    yield* internal.loop(settings as internal.Settings<E>, internal.streamModel, emit).pipe(
      Effect.matchCauseEffect({
        onSuccess: () => Queue.offer(queue, Take.end),
        onFailure: (cause) => Queue.offer(queue, Take.failCause(cause))
      }),
      Effect.forkScoped
    )
    return Stream.flattenTake(Stream.fromQueue(queue))
  }))

/**
 * The user messages a model request carries for deferred contexts, in order: text and
 * reasoning blocks as text parts, images as file parts.
 *
 * @since 0.1.0
 * @category constructors
 */
export const contextsPrompt = (contexts: ReadonlyArray<UserMessage>): Prompt.Prompt =>
  prompts.contextsPrompt(contexts)
