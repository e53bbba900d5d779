/**
 * The host side of one binding call: the guest's JSON arguments parsed, the binding's Effect run,
 * and its exit turned into what the guest receives (JSON text of a lossless snapshot of the
 * value, or the failure's message). Total: a binding that throws, returns something other than
 * an Effect, dies or succeeds with a value that is not lossless JSON gives a failure message.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { Binding } from "../../../src/CodeRuntime.js"
import { snapshot } from "../../../src/internal/schema/json.js"
import type { CallOutcome } from "./session.js"

const malformed: CallOutcome = { ok: false, message: "malformed tool call" }

const messageOf = (failure: unknown): string => {
  try {
    const message = (failure as { readonly message?: unknown } | null)?.message
    if (typeof message === "string") return message
  } catch {
    // an unreadable failure falls through to the generic message
  }
  return "tool call failed"
}

/** @internal */
export const outcomeOf = (exit: Exit.Exit<unknown, unknown>): CallOutcome => {
  if (Exit.isSuccess(exit)) {
    const copy = snapshot(exit.value)
    if (copy._tag === "NotLossless") return { ok: false, message: "the tool result is not lossless JSON" }
    if (copy._tag === "Threw") return { ok: false, message: "the tool result could not be read" }
    try {
      return { ok: true, text: JSON.stringify(copy.value) }
    } catch {
      return { ok: false, message: "the tool result could not be serialized" }
    }
  }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) return { ok: false, message: messageOf(failure.value) }
  if (Cause.isInterruptedOnly(exit.cause)) return { ok: false, message: "the tool call was interrupted" }
  return { ok: false, message: "the tool call failed unexpectedly" }
}

/**
 * Runs `binding` on the JSON text `args`. Never fails.
 *
 * @internal
 */
export const callBinding = (binding: Binding, args: string): Effect.Effect<CallOutcome> =>
  Effect.suspend(() => {
    let value: unknown
    try {
      value = JSON.parse(args)
    } catch {
      return Effect.succeed(malformed)
    }
    return Effect.map(Effect.exit(Effect.suspend(() => binding(value))), outcomeOf)
  })
