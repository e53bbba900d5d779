/**
 * The step loop: assemble the agent's tools, ask the model, run the message's tool calls as one
 * scheduler batch, append results and contexts in model order, repeat until a stop condition.
 *
 * @internal
 */
import type * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Response from "@effect/ai/Response"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as CodeMode from "../../CodeMode.js"
import type { UserMessage } from "../../Content.js"
import type { AgentId } from "../../Execution.js"
import * as Scheduler from "../../Scheduler.js"
import type { ToolCallLog } from "../../ToolCallLog.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import type { RegistryView } from "../../ToolRegistry.js"
import type { ToolResult } from "../../ToolResult.js"
import type { ToolRuntime } from "../../ToolRuntime.js"
import * as prompts from "./agentLoopPrompt.js"
import * as tools from "./agentLoopTools.js"
import { decodeMessage, type DurableSteps, encodeMessage } from "./durableSteps.js"

/** @internal */
export const DEFAULT_MAX_STEPS = 10

/** @internal */
export const MAX_STEPS_MESSAGE = "maxSteps must be a positive integer"

/** @internal */
export type StopReason = "stop" | "concluded" | "max-steps" | "aborted"

/** @internal */
export type ToolChoice = "auto" | "none" | "required"

/** @internal */
export interface StepRecord {
  readonly step: number
  readonly text: string
  readonly calls: ReadonlyArray<Scheduler.ModelToolCall>
  readonly results: ReadonlyArray<Scheduler.CommittedResult>
  readonly contexts: ReadonlyArray<UserMessage>
  readonly concluded: boolean
  readonly aborted: boolean
  readonly finishReason: Response.FinishReason
  readonly usage: Response.Usage
}

/** @internal */
export interface SummaryRecord {
  readonly text: string
  readonly steps: ReadonlyArray<StepRecord>
  readonly stopReason: StopReason
  readonly usage: Response.Usage
  readonly prompt: Prompt.Prompt
  readonly pending: ReadonlyArray<UserMessage>
}

/** A stream part without the tool-call and tool-result parts (those have events of their own). */
export type ModelStreamPart = Response.StreamPart<{}>

/** @internal */
export type LoopEvent =
  | { readonly _tag: "StepStarted"; readonly step: number }
  | { readonly _tag: "ModelPart"; readonly step: number; readonly part: ModelStreamPart }
  | { readonly _tag: "ToolCall"; readonly step: number; readonly index: number; readonly call: Scheduler.ModelToolCall }
  | { readonly _tag: "Committed"; readonly step: number; readonly commit: Scheduler.CommitEvent }
  | { readonly _tag: "StepEnded"; readonly step: StepRecord }
  | { readonly _tag: "Finished"; readonly summary: SummaryRecord }

/** @internal */
export interface Settings<E = never> {
  readonly agent: AgentId
  readonly prompt: Prompt.Prompt
  readonly maxSteps: number
  readonly maxParallel: number | undefined
  readonly signal: AbortSignal | undefined
  readonly toolChoice: ToolChoice | undefined
  readonly batchId: ((step: number) => string) | undefined
  readonly durable: DurableSteps<E> | undefined
}

const illegal = (message: string) => new Cause.IllegalArgumentException(message)

const readOption = (options: object, key: string): unknown => {
  try {
    return (options as Record<string, unknown>)[key]
  } catch {
    throw illegal(`AgentLoop could not read option "${key}"`)
  }
}

/**
 * Reads every option once. A bad option is an `IllegalArgumentException` (a defect at the call).
 *
 * @internal
 */
const DURABLE_MESSAGE = "AgentLoop option \"durable\" must be the store of DurableTurn.loopSteps"

/** The durable store, each member read once. */
const readDurable = (value: unknown): DurableSteps<never> | undefined | Cause.IllegalArgumentException => {
  if (value === undefined) return undefined
  if (typeof value !== "object" || value === null) return illegal(DURABLE_MESSAGE)
  const model = readOption(value, "model")
  const recordModel = readOption(value, "recordModel")
  const runBatch = readOption(value, "runBatch")
  if (typeof model !== "function" || typeof recordModel !== "function" || typeof runBatch !== "function") {
    return illegal(DURABLE_MESSAGE)
  }
  return {
    model: (step) => Effect.suspend(() => model(step)),
    recordModel: (step, message) => Effect.suspend(() => recordModel(step, message)),
    runBatch: (step, calls, options) => Effect.suspend(() => runBatch(step, calls, options))
  } as DurableSteps<never>
}

export const readSettings = (options: unknown): Settings<never> | Cause.IllegalArgumentException => {
  if (typeof options !== "object" || options === null) return illegal("AgentLoop options must be an object")
  try {
    const agent = readOption(options, "agent")
    if (typeof agent !== "string") return illegal("AgentLoop option \"agent\" must be a string")
    const rawPrompt = readOption(options, "prompt")
    let prompt: Prompt.Prompt
    try {
      prompt = Prompt.make(rawPrompt as Prompt.RawInput)
    } catch {
      return illegal("AgentLoop option \"prompt\" must be a Prompt, a string or an iterable of messages")
    }
    const maxSteps = readOption(options, "maxSteps")
    if (maxSteps !== undefined && !(typeof maxSteps === "number" && Number.isInteger(maxSteps) && maxSteps > 0)) {
      return illegal(MAX_STEPS_MESSAGE)
    }
    const maxParallel = readOption(options, "maxParallel")
    if (maxParallel !== undefined && !Scheduler.isValidMaxParallel(maxParallel)) {
      return illegal(Scheduler.MAX_PARALLEL_MESSAGE)
    }
    const signal = readOption(options, "signal")
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      return illegal("AgentLoop option \"signal\" must be an AbortSignal")
    }
    const toolChoice = readOption(options, "toolChoice")
    if (toolChoice !== undefined && toolChoice !== "auto" && toolChoice !== "none" && toolChoice !== "required") {
      return illegal("AgentLoop option \"toolChoice\" must be \"auto\", \"none\" or \"required\"")
    }
    const batchId = readOption(options, "batchId")
    if (batchId !== undefined && typeof batchId !== "function") {
      return illegal("AgentLoop option \"batchId\" must be a function of the step number")
    }
    const durable = readDurable(readOption(options, "durable"))
    if (durable instanceof Cause.IllegalArgumentException) return durable
    return {
      agent,
      prompt,
      maxSteps: maxSteps ?? DEFAULT_MAX_STEPS,
      maxParallel,
      signal,
      toolChoice,
      batchId: batchId as ((step: number) => string) | undefined,
      durable
    }
  } catch (error) {
    return error instanceof Cause.IllegalArgumentException ? error : illegal("AgentLoop options could not be read")
  }
}

/** What one model request gave: its parts, and the streamed argument text per call id. */
interface ModelMessage {
  readonly parts: ReadonlyArray<Response.AnyPart>
  readonly streamed: ReadonlyMap<string, string>
}

type Emit = (event: LoopEvent) => Effect.Effect<void>

type AskModel = (
  prompt: Prompt.Prompt,
  toolkit: tools.WireToolkit,
  settings: Settings<unknown>,
  step: number,
  emit: Emit | undefined
) => Effect.Effect<ModelMessage, AiError.AiError, LanguageModel.LanguageModel>

const batchIdOf = (make: (step: number) => string, step: number): string => {
  let id: unknown
  try {
    id = make(step)
  } catch {
    throw illegal("AgentLoop option \"batchId\" threw")
  }
  if (typeof id !== "string") throw illegal("AgentLoop option \"batchId\" must return a string")
  return id
}

const noStream: ReadonlyMap<string, string> = new Map()

/** @internal */
export const generate: AskModel = (prompt, toolkit, settings) =>
  LanguageModel.generateText({
    prompt,
    toolkit,
    disableToolCallResolution: true,
    ...(settings.toolChoice === undefined ? {} : { toolChoice: settings.toolChoice })
  }).pipe(
    Effect.map((response): ModelMessage => ({ parts: response.content, streamed: noStream })),
    Effect.catchAll((error) =>
      Option.match(tools.recoverResponse(error, false), {
        onNone: () => Effect.fail(error),
        onSome: (parts): Effect.Effect<ModelMessage> => Effect.succeed({ parts, streamed: noStream })
      })
    )
  )

const isModelPart = (part: Response.AnyPart): part is ModelStreamPart =>
  part.type !== "tool-call" && part.type !== "tool-result" && part.type !== "text" && part.type !== "reasoning"

/** @internal */
export const streamModel: AskModel = (prompt, toolkit, settings, step, emit) =>
  Effect.suspend(() => {
    const parts: Array<Response.AnyPart> = []
    const streamed = new Map<string, string>()
    const onPart = (part: Response.AnyPart): Effect.Effect<void> => {
      parts.push(part)
      if (part.type === "tool-params-start") streamed.set(part.id, "")
      else if (part.type === "tool-params-delta") {
        const sofar = streamed.get(part.id)
        if (sofar !== undefined) streamed.set(part.id, sofar + part.delta)
      }
      return emit !== undefined && isModelPart(part) ? emit({ _tag: "ModelPart", step, part }) : Effect.void
    }
    return LanguageModel.streamText({
      prompt,
      toolkit,
      disableToolCallResolution: true,
      ...(settings.toolChoice === undefined ? {} : { toolChoice: settings.toolChoice })
    }).pipe(
      Stream.catchAll((error): Stream.Stream<Response.AnyPart, AiError.AiError> =>
        Option.match(tools.recoverResponse(error, true), {
          onNone: () => Stream.fail(error),
          onSome: (recovered) => Stream.fromIterable(recovered)
        })
      ),
      Stream.runForEach(onPart),
      Effect.as<ModelMessage>({ parts, streamed })
    )
  })

/**
 * A durable step's model message: the recorded one (its parts emitted again, nothing asked), or
 * the model's answer, recorded (when another run recorded the step first, that recording wins).
 */
const askDurably = <E>(
  durable: DurableSteps<E>,
  asked: Effect.Effect<ModelMessage, AiError.AiError, LanguageModel.LanguageModel>,
  step: number,
  emit: Emit | undefined
): Effect.Effect<ModelMessage, AiError.AiError | E, LanguageModel.LanguageModel> =>
  Effect.flatMap(durable.model(step), (recorded) => {
    if (recorded !== undefined) {
      const message = decodeMessage(recorded)
      if (message === undefined) {
        return Effect.dieMessage(`AgentLoop: the recorded model message of step ${step} could not be read`)
      }
      if (emit === undefined) return Effect.succeed(message)
      return Effect.as(
        Effect.forEach(message.parts, (part) => isModelPart(part) ? emit({ _tag: "ModelPart", step, part }) : Effect.void, {
          discard: true
        }),
        message
      )
    }
    return Effect.flatMap(asked, (message) => {
      const text = encodeMessage(message)
      if (text === undefined) return Effect.succeed(message)
      return Effect.map(durable.recordModel(step, text), (stored) => stored === text ? message : decodeMessage(stored) ?? message)
    })
  })

const abortedWait = (signal: AbortSignal): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (signal.aborted) return resume(Effect.void)
    const listener = () => resume(Effect.void)
    signal.addEventListener("abort", listener, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", listener))
  })

const emptyUsage = new Response.Usage({ inputTokens: undefined, outputTokens: undefined, totalTokens: undefined })

const addTokens = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : a + b

const addUsage = (a: Response.Usage, b: Response.Usage): Response.Usage => {
  const reasoningTokens = addTokens(a.reasoningTokens, b.reasoningTokens)
  const cachedInputTokens = addTokens(a.cachedInputTokens, b.cachedInputTokens)
  return new Response.Usage({
    inputTokens: addTokens(a.inputTokens, b.inputTokens),
    outputTokens: addTokens(a.outputTokens, b.outputTokens),
    totalTokens: addTokens(a.totalTokens, b.totalTokens),
    ...(reasoningTokens === undefined ? {} : { reasoningTokens }),
    ...(cachedInputTokens === undefined ? {} : { cachedInputTokens })
  })
}

const textOf = (parts: ReadonlyArray<Response.AnyPart>): string => {
  let text = ""
  for (const part of parts) {
    if (part.type === "text") text += part.text
    else if (part.type === "text-delta") text += part.delta
  }
  return text
}

const finishOf = (parts: ReadonlyArray<Response.AnyPart>): Response.FinishPart | undefined => {
  for (const part of parts) if (part.type === "finish") return part
  return undefined
}

const callsOf = (message: ModelMessage): Array<Scheduler.ModelToolCall> => {
  const calls: Array<Scheduler.ModelToolCall> = []
  for (const part of message.parts) {
    if (part.type !== "tool-call" || part.providerExecuted === true) continue
    calls.push(tools.toModelCall(
      { id: part.id, name: part.name, params: part.params, providerExecuted: false },
      message.streamed.get(part.id)
    ))
  }
  return calls
}

/** @internal */
export type LoopError = AiError.AiError | Scheduler.SchedulerError | CodeMode.CodeModeError

/** @internal */
export type LoopContext = LanguageModel.LanguageModel | ToolRuntime | ToolRegistry | ToolCallLog

/**
 * The loop. `emit` (the streaming variant's sink) is called inline, in event order.
 *
 * @internal
 */
export const loop = <E = never>(
  settings: Settings<E>,
  ask: AskModel,
  emit: Emit | undefined
): Effect.Effect<SummaryRecord, LoopError | E, LoopContext> =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry
    const { agent, signal } = settings
    const say = emit ?? (() => Effect.void)
    const steps: Array<StepRecord> = []
    let prompt = settings.prompt
    let usage = emptyUsage
    let lastView: RegistryView | undefined
    let toolkit: tools.WireToolkit | undefined

    const finish = (stopReason: StopReason, pending: ReadonlyArray<UserMessage>) =>
      Effect.gen(function*() {
        const last = steps.length === 0 ? undefined : steps[steps.length - 1]
        const summary: SummaryRecord = {
          text: last === undefined ? "" : last.text,
          steps,
          stopReason,
          usage,
          prompt,
          pending
        }
        yield* say({ _tag: "Finished", summary })
        return summary
      })

    for (let step = 1;; step++) {
      if (signal?.aborted === true) return yield* finish("aborted", [])
      yield* say({ _tag: "StepStarted", step })
      const view = registry.unsafeView(agent)
      if (view !== lastView || toolkit === undefined) {
        toolkit = tools.toolkitOf((yield* CodeMode.assembly(agent)).schemas)
        lastView = view
      }
      const asked = settings.durable === undefined
        ? ask(prompt, toolkit, settings, step, emit)
        : askDurably(settings.durable, ask(prompt, toolkit, settings, step, emit), step, emit)
      const answer = signal === undefined
        ? yield* Effect.map(asked, Option.some)
        : yield* Effect.raceFirst(Effect.map(asked, Option.some), Effect.as(abortedWait(signal), Option.none()))
      if (Option.isNone(answer)) return yield* finish("aborted", [])
      const message = answer.value
      const calls = callsOf(message)
      for (let index = 0; index < calls.length; index++) {
        yield* say({ _tag: "ToolCall", step, index, call: calls[index]! })
      }
      const finishPart = finishOf(message.parts)
      const stepUsage = finishPart?.usage ?? emptyUsage
      usage = addUsage(usage, stepUsage)
      const base = {
        step,
        text: textOf(message.parts),
        calls,
        finishReason: finishPart?.reason ?? "unknown",
        usage: stepUsage
      }
      if (calls.length === 0) {
        const record: StepRecord = { ...base, results: [], contexts: [], concluded: false, aborted: false }
        steps.push(record)
        prompt = Prompt.merge(prompt, prompts.stepMessages(message.parts, [], []))
        yield* say({ _tag: "StepEnded", step: record })
        return yield* finish("stop", [])
      }
      const batchOptions = {
        agent,
        ...(settings.maxParallel === undefined ? {} : { maxParallel: settings.maxParallel }),
        ...(signal === undefined ? {} : { signal }),
        ...(emit === undefined ? {} : { onCommit: (commit: Scheduler.CommitEvent) => emit({ _tag: "Committed", step, commit }) })
      }
      const batch = settings.durable === undefined
        ? yield* Scheduler.runBatch(calls, {
          ...batchOptions,
          ...(settings.batchId === undefined ? {} : { batchId: batchIdOf(settings.batchId, step) })
        })
        : yield* settings.durable.runBatch(step, calls, batchOptions)
      const record: StepRecord = {
        ...base,
        results: batch.results,
        contexts: batch.contexts,
        concluded: batch.concluded,
        aborted: batch.aborted
      }
      steps.push(record)
      const pairs = batch.results.map((r): readonly [Scheduler.ModelToolCall, ToolResult] => [calls[r.index]!, r.result])
      yield* say({ _tag: "StepEnded", step: record })
      const stop: StopReason | undefined = batch.aborted
        ? "aborted"
        : batch.concluded && batch.contexts.length === 0
        ? "concluded"
        : step >= settings.maxSteps
        ? "max-steps"
        : undefined
      if (stop !== undefined) {
        prompt = Prompt.merge(prompt, prompts.stepMessages(message.parts, pairs, []))
        return yield* finish(stop, batch.contexts)
      }
      prompt = Prompt.merge(prompt, prompts.stepMessages(message.parts, pairs, batch.contexts))
    }
  })
