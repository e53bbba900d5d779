/**
 * The Code Mode SDK renderers: the `tools:sdk` prompt text that tells a model how to call the
 * visible tools from a `run_code` program, for TypeScript and Python. Every renderer is pure,
 * total and deterministic.
 *
 * @since 0.1.0
 */

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
  /** The tool's output JSON Schema; absent means any JSON value. */
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
 * The TypeScript declarations (the fenced block's content).
 *
 * @since 0.1.0
 * @category rendering
 */
export const declarationsTypeScript = (_tools: ReadonlyArray<SdkTool>): string => "declare const tools: {\n}\n"

/**
 * The Python declarations (the fenced block's content).
 *
 * @since 0.1.0
 * @category rendering
 */
export const declarationsPython = (_tools: ReadonlyArray<SdkTool>): string =>
  "from typing import Protocol\n\nclass Tools(Protocol):\n    pass\n\ntools: Tools\n"

/**
 * The whole TypeScript `tools:sdk` section.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderTypeScript = (tools: ReadonlyArray<SdkTool>): string =>
  "## Writing code for run_code\n\nThe available tools:\n\n```ts\n" + declarationsTypeScript(tools) + "```"

/**
 * The whole Python `tools:sdk` section.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderPython = (tools: ReadonlyArray<SdkTool>): string =>
  "## Writing code for run_code\n\nThe available tools:\n\n```python\n" + declarationsPython(tools) + "```"

/**
 * The whole `tools:sdk` section for `language`.
 *
 * @since 0.1.0
 * @category rendering
 */
export const render = (language: SdkLanguage, tools: ReadonlyArray<SdkTool>): string =>
  language === "python" ? renderPython(tools) : renderTypeScript(tools)

/**
 * Whether `u` names a language with a renderer (own-key lookup: `"toString"` is not one).
 *
 * @since 0.1.0
 * @category guards
 */
export const isSdkLanguage = (u: unknown): u is SdkLanguage => u === "typescript" || u === "python"
