/**
 * Checking a record against its Schema, and its storage form: `validate` (a detached, deep-frozen
 * copy), `encodeJson` and `decodeJson`. A record is checked by the Schema of its `_tag` (the union
 * when the tag is unknown), and a failure names its first issue in one line.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import type { LogRecord } from "../../ToolCallLog.js"
import { formatPath, messageOf, plainIssue, stringify } from "./records.js"
import {
  ApprovalAskedRecord,
  ApprovalDecidedRecord,
  ApprovalLateRecord,
  CodeDispatchRecord,
  CodeDispatchStartRecord,
  LogRecord as LogRecordSchema,
  ToolCallLogError,
  ToolCallRecord,
  ToolResultRecord
} from "./schemas.js"

type Parser = (input: unknown) => Either.Either<LogRecord, ParseResult.ParseError>

const validateAny: Parser = Schema.validateEither(LogRecordSchema)
const decodeAny: Parser = Schema.decodeUnknownEither(LogRecordSchema)

type ParserOf = <A, I>(schema: Schema.Schema<A, I>) => (input: unknown) => Either.Either<A, ParseResult.ParseError>

const byTag = (make: ParserOf): ReadonlyMap<unknown, Parser> =>
  new Map<unknown, Parser>([
    ["tool/call", make(ToolCallRecord)],
    ["tool/result", make(ToolResultRecord)],
    ["tool/code-dispatch-start", make(CodeDispatchStartRecord)],
    ["tool/code-dispatch", make(CodeDispatchRecord)],
    ["approval/asked", make(ApprovalAskedRecord)],
    ["approval/decided", make(ApprovalDecidedRecord)],
    ["approval/late", make(ApprovalLateRecord)]
  ])

const validators = byTag((schema) => Schema.validateEither(schema))
const decoders = byTag((schema) => Schema.decodeUnknownEither(schema))

const tagOf = (input: unknown): unknown =>
  Json.isPlainRecord(input) ? (input as { readonly _tag?: unknown })._tag : undefined

const MAX_MESSAGE = 300

const withPath = (path: ReadonlyArray<PropertyKey>, message: string): string => {
  if (path.length === 0) return message
  const at = formatPath(path)
  return message === "is missing" ? `${at} is missing` : `${at}: ${message}`
}

const firstIssue = (error: ParseResult.ParseError): string => {
  try {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
    if (issue !== undefined && issue.message.length <= MAX_MESSAGE) return withPath(issue.path, issue.message)
  } catch {
    // Schema's formatter recurses into the offending value; very deep values overflow the stack.
  }
  const fallback = plainIssue(error.issue)
  return withPath(fallback.path, fallback.message)
}

const fail = (message: string): Effect.Effect<never, ToolCallLogError> => Effect.fail(new ToolCallLogError({ message }))

const check = (record: unknown, freeze: boolean): Effect.Effect<LogRecord, ToolCallLogError> => {
  const snap = Json.snapshot(record)
  if (snap._tag === "Threw") return fail(`tool call log record could not be read: ${messageOf(snap.error)}`)
  if (snap._tag === "NotLossless") return fail("tool call log record must be lossless JSON")
  const checked = (validators.get(tagOf(snap.value)) ?? validateAny)(snap.value)
  if (Either.isLeft(checked)) return fail(`invalid tool call log record: ${firstIssue(checked.left)}`)
  return Effect.succeed(freeze ? Json.deepFreeze(checked.right) : checked.right)
}

/** @internal */
export const validate = (record: unknown): Effect.Effect<LogRecord, ToolCallLogError> =>
  Effect.suspend(() => check(record, true))

/** @internal */
export const encodeJson = (record: unknown): Effect.Effect<string, ToolCallLogError> =>
  Effect.suspend(() => Effect.map(check(record, false), (checked) => stringify(checked as unknown as JsonValue)))

/** @internal */
export const decodeJson = (text: string): Effect.Effect<LogRecord, ToolCallLogError> =>
  Effect.suspend(() => {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (error) {
      return fail(`stored tool call log record is not JSON: ${messageOf(error)}`)
    }
    const decoded = (decoders.get(tagOf(parsed)) ?? decodeAny)(parsed)
    if (Either.isLeft(decoded)) return fail(`invalid stored tool call log record: ${firstIssue(decoded.left)}`)
    return Effect.succeed(Json.deepFreeze(decoded.right))
  })
