/**
 * The caller's `onCommit`, called once per commit: whatever it does (throws, returns anything but
 * an Effect, fails, dies) is logged with the scheduler's own text and ignored (issue 8 item 7b).
 *
 * @internal
 */
import { types } from "node:util"
import * as Effect from "effect/Effect"
import type { CommitEvent } from "../../Scheduler.js"
import { detailOf, detailOfCause } from "../../ToolError.js"

/** Only the scheduler's own text is logged: never the user's value, nor a Cause holding it. */
const commitFailed = (callId: string, detail: string): Effect.Effect<void> =>
  Effect.catchAllCause(
    Effect.logWarning(`scheduler onCommit failed for tool call "${callId}": ${detail}`),
    () => Effect.void
  )

const isGenuineEffect = (value: unknown): value is Effect.Effect<unknown, unknown> => {
  try {
    return !types.isProxy(value) && Effect.isEffect(value)
  } catch {
    return false
  }
}

/** @internal */
export const callCommit = (
  onCommit: (event: CommitEvent) => unknown,
  event: CommitEvent
): Effect.Effect<void> => {
  const callId = event.callId
  let returned: unknown
  try {
    returned = onCommit(event)
  } catch (thrown) {
    return commitFailed(callId, detailOf(thrown).message)
  }
  if (!isGenuineEffect(returned)) return commitFailed(callId, "onCommit must return an Effect")
  return Effect.catchAllCause(
    Effect.asVoid(returned),
    (cause) => commitFailed(callId, detailOfCause(cause).message)
  )
}
