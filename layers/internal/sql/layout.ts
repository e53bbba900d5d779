/**
 * The layout check of an existing table, shared by the SQL layers: what the table looks like on
 * SQLite, PostgreSQL, MySQL or SQL Server, and how it differs from the expected columns.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type { Subject } from "./messages.js"
import { storageError } from "./messages.js"

/** @internal */
export type Dialect = "sqlite" | "pg" | "mysql" | "mssql"

/** @internal */
export interface Column {
  readonly name: string
  readonly type: string
  readonly pk: boolean
  /** Whether the database numbers the column itself (identity, sequence, auto-increment). */
  readonly generated: boolean
}

/** @internal */
export interface Layout {
  /** `"table"`, `"missing"`, or what the object is instead (`"view"`, `"index"`, …). */
  readonly kind: string
  readonly notes: ReadonlyArray<string>
  readonly columns: ReadonlyArray<Column>
}

/** The layout a table must have: its columns (`seq` the auto-numbered key) and their types. @internal */
export interface Expected<Name extends string> {
  readonly columns: ReadonlyArray<Name>
  /** Declared types per column, compared case-insensitively. */
  readonly types: Readonly<Record<Name, string>>
  /** The migrations table named when the table is missing although recorded as created. */
  readonly migrationsTable: string
}

const text = (value: unknown): string => (typeof value === "string" ? value : "")

const isTrue = (value: unknown): boolean =>
  value === true || value === 1 || value === 1n || value === "1" || value === "YES" || value === "yes"

const missing: Layout = { kind: "missing", notes: [], columns: [] }

const readSqlite = (sql: SqlClient.SqlClient, table: string): Effect.Effect<Layout, SqlError> =>
  Effect.gen(function*() {
    const schema = yield* sql<{ readonly type: unknown; readonly sql: unknown }>`SELECT type, sql FROM sqlite_master WHERE name = ${table}`
      .withoutTransform
    if (schema.length === 0) return missing
    const kind = text(schema[0]!.type)
    if (kind !== "table") return { kind: kind || "schema object", notes: [], columns: [] }
    const notes = /\bWITHOUT\s+ROWID\b/i.test(text(schema[0]!.sql))
      ? ["it is a WITHOUT ROWID table (seq is not assigned automatically)"]
      : []
    const info = yield* sql.unsafe<{ readonly name: unknown; readonly type: unknown; readonly pk: unknown }>(
      `PRAGMA table_info(${table})`
    ).withoutTransform
    const columns = info.map((column): Column => {
      const pk = column.pk !== 0 && column.pk !== 0n && column.pk !== "0"
      // An INTEGER PRIMARY KEY of a rowid table is the rowid: SQLite numbers it.
      return { name: text(column.name), type: text(column.type), pk, generated: true }
    })
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
    if (relation.length === 0) return missing
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

const readMysql = (sql: SqlClient.SqlClient, table: string): Effect.Effect<Layout, SqlError> =>
  Effect.gen(function*() {
    const relation = yield* sql<{ readonly kind: unknown }>`SELECT TABLE_TYPE AS kind FROM information_schema.TABLES
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ${table}`.withoutTransform
    if (relation.length === 0) return missing
    const kind = text(relation[0]!.kind) === "BASE TABLE" ? "table" : "view"
    if (kind !== "table") return { kind, notes: [], columns: [] }
    const info = yield* sql<
      { readonly name: unknown; readonly type: unknown; readonly pk: unknown; readonly extra: unknown }
    >`SELECT COLUMN_NAME AS name, DATA_TYPE AS type, COLUMN_KEY AS pk, EXTRA AS extra
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ${table}
ORDER BY ORDINAL_POSITION`.withoutTransform
    const columns = info.map((column): Column => ({
      name: text(column.name),
      type: text(column.type),
      pk: text(column.pk) === "PRI",
      generated: /auto_increment/i.test(text(column.extra))
    }))
    return { kind, notes: [], columns }
  })

const readMssql = (sql: SqlClient.SqlClient, table: string): Effect.Effect<Layout, SqlError> =>
  Effect.gen(function*() {
    const relation = yield* sql<{ readonly kind: unknown }>`SELECT TABLE_TYPE AS kind FROM INFORMATION_SCHEMA.TABLES
WHERE TABLE_SCHEMA = SCHEMA_NAME() AND TABLE_NAME = ${table}`.withoutTransform
    if (relation.length === 0) return missing
    const kind = text(relation[0]!.kind) === "BASE TABLE" ? "table" : "view"
    if (kind !== "table") return { kind, notes: [], columns: [] }
    const info = yield* sql<{ readonly name: unknown; readonly type: unknown; readonly ident: unknown }>`SELECT
  c.COLUMN_NAME AS name, c.DATA_TYPE AS type,
  COLUMNPROPERTY(OBJECT_ID(QUOTENAME(c.TABLE_SCHEMA) + '.' + QUOTENAME(c.TABLE_NAME)), c.COLUMN_NAME, 'IsIdentity') AS ident
FROM INFORMATION_SCHEMA.COLUMNS c WHERE c.TABLE_SCHEMA = SCHEMA_NAME() AND c.TABLE_NAME = ${table}
ORDER BY c.ORDINAL_POSITION`.withoutTransform
    const keys = yield* sql<{ readonly name: unknown }>`SELECT kcu.COLUMN_NAME AS name
FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS tc
JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE kcu
  ON kcu.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND kcu.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
WHERE tc.CONSTRAINT_TYPE = 'PRIMARY KEY' AND tc.TABLE_SCHEMA = SCHEMA_NAME() AND tc.TABLE_NAME = ${table}`
      .withoutTransform
    const pk = new Set(keys.map((key) => text(key.name).toLowerCase()))
    const columns = info.map((column): Column => ({
      name: text(column.name),
      type: text(column.type),
      pk: pk.has(text(column.name).toLowerCase()),
      generated: isTrue(column.ident)
    }))
    return { kind, notes: [], columns }
  })

const READERS: Record<Dialect, (sql: SqlClient.SqlClient, table: string) => Effect.Effect<Layout, SqlError>> = {
  sqlite: readSqlite,
  pg: readPg,
  mysql: readMysql,
  mssql: readMssql
}

/** @internal */
export const readLayout = (
  sql: SqlClient.SqlClient,
  dialect: Dialect,
  table: string
): Effect.Effect<Layout, SqlError> => READERS[dialect](sql, table)

/**
 * The differences between an existing table and the expected layout. Column names compare exactly
 * on PostgreSQL (an unquoted `seq` means `seq`) and case-insensitively elsewhere; declared types
 * up to case; `NOT NULL` is not required.
 *
 * @internal
 */
export const layoutDifferences = <Name extends string>(
  dialect: Dialect,
  layout: Layout,
  expected: Expected<Name>
): ReadonlyArray<string> => {
  if (layout.kind === "missing") {
    return [`it does not exist, although the migrations table "${expected.migrationsTable}" records it as created`]
  }
  if (layout.kind !== "table") return [`it is ${/^[aeiou]/.test(layout.kind) ? "an" : "a"} ${layout.kind}, not a table`]
  const fold = dialect === "pg" ? (name: string) => name : (name: string) => name.toLowerCase()
  const differences: Array<string> = [...layout.notes]
  const found = new Map<string, Column>()
  for (const column of layout.columns) found.set(fold(column.name), column)
  for (const name of expected.columns) {
    const column = found.get(name)
    if (column === undefined) {
      differences.push(`missing column "${name}"`)
      continue
    }
    const type = expected.types[name]
    if (column.type.toLowerCase() !== type.toLowerCase()) {
      const declared = column.type === "" ? "no type" : `type ${JSON.stringify(column.type)}`
      differences.push(`column "${name}" has ${declared}, expected ${type}`)
    }
    if (column.pk && name !== "seq") differences.push(`column "${name}" is part of the primary key`)
    if (!column.pk && name === "seq") differences.push(`column "seq" is not the primary key`)
    if (name === "seq" && !column.generated) {
      differences.push(`column "seq" is not numbered by the database (no identity or sequence)`)
    }
  }
  const names: ReadonlyArray<string> = expected.columns
  for (const column of layout.columns) {
    if (!names.includes(fold(column.name))) differences.push(`unexpected column ${JSON.stringify(column.name)}`)
  }
  return differences
}

/**
 * Reads the table's layout and fails with `<subject> table "<table>" has a different layout:
 * <difference>; …` (reason `TableLayout`), or `<checkError>: <msg>` when it cannot be read. With
 * `kindOnly`, only another kind of object in the table's place is refused (before a migration).
 *
 * @internal
 */
export const checkLayout = <E, Name extends string>(
  subject: Subject<E>,
  sql: SqlClient.SqlClient,
  dialect: Dialect,
  table: string,
  expected: Expected<Name>,
  options: { readonly checkError: string; readonly kindOnly?: boolean }
): Effect.Effect<void, E> =>
  readLayout(sql, dialect, table).pipe(
    Effect.mapError(storageError(subject, options.checkError)),
    Effect.flatMap((layout) => {
      const differences = options.kindOnly === true && (layout.kind === "table" || layout.kind === "missing")
        ? []
        : layoutDifferences(dialect, layout, expected)
      if (differences.length === 0) return Effect.void
      return Effect.fail(
        subject.error(`${subject.name} table "${table}" has a different layout: ${differences.join("; ")}`, {
          _tag: "TableLayout",
          table,
          differences
        })
      )
    })
  )
