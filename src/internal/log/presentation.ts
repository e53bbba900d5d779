/** @internal */
import * as Json from "../../Json.js"
import type {
  CallPresentation,
  CallView,
  LiveCall,
  Lookup,
  ResultProjection,
  ResultView
} from "../../Presentation.js"
import type * as Tool from "../../Tool.js"
import type { LogRecord } from "../../ToolCallLog.js"
import type { ToolResult } from "../../ToolResult.js"
import { parseArguments } from "../schema/arguments.js"

const CALL_CARDS: ReadonlySet<unknown> = new Set(["generic", "terminal", "diff"])
const RESULT_CARDS: ReadonlySet<unknown> = new Set(["generic", "terminal", "diff", "search", "read", "web"])

/** @internal */
export const projectResult = (result: ToolResult): ResultProjection =>
  result.meta === undefined
    ? { content: result.content, isError: result.isError }
    : { content: result.content, isError: result.isError, meta: result.meta }

/**
 * A presenter's view read once: its own enumerable fields (those set to `undefined` dropped)
 * snapshotted into a detached frozen copy; `undefined` when it is not a lossless JSON object.
 * Validation and the caller then see only the copy (a getter cannot change after the check).
 */
const detachView = (view: unknown): unknown => {
  if (typeof view !== "object" || view === null || Array.isArray(view)) return undefined
  const fields = Object.entries({ ...view }).filter(([, value]) => value !== undefined)
  const snap = Json.snapshotFrozen(Object.fromEntries(fields))
  return snap._tag === "Lossless" ? snap.value : undefined
}

const isCallView = (view: unknown): view is CallView => {
  if (typeof view !== "object" || view === null || Array.isArray(view)) return false
  const record = view as { readonly card?: unknown; readonly title?: unknown }
  return CALL_CARDS.has(record.card) && typeof record.title === "string"
}

const isResultView = (view: unknown): view is ResultView => {
  if (typeof view !== "object" || view === null || Array.isArray(view)) return false
  return RESULT_CARDS.has((view as { readonly card?: unknown }).card)
}

/** @internal */
export const presentCall = (definition: Tool.Any | undefined, args: unknown): CallView | undefined => {
  if (definition === undefined) return undefined
  try {
    const presenter = definition.presentCall
    if (typeof presenter !== "function") return undefined
    const view = detachView(presenter.call(definition, args))
    return isCallView(view) ? view : undefined
  } catch {
    return undefined
  }
}

/** @internal */
export const presentResult = (
  definition: Tool.Any | undefined,
  args: unknown,
  result: ResultProjection
): ResultView | undefined => {
  if (definition === undefined) return undefined
  try {
    const presenter = definition.presentResult
    if (typeof presenter !== "function") return undefined
    const view = detachView(presenter.call(definition, args, result))
    return isResultView(view) ? view : undefined
  } catch {
    return undefined
  }
}

/** @internal */
export const genericCall = (name: string, args: unknown): CallView => {
  const snap = Json.snapshotFrozen(args)
  return snap._tag === "Lossless"
    ? { card: "generic", title: name, rawInput: snap.value }
    : { card: "generic", title: name }
}

/** @internal */
export const genericResult = (title: string, result: ResultProjection): ResultView => ({
  card: "generic",
  title,
  content: result.content
})

const lookupSafe = (lookup: Lookup, name: string, agent: string | undefined): Tool.Any | undefined => {
  try {
    return lookup(name, agent)
  } catch {
    return undefined
  }
}

interface Pending {
  readonly definition: Tool.Any | undefined
  readonly args: unknown
  readonly callId: string
  readonly name: string
  readonly call: CallView
}

const pending = (lookup: Lookup, callId: string, name: string, agent: string | undefined, args: unknown): Pending => {
  const definition = lookupSafe(lookup, name, agent)
  const call = presentCall(definition, args) ?? genericCall(name, args)
  return { definition, args, callId, name, call }
}

const complete = (entry: Pending, result: ResultProjection | undefined): CallPresentation => {
  if (result === undefined) return { callId: entry.callId, name: entry.name, call: entry.call }
  const view = presentResult(entry.definition, entry.args, result) ?? genericResult(entry.call.title, result)
  return { callId: entry.callId, name: entry.name, call: entry.call, result: view }
}

const keyOf = (batchId: string, index: number, callId: string): string => JSON.stringify([batchId, index, callId])

/** @internal */
export const replay = (records: ReadonlyArray<LogRecord>, lookup: Lookup): Array<CallPresentation> => {
  const entries: Array<Pending> = []
  const results: Array<ResultProjection | undefined> = []
  const open = new Map<string, Array<number>>()
  for (const record of records) {
    if (record._tag === "tool/call") {
      const key = keyOf(record.batchId, record.index, record.callId)
      const slot = entries.length
      entries.push(pending(lookup, record.callId, record.name, record.agent, parseArguments(record.arguments)))
      results.push(undefined)
      const queue = open.get(key)
      if (queue === undefined) open.set(key, [slot])
      else queue.push(slot)
    } else if (record._tag === "tool/result") {
      const queue = open.get(keyOf(record.batchId, record.index, record.callId))
      const slot = queue?.shift()
      if (slot === undefined) continue
      results[slot] = record.meta === undefined
        ? { content: record.content, isError: record.isError }
        : { content: record.content, isError: record.isError, meta: record.meta }
    }
  }
  return entries.map((entry, slot) => complete(entry, results[slot]))
}

/** @internal */
export const livePresentation = (calls: ReadonlyArray<LiveCall>, lookup: Lookup): Array<CallPresentation> =>
  calls.map((live) => {
    const entry = pending(lookup, live.callId, live.name, live.agent, live.arguments)
    return complete(entry, live.result === undefined ? undefined : projectResult(live.result))
  })
