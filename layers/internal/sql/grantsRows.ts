/**
 * Stored grant rows read back into grants: every column checked, a row that cannot be a grant
 * reported with its `seq` and why.
 *
 * @internal
 */
import * as Either from "effect/Either"
import type { Grant } from "../../../src/ApprovalGrants.js"

/** @internal */
export interface Row {
  readonly seq: unknown
  readonly id: unknown
  readonly tool_name: unknown
  readonly agent: unknown
  readonly arguments_digest: unknown
  readonly created_at: unknown
  readonly expires_at: unknown
}

/** @internal */
export interface Corrupt {
  readonly sequence: number
  readonly reason: string
}

const kindOf = (value: unknown): string => {
  if (value === null) return "NULL"
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return "a blob"
  return typeof value === "number" || typeof value === "bigint" ? "a number" : `a ${typeof value}`
}

const textKind = (value: unknown): string => (value === "" ? "an empty" : kindOf(value))

const integer = (value: unknown): number | undefined => {
  if (typeof value === "number") return Number.isSafeInteger(value) ? value : undefined
  if (typeof value === "bigint") {
    const n = Number(value)
    return Number.isSafeInteger(n) ? n : undefined
  }
  if (typeof value === "string" && /^-?\d{1,16}$/.test(value)) {
    const n = Number(value)
    return Number.isSafeInteger(n) ? n : undefined
  }
  return undefined
}

/** @internal */
export const sequenceOf = (seq: unknown): number => integer(seq) ?? -1

/** @internal */
export const decodeRow = (row: Row): Either.Either<Grant, Corrupt> => {
  const fail = (reason: string) => Either.left({ sequence: sequenceOf(row.seq), reason })
  const { agent, arguments_digest, created_at, expires_at, id, tool_name } = row
  if (typeof id !== "string" || id === "") return fail(`stored approval grant row has ${textKind(id)} id, expected text`)
  if (typeof tool_name !== "string" || tool_name === "") {
    return fail(`stored approval grant row has ${textKind(tool_name)} tool_name, expected text`)
  }
  if (agent !== null && (typeof agent !== "string" || agent === "")) {
    return fail(`stored approval grant row has ${textKind(agent)} agent, expected text or NULL`)
  }
  if (arguments_digest !== null && (typeof arguments_digest !== "string" || arguments_digest === "")) {
    return fail(`stored approval grant row has ${textKind(arguments_digest)} arguments_digest, expected text or NULL`)
  }
  const createdAt = integer(created_at)
  if (createdAt === undefined) {
    return fail(`stored approval grant row has ${kindOf(created_at)} created_at, expected an integer`)
  }
  const expiresAt = expires_at === null ? undefined : integer(expires_at)
  if (expires_at !== null && expiresAt === undefined) {
    return fail(`stored approval grant row has ${kindOf(expires_at)} expires_at, expected an integer or NULL`)
  }
  const grant: { -readonly [K in keyof Grant]: Grant[K] } = { id, toolName: tool_name, createdAt }
  if (agent !== null) grant.agent = agent
  if (arguments_digest !== null) grant.argumentsDigest = arguments_digest
  if (expiresAt !== undefined) grant.expiresAt = expiresAt
  return Either.right(Object.freeze(grant))
}
