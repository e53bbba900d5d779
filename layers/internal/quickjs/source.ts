/**
 * A program's source made runnable: the size check, the async-function wrapper (so top-level
 * `await` and `return` work) and, for TypeScript, type stripping with amaro in strip-only mode,
 * which keeps every line and column in place. Positions in errors are the model's: the wrapper
 * adds exactly one line before the program.
 *
 * @internal
 */
import type { Limits } from "../../../src/CodeRuntime.js"
import { formatBytes } from "./config.js"

type Amaro = { readonly transformSync: (source: string, options: { readonly mode: "strip-only" }) => { code: string } }

/** The line before the program. @internal */
export const WRAPPER_HEAD = "(async function () {\n"
const WRAPPER_TAIL = "\n})"

let amaro: Promise<Amaro> | undefined

/**
 * The stripper, loaded on first call (once per process or worker).
 *
 * @internal
 */
export const loadStripper = (): Promise<Amaro> => {
  if (amaro === undefined) {
    amaro = import("amaro").then((module: Record<string, unknown>) => {
      const candidate = (typeof module.transformSync === "function" ? module : module.default) as Amaro | undefined
      if (candidate === undefined || typeof candidate.transformSync !== "function") {
        throw new Error("amaro has no transformSync")
      }
      return candidate
    }).catch((error: unknown) => {
      amaro = undefined
      throw new Error(
        `the QuickJS code runtime needs the optional package amaro@1.2.1 to run TypeScript (${
          error instanceof Error ? error.message : "not loadable"
        })`
      )
    })
  }
  return amaro
}

/** A program ready for the engine, or why it cannot run. @internal */
export type Prepared =
  | { readonly _tag: "Ready"; readonly code: string; readonly filename: string; readonly lines: number }
  | { readonly _tag: "Refused"; readonly kind: "exception" | "output-limit"; readonly message: string }

const lineCount = (text: string): number => {
  let lines = 1
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lines++
  return lines
}

/** `(line L, column C)` for a 1-based wrapped-source line, clamped to the program's lines. @internal */
export const position = (wrappedLine: number, column: number, lines: number): string => {
  const line = Math.min(Math.max(wrappedLine - 1, 1), lines)
  return `(line ${line}, column ${Math.max(column, 1)})`
}

const HINT = "the code runs type-stripped, so write erasable TypeScript only (no enum, namespace or parameter " +
  "properties; use `as` for assertions)"

const stripFailure = (error: unknown, lines: number): string => {
  let message: unknown, code: unknown, line: unknown, column: unknown
  try {
    const record = error as Record<string, unknown>
    message = record.message
    code = record.code
    line = record.startLine
    column = record.startColumn
  } catch {
    message = undefined
  }
  const text = typeof message === "string" && message !== "" ? message.split("\n")[0] : "the program could not be parsed"
  const where = typeof line === "number" && typeof column === "number" ? ` ${position(line, column + 1, lines)}` : ""
  return `SyntaxError: ${text}${where}${code === "UnsupportedSyntax" ? `; ${HINT}` : ""}`
}

/**
 * Checks the size and wraps (and strips) `program`. `stripper` is the loaded amaro when the
 * runtime runs TypeScript.
 *
 * @internal
 */
export const prepare = (program: string, limits: Limits, stripper: Amaro | undefined): Prepared => {
  const bytes = Buffer.byteLength(program, "utf8")
  if (bytes > limits.sourceBytes) {
    return {
      _tag: "Refused",
      kind: "output-limit",
      message: `the program is ${bytes} bytes, over the ${formatBytes(limits.sourceBytes)} source limit`
    }
  }
  const lines = lineCount(program)
  const wrapped = WRAPPER_HEAD + program + WRAPPER_TAIL
  if (stripper === undefined) return { _tag: "Ready", code: wrapped, filename: "program.js", lines }
  try {
    return { _tag: "Ready", code: stripper.transformSync(wrapped, { mode: "strip-only" }).code, filename: "program.ts", lines }
  } catch (error) {
    return { _tag: "Refused", kind: "exception", message: stripFailure(error, lines) }
  }
}
