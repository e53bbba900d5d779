/**
 * Canonical output (OUT-1…7) and result materialization (FIN-2).
 *
 * @internal
 */
import * as Content from "../../Content.js"
import type { UserMessage } from "../../Content.js"
import type { ToolExecution } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import type { RegisteredTool } from "../../ToolRegistry.js"
import { detailOf, type ErrorDetail, ToolOutputError } from "../../ToolError.js"
import type { ToolFailure, ToolResult, ToolSuccess } from "../../ToolResult.js"

/** @internal */
export type Outcome<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly error: unknown }

const ok = <A>(value: A): Outcome<A> => ({ ok: true, value })
const fail = (error: unknown): Outcome<never> => ({ ok: false, error })

/**
 * Identity proof of registry-produced results (AROUND-5): result object → execution token.
 *
 * @internal
 */
export interface CanonicalMarks {
  readonly results: WeakMap<object, symbol>
  readonly values: WeakSet<object>
}

/** @internal */
export const makeMarks = (): CanonicalMarks => ({ results: new WeakMap(), values: new WeakSet() })

const projection = (
  toolName: string,
  label: "output.render" | "output.presentationMeta",
  run: () => unknown
): Outcome<JsonValue> => {
  let raw: unknown
  try {
    raw = run()
  } catch (error) {
    return fail(new ToolOutputError({ toolName, violations: [`${label} failed: ${detailOf(error).message}`] }))
  }
  const snap = Json.snapshotFrozen(raw)
  if (snap._tag === "Lossless") return ok(snap.value)
  return fail(
    new ToolOutputError({
      toolName,
      violations: [
        snap._tag === "Threw"
          ? `${label} failed: ${detailOf(snap.error).message}`
          : `${label} returned non-lossless JSON`
      ]
    })
  )
}

/**
 * OUT-1…7: snapshot → validate → freeze → render → (top-level only) meta → conclude marker →
 * frozen success marked canonical for `token`. Failures are `ToolOutputError`s.
 *
 * @internal
 */
export const createSuccess = (
  entry: RegisteredTool,
  exec: ToolExecution,
  candidate: unknown,
  concluded: boolean,
  marks: CanonicalMarks
): Outcome<ToolSuccess> => {
  const definition = entry.definition
  const toolName = definition.name
  const snap = Json.snapshot(candidate)
  if (snap._tag === "NotLossless") {
    return fail(new ToolOutputError({ toolName, violations: ["value is not lossless JSON"] }))
  }
  if (snap._tag === "Threw") {
    return fail(
      new ToolOutputError({ toolName, violations: [`value snapshot failed: ${detailOf(snap.error).message}`] })
    )
  }
  const violations = entry.validateOutput(snap.value, "value")
  if (violations.length > 0) return fail(new ToolOutputError({ toolName, violations }))
  const value = Json.deepFreeze(snap.value)
  if (typeof value === "object" && value !== null) marks.values.add(value)
  const args = exec.arguments as JsonValue
  const rendered = projection(toolName, "output.render", () => definition.output.render(args, value))
  if (!rendered.ok) return rendered
  const content = Content.checkShape(rendered.value)
  if (content._tag === "Invalid") {
    return fail(
      new ToolOutputError({ toolName, violations: [`output.render returned invalid content: ${content.reason}`] })
    )
  }
  let meta: JsonValue | undefined
  const presentationMeta = definition.output.presentationMeta
  if (exec.parent === undefined && presentationMeta !== undefined) {
    const projected = projection(toolName, "output.presentationMeta", () => presentationMeta(args, value))
    if (!projected.ok) return projected
    meta = projected.value
  }
  const success: ToolSuccess = meta === undefined
    ? concluded
      ? { isError: false, value, content: content.value, concludesTurn: true }
      : { isError: false, value, content: content.value }
    : concluded
    ? { isError: false, value, content: content.value, meta, concludesTurn: true }
    : { isError: false, value, content: content.value, meta }
  Object.freeze(success)
  marks.results.set(success, exec.token)
  return ok(success)
}

const NOT_LOSSLESS = "tool result must be losslessly JSON-serializable"

const checkError = (error: unknown): ErrorDetail | undefined => {
  if (!Json.isPlainRecord(error)) return undefined
  const record = error as { readonly message?: unknown; readonly info?: unknown }
  if (typeof record.message !== "string") return undefined
  if (record.info === undefined) return { message: record.message }
  if (!Json.isPlainRecord(record.info)) return undefined
  const info = record.info as { readonly name?: unknown; readonly code?: unknown }
  return typeof info.name === "string" && typeof info.code === "string"
    ? { message: record.message, info: { name: info.name, code: info.code } }
    : undefined
}

const checkContexts = (
  contexts: unknown,
  makeId: () => string
): Outcome<ReadonlyArray<UserMessage> | undefined> => {
  if (contexts === undefined) return ok(undefined)
  const out: Array<UserMessage> = []
  try {
    if (!Array.isArray(contexts)) return fail(new TypeError("tool result additionalContexts must be an array"))
    for (const context of contexts as ReadonlyArray<unknown>) {
      const checked = Content.checkUserMessage(context, makeId)
      if (checked._tag === "Invalid") return fail(new TypeError(`tool result additionalContexts: ${checked.reason}`))
      out.push(checked.value)
    }
  } catch (error) {
    return fail(error)
  }
  return out.length === 0 ? ok(undefined) : ok(Object.freeze(out))
}

/**
 * FIN-2: a detached, deep-frozen result keeping only the union's fields (`value` by
 * identity). Already-canonical results are returned as they are.
 *
 * @internal
 */
export const materialize = (
  candidate: unknown,
  marks: CanonicalMarks,
  makeId: () => string
): Outcome<ToolResult> => {
  if (typeof candidate !== "object" || candidate === null) return fail(new TypeError(NOT_LOSSLESS))
  if (marks.results.has(candidate)) return ok(candidate as ToolResult)
  let source: {
    readonly isError?: unknown
    readonly error?: unknown
    readonly content?: unknown
    readonly meta?: unknown
    readonly additionalContexts?: unknown
    readonly concludesTurn?: unknown
    readonly value?: unknown
  }
  try {
    const c = candidate as typeof source
    source = {
      isError: c.isError,
      error: c.error,
      content: c.content,
      meta: c.meta,
      additionalContexts: c.additionalContexts,
      concludesTurn: c.concludesTurn,
      value: c.value
    }
  } catch (error) {
    return fail(error)
  }
  if (source.isError !== true && source.isError !== false) return fail(new TypeError(NOT_LOSSLESS))
  const contentSnap = Json.snapshotFrozen(source.content)
  if (contentSnap._tag === "Threw") return fail(contentSnap.error)
  if (contentSnap._tag === "NotLossless") return fail(new TypeError(NOT_LOSSLESS))
  const content = Content.checkShape(contentSnap.value)
  if (content._tag === "Invalid") return fail(new TypeError(`tool result ${content.reason}`))
  let meta: JsonValue | undefined
  if (source.meta !== undefined) {
    const metaSnap = Json.snapshotFrozen(source.meta)
    if (metaSnap._tag === "Threw") return fail(metaSnap.error)
    if (metaSnap._tag === "NotLossless") return fail(new TypeError(NOT_LOSSLESS))
    meta = metaSnap.value
  }
  const contexts = checkContexts(source.additionalContexts, makeId)
  if (!contexts.ok) return contexts
  const extras = {
    ...(meta === undefined ? {} : { meta }),
    ...(contexts.value === undefined ? {} : { additionalContexts: contexts.value })
  }
  if (source.isError) {
    const errorSnap = Json.snapshot(source.error)
    if (errorSnap._tag === "Threw") return fail(errorSnap.error)
    if (errorSnap._tag === "NotLossless") return fail(new TypeError(NOT_LOSSLESS))
    const error = checkError(errorSnap.value)
    if (error === undefined) {
      return fail(new TypeError("tool result error must be { message: string, info?: { name, code } }"))
    }
    const failure: ToolFailure = { isError: true, error: Json.deepFreeze(error), content: content.value, ...extras }
    return ok(Object.freeze(failure))
  }
  const value = source.value
  const trusted = typeof value === "object" && value !== null && marks.values.has(value)
  if (!trusted && !Json.isLossless(value)) return fail(new TypeError(NOT_LOSSLESS))
  const success: ToolSuccess = {
    isError: false,
    value: trusted ? value as JsonValue : Json.deepFreeze(value as JsonValue),
    content: content.value,
    ...extras,
    ...(source.concludesTurn === true ? { concludesTurn: true as const } : {})
  }
  return ok(Object.freeze(success))
}
