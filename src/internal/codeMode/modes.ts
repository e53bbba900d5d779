/**
 * Code Mode's fixed texts, messages and checks (MODE-3, MODE-4, MODE-7, PTC-5, REG-10): the
 * `run_code` schema flavors per language, the code-only rule, the runtime requirement, the
 * transport marker the registry projects by, and safe formatting of abort reasons.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import type * as CodeRuntime from "../../CodeRuntime.js"
import { isSdkLanguage, type SdkLanguage } from "../../CodeSdk.js"
import type { JsonSchema } from "../../JsonSchema.js"
import { RUN_CODE_NAME } from "../../ToolRegistry.js"

/**
 * A Code Mode configuration or use that cannot work: a non-native mode without a code runtime,
 * a runtime language without an SDK renderer or `run_code` flavor, an invalid
 * `maxParallelSubCalls`. The message is the specified text; hints name this library's API.
 *
 * @internal
 */
export class CodeModeError extends Schema.TaggedError<CodeModeError>("effect-tool-runtime/CodeModeError")(
  "CodeModeError",
  { message: Schema.String }
) {}

/** @internal */
export const DEFAULT_MAX_PARALLEL_SUB_CALLS = 10

/** @internal */
export const MAX_PARALLEL_SUB_CALLS_MESSAGE = "maxParallelSubCalls must be a positive integer"

/** @internal */
export const isValidMaxParallelSubCalls = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value > 0

/** MODE-4: the `tools:code-only` text. @internal */
export const CODE_ONLY_TEXT = `\`${RUN_CODE_NAME}\` is the only tool you can call directly — ` +
  "a tool call naming any other tool fails. Reach every tool the SDK declares below from inside the program."

/** MODE-4 / TYPES-13. @internal */
export const CODE_ONLY_SECTION = "tools:code-only"
/** @internal */
export const CODE_ONLY_ORDER = 99
/** @internal */
export const SDK_SECTION = "tools:sdk"
/** @internal */
export const SDK_ORDER = 150

/** MODE-7: what differs per language in the `run_code` schema. @internal */
export interface Flavor {
  readonly description: string
  readonly codeDescription: string
}

/** @internal */
export const TYPESCRIPT_FLAVOR: Flavor = {
  description: "Execute a TypeScript program against the available tools. Takes two required arguments: " +
    "`code`, the BODY of an async function (erasable syntax only; top-level `await` and `return` work), and " +
    "`description`, a short summary of what the program does. Call tools as `await tools.name(args)` per the " +
    "declarations in the system prompt. Only what you print or return is program output — curate it. " +
    "Image-bearing subtool results are attached after the run.",
  codeDescription: "The program: the body of an async TypeScript function."
}

/** @internal */
export const PYTHON_FLAVOR: Flavor = {
  description: "Execute a Python program against the available tools. Takes two required arguments: " +
    "`code`, the BODY of an async function (top-level `await` and `return` work), and `description`, a short " +
    "summary of what the program does. Call tools as `await tools.name(args)` per the declarations in the " +
    "system prompt. Use `print(...)` and/or `return <value>` for program output — curate it. " +
    "Image-bearing subtool results are attached after the run.",
  codeDescription: "The program: the body of an async Python function."
}

/** MODE-7: the `description` parameter's text, the same for every language. @internal */
export const DESCRIPTION_PARAMETER_TEXT = "Clear, concise description of what this program does in active voice, " +
  "5-10 words (shown in the UI). Examples: \"Count TODO markers across packages\"; " +
  "\"Read failing test and its fixture\"; \"Rename config key in every cordis.yml\"."

const KNOWN_LANGUAGES = "\"typescript\", \"python\""

/** A language name for a message: JSON for a string, a fixed text otherwise (never converts an object). */
const quoteLanguage = (language: unknown): string => {
  if (typeof language === "string") return JSON.stringify(language)
  if (typeof language === "number" || typeof language === "boolean" || language === null) return String(language)
  return typeof language === "undefined" ? "undefined" : `a ${typeof language}`
}

/** MODE-3 (D-21: the hint names this library's API). @internal */
export const missingRuntimeMessage = (mode: string): string =>
  `dsh-tools: mode "${mode}" requires a code runtime — provide a CodeRuntime Layer ` +
  "(CodeRuntimeQuickJs.layer) or present the tools as \"native\""

/** MODE-3. @internal */
export const unknownLanguageMessage = (language: unknown): string =>
  `dsh-tools: no SDK renderer registered for runtime language ${quoteLanguage(language)} (known: ${KNOWN_LANGUAGES})`

/** MODE-7. @internal */
export const unknownFlavorMessage = (language: unknown): string =>
  `dsh-tools: no run_code schema flavor registered for runtime language ${
    quoteLanguage(language)
  } (known: ${KNOWN_LANGUAGES})`

/** PTC-5. @internal */
/**
 * A non-native mode on a registry built without the `run_code` transport: the model would get
 * no callable tool, so assembly fails instead.
 *
 * @internal
 */
export const missingTransportMessage = (mode: string): string =>
  `mode "${mode}" needs the \`${RUN_CODE_NAME}\` transport, but this registry was built without it — ` +
  `build it with InMemoryToolRegistry.layerCodeMode (or layerWith({ mode, transport: CodeMode.makeTransport() })) ` +
  `or present the tools as "native"`

export const INVALID_DESCRIPTION_MESSAGE = "invalid description: expected a non-empty string"

/** A runtime's `language`, read once; a throwing getter reads as `undefined`. */
const readLanguage = (runtime: CodeRuntime.Service): unknown => {
  try {
    return runtime.language
  } catch {
    return undefined
  }
}

/**
 * MODE-3: the language of a mounted runtime that has an SDK renderer (own keys only: `toString`
 * is not a language), or the failure.
 *
 * @internal
 */
export const requireRuntime = (
  mode: string,
  runtime: CodeRuntime.Service | undefined
): { readonly ok: true; readonly language: SdkLanguage } | { readonly ok: false; readonly error: CodeModeError } => {
  if (runtime === undefined) return { ok: false, error: new CodeModeError({ message: missingRuntimeMessage(mode) }) }
  const language = readLanguage(runtime)
  if (!isSdkLanguage(language)) {
    return { ok: false, error: new CodeModeError({ message: unknownLanguageMessage(language) }) }
  }
  return { ok: true, language }
}

/**
 * MODE-7: the flavor for the mounted runtime (TypeScript without one); throws `CodeModeError`
 * for a language without a flavor.
 *
 * @internal
 */
export const flavorFor = (runtime: CodeRuntime.Service | undefined): Flavor => {
  if (runtime === undefined) return TYPESCRIPT_FLAVOR
  const language = readLanguage(runtime)
  if (language === "typescript") return TYPESCRIPT_FLAVOR
  if (language === "python") return PYTHON_FLAVOR
  throw new CodeModeError({ message: unknownFlavorMessage(language) })
}

/**
 * PTC-1 / D-1: the parameters with a flavor's `code` description: `description` then `code`,
 * both required strings, open object.
 *
 * @internal
 */
export const parametersFor = (flavor: Flavor): JsonSchema => ({
  type: "object",
  properties: {
    description: { type: "string", description: DESCRIPTION_PARAMETER_TEXT },
    code: { type: "string", description: flavor.codeDescription }
  },
  required: ["description", "code"]
})

const transports = new WeakSet<object>()

/** Marks a definition as Code Mode's transport (its schema is projected per language). @internal */
export const markTransport = <A extends object>(definition: A): A => {
  transports.add(definition)
  return definition
}

/** @internal */
export const isTransport = (definition: unknown): boolean =>
  typeof definition === "object" && definition !== null && transports.has(definition)

/**
 * PTC-8 `<String(reason)>`, total and without calling user code: a string as it is; an
 * `AbortError` its message (the run controller's own reason, `run_code settled`, reads as that
 * text); another `Error` `name: message`; other primitives `String`; any other object its
 * `Object.prototype.toString` tag.
 *
 * @internal
 */
export const formatReason = (reason: unknown): string => {
  if (typeof reason === "string") return reason
  if (typeof reason !== "object" && typeof reason !== "function") return String(reason)
  if (reason === null) return "null"
  try {
    if (reason instanceof Error) {
      const name = reason.name
      const message = reason.message
      if (typeof name === "string" && typeof message === "string") {
        if (name === "AbortError" && message !== "") return message
        return message === "" ? name : `${name}: ${message}`
      }
    }
    return Object.prototype.toString.call(reason)
  } catch {
    return "<unprintable abort reason>"
  }
}
