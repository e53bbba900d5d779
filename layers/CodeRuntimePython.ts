/**
 * A `CodeRuntime` that runs Python (Linux): one `python3 -I -S` subprocess per run, with an
 * empty environment, a fresh temporary working directory, resource limits (address space, CPU
 * time, open files, file size) and a host kill timer. Where the machine allows it the process
 * also runs in its own user, network and pid namespaces (`unshare`) or in a bubblewrap sandbox
 * with a read-only view of the filesystem (`bwrap`); {@link isolationNotes} says what each level
 * isolates.
 *
 * **Details**
 *
 * - The program is the body of an async function: top-level `await` and `return` work, and line
 *   numbers in errors are the program's own. `return value` gives `value` (`return None` gives
 *   `null`); a bare `return` or falling off the end gives no value. Tuples are JSON arrays.
 * - Each namespace is a global object: `tools["any name"](args)` reaches every binding,
 *   `tools.name(args)` those whose names are identifiers (not `__dunder__`). A call takes one
 *   arguments object (or keyword arguments, which become it), is sent at once and returns an
 *   asyncio future, so `asyncio.gather` overlaps calls. A failed call raises the namespace's
 *   error class (`ToolCallError`, an `Exception` with `message` and the member-name attribute,
 *   e.g. `toolName`). Calls still running when the program returns are interrupted.
 * - Limits: `memoryBytes` is the address-space limit (Python itself needs about 25 MiB of it),
 *   `cpuMs` a CPU-time timer backed by the CPU resource limit in whole seconds, `stackBytes`
 *   the recursion limit at one frame per KiB, `consoleBytes` everything printed (stdout and
 *   stderr, one ordered stream of lines), `resultBytes` the completion value's JSON.
 *
 * @since 0.1.0
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { CodeRunRequest, Limits, Service } from "../src/CodeRuntime.js"
import { CodeRuntime, CodeRuntimeError } from "../src/CodeRuntime.js"
import * as environment from "./internal/python/environment.js"
import * as options_ from "./internal/python/options.js"
import * as request_ from "./internal/python/request.js"
import * as run_ from "./internal/python/run.js"

/**
 * How far a run is separated from the host, weakest first: `process` (a separate process with
 * resource limits), `unshare` (plus its own user, network and pid namespaces: no network, and
 * every process it starts dies with the run), `bwrap` (plus a read-only filesystem view).
 *
 * @since 0.1.0
 * @category models
 */
export type IsolationLevel = "process" | "unshare" | "bwrap"

/**
 * What each isolation level isolates, and what it leaves reachable.
 *
 * @since 0.1.0
 * @category constants
 */
export const isolationNotes: { readonly [L in IsolationLevel]: string } = environment.isolationNotes

/**
 * What {@link probe} found on this machine.
 *
 * @since 0.1.0
 * @category models
 */
export interface Environment {
  /** The real interpreter (a launcher such as a pyenv shim resolved to the binary it runs). */
  readonly executable: string
  /** Its version, `major.minor.micro`. */
  readonly version: string
  /** The directories the interpreter needs (its prefixes), kept visible inside bubblewrap. */
  readonly interpreterPaths: ReadonlyArray<string>
  /** The levels that work here, weakest first (`process` always). */
  readonly levels: ReadonlyArray<IsolationLevel>
  /** The `unshare` binary, when the `unshare` level works. */
  readonly unshare?: string | undefined
  /** The `bwrap` binary, when the `bwrap` level works. */
  readonly bwrap?: string | undefined
  /** Why a level is missing, by level. */
  readonly unavailable: { readonly [L in IsolationLevel]?: string }
}

/**
 * Where to look for the programs the runtime starts.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProbeOptions {
  /** The interpreter to use: a command on `PATH` or a path (default `python3`). */
  readonly executable?: string | undefined
  /** The `unshare` command or path (default `unshare`). */
  readonly unshare?: string | undefined
  /** The bubblewrap command or path (default `bwrap`). */
  readonly bwrap?: string | undefined
}

/**
 * Configuration of the runtime. Every limit has a safe default (`CodeRuntime.defaultLimits`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends ProbeOptions {
  /**
   * `best` (the default) takes the strongest level that works here; a level name requires
   * exactly that level and fails the layer when it does not work.
   */
  readonly isolation?: "best" | IsolationLevel | undefined
  /** Limits that differ from `CodeRuntime.defaultLimits`. */
  readonly limits?: { readonly [K in keyof Limits]?: Limits[K] | undefined } | undefined
  /** Open file descriptors of the Python process (default 32). */
  readonly maxOpenFiles?: number | undefined
  /** The largest file the program may write (default 0: no file content at all). */
  readonly maxFileBytes?: number | undefined
  /** The longest protocol line the host accepts from the program (default 64 MiB). */
  readonly maxMessageBytes?: number | undefined
  /** A probe result to reuse instead of probing again. */
  readonly environment?: Environment | undefined
}

/**
 * The Python runtime: a `CodeRuntime` service plus what it runs with.
 *
 * @since 0.1.0
 * @category models
 */
export interface PythonRuntime extends Service {
  readonly level: IsolationLevel
  readonly environment: Environment
  readonly limits: Limits
}

/**
 * Finds the interpreter and which isolation levels work. Runs the interpreter once with the
 * host's environment to resolve launchers, once with an empty environment to check it (Python
 * 3.8 or newer), and once under each of `unshare` and `bwrap` when they are installed. Fails
 * with a `CodeRuntimeError` when no usable interpreter is found.
 *
 * @since 0.1.0
 * @category constructors
 */
export const probe: (options?: ProbeOptions) => Effect.Effect<Environment, CodeRuntimeError> = Effect.fn(
  "CodeRuntimePython.probe"
)(function*(options?: ProbeOptions) {
  const read = options_.readProbeOptions(options)
  if (typeof read === "string") return yield* new CodeRuntimeError({ message: read })
  return yield* environment.probe(read)
})

/**
 * Builds the runtime in a scope. Closing the scope kills every live run's process and waits
 * for it to exit; `run` then fails with a `CodeRuntimeError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: Options) => Effect.Effect<PythonRuntime, CodeRuntimeError, Scope.Scope> = Effect.fn(
  "CodeRuntimePython.make"
)(function*(options?: Options) {
  const config = options_.readOptions(options)
  if (typeof config === "string") return yield* new CodeRuntimeError({ message: config })
  const found = config.environment ?? (yield* environment.probe(config.probe))
  const chosen = environment.chooseLevel(found, config.isolation)
  if ("problem" in chosen) return yield* new CodeRuntimeError({ message: chosen.problem })
  const level = chosen.level
  const registry: run_.Registry = { closed: false, live: new Set() }
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      registry.closed = true
      const live = Array.from(registry.live)
      for (const entry of live) entry.dispose()
      return Effect.forEach(live, (entry) => Deferred.await(entry.exited), { discard: true })
    })
  )
  const launch = environment.launcher(found, level)
  const run = Effect.fn("CodeRuntimePython.run")(function*(request: CodeRunRequest) {
    if (registry.closed) return yield* new CodeRuntimeError({ message: "the Python runtime is closed" })
    const read = request_.readRequest(request)
    if (typeof read === "string") return yield* new CodeRuntimeError({ message: read })
    return yield* run_.runProgram({ ...read, launch, limits: config.limits, python: config.python, registry })
  })
  const runtime: PythonRuntime = {
    language: "python",
    isolation: level === "bwrap" ? "container" : "process",
    level,
    environment: found,
    limits: config.limits,
    run
  }
  return runtime
})

/**
 * The Python runtime as the mounted `CodeRuntime`. The layer fails with a `CodeRuntimeError`
 * when no Python 3.8+ interpreter is found or a required isolation level does not work.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<CodeRuntime, CodeRuntimeError> =>
  Layer.scoped(CodeRuntime, make(options))
