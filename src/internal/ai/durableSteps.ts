/**
 * A durable agent loop's steps (D-22): each model step's message recorded as JSON text (its
 * response parts through `@effect/ai`'s own part schemas), so that a turn run again replays the
 * steps already answered instead of calling the model; and each step's calls run by the durable
 * batch the caller's store provides.
 *
 * @internal
 */
import * as Response from "@effect/ai/Response"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { StepStore } from "../durable/contracts.js"
import { toolkitOf } from "./agentLoopTools.js"

/** A durable agent loop's store of steps. @internal */
export type DurableSteps<E> = StepStore<E>

/** A model message as the loop keeps it: its parts, and the raw argument text of streamed calls. @internal */
export interface Message {
  readonly parts: ReadonlyArray<Response.AnyPart>
  readonly streamed: ReadonlyMap<string, string>
}

/** The parts schema for the tool names a message calls (their parameters are kept as they are). */
const partsSchema = (names: ReadonlySet<string>) =>
  Schema.Array(
    Response.AllParts(toolkitOf([...names].map((name) => ({ name, description: "", parameters: { type: "object" } }))))
  )

const namesOf = (parts: ReadonlyArray<{ readonly type?: unknown; readonly name?: unknown }>): Set<string> => {
  const names = new Set<string>()
  for (const part of parts) {
    if ((part.type === "tool-call" || part.type === "tool-result") && typeof part.name === "string") names.add(part.name)
  }
  return names
}

/** The message as JSON text; `undefined` when a part cannot be encoded. @internal */
export const encodeMessage = (message: Message): string | undefined => {
  const encoded = Schema.encodeEither(partsSchema(namesOf(message.parts as never)))(message.parts as never)
  if (Either.isLeft(encoded)) return undefined
  return JSON.stringify({ parts: encoded.right, streamed: [...message.streamed] })
}

/** A recorded message read back; `undefined` when the text cannot be decoded. @internal */
export const decodeMessage = (text: string): Message | undefined => {
  try {
    const value = JSON.parse(text) as { readonly parts?: unknown; readonly streamed?: unknown }
    if (!Array.isArray(value.parts) || !Array.isArray(value.streamed)) return undefined
    const decoded = Schema.decodeUnknownEither(partsSchema(namesOf(value.parts)))(value.parts)
    if (Either.isLeft(decoded)) return undefined
    const streamed = new Map<string, string>()
    for (const entry of value.streamed as ReadonlyArray<unknown>) {
      if (!Array.isArray(entry) || typeof entry[0] !== "string" || typeof entry[1] !== "string") return undefined
      streamed.set(entry[0], entry[1])
    }
    return { parts: decoded.right as ReadonlyArray<Response.AnyPart>, streamed }
  } catch {
    return undefined
  }
}
