/**
 * The libSQL opener the SQL layers share: their options read and checked once, the optional
 * `@effect/sql-libsql` imported, a local database kept on one connection (WAL on a file). Every
 * message starts with the layer's subject (`tool call log`, `approval grants`).
 *
 * @internal
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type { Subject } from "./messages.js"
import { causeMessage, sqlMessage } from "./messages.js"

/** @internal */
export interface ReadOptions {
  readonly url: string
  readonly authToken: string | undefined
}

const typeName = (value: unknown): string => (value === null ? "null" : typeof value)

/**
 * Reads `url` and `authToken` once: a URL must be a non-empty string without NUL, not a `file:`
 * URL without a path; a token a string when given (reason `InvalidOption`). With `checkObject`,
 * options that are not an object are refused before they are read.
 *
 * @internal
 */
export const readLibsqlOptions = <E>(
  subject: Subject<E>,
  options: unknown,
  checkObject: boolean
): Effect.Effect<ReadOptions, E> =>
  Effect.suspend(() => {
    const invalid = (option: string, message: string) =>
      Effect.fail(subject.error(message, { _tag: "InvalidOption", option }))
    const rule = `${subject.name} url must be a libSQL URL ("file:<path>", ":memory:" or a server URL)`
    let url: unknown
    let authToken: unknown
    try {
      if (checkObject && (typeof options !== "object" || options === null)) {
        return invalid("url", `${subject.name} options must be an object, not ${typeName(options)}`)
      }
      const read = options as { readonly url?: unknown; readonly authToken?: unknown }
      url = read.url
      authToken = read.authToken
    } catch (error) {
      return invalid("url", `${subject.name} options could not be read: ${causeMessage(error)}`)
    }
    if (typeof url !== "string") return invalid("url", `${rule}, not ${typeName(url)}`)
    if (url === "") return invalid("url", `${rule}, not an empty string`)
    if (url.includes("\u0000")) return invalid("url", `${rule}, not a string containing a NUL character`)
    if (/^file:(\/\/(localhost)?)?\/?(\?.*)?$/i.test(url)) {
      return invalid("url", `${rule}, not a file: URL without a path`)
    }
    if (authToken !== undefined && typeof authToken !== "string") {
      return invalid("authToken", `${subject.name} authToken must be a string, not ${typeName(authToken)}`)
    }
    return Effect.succeed({ url, authToken })
  })

type Sdk = LibsqlClient.LibsqlClientConfig.Live["liveClient"]
type Statement = Parameters<Sdk["execute"]>[0]

/**
 * A local libSQL client on one connection. The libSQL client hands its connection to every
 * transaction and opens a fresh one afterwards, which loses a `:memory:` database (and leaves a
 * file's old connection open); here a transaction is `BEGIN IMMEDIATE` … `COMMIT` on the same
 * connection. `@effect/sql-libsql` already serializes statements and transactions.
 */
const oneConnection = (sdk: Sdk): Sdk => {
  const run = (statement: string) => sdk.execute(statement)
  const client = {
    get closed() {
      return sdk.closed
    },
    get protocol() {
      return sdk.protocol
    },
    execute: (statement: Statement) => sdk.execute(statement),
    batch: sdk.batch.bind(sdk),
    migrate: sdk.migrate.bind(sdk),
    executeMultiple: sdk.executeMultiple.bind(sdk),
    sync: sdk.sync.bind(sdk),
    close: () => sdk.close(),
    transaction: async (mode?: string) => {
      await run(mode === "read" ? "BEGIN" : mode === "deferred" ? "BEGIN DEFERRED" : "BEGIN IMMEDIATE")
      let open = true
      const end = async (statement: string) => {
        if (!open) return
        open = false
        await run(statement)
      }
      return {
        get closed() {
          return !open
        },
        execute: (statement: Statement) => sdk.execute(statement),
        batch: async (statements: ReadonlyArray<Statement>) => {
          const results = []
          for (const statement of statements) results.push(await sdk.execute(statement))
          return results
        },
        executeMultiple: (statements: string) => sdk.executeMultiple(statements),
        commit: () => end("COMMIT"),
        rollback: () => end("ROLLBACK"),
        close: () => {
          if (open) void end("ROLLBACK").catch(() => undefined)
        }
      }
    }
  }
  return client as unknown as Sdk
}

const redactedUrl = (url: string): string => url.split("?")[0]!

const isMemoryUrl = (url: string): boolean => url === ":memory:" || /^file::memory:/i.test(url)

/**
 * Opens the database for the scope. Fails with `<subject> layerLibsql needs the optional package
 * @effect/sql-libsql: <msg>` or `<subject> could not open "<url>": <msg>` (the URL without its
 * query).
 *
 * @internal
 */
export const openLibsql = <E>(
  subject: Subject<E>,
  options: ReadOptions,
  intMode?: "bigint" | undefined
): Effect.Effect<SqlClient.SqlClient, E, Scope.Scope> =>
  Effect.gen(function*() {
    const openError = (message: string) =>
      subject.error(`${subject.name} could not open "${redactedUrl(options.url)}": ${message}`)
    const Libsql = yield* Effect.tryPromise({
      try: () => import("@effect/sql-libsql/LibsqlClient"),
      catch: (error) =>
        subject.error(
          `${subject.name} layerLibsql needs the optional package @effect/sql-libsql: ${causeMessage(error)}`
        )
    })
    const opened = yield* Libsql.make({
      url: options.url,
      ...(intMode === undefined ? {} : { intMode }),
      ...(options.authToken === undefined ? {} : { authToken: Redacted.make(options.authToken) })
    }).pipe(Effect.catchAllDefect((defect) => Effect.fail(openError(causeMessage(defect)))))
    const sdk = (opened as unknown as { readonly sdk?: Sdk }).sdk
    if (sdk === undefined || sdk.protocol !== "file") return opened as SqlClient.SqlClient
    const client = yield* Libsql.make({ liveClient: oneConnection(sdk) })
    if (!isMemoryUrl(options.url)) {
      // As @effect/sql-sqlite-node (better-sqlite3) does: WAL, synchronous NORMAL in WAL mode. A
      // write survives a crash of the process; the last ones may be lost when the machine loses power.
      // Other processes may hold the write lock for a moment (a durable runner's client processes
      // answering approvals): wait for it rather than fail at once.
      yield* Effect.zipRight(
        Effect.zipRight(client.unsafe("PRAGMA busy_timeout = 5000"), client.unsafe("PRAGMA journal_mode = WAL")),
        client.unsafe("PRAGMA synchronous = NORMAL")
      ).pipe(Effect.mapError((error) => openError(sqlMessage(error))))
      // libSQL's close leaves the -wal file behind; leaving WAL mode checkpoints it into the
      // database file and removes it, so the closed file holds every row on its own (it can be
      // copied alone). Runs before the connection closes; fails harmlessly when another
      // connection still has the database open.
      yield* Effect.addFinalizer(() => Effect.ignore(client.unsafe("PRAGMA journal_mode = DELETE")))
    }
    return client
  }).pipe(Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make))

/**
 * Runs `effect` with a `SqlClient` on the libSQL database `options` name, open for the scope
 * (options read as {@link readLibsqlOptions} does, opened as {@link openLibsql}).
 *
 * @internal
 */
export const withLibsql = <A, E>(
  subject: Subject<E>,
  options: unknown,
  checkObject: boolean,
  effect: Effect.Effect<A, E, SqlClient.SqlClient>
): Effect.Effect<A, E, Scope.Scope> =>
  Effect.flatMap(readLibsqlOptions(subject, options, checkObject), (read) =>
    Effect.flatMap(openLibsql(subject, read), (sql) => Effect.provideService(effect, SqlClient.SqlClient, sql)))
