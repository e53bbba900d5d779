/**
 * A `CodeRuntime` that runs Python (Linux): one `python3 -I -S` subprocess per run, by default
 * inside a bubblewrap sandbox that exposes only the interpreter's own files, read-only, runs the
 * program as an unprivileged user with no capabilities, no network, no host environment, no view
 * of other processes and no way to start processes, and whose run directory is the only writable
 * place (D-23). The layer probes the machine once, when it is built, and proves the boundary with
 * a self-check run inside it; when the sandbox cannot be built the layer fails with a
 * `SandboxUnavailableError` naming what is missing — it never runs weaker on its own. Weaker
 * levels exist only behind explicit `isolation` values whose names say they are for trusted code
 * only. {@link isolationNotes} says what each level isolates.
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
import { CodeRuntime, CodeRuntimeError, SandboxUnavailableError } from "../src/CodeRuntime.js"
import * as environment from "./internal/python/environment.js"
import * as options_ from "./internal/python/options.js"
import * as request_ from "./internal/python/request.js"
import * as run_ from "./internal/python/run.js"

/**
 * How far a run is separated from the host. `bwrap`, the default, is the sandbox that meets the
 * D-23 bar; the two others are for code you trust, and their names say so:
 * `unshare-trusted-code-only` (a process in its own user, network and pid namespaces: no
 * network, but the host's filesystem) and `process-trusted-code-only` (a process with resource
 * limits, nothing more).
 *
 * @since 0.1.0
 * @category models
 */
export type IsolationLevel = "bwrap" | "unshare-trusted-code-only" | "process-trusted-code-only"

/**
 * What each isolation level isolates, and what it leaves reachable.
 *
 * @since 0.1.0
 * @category constants
 */
export const isolationNotes: { readonly [L in IsolationLevel]: string } = environment.isolationNotes

/**
 * One property of the sandbox the self-check proved, or saw fail, from inside it.
 *
 * @since 0.1.0
 * @category models
 */
export interface BoundaryCheck {
  readonly name: string
  readonly held: boolean
  /** What the self-check saw. */
  readonly detail: string
}

/**
 * The host files the sandbox exposes (read-only) and how.
 *
 * @since 0.1.0
 * @category models
 */
export interface SandboxView {
  /** Directories bound read-only: the interpreter's stdlib and extension modules. */
  readonly dirs: ReadonlyArray<string>
  /** Files bound read-only: the executable, its shared libraries, the dynamic loader. */
  readonly files: ReadonlyArray<string>
  /** Symlinks recreated inside, `[path, target]` (e.g. `/lib -> usr/lib`). */
  readonly symlinks: ReadonlyArray<readonly [string, string]>
  /** Directories inside `dirs` masked by an empty read-only directory (`site-packages`). */
  readonly masked: ReadonlyArray<string>
  /** The names at the sandbox's root besides `dev`, `proc` and the run directory's parent. */
  readonly top: ReadonlyArray<string>
}

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
  /** The interpreter's own directories (its stdlib), exposed read-only inside the sandbox. */
  readonly interpreterPaths: ReadonlyArray<string>
  /** The levels that work here, weakest first. */
  readonly levels: ReadonlyArray<IsolationLevel>
  /** The `unshare` binary, when the `unshare-trusted-code-only` level works. */
  readonly unshare?: string | undefined
  /** The `bwrap` binary, when the sandbox works. */
  readonly bwrap?: string | undefined
  /** Why a level is missing, by level. */
  readonly unavailable: { readonly [L in IsolationLevel]?: string }
  /**
   * The sandbox: what it exposes, whether the runner drops to uid 65534 itself (the host runs
   * as root) or a user namespace maps it, and the self-check's findings.
   */
  readonly sandbox?: {
    readonly view: SandboxView
    readonly dropsPrivileges: boolean
    readonly checks: ReadonlyArray<BoundaryCheck>
  } | undefined
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
   * The level to run at (default `bwrap`, the sandbox). It is required: when it does not work
   * here the layer fails; nothing ever falls back to a weaker level.
   */
  readonly isolation?: IsolationLevel | undefined
  /** Limits that differ from `CodeRuntime.defaultLimits`. */
  readonly limits?: { readonly [K in keyof Limits]?: Limits[K] | undefined } | undefined
  /** Open file descriptors of the Python process (default 32). */
  readonly maxOpenFiles?: number | undefined
  /** The largest file the program may write (default 0: no file content at all). */
  readonly maxFileBytes?: number | undefined
  /** The longest protocol line the host accepts from the program (default 64 MiB). */
  readonly maxMessageBytes?: number | undefined
  /** A result of {@link probe} to reuse instead of probing again (nothing else is accepted). */
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
 * Finds the interpreter, the host files it needs, and which isolation levels work. Runs the
 * interpreter once with the host's environment to resolve launchers, once with an empty
 * environment to check it (Python 3.8 or newer) and list the files it maps, once under
 * `unshare`, and once inside the sandbox: the self-check whose findings decide whether `bwrap`
 * is available. Fails with a `CodeRuntimeError` when no usable interpreter is found.
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
 * for it to exit; `run` then fails with a `CodeRuntimeError`. Fails with a
 * `SandboxUnavailableError` when the chosen level (by default the sandbox) does not work here.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options?: Options
) => Effect.Effect<PythonRuntime, CodeRuntimeError | SandboxUnavailableError, Scope.Scope> = Effect.fn(
  "CodeRuntimePython.make"
)(function*(options?: Options) {
  const config = options_.readOptions(options)
  if (typeof config === "string") return yield* new CodeRuntimeError({ message: config })
  const found = config.environment ?? (yield* environment.probe(config.probe))
  const level = config.isolation
  if (!found.levels.includes(level)) {
    const { missing, remedy } = environment.remedyFor(found, level)
    return yield* new SandboxUnavailableError({ runtime: `CodeRuntimePython (isolation "${level}")`, missing, remedy })
  }
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
 * when no Python 3.8+ interpreter is found or an option is invalid, and with a
 * `SandboxUnavailableError` when the chosen isolation level (by default the sandbox) cannot be
 * built here.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<CodeRuntime, CodeRuntimeError | SandboxUnavailableError> =>
  Layer.scoped(CodeRuntime, make(options))
