/**
 * Shared vocabulary of the definition readers (`defineTool`, `fromSchema`, registration): each
 * reads a user's definition or options once and checks the kind of every field.
 *
 * @internal
 */

/** @internal */
export const isObjectLike = (value: unknown): value is object =>
  (typeof value === "object" && value !== null) || typeof value === "function"

/** @internal */
export const isReplayPolicy = (value: unknown): value is "never" | "idempotent" | "safe" =>
  value === "never" || value === "idempotent" || value === "safe"

/** The definition error text of a `replay` that is not a replay policy. @internal */
export const REPLAY_MESSAGE = "replay must be \"never\", \"idempotent\" or \"safe\""

/**
 * The optional callbacks of a definition, in the order they are read and checked.
 *
 * @internal
 */
export const OPTIONAL_CALLBACKS = [
  "isConcurrencySafe",
  "finalizeContent",
  "projectContent",
  "presentCall",
  "presentResult"
] as const
