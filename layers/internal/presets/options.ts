/**
 * Reading the presets' options: each key read once (a throwing getter is named in the defect's
 * message), then checked — the tools copied, the Layers recognised, `timeout` and `codeMode` read
 * field by field. A problem is the message of the defect the preset raises.
 *
 * @internal
 */
import * as Layer from "effect/Layer"
import * as CodeMode from "../../../src/CodeMode.js"
import type { CodeRuntime } from "../../../src/CodeRuntime.js"
import type * as IdGenerator from "../../../src/IdGenerator.js"
import type * as Tool from "../../../src/Tool.js"
import type { ToolCallLog } from "../../../src/ToolCallLog.js"
import { detailOf } from "../../../src/ToolError.js"
import type * as InMemoryToolRegistry from "../../InMemoryToolRegistry.js"
import * as TimeoutPolicy from "../../TimeoutPolicy.js"
import { isPresentationMode } from "../registry/checks.js"

/** @internal */
export interface Read {
  readonly tools: ReadonlyArray<Tool.Any>
  readonly approval: Layer.Layer<never, unknown, unknown> | undefined
  readonly log: Layer.Layer<ToolCallLog, unknown, unknown> | undefined
  readonly ids: Layer.Layer<IdGenerator.IdGenerator, unknown, unknown> | undefined
  readonly timeout: false | TimeoutPolicy.Options | undefined
  readonly codeMode: InMemoryToolRegistry.CodeModeOptions | undefined
  readonly codeRuntime: Layer.Layer<CodeRuntime, unknown, unknown> | undefined
}

const KEYS = ["tools", "approval", "log", "timeout", "ids", "codeMode", "codeRuntime"] as const

const prefix = "Presets.layer"

/**
 * Reads `keys` of `options` once each into a null-prototype record; a string is the message of the
 * defect.
 *
 * @internal
 */
export const readKeys = <K extends string>(
  label: string,
  options: unknown,
  keys: ReadonlyArray<K>
): Record<K, unknown> | string => {
  if ((typeof options !== "object" && typeof options !== "function") || options === null) {
    return `${label} options must be an object`
  }
  const values: Record<K, unknown> = Object.create(null)
  for (const key of keys) {
    try {
      values[key] = (options as Record<string, unknown>)[key]
    } catch (thrown) {
      return `${label} could not read option "${key}": ${detailOf(thrown).message}`
    }
  }
  return values
}

/**
 * Each option read once, then checked; a string is the message of the defect.
 *
 * @internal
 */
export const readOptions = (options: unknown): Read | string => {
  if (options === undefined) {
    return {
      tools: [],
      approval: undefined,
      log: undefined,
      ids: undefined,
      timeout: undefined,
      codeMode: undefined,
      codeRuntime: undefined
    }
  }
  const values = readKeys(prefix, options, KEYS)
  if (typeof values === "string") return values
  return checkValues(prefix, values)
}

/**
 * The options' values (read once), checked; a string is the message of the defect.
 *
 * @internal
 */
export const checkValues = (label: string, values: Readonly<Record<(typeof KEYS)[number], unknown>>): Read | string => {
  const tools = copyTools(label, values.tools)
  if (typeof tools === "string") return tools
  for (const key of ["approval", "log", "ids", "codeRuntime"] as const) {
    const value = values[key]
    if (value !== undefined && !isLayer(value)) return `${label} option "${key}" must be a Layer`
  }
  const timeout = readTimeout(label, values.timeout)
  if (typeof timeout === "string") return timeout
  const codeMode = readCodeMode(label, values.codeMode)
  if (typeof codeMode === "string") return codeMode
  return {
    tools,
    approval: values.approval as Read["approval"],
    log: values.log as Read["log"],
    ids: values.ids as Read["ids"],
    timeout,
    codeMode,
    codeRuntime: values.codeRuntime as Read["codeRuntime"]
  }
}

/** @internal */
export const isLayer = (value: unknown): boolean => {
  try {
    return Layer.isLayer(value)
  } catch {
    return false
  }
}

const copyTools = (prefix: string, tools: unknown): ReadonlyArray<Tool.Any> | string => {
  if (tools === undefined) return []
  try {
    if (!Array.isArray(tools)) return `${prefix} option "tools" must be an array of tool definitions`
    const length = tools.length
    const out: Array<Tool.Any> = []
    for (let i = 0; i < length; i++) out.push(tools[i] as Tool.Any)
    return out
  } catch (thrown) {
    return `${prefix} could not read option "tools": ${detailOf(thrown).message}`
  }
}

const readTimeout = (prefix: string, timeout: unknown): false | TimeoutPolicy.Options | undefined | string => {
  if (timeout === undefined || timeout === true) return undefined
  if (timeout === false) return false
  const shape = `${prefix} option "timeout" must be true, false or { defaultTimeoutMs }`
  if (typeof timeout !== "object" || timeout === null) return shape
  let ms: unknown
  try {
    if (Array.isArray(timeout)) return shape
    ms = (timeout as TimeoutPolicy.Options).defaultTimeoutMs
  } catch (thrown) {
    return `${prefix} could not read option "timeout": ${detailOf(thrown).message}`
  }
  if (ms === undefined) return undefined
  if (!TimeoutPolicy.isValidTimeout(ms)) {
    return `${prefix} option "timeout.defaultTimeoutMs" must be a positive finite number no greater than ${TimeoutPolicy.MAX_TIMEOUT_MS}`
  }
  return { defaultTimeoutMs: ms }
}

/** `codeMode`'s fields, read once each into a fresh options object; a string is the message of the defect. */
const readCodeMode = (
  prefix: string,
  codeMode: unknown
): InMemoryToolRegistry.CodeModeOptions | undefined | string => {
  if (codeMode === undefined) return undefined
  const shape = `${prefix} option "codeMode" must be an object`
  if (typeof codeMode !== "object" || codeMode === null) return shape
  let mode: unknown, maxParallelSubCalls: unknown
  try {
    if (Array.isArray(codeMode)) return shape
    const record = codeMode as Record<string, unknown>
    mode = record.mode
    maxParallelSubCalls = record.maxParallelSubCalls
  } catch (thrown) {
    return `${prefix} could not read option "codeMode": ${detailOf(thrown).message}`
  }
  if (mode !== undefined && !isPresentationMode(mode)) {
    return `${prefix} option "codeMode.mode" must be "native", "code" or "both"`
  }
  if (maxParallelSubCalls !== undefined && !CodeMode.isValidMaxParallelSubCalls(maxParallelSubCalls)) {
    return `${prefix} option "codeMode.maxParallelSubCalls" must be a positive integer`
  }
  return { mode, maxParallelSubCalls }
}

/** @internal */
export const APPROVAL_KEYS = [
  "tools",
  "log",
  "timeout",
  "ids",
  "codeMode",
  "codeRuntime",
  "policy",
  "grants",
  "interactive",
  "approvalIds"
] as const

/** The durable presets' own settings, read once. @internal */
export interface DurableSettings {
  readonly setup: Layer.Layer<never, unknown, unknown> | undefined
  readonly pollInterval: unknown
  readonly approvalTimeout: unknown
}

/**
 * The options of a durable preset: the approval preset's (without `log` and `interactive`),
 * `setup`, `pollInterval`, `approvalTimeout`, and the preset's `extra` keys (read once, checked by
 * the caller); a string is the message of the defect.
 *
 * @internal
 */
export const readDurableOptions = <K extends string>(
  label: string,
  options: unknown,
  extraKeys: ReadonlyArray<K>
):
  | {
    readonly read: Read
    readonly values: Readonly<Record<(typeof APPROVAL_KEYS)[number], unknown>>
    readonly settings: DurableSettings
    readonly extra: Readonly<Record<K, unknown>>
  }
  | string =>
{
  const values = readKeys(label, options, [...APPROVAL_KEYS, "pollInterval", "approvalTimeout", "setup", ...extraKeys])
  if (typeof values === "string") return values
  if (values.log !== undefined || values.interactive !== undefined) {
    return `${label} takes no "log" or "interactive": durable turns use their journal and DurableApprovals`
  }
  if (values.setup !== undefined && !isLayer(values.setup)) return `${label} option "setup" must be a Layer`
  const read = checkValues(label, { ...values, approval: undefined })
  if (typeof read === "string") return read
  const extra: Record<K, unknown> = Object.create(null)
  for (const key of extraKeys) extra[key] = (values as Record<string, unknown>)[key]
  return {
    read,
    values,
    extra,
    settings: {
      setup: values.setup as Layer.Layer<never, unknown, unknown> | undefined,
      pollInterval: values.pollInterval,
      approvalTimeout: values.approvalTimeout
    }
  }
}
