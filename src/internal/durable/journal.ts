/**
 * The durable turn journal (D-22, D-24): the per-call rows a durable batch writes beside the
 * workflow engine's own storage — keyed by session, batch and entry, first write wins — and the
 * pending-approval table that any process on the same database reads and answers. The service
 * is the seam; `memory` is its in-process implementation (the SQL one is a Layer).
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** A batch's identity in the journal. @internal */
export interface JournalKey {
  readonly sessionId: string
  readonly batchId: string
}

/** One row to write: its entry key (unique within the batch) and its JSON payload. @internal */
export interface Row {
  readonly entry: string
  readonly payload: string
}

/** A stored row, with its position in the journal's total write order. @internal */
export interface StoredRow extends Row {
  readonly sessionId: string
  readonly batchId: string
  readonly seq: number
}

/** A pending approval as stored: its id, where it waits, and its request (JSON text). @internal */
export interface PendingRow {
  readonly id: string
  readonly sessionId: string
  readonly batchId: string
  readonly callId: string
  readonly payload: string
  /** The answer sent (JSON text), once the approval was answered. */
  readonly answer?: string | undefined
}

/** `pending` → `answered` (an answer was sent) → `closed` (the batch consumed the decision). @internal */
export type ApprovalState = "pending" | "answered" | "closed"

/**
 * The journal could not be read or written.
 *
 * @since 0.1.0
 * @category errors
 */
export class DurableJournalError extends Schema.TaggedError<DurableJournalError>(
  "effect-tool-runtime/DurableJournalError"
)("DurableJournalError", { message: Schema.String }) {}

/** @internal */
export interface Service {
  /** Every row of one batch, in write order. */
  readonly load: (key: JournalKey) => Effect.Effect<ReadonlyArray<StoredRow>, DurableJournalError>
  /** Writes `rows` in one transaction; an entry already stored keeps its first payload. */
  readonly write: (key: JournalKey, rows: ReadonlyArray<Row>) => Effect.Effect<void, DurableJournalError>
  /** Every row of every batch of a session, in write order. */
  readonly session: (sessionId: string) => Effect.Effect<ReadonlyArray<StoredRow>, DurableJournalError>
  /** Every row, in write order. */
  readonly all: Effect.Effect<ReadonlyArray<StoredRow>, DurableJournalError>
  /** Stores a pending approval (once: a second `ask` for the same id keeps the first). */
  readonly ask: (pending: PendingRow) => Effect.Effect<void, DurableJournalError>
  /** The approvals in state `state`, oldest first. */
  readonly approvals: (state: ApprovalState) => Effect.Effect<ReadonlyArray<PendingRow>, DurableJournalError>
  /** One approval and its state. */
  readonly approval: (
    id: string
  ) => Effect.Effect<{ readonly row: PendingRow; readonly state: ApprovalState } | undefined, DurableJournalError>
  /**
   * Moves `id` from `pending` to `answered` and stores its answer (JSON text) with it, so that an
   * answer whose delivery was cut can be sent again; `false` when it was not pending.
   */
  readonly answer: (id: string, answer: string) => Effect.Effect<boolean, DurableJournalError>
  /** Moves `id` from `from` to `to`; `false` when it was not in state `from`. */
  readonly transition: (
    id: string,
    from: ReadonlyArray<ApprovalState>,
    to: ApprovalState
  ) => Effect.Effect<boolean, DurableJournalError>
  /** Closes every approval of a batch that is not closed yet (the batch ended). */
  readonly closeBatch: (key: JournalKey) => Effect.Effect<void, DurableJournalError>
}

/** @internal */
export class DurableJournal extends Context.Tag("effect-tool-runtime/DurableJournal")<DurableJournal, Service>() {}

interface MemoryApproval {
  row: PendingRow
  state: ApprovalState
  readonly order: number
}

/**
 * The journal in memory: for tests and for the in-memory workflow engine (nothing survives the
 * process).
 *
 * @internal
 */
export const memory = (): Service => {
  const rows: Array<StoredRow> = []
  const keys = new Set<string>()
  const approvals = new Map<string, MemoryApproval>()
  let seq = 0
  const keyOf = (key: JournalKey, entry: string) => JSON.stringify([key.sessionId, key.batchId, entry])
  return {
    load: (key) =>
      Effect.sync(() => rows.filter((row) => row.sessionId === key.sessionId && row.batchId === key.batchId)),
    write: (key, batch) =>
      Effect.sync(() => {
        for (const row of batch) {
          const unique = keyOf(key, row.entry)
          if (keys.has(unique)) continue
          keys.add(unique)
          rows.push({ sessionId: key.sessionId, batchId: key.batchId, entry: row.entry, payload: row.payload, seq: ++seq })
        }
      }),
    session: (sessionId) => Effect.sync(() => rows.filter((row) => row.sessionId === sessionId)),
    all: Effect.sync(() => rows.slice()),
    ask: (pending) =>
      Effect.sync(() => {
        if (!approvals.has(pending.id)) approvals.set(pending.id, { row: pending, state: "pending", order: ++seq })
      }),
    approvals: (state) =>
      Effect.sync(() =>
        [...approvals.values()].filter((entry) => entry.state === state).sort((a, b) => a.order - b.order).map((
          entry
        ) => entry.row)
      ),
    approval: (id) =>
      Effect.sync(() => {
        const entry = approvals.get(id)
        return entry === undefined ? undefined : { row: entry.row, state: entry.state }
      }),
    answer: (id, answer) =>
      Effect.sync(() => {
        const entry = approvals.get(id)
        if (entry === undefined || entry.state !== "pending") return false
        entry.state = "answered"
        entry.row = { ...entry.row, answer }
        return true
      }),
    transition: (id, from, to) =>
      Effect.sync(() => {
        const entry = approvals.get(id)
        if (entry === undefined || !from.includes(entry.state)) return false
        entry.state = to
        return true
      }),
    closeBatch: (key) =>
      Effect.sync(() => {
        for (const entry of approvals.values()) {
          if (entry.row.sessionId === key.sessionId && entry.row.batchId === key.batchId) entry.state = "closed"
        }
      })
  }
}
