/**
 * The code runtime seam of Code Mode: the service a `run_code` program runs in. A runtime runs
 * one program per request as the body of an async function, exposes the request's namespaces as
 * program globals, and reports every program outcome as a value (`CodeRunResult`); `run` fails
 * only when the request itself misuses the contract.
 *
 * The embedded default (QuickJS in WebAssembly) and the Python subprocess runtime are Layers in
 * `effect-tool-runtime/layers`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * The language a runtime runs. `typescript` and `python` have SDK renderers; any other language
 * makes a non-native mode fail loudly.
 *
 * @since 0.1.0
 * @category models
 */
export type CodeLanguage = string

/**
 * What separates a program from the host (informational).
 *
 * @since 0.1.0
 * @category models
 */
export type CodeIsolation = "wasm" | "worker-thread" | "process" | "container"

/**
 * Why a binding call failed, as the program sees it: an instance of the namespace's error class
 * whose `message` is this message.
 *
 * @since 0.1.0
 * @category errors
 */
export class BindingFailure extends Schema.TaggedError<BindingFailure>("effect-tool-runtime/BindingFailure")(
  "BindingFailure",
  { message: Schema.String }
) {}

/**
 * One host function a program can call. It receives the call's arguments as a lossless JSON
 * value (already decoded by the runtime) and succeeds with a JSON value for the program or fails
 * with the message the program's error will carry.
 *
 * The runtime interrupts binding effects still running when the run ends: a binding owns any work
 * that must outlive that (the `run_code` bridge does).
 *
 * @since 0.1.0
 * @category models
 */
export type Binding = (args: unknown) => Effect.Effect<unknown, BindingFailure>

/**
 * The error class a namespace's binding failures surface as inside the program.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorClass {
  /** The class's global name and `Error.name`. */
  readonly name: string
  /** The property that names the binding that failed. */
  readonly memberNameProperty: string
}

/**
 * A program global (`global`) whose own members are the bindings. Binding names are arbitrary
 * strings, read as own properties only (`__proto__` and `constructor` are ordinary names).
 *
 * @since 0.1.0
 * @category models
 */
export interface Namespace {
  readonly global: string
  readonly functions: Readonly<Record<string, Binding>>
  readonly errorClass?: ErrorClass | undefined
}

/**
 * One program to run. The program is the body of an async function (top-level `await` and
 * `return`); its completion value becomes `value`. Limits belong to the runtime's configuration,
 * never to the request. Aborting `signal` (or interrupting the fiber that runs the request) stops
 * the program hard and yields kind `abort`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CodeRunRequest {
  readonly program: string
  readonly bindings: ReadonlyArray<Namespace>
  readonly signal?: AbortSignal | undefined
}

/**
 * How a program ended without a value: a throw or parse error (`exception`), a time budget
 * (`timeout`), the signal (`abort`), the engine instance or subprocess dying (`worker-exit`), a
 * completion value that is not lossless JSON (`invalid-output`), output over a cap
 * (`output-limit`), the memory cap (`memory`) or too many tool calls (`call-limit`). A limit is
 * never reported as `exception`.
 *
 * @since 0.1.0
 * @category models
 */
export type CodeRunErrorKind =
  | "exception"
  | "timeout"
  | "abort"
  | "worker-exit"
  | "invalid-output"
  | "output-limit"
  | "memory"
  | "call-limit"

/**
 * Every kind of `CodeRunErrorKind`.
 *
 * @since 0.1.0
 * @category constants
 */
export const errorKinds: ReadonlyArray<CodeRunErrorKind> = [
  "exception",
  "timeout",
  "abort",
  "worker-exit",
  "invalid-output",
  "output-limit",
  "memory",
  "call-limit"
]

/**
 * A program's outcome: its completion `value` (absent when the program returned `undefined`),
 * the lines it printed, and `error` when it did not complete.
 *
 * @since 0.1.0
 * @category models
 */
export interface CodeRunResult {
  readonly value?: unknown
  readonly logs: ReadonlyArray<string>
  readonly error?: { readonly kind: CodeRunErrorKind; readonly message: string } | undefined
}

/**
 * A request the runtime refuses (invalid namespace names, a disposed runtime). Program outcomes
 * are never this error.
 *
 * @since 0.1.0
 * @category errors
 */
export class CodeRuntimeError extends Schema.TaggedError<CodeRuntimeError>("effect-tool-runtime/CodeRuntimeError")(
  "CodeRuntimeError",
  { message: Schema.String }
) {}

/**
 * A code runtime that cannot build its isolation boundary on this machine (D-23): building its
 * Layer fails with this error, naming what is missing (`missing`) and how to get it (`remedy`);
 * it never runs weaker on its own.
 *
 * @since 0.1.0
 * @category errors
 */
export class SandboxUnavailableError
  extends Schema.TaggedError<SandboxUnavailableError>("effect-tool-runtime/SandboxUnavailableError")(
    "SandboxUnavailableError",
    { runtime: Schema.String, missing: Schema.String, remedy: Schema.String }
  )
{
  override get message(): string {
    return `${this.runtime} cannot build its sandbox here: ${this.missing}. To fix: ${this.remedy}`
  }
}

/**
 * The code runtime service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly language: CodeLanguage
  readonly isolation: CodeIsolation
  readonly run: (request: CodeRunRequest) => Effect.Effect<CodeRunResult, CodeRuntimeError>
}

/**
 * The mounted code runtime. Code Mode looks it up at each use: a native deployment needs none.
 *
 * @since 0.1.0
 * @category tags
 */
export class CodeRuntime extends Context.Tag("effect-tool-runtime/CodeRuntime")<CodeRuntime, Service>() {}

/**
 * Limits every runtime enforces, each with a safe default (`defaultLimits`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** Guest CPU time, counted only while guest code runs (not while it awaits tools). */
  readonly cpuMs: number
  /** Wall time of the whole run, tool time included. */
  readonly wallMs: number
  /** The engine instance's total memory. */
  readonly memoryBytes: number
  /** The guest stack. */
  readonly stackBytes: number
  /** The program's source text (UTF-8 bytes). */
  readonly sourceBytes: number
  /** The completion value's JSON text (UTF-8 bytes). */
  readonly resultBytes: number
  /** Everything the program prints (UTF-8 bytes). */
  readonly consoleBytes: number
  /** Tool calls per run. */
  readonly maxToolCalls: number
  /** Tool calls in flight at once; later calls queue. */
  readonly maxInFlight: number
}

/**
 * The default limits: CPU 5 s, wall 60 s, memory 64 MiB, stack 1 MiB, source 256 KiB,
 * result 1 MiB, console 64 KiB, 256 tool calls per run, 32 in flight.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimits: Limits = Object.freeze({
  cpuMs: 5_000,
  wallMs: 60_000,
  memoryBytes: 64 * 1024 * 1024,
  stackBytes: 1024 * 1024,
  sourceBytes: 256 * 1024,
  resultBytes: 1024 * 1024,
  consoleBytes: 64 * 1024,
  maxToolCalls: 256,
  maxInFlight: 32
})

/**
 * The keys of `Limits`, in declaration order (for option readers).
 *
 * @since 0.1.0
 * @category constants
 */
export const limitKeys: ReadonlyArray<keyof Limits> = Object.freeze([
  "cpuMs",
  "wallMs",
  "memoryBytes",
  "stackBytes",
  "sourceBytes",
  "resultBytes",
  "consoleBytes",
  "maxToolCalls",
  "maxInFlight"
])

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Reserved words of ECMAScript and Python together: no namespace global or error class may use
 * one, so a namespace is portable across languages.
 *
 * @since 0.1.0
 * @category constants
 */
export const reservedWords: ReadonlySet<string> = new Set([
  // ECMAScript (strict mode and future reserved words, plus the literals)
  "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete",
  "do", "else", "enum", "export", "extends", "false", "finally", "for", "function", "if", "implements",
  "import", "in", "instanceof", "interface", "let", "new", "null", "package", "private", "protected",
  "public", "return", "static", "super", "switch", "this", "throw", "true", "try", "typeof", "var",
  "void", "while", "with", "yield", "arguments", "eval", "undefined", "NaN", "Infinity",
  // Python hard and soft keywords
  "False", "None", "True", "and", "as", "assert", "async", "def", "del", "elif", "except", "from",
  "global", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "match", "type", "_"
])

const RESERVED_GLOBALS: ReadonlySet<string> = new Set([
  "console",
  "__dsh_main__",
  "__builtins__",
  "__name__",
  "__debug__"
])

const RESERVED_MEMBER_PROPERTIES: ReadonlySet<string> = new Set([
  "name",
  "message",
  "stack",
  "args",
  "with_traceback",
  "add_note"
])

const quote = (value: unknown): string => typeof value === "string" ? JSON.stringify(value) : `a ${typeof value}`

const nameProblem = (what: string, value: unknown): string | undefined => {
  if (typeof value !== "string" || !IDENTIFIER.test(value)) {
    return `${what} ${quote(value)} must match [A-Za-z_][A-Za-z0-9_]*`
  }
  if (reservedWords.has(value)) return `${what} ${quote(value)} is a reserved word`
  return undefined
}

/**
 * The RT-4 check of one namespace: `undefined` when it is valid, otherwise what is wrong. Reads
 * each field once; hostile values give a message, never a throw.
 *
 * @since 0.1.0
 * @category validation
 */
export const namespaceProblem = (namespace: unknown): string | undefined => {
  if (typeof namespace !== "object" || namespace === null) return "a namespace must be an object"
  let global: unknown, functions: unknown, errorClass: unknown
  try {
    const record = namespace as Record<string, unknown>
    global = record.global
    functions = record.functions
    errorClass = record.errorClass
  } catch {
    return "a namespace could not be read"
  }
  const globalProblem = nameProblem("namespace global", global)
  if (globalProblem !== undefined) return globalProblem
  if (RESERVED_GLOBALS.has(global as string)) return `namespace global ${quote(global)} is reserved`
  if (typeof functions !== "object" || functions === null) {
    return `namespace ${quote(global)} needs a functions object`
  }
  if (errorClass === undefined) return undefined
  if (typeof errorClass !== "object" || errorClass === null) {
    return `namespace ${quote(global)} has an errorClass that is not an object`
  }
  let name: unknown, member: unknown
  try {
    const record = errorClass as Record<string, unknown>
    name = record.name
    member = record.memberNameProperty
  } catch {
    return `namespace ${quote(global)} has an errorClass that could not be read`
  }
  const classProblem = nameProblem("error class name", name)
  if (classProblem !== undefined) return classProblem
  if (typeof member !== "string" || member.length === 0) {
    return `error class ${quote(name)} needs a non-empty memberNameProperty`
  }
  if (RESERVED_MEMBER_PROPERTIES.has(member) || /^__.*__$/.test(member)) {
    return `error class ${quote(name)} cannot use ${quote(member)} as its memberNameProperty`
  }
  return undefined
}
