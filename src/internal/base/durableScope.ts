/**
 * The durable batch a fiber works for: set by a durable batch on the fibers that run its calls,
 * read by the subsystems below the durable one that must behave deterministically inside it
 * (the approval service's ids) without depending on it.
 *
 * @internal
 */
import * as Context from "effect/Context"

/** @internal */
export interface DurableScope {
  readonly sessionId: string
  readonly batchId: string
  /** The approval id of a call of this batch: the same on every run of the batch. */
  readonly approvalId: (callId: string) => string
}

/** @internal */
export class CurrentDurableScope extends Context.Reference<CurrentDurableScope>()(
  "effect-tool-runtime/CurrentDurableScope",
  { defaultValue: (): DurableScope | undefined => undefined }
) {}
