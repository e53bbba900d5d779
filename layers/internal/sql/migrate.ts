/**
 * Runs a SQL layer's migrations with `@effect/sql`'s migrator on its own bookkeeping table; a
 * failure or defect of the migrator becomes the layer's error with the message underneath.
 *
 * @internal
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { migrationMessage } from "./messages.js"

/** @internal */
export const runMigrations = <E>(
  sql: SqlClient.SqlClient,
  migrationsTable: string,
  migrations: ReadonlyArray<Migrator.ResolvedMigration>,
  fail: (message: string) => E
): Effect.Effect<void, E> =>
  Migrator.make({})({ table: migrationsTable, loader: Effect.succeed(migrations) }).pipe(
    Effect.provideService(SqlClient.SqlClient, sql),
    Effect.mapError((error) => fail(migrationMessage(error))),
    Effect.catchAllDefect((defect) => Effect.fail(fail(migrationMessage(defect)))),
    Effect.asVoid
  )
