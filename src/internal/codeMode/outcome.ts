/**
 * What a `run_code` body ends with (PTC-2, PTC-14): the lane's failure, else the code runtime's
 * exit, its result read field by field (anything unexpected is malformed), else the canonical
 * `run_code` value.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { CodeRunResult } from "../../CodeRuntime.js"
import type { JsonValue } from "../../Json.js"
import { CodeRunFailedError, Codes, HarnessError } from "../../ToolError.js"
import { type CodeRun, LOG_FAILED_REASON } from "./codeRun.js"

/** The canonical `run_code` value (PTC-2). @internal */
export interface RunCodeOutput {
  readonly logs: ReadonlyArray<string>
  readonly result?: JsonValue
}

type Read =
  | { readonly _tag: "Ok"; readonly logs: ReadonlyArray<string>; readonly hasValue: boolean; readonly value: unknown }
  | { readonly _tag: "Failed"; readonly kind: string; readonly message: string; readonly logs: ReadonlyArray<string> }
  | { readonly _tag: "Malformed" }

const MALFORMED_RESULT = "the code runtime returned a malformed result"

const readLogs = (logs: unknown): ReadonlyArray<string> | undefined => {
  if (!Array.isArray(logs)) return undefined
  const length = logs.length
  const out: Array<string> = []
  for (let i = 0; i < length; i++) {
    const line: unknown = logs[i]
    if (typeof line !== "string") return undefined
    out.push(line)
  }
  return out
}

/** The runtime's result, each field read once; anything unexpected is malformed. Total. */
const readResult = (raw: unknown): Read => {
  try {
    if (typeof raw !== "object" || raw === null) return { _tag: "Malformed" }
    const record = raw as CodeRunResult
    const rawLogs: unknown = record.logs
    const error: unknown = record.error
    const value: unknown = record.value
    const logs = readLogs(rawLogs)
    if (logs === undefined) return { _tag: "Malformed" }
    if (error === undefined) return { _tag: "Ok", logs, hasValue: value !== undefined, value }
    if (typeof error !== "object" || error === null) return { _tag: "Malformed" }
    const failure = error as { readonly kind?: unknown; readonly message?: unknown }
    const kind = failure.kind
    const message = failure.message
    if (typeof kind !== "string" || typeof message !== "string") return { _tag: "Malformed" }
    return { _tag: "Failed", kind, message, logs }
  } catch {
    return { _tag: "Malformed" }
  }
}

/** @internal */
export const plainError = (message: string): Effect.Effect<never, Error> => Effect.fail(new Error(message))

/** A durable batch stopped this run to wait for an approval: the run resumes from its journal. @internal */
export const SUSPENDED_REASON = "run_code was suspended until an approval is answered"

/**
 * PTC-14: what the body ends with once the program and the lane have both ended.
 *
 * @internal
 */
export const conclude = (run: CodeRun, exit: Exit.Exit<CodeRunResult, unknown>): Effect.Effect<RunCodeOutput, unknown> => {
  if (run.diverged !== undefined) {
    return Effect.fail(new HarnessError({ message: run.diverged, code: Codes.CODE_REPLAY_DIVERGED }))
  }
  const failure = run.failure
  if (failure !== undefined) {
    switch (failure._tag) {
      case "Log":
        return plainError(`${LOG_FAILED_REASON}: ${failure.error.message}`)
      case "Defect":
        return Effect.failCause(failure.cause)
      case "Suspend":
        return plainError(SUSPENDED_REASON)
    }
  }
  if (Exit.isFailure(exit)) {
    return Cause.isInterruptedOnly(exit.cause)
      ? plainError("the code runtime was interrupted")
      : Effect.failCause(exit.cause)
  }
  const read = readResult(exit.value)
  switch (read._tag) {
    case "Malformed":
      return plainError(MALFORMED_RESULT)
    case "Failed":
      return Effect.fail(new CodeRunFailedError({ kind: read.kind, detail: read.message, logs: read.logs }))
    case "Ok":
      return Effect.succeed(
        read.hasValue ? { logs: read.logs, result: read.value as JsonValue } : { logs: read.logs }
      )
  }
}
