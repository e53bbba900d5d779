/**
 * Post-execute (POST-1…9, D-1 projectContent, D-2, D-3) and finishing (FIN-1…4, OBS-1).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Content from "../../Content.js"
import type { UserMessage } from "../../Content.js"
import type { ToolExecution } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { PostDecision } from "../../Policy.js"
import type * as Registry from "../../ToolRegistry.js"
import { detailOfCause, InvalidContextError, ToolNotFoundError } from "../../ToolError.js"
import * as ToolResult from "../../ToolResult.js"
import {
  cancelled,
  concatContexts,
  describe,
  failWith,
  observed,
  type Result,
  type State,
  succeedNow,
  withContexts,
  withDeferred
} from "./execution.js"
import { createSuccess, materialize, type Outcome } from "./output.js"
import { callHook, waterfall } from "./waterfall.js"

const ACCEPT: PostDecision = Object.freeze({ _tag: "Accept" }) as PostDecision

// ---------------------------------------------------------------------------------------------
// Post-execute (POST-1…9, D-1 projectContent, D-2, D-3)
// ---------------------------------------------------------------------------------------------

const BLOCKED = "tool result blocked by post-execute policy"

const blockMessage = (feedback: Content.Content): string => {
  const message = feedback.map((block) => block.type === "text" ? block.text : `[${block.type} content]`).join("\n")
  return message === "" ? BLOCKED : message
}

const NOT_LOSSLESS = "tool result must be losslessly JSON-serializable"

const checkDecisionContexts = (
  state: State,
  contexts: unknown
): Outcome<ReadonlyArray<UserMessage>> => {
  if (contexts === undefined) return { ok: true, value: [] }
  const out: Array<UserMessage> = []
  try {
    if (!Array.isArray(contexts)) {
      return { ok: false, error: new TypeError("tools/post-execute additionalContexts must be an array") }
    }
    for (const context of contexts as ReadonlyArray<unknown>) {
      const checked = Content.checkUserMessage(context, state.runtime.ids.next)
      if (checked._tag === "Invalid") return { ok: false, error: new InvalidContextError({ reason: checked.reason }) }
      out.push(checked.value)
    }
  } catch (error) {
    return { ok: false, error }
  }
  return { ok: true, value: out }
}

/** Block feedback (ERR-3, D-3): lossless JSON first (T-POST-006), then content blocks. */
const checkFeedback = (feedback: unknown): Outcome<Content.Content> => {
  const snap = Json.snapshotFrozen(feedback)
  if (snap._tag === "Threw") return { ok: false, error: snap.error }
  if (snap._tag === "NotLossless") return { ok: false, error: new TypeError(NOT_LOSSLESS) }
  const content = Content.checkShape(snap.value)
  return content._tag === "Invalid"
    ? { ok: false, error: new TypeError(`tools/post-execute block feedback: ${content.reason}`) }
    : { ok: true, value: content.value }
}

const hasOwn = (o: object, key: string) => Object.prototype.hasOwnProperty.call(o, key)

/** A post decision with each field read exactly once (D-2: nothing validated can change after). */
interface PostRead {
  readonly tag: unknown
  readonly contexts: unknown
  readonly feedback: unknown
  readonly replacesContent: boolean
  readonly content: unknown
  readonly replacesValue: boolean
  readonly value: unknown
}

const readPost = (decision: object): Outcome<PostRead> => {
  try {
    const d = decision as {
      readonly _tag?: unknown
      readonly feedback?: unknown
      readonly content?: unknown
      readonly value?: unknown
      readonly additionalContexts?: unknown
    }
    const tag = d._tag
    const contexts = d.additionalContexts
    const feedback = tag === "Block" ? d.feedback : undefined
    const replacesContent = tag === "Accept" && hasOwn(d, "content")
    const content = replacesContent ? d.content : undefined
    const replacesValue = tag === "Accept" && hasOwn(d, "value")
    const value = replacesValue ? d.value : undefined
    return { ok: true, value: { tag, contexts, feedback, replacesContent, content, replacesValue, value } }
  } catch (error) {
    return { ok: false, error }
  }
}

const malformedPost = (decision: unknown): Outcome<never> => ({
  ok: false,
  error: new TypeError(`tools/post-execute returned a malformed decision: ${describe(decision)}`)
})

/** Applies a post decision; a failure is a pipeline error, final (POST-3/5/7). */
const applyDecision = (state: State, incoming: Result, decision: unknown): Outcome<Result> => {
  if (typeof decision !== "object" || decision === null) return malformedPost(decision)
  const read = readPost(decision)
  if (!read.ok) return read
  const d = read.value
  const contexts = checkDecisionContexts(state, d.contexts)
  if (!contexts.ok) return contexts
  if (d.tag === "Block") {
    const feedback = checkFeedback(d.feedback)
    if (!feedback.ok) return feedback
    const blocked: ToolResult.ToolFailure = {
      isError: true,
      error: { message: blockMessage(feedback.value) },
      content: feedback.value
    }
    return { ok: true, value: withContexts(blocked, contexts.value) }
  }
  if (d.tag !== "Accept") return malformedPost(decision)
  if (d.replacesContent && d.replacesValue) {
    return {
      ok: false,
      error: new TypeError("tools/post-execute accept decision cannot replace both value and content")
    }
  }
  let result = incoming
  if (d.replacesValue) {
    if (incoming.isError) {
      return { ok: false, error: new TypeError("tools/post-execute cannot replace the value of a failed result") }
    }
    const entry = state.runtime.registry.unsafeView(state.agent).resolve(state.name, state.hasParent)
    if (entry === undefined) return { ok: false, error: new ToolNotFoundError({ toolName: state.name }) }
    const success = createSuccess(entry, state.execution, d.value, state.concluded, state.runtime.marks)
    if (!success.ok) return success
    result = incoming.additionalContexts === undefined
      ? success.value
      : { ...success.value, additionalContexts: incoming.additionalContexts }
  } else if (d.replacesContent && d.content !== undefined) {
    const content = Content.check(d.content)
    if (content._tag === "Invalid") {
      return { ok: false, error: new TypeError(`tools/post-execute accept content: ${content.reason}`) }
    }
    result = { ...incoming, content: content.value }
  }
  if (contexts.value.length > 0) {
    const merged = concatContexts(contexts.value, result.additionalContexts, true)
    if (merged !== undefined) result = withContexts(result, merged)
  }
  return { ok: true, value: result }
}

const project = (state: State, result: Result): Outcome<Result> => {
  const projector = state.projector
  if (projector === undefined) return { ok: true, value: result }
  let out: unknown
  try {
    out = projector(state.execution, result)
  } catch (error) {
    return { ok: false, error }
  }
  if (out === undefined) return { ok: true, value: result }
  const content = Content.check(out)
  if (content._tag === "Invalid") return { ok: false, error: new TypeError(`projectContent: ${content.reason}`) }
  return { ok: true, value: Json.deepFreeze({ ...result, content: content.value }) }
}

const afterPost = (state: State, result: Result, decision: unknown): Effect.Effect<Result> => {
  const applied = decision === ACCEPT ? { ok: true as const, value: result } : applyDecision(state, result, decision)
  if (!applied.ok) return finishIn(state, withDeferred(state, failWith(applied.error)))
  const outcome = applied.value
  return finishIn(state, state.caller.aborted && !outcome.isError ? cancelled(state, outcome) : outcome)
}

/** @internal */
export const finalizeIn = (state: State, incoming: Result): Effect.Effect<Result> => {
  const projected = project(state, incoming)
  if (!projected.ok) return finishIn(state, withDeferred(state, failWith(projected.error)))
  const result = projected.value
  const hooks = state.runtime.registry.unsafeView(state.agent).postExecute
  if (hooks.length === 0) return afterPost(state, result, ACCEPT)
  const execution = state.execution
  return Effect.flatMap(
    Effect.exit(observed(
      state,
      "post-execute",
      waterfall("tools/post-execute", hooks, Effect.succeed(ACCEPT), (hook, next) => hook(execution, result, next))
    )),
    (exit) =>
      Exit.isFailure(exit)
        ? finishIn(state, withDeferred(state, ToolResult.failure(detailOfCause(exit.cause))))
        : afterPost(state, result, exit.value)
  )
}

// ---------------------------------------------------------------------------------------------
// Finishing (FIN-1…4, OBS-1)
// ---------------------------------------------------------------------------------------------

const materialized = (state: State, candidate: unknown): Result => {
  const { marks, ids } = state.runtime
  const first = materialize(candidate, marks, ids.next)
  if (first.ok) return first.value
  const fallback = materialize(withDeferred(state, failWith(first.error)), marks, ids.next)
  return fallback.ok ? fallback.value : Json.deepFreeze(failWith(first.error))
}

const notifyObserver = (
  execution: ToolExecution,
  result: Result,
  observer: Registry.RegistryView["observers"][number]
): Effect.Effect<void> =>
  Effect.flatMap(Effect.exit(callHook<void>("tools/result", () => observer(execution, result))), (exit) =>
    Exit.isSuccess(exit) ? Effect.void : Effect.logWarning(
      `tool "${execution.name}" (${execution.callId}): tools/result observer failed: ${
        detailOfCause(exit.cause).message
      }`
    ))

/** @internal */
export const finishIn = (state: State, candidate: Result): Effect.Effect<Result> => {
  if (state.finished !== undefined) return succeedNow(state.finished)
  const probe = state.probe
  if (probe === undefined) return finishNow(state, candidate)
  return Effect.tap(probe.stage("finish", Effect.suspend(() => finishNow(state, candidate))), (result) =>
    probe.end(result, { denied: state.denied }))
}

const finishNow = (state: State, candidate: Result): Effect.Effect<Result> => {
  if (state.finished !== undefined) return succeedNow(state.finished)
  const result = settleFinish(state, candidate)
  const observers = state.runtime.registry.unsafeView(state.agent).observers
  if (observers.length === 0) return succeedNow(result)
  const execution = state.execution
  return Effect.as(
    Effect.forEach(observers, (observer) => notifyObserver(execution, result, observer), { discard: true }),
    result
  )
}

/** FIN-1…3: materialize, then the finalizer once; the call is finished. */
const settleFinish = (state: State, candidate: Result): Result => {
  let result = materialized(state, candidate)
  const finalizer = state.finalizer
  if (finalizer !== undefined) {
    try {
      const content = finalizer(state.execution, result)
      if (content !== undefined) result = materialized(state, { ...result, content })
    } catch (error) {
      result = materialized(state, withDeferred(state, failWith(error)))
    }
  }
  state.finished = result
  state.caller.detach()
  return result
}

/**
 * Post-execute (when `post`) and finishing, synchronously, for a call with nothing of its own to
 * run there: no post-execute hook, no observer, no probe. `undefined` when there is (nothing was
 * done; the caller runs `finalizeIn` / `finishIn`).
 *
 * @internal
 */
export const finishSync = (state: State, candidate: Result, post: boolean): Result | undefined => {
  if (state.finished !== undefined) return state.finished
  const view = state.runtime.registry.unsafeView(state.agent)
  if (state.probe !== undefined || view.observers.length > 0 || (post && view.postExecute.length > 0)) {
    return undefined
  }
  if (!post) return settleFinish(state, candidate)
  const projected = project(state, candidate)
  if (!projected.ok) return settleFinish(state, withDeferred(state, failWith(projected.error)))
  const outcome = projected.value
  return settleFinish(state, state.caller.aborted && !outcome.isError ? cancelled(state, outcome) : outcome)
}
