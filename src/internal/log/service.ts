/**
 * Reading a log: a service from a backend's `append` and `contents` (corrupt entries logged as
 * warnings), the contents of any service, and the approval audit grouped by approval id.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type {
  ApprovalAskedRecord,
  ApprovalAudit,
  ApprovalDecidedRecord,
  ApprovalLateRecord,
  CorruptRecord,
  LogContents,
  LogRecord,
  Service
} from "../../ToolCallLog.js"
import { isApprovalRecord, type ToolCallLogError } from "./schemas.js"

const warnCorrupt = (entry: CorruptRecord): Effect.Effect<void> =>
  Effect.logWarning(`tool call log skipped a corrupt record (seq ${entry.sequence}): ${entry.reason}`).pipe(
    Effect.annotateLogs({ sequence: entry.sequence, reason: entry.reason })
  )

/** @internal */
export const make = (implementation: {
  readonly append: (record: LogRecord) => Effect.Effect<void, ToolCallLogError>
  readonly contents: Effect.Effect<LogContents, ToolCallLogError>
  readonly approvalContents?: Effect.Effect<LogContents, ToolCallLogError> | undefined
}): Service => {
  const contents = implementation.contents
  const readable = (read: LogContents) =>
    read.corrupt.length === 0
      ? Effect.succeed(read.records)
      : Effect.as(Effect.forEach(read.corrupt, warnCorrupt, { discard: true }), read.records)
  const service: Service = { append: implementation.append, contents, records: Effect.flatMap(contents, readable) }
  const approvalContents = implementation.approvalContents
  if (approvalContents === undefined) return service
  return {
    ...service,
    approvalRecords: Effect.flatMap(approvalContents, readable).pipe(
      Effect.map((records) => records.filter(isApprovalRecord))
    )
  }
}

/** @internal */
export const readContents = (service: Service): Effect.Effect<LogContents, ToolCallLogError> =>
  service.contents ?? Effect.map(service.records, (records): LogContents => ({ records, corrupt: [] }))

/** @internal */
export const approvalAudit = (records: ReadonlyArray<LogRecord>): Array<ApprovalAudit> => {
  const byId = new Map<string, {
    id: string
    asked?: ApprovalAskedRecord
    decided?: ApprovalDecidedRecord
    late: Array<ApprovalLateRecord>
  }>()
  for (const record of records) {
    if (!isApprovalRecord(record)) continue
    let entry = byId.get(record.id)
    if (entry === undefined) {
      entry = { id: record.id, late: [] }
      byId.set(record.id, entry)
    }
    if (record._tag === "approval/asked") entry.asked ??= record
    else if (record._tag === "approval/decided") entry.decided ??= record
    else entry.late.push(record)
  }
  return Array.from(byId.values())
}
