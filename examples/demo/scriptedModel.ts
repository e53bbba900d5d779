/**
 * A scripted `LanguageModel` (built with `LanguageModel.make`, no network): each request gets the
 * next canned turn — some text, some tool calls with their raw argument text, a usage count.
 * `generateText` returns the calls with parsed params (text that is not JSON is passed on as
 * the string itself, as a provider that does not parse would); `streamText` streams the text as
 * deltas and each call's argument text as `tool-params-*` parts before the call.
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"

export interface ScriptedCall {
  readonly id: string
  readonly name: string
  /** The raw argument text, exactly as a provider would stream it. */
  readonly arguments: string
}

export interface ScriptedTurn {
  readonly text?: string | undefined
  readonly calls?: ReadonlyArray<ScriptedCall> | undefined
  /** Overrides the params a call carries in `generateText` (by call id): any value, even hostile. */
  readonly params?: Readonly<Record<string, unknown>> | undefined
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number } | undefined
}

/** A canned turn, or one computed when the request arrives (it may wait on a gate). */
export type ScriptEntry = ScriptedTurn | ((request: LanguageModel.ProviderOptions) => Effect.Effect<ScriptedTurn>)

export interface ScriptedModel {
  readonly layer: Layer.Layer<LanguageModel.LanguageModel>
  /** Every request the model received, in order. */
  readonly requests: ReadonlyArray<LanguageModel.ProviderOptions>
}

const paramsOf = (raw: string): unknown => {
  if (raw === "") return {}
  try {
    return JSON.parse(raw)
  } catch {
    return raw
  }
}

const usageOf = (turn: ScriptedTurn) => {
  const input = turn.usage?.inputTokens ?? 10
  const output = turn.usage?.outputTokens ?? 5
  return { inputTokens: input, outputTokens: output, totalTokens: input + output }
}

const finishOf = (turn: ScriptedTurn): Response.FinishPartEncoded => ({
  type: "finish",
  reason: (turn.calls?.length ?? 0) > 0 ? "tool-calls" : "stop",
  usage: usageOf(turn)
})

const callParams = (turn: ScriptedTurn, call: ScriptedCall): unknown =>
  turn.params !== undefined && Object.hasOwn(turn.params, call.id) ? turn.params[call.id] : paramsOf(call.arguments)

const generatedParts = (turn: ScriptedTurn): Array<Response.PartEncoded> => {
  const parts: Array<Response.PartEncoded> = []
  if (turn.text !== undefined) parts.push({ type: "text", text: turn.text })
  for (const call of turn.calls ?? []) {
    parts.push({ type: "tool-call", id: call.id, name: call.name, params: callParams(turn, call) })
  }
  parts.push(finishOf(turn))
  return parts
}

const streamedParts = (turn: ScriptedTurn): Array<Response.StreamPartEncoded> => {
  const parts: Array<Response.StreamPartEncoded> = []
  if (turn.text !== undefined) {
    parts.push({ type: "text-start", id: "text-1" })
    for (const word of turn.text.split(/(?<= )/)) parts.push({ type: "text-delta", id: "text-1", delta: word })
    parts.push({ type: "text-end", id: "text-1" })
  }
  for (const call of turn.calls ?? []) {
    parts.push({ type: "tool-params-start", id: call.id, name: call.name })
    if (call.arguments !== "") parts.push({ type: "tool-params-delta", id: call.id, delta: call.arguments })
    parts.push({ type: "tool-params-end", id: call.id })
    parts.push({ type: "tool-call", id: call.id, name: call.name, params: callParams(turn, call) })
  }
  parts.push(finishOf(turn))
  return parts
}

/** A model that answers request n with `script[n]`; a request past the end fails with `UnknownError`. */
export const make = (script: ReadonlyArray<ScriptEntry>): ScriptedModel => {
  const requests: Array<LanguageModel.ProviderOptions> = []
  const next = (request: LanguageModel.ProviderOptions, method: string): Effect.Effect<ScriptedTurn, AiError.AiError> =>
    Effect.suspend(() => {
      const entry = script[requests.length]
      requests.push(request)
      if (entry === undefined) {
        return Effect.fail(
          new AiError.UnknownError({ module: "ScriptedModel", method, description: "the script has no more turns" })
        )
      }
      return typeof entry === "function" ? entry(request) : Effect.succeed(entry)
    })
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (request) => Effect.map(next(request, "generateText"), generatedParts),
      streamText: (request) =>
        Stream.unwrap(Effect.map(next(request, "streamText"), (turn) => Stream.fromIterable(streamedParts(turn))))
    })
  )
  return { layer, requests }
}
