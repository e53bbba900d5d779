/**
 * The Code Mode SDK renderers: the `tools:sdk` prompt text that tells a model how to call the
 * visible tools from a `run_code` program, in TypeScript or Python.
 *
 * Every renderer is pure, total and deterministic: tools are sorted by name with plain `<`
 * (UTF-16 code units, stable for equal names), so an unchanged tool set renders byte-identically
 * whatever its registration order. Each field of each tool is read once; a schema that cannot be
 * read or is outside the enforced JSON-Schema subset renders as `unknown` (TypeScript) or `Any`
 * (Python) for that whole root, and an entry without a readable string `name` is left out.
 * Types describe the JSON side of each schema. Rendering is iterative, so deep schemas do not
 * overflow the stack.
 *
 * @since 0.1.0
 */
import * as python from "./internal/codeMode/sdkPython.js"
import * as prose from "./internal/codeMode/sdkProse.js"
import * as typescript from "./internal/codeMode/sdkTypeScript.js"

/**
 * One tool as the SDK sees it: detached copies of its model-facing fields.
 *
 * @since 0.1.0
 * @category models
 */
export interface SdkTool {
  /** The tool's name. */
  readonly name: string
  /** The tool's model-facing description. */
  readonly description: string
  /** The tool's model-facing JSON Schema for its arguments. */
  readonly parameters: unknown
  /** The tool's output JSON Schema; absent means any JSON value (`JsonValue` / `Any`). */
  readonly output?: unknown
}

/**
 * A language with an SDK renderer.
 *
 * @since 0.1.0
 * @category models
 */
export type SdkLanguage = "typescript" | "python"

/**
 * The languages with an SDK renderer, in a fixed order.
 *
 * @since 0.1.0
 * @category constants
 */
export const languages: ReadonlyArray<SdkLanguage> = Object.freeze(["typescript", "python"])

/**
 * Whether `u` names a language with a renderer. Only the exact strings match: inherited names
 * such as `"toString"` do not.
 *
 * @since 0.1.0
 * @category guards
 */
export const isSdkLanguage = (u: unknown): u is SdkLanguage => u === "typescript" || u === "python"

/**
 * The TypeScript declarations (the content of the section's fenced block, no trailing newline):
 * `JsonValue`, `ToolArgsMap`, `ToolOutputMap`, `ToolName`, `ToolCallError` and `tools`.
 *
 * @since 0.1.0
 * @category rendering
 */
export const declarationsTypeScript: (tools: ReadonlyArray<SdkTool>) => string = typescript.declarations

/**
 * The Python declarations (the content of the section's fenced block, no trailing newline): the
 * `typing` import, `ToolCallError`, the `TypedDict` stubs and the `Tools` protocol.
 *
 * @since 0.1.0
 * @category rendering
 */
export const declarationsPython: (tools: ReadonlyArray<SdkTool>) => string = python.declarations

/**
 * The instruction prose that opens the TypeScript section, ending with `The available tools:`.
 *
 * @since 0.1.0
 * @category constants
 */
export const proseTypeScript: string = prose.TYPESCRIPT

/**
 * The instruction prose that opens the Python section, ending with `The available tools:`.
 *
 * @since 0.1.0
 * @category constants
 */
export const prosePython: string = prose.PYTHON

/**
 * The whole TypeScript `tools:sdk` section: the prose, a blank line, then the declarations in a
 * ` ```ts ` fence.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderTypeScript = (tools: ReadonlyArray<SdkTool>): string =>
  `${prose.TYPESCRIPT}\n\n\`\`\`ts\n${typescript.declarations(tools)}\n\`\`\``

/**
 * The whole Python `tools:sdk` section: the prose, a blank line, then the declarations in a
 * ` ```python ` fence.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderPython = (tools: ReadonlyArray<SdkTool>): string =>
  `${prose.PYTHON}\n\n\`\`\`python\n${python.declarations(tools)}\n\`\`\``

/**
 * The whole `tools:sdk` section in `language`. Check an untrusted language with
 * {@link isSdkLanguage} first: any value other than `"python"` renders TypeScript.
 *
 * @since 0.1.0
 * @category rendering
 */
export const render = (language: SdkLanguage, tools: ReadonlyArray<SdkTool>): string =>
  language === "python" ? renderPython(tools) : renderTypeScript(tools)
