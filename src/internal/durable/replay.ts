/**
 * A batch's journal read back as one resolution per call: what a resumed batch does with each
 * call — return its committed result, finish it from its recorded body or gate outcome, end it
 * `OUTCOME_UNKNOWN`, run its body again under its replay policy, or start it afresh.
 *
 * @internal
 */
import type { ToolResult } from "../../ToolResult.js"
import type { StoredRow } from "./journal.js"
import type { BatchRow, Decoded, Outcome } from "./rows.js"
import { decodeBatch, decodeIntent, decodeOutcome, decodeResult, decodeStop, entry, parseEntry } from "./rows.js"

/** What a resumed batch does with one call. @internal */
export type Resolution =
  /** Nothing recorded: the call runs as in memory. */
  | { readonly _tag: "Fresh" }
  /** Begun (its `tool/call` is recorded) but its gate had not decided: the gate runs again. */
  | { readonly _tag: "Begun" }
  /** The gate decided without dispatching (a denial, a cancellation): finish with that outcome. */
  | { readonly _tag: "Decided"; readonly outcome: Outcome }
  /** The body settled: finish with its outcome, the body is not run again. */
  | { readonly _tag: "Settled"; readonly outcome: Outcome }
  /** The body was running when the process stopped (intent, no settle). */
  | { readonly _tag: "Cut"; readonly idempotencyKey: string | undefined }
  /** A row of the call could not be read: the call ends `OUTCOME_UNKNOWN`. */
  | { readonly _tag: "Unreadable"; readonly reason: string }
  /** The call's result was committed. */
  | { readonly _tag: "Committed"; readonly result: ToolResult }

interface Slot {
  call: boolean
  gate: Decoded<Outcome> | undefined
  intent: Decoded<string> | undefined
  settle: Decoded<Outcome> | undefined
  result: Decoded<ToolResult> | undefined
}

/** A row that could not be trusted, by entry key. @internal */
export interface CorruptRow {
  readonly entry: string
  readonly seq: number
  readonly reason: string
}

/** @internal */
export interface Journaled {
  readonly batch: Decoded<BatchRow> | undefined
  readonly stop: Decoded<string> | undefined
  readonly corrupt: ReadonlyArray<CorruptRow>
  readonly resolve: (slot: string) => Resolution
  /** Rows already stored (so a resumed batch does not write them again). */
  readonly has: (key: string) => boolean
  /** The stored payload of an entry. */
  readonly payloadOf: (key: string) => string | undefined
}

const FRESH: Resolution = { _tag: "Fresh" }
const BEGUN: Resolution = { _tag: "Begun" }

const unreadable = (reason: string): Resolution => ({ _tag: "Unreadable", reason })

/** Reads a batch's rows (in write order) into one resolution per slot. @internal */
export const read = (rows: ReadonlyArray<StoredRow>): Journaled => {
  const slots = new Map<string, Slot>()
  const keys = new Map<string, string>()
  const corrupt: Array<CorruptRow> = []
  let batch: Decoded<BatchRow> | undefined = undefined
  let stop: Decoded<string> | undefined = undefined
  const note = <A>(row: StoredRow, decoded: Decoded<A>): Decoded<A> => {
    if (!decoded.ok) corrupt.push({ entry: row.entry, seq: row.seq, reason: decoded.reason })
    return decoded
  }
  for (const row of rows) {
    if (keys.has(row.entry)) continue
    keys.set(row.entry, row.payload)
    if (row.entry === entry.batch) {
      batch = note(row, decodeBatch(row.payload))
      continue
    }
    if (row.entry === entry.stop) {
      stop = note(row, decodeStop(row.payload))
      continue
    }
    const parsed = parseEntry(row.entry)
    if (parsed === undefined) continue
    let slot = slots.get(parsed.slot)
    if (slot === undefined) {
      slot = { call: false, gate: undefined, intent: undefined, settle: undefined, result: undefined }
      slots.set(parsed.slot, slot)
    }
    switch (parsed.kind) {
      case "call":
        slot.call = true
        break
      case "gate":
        slot.gate = note(row, decodeOutcome(row.payload))
        break
      case "intent":
        slot.intent = note(row, decodeIntent(row.payload))
        break
      case "settle":
        slot.settle = note(row, decodeOutcome(row.payload))
        break
      case "result":
        slot.result = note(row, decodeResult(row.payload))
        break
    }
  }
  const resolve = (key: string): Resolution => {
    const slot = slots.get(key)
    if (slot === undefined) return FRESH
    if (slot.result !== undefined) {
      return slot.result.ok ? { _tag: "Committed", result: slot.result.value } : unreadable(slot.result.reason)
    }
    if (slot.settle !== undefined) {
      return slot.settle.ok ? { _tag: "Settled", outcome: slot.settle.value } : unreadable(slot.settle.reason)
    }
    if (slot.intent !== undefined) {
      return { _tag: "Cut", idempotencyKey: slot.intent.ok ? slot.intent.value : undefined }
    }
    if (slot.gate !== undefined) {
      return slot.gate.ok ? { _tag: "Decided", outcome: slot.gate.value } : unreadable(slot.gate.reason)
    }
    return slot.call ? BEGUN : FRESH
  }
  return { batch, stop, corrupt, resolve, has: (key) => keys.has(key), payloadOf: (key) => keys.get(key) }
}
