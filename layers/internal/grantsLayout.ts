/**
 * The layout check of the grants table: what an existing `approval_grants` table looks like on
 * SQLite and PostgreSQL, and how it differs from the expected one.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

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

interface Column {
  readonly name: string
  readonly type: string
  readonly pk: boolean
  readonly generated: boolean
}

/** @internal */
export interface Layout {
  /** `"table"`, `"missing"`, or what the object is instead (`"view"`, `"index"`, …). */
  readonly kind: string
  readonly notes: ReadonlyArray<string>
  readonly columns: ReadonlyArray<Column>
}

const text = (value: unknown): string => (typeof value === "string" ? value : "")

const isTrue = (value: unknown): boolean => value === true || value === 1 || value === "YES" || value === "yes"

const readSqlite = (sql: SqlClient.SqlClient, table: string): Effect.Effect<Layout, SqlError> =>
  Effect.gen(function*() {
    const schema = yield* sql<{ readonly type: unknown; readonly sql: unknown }>`SELECT type, sql FROM sqlite_master WHERE name = ${table}`
      .withoutTransform
    if (schema.length === 0) return { kind: "missing", notes: [], columns: [] }
    const kind = text(schema[0]!.type)
    if (kind !== "table") return { kind: kind || "schema object", notes: [], columns: [] }
    const notes = /\bWITHOUT\s+ROWID\b/i.test(text(schema[0]!.sql))
      ? ["it is a WITHOUT ROWID table (seq is not assigned automatically)"]
      : []
    const info = yield* sql.unsafe<{ readonly name: unknown; readonly type: unknown; readonly pk: unknown }>(
      `PRAGMA table_info(${table})`
    ).withoutTransform
    const columns = info.map((column): Column => ({
      name: text(column.name),
      type: text(column.type),
      pk: column.pk !== 0 && column.pk !== 0n && column.pk !== "0",
      generated: true
    }))
    return { kind, notes, columns }
  })

const PG_KINDS: Readonly<Record<string, string>> = {
  r: "table",
  p: "table",
  v: "view",
  m: "materialized view",
  f: "foreign table",
  S: "sequence",
  i: "index",
  I: "index",
  c: "composite type"
}

const readPg = (sql: SqlClient.SqlClient, table: string): Effect.Effect<Layout, SqlError> =>
  Effect.gen(function*() {
    const relation = yield* sql<{ readonly kind: unknown }>`SELECT c.relkind AS kind
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = ${table}`.withoutTransform
    if (relation.length === 0) return { kind: "missing", notes: [], columns: [] }
    const kind = PG_KINDS[text(relation[0]!.kind)] ?? "schema object"
    if (kind !== "table") return { kind, notes: [], columns: [] }
    const info = yield* sql<
      { readonly name: unknown; readonly type: unknown; readonly dflt: unknown; readonly ident: unknown }
    >`SELECT column_name AS name, data_type AS type, column_default AS dflt, is_identity AS ident
FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = ${table}
ORDER BY ordinal_position`.withoutTransform
    const keys = yield* sql<{ readonly name: unknown }>`SELECT kcu.column_name AS name
FROM information_schema.table_constraints tc
JOIN information_schema.key_column_usage kcu
  ON kcu.constraint_schema = tc.constraint_schema AND kcu.constraint_name = tc.constraint_name
WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = current_schema() AND tc.table_name = ${table}`
      .withoutTransform
    const pk = new Set(keys.map((key) => text(key.name)))
    const columns = info.map((column): Column => ({
      name: text(column.name),
      type: text(column.type),
      pk: pk.has(text(column.name)),
      generated: isTrue(column.ident) || text(column.dflt).startsWith("nextval(")
    }))
    return { kind, notes: [], columns }
  })

/** @internal */
export const readLayout = (sql: SqlClient.SqlClient, dialect: Dialect, table: string): Effect.Effect<Layout, SqlError> =>
  dialect === "sqlite" ? readSqlite(sql, table) : readPg(sql, table)

/**
 * The differences between an existing table and the grants layout. Column names compare exactly
 * on PostgreSQL and case-insensitively on SQLite; declared types up to case.
 *
 * @internal
 */
export const layoutDifferences = (
  dialect: Dialect,
  layout: Layout,
  migrationsTable: string
): ReadonlyArray<string> => {
  if (layout.kind === "missing") {
    return [`it does not exist, although the migrations table "${migrationsTable}" records it as created`]
  }
  if (layout.kind !== "table") return [`it is ${/^[aeiou]/.test(layout.kind) ? "an" : "a"} ${layout.kind}, not a table`]
  const fold = dialect === "pg" ? (name: string) => name : (name: string) => name.toLowerCase()
  const differences: Array<string> = [...layout.notes]
  const found = new Map<string, Column>()
  for (const column of layout.columns) found.set(fold(column.name), column)
  const expectedTypes = EXPECTED_TYPES[dialect]
  for (const name of COLUMNS) {
    const column = found.get(name)
    if (column === undefined) {
      differences.push(`missing column "${name}"`)
      continue
    }
    const expected = expectedTypes[name]
    if (column.type.toLowerCase() !== expected.toLowerCase()) {
      const declared = column.type === "" ? "no type" : `type ${JSON.stringify(column.type)}`
      differences.push(`column "${name}" has ${declared}, expected ${expected}`)
    }
    if (column.pk && name !== "seq") differences.push(`column "${name}" is part of the primary key`)
    if (!column.pk && name === "seq") differences.push(`column "seq" is not the primary key`)
    if (name === "seq" && !column.generated) {
      differences.push(`column "seq" is not numbered by the database (no identity or sequence)`)
    }
  }
  for (const column of layout.columns) {
    if (!(COLUMNS as ReadonlyArray<string>).includes(fold(column.name))) {
      differences.push(`unexpected column ${JSON.stringify(column.name)}`)
    }
  }
  return differences
}
