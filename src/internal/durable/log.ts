/**
 * The tool call log of durable turns: the journal read as `ToolCallLog` records (each call's
 * `tool/call` and `tool/result`, in write order) and written by the subsystems that audit into the
 * log — the approval service, Code Mode. Inside a durable batch every append is keyed by what it
 * records (an approval's id, a sub-call's id), so a batch that runs again writes each record once.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { LogContents, LogRecord } from "../../ToolCallLog.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import { CurrentDurableScope } from "../base/durableScope.js"
import type { JournalKey, Service as Journal, StoredRow } from "./journal.js"
import { decodeBatch, decodeResult, entry, parseEntry } from "./rows.js"

const OUTSIDE: JournalKey = { sessionId: "", batchId: "" }

let counter = 0

/** What makes a record unique within its batch; `undefined` for records with no identity of their own. */
const identityOf = (record: LogRecord): string | undefined => {
  switch (record._tag) {
    case "approval/asked":
    case "approval/decided":
      return record.id
    case "approval/late":
      return `${record.id}:${record.outcome}:${record.by}`
    case "tool/code-dispatch-start":
    case "tool/code-dispatch":
      return record.subCallId
    case "tool/call":
    case "tool/result":
      return `${record.batchId}:${record.index}`
  }
}

const corrupt = (row: StoredRow, reason: string) => ({ sequence: row.seq, reason })

/**
 * The records of journal rows (in write order): `call:<i>` rows as their `tool/call`, `result:<i>`
 * rows as the `tool/result` of the batch's call `i`, `log:` rows as the record they hold. Rows
 * that cannot be read are reported, never thrown.
 *
 * @internal
 */
export const recordsOf = (rows: ReadonlyArray<StoredRow>): Effect.Effect<LogContents> =>
  Effect.gen(function*() {
    const records: Array<LogRecord> = []
    const bad: Array<{ readonly sequence: number; readonly reason: string }> = []
    const callIds = new Map<string, ReadonlyArray<string>>()
    for (const row of rows) {
      if (row.entry === entry.batch) {
        const batch = decodeBatch(row.payload)
        if (batch.ok) callIds.set(JSON.stringify([row.sessionId, row.batchId]), batch.value.calls.map((c) => c.callId))
        continue
      }
      if (row.entry.startsWith("log:")) {
        const decoded = yield* Effect.either(ToolCallLog.decodeJson(row.payload))
        if (decoded._tag === "Right") records.push(decoded.right)
        else bad.push(corrupt(row, decoded.left.message))
        continue
      }
      const parsed = parseEntry(row.entry)
      if (parsed === undefined || !/^\d+$/.test(parsed.slot)) continue
      if (parsed.kind === "call") {
        const decoded = yield* Effect.either(ToolCallLog.decodeJson(row.payload))
        if (decoded._tag === "Right") records.push(decoded.right)
        else bad.push(corrupt(row, decoded.left.message))
      } else if (parsed.kind === "result") {
        const index = Number(parsed.slot)
        const callId = callIds.get(JSON.stringify([row.sessionId, row.batchId]))?.[index]
        const result = decodeResult(row.payload)
        if (!result.ok) bad.push(corrupt(row, result.reason))
        else if (callId === undefined) bad.push(corrupt(row, "the batch row naming this call could not be read"))
        else records.push(ToolCallLog.resultRecord(row.batchId, index, callId, result.value))
      }
    }
    return { records, corrupt: bad }
  })

/**
 * The log over the journal: inside a durable batch an append is written once per record identity
 * under the batch; outside one, each append is a row of its own.
 *
 * @internal
 */
export const make = (journal: Journal): ToolCallLog.Service => {
  const append = (record: LogRecord): Effect.Effect<void, ToolCallLog.ToolCallLogError> =>
    Effect.flatMap(ToolCallLog.encodeJson(record), (payload) =>
      Effect.flatMap(CurrentDurableScope, (scope) => {
        const identity = scope === undefined ? undefined : identityOf(record)
        const key = scope === undefined || identity === undefined ? OUTSIDE : scope
        const unique = identity ?? `${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2)}`
        return journal.write(key, [{ entry: entry.log(record._tag, unique), payload }]).pipe(
          Effect.mapError((error) => new ToolCallLog.ToolCallLogError({ message: error.message }))
        )
      }))
  const contents = journal.all.pipe(
    Effect.mapError((error) => new ToolCallLog.ToolCallLogError({ message: error.message })),
    Effect.flatMap(recordsOf)
  )
  return ToolCallLog.make({
    append,
    contents,
    approvalContents: Effect.map(contents, (read) => ({
      records: read.records.filter(ToolCallLog.isApprovalRecord),
      corrupt: read.corrupt
    }))
  })
}
