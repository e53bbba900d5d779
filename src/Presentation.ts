/**
 * UI presentation (spec §20, PRES-1…6, DECISIONS D-10/D-18): the card views, total wrappers
 * around a tool's presenters with the generic fallback, and replay of a durable tool-call log
 * into the same presentation a live UI builds.
 *
 * @since 0.1.0
 */
import type { Content } from "./Content.js"
import * as internalArguments from "./internal/schema/arguments.js"
import * as internal from "./internal/log/presentation.js"
import type { JsonValue } from "./Json.js"
import type * as Tool from "./Tool.js"
import type { LogRecord } from "./ToolCallLog.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * @since 0.1.0
 * @category models
 */
export type CallKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "fetch" | "other"

/**
 * @since 0.1.0
 * @category models
 */
export interface Location {
  readonly path: string
  readonly line?: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface FileDiff {
  readonly path: string
  readonly oldText: string | null
  readonly newText: string
}

/**
 * A pending-call card (PRES-4).
 *
 * @since 0.1.0
 * @category models
 */
export type CallView =
  | {
    readonly card: "generic"
    readonly title: string
    readonly kind?: CallKind
    readonly rawInput?: JsonValue
    readonly content?: Content
    readonly locations?: ReadonlyArray<Location>
  }
  | { readonly card: "terminal"; readonly title: string; readonly description?: string; readonly cwd?: string }
  | {
    readonly card: "diff"
    readonly title: string
    readonly diffs: ReadonlyArray<FileDiff>
    readonly locations?: ReadonlyArray<Location>
  }

/**
 * A completed-call card (PRES-5).
 *
 * @since 0.1.0
 * @category models
 */
export type ResultView =
  | { readonly card: "generic"; readonly title?: string; readonly content?: Content }
  | {
    readonly card: "terminal"
    readonly title?: string
    readonly output?: string
    readonly exitCode?: number
    readonly signal?: string
  }
  | { readonly card: "diff"; readonly title?: string; readonly diffs: ReadonlyArray<FileDiff> }
  | {
    readonly card: "search"
    readonly shape: "matches"
    readonly files: ReadonlyArray<
      { readonly path: string; readonly matches: ReadonlyArray<{ readonly lineNumber: number; readonly line: string }> }
    >
    readonly truncated: boolean
    readonly total: number
    readonly title?: string
  }
  | {
    readonly card: "search"
    readonly shape: "paths"
    readonly paths: ReadonlyArray<string>
    readonly truncated: boolean
    readonly total: number
    readonly title?: string
  }
  | {
    readonly card: "read"
    readonly title?: string
    readonly path: string
    readonly offset: number
    readonly lines: ReadonlyArray<{ readonly number: number; readonly text: string }>
    readonly totalLines: number
    readonly lang?: string
    readonly content?: Content
  }
  | {
    readonly card: "web"
    readonly kind: "search"
    readonly sources: ReadonlyArray<
      { readonly url: string; readonly title?: string; readonly snippet?: string; readonly publishedAt?: string }
    >
    readonly answer?: string
    readonly truncated: boolean
    readonly title?: string
  }
  | {
    readonly card: "web"
    readonly kind: "fetch"
    readonly url: string
    readonly statusCode: number
    readonly truncated: boolean
    readonly title?: string
  }

/**
 * The durable projection of a result handed to `presentResult` (PRES-1).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResultProjection {
  readonly content: Content
  readonly isError: boolean
  readonly meta?: JsonValue
}

/**
 * One call as a UI shows it: the pending card and, once the result is known, the completed card
 * (which replaces the pending one, PRES-5).
 *
 * @since 0.1.0
 * @category models
 */
export interface CallPresentation {
  readonly callId: string
  readonly name: string
  readonly call: CallView
  readonly result?: ResultView
}

/**
 * Finds the definition a call was made against, preferably through the calling agent's view
 * (`get(name, agent)`, PRES-1). `undefined` selects the generic cards; a throw counts as
 * `undefined`.
 *
 * @since 0.1.0
 * @category models
 */
export type Lookup = (name: string, agent: string | undefined) => Tool.Any | undefined

/**
 * A call as a live UI sees it: the parsed arguments the call ran with and, once committed, its
 * result.
 *
 * @since 0.1.0
 * @category models
 */
export interface LiveCall {
  readonly callId: string
  readonly name: string
  readonly agent?: string | undefined
  readonly arguments: unknown
  readonly result?: ToolResult | undefined
}

/**
 * The arguments of a logged call, parsed like the agent loop parses them (SCHED-1): `""` is `{}`,
 * valid JSON text is its value, anything else is the raw string itself.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseArguments: (raw: string) => unknown = internalArguments.parseArguments

/**
 * The durable projection of a result handed to `presentResult`: `content`, `isError` and `meta`
 * (only when present). Never the canonical value (PRES-3).
 *
 * @since 0.1.0
 * @category constructors
 */
export const projectResult: (result: ToolResult) => ResultProjection = internal.projectResult

/**
 * Calls the tool's `presentCall(args)`. Returns its view, or `undefined` for the generic fallback
 * when there is no definition or presenter, when the presenter returns `undefined` (e.g. its
 * arguments fail soft validation, PRES-2) or something that is not a call view (an object with a
 * known `card` and a string `title`), and when it throws (D-10). Never throws.
 *
 * @example
 * ```ts
 * const view = Presentation.presentCall(tool, { path: "a.ts" }) ?? Presentation.genericCall("read", { path: "a.ts" })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const presentCall: (definition: Tool.Any | undefined, args: unknown) => CallView | undefined =
  internal.presentCall

/**
 * Calls the tool's `presentResult(args, result)`, with the same fallback rules as
 * {@link presentCall} (a result view is an object with a known `card`). Never throws.
 *
 * @since 0.1.0
 * @category constructors
 */
export const presentResult: (
  definition: Tool.Any | undefined,
  args: unknown,
  result: ResultProjection
) => ResultView | undefined = internal.presentResult

/**
 * The generic pending card (PRES-1): titled with the tool name, the raw arguments as `rawInput`
 * (a detached frozen copy; omitted when the arguments are not lossless JSON).
 *
 * @since 0.1.0
 * @category constructors
 */
export const genericCall: (name: string, args: unknown) => CallView = internal.genericCall

/**
 * The generic completed card (PRES-1): keeps the pending card's `title` and shows the raw result
 * content.
 *
 * @since 0.1.0
 * @category constructors
 */
export const genericResult: (title: string, result: ResultProjection) => ResultView = internal.genericResult

/**
 * Rebuilds the presentation of every call from durable records alone (D-18): one entry per
 * `tool/call` record, in record order, with the arguments parsed by {@link parseArguments}; its
 * `tool/result` (same `batchId`, `index` and `callId`) is projected to `{ content, isError,
 * meta? }` and presented. A call without a result has no `result` card (OQ-33); a result without
 * a call and Code Mode dispatch records are ignored. Never throws.
 *
 * @since 0.1.0
 * @category constructors
 */
export const replay: (records: ReadonlyArray<LogRecord>, lookup: Lookup) => Array<CallPresentation> = internal.replay

/**
 * The presentation a live UI builds from the calls it ran, by the same rules as {@link replay}:
 * for the same calls and definitions, `livePresentation` and `replay` of the log are equal.
 *
 * @since 0.1.0
 * @category constructors
 */
export const livePresentation: (calls: ReadonlyArray<LiveCall>, lookup: Lookup) => Array<CallPresentation> =
  internal.livePresentation
