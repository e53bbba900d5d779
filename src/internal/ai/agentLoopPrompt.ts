/**
 * What the loop appends to the prompt after a step: the model's own message, one tool message
 * with the committed results in model order, then the deferred contexts as user messages.
 *
 * @internal
 */
import * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import type { ContentBlock, UserMessage } from "../../Content.js"
import type { ModelToolCall } from "../../Scheduler.js"
import type { ToolResult } from "../../ToolResult.js"

const userPart = (block: ContentBlock): Prompt.UserMessagePart =>
  block.type === "image"
    ? Prompt.filePart({ mediaType: block.mimeType, data: block.data })
    : Prompt.textPart({ text: block.text })

/**
 * A deferred context as a user message: text and reasoning blocks become text parts, images
 * become file parts (base64 data, the block's MIME type).
 *
 * @internal
 */
export const contextMessage = (context: UserMessage): Prompt.UserMessage =>
  Prompt.userMessage({ content: context.content.map(userPart) })

/**
 * The tool-result part the model receives for one committed result: `result` is the content the
 * runtime rendered for the model (its blocks, unchanged), `isFailure` the result's `isError`.
 *
 * @internal
 */
export const resultPart = (call: ModelToolCall, result: ToolResult): Prompt.ToolResultPart =>
  Prompt.toolResultPart({
    id: call.callId,
    name: call.name,
    isFailure: result.isError,
    result: result.content,
    providerExecuted: false
  })

/**
 * The messages of one step, in order: the assistant message (text, reasoning, tool calls), the
 * tool message (results in model order), then each delivered context.
 *
 * @internal
 */
export const stepMessages = (
  parts: ReadonlyArray<Response.AnyPart>,
  results: ReadonlyArray<readonly [ModelToolCall, ToolResult]>,
  contexts: ReadonlyArray<UserMessage>
): Prompt.Prompt => {
  const messages: Array<Prompt.Message> = [...Prompt.fromResponseParts(parts).content]
  if (results.length > 0) {
    messages.push(Prompt.toolMessage({ content: results.map(([call, result]) => resultPart(call, result)) }))
  }
  for (const context of contexts) messages.push(contextMessage(context))
  return Prompt.fromMessages(messages)
}

/**
 * Deferred contexts as a prompt of user messages, in order.
 *
 * @internal
 */
export const contextsPrompt = (contexts: ReadonlyArray<UserMessage>): Prompt.Prompt =>
  Prompt.fromMessages(contexts.map(contextMessage))
