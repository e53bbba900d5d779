/**
 * The identity of a durable approval: an id derived from the batch and the asking call, the same
 * on every run of the batch, so that its audit records, its pending row and the engine's deferred
 * answer all meet under one name.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import type { JournalKey } from "./journal.js"

/** @internal */
export const approvalIdOf = (key: JournalKey, callId: string): string =>
  createHash("sha256").update(JSON.stringify(["approval", key.sessionId, key.batchId, callId])).digest("hex").slice(0, 32)
