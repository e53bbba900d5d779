/**
 * How the SQL layers name their failures: the layer's subject and error, and the messages of what
 * they catch (a thrown value, an `SqlError`, a migrator failure), each read without trusting it
 * (a throwing getter reads as `unknown error`).
 *
 * @internal
 */
import * as Migrator from "@effect/sql/Migrator"
import type { SqlError } from "@effect/sql/SqlError"
import { messageOf } from "../../../src/internal/log/records.js"

/** The reasons the layers' errors share. @internal */
export type Reason =
  | { readonly _tag: "InvalidOption"; readonly option: string }
  | { readonly _tag: "TableLayout"; readonly table: string; readonly differences: ReadonlyArray<string> }

/** A layer's name (the prefix of its messages, e.g. `tool call log`) and its error. @internal */
export interface Subject<E> {
  readonly name: string
  readonly error: (message: string, reason?: Reason) => E
}

/** The message of a thrown value, total (hostile getters are contained). @internal */
export const causeMessage: (cause: unknown) => string = messageOf

/** The driver's message under an `SqlError` when there is one. @internal */
export const sqlMessage = (error: SqlError): string =>
  error.cause === undefined ? causeMessage(error.message) : causeMessage(error.cause)

const isSqlError = (value: unknown): value is SqlError =>
  typeof value === "object" && value !== null && (value as { readonly _tag?: unknown })._tag === "SqlError"

/** The message of a migrator failure: the SQL error underneath when there is one. @internal */
export const migrationMessage = (failure: unknown): string => {
  if (isSqlError(failure)) return sqlMessage(failure)
  if (failure instanceof Migrator.MigrationError) {
    return isSqlError(failure.cause) ? sqlMessage(failure.cause) : causeMessage(failure.message)
  }
  return causeMessage(failure)
}

/** `<prefix>: <the driver's message>` as the layer's error. @internal */
export const storageError = <E>(subject: Subject<E>, prefix: string) => (error: SqlError): E =>
  subject.error(`${prefix}: ${sqlMessage(error)}`)
