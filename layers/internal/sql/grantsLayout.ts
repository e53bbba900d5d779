/**
 * The layout of the grants table: its columns and what their types are on SQLite and PostgreSQL,
 * for the shared layout check.
 *
 * @internal
 */
import type { Expected } from "./layout.js"

/** @internal */
export type Dialect = "sqlite" | "pg"

/** @internal */
export const COLUMNS = ["seq", "id", "tool_name", "agent", "arguments_digest", "created_at", "expires_at"] as const

type ColumnName = (typeof COLUMNS)[number]

const EXPECTED_TYPES: Record<Dialect, Readonly<Record<ColumnName, string>>> = {
  sqlite: {
    seq: "INTEGER",
    id: "TEXT",
    tool_name: "TEXT",
    agent: "TEXT",
    arguments_digest: "TEXT",
    created_at: "INTEGER",
    expires_at: "INTEGER"
  },
  pg: {
    seq: "bigint",
    id: "text",
    tool_name: "text",
    agent: "text",
    arguments_digest: "text",
    created_at: "bigint",
    expires_at: "bigint"
  }
}

/** The grants layout on `dialect`, its absence reported against `migrationsTable`. @internal */
export const expectedLayout = (dialect: Dialect, migrationsTable: string): Expected<ColumnName> => ({
  columns: COLUMNS,
  types: EXPECTED_TYPES[dialect],
  migrationsTable
})
